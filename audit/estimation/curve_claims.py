"""Curve-claim audits: test a stated trade-off curve (or family) on one region's two errors.

A curve claim states that the mechanism is f-DP for a given f, or for some member of an ordered
family {f_θ} (:mod:`audit.theory.tradeoff.families`: G_μ, C_{p*}(G_μ), a curve given by
points). On main-run counts that did not choose the region, one threshold region S gives one
test of "the output came from z′" (or of "from z") whose two errors, the false-positive rate
FPR and the false-negative rate FNR = 1 − TPR, are counted on the two sides (k_a of n_a and
k_b of n_b, independent binomials).

The two errors are bounded **jointly** (docs/THEORY.md §8.2): a point (a, b) is rejected when
the product of its two one-sided p-values, P_a(K_a ≤ k_a)·P_b(K_b ≤ k_b), is at most c, where
c(1 − ln c) = α (:func:`fisher_product_level`; for independent super-uniform p-values the
product is at most c with probability ≤ c(1 − ln c)). The points not rejected form a
1 − α confidence region for (FPR, FNR), a down-set whose upper boundary is
b*(a) = the Clopper–Pearson upper bound of k_b at level c / P_a(K_a ≤ k_a). A curve f is
refuted when no point of the region is consistent with f-DP (β ≥ f(α) and α ≥ f(β)): covered
by boxes [a_i, a_{i+1}] × [0, b*(a_i)) on a fine grid of a, it suffices that every box's
corner (a_{i+1}, b*(a_i)) lie strictly below f (:func:`joint_region_corners`). Where one side
dominates, the region is close to one Clopper–Pearson bound at level c; where both sides
count, its corner sits about 1.3 standard errors out on each side at α = 0.05 instead of the
1.96 of two intervals at α/2 each (the rule before 2026-12-07, kept as
:func:`claim_errors`).

In an ordered family the refuted members are an interval [0, θ*): the audit reports θ* (the
least over the corners of the family's boundary, :meth:`~audit.theory.tradeoff.families.
GaussianFamily.boundary`) and ``eps_family``, the ε at the audited δ of member θ*.
Validity: for a mechanism whose exact curve is the member θ₀, ``eps_family`` exceeds its true
ε only when the region misses its errors, which happens with probability ≤ α. It is a
statement about the family: it bounds the mechanism's ε only if the mechanism is in the
family, and it is never ε_lower (docs/THEORY.md §8.2: a μ read off a mixture's tails and
converted to ε overstates the mixture's ε).

The region is chosen without the main counts: on a pilot's counts (:func:`choose_claim_region`:
every threshold of the per-bin score in both directions, each ranked by the θ* it would give on
the main run if its errors were the pilot's, read by the one rule of
:mod:`audit.estimation.prediction` at the policy's guard level; the prediction bounds each
expected count at the level √c, the joint region's corner where the two sides weigh alike).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import betainc

from audit._validate import check_delta, check_in_range, check_positive_int
from audit.enums import CurveFamily, Direction
from audit.estimation.binomial import SIDES, check_alpha, cp_upper_array
from audit.estimation.prediction import expected_count, large_mass, small_mass
from audit.estimation.regions import (
    Region,
    check_histograms,
    model_bin_probabilities,
    region_counts,
)
from audit.mixture import Mixture
from audit.policy import DEFAULT_POLICY, AuditPolicy

__all__ = ["CurveClaimResult", "claim_counts", "claim_errors", "choose_claim_region",
           "choose_claim_region_by_model", "curve_claim_bound", "audit_curve_claim",
           "fisher_product_level", "joint_region_corners"]


@dataclass(frozen=True)
class CurveClaimResult:
    """The verdict of a curve claim on one region's main-run counts.

    ``k_fpr`` of ``n_fpr`` draws of the side the test rejects fell in its rejection region
    (false positives), ``k_fnr`` of ``n_fnr`` of the other side fell outside it (false
    negatives). ``fpr_hi`` and ``fnr_hi`` are the corner of the errors' confidence region
    that binds the verdict: under ``rule = "fisher-product"`` the corner of the joint region
    (module docstring) nearest the curve; under ``"two-intervals"`` (results written before
    2026-12-07) each error's upper bound at ``alpha``/2. ``theta`` is θ*, the boundary of the
    refuted members (every member below it is refuted; None for a single curve),
    ``eps_family`` the ε at ``delta`` of member θ* (0 when no member is refuted; None for a
    single curve). ``refuted``: some member (the curve) is refuted.
    """

    curve: CurveFamily
    family: dict
    refuted: bool
    theta: float | None
    eps_family: float | None
    delta: float
    alpha: float
    direction: Direction
    threshold: float
    k_fpr: int
    n_fpr: int
    k_fnr: int
    n_fnr: int
    fpr_hi: float
    fnr_hi: float
    rule: str = "fisher-product"

    def describe(self) -> str:
        """One sentence: the verdict, what it means, and its witness."""
        corner = "joint region's corner" if self.rule == "fisher-product" else "upper bounds"
        errors = (f"FPR {self.fpr_hi:.4g}, FNR {self.fnr_hi:.4g} ({corner}; "
                  f"{self.k_fpr}/{self.n_fpr}, {self.k_fnr}/{self.n_fnr} on "
                  f"{self.direction.value} at {self.threshold:.6g})")
        if self.theta is None:
            verdict = "refuted" if self.refuted else "not refuted"
            return (f"curve claim ({self.curve.value}) {verdict} at confidence "
                    f"{1 - self.alpha:g}: {errors}")
        return (f"curve claim ({self.curve.value}): every member below mu = {self.theta:.4f} "
                f"refuted at confidence {1 - self.alpha:g}; eps_family = "
                f"{self.eps_family:.4f} at delta = {self.delta:g} (bounds the mechanism's ε "
                f"only if it is in the family): {errors}")

    def to_dict(self) -> dict:
        """The result's ``claim`` document (JSON types only)."""
        return {"curve": self.curve.value, "family": dict(self.family),
                "refuted": self.refuted, "theta": self.theta, "eps_family": self.eps_family,
                "delta": self.delta, "alpha": self.alpha, "direction": self.direction.value,
                "threshold": self.threshold, "k_fpr": self.k_fpr, "n_fpr": self.n_fpr,
                "k_fnr": self.k_fnr, "n_fnr": self.n_fnr, "fpr_hi": self.fpr_hi,
                "fnr_hi": self.fnr_hi, "rule": self.rule}

    @classmethod
    def from_dict(cls, doc: dict) -> CurveClaimResult:
        """The inverse of :meth:`to_dict` (a document without ``rule`` is a two-interval
        result, written before the joint region)."""
        values = dict(doc)
        values["curve"] = CurveFamily.parse(values["curve"], "claim.curve")
        values["direction"] = Direction.parse(values["direction"], "claim.direction")
        values.setdefault("rule", "two-intervals")
        return cls(**values)


def fisher_product_level(alpha: float) -> float:
    """The product level c of the joint region at failure probability ``alpha``.

    For independent U, V uniform on [0, 1], P(U·V ≤ c) = c(1 − ln c); one-sided binomial
    p-values are super-uniform (P(p ≤ u) ≤ u), so their product is at most c with
    probability ≤ c(1 − ln c) (Fisher's combination of two p-values). Returns the largest
    float c with c(1 − ln c) ≤ alpha.

    >>> round(fisher_product_level(0.05), 6)
    0.008705
    """
    alpha = check_alpha(alpha)
    c = brentq(lambda x: x * (1.0 - math.log(x)) - alpha, 1e-300, alpha, xtol=1e-300,
               rtol=4 * np.finfo(float).eps)
    while c * (1.0 - math.log(c)) > alpha:  # the root's rounding, moved to the valid side
        c = float(np.nextafter(c, 0.0))
    return c


def _a_grid(k_a: float, n_a: float) -> np.ndarray:
    """The FPR values whose boxes cover the joint region: [0, 1] with 0 and 1, dense (801
    points over ±8 standard errors) around k_a/n_a, and log-spaced near 0."""
    p = k_a / n_a
    se = math.sqrt(max(p * (1.0 - p), 1.0 / n_a) / n_a)
    grid = np.concatenate([np.linspace(0.0, 1.0, 257), p + se * np.linspace(-8.0, 8.0, 801),
                           np.logspace(-15.0, 0.0, 151)])
    return np.unique(np.clip(grid, 0.0, 1.0))


def joint_region_corners(k_a, n_a, k_b, n_b, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The corners of the boxes that cover the joint 1 − ``alpha`` confidence region of two
    binomial proportions (module docstring).

    The region is {(a, b): P_a(K_a ≤ k_a)·P_b(K_b ≤ k_b) > c}, c =
    :func:`fisher_product_level` (``alpha``), a down-set. On a grid 0 = a_0 < … < a_M = 1,
    every point with a ∈ [a_i, a_{i+1}] has b < b*(a_i), the Clopper–Pearson upper bound of
    k_b at level c / P_{a_i}(K_a ≤ k_a) (0 where that p-value is ≤ c: the box is empty and
    left out). A set of (FPR, FNR) that every corner (a_{i+1}, b*(a_i)) lies outside of, and
    that is an up-set (f-DP's: β ≥ f(α), α ≥ f(β)), misses the region.

    Parameters
    ----------
    k_a, n_a, k_b, n_b : int or float
        The two counts and their sizes (fractional: expected counts, for a prediction).
    alpha : float in (0, 1)
        The region's failure probability.

    Returns
    -------
    (ndarray, ndarray)
        The corners' a and b, one per non-empty box (at least one).

    Raises
    ------
    ValueError
        Naming the parameter, if a size is not positive, a count is outside [0, its size],
        or alpha ∉ (0, 1).
    """
    n_a = check_in_range("n_a", n_a, 0.0, math.inf, lo_closed=False, hi_closed=False)
    n_b = check_in_range("n_b", n_b, 0.0, math.inf, lo_closed=False, hi_closed=False)
    k_a = check_in_range("k_a", k_a, 0.0, n_a)
    k_b = check_in_range("k_b", k_b, 0.0, n_b)
    c = fisher_product_level(alpha)
    a = _a_grid(k_a, n_a)
    if k_a >= n_a:
        p_a = np.ones_like(a)
    else:  # P(Bin(n_a, a) ≤ k_a) = I_{1-a}(n_a - k_a, k_a + 1)
        p_a = betainc(n_a - k_a, k_a + 1.0, 1.0 - a)
    # a box is empty where its p-value is ≤ c already; elsewhere c / p-value < 1, so b* > 0
    # (the first box, at a = 0, is never empty: P_0(K_a ≤ k_a) = 1)
    open_ = p_a[:-1] > c
    b_star = cp_upper_array(k_b, n_b, c / p_a[:-1][open_])
    return a[1:][open_], b_star


def _error_counts(rc, direction: Direction):
    """(k_fpr, n_fpr, k_fnr, n_fnr) of each threshold's test: it rejects z′ on
    S = ``Region(direction, t).mask(score)`` ({score ≥ t} for ``z_vs_zprime``, {score ≤ t}
    for ``zprime_vs_z``, the test of a score whose SMALL values are evidence for z), so
    FPR = Q(S) and FNR = P(Sᶜ). The mirrored test (reject z on Sᶜ) has the errors swapped,
    and the families check it with the same bounds."""
    if direction is Direction.Z_VS_ZPRIME:
        return rc.q_ge, rc.n_q, rc.n_p - rc.p_ge, rc.n_p
    return rc.q_le, rc.n_q, rc.n_p - rc.p_le, rc.n_p


def claim_counts(counts_p, counts_q, score, region: Region) -> tuple[int, int, int, int]:
    """(k_fpr, n_fpr, k_fnr, n_fnr): the two errors' counts of ``region``'s test on main-run
    histograms ``counts_p`` (z's outputs) and ``counts_q`` (z′'s) over the bins of ``score``.

    Raises
    ------
    ValueError
        On bad histograms, an empty side or a region that is not a ``Region``.
    """
    cp, cq, sc = check_histograms(counts_p, counts_q, score)
    if not isinstance(region, Region):
        raise ValueError(f"region must be an audit.estimation.regions.Region, got "
                         f"region={region!r}")
    rc = region_counts(cp, cq, sc, [region.threshold])
    if rc.n_p < 1 or rc.n_q < 1:
        raise ValueError(f"counts_p and counts_q must each hold at least one draw, got "
                         f"{rc.n_p} and {rc.n_q}")
    return tuple(int(np.asarray(v).reshape(-1)[0])
                 for v in _error_counts(rc, region.direction))


def claim_errors(counts_p, counts_q, score, region: Region, alpha: float):
    """The counts and the two errors' separate upper confidence bounds (each at alpha/2) of
    ``region``'s test: the rule before the joint region, kept for comparison.

    Parameters
    ----------
    counts_p, counts_q : array_like of int
        Main-run histograms of z's (P) and z′'s (Q) outputs over the same bins.
    score : array_like of float
        Per-bin score (larger = more evidence for z).
    region : Region
        The threshold region, chosen without these counts.
    alpha : float in (0, 1)
        Total failure probability (each bound at alpha/2).

    Returns
    -------
    tuple
        (k_fpr, n_fpr, k_fnr, n_fnr, fpr_hi, fnr_hi).

    Raises
    ------
    ValueError
        On bad histograms, an empty side or alpha ∉ (0, 1).
    """
    alpha = check_alpha(alpha)
    k_a, n_a, k_b, n_b = claim_counts(counts_p, counts_q, score, region)
    a_each = alpha / SIDES
    return (k_a, n_a, k_b, n_b, float(cp_upper_array(k_a, n_a, a_each)),
            float(cp_upper_array(k_b, n_b, a_each)))


def _check_family(family):
    """A claimed family or curve (:mod:`audit.theory.tradeoff.families`), refused naming
    ``family`` otherwise."""
    parametric = getattr(family, "parametric", None)
    needs = ("boundary", "epsilon") if parametric else ("margin", "refutes")
    if not isinstance(parametric, bool) or not all(
            callable(getattr(family, m, None)) for m in (*needs, "to_dict")):
        raise ValueError(f"family must be a curve family or curve (audit.theory.tradeoff."
                         f"families.curve_family), got family={family!r}")
    return family


def _rank(family, fpr_hi, fnr_hi) -> np.ndarray:
    """What a region choice maximises: θ* for a family, the refutation margin for a curve."""
    return family.boundary(fpr_hi, fnr_hi) if family.parametric else \
        family.margin(fpr_hi, fnr_hi)


def choose_claim_region(pilot_counts_p, pilot_counts_q, score, family, *, trials: int,
                        alpha: float, policy: AuditPolicy | None = None) -> Region:
    """The region a curve claim is tested on, chosen on a pilot's counts.

    Every threshold of the per-bin score, in both directions, is a candidate. Its two error
    rates are read off the pilot by the one rule of :mod:`audit.estimation.prediction` at the
    policy's ``guard_alpha`` (the region's mass on z at its Clopper–Pearson lower bound at
    ``guard_alpha`` / 2, so a tail region whose few pilot counts happened to look good is not
    preferred; its mass on z′, the FPR, one pilot call up), and its prediction is what
    those rates would give on a main run of ``trials`` draws per side (expected counts moved
    the policy's ``pessimism_sd`` standard deviations up, each bounded at the joint region's
    balanced level √c): θ* for a family,
    the margin max(f(α_hi) − β_hi, f(β_hi) − α_hi) for a single curve. The best candidate
    wins (ties: the first threshold, ``z_vs_zprime`` first). Where no candidate is predicted
    to refute anything the pilot's plug-in rates are ranked instead (a weak signal, a small
    pilot); the choice still reads only the pilot.

    Parameters
    ----------
    pilot_counts_p, pilot_counts_q : array_like of int
        Pilot histograms (independent of the main run) over the bins of ``score``.
    score : array_like of float
        Per-bin score, larger = more evidence for z.
    family : GaussianFamily, SubsampledGaussianFamily or PointsCurve
        :func:`audit.theory.tradeoff.families.curve_family`.
    trials : int ≥ 1
        Main-run draws per side.
    alpha : float in (0, 1)
        The main run's failure probability.
    policy : AuditPolicy, optional
        Where ``guard_alpha`` is read (default ``DEFAULT_POLICY``).

    Returns
    -------
    Region

    Raises
    ------
    ValueError
        On bad histograms, an empty pilot side, trials < 1 or alpha ∉ (0, 1).
    """
    cp, cq, sc = check_histograms(pilot_counts_p, pilot_counts_q, score, "pilot_counts")
    family = _check_family(family)
    trials = check_positive_int(trials, "trials")
    alpha = check_alpha(alpha)
    policy = policy or DEFAULT_POLICY
    guard, sd = policy.guard_alpha, policy.pessimism_sd
    thresholds = np.unique(sc)
    rc = region_counts(cp, cq, sc, thresholds)
    if rc.n_p < 1 or rc.n_q < 1:
        raise ValueError(f"pilot_counts_p and pilot_counts_q must each hold at least one "
                         f"draw, got {rc.n_p} and {rc.n_q}")
    region = _best_region(_pilot_rates(rc, guard), thresholds, family, trials, alpha, sd)
    if region is None:  # no candidate predicted to refute anything: rank the plug-in rates
        region = _best_region(_pilot_rates(rc, None), thresholds, family, trials, alpha, sd)
    return region or Region(Direction.Z_VS_ZPRIME, float(thresholds[0]))


def choose_claim_region_by_model(P: Mixture, Q: Mixture, edges, scores, family, *,
                                 trials: int, alpha: float,
                                 policy: AuditPolicy | None = None) -> Region:
    """The region a curve claim is tested on, chosen from the exact laws (no sample at all):
    :func:`choose_claim_region`'s ranking with each candidate's exact error rates (bin masses
    summed exactly, :func:`audit.estimation.regions.model_bin_probabilities`).

    Parameters
    ----------
    P, Q : Mixture
        The exact output laws on z and z′ (scalar).
    edges : array_like of float
        The statistic's bin edges; ``scores`` (length ``len(edges) + 2``) its per-bin score.
    family, trials, alpha, policy
        As :func:`choose_claim_region` (``policy``: its ``pessimism_sd`` only).

    Returns
    -------
    Region

    Raises
    ------
    ValueError
        On scores of the wrong length or with NaN, trials < 1 or alpha ∉ (0, 1).
    """
    family = _check_family(family)
    trials = check_positive_int(trials, "trials")
    alpha = check_alpha(alpha)
    edges = np.asarray(edges, dtype=np.float64)
    sc = np.asarray(scores, dtype=np.float64).reshape(-1)
    if sc.size != edges.size + 2 or np.isnan(sc).any():
        raise ValueError(f"scores must be len(edges)+2={edges.size + 2} numbers (no NaN), "
                         f"got {sc.size}")
    thresholds = np.unique(sc)
    rc = region_counts(model_bin_probabilities(P, edges), model_bin_probabilities(Q, edges),
                       sc, thresholds)
    exact = [tuple(np.clip(np.asarray(k, dtype=np.float64), 0.0, 1.0) for k in
                   _error_counts(rc, d)[::2]) for d in _DIRECTIONS]
    sd = (policy or DEFAULT_POLICY).pessimism_sd
    return (_best_region(exact, thresholds, family, trials, alpha, sd)
            or Region(Direction.Z_VS_ZPRIME, float(thresholds[0])))


_DIRECTIONS = (Direction.Z_VS_ZPRIME, Direction.ZPRIME_VS_Z)


def _pilot_rates(rc, guard: float | None) -> list:
    """Each direction's (FPR, FNR) per threshold as the one prediction rule reads them
    (:mod:`audit.estimation.prediction`: the region's mass on z, 1 − FNR, at its
    Clopper–Pearson lower bound at ``guard`` / 2, its mass on z′, the FPR, at its
    frequency plus one z call's mass, 1/n_z), or the pilot's plug-in rates for
    ``guard=None``."""
    out = []
    for direction in _DIRECTIONS:
        k_a, n_a, k_b, n_b = (np.asarray(v, dtype=np.float64)
                              for v in _error_counts(rc, direction))
        if guard is None:
            out.append((k_a / n_a, k_b / n_b))
        else:
            out.append((small_mass(k_a, n_a, 1.0 / n_b),
                        1.0 - large_mass(n_b - k_b, n_b, guard)))
    return out


def _best_region(rates: list, thresholds, family, trials: int, alpha: float, sd: float):
    """The candidate with the best positive prediction from each direction's error rates on
    a main run of ``trials`` draws per side (None when no prediction is positive): each
    expected error count moved ``sd`` standard deviations up
    (:func:`audit.estimation.prediction.expected_count`) and bounded at the level √c of the
    joint region's balanced corner."""
    best, region = 0.0, None
    level = math.sqrt(fisher_product_level(alpha))
    for direction, (rate_a, rate_b) in zip(_DIRECTIONS, rates, strict=True):
        a_hi, b_hi = (cp_upper_array(expected_count(r, trials, sd, large=False), trials, level)
                      for r in (rate_a, rate_b))
        ranks = _rank(family, a_hi, b_hi)
        i = int(np.argmax(ranks))
        if ranks[i] > best:
            best, region = ranks[i], Region(direction, float(thresholds[i]))
    return region


def curve_claim_bound(counts_p, counts_q, score, region: Region, family, delta: float,
                      alpha: float) -> CurveClaimResult:
    """The curve claim's verdict on main-run counts of a region chosen without them, from
    the two errors' joint confidence region (:func:`joint_region_corners`).

    Parameters
    ----------
    counts_p, counts_q, score, region
        As :func:`claim_counts`.
    family : GaussianFamily, SubsampledGaussianFamily or PointsCurve
        The claimed curve (:func:`audit.theory.tradeoff.families.curve_family`).
    delta : float in [0, 1]
        The δ at which ``eps_family`` is the refuted member's ε.
    alpha : float in (0, 1)
        The failure probability of the joint region.

    Returns
    -------
    CurveClaimResult
        Valid with probability ≥ 1 − alpha: for a mechanism whose curve is the member θ₀,
        theta > θ₀ (so eps_family > its ε) with probability ≤ alpha; a mechanism that is
        f-DP for a single curve f is called refuted with probability ≤ alpha. ``fpr_hi`` and
        ``fnr_hi`` are the binding corner.

    Raises
    ------
    ValueError
        As :func:`claim_counts`, alpha ∉ (0, 1) or delta ∉ [0, 1].
    """
    delta = check_delta(delta)
    alpha = check_alpha(alpha)
    family = _check_family(family)
    k_a, n_a, k_b, n_b = claim_counts(counts_p, counts_q, score, region)
    corner_a, corner_b = joint_region_corners(k_a, n_a, k_b, n_b, alpha)
    if family.parametric:
        thetas = family.boundary(corner_a, corner_b)
        i = int(np.argmin(thetas))  # a member is refuted when every corner refutes it
        theta = float(thetas[i])
        eps = family.epsilon(theta, delta) if theta > 0.0 else 0.0
        refuted = theta > 0.0
    else:
        margins = family.margin(corner_a, corner_b)
        i = int(np.argmin(margins))
        theta = eps = None
        refuted = bool(margins[i] > 0.0)
    return CurveClaimResult(family.curve, family.to_dict(), refuted, theta, eps, delta,
                            alpha, region.direction, region.threshold, k_a, n_a, k_b, n_b,
                            float(corner_a[i]), float(corner_b[i]))


def audit_curve_claim(samples_z, samples_zprime, family, delta: float, *,
                      confidence: float | None = None, pilot_fraction: float = 0.05,
                      n_thresholds: int = 256,
                      policy: AuditPolicy | None = None) -> CurveClaimResult:
    """A curve-claim audit of a mechanism's scalar outputs (or an attack's scores) on two
    neighbouring inputs.

    The first ``pilot_fraction`` of each side's samples is the pilot: ``n_thresholds``
    quantiles of its pooled values are the candidate thresholds, and the region is chosen on
    its counts (:func:`choose_claim_region`); the rest is the main run, counted on that region
    only (:func:`curve_claim_bound`). The samples of each side must be i.i.d. and the two sides
    independent.

    Parameters
    ----------
    samples_z, samples_zprime : array_like of float, 1-D
        Outputs (or scores) of the mechanism on z and on z′, at least 20 each, finite.
    family : GaussianFamily, SubsampledGaussianFamily or PointsCurve
        The claimed curve (:func:`audit.theory.tradeoff.families.curve_family`).
    delta : float in [0, 1]
        The audited δ.
    confidence : float in (0, 1), optional
        1 − α; default the policy's ``confidence``.
    pilot_fraction : float in (0, 1)
        Share of each side's samples that chooses the region.
    n_thresholds : int ≥ 1
        Candidate thresholds (pilot quantiles).
    policy : AuditPolicy, optional
        Default ``DEFAULT_POLICY``.

    Returns
    -------
    CurveClaimResult

    Raises
    ------
    ValueError
        Naming the parameter, on any input outside its range.

    Examples
    --------
    >>> import numpy as np
    >>> from audit.theory.tradeoff.families import GaussianFamily
    >>> rng = np.random.default_rng(0)
    >>> r = audit_curve_claim(rng.normal(1.0, 1.0, 50_000), rng.normal(0.0, 1.0, 50_000),
    ...                       GaussianFamily(), 1e-5)
    >>> 0.9 < r.theta < 1.0
    True
    """
    policy = policy or DEFAULT_POLICY
    if not isinstance(policy, AuditPolicy):
        raise ValueError(f"policy must be an audit.policy.AuditPolicy, got policy={policy!r}")
    conf = policy.confidence if confidence is None else \
        check_in_range("confidence", confidence, 0.0, 1.0, lo_closed=False, hi_closed=False)
    frac = check_in_range("pilot_fraction", pilot_fraction, 0.0, 1.0, lo_closed=False,
                          hi_closed=False)
    n_th = check_positive_int(n_thresholds, "n_thresholds")
    delta = check_delta(delta)
    family = _check_family(family)
    z, zp = _check_samples("samples_z", samples_z), _check_samples("samples_zprime",
                                                                  samples_zprime)
    kz, kzp = (max(1, int(frac * s.size)) for s in (z, zp))
    if kz >= z.size or kzp >= zp.size:
        raise ValueError(f"pilot_fraction must leave main-run samples on both sides, got "
                         f"pilot_fraction={pilot_fraction!r}")
    edges = np.unique(np.quantile(np.concatenate([z[:kz], zp[:kzp]]),
                                  (np.arange(n_th) + 0.5) / n_th))
    score = np.arange(edges.size + 1, dtype=np.float64)  # bin i: values in [e_{i-1}, e_i)
    alpha = 1.0 - conf
    region = choose_claim_region(_histogram(z[:kz], edges), _histogram(zp[:kzp], edges),
                                 score, family, trials=min(z.size - kz, zp.size - kzp),
                                 alpha=alpha, policy=policy)
    result = curve_claim_bound(_histogram(z[kz:], edges), _histogram(zp[kzp:], edges), score,
                               region, family, delta, alpha)
    return dataclasses.replace(result, threshold=_edge(region, edges))


def _histogram(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``x`` in the bins (−inf, e_0), [e_0, e_1), …, [e_last, inf)."""
    return np.bincount(np.searchsorted(edges, x, side="right"), minlength=edges.size + 1)


def _edge(region: Region, edges: np.ndarray) -> float:
    """A bin-index region's threshold on the samples' own scale: S = {x ≥ edge}
    (``z_vs_zprime``) or S = {x < edge} (``zprime_vs_z``)."""
    i = int(region.threshold)
    if region.direction is Direction.Z_VS_ZPRIME:
        return float(edges[i - 1]) if i > 0 else -np.inf
    return float(edges[i]) if i < edges.size else np.inf


def _check_samples(name: str, samples) -> np.ndarray:
    """A finite 1-D float array of at least 20 samples."""
    try:
        x = np.asarray(samples, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers, got {name}="
                         f"{type(samples).__name__}") from None
    if x.ndim != 1 or x.size < 20:
        raise ValueError(f"{name} must be a 1-D array of at least 20 samples, got shape "
                         f"{x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite, got a non-finite value")
    return x
