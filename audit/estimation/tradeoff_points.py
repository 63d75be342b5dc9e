"""Empirical trade-off points: simultaneous upper confidence bounds on the errors of tests.

Orientation (docs/THEORY.md §6): T(P, Q)(α) = inf{1 − E_Q φ : E_P φ ≤ α}, i.e. φ rejects the
hypothesis "the output came from P". With rejection region R: type I α = P(R), type II
β = Q(R^c). For T(P, Q) we reject P where the score is low (R = {score ≤ t}); for T(Q, P) we
reject Q where the score is high (R = {score ≥ t}).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from audit.enums import TradeoffOrder
from audit.estimation.binomial import check_alpha, cp_upper_array
from audit.estimation.regions import _check_thresholds, check_histograms, region_counts

__all__ = ["TradeoffPoints", "empirical_tradeoff_points", "tradeoff_violation",
           "gdp_mu_lower_bound"]


@dataclass(frozen=True)
class TradeoffPoints:
    """Upper confidence points (α_hi, β_hi) on error pairs of threshold tests.

    For each i, ``order[i]`` is :attr:`TradeoffOrder.P_Q` (reject P where score ≤ t:
    α = P(R), β = Q(R^c)) or :attr:`TradeoffOrder.Q_P` (reject Q where score ≥ t: α = Q(R),
    β = P(R^c)). All ``n_intervals`` one-sided bounds hold simultaneously with probability
    ≥ 1 − ``alpha``. ``alpha_hat``/``beta_hat`` are the plug-in errors of the same tests (not
    bounds).
    """

    alpha_hi: np.ndarray
    beta_hi: np.ndarray
    thresholds: np.ndarray
    order: tuple[TradeoffOrder, ...]
    alpha: float
    n_intervals: int
    alpha_hat: np.ndarray
    beta_hat: np.ndarray


def _orders(orders) -> tuple[TradeoffOrder, ...]:
    if isinstance(orders, str) and orders == "both":
        return (TradeoffOrder.P_Q, TradeoffOrder.Q_P)
    try:
        return (TradeoffOrder.parse(orders),)
    except ValueError:
        raise ValueError(f"orders must be 'both', 'T(P,Q)' or 'T(Q,P)', "
                         f"got orders={orders!r}") from None


def empirical_tradeoff_points(counts_p, counts_q, score, thresholds, alpha: float, *,
                              orders="both") -> TradeoffPoints:
    """Simultaneous upper confidence bounds on the errors of threshold tests.

    For a rejection region R fixed in advance, α = type I = P_null(R) and β = type II =
    P_alt(R^c); T(null, alt)(α) ≤ β by definition of T and T is non-increasing, so with
    α ≤ α_hi and β ≤ β_hi: any valid f ≤ T has f(α_hi) ≤ β_hi. A point with β_hi < f(α_hi)
    proves, at confidence 1 − alpha, that the pair violates f. Each interval is at
    alpha / (2·len(thresholds)·n_orders) (Bonferroni).

    Parameters
    ----------
    orders : {"both", "T(P,Q)", "T(Q,P)"} or TradeoffOrder
        Which trade-off functions to probe. f-DP requires both.
    """
    cp_, cq_, sc = check_histograms(counts_p, counts_q, score)
    th = _check_thresholds(thresholds)
    alpha = check_alpha(alpha)
    which = _orders(orders)
    m = 2 * th.size * len(which)
    a_each = alpha / m
    rc = region_counts(cp_, cq_, sc, th)
    n_p, n_q = rc.n_p, rc.n_q
    parts = []
    for w in which:
        if w is TradeoffOrder.P_Q:  # reject P on R = {score <= t}: α = P(R), β = Q(score > t)
            k_a, n_a, k_b, n_b = rc.p_le, n_p, n_q - rc.q_le, n_q
        else:  # reject Q on R = {score >= t}: α = Q(R), β = P(score < t)
            k_a, n_a, k_b, n_b = rc.q_ge, n_q, n_p - rc.p_ge, n_p
        parts.append((cp_upper_array(k_a, n_a, a_each), cp_upper_array(k_b, n_b, a_each),
                      k_a / n_a, k_b / n_b))
    a_hi, b_hi, a_hat, b_hat = (np.concatenate(x) for x in zip(*parts, strict=True))
    order = tuple(w for w in which for _ in range(th.size))
    return TradeoffPoints(a_hi, b_hi, np.tile(th, len(which)), order, alpha, m, a_hat, b_hat)


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
    [DRS] Definition 2.7.
    """
    if not isinstance(points, TradeoffPoints):
        raise ValueError(f"points must be TradeoffPoints, got points={points!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = -special.ndtri(points.alpha_hi) - special.ndtri(points.beta_hi)
    mu = mu[np.isfinite(mu)]
    return float(max(0.0, mu.max())) if mu.size else 0.0
