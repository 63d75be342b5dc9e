"""The exact worst case of a user's own setting (docs/THEORY.md §10, **derived in this project**).

Theorem-level rows hold for every mechanism with a given per-release guarantee; a user knows
more: the query, the value domain [lo, hi] of the column, the value a missing entry is read as
(``na_value``), the noise and its calibration, and the missingness. For an additive scalar
query (a sum over records) under record-level MCAR, the other records do not matter (joint
convexity of the hockey-stick divergence, §10.1), and the differing record contributes c ∈
[lo, hi] when observed and ``na_value`` when missing:

    P_c = (1 − q)·N_na^{(k)} + q·N_c^{(k)}       (N_v^{(k)}: the k-release law at shift v)

**Corner lemma** (§10.2): for one scalar release (and for k Gaussian releases of the same
query from one table, whose mean is sufficient), at every γ ≥ 1 the largest D_γ(P_c ‖ P_c′)
over c, c′ ∈ [lo, hi] ∪ {NA} is reached at c, c′ ∈ {lo, hi, NA}. So the worst case of the
setting is the worst of at most three pairs, each computed exactly (to its numerical error):

- shared masks, Gaussian (any k), and any one release (k = 1): **exact**;
- shared masks, Laplace, k > 1: no one-dimensional statistic; at δ = 0 **exact** (a
  certified branch and bound over outputs and pairs, :mod:`audit.theory.laplace_shared`); at
  δ > 0 a certified **upper bound** by advanced joint convexity ([BBG18] Theorem 2) over the
  whole domain, capped at the δ = 0 value, and the worst pair with the missing record as the
  lower end (they meet when ``na_value`` is outside (lo, hi));
- fresh masks, k > 1: the **upper bound** is the k-fold composition of a pair dominating the
  per-γ envelope of the candidate pairs (the domain's envelope, by the lemma), the lower end
  the worst candidate pair with both orders composed separately (exact for that pair).

- persistent masks (§10.7): the upper end the redraw epochs' envelope (it covers every pair),
  the lower end the worst candidate pair's certified lower end (its box bracket for k ≤ 4);
  exact at r ∈ {0, 1}, a bracket in between where the two do not meet. Laplace: the shared
  and fresh worst case at r = 1 and 0; in between the epochs' mixture of one
  advanced-joint-convexity profile per epoch above, the thresholded sum of the one-release
  losses below (:mod:`audit.theory.persistent_laplace`).

Every result is a bracket [``lower``, ``epsilon``] on the setting's ε; ``exact`` when it closes
(the row's reference "exact worst case"), else labelled "worst case (bracket)". Every Laplace
result at δ > 0 is capped at the same setting's δ = 0 upper end (ε is non-increasing in δ).

References
----------
[BBG18] B. Balle, G. Barthe, M. Gaboardi, *Privacy amplification by subsampling: tight
analyses via couplings and divergences*, NeurIPS 2018, Theorem 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from audit._numeric import brentq, log1p_c_expm1, log1p_expm1_div
from audit._validate import (
    check_count,
    check_delta,
    check_interval,
    check_positive,
    check_probability,
)
from audit.enums import MaskRegime, NoiseKind
from audit.mixture import Mixture
from audit.theory.fresh_boxes import envelope_epsilon, fresh_boxes
from audit.theory.pair.epsilon import pair_epsilon
from audit.theory.pair.masses import PairValue
from audit.theory.pair.releases import fresh_pair_bounds, shared_pair_epsilon
from audit.theory.persistent import (
    PersistentBound,
    PersistentPair,
    persistent_bound,
    persistent_envelope_epsilon,
    persistent_lower,
    persistent_refusal,
)
from audit.theory.pld import (
    DISCRETIZATION,
    MAX_PLD_RELEASES,
    laplace_profile,
    refine_bracket,
)

__all__ = ["Setting", "WorstCase", "worst_case", "substitution_sensitivity", "tolerance",
           "unresolved_releases", "delta_monotone_cap", "MAX_GAUSSIAN_SCALE",
           "MAX_RELEASE_LOSS"]

#: The largest Gaussian σ audited: the Gaussian laws and theorems square σ (1e150² = 1e300 is
#: a float; a larger σ overflows them).
MAX_GAUSSIAN_SCALE = 1e150

#: The largest privacy loss of one Laplace release a worst case accepts (span / scale): its
#: PLDs, pair integrals and boxes need e^loss as a float.
MAX_RELEASE_LOSS = 700.0

#: finest loss grid step the refinements go to (a composition of 10^4 releases stays < 60 s)
MIN_DISCRETIZATION = DISCRETIZATION / 16


def tolerance(epsilon: float) -> float:
    """The numerical error a refined PLD composition aims at: 0.5 % of ε, or 1e-3 if larger."""
    return max(1e-3, 0.005 * epsilon) if math.isfinite(epsilon) else math.inf


#: seconds the next refinement step may be predicted to take (5 times the last one)
TIME_BUDGET = 30.0
#: the numerical error a fresh-mask worst pair is refined to (absolute, in ε)
PAIR_TOLERANCE = 1e-3

#: the reference of the worst-case row in the bound table and its JSON, when its bracket
#: closes (:attr:`WorstCase.exact`)
REFERENCE = "exact worst case"
#: the reference when it does not: ``epsilon`` an upper bound, ``lower`` its lower end
BRACKET_REFERENCE = "worst case (bracket)"


def substitution_sensitivity(lo: float, hi: float, na_value: float) -> float:
    """max(hi − lo, |hi − na|, |lo − na|): how far one record moves a scalar sum when it is
    replaced by any value of [lo, hi] or by a missing entry read as ``na_value``."""
    return max(hi - lo, abs(hi - na_value), abs(lo - na_value))


@dataclass(frozen=True)
class Setting:
    """A scalar additive release of one column under record-level MCAR.

    Parameters
    ----------
    noise : NoiseKind or str
        ``"laplace"`` or ``"gaussian"``, i.i.d. per release.
    scale : float
        b (Laplace) or σ (Gaussian) of one release, > 0.
    domain : (float, float)
        [lo, hi] of the record's contribution when observed, lo < hi, finite.
    na_value : float
        What the record contributes when missing (finite; inside or outside the domain).
    observation : float
        q = p* ∈ (0, 1]: the probability that the record is observed.
    releases : int
        k ≥ 1 releases of the query.
    masks : MaskRegime or str
        ``"shared"`` (one table), ``"fresh"`` (missingness redrawn per release) or
        ``"persistent"`` (each collection keeps the record's mask with probability
        ``persistence``, else redraws it: §10.7; k ≤ 12).
    persistence : float or None
        r ∈ [0, 1] with persistent masks; None otherwise.

    Raises
    ------
    ValueError
        Naming the parameter, on any value outside its range, and for Laplace noise a scale
        below span / ``MAX_RELEASE_LOSS`` (the span of the domain and ``na_value``): one
        release's privacy loss must keep e^loss a float.
    """

    noise: NoiseKind
    scale: float
    domain: tuple[float, float]
    na_value: float
    observation: float
    releases: int = 1
    masks: MaskRegime = MaskRegime.SHARED
    persistence: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise, "noise"))
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))
        lo, hi = check_interval(self.domain, "domain")
        object.__setattr__(self, "domain", (lo, hi))
        if not math.isfinite(float(self.na_value)):
            raise ValueError(f"na_value must be finite, got na_value={self.na_value!r}")
        object.__setattr__(self, "na_value", float(self.na_value))
        span = substitution_sensitivity(lo, hi, self.na_value)  # the domain and NA's span
        if self.noise is NoiseKind.LAPLACE and span / self.scale > MAX_RELEASE_LOSS:
            raise ValueError(f"scale must be at least {span / MAX_RELEASE_LOSS:.6g} for Laplace "
                             f"noise here (one release's largest privacy loss, the span "
                             f"{span:g} of the domain and the missing reading over the scale, "
                             f"at most {MAX_RELEASE_LOSS:g}; a config's scenario.epsilon sets "
                             f"the scale), got scale={self.scale!r}")
        q = check_probability(self.observation, "observation")
        if q == 0.0:
            raise ValueError(f"observation must be in (0, 1], got observation="
                             f"{self.observation!r}")
        object.__setattr__(self, "observation", q)
        object.__setattr__(self, "releases", check_count(self.releases, "releases"))
        masks = MaskRegime.parse(self.masks, "masks")
        object.__setattr__(self, "masks", masks)
        if masks is MaskRegime.PERSISTENT:
            if self.persistence is None:
                raise ValueError("persistence must be given with masks='persistent', got "
                                 "persistence=None")
            object.__setattr__(self, "persistence",
                               check_probability(self.persistence, "persistence"))
        elif self.persistence is not None:
            raise ValueError(f"persistence applies to masks='persistent', got persistence="
                             f"{self.persistence!r} with masks={masks.value!r}")

    def law(self, value: float | None) -> Mixture:
        """The one-release law when the record holds ``value`` (None: the all-missing record)."""
        q, na = self.observation, self.na_value
        if value is None or value == na or q == 1.0:
            return Mixture([1.0], [na if value is None else value], self.noise, self.scale)
        return Mixture([1 - q, q], [na, value], self.noise, self.scale)

    def candidates(self) -> dict[str, float | None]:
        """The records of the corner lemma: both ends of the domain and the missing record."""
        lo, hi = self.domain
        out: dict[str, float | None] = {"lo": lo, "hi": hi}
        if self.na_value not in (lo, hi):  # a record that is NA in the data (any q)
            out["NA"] = None  # (NA read as an end of the domain has that end's law)
        return out


@dataclass(frozen=True)
class WorstCase:
    """The worst case of a :class:`Setting` at one final δ: the setting's ε lies in
    [``lower``, ``epsilon``].

    ``epsilon`` is a certified upper bound (never below the truth); ``lower`` a certified
    lower bound, the ε of a pair of the setting (``pair``; its numerical bracket's low end);
    ``error`` = ``epsilon`` − ``lower``; ``exact`` says whether the two meet within the
    numerical tolerance (:func:`tolerance`), i.e. ``epsilon`` is the setting's worst case and
    ``pair`` attains it; ``upper_pair`` the pair the upper end's argument names (where the
    bracket does not close and the upper end is not an envelope); ``method`` how each end was
    computed; ``covers`` what ``epsilon`` bounds. :meth:`to_dict` names the row ``REFERENCE``
    ("exact worst case") when it is exact and ``BRACKET_REFERENCE`` ("worst case (bracket)")
    when it is not.
    """

    epsilon: float
    lower: float
    pair: tuple[str, str] | None
    method: str
    covers: str
    #: the pair the upper end's argument comes from, where it names one (a bracket that does
    #: not close: ``pair`` is the lower end's); None where the upper end is an envelope
    upper_pair: tuple[str, str] | None = None

    @property
    def error(self) -> float:
        if math.isinf(self.epsilon) and math.isinf(self.lower):
            return 0.0  # both ends infinite: no finite ε holds, exactly
        return max(self.epsilon - self.lower, 0.0)

    @property
    def exact(self) -> bool:
        if math.isinf(self.epsilon):
            return math.isinf(self.lower)
        return self.error <= tolerance(self.epsilon)

    def to_dict(self) -> dict:
        return {"reference": REFERENCE if self.exact else BRACKET_REFERENCE,
                "epsilon": self.epsilon, "error": self.error, "lower": self.lower,
                "exact": self.exact,
                "pair": None if self.pair is None else list(self.pair),
                "upper_pair": None if self.upper_pair is None else list(self.upper_pair),
                "method": self.method, "covers": self.covers}


def _bracket(v: PairValue) -> tuple[float, float]:
    """(low end, high end) of a pair value's numerical bracket (0 below where it has none)."""
    low = v.value - v.error
    return (low if low > 0.0 else 0.0), v.value + v.error


def _fresh_bracket(bounds: tuple[float, float]) -> tuple[float, float]:
    """(low end, high end) of a fresh pair's (lower, upper): through its midpoint and
    half-width (:func:`_bracket`, as the pair's value reads them) where the upper end is
    finite, else the lower end kept (a midpoint of ∞ would lose it)."""
    lo, hi = bounds
    if math.isinf(hi):
        return max(lo, 0.0), hi
    return _bracket(PairValue(0.5 * (hi + lo), 0.5 * max(hi - lo, 0.0)))


def worst_case(setting: Setting, delta: float) -> WorstCase:
    """The worst case of ``setting`` at the final δ of its k releases together.

    Parameters
    ----------
    setting : Setting
    delta : float
        δ ∈ [0, 1] of the k releases together.

    Returns
    -------
    WorstCase

    Raises
    ------
    ValueError
        On a bad δ, or a PLD composition of more than ``MAX_PLD_RELEASES`` releases at δ > 0.

    References
    ----------
    docs/THEORY.md §10 (derived in this project); [BBG18] Theorem 2.

    Examples
    --------
    The issue's check value: a Gaussian sum over [−1, 1], NA read as 0, ε = 1, δ = 1e-5 per
    release (classical σ, sensitivity 2), q = 0.1, 100 releases from one table, final δ 1e-5:

    >>> import math
    >>> s = Setting("gaussian", 2 * math.sqrt(2 * math.log(1.25e5)), (-1, 1), 0.0, 0.1, 100)
    >>> w = worst_case(s, 1e-5)
    >>> round(w.epsilon, 4), w.pair, w.exact
    (1.9117, ('hi', 'lo'), True)
    """
    if not isinstance(setting, Setting):
        raise ValueError(f"setting must be a Setting, got setting={setting!r}")
    d = check_delta(delta)
    k = setting.releases
    if setting.masks is MaskRegime.PERSISTENT:
        return _persistent(setting, d)
    if d > 0 and k > MAX_PLD_RELEASES and not (
            setting.noise is NoiseKind.GAUSSIAN and setting.masks is MaskRegime.SHARED):
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for this worst case at "
                         f"delta > 0 (a PLD composition), got releases={k}")
    one_d = k == 1 or (setting.masks is MaskRegime.SHARED and setting.noise is NoiseKind.GAUSSIAN)
    if one_d:
        found = _corners(setting, d)
    elif setting.masks is MaskRegime.SHARED:
        found = _laplace_shared(setting, d)
    elif d == 0.0:
        return _fresh_pure(setting)
    else:
        found = _fresh(setting, d)
    if setting.noise is NoiseKind.LAPLACE and d > 0.0:
        return delta_monotone_cap(found, worst_case(setting, 0.0))
    return found


def delta_monotone_cap(found: WorstCase, pure: WorstCase) -> WorstCase:
    """Every Laplace row at δ > 0 capped at the same setting's δ = 0 upper end: an (ε, 0)-DP
    mechanism is (ε, δ)-DP, so ε(δ) ≤ ε(0) (the lower end, certified, stays below)."""
    if found.epsilon <= pure.epsilon:
        return found
    return replace(found, epsilon=max(pure.epsilon, found.lower), upper_pair=pure.pair,
                   method=f"{found.method}; capped at the delta = 0 value {pure.epsilon:.6g} "
                          "(epsilon is non-increasing in delta)")


def _fresh_pure(setting: Setting) -> WorstCase:
    """Fresh masks at δ = 0: a product's sup |ln p/q| is the sum of its factors', so the
    setting's ε is k times one release's (its worst pair by the corner lemma), with no PLD."""
    one = _corners(replace(setting, releases=1), 0.0)
    k = setting.releases
    return WorstCase(k * one.epsilon, k * one.lower, one.pair,
                     "pure composition: k times one release's epsilon at delta = 0 (corner "
                     "lemma)", one.covers)


def _pairs(setting: Setting):
    """Every unordered pair of the setting's candidate records."""
    names = list(setting.candidates())
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            yield a, b


def unresolved_releases(k: int, scale: float, exc: Exception) -> ValueError:
    """The refusal of k Gaussian releases from one table whose pair leaves the float range:
    they are one release at ``scale``/√k (``exc``: why that pair cannot be resolved)."""
    return ValueError(f"releases must be fewer for this worst case: {k} releases are one at "
                      f"sigma/sqrt(k) = {scale / math.sqrt(k):.3g}, whose pair cannot be "
                      f"resolved ({exc}), got releases={k}")


def _corners(setting: Setting, delta: float) -> WorstCase:
    cands = setting.candidates()
    best: tuple[float, float, tuple[str, str]] | None = None
    for a, b in _pairs(setting):
        P, Q = setting.law(cands[a]), setting.law(cands[b])
        if setting.noise is NoiseKind.GAUSSIAN and setting.releases > 1:
            try:
                val = shared_pair_epsilon(P, Q, setting.releases, delta)
            except ValueError as exc:  # σ/√k so small that ε leaves the float range
                raise unresolved_releases(setting.releases, setting.scale, exc) from None
        else:
            val = pair_epsilon(P, Q, delta)
        low, high = _bracket(val)
        if best is None or high > best[1]:
            best = (low, high, (a, b))
    assert best is not None  # a domain has two ends
    low, high, pair = best
    how = ("one release at sigma/sqrt(k) (the mean is sufficient)"
           if setting.releases > 1 else "one release")
    return WorstCase(high, low, _ordered(pair), f"corner lemma: {how}",
                     "every pair of the domain and the missing record")


def _ordered(pair: tuple[str, str]) -> tuple[str, str]:
    order = {"hi": 0, "lo": 1, "NA": 2}  # then an inner record ("c=0.5")
    return tuple(sorted(pair, key=lambda n: order.get(n, 3)))  # type: ignore[return-value]


def fresh_pair(setting: Setting, a: str, b: str, delta: float) -> tuple[float, float]:
    """(low, high) of the exact ε of the candidate pair (``a``, ``b``) over the setting's k
    releases with fresh masks: both orders' PLDs composed separately, the larger, with the
    loss grid refined (÷4 from 10⁻⁴) until the bracket is within ``PAIR_TOLERANCE``, the
    grid floor, or the time budget (docs/THEORY.md §10.4)."""
    cands = setting.candidates()
    P, Q = setting.law(cands[a]), setting.law(cands[b])
    low, high, _ = refine_bracket(
        lambda h: _fresh_bracket(fresh_pair_bounds(P, Q, setting.releases, delta,
                                              discretization=h)),
        DISCRETIZATION, good=lambda lo, hi: hi - lo <= PAIR_TOLERANCE,
        can_refine=lambda h: h >= MIN_DISCRETIZATION, step_seconds=TIME_BUDGET / 5)
    return low, high


def _fresh(setting: Setting, delta: float) -> WorstCase:
    """Lower: the largest exact ε of a candidate pair. Upper: the k-fold composition of the
    pair that dominates the per-γ envelope of every candidate pair in both orders (by the
    corner lemma, the envelope of the whole domain), and where that is not within the
    tolerance, the branch and bound over boxes of pairs (§10.4)."""
    best, highs = None, [0.0]
    for a, b in _pairs(setting):
        low, high = fresh_pair(setting, a, b, delta)
        highs.append(high)
        if best is None or low > best[0]:
            best = (low, (a, b))
    assert best is not None
    lower, pair = best
    cands = setting.candidates()
    upper = envelope_epsilon([(setting.law(cands[a]), setting.law(cands[b]))
                              for a, b in _pairs(setting)], setting.releases, delta)
    how = "the k-fold composition of the per-gamma envelope of the candidate pairs"
    if upper - lower > tolerance(lower):
        top = (_corners(replace(setting, releases=1), 0.0).epsilon
               if setting.noise is NoiseKind.LAPLACE else None)
        boxes = fresh_boxes(setting.noise, setting.scale, setting.domain, setting.na_value,
                            setting.observation, setting.releases, delta,
                            lower + tolerance(lower), top=top, budget=TIME_BUDGET)
        if max(boxes.upper, *highs) < upper:
            upper, how = max(boxes.upper, *highs), boxes.describe()
    return WorstCase(max(upper, lower), lower, _ordered(pair),
                     f"upper: {how}; lower: the worst candidate pair, both orders composed "
                     "separately", "every pair of the domain and the missing record")


def _laplace_shared(setting: Setting, delta: float) -> WorstCase:
    """k Laplace releases from one table (docs/THEORY.md §10.3). At δ = 0 the exact value:
    the supremum over outputs in R^k and over every pair of the domain and the missing record
    of the log density ratio, certified by a branch and bound
    (:func:`audit.theory.laplace_shared.laplace_shared_pure`). At δ > 0 a bracket: above,
    advanced joint convexity ([BBG18] Theorem 2) then joint convexity, at every pair:
    D_{γ'}(P_c ‖ P_c′) = q D_γ(N_c ‖ (1 − β)N_na + βN_c′) ≤ q[(1 − β)δ_1(ε) + βδ_2(ε)],
    γ = 1 + (γ' − 1)/q, β = γ'/γ, δ_1 and δ_2 the k-fold Laplace profiles at the largest
    shifts |c − na| (μ₁) and max(|c − c′|, μ₁) (μ₂: a pair with the missing record moves
    by |c − na|) of the domain (:func:`worst_case` caps it at the δ = 0 value); below, the
    worst pair with the missing record (exact by its one-dimensional loss,
    :func:`audit.theory.pair.releases.record_level_pair_epsilon`)."""
    from audit.theory.laplace_shared import (
        MAX_BOX_EPSILON,
        MAX_OPPOSITE_RELEASES,
        laplace_shared_pure,
        opposite_pair_epsilon,
        shared_upper,
    )

    lo, hi = setting.domain
    q, k, b, m = setting.observation, setting.releases, setting.scale, setting.na_value
    covers = "every pair of the domain and the missing record"
    if delta == 0.0:
        r = laplace_shared_pure(lo, hi, m, q, b, k)
        a, nc, ncp = r.counts
        return WorstCase(float(r.epsilon), float(r.lower), _ordered(r.pair),
                         "exact at delta = 0: the largest log density ratio over R^k and every "
                         "pair, certified by branch and bound (its worst output: "
                         f"{nc} releases at {r.pair[0]}, {ncp} at {r.pair[1]}, {a} at the NA "
                         "reading)", covers)
    mu1 = max(abs(hi - m), abs(lo - m)) / b
    mu2 = max((hi - lo) / b, mu1)
    lower, pair = _missing_record_lower(setting, delta)
    above = 0.0  # the highest upper end of a pair's own bracket
    top = log1p_c_expm1(k * mu2, q)  # above every pair's δ = 0 value
    # the boxes multiply e^ε by density ratios up to e^{kμ₂}: run them while that is a float
    boxes = lo < m < hi and k <= MAX_OPPOSITE_RELEASES and k * mu2 <= MAX_BOX_EPSILON
    if boxes:  # the pairs across the missing reading
        sides = [(("hi", "lo"), (lo, hi)), (("lo", "hi"), (2 * m - hi, 2 * m - lo))]
        for names, (a_lo, a_hi) in sides[:1] if hi - m == m - lo else sides:  # mirror images
            low, high = opposite_pair_epsilon(a_lo, a_hi, m, q, b, k, delta, at_most=lower)
            above = max(above, high)
            if low > lower:
                lower, pair = low, names
    d1 = laplace_profile(mu1, k, DISCRETIZATION) if mu1 > 0 else (lambda e: 0.0)
    d2 = laplace_profile(mu2, k, DISCRETIZATION)

    def excess(e_out: float) -> float:
        e_in = log1p_expm1_div(e_out, q)  # ln γ, γ = 1 + (e^{ε'} − 1)/q
        beta = math.exp(e_out - e_in)
        return q * ((1 - beta) * d1(e_in) + beta * d2(e_in)) - delta

    if excess(0.0) <= 0:
        upper = 0.0
    elif excess(top) > 0:
        upper = top
    else:
        upper = brentq(excess, 0.0, top, xtol=1e-10)
    far = "hi" if abs(hi - m) >= abs(lo - m) else "lo"
    na = "NA" if "NA" in setting.candidates() else ("lo" if m == lo else "hi")
    # the pair whose shift is the bound's μ₂ (the domain's largest move)
    argument = ("hi", "lo") if hi - lo >= mu1 * b else _ordered((far, na))
    how = ("lower: the worst pair across the missing reading, exact (§10.3)"
           if pair in (("hi", "lo"), ("lo", "hi")) else
           "lower: the worst pair of a record and the missing record, exact")
    upper_how = "advanced joint convexity over the domain ([BBG18] Thm 2)"
    if boxes and 0.0 < lower < upper:
        boxed = shared_upper(lo, hi, m, q, b, k, delta, lower, above=above)
        if boxed is not None and boxed < upper:
            upper, argument = boxed, pair
            upper_how = (f"every pair bounded on boxes of its numerator, within "
                         f"{boxed / lower - 1:.2%} of the lower end's pair (§10.3)")
    return WorstCase(max(min(upper, top), lower), lower, pair, f"upper: {upper_how}; {how}",
                     covers, upper_pair=argument)


def _missing_record_lower(setting: Setting, delta: float) -> tuple[float, tuple | None]:
    """The largest exact ε of a pair (end of the domain, missing record) over k Laplace
    releases from one table (its low numerical end), and that pair."""
    from audit.theory.pair.releases import RecordLevelPair, record_level_pair_epsilon

    lo, hi = setting.domain
    m, k = setting.na_value, setting.releases
    na = "NA" if "NA" in setting.candidates() else ("lo" if m == lo else "hi")
    best: tuple[float, tuple | None] = (0.0, None)
    for name, c in (("lo", lo), ("hi", hi)):
        if c == m:
            continue
        if delta == 0.0:  # the saturating likelihood ratio (§9.5): no k-vector, any k
            low = log1p_c_expm1(k * abs(c - m) / setting.scale, setting.observation)
        else:  # k ≤ MAX_PLD_RELEASES here (worst_case refuses more at δ > 0)
            pair = RecordLevelPair(setting.observation, np.full(k, c - m), np.zeros(k),
                                   setting.noise, setting.scale)
            low = _bracket(record_level_pair_epsilon(pair, delta))[0]
        if low > best[0]:
            best = (low, _ordered((name, na)))
    return best


def _persistent(setting: Setting, delta: float) -> WorstCase:
    """Persistent masks (docs/THEORY.md §10.7): the upper end the redraw epochs' mixture of a
    pair that dominates, at every epoch length ℓ, every candidate pair of the corner lemma
    (§10.2: one release at σ/√ℓ) in both orders, so it covers every pair of the domain and
    the missing record (:func:`audit.theory.persistent.persistent_envelope_epsilon`); the
    lower end the largest certified lower end of a candidate pair
    (:func:`audit.theory.persistent.persistent_bound`: the box bracket for k ≤ 4, else the
    sum of the releases). The candidates' own upper ends are not the setting's: the corner
    lemma is one-dimensional and is not known to hold for the k-dimensional persistent pair
    (§10.7), so the row is a bracket where the two ends do not meet. At persistence 1 (0)
    this is the shared (fresh) worst case, to its error."""
    reason = persistent_refusal(setting.noise, setting.releases)
    if reason:
        raise ValueError(reason)
    if setting.noise is NoiseKind.LAPLACE:
        return _persistent_laplace(setting, delta)
    cands = setting.candidates()
    na = setting.na_value
    pairs = {(a, b): PersistentPair(na if cands[a] is None else cands[a],
                                    na if cands[b] is None else cands[b], na,
                                    setting.observation, setting.scale, setting.releases,
                                    setting.persistence)
             for a, b in _pairs(setting)}
    upper = persistent_envelope_epsilon(list(pairs.values()), delta)
    lowers = {names: persistent_lower(pp, delta) for names, pp in pairs.items()}
    if upper - max(lowers.values()) <= tolerance(upper):  # closed already (r = 0 or 1)
        brackets = {names: PersistentBound(upper, low) for names, low in lowers.items()}
    else:
        brackets = {names: persistent_bound(pp, delta) for names, pp in pairs.items()}
    worst = max(brackets, key=lambda names: brackets[names].lower)
    own = brackets[worst]
    lower = own.lower
    if own.boxes:
        method = ("upper: the redraw epochs' mixture of the compositions of shared-mask "
                  "epochs, each the envelope of the candidate pairs (one release at "
                  "sigma/sqrt(length)), covering every pair; lower: the worst candidate pair's "
                  f"certified box bracket [{own.lower:.6g}, {own.epsilon:.6g}] (its own exact "
                  "epsilon; the corner lemma is not proven for persistent masks, so the "
                  "setting's upper end stays the envelope)")
    else:
        method = ("upper: the redraw epochs' mixture of the compositions of shared-mask "
                  "epochs, each the envelope of the candidate pairs (one release at "
                  "sigma/sqrt(length)); lower: the sum of the releases (and at r = 0 the "
                  "fresh pair), the worst candidate pair")
    return WorstCase(max(upper, lower), lower, _ordered(worst), method,
                     "every pair of the domain and the missing record")


def _persistent_laplace(setting: Setting, delta: float) -> WorstCase:
    """Laplace noise (docs/THEORY.md §10.7): at persistence 1 (0) the shared (fresh) worst
    case; in between the bracket of :mod:`audit.theory.persistent_laplace`."""
    from audit.theory.persistent_laplace import persistent_laplace_bracket

    if setting.persistence in (0.0, 1.0):
        regime = MaskRegime.SHARED if setting.persistence == 1.0 else MaskRegime.FRESH
        found = worst_case(replace(setting, masks=regime, persistence=None), delta)
        return replace(found, method=f"persistence {setting.persistence:g} is {regime.value} "
                                     f"masks: {found.method}")
    upper, lower, pair, method = persistent_laplace_bracket(setting, delta)
    return WorstCase(upper, lower, _ordered(pair), method,
                     "every pair of the domain and the missing record")
