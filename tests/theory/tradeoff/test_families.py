"""Tests for audit.theory.tradeoff.families: the curve families a curve claim states.

Oracles: ``SubsampledTradeoff`` (C_p(f) as a numerical lower convex hull, independent of the
closed form [DRS] Eq. 14 the family uses), ``scipy.stats.norm`` for G_μ, the accountant's
ε(δ) conversions.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.enums import CurveFamily
from audit.theory.tradeoff import GaussianTradeoff, amplify_tradeoff, epsilon_for_delta
from audit.theory.tradeoff.families import (
    MU_MAX,
    GaussianFamily,
    PointsCurve,
    SubsampledGaussianFamily,
    curve_family,
)

RNG = np.random.default_rng(20261206)
A = RNG.random(3000) ** 3  # dense near 0, where the curves are steep
B = RNG.random(3000)


@pytest.mark.parametrize("p", [0.1, 0.3, 0.7])
@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_the_subsampled_refutation_predicate_matches_the_numerical_hull(p, mu):
    hull = amplify_tradeoff(GaussianTradeoff(mu), p)
    fam = SubsampledGaussianFamily(p)
    got = fam._refuted(np.asarray(mu), np.minimum(A, B), np.maximum(A, B))
    want = hull(A) > B
    clear = np.abs(hull(A) - B) > 1e-7  # the hull is exact to ~1e-9 on its bridges
    assert np.array_equal(got[clear], want[clear])
    assert clear.sum() > 2900


@pytest.mark.parametrize("p", [0.1, 0.3, 1.0])
def test_the_boundary_is_the_last_refuted_member(p):
    fam = SubsampledGaussianFamily(p)
    a, b = np.array([0.01, 0.2, 0.3, 0.05]), np.array([0.95, 0.75, 0.66, 0.93])
    theta = fam.boundary(a, b)
    assert np.all((theta > 0) & (theta < MU_MAX))
    for t, ai, bi in zip(theta, a, b, strict=True):
        if t > 0:
            assert fam.refutes(ai, bi, t)
        assert not fam.refutes(ai, bi, t + 1e-6)
        curve = amplify_tradeoff(GaussianTradeoff(t + 1e-6), p) if p < 1 else \
            GaussianTradeoff(t + 1e-6)
        assert curve(ai) <= bi + 1e-7  # the next member is not above the point
    # symmetric members: the mirrored point gives the same boundary
    np.testing.assert_array_equal(fam.boundary(b, a), theta)


def test_the_gaussian_boundary_is_the_gdp_mu_in_closed_form():
    fam = GaussianFamily()
    a, b = np.array([0.05, 0.3, 0.6]), np.array([0.2, 0.3, 0.6])
    mu = stats.norm.ppf(1 - a) - stats.norm.ppf(b)
    np.testing.assert_allclose(fam.boundary(a, b), np.maximum(mu, 0.0), rtol=1e-12)
    assert fam.boundary(0.6, 0.6) == 0.0  # above the identity: nothing refuted
    # p* = 1 is the Gaussian family itself
    np.testing.assert_allclose(SubsampledGaussianFamily(1.0).boundary(a, b),
                               np.maximum(mu, 0.0), atol=1e-12)


def test_a_point_below_every_member_reports_mu_max():
    # C_0.3(G_mu) >= (1 - 0.3)(1 - a) - ... : (0.1, 0.5) lies below C_0.3(G_inf)
    assert SubsampledGaussianFamily(0.3).boundary(0.1, 0.5) == MU_MAX


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_family_epsilon_is_the_accountants(mu):
    assert GaussianFamily().epsilon(mu, 1e-5) == epsilon_for_delta(GaussianTradeoff(mu), 1e-5)
    want = np.log1p(0.3 * np.expm1(epsilon_for_delta(GaussianTradeoff(mu), 1e-5 / 0.3)))
    assert SubsampledGaussianFamily(0.3).epsilon(mu, 1e-5) == pytest.approx(want, rel=1e-9)


def test_points_curve_refutes_below_and_in_the_mirror():
    pc = PointsCurve([[0, 1], [0.2, 0.3], [1, 0]])
    assert pc.refutes(0.2, 0.29) and not pc.refutes(0.3, 0.3)
    assert pc.refutes(0.29, 0.2)  # the mirrored test: f(0.2) = 0.3 > 0.29
    assert pc.margin(0.5, 0.5) < 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"curve": "laplace"}, r"claim\.curve must be one of 'gaussian', 'subsampled-gaussian'"),
    ({"curve": "subsampled-gaussian"}, r"needs claim\.p_star"),
    ({"curve": "subsampled-gaussian", "p_star": 0.0}, r"claim\.p_star must be in \(0, 1\]"),
    ({"curve": "subsampled-gaussian", "p_star": 1.5}, r"p_star=1\.5"),
    ({"curve": "subsampled-gaussian", "p_star": True}, r"claim\.p_star must be in"),
    ({"curve": "gaussian", "p_star": 0.5}, r"takes no claim\.p_star"),
    ({"curve": "points"}, r"needs claim\.points"),
    ({"curve": "points", "points": [[0, 1], [0.5, 0.6], [1, 0]]},
     r"claim\.points must lie on or below beta = 1 - alpha"),
    ({"curve": "points", "points": [[0, 1], [0.5, 0.1], [0.8, 0.09], [1, 0]]},
     r"claim\.points must be a decreasing convex"),
    ({"curve": "points", "points": [[0, 0.5], [0.5, 0.6], [1, 0]]},
     r"claim\.points must lie on or below"),
    ({"curve": "points", "points": [[0.1, 0.5], [1, 0]]}, r"claim\.points must be a decr"),
    ({"curve": "points", "points": [1, 2]}, r"claim\.points must be at least two"),
])
def test_bad_claims_name_the_key(kwargs, message):
    with pytest.raises(ValueError, match=message):
        curve_family(**kwargs)


def test_curve_family_builds_each_kind():
    assert curve_family("gaussian").curve is CurveFamily.GAUSSIAN
    assert curve_family("subsampled-gaussian", p_star=0.25).to_dict() == {
        "curve": "subsampled-gaussian", "p_star": 0.25}
    pts = [[0.0, 1.0], [0.5, 0.1], [1.0, 0.0]]
    assert curve_family("points", points=pts).to_dict() == {"curve": "points", "points": pts}
