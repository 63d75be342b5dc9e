"""The worst case of a mean over the observed entries, its count private (docs/THEORY.md §10.8,
**derived in this project**).

A user releases the mean of a column over its observed entries as a noisy sum and a noisy
count (their ratio is post-processing). Under record-level MCAR (observation probability q)
the differing record adds (c, 1) to (sum, count) when observed, c ∈ [lo, hi], and (0, 0) when
missing; a record that is NA in the data adds (0, 0). Each of k releases adds independent noise
to both coordinates. The other records add a shift common to both sides and the noise is
translation-invariant in both coordinates, so by joint convexity (§10.1) the worst case is over
the differing record alone: with shared masks P_c = (1 − q)N_(0,0)^(k) + q N_(c,1)^(k) and
P_NA = N_(0,0)^(k).

- **Gaussian, shared masks (or k = 1)**: the mean of the k releases is sufficient (one release
  at σ/√k). Whitened (s, t) = (x/σ_S′, y/σ_N′) the components sit at 0, (α_c, τ) with
  α_c = c/σ_S′, τ = 1/σ_N′. A pair (c, NA) is a one-dimensional pair along (α_c, τ) with
  shift √(α_c² + τ²); the pair (hi, lo) is two-dimensional, and its D_γ is a 1-D integral over
  s of a Black–Scholes expression in t, bracketed here with certified bounds (second order in
  the step). **Corner lemma** (§10.8, proven): at every γ ≥ 1 the worst pair of [lo, hi] ∪ {NA}
  is among {lo, hi, NA}. δ = 0: ε = ∞.
- **Laplace, δ = 0, shared masks**: the count coordinates' loss Y enters as φ(A_c + Y) with
  φ(z) = ln(1 − q + q e^z); the supremum takes Y = k/b_N, which turns a pair of domain records
  into §10.3's problem at q″ = q e^Y/(1 − q + q e^Y), certified by the branch and bound of
  :mod:`audit.theory.laplace_shared` restricted to domain records; pairs with NA in closed form.
  Fresh masks at δ = 0: k times one release's value (exact).
- **Laplace, δ > 0 (shared, or k = 1)**: a certified bracket. The (record, NA) pairs exactly
  in both orders by advanced joint convexity ([BBG18] Theorem 2) on optimistic and
  pessimistic PLDs; for k ≤ 128 the pairs (hi, lo) across 0 exactly and every pair of two
  observed records bounded on boxes (§10.3's branch and bound with the count's loss as one
  more independent variable, :func:`audit.theory.laplace_mean.mean_upper`), within 1 %;
  beyond k = 128 the δ = 0 value above.
- **Gaussian, fresh masks, δ > 0**: the k-fold composition of the envelope of the three
  candidate pairs at one release, above, and the worst pair with NA or (hi, lo) on the sum's
  coordinate alone, below (:mod:`audit.theory.observed_mean_fresh`).
- Laplace with fresh masks and k > 1 at δ > 0 is **refused** (not built).

References
----------
docs/THEORY.md §10.1–§10.3 and §10.8. [BBG18] B. Balle, G. Barthe, M. Gaboardi, *Privacy
amplification by subsampling: tight analyses via couplings and divergences*, NeurIPS 2018.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit._validate import (
    check_count,
    check_in_range,
    check_interval,
    check_positive,
)
from audit.enums import MaskRegime, NoiseKind
from audit.mixture import Mixture
from audit.theory.calibration import gaussian_sigma_classical, laplace_scale
from audit.theory.mean_pair import COVERS, gaussian_pair_delta_bounds
from audit.theory.observed_mean_fresh import gaussian_fresh_worst_case
from audit.theory.pair.epsilon import pair_epsilon
from audit.theory.pld import MAX_PLD_RELEASES
from audit.theory.profiles import gaussian_epsilon
from audit.theory.worst_case import WorstCase, tolerance, unresolved_releases

__all__ = ["PublicCountMean", "public_count_worst_case", "ObservedMeanSetting",
           "observed_mean_worst_case", "gaussian_pair_delta_bounds"]


@dataclass(frozen=True)
class ObservedMeanSetting:
    """A mean over the observed entries of one column, released as a noisy (sum, count).

    Parameters
    ----------
    noise : NoiseKind or str
        ``"laplace"`` or ``"gaussian"``, on both coordinates of every release.
    epsilon : float
        ε ∈ (0, ∞) of one release, split as ε_S = split·ε (sum) and ε_N = (1 − split)·ε
        (count); Gaussian: ε_S, ε_N ≤ 1 (the classical calibration).
    delta : float
        δ of one release: 0 for Laplace, in (0, 1) for Gaussian (split in half).
    domain : (float, float)
        [lo, hi] of an observed value, finite, lo < hi.
    observation : float
        q ∈ (0, 1]: the probability that the record is observed.
    releases : int
        k ≥ 1 releases.
    masks : MaskRegime or str
        ``"shared"`` (one table) or ``"fresh"``.
    split : float
        The sum's share of ε, in (0, 1).
    """

    noise: NoiseKind
    epsilon: float
    delta: float
    domain: tuple[float, float]
    observation: float
    releases: int = 1
    masks: MaskRegime = MaskRegime.SHARED
    split: float = 0.5

    def __post_init__(self) -> None:
        noise = NoiseKind.parse(self.noise, "noise")
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        object.__setattr__(self, "domain", check_interval(self.domain, "domain"))
        q = check_in_range("observation", self.observation, 0.0, 1.0, lo_closed=False)
        object.__setattr__(self, "observation", q)
        object.__setattr__(self, "releases", check_count(self.releases, "releases"))
        object.__setattr__(self, "masks", MaskRegime.parse_fixed(self.masks, "masks"))
        s = check_in_range("split", self.split, 0.0, 1.0, lo_closed=False, hi_closed=False)
        object.__setattr__(self, "split", s)
        if noise is NoiseKind.LAPLACE:
            d = check_in_range("delta", self.delta, 0.0, 0.0)
        else:
            d = check_in_range("delta", self.delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
            for name, e in (("epsilon*split", self.epsilon * s),
                            ("epsilon*(1-split)", self.epsilon * (1 - s))):
                if e > 1.0:
                    raise ValueError(f"{name} must be in (0, 1] for the classical Gaussian "
                                     f"calibration, got {name}={e!r}")
        object.__setattr__(self, "delta", d)

    @property
    def sum_sensitivity(self) -> float:
        """Δ_S = max(hi − lo, |hi|, |lo|): c → c′, or c → the NA record."""
        lo, hi = self.domain
        return max(hi - lo, abs(hi), abs(lo))

    def _scale(self, sensitivity: float, eps: float) -> float:
        if self.noise is NoiseKind.LAPLACE:
            return laplace_scale(sensitivity, eps)
        return gaussian_sigma_classical(sensitivity, eps, self.delta / 2)

    @property
    def sum_scale(self) -> float:
        """b_S or σ_S of one release of the sum."""
        return self._scale(self.sum_sensitivity, self.epsilon * self.split)

    @property
    def count_scale(self) -> float:
        """b_N or σ_N of one release of the count (sensitivity 1)."""
        return self._scale(1.0, self.epsilon * (1 - self.split))


def observed_mean_worst_case(setting: ObservedMeanSetting, delta: float) -> WorstCase:
    """The worst case over every pair c, c′ ∈ [lo, hi] ∪ {NA} (both orders) of ``setting``'s k
    releases together, at the final δ.

    Parameters
    ----------
    setting : ObservedMeanSetting
    delta : float
        δ ∈ [0, 1) of the k releases together.

    Returns
    -------
    WorstCase
        ``epsilon`` certified above, ``lower`` the certified ε of a pair of the setting;
        ``exact`` when they meet within :func:`audit.theory.worst_case.tolerance`.

    Raises
    ------
    ValueError
        On a bad ``setting`` or ``delta``; on Laplace with fresh masks and k > 1 at δ > 0
        (not built); at δ > 0 with k > ``MAX_PLD_RELEASES`` (Laplace, or fresh masks).

    References
    ----------
    docs/THEORY.md §10.8 (derived in this project); [BBG18] Theorem 2.
    """
    if not isinstance(setting, ObservedMeanSetting):
        raise ValueError(f"setting must be an ObservedMeanSetting, got setting={setting!r}")
    d = check_in_range("delta", delta, 0.0, 1.0, hi_closed=False)
    k = setting.releases
    fresh = setting.masks is MaskRegime.FRESH and k > 1
    if setting.noise is NoiseKind.GAUSSIAN:
        if d == 0.0:  # the loss is unbounded (the Gaussian tails)
            return WorstCase(math.inf, math.inf, ("hi", "NA"),
                             "Gaussian noise: the loss is unbounded at delta = 0", COVERS)
        if fresh:
            return gaussian_fresh_worst_case(setting, d)
        return _gaussian(setting, d, k if setting.masks is MaskRegime.SHARED else 1)
    if d == 0.0:
        if fresh:  # sup of a product's log ratio: the sum of its factors' (one pair for all)
            one = _laplace_pure(setting, 1)
            return WorstCase(k * one.epsilon, k * one.lower, one.pair,
                             f"pure composition: k times one release ({one.method})", COVERS)
        return _laplace_pure(setting, k)
    if fresh:
        raise ValueError(f"masks must be 'shared' (or releases 1) for Laplace at delta > 0: "
                         f"fresh masks over k > 1 releases are not built, got releases={k}")
    if k > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for Laplace at delta > "
                         f"0 (a PLD composition), got releases={k}")
    return _laplace_delta(setting, d)


@dataclass(frozen=True)
class PublicCountMean:
    """A mean over the observed entries whose count is released exactly beside the noisy
    sum: observation q ∈ (0, 1], k ≥ 1 releases, shared or fresh masks."""

    observation: float
    releases: int = 1
    masks: MaskRegime = MaskRegime.SHARED

    def __post_init__(self) -> None:
        object.__setattr__(self, "observation", check_in_range(
            "observation", self.observation, 0.0, 1.0, lo_closed=False))
        object.__setattr__(self, "releases", check_count(self.releases, "releases"))
        object.__setattr__(self, "masks", MaskRegime.parse_fixed(self.masks, "masks"))

    @property
    def seen(self) -> float:
        """P(the record is observed in some release): q shared, 1 − (1 − q)^k fresh."""
        q = self.observation
        if self.masks is MaskRegime.SHARED or q == 1.0:
            return q
        return -math.expm1(self.releases * math.log1p(-q))


def public_count_worst_case(setting: PublicCountMean, delta: float) -> WorstCase:
    """The worst case of a mean over the observed entries whose count is public, any noise:
    the count reveals whether the record was observed, so a record against the NA record (a
    record missing in the data) has D_γ(P_c ‖ P_NA) = :attr:`PublicCountMean.seen` for every
    γ, and below that δ no finite ε holds (docs/THEORY.md §10.8).

    Raises
    ------
    ValueError
        On a bad ``delta``, or at a δ at or above that probability (not computed).
    """
    if not isinstance(setting, PublicCountMean):
        raise ValueError(f"setting must be a PublicCountMean, got setting={setting!r}")
    d = check_in_range("delta", delta, 0.0, 1.0, hi_closed=False)
    seen = setting.seen
    if d >= seen:
        raise ValueError(f"delta must be below {seen:.6g}, the probability that the record "
                         f"is observed in some release (at or above it the public count's "
                         f"worst case is not computed), got delta={delta!r}")
    return WorstCase(math.inf, math.inf, ("hi", "NA"),
                     "the public count reveals whether the record is observed: "
                     f"D(P_c || P_NA) = {seen:.6g} at every epsilon", COVERS)


def _epsilon_bracket(bounds, mu_shift: float, q: float, delta: float, width: float
                     ) -> tuple[float, float]:
    """[lo, hi] around the ε of one order from certified δ-bounds(ε): δ_low(lo) > δ (or lo = 0),
    δ_up(hi) ≤ δ. hi starts at joint convexity's q·D_γ(N_a‖N_a2): a Gaussian shift μ."""
    hi = gaussian_epsilon(min(delta / q, 1.0), mu_shift)
    lo = 0.0
    d_lo, d_up = bounds(0.0)
    if d_up <= delta:
        return 0.0, 0.0
    while hi - lo > width:
        mid = 0.5 * (lo + hi)
        d_lo, d_up = bounds(mid)
        if d_up <= delta:
            hi = mid
        elif d_lo > delta:
            lo = mid
        else:
            break  # δ inside the numerical bracket at mid: [lo, hi] stands
    return lo, hi


def _gaussian(setting: ObservedMeanSetting, delta: float, k: int) -> WorstCase:
    lo, hi = setting.domain
    q = setting.observation
    sig_s = setting.sum_scale / math.sqrt(k)
    tau = math.sqrt(k) / setting.count_scale
    found: dict[tuple[str, str], tuple[float, float]] = {}
    for name, c in (("hi", hi), ("lo", lo)):  # (c, NA) in both orders: a 1-D pair
        mu = math.hypot(c / sig_s, tau)
        P = Mixture([1.0], [mu], "gaussian", 1.0) if q == 1.0 else \
            Mixture([1 - q, q], [0.0, mu], "gaussian", 1.0)
        try:
            v = pair_epsilon(P, Mixture([1.0], [0.0], "gaussian", 1.0), delta)
        except ValueError as exc:  # σ/√k so small that ε leaves the float range
            raise unresolved_releases(k, setting.sum_scale, exc) from None
        found[(name, "NA")] = (max(v.value - v.error, 0.0), v.value + v.error)
    a_hi, a_lo = hi / sig_s, lo / sig_s
    width = 0.25 * tolerance(max(b for _, b in found.values()))
    ends = []
    for a, a2 in ((a_hi, a_lo), (a_lo, a_hi)):
        ends.append(_epsilon_bracket(
            lambda e, a=a, a2=a2: gaussian_pair_delta_bounds(a, a2, tau, q, e),
            abs(a - a2), q, delta, width))
    found[("hi", "lo")] = (max(e[0] for e in ends), max(e[1] for e in ends))
    return _assemble(found, "Gaussian, the mean of the k releases sufficient (sigma/sqrt(k)); "
                            "corner lemma (THEORY §10.8); (c, NA) exact in 1-D, (hi, lo) by a "
                            "certified 2-D integral")


def _assemble(found: dict, method: str) -> WorstCase:
    pair = max(found, key=lambda p: found[p][0])
    return WorstCase(max(b for _, b in found.values()), found[pair][0], pair, method, COVERS)


# -------------------------------------------------------------------------------- Laplace
def _phi(z: float, q: float) -> float:
    return z if q == 1.0 else float(np.logaddexp(math.log1p(-q), math.log(q) + z))


def _laplace_pure(setting: ObservedMeanSetting, k: int) -> WorstCase:
    """δ = 0 over k releases from one table: domain pairs by the restricted branch and bound at
    q″, (c, NA) in closed form φ(k|c|/b_S + k/b_N) (the order NA ‖ c is smaller)."""
    lo, hi = setting.domain
    q, b_s, b_n = setting.observation, setting.sum_scale, setting.count_scale
    far, c_far = ("hi", hi) if abs(hi) >= abs(lo) else ("lo", lo)
    na = _phi(k * abs(c_far) / b_s + k / b_n, q)
    found = {(far, "NA"): (na, na)}
    qq = 1.0 / (1.0 + (1 - q) / q * math.exp(-k / b_n))
    found.update(_domain_pure(lo, hi, qq, b_s, k))
    return _assemble(found, "Laplace at delta = 0: the count's loss at its largest value "
                            "k/b_N, domain pairs by branch and bound (THEORY §10.3) at "
                            "q'' = q e^Y/(1 - q + q e^Y), (c, NA) in closed form")


def _domain_pure(lo, hi, q, b, k):
    """§10.3's branch and bound over the domain's records only (0, the missing reading of the
    sum, is a record only inside the domain, where it is an observed 0, named ``c=0``)."""
    from audit.theory.laplace_shared import laplace_shared_pure

    r = laplace_shared_pure(lo, hi, 0.0, q, b, k, na_is_record=False)

    def name(n: str) -> str:
        return "c=0" if n == "NA" else n
    return {(name(r.pair[0]), name(r.pair[1])): (max(r.lower, 0.0), r.epsilon)}


def _laplace_delta(setting: ObservedMeanSetting, delta: float) -> WorstCase:
    """δ > 0 (shared masks, or k = 1). The pairs with the missing record: exact in both orders
    by advanced joint convexity ([BBG18] Thm 2, equalities), D_γ(P_c‖N_0) = q D_α(M‖N),
    α = 1 + (γ − 1)/q, and D_γ(N_0‖P_c) = (1 − γ(1 − q))_+ D_α″(N‖M), α″ = γq/(1 − γ(1 − q)),
    M = N_(c,1)^k, N = N_(0,0)^k (a composition of Laplace shifts |c|/b_S and 1/b_N, symmetric),
    on dp_accounting's optimistic PLD (below) and pessimistic PLD (above); the end with the
    larger |c| is worst. With 0 inside the domain, the pairs (hi, lo) and (lo, hi) across it
    exactly (:func:`audit.theory.laplace_shared.opposite_pair_epsilon` with the count's loss).
    Pairs of two observed records above: the boxes of
    :func:`audit.theory.laplace_mean.mean_upper` (k ≤ 128), else the δ = 0 value."""
    from audit.theory.laplace_mean import count_loss, mean_upper
    from audit.theory.laplace_shared import (
        MAX_BOX_EPSILON,
        MAX_OPPOSITE_RELEASES,
        opposite_pair_epsilon,
    )

    pure = _laplace_pure(setting, setting.releases)
    lo, hi = setting.domain
    q, k = setting.observation, setting.releases
    b_s, b_n = setting.sum_scale, setting.count_scale
    far = "hi" if abs(hi) >= abs(lo) else "lo"
    na_low, na_high = _na_pair(setting, delta, pure.epsilon)
    found = {(far, "NA"): (na_low, na_high)}
    above = 0.0  # the highest upper end of a pair of two observed records
    upper, how = pure.epsilon, "the delta = 0 value"
    # e^ε times a density ratio stays a float: ε and both ratios below k(hi − lo)/b_S + k/b_N
    reach = k * (hi - lo) / b_s + k / b_n
    if k <= MAX_OPPOSITE_RELEASES and reach <= MAX_BOX_EPSILON \
            and na_low < pure.epsilon - tolerance(pure.epsilon):
        count = count_loss(b_n, k, delta)
        if lo < 0.0 < hi:
            sides = [(("hi", "lo"), (lo, hi)), (("lo", "hi"), (-hi, -lo))]
            for names, (a_lo, a_hi) in sides[:1] if hi == -lo else sides:
                found[names] = opposite_pair_epsilon(a_lo, a_hi, 0.0, q, b_s, k, delta,
                                                     count=count, at_most=na_low)
                above = max(above, found[names][1])
        lower = max(v[0] for v in found.values())
        boxed = mean_upper(lo, hi, q, b_s, k, delta, lower, count, above=above)
        if boxed is not None:
            upper = max(boxed, na_high)
            how = (f"pairs of observed records bounded on boxes within {boxed / lower - 1:.2%} "
                   "of the lower end (THEORY 10.8), pairs with NA exact")
    # a pair returned unsolved below the NA pair (its lower end 0) names no worst case
    found = {p: v for p, v in found.items() if v[0] > 0.0 or p == (far, "NA")}
    pair = max(found, key=lambda p: found[p][0])
    lower = found[pair][0]
    upper = min(max(upper, max(v[1] for v in found.values())), pure.epsilon)
    return WorstCase(max(upper, lower), lower, pair,
                     f"Laplace at delta > 0: above, {how}; below, the worst of the pairs with "
                     "NA (advanced joint convexity on a PLD, both orders)"
                     + (" and across 0 (exact, THEORY 10.3)" if len(found) > 1 else ""),
                     COVERS, upper_pair=pair if upper < pure.epsilon else pure.pair)


def _na_pair(setting: ObservedMeanSetting, delta: float, top: float) -> tuple[float, float]:
    """(low, high) ε at δ of the pair (far end, NA) over its two orders: the record-level pair
    of k releases of the sum and k of the count (Laplace shifts |c|/b_S and 1/b_N) against
    the record read as 0 (:func:`audit.theory.pair.releases.record_level_pair_epsilon`, exact
    by advanced joint convexity on pessimistic and optimistic PLDs); ``top`` the δ = 0
    value."""
    from audit.theory.pair.releases import RecordLevelPair, record_level_pair_epsilon

    lo, hi = setting.domain
    k = setting.releases
    pair = RecordLevelPair(setting.observation,
                           np.concatenate([np.full(k, max(abs(lo), abs(hi))), np.ones(k)]),
                           np.zeros(2 * k), "laplace",
                           np.concatenate([np.full(k, setting.sum_scale),
                                           np.full(k, setting.count_scale)]))
    v = record_level_pair_epsilon(pair, delta)
    return max(v.value - v.error, 0.0), min(v.value + v.error, top)
