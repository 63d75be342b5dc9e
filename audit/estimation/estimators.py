"""Statistically valid empirical privacy bounds from histogram counts (THEORY §8).

Every bound here holds with probability ≥ 1 − ``alpha`` over the main run, under these
conditions: the main-run draws are i.i.d. from P = A_D(z) (``counts_p``) and Q = A_D(z')
(``counts_q``), independent of each other; and the test region was chosen without looking at the
main run (on an independent pilot run) or belongs to a finite family declared before the run
and paid for with a Bonferroni union bound.

Conventions
-----------
* ``score`` is a per-bin statistic, larger = more evidence for P (dataset z).
* Regions are thresholds on the score. Direction ``"z_vs_zprime"``: S = {score ≥ t}, bound
  ε ≥ ln((P(S) − δ)/Q(S)). Direction ``"zprime_vs_z"``: S = {score ≤ t}, bound
  ε ≥ ln((Q(S) − δ)/P(S)).
* Trade-off points follow THEORY §6: T(P, Q)(α) = inf{1 − E_Q φ : E_P φ ≤ α}, i.e. φ rejects
  the hypothesis "the output came from P". With rejection region R: type I α = P(R), type II
  β = Q(R^c). For T(P, Q) we reject P where the score is low (R = {score ≤ t}); for T(Q, P) we
  reject Q where the score is high (R = {score ≥ t}).

All Clopper–Pearson bounds are exact and ONE-sided (scipy.stats.beta quantiles).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from scipy import stats

from audit._validate import check_delta, check_in_range, parse_enum

__all__ = [
    "Direction",
    "Region",
    "EpsLowerResult",
    "TradeoffPoints",
    "cp_upper",
    "cp_lower",
    "eps_lower_bound",
    "select_region_on_pilot",
    "region_bound",
    "grid_bound",
    "empirical_tradeoff_points",
    "tradeoff_violation",
    "gdp_mu_lower_bound",
]


class Direction(enum.Enum):
    """Which side is the numerator of the likelihood-ratio test."""

    Z_VS_ZPRIME = "z_vs_zprime"  # S = {score >= t}, ln((P(S) - δ)/Q(S))
    ZPRIME_VS_Z = "zprime_vs_z"  # S = {score <= t}, ln((Q(S) - δ)/P(S))

    @classmethod
    def parse(cls, value: Direction | str) -> Direction:
        return parse_enum(cls, value, "direction")


# --------------------------------------------------------------------------- checks
def _check_alpha(alpha: object) -> float:
    return check_in_range("alpha", alpha, 0.0, 1.0, lo_closed=False, hi_closed=False)


def _check_count(name: str, value: object, lo: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {name}={value!r}")
    return int(value)


def _check_kn(k: object, n: object, kname: str = "k", nname: str = "n") -> tuple[int, int]:
    n = _check_count(nname, n, 1)
    k = _check_count(kname, k, 0)
    if k > n:
        raise ValueError(f"{kname} must be in [0, {nname}={n}], got {kname}={k}")
    return k, n


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


def _check_hist(counts_p, counts_q, score, prefix: str = "counts"):
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


# --------------------------------------------------------------------------- Clopper–Pearson
def _cp_upper_vec(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    k = np.asarray(k)
    n = np.asarray(n)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1))
    return np.where(k >= n, 1.0, out)


def _cp_lower_vec(k: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    k = np.asarray(k)
    n = np.asarray(n)
    with np.errstate(invalid="ignore"):
        out = stats.beta.ppf(alpha, np.maximum(k, 1), n - k + 1)
    return np.where(k <= 0, 0.0, out)


def cp_upper(k: int, n: int, alpha: float) -> float:
    """Exact one-sided Clopper–Pearson upper bound on a binomial proportion.

    P[p ≤ cp_upper(K, n, alpha)] ≥ 1 − alpha for K ~ Bin(n, p), every p ∈ [0, 1].

    Parameters
    ----------
    k : int, 0 ≤ k ≤ n
        Successes.
    n : int, ≥ 1
        Trials.
    alpha : float in (0, 1)
        One-sided error probability.

    Returns
    -------
    float
        The (1 − alpha) quantile of Beta(k + 1, n − k); 1 when k = n.

    References
    ----------
    Clopper & Pearson (1934), Biometrika 26(4).
    """
    k, n = _check_kn(k, n)
    alpha = _check_alpha(alpha)
    return float(_cp_upper_vec(k, n, alpha))


def cp_lower(k: int, n: int, alpha: float) -> float:
    """Exact one-sided Clopper–Pearson lower bound: the alpha quantile of Beta(k, n − k + 1),
    0 when k = 0. P[p ≥ cp_lower(K, n, alpha)] ≥ 1 − alpha for every p."""
    k, n = _check_kn(k, n)
    alpha = _check_alpha(alpha)
    return float(_cp_lower_vec(k, n, alpha))


def _eps_from_bounds(p_lo, q_hi, delta):
    num = np.asarray(p_lo, dtype=np.float64) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(num / np.asarray(q_hi, dtype=np.float64))
    return np.where((num > 0) & (val > 0), val, 0.0)


def eps_lower_bound(k_p: int, n_p: int, k_q: int, n_q: int, delta: float, alpha: float) -> float:
    """ε ≥ ln((P_lo(S) − δ)/Q_hi(S)) for one region S fixed before the counts were drawn.

    ``k_p`` of ``n_p`` draws from the numerator law fell in S, ``k_q`` of ``n_q`` from the
    denominator law. P_lo and Q_hi are one-sided Clopper–Pearson bounds at ``alpha / 2`` each
    (union bound), so the returned value is ≤ the true ln((P(S) − δ)/Q(S)) — hence ≤ the ε of
    any (ε, δ)-DP guarantee of the pair — with probability ≥ 1 − alpha. Returns 0 (a trivially
    valid bound) when P_lo ≤ δ or the logarithm is negative.

    Raises
    ------
    ValueError
        On counts outside [0, n], n < 1, delta ∉ [0, 1] or alpha ∉ (0, 1).
    """
    k_p, n_p = _check_kn(k_p, n_p, "k_p", "n_p")
    k_q, n_q = _check_kn(k_q, n_q, "k_q", "n_q")
    delta = check_delta(delta)
    alpha = _check_alpha(alpha)
    p_lo = _cp_lower_vec(k_p, n_p, alpha / 2)
    q_hi = _cp_upper_vec(k_q, n_q, alpha / 2)
    return float(_eps_from_bounds(p_lo, q_hi, delta))


# --------------------------------------------------------------------------- regions
@dataclass(frozen=True)
class Region:
    """A score-threshold region: {score ≥ t} for z_vs_zprime, {score ≤ t} for zprime_vs_z."""

    direction: Direction
    threshold: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "direction", Direction.parse(self.direction))

    def mask(self, score: np.ndarray) -> np.ndarray:
        score = np.asarray(score, dtype=np.float64)
        if self.direction is Direction.Z_VS_ZPRIME:
            return score >= self.threshold
        return score <= self.threshold


@dataclass(frozen=True)
class EpsLowerResult:
    """An empirical lower bound on ε, valid with probability ≥ 1 − ``alpha``.

    ``k_p``/``n_p`` count draws from P = A_D(z) falling in the region, ``k_q``/``n_q`` those from
    Q = A_D(z'). ``p_lo`` is the lower confidence bound on the NUMERATOR mass and ``q_hi`` the
    upper bound on the DENOMINATOR mass (P and Q swapped for ``zprime_vs_z``).
    """

    eps_lower: float
    direction: str
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

    def plug_in(self) -> float:
        """Point estimate ln((k_num/n_num − δ)/(k_den/n_den)) on the same region: not a bound.

        0 when the numerator does not exceed δ; ``inf`` when the denominator count is 0.
        """
        if self.direction == Direction.Z_VS_ZPRIME.value:
            num, den = self.k_p / self.n_p, self.k_q / self.n_q
        else:
            num, den = self.k_q / self.n_q, self.k_p / self.n_p
        num -= self.delta
        if num <= 0:
            return 0.0
        return math.inf if den == 0 else math.log(num / den)


def _region_counts(cp, cq, sc, thresholds):
    """Counts in {score ≥ t} and {score ≤ t} for each threshold (vectorised)."""
    t = np.asarray(thresholds, dtype=np.float64)[:, None]
    ge = sc[None, :] >= t
    le = sc[None, :] <= t
    return ge @ cp, ge @ cq, le @ cp, le @ cq


def _all_candidates(cp, cq, sc, thresholds, delta, alpha_each):
    """ε bounds for every (threshold, direction); arrays of shape (2, len(thresholds))."""
    kp_ge, kq_ge, kp_le, kq_le = _region_counts(cp, cq, sc, thresholds)
    n_p, n_q = int(cp.sum()), int(cq.sum())
    # z_vs_zprime: numerator P on {score ≥ t}; zprime_vs_z: numerator Q on {score ≤ t}.
    num_lo = np.stack(
        [_cp_lower_vec(kp_ge, n_p, alpha_each / 2), _cp_lower_vec(kq_le, n_q, alpha_each / 2)]
    )
    den_hi = np.stack(
        [_cp_upper_vec(kq_ge, n_q, alpha_each / 2), _cp_upper_vec(kp_le, n_p, alpha_each / 2)]
    )
    eps = _eps_from_bounds(num_lo, den_hi, delta)
    kp = np.stack([kp_ge, kp_le])
    kq = np.stack([kq_ge, kq_le])
    return eps, num_lo, den_hi, kp, kq, n_p, n_q


def _result(eps, num_lo, den_hi, kp, kq, n_p, n_q, thresholds, idx, alpha, delta, method, m):
    d, i = idx
    direction = (Direction.Z_VS_ZPRIME, Direction.ZPRIME_VS_Z)[d]
    return EpsLowerResult(
        eps_lower=float(eps[d, i]),
        direction=direction.value,
        threshold=float(thresholds[i]),
        k_p=int(kp[d, i]),
        n_p=n_p,
        k_q=int(kq[d, i]),
        n_q=n_q,
        p_lo=float(num_lo[d, i]),
        q_hi=float(den_hi[d, i]),
        alpha=alpha,
        delta=delta,
        method=method,
        n_regions=m,
    )


def select_region_on_pilot(
    pilot_counts_p,
    pilot_counts_q,
    score,
    delta: float,
    *,
    guard: str = "cp",
    pilot_alpha: float = 0.05,
) -> Region:
    """Choose (direction, threshold) maximising an estimate of ε on PILOT counts only.

    Candidate thresholds are the distinct score values, both directions. ``guard="cp"`` ranks
    candidates by the Clopper–Pearson bound on the pilot counts at ``pilot_alpha`` (penalises
    regions with few counts); ``guard="point"`` by the plug-in ln((k_p/n_p − δ)/max(k_q, 1)/n_q).
    The choice is a function of the pilot alone, so bounding it on an independent main run with
    ``region_bound`` is valid without any multiplicity correction.
    """
    cp_, cq_, sc = _check_hist(pilot_counts_p, pilot_counts_q, score, "pilot_counts")
    delta = check_delta(delta)
    pilot_alpha = _check_alpha(pilot_alpha)
    thresholds = np.unique(sc)
    if guard == "cp":
        eps, *_ = _all_candidates(cp_, cq_, sc, thresholds, delta, pilot_alpha)
        # tie-break by the plug-in value so a sensible region is chosen even when all are 0
    elif guard != "point":
        raise ValueError(f"guard must be one of 'cp', 'point', got guard={guard!r}")
    kp_ge, kq_ge, kp_le, kq_le = _region_counts(cp_, cq_, sc, thresholds)
    n_p, n_q = cp_.sum(), cq_.sum()
    num = np.stack([kp_ge / n_p, kq_le / n_q]) - delta
    den = np.stack([np.maximum(kq_ge, 1) / n_q, np.maximum(kp_le, 1) / n_p])
    with np.errstate(divide="ignore", invalid="ignore"):
        plug = np.where(num > 0, np.log(num / den), -np.inf)
    key = plug if guard == "point" else eps + 1e-9 * np.tanh(plug)
    d, i = np.unravel_index(int(np.argmax(key)), key.shape)
    return Region((Direction.Z_VS_ZPRIME, Direction.ZPRIME_VS_Z)[d], float(thresholds[i]))


def region_bound(counts_p, counts_q, score, region: Region, delta: float, alpha: float):
    """ε lower bound of one region chosen independently of these (main-run) counts.

    Valid with probability ≥ 1 − alpha provided ``region`` does not depend on the main run
    (e.g. from ``select_region_on_pilot`` on an independent pilot). Returns ``EpsLowerResult``
    with ``method="pilot"`` and ``n_regions=1``.
    """
    cp_, cq_, sc = _check_hist(counts_p, counts_q, score)
    if not isinstance(region, Region):
        raise ValueError(f"region must be an estimators.Region, got region={region!r}")
    delta = check_delta(delta)
    alpha = _check_alpha(alpha)
    th = np.array([region.threshold])
    cand = _all_candidates(cp_, cq_, sc, th, delta, alpha)
    d = 0 if region.direction is Direction.Z_VS_ZPRIME else 1
    return _result(*cand, th, (d, 0), alpha, delta, "pilot", 1)


def grid_bound(counts_p, counts_q, score, thresholds, delta: float, alpha: float):
    """Maximum ε lower bound over a grid of thresholds × both directions declared in advance.

    Each of the m = 2·len(thresholds) regions is bounded at level alpha/m (Bonferroni), so all
    m bounds hold simultaneously, and hence their maximum, with probability ≥ 1 − alpha. The
    thresholds must not be chosen by looking at these counts.
    """
    cp_, cq_, sc = _check_hist(counts_p, counts_q, score)
    th = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if th.size == 0 or not np.all(np.isfinite(th)):
        raise ValueError(f"thresholds must be a non-empty array of finite values, got {th!r}")
    delta = check_delta(delta)
    alpha = _check_alpha(alpha)
    m = 2 * th.size
    cand = _all_candidates(cp_, cq_, sc, th, delta, alpha / m)
    eps = cand[0]
    idx = np.unravel_index(int(np.argmax(eps)), eps.shape)
    return _result(*cand, th, idx, alpha, delta, "bonferroni-grid", m)


# --------------------------------------------------------------------------- trade-off points
@dataclass(frozen=True)
class TradeoffPoints:
    """Upper confidence points (α_hi, β_hi) on error pairs of threshold tests.

    For each i, ``order[i]`` is ``"T(P,Q)"`` (reject P where score ≤ t: α = P(R), β = Q(R^c))
    or ``"T(Q,P)"`` (reject Q where score ≥ t: α = Q(R), β = P(R^c)). All 2·len(points)
    one-sided bounds hold simultaneously with probability ≥ 1 − ``alpha``.
    """

    alpha_hi: np.ndarray
    beta_hi: np.ndarray
    thresholds: np.ndarray
    order: tuple[str, ...]
    alpha: float
    n_intervals: int


def empirical_tradeoff_points(
    counts_p, counts_q, score, thresholds, alpha: float, *, orders: str = "both"
) -> TradeoffPoints:
    """Simultaneous upper confidence bounds on the errors of threshold tests.

    For a rejection region R fixed in advance, α = type I = P_null(R) and β = type II =
    P_alt(R^c); T(null, alt)(α) ≤ β by definition of T (THEORY §6) and T is non-increasing, so
    with α ≤ α_hi and β ≤ β_hi: any valid f ≤ T has f(α_hi) ≤ β_hi. A point with
    β_hi < f(α_hi) proves, at confidence 1 − alpha, that the pair violates f. Each interval
    is at alpha / (2·len(thresholds)·n_orders) (Bonferroni).

    Parameters
    ----------
    orders : {"both", "T(P,Q)", "T(Q,P)"}
        Which trade-off functions to probe. f-DP requires both.
    """
    cp_, cq_, sc = _check_hist(counts_p, counts_q, score)
    th = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if th.size == 0 or not np.all(np.isfinite(th)):
        raise ValueError(f"thresholds must be a non-empty array of finite values, got {th!r}")
    alpha = _check_alpha(alpha)
    if orders == "both":
        which = ("T(P,Q)", "T(Q,P)")
    elif orders in ("T(P,Q)", "T(Q,P)"):
        which = (orders,)
    else:
        raise ValueError(f"orders must be 'both', 'T(P,Q)' or 'T(Q,P)', got orders={orders!r}")
    m = 2 * th.size * len(which)
    a_each = alpha / m
    n_p, n_q = int(cp_.sum()), int(cq_.sum())
    kp_ge, kq_ge, kp_le, kq_le = _region_counts(cp_, cq_, sc, th)
    a_hi, b_hi, order, ths = [], [], [], []
    for w in which:
        if w == "T(P,Q)":  # reject P on R = {score <= t}: α = P(R), β = Q(R^c) = Q(score > t)
            a_hi.append(_cp_upper_vec(kp_le, n_p, a_each))
            b_hi.append(_cp_upper_vec(n_q - kq_le, n_q, a_each))
        else:  # reject Q on R = {score >= t}: α = Q(R), β = P(R^c) = P(score < t)
            a_hi.append(_cp_upper_vec(kq_ge, n_q, a_each))
            b_hi.append(_cp_upper_vec(n_p - kp_ge, n_p, a_each))
        order.extend([w] * th.size)
        ths.append(th)
    return TradeoffPoints(
        np.concatenate(a_hi), np.concatenate(b_hi), np.concatenate(ths), tuple(order), alpha, m
    )


def tradeoff_violation(points: TradeoffPoints, f) -> float:
    """max_i f(α_hi,i) − β_hi,i over the points (positive = evidence that f is violated).

    ``f`` must be symmetric (or a valid bound for both orders probed). The statement "the
    pair violates f" holds at confidence 1 − points.alpha whenever the result is > 0.
    """
    if not isinstance(points, TradeoffPoints):
        raise ValueError(f"points must be TradeoffPoints, got points={points!r}")
    fa = np.asarray([float(f(float(a))) for a in points.alpha_hi])
    return float(np.max(fa - points.beta_hi))


def gdp_mu_lower_bound(points: TradeoffPoints) -> float:
    """Largest μ ≥ 0 certified by the points: the pair is not μ'-GDP for any μ' below it.

    G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) ≤ T(α_hi) ≤ β_hi forces μ ≥ Φ⁻¹(1 − α_hi) − Φ⁻¹(β_hi); all
    points hold simultaneously, so the maximum is valid at confidence 1 − points.alpha.
    [DRS] Def. 2.
    """
    if not isinstance(points, TradeoffPoints):
        raise ValueError(f"points must be TradeoffPoints, got points={points!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = stats.norm.isf(points.alpha_hi) - stats.norm.ppf(points.beta_hi)
    mu = mu[np.isfinite(mu)]
    return float(max(0.0, mu.max())) if mu.size else 0.0
