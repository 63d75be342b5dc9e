"""Tests for audit.theory.profiles against independent oracles (mpmath, quadrature, dp_accounting),
and the pinning of every other path to the same profile (the trade-off curves delegate here).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from audit.theory import calibration as cal
from audit.theory import profiles as prof
from audit.theory.tradeoff import (
    DPTradeoff,
    delta_for_epsilon,
    epsilon_for_delta,
    min_error_sum,
    tradeoff_gaussian,
    tradeoff_laplace,
)

MU_EPS = [(0.5, 0.0), (0.5, 1.0), (1.0, 0.3), (1.0, 2.0), (2.0, 1.0), (3.0, 5.0), (0.2, 0.05)]


def _mp_gaussian_delta(eps: float, mu: float, dps: int = 60) -> float:
    with mpmath.workdps(dps):
        e, m = mpmath.mpf(eps), mpmath.mpf(mu)
        return float(mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2))


def _quad_hockey_stick(logp, logq, eps: float, lo: float, hi: float, points=None) -> float:
    """∫ (p − e^ε q)_+ by adaptive quadrature (independent of any closed form)."""

    def integrand(x):
        return max(0.0, math.exp(logp(x)) - math.exp(eps + logq(x)))

    val, _ = integrate.quad(integrand, lo, hi, points=points, limit=400, epsabs=1e-13)
    return val


@pytest.mark.parametrize("mu,eps", MU_EPS)
def test_gaussian_delta_matches_quadrature(mu, eps):
    lp = stats.norm(0, 1).logpdf
    lq = stats.norm(mu, 1).logpdf
    ref = _quad_hockey_stick(lp, lq, eps, -40, 40, points=[0.0, mu / 2 - eps / mu, mu])
    assert prof.gaussian_delta(eps, mu) == pytest.approx(ref, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("mu,eps", MU_EPS + [(1.0, 10.0), (0.05, 1.0), (1.0, 40.0), (8.0, 60.0)])
def test_gaussian_delta_matches_mpmath_in_tails(mu, eps):
    ref = _mp_gaussian_delta(eps, mu)
    got = prof.gaussian_delta(eps, mu)
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("sigma,eps", [(0.5, 1.0), (1.0, 0.5), (2.0, 0.1), (4.0, 0.0)])
def test_gaussian_delta_matches_dp_accounting(sigma, eps):
    from dp_accounting.pld import privacy_loss_mechanism as plm

    ref = plm.GaussianPrivacyLoss(sigma, sensitivity=1.0).get_delta_for_epsilon(eps)
    assert prof.gaussian_delta(eps, 1.0 / sigma) == pytest.approx(ref, rel=1e-8)


def test_gaussian_delta_matches_dp_accounting_pld_grid():
    from dp_accounting.pld import privacy_loss_distribution as pld

    dist = pld.from_gaussian_mechanism(2.0, sensitivity=1.0, value_discretization_interval=1e-4)
    for eps in (0.0, 0.5, 1.0):
        ref = dist.get_delta_for_epsilon(eps)  # pessimistic: an upper estimate
        got = prof.gaussian_delta(eps, 0.5)
        assert got <= ref + 1e-12
        assert got == pytest.approx(ref, rel=2e-3)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-1, 1e-5, 1e-12, 1e-300])
def test_gaussian_epsilon_inverts_profile_safely(mu, delta):
    eps = prof.gaussian_epsilon(delta, mu)
    assert eps >= 0.0
    assert prof.gaussian_delta(eps, mu) <= delta
    if eps > 0:
        assert math.log(prof.gaussian_delta(eps * (1 - 1e-9), mu) or 1e-320) >= math.log(
            delta
        ) - 1e-6 or prof.gaussian_delta(eps * (1 - 1e-9), mu) > delta * (1 - 1e-6)


def test_gaussian_epsilon_edges():
    assert prof.gaussian_epsilon(0.0, 1.0) == math.inf
    assert prof.gaussian_epsilon(1.0, 1.0) == 0.0
    assert prof.gaussian_epsilon(0.5, 1.0) == 0.0  # δ(0) = 2Φ(1/2) − 1 ≈ 0.383 < 0.5
    assert prof.gaussian_epsilon(0.1, 0.0) == 0.0
    assert prof.gaussian_delta(1.0, 0.0) == 0.0
    assert prof.gaussian_delta(1.0, math.inf) == 1.0
    assert prof.gaussian_delta(0.0, 1.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-14)


@pytest.mark.parametrize("mu,eps", [(1.0, 0.0), (1.0, 0.5), (2.0, 1.0), (0.3, 0.1), (1.0, 1.0)])
def test_laplace_delta_matches_quadrature_and_dp_accounting(mu, eps):
    from dp_accounting.pld import privacy_loss_mechanism as plm

    lp = stats.laplace(0, 1).logpdf
    lq = stats.laplace(mu, 1).logpdf
    ref = _quad_hockey_stick(lp, lq, eps, -60, 60, points=[0.0, (mu - eps) / 2, mu])
    got = prof.laplace_delta(eps, mu)
    assert got == pytest.approx(ref, rel=1e-8, abs=1e-13)
    ref2 = plm.LaplacePrivacyLoss(1.0 / mu, sensitivity=1.0).get_delta_for_epsilon(eps)
    assert got == pytest.approx(ref2, rel=1e-8, abs=1e-13)


@pytest.mark.parametrize("mu", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [0.0, 1e-8, 0.1, 0.9, 1.0])
def test_laplace_epsilon_inverts(mu, delta):
    eps = prof.laplace_epsilon(delta, mu)
    assert prof.laplace_delta(eps, mu) <= delta + 1e-15
    if 0 < eps:
        assert prof.laplace_delta(eps, mu) == pytest.approx(delta, rel=1e-9)
    assert prof.laplace_epsilon(0.0, mu) == mu



BAD_CALLS = [
    (prof.gaussian_delta, (-1.0, 1.0), "epsilon"),
    (prof.gaussian_delta, (1.0, -1.0), "mu"),
    (prof.gaussian_epsilon, (1.5, 1.0), "delta"),
    (prof.gaussian_epsilon, (-0.1, 1.0), "delta"),
    (prof.gaussian_epsilon, (0.1, -1.0), "mu"),
    (prof.laplace_delta, (-1.0, 1.0), "epsilon"),
    (prof.laplace_delta, (1.0, float("nan")), "mu"),
    (prof.laplace_epsilon, (2.0, 1.0), "delta"),
    (prof.laplace_epsilon, (0.1, -2.0), "mu"),
    (prof.dp_min_error_sum, (-1.0, 0.1), "epsilon"),
    (prof.dp_min_error_sum, (1.0, 1.1), "delta"),
]


@pytest.mark.parametrize("fn,args,name", BAD_CALLS, ids=lambda x: getattr(x, "__name__", None))
def test_rejects_out_of_range(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


def test_profiles_vectorise_over_a_grid_consistently():
    mus = np.linspace(0.1, 3, 7)
    vals = [prof.gaussian_delta(1.0, m) for m in mus]
    assert np.all(np.diff(vals) > 0)  # δ increases with μ


# ------------------------------------------------------------------ one implementation
def test_gaussian_epsilon_is_the_tradeoff_path_exactly():
    """Before the profiles had one home, the two paths differed in the last ulp here."""
    assert prof.gaussian_epsilon(1e-9, 1.3) == epsilon_for_delta(tradeoff_gaussian(1.3), 1e-9)
    assert cal.gaussian_epsilon(1e-9, 1.3) == epsilon_for_delta(tradeoff_gaussian(1.3), 1e-9)


@pytest.mark.parametrize("mu", [0.0, 0.05, 0.5, 1.3, 4.0, 20.0, 40.0])
def test_gaussian_profile_and_curve_agree_exactly(mu):
    g = tradeoff_gaussian(mu)
    for eps in (0.0, 1e-6, 0.3, 1.0, 5.0, 60.0, 600.0):
        assert delta_for_epsilon(g, eps) == prof.gaussian_delta(eps, mu)
    for delta in (0.0, 1e-300, 1e-12, 1e-5, 0.1, 0.5, 1.0):
        assert epsilon_for_delta(g, delta) == prof.gaussian_epsilon(delta, mu)
    assert min_error_sum(g) == pytest.approx(1.0 - prof.gaussian_delta(0.0, mu), abs=1e-15)


@pytest.mark.parametrize("mu", [0.0, 0.3, 2.5, 700.0, 746.0, 1e4])
def test_laplace_profile_and_curve_agree_exactly(mu):
    f = tradeoff_laplace(mu)
    for eps in (0.0, 0.2, 2.0, 699.0, 745.0, 9999.0):
        assert delta_for_epsilon(f, eps) == prof.laplace_delta(eps, mu)
    for delta in (0.0, 1e-12, 1e-5, 0.1, 0.5, 1.0):
        assert epsilon_for_delta(f, delta) == prof.laplace_epsilon(delta, mu)


@pytest.mark.parametrize("mu", [0.05, 1.3, 6.0, 30.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6, 1e-12, 1e-100])
def test_gaussian_epsilon_is_the_smallest_double(mu, delta):
    """Rounded to the last bit in the safe direction: δ(ε) ≤ δ, and a few ulps lower it is
    not (the profile's own evaluation noise is about one ulp)."""
    eps = prof.gaussian_epsilon(delta, mu)
    assert eps > 0.0
    assert prof.gaussian_delta(eps, mu) <= delta
    below = eps - 4 * np.spacing(eps) - 1e-15
    assert prof.gaussian_delta(below, mu) > delta


@pytest.mark.parametrize(("eps", "delta"), [(0.0, 0.0), (1.0, 0.1), (3.0, 0.1), (800.0, 0.0),
                                            (math.inf, 0.2)])
def test_dp_min_error_sum(eps, delta):
    """2(1 − δ)/(1 + e^ε), without overflow for large ε; the curve f_{ε,δ} uses it."""
    want = 0.0 if math.isinf(eps) else float(2 * (1 - mpmath.mpf(delta))
                                              / (1 + mpmath.exp(eps)))
    assert prof.dp_min_error_sum(eps, delta) == pytest.approx(want, rel=1e-15, abs=1e-300)
    if math.isfinite(eps):
        assert min_error_sum(DPTradeoff(eps, delta)) == prof.dp_min_error_sum(eps, delta)


def test_profiles_return_python_floats():
    for value in (prof.gaussian_epsilon(1e-9, 1.3), prof.gaussian_delta(1.0, 1.3),
                  prof.laplace_epsilon(1e-3, 2.0), prof.laplace_delta(1.0, 2.0),
                  prof.dp_min_error_sum(1.0, 0.1), cal.gaussian_sigma_analytic(1.0, 1.0, 1e-5)):
        assert type(value) is float
