"""Tests for audit.estimation.tradeoff_points: simultaneous upper bounds on the errors of
threshold tests. Oracles: counts summed by hand, ``scipy.stats.beta`` quantiles at the
Bonferroni level, ``scipy.stats.norm`` for the GDP μ.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.enums import TradeoffOrder
from audit.estimation.tradeoff_points import (
    TradeoffPoints,
    empirical_tradeoff_points,
    gdp_mu_lower_bound,
    tradeoff_violation,
)

CP = np.array([5, 15, 30, 50])  # P: high scores
CQ = np.array([50, 30, 15, 5])
SCORE = np.array([-1.5, -0.5, 0.5, 1.5])


def _cp_upper(k, n, a):
    return 1.0 if k == n else stats.beta.ppf(1 - a, k + 1, n - k)


def test_points_are_clopper_pearson_bounds_on_hand_counted_errors():
    th = np.array([-0.5, 0.5])
    pts = empirical_tradeoff_points(CP, CQ, SCORE, th, 0.1)
    m = 2 * 2 * 2
    assert pts.n_intervals == m and pts.alpha == 0.1
    assert pts.order == (TradeoffOrder.P_Q,) * 2 + (TradeoffOrder.Q_P,) * 2
    assert pts.thresholds.tolist() == [-0.5, 0.5, -0.5, 0.5]
    # T(P,Q): reject P on {score <= t}: α = P(R), β = Q(score > t)
    # T(Q,P): reject Q on {score >= t}: α = Q(R), β = P(score < t)
    errors = [(5 + 15, 15 + 5), (5 + 15 + 30, 5), (30 + 15 + 5, 5), (15 + 5, 5 + 15)]
    for i, (k_a, k_b) in enumerate(errors):
        assert pts.alpha_hat[i] == k_a / 100 and pts.beta_hat[i] == k_b / 100
        assert pts.alpha_hi[i] == pytest.approx(_cp_upper(k_a, 100, 0.1 / m), rel=1e-12)
        assert pts.beta_hi[i] == pytest.approx(_cp_upper(k_b, 100, 0.1 / m), rel=1e-12)


@pytest.mark.parametrize("order", [TradeoffOrder.P_Q, "T(Q,P)"])
def test_one_order_halves_the_correction(order):
    pts = empirical_tradeoff_points(CP, CQ, SCORE, [0.0], 0.05, orders=order)
    assert pts.n_intervals == 2 and pts.order == (TradeoffOrder.parse(order),)
    # t = 0: P(score <= 0) = 20 for T(P,Q), Q(score >= 0) = 20 for T(Q,P); β = 20 as well
    assert pts.alpha_hi[0] == pytest.approx(_cp_upper(20, 100, 0.025), rel=1e-12)
    assert pts.beta_hi[0] == pytest.approx(_cp_upper(20, 100, 0.025), rel=1e-12)


def test_violation_and_gdp_mu_by_hand():
    pts = empirical_tradeoff_points(CP, CQ, SCORE, [-0.5, 0.5], 0.1)
    identity = tradeoff_violation(pts, lambda a: 1.0 - a)  # f of perfect privacy
    assert identity == pytest.approx(np.max(1.0 - pts.alpha_hi - pts.beta_hi))
    assert identity > 0  # these counts are far from 0-DP
    assert tradeoff_violation(pts, lambda a: 0.0) == -pts.beta_hi.min()
    mu = stats.norm.ppf(1 - pts.alpha_hi) - stats.norm.ppf(pts.beta_hi)
    assert gdp_mu_lower_bound(pts) == pytest.approx(mu.max(), rel=1e-12)


def test_gdp_mu_is_zero_without_evidence():
    pts = empirical_tradeoff_points([10, 10], [10, 10], [0.0, 1.0], [0.5], 0.05)
    assert gdp_mu_lower_bound(pts) == 0.0
    # α_hi = 1 (the whole sample rejected): Φ⁻¹(0) = −∞ is skipped, not returned
    all_in = empirical_tradeoff_points([10, 10], [10, 10], [0.0, 1.0], [2.0], 0.05)
    assert np.isfinite(gdp_mu_lower_bound(all_in))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: empirical_tradeoff_points(CP, CQ, SCORE, [0.0], 0.05, orders="T(P,P)"),
     r"orders must be 'both', 'T\(P,Q\)' or 'T\(Q,P\)', got orders='T\(P,P\)'"),
    (lambda: empirical_tradeoff_points(CP, CQ, SCORE, [], 0.05), "thresholds must be"),
    (lambda: empirical_tradeoff_points(CP, CQ, SCORE, [0.0], 0.0), "alpha must be in"),
    (lambda: empirical_tradeoff_points(CP, -CQ, SCORE, [0.0], 0.05), "counts_q must be >= 0"),
    (lambda: empirical_tradeoff_points(CP, CQ, SCORE[:2], [0.0], 0.05), "same length"),
    (lambda: tradeoff_violation((0.1, 0.2), lambda a: a), "points must be TradeoffPoints"),
    (lambda: gdp_mu_lower_bound(None), "points must be TradeoffPoints"),
])
def test_each_parameter_is_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_points_are_frozen():
    pts = empirical_tradeoff_points(CP, CQ, SCORE, [0.0], 0.05)
    assert isinstance(pts, TradeoffPoints)
    with pytest.raises(AttributeError):
        pts.alpha = 0.5
