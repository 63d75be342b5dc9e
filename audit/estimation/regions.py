"""Test regions on a score, how they are chosen, and the ε lower bounds they give.

Conventions
-----------
* ``score`` is a per-bin statistic, larger = more evidence for P = A_D(z).
* Regions are thresholds on the score. :attr:`Direction.Z_VS_ZPRIME`: S = {score ≥ t}, bound
  ε ≥ ln((P(S) − δ)/Q(S)). :attr:`Direction.ZPRIME_VS_Z`: S = {score ≤ t}, bound
  ε ≥ ln((Q(S) − δ)/P(S)).

Validity (probability ≥ 1 − ``alpha`` over the main run): the main-run draws are i.i.d. from P
(``counts_p``) and Q (``counts_q``), independent of each other, and the region was chosen
without looking at them — from the exact laws (:func:`select_region_by_model`), on an
independent pilot (:func:`select_region_on_pilot`), or as one of a finite family declared
before the run and paid for with a Bonferroni union bound (:func:`grid_bound`). Choosing the
threshold on the main counts and then calling :func:`region_bound` is NOT valid.

Every region carries the rule it is bounded by (:class:`audit.enums.BoundRule`): the two
intervals, or at δ = 0 the joint bound on P(S)/(P(S) + Q(S)), valid only on the counts of a
Poissonised run (:func:`audit.estimation.binomial.eps_joint_from_counts`). The region choices
offered both (``rules``) predict each candidate under each rule and keep the best pair, the
joint bound where it is predicted at least as strong.

Every function here runs in O((bins + thresholds) · log bins) time and O(bins + thresholds)
memory.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_delta, check_positive_int
from audit.enums import BoundRule, Direction
from audit.estimation.binomial import (
    SIDES,
    check_alpha,
    cp_lower_array,
    cp_upper_array,
    eps_by_rule,
    eps_from_bounds,
    eps_plug_in,
    joint_share_lower,
    log_ratio_of_bounds,
)
from audit.estimation.prediction import expected_count, large_mass, small_mass
from audit.estimation.witness import field_values, register_bound
from audit.mixture import Mixture
from audit.policy import DEFAULT_POLICY
from audit.ties import quantise_scores

__all__ = [
    "Direction",
    "Region",
    "EpsLowerResult",
    "RegionBound",
    "RegionCounts",
    "check_histograms",
    "region_counts",
    "select_region_on_pilot",
    "predicted_bounds",
    "select_region_by_model",
    "model_bin_probabilities",
    "region_bound",
    "grid_bound",
    "check_rules",
]

# Guard of region selection (``audit.policy.AuditPolicy``: ``pessimism_sd``, ``guard_alpha``,
# read from the policy a caller passes, default ``DEFAULT_POLICY``): a candidate is ranked by
# the bound the main run is predicted to give by the one rule of
# ``audit.estimation.prediction`` (a pilot's numerator at its Clopper–Pearson lower bound at
# ``guard_alpha`` / 2, every expected count moved ``pessimism_sd`` standard deviations against
# the bound). Without it, the maximum over thousands of candidate regions picks tail regions
# whose few counts happened to (or are expected to) look good, and whose bound on the main run
# is then 0 (the winner's curse).

_DIRECTIONS = (Direction.Z_VS_ZPRIME, Direction.ZPRIME_VS_Z)
_TWO = BoundRule.TWO_INTERVALS


# --------------------------------------------------------------------------- checks
def _check_counts(name: str, counts: object) -> np.ndarray:
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
            raise ValueError(f"{name} must hold integer counts, got {name}={arr!r}")
    arr = arr.astype(np.int64)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got min({name})={arr.min()}")
    if arr.sum() == 0:
        raise ValueError(f"{name} must have a positive total, got sum({name})=0")
    return arr


def check_histograms(counts_p, counts_q, score, prefix: str = "counts"):
    """Validate two histograms over the same bins and their per-bin score."""
    cp = _check_counts(f"{prefix}_p", counts_p)
    cq = _check_counts(f"{prefix}_q", counts_q)
    sc = np.asarray(score, dtype=np.float64)
    if cp.shape != cq.shape or sc.shape != cp.shape:
        raise ValueError(
            f"{prefix}_p, {prefix}_q and score must have the same length, got "
            f"{cp.shape[0]}, {cq.shape[0]} and {sc.shape}"
        )
    if np.any(np.isnan(sc)):
        raise ValueError("score must not contain NaN")
    return cp, cq, sc


def check_rules(rules, delta: float) -> tuple[BoundRule, ...]:
    """``rules`` as a non-empty tuple of :class:`BoundRule` members, the joint one only at
    δ = 0."""
    rules = tuple(BoundRule.parse(r, "rules") for r in rules)
    if not rules:
        raise ValueError("rules must name at least one bound rule, got rules=()")
    if BoundRule.JOINT in rules and delta != 0.0:
        raise ValueError(f"the joint bound rule needs delta = 0, got delta={delta}")
    return rules


def _check_thresholds(thresholds) -> np.ndarray:
    th = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if th.size == 0 or not np.all(np.isfinite(th)):
        raise ValueError(f"thresholds must be a non-empty array of finite values, got {th!r}")
    return th


# --------------------------------------------------------------------------- regions
@dataclass(frozen=True)
class Region:
    """A score-threshold region: {score ≥ t} for z_vs_zprime, {score ≤ t} for zprime_vs_z,
    and the rule its main-run counts are bounded by (``JOINT``: the main run must be
    Poissonised, :mod:`audit.pipeline.poisson`)."""

    direction: Direction
    threshold: float
    rule: BoundRule = _TWO

    def __post_init__(self) -> None:
        object.__setattr__(self, "direction", Direction.parse(self.direction, "direction"))
        object.__setattr__(self, "rule", BoundRule.parse(self.rule, "rule"))

    def mask(self, score: np.ndarray) -> np.ndarray:
        score = np.asarray(score, dtype=np.float64)
        if self.direction is Direction.Z_VS_ZPRIME:
            return score >= self.threshold
        return score <= self.threshold


@dataclass(frozen=True)
class RegionCounts:
    """Counts of both sides in {score ≥ t} and {score ≤ t} for each threshold t."""

    p_ge: np.ndarray
    q_ge: np.ndarray
    p_le: np.ndarray
    q_le: np.ndarray
    n_p: int
    n_q: int


def region_counts(cp: np.ndarray, cq: np.ndarray, score: np.ndarray, thresholds) -> RegionCounts:
    """Counts in {score ≥ t} and {score ≤ t} for every threshold, by cumulative sums over the
    bins sorted by score (exact integer arithmetic, O((bins + thresholds) log bins))."""
    order = np.argsort(score, kind="stable")
    s = score[order]
    cum_p = np.concatenate([[0], np.cumsum(cp[order])])
    cum_q = np.concatenate([[0], np.cumsum(cq[order])])
    t = np.asarray(thresholds, dtype=np.float64)
    below = np.searchsorted(s, t, side="left")  # bins with score < t
    upto = np.searchsorted(s, t, side="right")  # bins with score <= t
    n_p, n_q = int(cum_p[-1]), int(cum_q[-1])
    return RegionCounts(n_p - cum_p[below], n_q - cum_q[below], cum_p[upto], cum_q[upto],
                        n_p, n_q)


@register_bound
@dataclass(frozen=True)
class EpsLowerResult:
    """An empirical lower bound on ε, valid with probability ≥ 1 − ``alpha``.

    ``k_p``/``n_p`` count draws from P = A_D(z) falling in the region, ``k_q``/``n_q`` those
    from Q = A_D(z'). ``p_lo`` is the lower confidence bound on the NUMERATOR mass and ``q_hi``
    the upper bound on the DENOMINATOR mass (P and Q swapped for ``zprime_vs_z``).
    ``n_regions`` is the number of regions the confidence level was split over. ``rule``:
    the two intervals (``p_lo``, ``q_hi`` bound the masses, at alpha/2 each), or the joint
    bound of a Poissonised run (``p_lo`` = θ_lo, the lower bound at alpha on the numerator's
    share of the region's draws, ``q_hi`` = 1 − θ_lo; ``n_p`` and ``n_q`` are the Poisson
    numbers of draws, whose mean is the audit's ``trials``). Either way ε_lower =
    ln((p_lo − δ)/q_hi), floored at 0.
    """

    kind: ClassVar[str] = "region"
    eps_lower: float
    direction: Direction
    threshold: float
    k_p: int
    n_p: int
    k_q: int
    n_q: int
    p_lo: float
    q_hi: float
    alpha: float
    delta: float
    method: str
    n_regions: int
    rule: BoundRule = _TWO

    def __post_init__(self) -> None:
        object.__setattr__(self, "direction", Direction.parse(self.direction, "direction"))
        object.__setattr__(self, "rule", BoundRule.parse(self.rule, "rule"))

    def plug_in(self) -> float:
        """Point estimate ln((k_num/n_num − δ)/(k_den/n_den)) on the same region: not a bound.

        0 when the numerator does not exceed δ; ``inf`` when the denominator count is 0.
        """
        if self.direction is Direction.Z_VS_ZPRIME:
            counts = (self.k_p, self.n_p, self.k_q, self.n_q)
        else:
            counts = (self.k_q, self.n_q, self.k_p, self.n_p)
        return float(eps_plug_in(*counts, self.delta))

    @property
    def region_text(self) -> str:
        """The region as a formula of the score: ``{score >= t}`` or ``{score <= t}``."""
        op = ">=" if self.direction is Direction.Z_VS_ZPRIME else "<="
        return f"{{score {op} {self.threshold:.6g}}}"

    def describe(self) -> str:
        """The one sentence the command line, ``assert_private`` and reports print."""
        how = ("Bonferroni over a declared grid of " f"{self.n_regions} regions"
               if self.n_regions > 1 else f"region chosen by {self.method}")
        if self.rule is BoundRule.JOINT:
            how += ", joint bound on the numerator's share, Poisson calls"
        return (f"eps >= {self.eps_lower:.4g} at {1 - self.alpha:.6g} confidence "
                f"(one-sided Clopper-Pearson, {how}): region {self.region_text} "
                f"({self.direction.value}), k_p={self.k_p}/{self.n_p}, k_q={self.k_q}/{self.n_q}")

    def to_dict(self) -> dict:
        """The witness as JSON: every field, the direction by its value."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["direction"] = self.direction.value
        out["rule"] = self.rule.value
        out["kind"] = self.kind
        return out

    @classmethod
    def from_dict(cls, doc: dict) -> EpsLowerResult:
        """The bound a :meth:`to_dict` document describes (non-finite floats written as
        ``"inf"``/``"nan"`` read back).

        Raises
        ------
        ValueError
            If a required field is missing.
        """
        values = field_values(cls, doc)
        numbers = {k: float(v) for k, v in values.items()
                   if isinstance(v, str) and v in ("inf", "-inf", "nan")}
        return cls(**{**values, **numbers})

    def refutes(self, epsilon: float) -> bool:
        """A fixed bound refutes nothing by itself (the ceilings compare ε_lower)."""
        return False

    def result_keys(self) -> dict:
        return {}


#: A region bound is the typed witness of a fixed-size audit (the name the pipeline uses).
RegionBound = EpsLowerResult


@dataclass(frozen=True)
class _Candidates:
    """ε bounds of every (direction, threshold); arrays of shape (2, len(thresholds))."""

    eps: np.ndarray
    num_lo: np.ndarray
    den_hi: np.ndarray
    kp: np.ndarray
    kq: np.ndarray
    n_p: int
    n_q: int
    rule: BoundRule = _TWO

    def result(self, thresholds, d: int, i: int, alpha, delta, method, m) -> EpsLowerResult:
        return EpsLowerResult(
            eps_lower=float(self.eps[d, i]), direction=_DIRECTIONS[d],
            threshold=float(thresholds[i]), k_p=int(self.kp[d, i]), n_p=self.n_p,
            k_q=int(self.kq[d, i]), n_q=self.n_q, p_lo=float(self.num_lo[d, i]),
            q_hi=float(self.den_hi[d, i]), alpha=alpha, delta=delta, method=method,
            n_regions=m, rule=self.rule,
        )


def _candidates(rc: RegionCounts, delta: float, alpha_each: float,
                rule: BoundRule = _TWO) -> _Candidates:
    # z_vs_zprime: numerator P on {score ≥ t}; zprime_vs_z: numerator Q on {score ≤ t}.
    if rule is BoundRule.JOINT:  # (δ = 0: check_rules) the shares' bounds, at the whole α
        num_lo = np.stack([joint_share_lower(rc.p_ge, rc.q_ge, alpha_each),
                           joint_share_lower(rc.q_le, rc.p_le, alpha_each)])
        den_hi = 1.0 - num_lo
    else:
        a = alpha_each / SIDES
        num_lo = np.stack([cp_lower_array(rc.p_ge, rc.n_p, a),
                           cp_lower_array(rc.q_le, rc.n_q, a)])
        den_hi = np.stack([cp_upper_array(rc.q_ge, rc.n_q, a),
                           cp_upper_array(rc.p_le, rc.n_p, a)])
    return _Candidates(eps_from_bounds(num_lo, den_hi, delta), num_lo, den_hi,
                       np.stack([rc.p_ge, rc.p_le]), np.stack([rc.q_ge, rc.q_le]), rc.n_p, rc.n_q,
                       rule)


# --------------------------------------------------------------------------- selection
def select_region_on_pilot(pilot_counts_p, pilot_counts_q, score, delta: float, *,
                           guard: str = "cp", pilot_alpha: float = 0.05,
                           trials: int | None = None, alpha: float = 0.05,
                           rules=(_TWO,), pessimism_sd: float | None = None) -> Region:
    """Choose (direction, threshold) maximising an estimate of ε on PILOT counts only.

    Candidate thresholds are the distinct score values, both directions. ``guard="cp"`` ranks
    candidates by the Clopper–Pearson bound on the pilot counts at ``pilot_alpha`` (penalises
    regions with few counts), ties broken by the plug-in value; ``guard="point"`` by the
    plug-in ln((k_p/n_p − δ)/max(k_q, 1)/n_q); ``guard="predicted"`` by the bound a main run
    of ``trials`` calls per side is predicted to give at ``alpha`` (:func:`predicted_bounds`,
    the one rule of :mod:`audit.estimation.prediction`, its counts moved ``pessimism_sd``
    standard deviations), ties to the ``"cp"`` rank. The
    ``"cp"`` guard cannot see a tail event the main run will certify (150 of 10⁴ main calls
    against none is ε ≥ 3.5 at 95 %, but 15 of 1,000 pilot calls against none is ε = 0 at a
    guard of 10⁻³); the prediction can. Remaining ties (the same pilot counts) go to the
    region of fewer bins. The choice is a function of the pilot alone, so bounding it on an
    independent main run with :func:`region_bound` is valid without any multiplicity
    correction. ``rules`` (the predicted guard only): the bound rules on offer; each
    candidate is predicted under each, the best (region, rule) kept, the joint rule on ties
    (the returned :class:`Region`'s ``rule``).
    """
    cp_, cq_, sc = check_histograms(pilot_counts_p, pilot_counts_q, score, "pilot_counts")
    delta = check_delta(delta)
    pilot_alpha = check_alpha(pilot_alpha)
    if guard not in ("cp", "point", "predicted"):
        raise ValueError(f"guard must be one of 'cp', 'point', 'predicted', got "
                         f"guard={guard!r}")
    rules = check_rules(rules, delta)
    if guard != "predicted" and rules != (_TWO,):
        raise ValueError(f"rules other than ('two-intervals',) need guard='predicted', got "
                         f"guard={guard!r}")
    thresholds = np.unique(sc)
    rc = region_counts(cp_, cq_, sc, thresholds)
    # the plug-in as a ranking: the denominator at least one count
    plug = eps_plug_in(np.stack([rc.p_ge, rc.q_le]), np.array([[rc.n_p], [rc.n_q]]),
                       np.maximum(np.stack([rc.q_ge, rc.p_le]), 1),
                       np.array([[rc.n_q], [rc.n_p]]), delta, undefined=-np.inf)
    # Ties (equal bound and plug-in value: the same pilot counts) go to the region of fewer
    # bins: bins the pilot never reached add only main-run draws of the wrong side.
    s_sorted = np.sort(sc)
    n_bins = np.stack([sc.size - np.searchsorted(s_sorted, thresholds, side="left"),
                       np.searchsorted(s_sorted, thresholds, side="right")])
    size_penalty = 1e-12 * n_bins / sc.size
    # keys quantised before ranking (audit.statistics.quantise_scores): a symmetric pair's two
    # directions tie in exact arithmetic, and the tie must not be broken by the last bits of a
    # logarithm, which differ between CPUs
    if guard == "point":
        key = quantise_scores(plug) - size_penalty
    else:
        key = quantise_scores(_candidates(rc, delta, pilot_alpha).eps) \
            + 1e-9 * quantise_scores(np.tanh(quantise_scores(plug))) - size_penalty
    if guard != "predicted":
        d, i = np.unravel_index(int(np.argmax(key)), key.shape)
        return Region(_DIRECTIONS[d], float(thresholds[i]))
    pred = quantise_scores(np.stack([predicted_bounds(rc, delta, pilot_alpha, trials, alpha,
                                                      rule, pessimism_sd=pessimism_sd)
                                     for rule in rules]))
    keys = np.broadcast_to(key, pred.shape)
    # the last sort key decides first: the prediction, then the pilot's rank, then the joint
    # rule over the two intervals (at least as strong: the joint one)
    prefer = np.broadcast_to(np.array([r is BoundRule.JOINT for r in rules],
                                      dtype=np.float64)[:, None, None], pred.shape)
    order = np.lexsort((prefer.ravel(), keys.ravel(), pred.ravel()))
    r, d, i = np.unravel_index(int(order[-1]), pred.shape)
    return Region(_DIRECTIONS[d], float(thresholds[i]), rules[r])


def predicted_bounds(rc: RegionCounts, delta: float, pilot_alpha: float, trials: int,
                     alpha: float, rule: BoundRule = _TWO, *,
                     pessimism_sd: float | None = None) -> np.ndarray:
    """Per (direction, threshold) of pilot region counts ``rc``: the ε_lower a main run of
    ``trials`` calls per side is predicted to give at ``alpha`` (shape (2, thresholds)).

    The one rule of :mod:`audit.estimation.prediction`: the numerator's mass at its
    Clopper–Pearson lower bound at ``pilot_alpha`` / 2 on the pilot, the denominator's at its
    frequency; the expected main-run counts moved ``pessimism_sd`` standard deviations
    against the bound (default ``DEFAULT_POLICY``'s) and bounded as :func:`region_bound`
    bounds them. Floored at 0. ``rule``:
    the bound the expected counts are evaluated by
    (:func:`audit.estimation.binomial.eps_by_rule`; the joint one at δ = 0 only).
    """
    delta = check_delta(delta)
    pilot_alpha = check_alpha(pilot_alpha)
    trials = check_positive_int(trials, "trials")
    alpha = check_alpha(alpha)
    (rule,) = check_rules((rule,), delta)
    n = float(trials)
    k_num = expected_count(np.stack([large_mass(rc.p_ge, rc.n_p, pilot_alpha),
                                     large_mass(rc.q_le, rc.n_q, pilot_alpha)]), n,
                           pessimism_sd, large=True)
    k_den = expected_count(np.stack([small_mass(rc.q_ge, rc.n_q, 1.0 / rc.n_p),
                                     small_mass(rc.p_le, rc.n_p, 1.0 / rc.n_q)]),
                           n, pessimism_sd, large=False)
    return eps_by_rule(rule, k_num, n, k_den, n, delta, alpha)


def model_bin_probabilities(M: Mixture, edges: np.ndarray) -> np.ndarray:
    """Exact probability of every bin (underflow, overflow and the NaN bin, which a mixture
    never reaches) under a scalar law."""
    cdf = M.cdf(edges)
    return np.append(np.diff(np.concatenate([[0.0], cdf, [1.0]])).clip(min=0.0), 0.0)


def select_region_by_model(P: Mixture, Q: Mixture, edges, scores, trials: int, delta: float,
                           alpha: float, rules=(_TWO,), *, policy=None) -> Region:
    """White-box region choice from the exact laws, using no sample at all.

    For every threshold region of the score (both directions), predict the Clopper–Pearson
    bound the main run would give with expected counts moved ``policy.pessimism_sd`` standard
    deviations against it (the one rule of :mod:`audit.estimation.prediction`, on exact
    masses), and keep the best. Valid because the choice does not depend on the
    data it is later evaluated on. Bin masses are summed exactly (no rounding to counts), so
    far tails are not mistaken for empty regions. ``rules``: the bound rules on offer, each
    candidate predicted under each (the same moved counts), the best (region, rule) kept, the
    joint rule on ties.
    """
    trials = check_positive_int(trials, "trials")
    delta = check_delta(delta)
    alpha = check_alpha(alpha)
    rules = check_rules(rules, delta)
    sd = (DEFAULT_POLICY if policy is None else policy).pessimism_sd
    edges = np.asarray(edges, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if scores.size != edges.size + 2:
        raise ValueError(f"scores must have length len(edges)+2={edges.size + 2}, "
                         f"got {scores.size}")
    if np.isnan(scores).any():
        raise ValueError("scores must not contain NaN")
    thresholds, inv = np.unique(scores, return_inverse=True)
    mp = np.bincount(inv, weights=model_bin_probabilities(P, edges), minlength=thresholds.size)
    mq = np.bincount(inv, weights=model_bin_probabilities(Q, edges), minlength=thresholds.size)
    # Masses of {score >= t} and {score <= t} for every candidate t.
    p_ge, q_ge = np.cumsum(mp[::-1])[::-1], np.cumsum(mq[::-1])[::-1]
    p_le, q_le = np.cumsum(mp), np.cumsum(mq)
    n = float(trials)
    best, region = -np.inf, Region(Direction.Z_VS_ZPRIME, float(thresholds[-1]), rules[0])
    # the joint rule first: a later rule replaces it only where strictly stronger
    for rule in sorted(rules, key=lambda r: r is not BoundRule.JOINT):
        for direction, num, den in ((Direction.Z_VS_ZPRIME, p_ge, q_ge),
                                    (Direction.ZPRIME_VS_Z, q_le, p_le)):
            k_num = expected_count(num, n, sd, large=True)
            k_den = expected_count(den, n, sd, large=False)
            # quantised: the two directions of a symmetric pair tie exactly, on every CPU, and
            # the first (z vs z') is kept
            pred = quantise_scores(_model_prediction(rule, k_num, k_den, n, delta, alpha))
            i = int(np.argmax(pred))
            if pred[i] > best:
                best, region = pred[i], Region(direction, float(thresholds[i]), rule)
    return region


def _model_prediction(rule: BoundRule, k_num, k_den, n: float, delta: float,
                      alpha: float) -> np.ndarray:
    """The unfloored bound of moved expected counts under ``rule`` (it ranks below-zero
    regions too)."""
    if rule is BoundRule.JOINT:
        lo = joint_share_lower(k_num, k_den, alpha)
        return log_ratio_of_bounds(lo, 1.0 - lo, 0.0)
    a = alpha / SIDES
    return log_ratio_of_bounds(cp_lower_array(k_num, n, a), cp_upper_array(k_den, n, a), delta)


# --------------------------------------------------------------------------- bounds
def region_bound(counts_p, counts_q, score, region: Region, delta: float, alpha: float, *,
                 method: str = "pilot") -> EpsLowerResult:
    """ε lower bound of one region chosen independently of these (main-run) counts.

    Valid with probability ≥ 1 − alpha provided ``region`` does not depend on the main run
    (e.g. from :func:`select_region_on_pilot` on an independent pilot, or from the model).
    ``method`` records how the region was chosen; ``n_regions`` is 1. The region's ``rule``
    says how: the joint rule (δ = 0) is valid only on the counts of a Poissonised main run
    (:mod:`audit.pipeline.poisson`), whose ``n_p`` and ``n_q`` differ.
    """
    cp_, cq_, sc = check_histograms(counts_p, counts_q, score)
    if not isinstance(region, Region):
        raise ValueError(f"region must be an estimation.Region, got region={region!r}")
    delta = check_delta(delta)
    alpha = check_alpha(alpha)
    (rule,) = check_rules((region.rule,), delta)
    th = np.array([region.threshold])
    cand = _candidates(region_counts(cp_, cq_, sc, th), delta, alpha, rule)
    d = _DIRECTIONS.index(region.direction)
    return cand.result(th, d, 0, alpha, delta, method, 1)


def grid_bound(counts_p, counts_q, score, thresholds, delta: float,
               alpha: float) -> EpsLowerResult:
    """Maximum ε lower bound over a grid of thresholds × both directions declared in advance.

    Each of the m = 2·len(thresholds) regions is bounded at level alpha/m (Bonferroni), so all
    m bounds hold simultaneously, and hence their maximum, with probability ≥ 1 − alpha. The
    thresholds must not be chosen by looking at these counts.
    """
    cp_, cq_, sc = check_histograms(counts_p, counts_q, score)
    th = _check_thresholds(thresholds)
    delta = check_delta(delta)
    alpha = check_alpha(alpha)
    m = 2 * th.size
    cand = _candidates(region_counts(cp_, cq_, sc, th), delta, alpha / m)
    d, i = np.unravel_index(int(np.argmax(quantise_scores(cand.eps))), cand.eps.shape)
    return cand.result(th, d, i, alpha, delta, "bonferroni-grid", m)
