"""One region per missing rate for a mask-stratified audit, chosen on its pilot alone
(docs/THEORY.md §8.5, "One region per rate").

The pilot's region-selection half is drawn by stratum (each side's calls spread evenly over
its strata). At rate π a side's mass of a region S is estimated by P̂_π(S) = Σ_m w_m(π) k_m/n_m,
worth n_eff(π) = 1/Σ_m w_m(π)²/n_m calls (Kish's effective sample size of the weighted
strata), and the candidates {score ≥ t} (z over z′) and {score ≤ t} (z′ over z) are ranked as
the pilot ranks them for a plain audit (:func:`audit.estimation.regions.select_region_on_pilot`
with its Clopper–Pearson guard). Further candidates (the region of the pooled half) compete
on the bound the main run is predicted to give (:func:`predicted_eps`). Everything here reads
the pilot only, so each rate's bound on the main run is valid at its own confidence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from audit._validate import check_delta
from audit.enums import Direction, SideDesign
from audit.estimation.binomial import (
    SIDES,
    check_alpha,
    cp_lower_array,
    cp_upper_array,
    eps_from_bounds,
    eps_plug_in,
)
from audit.estimation.prediction import large_mass, resolution, small_mass
from audit.estimation.regions import _DIRECTIONS, Region
from audit.estimation.strata import predicted_side_bounds, sampled_strata

__all__ = ["rate_regions", "predicted_eps", "region_prediction", "stratum_frequencies",
           "region_masses"]


def _cumulative(counts, order) -> np.ndarray:
    """Per stratum, cumulative counts over the bins sorted by score: (N + 1, bins + 1)."""
    c = np.asarray(counts, dtype=np.int64)[:, order]
    return np.concatenate([np.zeros((c.shape[0], 1), dtype=np.int64), np.cumsum(c, axis=1)],
                          axis=1)


def _rate_masses(counts, weights, order, below, upto) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate (the T regions {score ≥ t}, then the T regions {score ≤ t}) and rate:
    the estimated mass P̂_π, and per rate its n_eff (a stratum the pilot did not reach takes
    the pooled frequency, worth the pooled calls)."""
    w = np.asarray(weights, dtype=np.float64)
    cum = _cumulative(counts, order)
    n = cum[:, -1].astype(np.float64)
    k = np.concatenate([(cum[:, -1:] - cum[:, below]).T, cum[:, upto].T])
    seen = n > 0
    pooled = k.sum(axis=1, keepdims=True) / max(n.sum(), 1.0)
    freq = np.where(seen, k / np.where(seen, n, 1), pooled)
    n_m = np.where(seen, n, max(n.sum(), 1.0))
    return freq @ w.T, 1.0 / ((w**2) / n_m).sum(axis=1)


def _ranked(num, n_num, den, n_den, n_bins, delta: float, guard_alpha: float) -> list[int]:
    """Per rate, the candidate of the largest guarded ε (Clopper–Pearson on the effective
    counts at ``guard_alpha`` / 2 per side, floored at 0), ties to the larger plug-in value
    (the denominator at least one pseudo-call), then to fewer bins."""
    a = guard_alpha / SIDES  # per side, as the pilot's own choice splits it
    eps = eps_from_bounds(cp_lower_array(num * n_num, n_num, a),
                          cp_upper_array(den * n_den, n_den, a), delta)
    # the plug-in as a ranking: the denominator at least one pseudo-call
    plug = eps_plug_in(num, 1.0, np.maximum(den, 1.0 / n_den), 1.0, delta, undefined=-np.inf)
    return [int(np.lexsort((-n_bins, plug[:, g], eps[:, g]))[-1]) for g in range(eps.shape[1])]


def rate_regions(pilot_p, pilot_q, bin_scores, weights_p, weights_q, delta: float, *,
                 guard_alpha: float, also: Sequence = (), trials: int = 1,
                 alpha_side: float = 0.025) -> tuple:
    """One region per rate of the grid, chosen on the pilot's region-selection half alone.

    ``pilot_p``/``pilot_q``: per stratum, the selection half's histogram on each side (shape
    (N + 1, bins)); ``weights_p``/``weights_q``: each side's stratum weights (G, N + 1).
    Candidates are the thresholds at the scores of the bins the pilot reached, ranked per
    rate as the module docstring says, at ``guard_alpha`` per side.

    That guard cannot see an event the main run will: a numerator mass of 8·10⁻⁴ held by one
    stratum, which a stratified main run measures well, ranks below a sure event of ε ≈ 0.
    So each region of ``also`` (one chosen on the pooled pilot, say) competes with the rate's
    own pick on the bound the main run is predicted to give at that rate with ``trials`` calls
    per side and rate (:func:`predicted_eps` on the masses :func:`region_masses` reads); the
    rate's pick keeps ties.

    Raises
    ------
    ValueError
        The pilot reached no bin, or a bad ``delta``/``guard_alpha``.
    """
    delta = check_delta(delta)
    guard_alpha = check_alpha(guard_alpha)
    sc = np.asarray(bin_scores, dtype=np.float64).reshape(-1)
    cp_, cq_ = np.asarray(pilot_p), np.asarray(pilot_q)
    reached = (cp_.sum(axis=0) + cq_.sum(axis=0)) > 0
    if not reached.any():
        raise ValueError("the pilot reached no bin: no region to choose")
    t = np.unique(sc[reached])
    T = t.size
    order = np.argsort(sc, kind="stable")
    s = sc[order]
    below = np.searchsorted(s, t, side="left")
    upto = np.searchsorted(s, t, side="right")
    mp, np_eff = _rate_masses(cp_, weights_p, order, below, upto)
    mq, nq_eff = _rate_masses(cq_, weights_q, order, below, upto)
    fwd = (np.arange(2 * T) < T)[:, None]  # {score ≥ t}: P over Q; {score ≤ t}: Q over P
    best = _ranked(np.where(fwd, mp, mq), np.where(fwd, np_eff, nq_eff),
                   np.where(fwd, mq, mp), np.where(fwd, nq_eff, np_eff),
                   np.concatenate([sc.size - below, upto]), delta, guard_alpha)
    picks = [Region(_DIRECTIONS[i // T], float(t[i % T])) for i in best]
    if not also:
        return tuple(picks)

    def predicted(region: Region) -> np.ndarray:
        return region_prediction(region, sc, cp_, cq_, weights_p, weights_q, trials,
                                 alpha_side, delta, guard_alpha)

    own = np.array([predicted(r)[g] for g, r in enumerate(picks)])
    for other in also:
        theirs = predicted(other)
        gain = theirs > own
        own = np.where(gain, theirs, own)
        picks = [other if gain[g] else r for g, r in enumerate(picks)]
    return tuple(picks)


def region_prediction(region: Region, bin_scores, pilot_p, pilot_q, weights_p, weights_q,
                      trials: int, alpha_side: float, delta: float, guard_alpha: float
                      ) -> np.ndarray:
    """At every rate, the ε_lower the main run is predicted to give on ``region``
    (:func:`predicted_eps`) from the selection half's per-stratum histograms, read by the one
    rule of :mod:`audit.estimation.prediction` (:func:`region_masses`)."""
    mask = region.mask(np.asarray(bin_scores, dtype=np.float64).reshape(-1))
    forward = region.direction is Direction.Z_VS_ZPRIME
    num, den = (pilot_p, pilot_q) if forward else (pilot_q, pilot_p)
    w_num, w_den = (weights_p, weights_q) if forward else (weights_q, weights_p)
    p_num, p_den = region_masses(num, den, mask, w_num, guard_alpha)
    return predicted_eps(p_num, p_den, w_num, w_den, trials, alpha_side, delta)


def _stratum_counts(counts, mask) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum (rows of ``counts``, a (strata, bins) histogram), the calls in the bins
    ``mask`` and the calls: a stratum without calls takes the pooled counts."""
    c = np.asarray(counts)
    k, n = c[:, mask].sum(axis=1), c.sum(axis=1)
    seen = n > 0
    k = np.where(seen, k, k.sum()).astype(np.float64)
    n = np.where(seen, n, max(n.sum(), 1)).astype(np.float64)
    return k, n


def stratum_frequencies(counts, mask) -> np.ndarray:
    """Per stratum (rows of ``counts``, a (strata, bins) histogram), the frequency of the bins
    ``mask`` (a stratum without calls: the pooled frequency)."""
    k, n = _stratum_counts(counts, mask)
    return k / n


def region_masses(num_counts, den_counts, mask, weights_num, guard_alpha: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """A region's per-stratum masses as a pilot's prediction reads them
    (:mod:`audit.estimation.prediction`), from the selection half's histograms of the
    numerator's side (``num_counts``, stratum weights ``weights_num`` (G, N + 1)) and the
    denominator's: the numerator's per stratum at its Clopper–Pearson lower bound at
    ``guard_alpha`` / 2 (shape (N + 1,)), the denominator's per stratum at its frequency plus,
    at each rate, the mass one of the numerator's hits stands for there (shape (G, N′ + 1)).
    A stratum without calls takes the pooled counts."""
    k, n = _stratum_counts(num_counts, mask)
    w = np.asarray(weights_num, dtype=np.float64)
    c = np.asarray(num_counts)
    hits = float(c[:, mask].sum())
    r = resolution(w @ (k / n), hits, w @ (1.0 / n))
    kd, nd = _stratum_counts(den_counts, mask)
    return large_mass(k, n, guard_alpha), small_mass(kd, nd, r[:, None])


def predicted_eps(p_num, p_den, w_num, w_den, trials: int, alpha_side: float,
                  delta: float = 0.0) -> np.ndarray:
    """At every rate, the ε_lower a main run of ``trials`` calls per side and rate is
    predicted to give on a region of per-stratum probabilities ``p_num`` (numerator side,
    stratum weights ``w_num``) and ``p_den``: each side the better of a plain run per rate
    and a stratified run of its G·``trials`` calls spread evenly over its sampled strata
    (:func:`audit.estimation.strata.predicted_side_bounds`)."""
    def best(p, w, lower: bool) -> np.ndarray:
        w = np.asarray(w, dtype=np.float64)
        g = w.shape[0]
        on = sampled_strata(w)
        even = np.where(on, g * trials / max(int(on.sum()), 1), 0.0)
        plain = predicted_side_bounds(SideDesign.PLAIN, p, w, np.full(g, trials), alpha_side)
        strat = predicted_side_bounds(SideDesign.STRATIFIED, p, w, even, alpha_side)
        return np.maximum(plain[0], strat[0]) if lower else np.minimum(plain[1], strat[1])

    return eps_from_bounds(best(p_num, w_num, True), best(p_den, w_den, False), delta)
