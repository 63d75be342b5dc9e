"""Persistent non-response with Laplace noise: a certified bracket of a sum's worst case
(docs/THEORY.md §10.7).

The record contributes c ∈ [lo, hi] when observed and m (``na``) when missing; each of k
collections keeps its mask with probability r, else redraws it (observed with probability q).
A shared epoch of ℓ Laplace releases has no one-dimensional statistic, so the Gaussian route
(one release at σ/√ℓ and the corner lemma) is closed; two other arguments give the two ends.

**Upper end: one profile per epoch, by advanced joint convexity.** Within an epoch the mask is
shared, and for every ordered pair of the domain and the missing record, at every γ ≥ 1
([BBG18] Theorem 2, then joint convexity, as in §10.3),

    D_γ(P_c ‖ P_c′) ≤ q[(1 − β) δ_{Lap^ℓ(μ₁)}(ln α) + β δ_{Lap^ℓ(μ₂)}(ln α)],
    α = 1 + (γ − 1)/q,  β = γ/α,

μ₁ = max(|hi − m|, |lo − m|)/b and μ₂ = max(hi − lo, |hi − m|, |lo − m|)/b, with δ_{Lap^ℓ(μ)}
the profile of ℓ composed Laplace shifts μ (dp_accounting's pessimistic PLD). Beyond the
epoch's δ = 0 value (:func:`audit.theory.laplace_shared.laplace_shared_pure`, certified above
every pair) the profile is 0. A profile that bounds both orders of every pair is dominated by
one discrete pair (:func:`audit.theory.pld.profile_pmf`), so its PLD dominates every pair of
the setting in one epoch, and the redraw epochs' mixture of the compositions
(:func:`audit.theory.persistent.epochs_epsilon`) bounds every pair over the k releases.

**Lower end: the sum of the losses.** For a pair (c, c′) (c′ = m: the missing record), a
release y gives the loss z = (|y − c′| − |y − c|)/b ∈ [−D, D], D = |c − c′|/b: atoms where y
lies beyond c or c′, (2y − c − c′)/b between. T = Σ_t z_t is a function of the releases, so
for every threshold τ, D_γ(P ‖ Q) ≥ P(T ≥ τ) − γQ(T ≥ τ) (and the reverse order with T ≤ τ).
On each side a release is Laplace around the side's record while it is observed and around m
while it is missing, the mask state following the chain (a forward recursion, one release at
a time). Each one-release law is moved to a grid of step 2D/N: down for P (T only decreases,
so P(T ≥ τ) only decreases and P(T ≤ τ) only increases) and up for Q; the convolutions are
direct sums of non-negative terms, whose relative rounding error is bounded and taken off.
For the missing record at r = 1 the statistic is sufficient (the density ratio is
1 − q + q e^T).

References
----------
[BBG18] B. Balle, G. Barthe, M. Gaboardi, *Privacy amplification by subsampling: tight
analyses via couplings and divergences*, NeurIPS 2018, Theorem 2.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from audit._numeric import log1p_c_expm1
from audit._validate import check_delta, check_probability
from audit.mixture import Mixture
from audit.theory.pair.masses import interval_masses
from audit.theory.persistent import epoch_partitions, epochs_epsilon, persistent_refusal
from audit.theory.pld import (
    DISCRETIZATION,
    base_loss_of,
    laplace_profile,
    loss_step,
    profile_pmf,
)

__all__ = ["epoch_profile", "persistent_laplace_upper", "persistent_laplace_bracket",
           "sum_loss_lower", "LOSS_CELLS"]

#: grid cells of one release's loss on [−d, d] in the lower end (the k-fold sum is off by at
#: most k·2d/LOSS_CELLS in T, so the lower end is below the statistic's own ε by about that)
LOSS_CELLS = 2000
#: relative rounding of one product and one addition in float64
_ULP = 2.0 ** -52


def epoch_profile(lo: float, hi: float, na: float, q: float, b: float, length: int):
    """(profile, top): δ(ε) for ε ≥ 0 bounding both orders of every pair of the domain
    [``lo``, ``hi``] and the missing record (read as ``na``) over one shared-mask epoch of
    ``length`` Laplace(``b``) releases (module docstring), vectorised; 0 from ``top`` on,
    ``top`` the epoch's certified δ = 0 value."""
    mu1 = max(abs(hi - na), abs(lo - na)) / b
    mu2 = max((hi - lo) / b, mu1)
    d1 = laplace_profile(mu1, length, DISCRETIZATION) if mu1 > 0 else None
    d2 = laplace_profile(mu2, length, DISCRETIZATION)
    top = _epoch_top(float(lo), float(hi), float(na), float(q), float(b), int(length))

    def profile(eps):
        e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        inner = base_loss_of(e, q)  # ln α = ln(1 + (e^ε − 1)/q), and β = e^{ε − ln α}
        beta = np.exp(e - inner)
        first = d1(inner) if d1 is not None else 0.0
        out = q * ((1.0 - beta) * first + beta * d2(inner))
        out = np.where(e >= top, 0.0, np.clip(out, 0.0, 1.0))
        return out if np.ndim(eps) else float(out[0])

    return profile, top


@lru_cache(maxsize=64)
def _epoch_top(lo: float, hi: float, na: float, q: float, b: float, length: int) -> float:
    """The epoch's certified δ = 0 value over every pair, both orders
    (:func:`audit.theory.laplace_shared.laplace_shared_pure`, at most the largest shift's
    remove pair ln(1 + q(e^{ℓμ₂} − 1)))."""
    from audit.theory.laplace_shared import laplace_shared_pure

    shift = length * max(hi - lo, abs(hi - na), abs(lo - na)) / b
    return min(float(laplace_shared_pure(lo, hi, na, q, b, length).epsilon),
               log1p_c_expm1(shift, q))


@lru_cache(maxsize=64)
def _epoch_pld(lo: float, hi: float, na: float, q: float, b: float, length: int, step: float):
    """The pessimistic PLD, on the loss grid ``step``, of a pair dominating
    :func:`epoch_profile` (both orders); it does not depend on the persistence, so a curve
    over r computes it once per length."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    profile, top = epoch_profile(lo, hi, na, q, b, length)
    return PrivacyLossDistribution(profile_pmf(profile, max(top, 1e-3), step))


def persistent_laplace_upper(lo: float, hi: float, na: float, q: float, b: float,
                             releases: int, persistence: float, delta: float) -> float:
    """An upper bound on the ε at ``delta`` of every pair of the setting over k =
    ``releases`` Laplace releases with persistent masks (module docstring): the redraw
    epochs' mixture of the compositions of the epochs' dominating PLDs.

    Raises
    ------
    ValueError
        On k outside [1, ``MAX_PERSISTENT_RELEASES``] or a bad δ or persistence.
    """
    k, r = _check_releases(releases), check_probability(persistence, "persistence")
    d = check_delta(delta)
    key = (float(lo), float(hi), float(na), float(q), float(b))
    # δ = 0: no partition's composition exceeds the sum of its epochs' pure values; it caps
    # every δ > 0 too (a PLD composition's truncated tail would make δ = 0 infinite)
    pure = max(sum(_epoch_top(*key, length) for length in parts)
               for parts, _ in epoch_partitions(k, r))
    if d == 0.0:
        return pure
    # one grid for every epoch (the compositions need it), fitted to the longest epoch's loss
    step = loss_step(DISCRETIZATION, _epoch_top(*key, k))
    return min(pure, epochs_epsilon(lambda length: _epoch_pld(*key, length, step), k, r, d))


def _check_releases(k) -> int:
    reason = persistent_refusal("laplace", k)
    if reason:
        raise ValueError(reason)
    return k


def _release_law(c: float, c2: float, v: float, b: float, n: int, up: bool) -> np.ndarray:
    """The law of one release's loss z = (|y − c2| − |y − c|)/b ∈ [−D, D], D = (c − c2)/b
    (c > c2), for y ~ Laplace(v, b), on the grid −D + i·2D/n (i = 0..n): the atoms at ±D
    (y ≤ c2, y ≥ c) exact, the mass of each cell between moved to its upper grid point
    (``up``) or its lower one. z = (2y − c − c2)/b is increasing in y on [c2, c]."""
    edges = np.linspace(c2, c, n + 1)
    # (−∞, c2], the n cells, [c, ∞): each mass from the tail it lies in
    masses, _ = interval_masses(Mixture([1.0], [v], "laplace", b),
                                np.concatenate([[-np.inf], edges]),
                                np.concatenate([edges, [np.inf]]))
    law = np.zeros(n + 1)
    law[0], law[-1] = masses[0], masses[-1]
    if up:
        law[1:] += masses[1:-1]
    else:
        law[:-1] += masses[1:-1]
    return law


def _chain_sum(obs_law: np.ndarray, miss_law: np.ndarray, q: float, k: int,
               r: float) -> np.ndarray:
    """The law of the sum of k releases' losses, each drawn from ``obs_law`` while the
    record is observed and ``miss_law`` while it is missing, the mask a chain (kept with
    probability r, else redrawn, observed with probability q): one release at a time."""
    stay_obs, stay_miss = r + (1 - r) * q, r + (1 - r) * (1 - q)
    obs, miss = q * obs_law, (1 - q) * miss_law
    for _ in range(k - 1):
        obs, miss = (np.convolve(obs * stay_obs + miss * ((1 - r) * q), obs_law),
                     np.convolve(miss * stay_miss + obs * ((1 - r) * (1 - q)), miss_law))
    return obs + miss


def sum_loss_lower(c: float, c2: float, na: float, q: float, b: float, releases: int,
                   persistence: float, delta: float, *, cells: int = LOSS_CELLS) -> float:
    """A certified lower bound on the ε at ``delta`` of the record ``c`` against the record
    ``c2`` (``c2`` = ``na``: the missing record), a missing entry read as ``na``, over k =
    ``releases`` Laplace(``b``) releases with persistent masks: the largest over thresholds
    of the sum of the one-release losses ln(Lap(c)/Lap(c2)) (module docstring), both orders.

    Raises
    ------
    ValueError
        On c = ``c2`` (no pair), k outside [1, ``MAX_PERSISTENT_RELEASES``], or a bad q, δ
        or persistence.
    """
    k, dlt = _check_releases(releases), check_delta(delta)
    r, qq = check_probability(persistence, "persistence"), check_probability(q, "q")
    if c == c2 or qq == 0.0 or not cells >= 1:
        raise ValueError(f"c must differ from c2, q be in (0, 1] and cells >= 1, got c={c!r}, "
                         f"c2={c2!r}, q={q!r}, cells={cells!r}")
    if c < c2:  # the mirror image y ↦ −y
        c, c2, na = -c, -c2, -na
    n = int(cells)
    law_p = _chain_sum(_release_law(c, c2, c, b, n, False), _release_law(c, c2, na, b, n, False),
                       qq, k, r)  # P rounded down: T only decreases
    law_q = _chain_sum(_release_law(c, c2, c2, b, n, True), _release_law(c, c2, na, b, n, True),
                       qq, k, r)  # Q rounded up: T only increases
    # each entry: at most k·(n + 6) roundings of non-negative terms, the masses a few ulps
    # each; each tail sum at most as many additions as entries
    rel = (k * (n + 8) + law_p.size) * _ULP * 1.01
    best = 0.0
    # first order: P(T ≥ τ) − γQ(T ≥ τ); reverse: Q(T ≤ τ) − γP(T ≤ τ)
    for big, small in ((np.cumsum(law_p[::-1])[::-1], np.cumsum(law_q[::-1])[::-1]),
                       (np.cumsum(law_q), np.cumsum(law_p))):
        num = big * (1 - rel) - dlt
        den = small * (1 + rel)
        ok = (num > 0) & (den > 0)
        if np.any(ok):
            best = max(best, float(np.max(np.log(num[ok]) - np.log(den[ok]))))
    return best


def persistent_laplace_bracket(setting, delta: float) -> tuple[float, float, tuple[str, str],
                                                                str]:
    """(upper, lower, pair, method) of a Laplace sum's worst case with persistent masks
    (``setting``: an :class:`audit.theory.worst_case.Setting`): the upper end
    :func:`persistent_laplace_upper` over the whole domain, the lower end the largest
    :func:`sum_loss_lower` over the pairs of the corner lemma's candidates (``pair``, by
    name)."""
    lo, hi = setting.domain
    na, q, b = setting.na_value, setting.observation, setting.scale
    k, r = setting.releases, setting.persistence
    upper = persistent_laplace_upper(lo, hi, na, q, b, k, r, delta)
    cands = setting.candidates()
    names = list(cands)
    lower, pair = 0.0, (names[0], names[1])
    for i, a in enumerate(names):
        for z in names[i + 1:]:
            va = na if cands[a] is None else cands[a]
            vz = na if cands[z] is None else cands[z]
            low = sum_loss_lower(va, vz, na, q, b, k, r, delta)
            if low > lower:
                lower, pair = low, (a, z)
    method = ("upper: the redraw epochs' mixture of the compositions of shared-mask epochs, "
              "each bounded over the whole domain by advanced joint convexity and capped at "
              "its delta = 0 value; lower: the sum of the one-release losses of the worst "
              "candidate pair, thresholded (docs/THEORY.md §10.7)")
    return max(upper, lower), lower, pair, method
