"""Which sides of a stratified audit are stratified, and how a plain side's calls are spread
over the rates (docs/THEORY.md §8.5), decided on the pilot only.

A plain side runs once per rate of the grid. Its ``len(rates) × trials`` calls need not be
spread evenly: a rate whose bound needs many calls (an event of mass 8·10⁻⁴ on one side and
none on the other: diffprivlib's NaN-propagating ``mean`` at π = 0.3 on 20 entries needs about
4,600 calls on the side that never sees it) may take them from rates that are bounded well
with fewer. :func:`plain_allocation` chooses the calls per rate, in units of 1/40 of the total,
by a knapsack over the rates on the bound each rate is predicted to give
(:func:`audit.estimation.strata.predicted_side_bounds`), and :func:`choose_side_designs`
chooses the two sides' designs on the same prediction.

**The objective** ranks allocations and designs first by the number of rates whose predicted
ε_lower is above 0, then by the sum of the predicted ε_lower over the grid: a rate bounded at
0 is a rate the audit says nothing about, and the sum alone lets a rate that is already well
bounded (ε_lower 6 at π = 0, where more calls add ln of their ratio) outbid the first positive
bound at another rate. Ties keep the even split (the order of the options below).
"""

from __future__ import annotations

import numpy as np

from audit.enums import SideDesign
from audit.estimation.binomial import eps_from_bounds
from audit.estimation.strata import _per_rate_flags, predicted_side_bounds

__all__ = ["PLAIN_UNITS", "plain_allocation", "choose_side_designs", "choose_designs",
           "grid_value"]

#: a plain side's calls are spread over the rates in units of its total / PLAIN_UNITS
PLAIN_UNITS = 40
#: the weight of one more rate bounded above 0 against the sum of the bounds (module docstring)
_POSITIVE = 1e3


def grid_value(eps: np.ndarray) -> float:
    """The objective of an allocation or a design: the rates with a predicted ε_lower above 0
    first, then the sum of the predicted ε_lower (each clipped at 0, as reported)."""
    e = np.clip(np.asarray(eps, dtype=np.float64), 0.0, None)
    return float(_POSITIVE * np.count_nonzero(e > 0) + e.sum())


def _eps(own, other, numerator: np.ndarray, delta: float) -> np.ndarray:
    """Predicted ε_lower per rate from this side's (lo, hi) and the other side's."""
    lo, hi = own
    other_lo, other_hi = other
    return eps_from_bounds(np.where(numerator, lo, other_lo),
                           np.where(numerator, other_hi, hi), delta)


def plain_allocation(p_hat, weights, total: int, alpha_side: float, other, numerator,
                     delta: float = 0.0, floor: int = 1) -> np.ndarray:
    """Calls per rate of a plain side (``total`` in all, at least ``floor`` per rate): the
    split, in units of ``total`` / :data:`PLAIN_UNITS`, whose predicted bounds maximise
    :func:`grid_value` given the other side's predicted (lower, upper) bounds ``other``;
    ``numerator[g]``: whether this side is rate g's numerator. A knapsack over the rates
    (dynamic programming, exact on the units); ties keep the even split."""
    w = np.asarray(weights, dtype=np.float64)
    g = w.shape[0]
    num = _per_rate_flags(numerator, g, "numerator")
    units = max(PLAIN_UNITS, g)
    if int(total) < units:  # (fewer calls than units: the even split)
        return _even(int(total), g)
    unit = int(total) // units
    least = max(1, -(-int(floor) // unit))
    levels = np.arange(least, units - least * (g - 1) + 1)
    if levels.size == 0:  # (too few units for the floor: the even split)
        return _even(int(total), g)
    value = np.empty((g, levels.size))
    for i, level in enumerate(levels):
        value[:, i] = _rate_values(p_hat, w, np.full(g, level * unit), alpha_side, other, num,
                                   delta)
    # ties to the even split: a tiny cost per unit away from it
    shares = _knapsack(value - 1e-9 * np.abs(levels[None, :] - units / g), levels, units)
    even = _even(int(total), g)
    gain = value[np.arange(g), np.searchsorted(levels, shares)].sum() - _rate_values(
        p_hat, w, even, alpha_side, other, num, delta).sum()
    if not gain > 1e-9:  # the even split does as well: keep it exactly
        return even
    calls = shares * unit
    return calls + _even(int(total) - int(calls.sum()), g)


def _rate_values(p_hat, w, calls, alpha_side: float, other, num, delta: float) -> np.ndarray:
    """Per rate, the objective's terms (:func:`grid_value`) of a plain side with ``calls``."""
    own = predicted_side_bounds(SideDesign.PLAIN, p_hat, w, calls, alpha_side)
    e = np.clip(_eps(own, other, num, delta), 0.0, None)
    return _POSITIVE * (e > 0) + e


def _knapsack(value: np.ndarray, levels: np.ndarray, units: int) -> np.ndarray:
    """Units per rate (each one of ``levels``, summing to ``units``) maximising the summed
    ``value[g, level index]``."""
    g = value.shape[0]
    best = np.full((g + 1, units + 1), -np.inf)
    best[0, 0] = 0.0
    pick = np.zeros((g, units + 1), dtype=np.int64)
    for r in range(g):
        for u in range(units + 1):
            for i, level in enumerate(levels):
                if level <= u and best[r, u - level] + value[r, i] > best[r + 1, u]:
                    best[r + 1, u] = best[r, u - level] + value[r, i]
                    pick[r, u] = i
    out, u = np.zeros(g, dtype=np.int64), units
    for r in range(g - 1, -1, -1):
        out[r] = levels[pick[r, u]]
        u -= out[r]
    return out


def _even(total: int, g: int) -> np.ndarray:
    """``total`` calls split evenly over ``g`` rates (remainder to the lowest rates)."""
    out = np.full(g, total // g, dtype=np.int64)
    out[: total % g] += 1
    return out


def choose_side_designs(p_hats, weights, allocations, plain_calls: int, alpha_side: float,
                        forward, delta: float = 0.0, floor: int = 1, *, sides=None
                        ) -> tuple[tuple[SideDesign, SideDesign], tuple]:
    """The designs of the two sides (z, z′) and each side's calls: per stratum
    (``allocations[s]``) if stratified, per rate (:func:`plain_allocation` of
    ``len(rates) × plain_calls``) if plain; the designs maximise :func:`grid_value`
    (ties: the fewer stratified sides, then z′ stratified before z), among ``sides`` (the
    pairs of designs allowed; default all four).

    ``p_hats[s]`` and ``weights[s]`` are side s's region probabilities (as in
    :func:`audit.estimation.strata.allocate`) and stratum weights; ``forward[g]`` says whether
    rate g's region puts z in the numerator (one bool or one per rate). The bounds are
    predicted by :func:`audit.estimation.strata.predicted_side_bounds`.
    """
    g = np.asarray(weights[0]).shape[0]
    fwd = _per_rate_flags(forward, g, "forward")
    plain, stratified = SideDesign.PLAIN, SideDesign.STRATIFIED
    even = np.full(g, int(plain_calls), dtype=np.int64)
    stratified_bounds = [predicted_side_bounds(stratified, p_hats[s], weights[s],
                                               allocations[s], alpha_side) for s in (0, 1)]
    options = sides or [(plain, plain), (plain, stratified), (stratified, plain),
                        (stratified, stratified)]
    best = None
    for designs in options:  # (max keeps the first of equal values: the tie-break)
        calls = [allocations[s] if designs[s] is stratified else even for s in (0, 1)]
        bounds = [stratified_bounds[s] if designs[s] is stratified else
                  predicted_side_bounds(plain, p_hats[s], weights[s], even, alpha_side)
                  for s in (0, 1)]
        for s in (0, 1):  # each plain side spread over the rates, given the other side
            if designs[s] is plain:
                calls[s] = plain_allocation(p_hats[s], weights[s], g * int(plain_calls),
                                            alpha_side, bounds[1 - s], fwd if s == 0 else ~fwd,
                                            delta, floor)
                bounds[s] = predicted_side_bounds(plain, p_hats[s], weights[s], calls[s],
                                                  alpha_side)
        value = grid_value(_eps(bounds[0], bounds[1], fwd, delta))
        if best is None or value > best[0]:
            best = (value, designs, tuple(calls))
    return best[1], best[2]


def choose_designs(p_hats, weights, allocations, plain_calls: int, alpha_side: float,
                   forward, delta: float = 0.0) -> tuple[SideDesign, SideDesign]:
    """The designs :func:`choose_side_designs` chooses (without their calls)."""
    return choose_side_designs(p_hats, weights, allocations, plain_calls, alpha_side,
                               forward, delta)[0]
