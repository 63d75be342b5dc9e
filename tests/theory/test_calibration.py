"""Tests for audit.theory.calibration against independent oracles (mpmath, quadrature, dp_accounting)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from audit.theory import calibration as cal

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
    assert cal.gaussian_delta(eps, mu) == pytest.approx(ref, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("mu,eps", MU_EPS + [(1.0, 10.0), (0.05, 1.0), (1.0, 40.0), (8.0, 60.0)])
def test_gaussian_delta_matches_mpmath_in_tails(mu, eps):
    ref = _mp_gaussian_delta(eps, mu)
    got = cal.gaussian_delta(eps, mu)
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("sigma,eps", [(0.5, 1.0), (1.0, 0.5), (2.0, 0.1), (4.0, 0.0)])
def test_gaussian_delta_matches_dp_accounting(sigma, eps):
    from dp_accounting.pld import privacy_loss_mechanism as plm

    ref = plm.GaussianPrivacyLoss(sigma, sensitivity=1.0).get_delta_for_epsilon(eps)
    assert cal.gaussian_delta(eps, 1.0 / sigma) == pytest.approx(ref, rel=1e-8)


def test_gaussian_delta_matches_dp_accounting_pld_grid():
    from dp_accounting.pld import privacy_loss_distribution as pld

    dist = pld.from_gaussian_mechanism(2.0, sensitivity=1.0, value_discretization_interval=1e-4)
    for eps in (0.0, 0.5, 1.0):
        ref = dist.get_delta_for_epsilon(eps)  # pessimistic: an upper estimate
        got = cal.gaussian_delta(eps, 0.5)
        assert got <= ref + 1e-12
        assert got == pytest.approx(ref, rel=2e-3)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-1, 1e-5, 1e-12, 1e-300])
def test_gaussian_epsilon_inverts_profile_safely(mu, delta):
    eps = cal.gaussian_epsilon(delta, mu)
    assert eps >= 0.0
    assert cal.gaussian_delta(eps, mu) <= delta
    if eps > 0:
        assert math.log(cal.gaussian_delta(eps * (1 - 1e-9), mu) or 1e-320) >= math.log(
            delta
        ) - 1e-6 or cal.gaussian_delta(eps * (1 - 1e-9), mu) > delta * (1 - 1e-6)


def test_gaussian_epsilon_edges():
    assert cal.gaussian_epsilon(0.0, 1.0) == math.inf
    assert cal.gaussian_epsilon(1.0, 1.0) == 0.0
    assert cal.gaussian_epsilon(0.5, 1.0) == 0.0  # δ(0) = 2Φ(1/2) − 1 ≈ 0.383 < 0.5
    assert cal.gaussian_epsilon(0.1, 0.0) == 0.0
    assert cal.gaussian_delta(1.0, 0.0) == 0.0
    assert cal.gaussian_delta(1.0, math.inf) == 1.0
    assert cal.gaussian_delta(0.0, 1.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-14)


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6, 1e-10])
def test_analytic_sigma_attains_delta(eps, delta):
    sens = 2.0
    sigma = cal.gaussian_sigma_analytic(sens, eps, delta)
    d_at = cal.gaussian_delta(eps, sens / sigma)
    assert d_at <= delta
    assert d_at == pytest.approx(delta, rel=1e-8)


def test_analytic_sigma_reference_value():
    # Balle & Wang (2018): ε = 1, δ = 1e-5, Δ = 1 needs σ ≈ 3.73 (classical: 4.84).
    assert cal.gaussian_sigma_analytic(1.0, 1.0, 1e-5) == pytest.approx(3.7306, abs=1e-3)
    assert cal.gaussian_sigma_classical(1.0, 1.0, 1e-5) == pytest.approx(
        math.sqrt(2 * math.log(1.25e5)), rel=1e-14
    )


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [0.5, 1e-2, 1e-5, 1e-12])
def test_classical_sigma_is_valid_and_no_smaller_than_analytic(eps, delta):
    sc = cal.gaussian_sigma_classical(1.5, eps, delta)
    sa = cal.gaussian_sigma_analytic(1.5, eps, delta)
    assert sc >= sa
    assert cal.gaussian_delta(eps, 1.5 / sc) <= delta


def test_laplace_scale():
    assert cal.laplace_scale(2.0, 0.5) == 4.0


@pytest.mark.parametrize("mu,eps", [(1.0, 0.0), (1.0, 0.5), (2.0, 1.0), (0.3, 0.1), (1.0, 1.0)])
def test_laplace_delta_matches_quadrature_and_dp_accounting(mu, eps):
    from dp_accounting.pld import privacy_loss_mechanism as plm

    lp = stats.laplace(0, 1).logpdf
    lq = stats.laplace(mu, 1).logpdf
    ref = _quad_hockey_stick(lp, lq, eps, -60, 60, points=[0.0, (mu - eps) / 2, mu])
    got = cal.laplace_delta(eps, mu)
    assert got == pytest.approx(ref, rel=1e-8, abs=1e-13)
    ref2 = plm.LaplacePrivacyLoss(1.0 / mu, sensitivity=1.0).get_delta_for_epsilon(eps)
    assert got == pytest.approx(ref2, rel=1e-8, abs=1e-13)


@pytest.mark.parametrize("mu", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [0.0, 1e-8, 0.1, 0.9, 1.0])
def test_laplace_epsilon_inverts(mu, delta):
    eps = cal.laplace_epsilon(delta, mu)
    assert cal.laplace_delta(eps, mu) <= delta + 1e-15
    if 0 < eps:
        assert cal.laplace_delta(eps, mu) == pytest.approx(delta, rel=1e-9)
    assert cal.laplace_epsilon(0.0, mu) == mu


BAD_CALLS = [
    (cal.laplace_scale, (0.0, 1.0), "sensitivity"),
    (cal.laplace_scale, (1.0, 0.0), "epsilon"),
    (cal.laplace_scale, (1.0, -1.0), "epsilon"),
    (cal.laplace_scale, (1.0, float("nan")), "epsilon"),
    (cal.gaussian_sigma_classical, (1.0, 1.5, 1e-5), "epsilon"),
    (cal.gaussian_sigma_classical, (1.0, 0.0, 1e-5), "epsilon"),
    (cal.gaussian_sigma_classical, (1.0, 0.5, 0.0), "delta"),
    (cal.gaussian_sigma_classical, (1.0, 0.5, 1.0), "delta"),
    (cal.gaussian_sigma_classical, (-1.0, 0.5, 0.1), "sensitivity"),
    (cal.gaussian_sigma_analytic, (1.0, -0.1, 0.1), "epsilon"),
    (cal.gaussian_sigma_analytic, (1.0, 1.0, 0.0), "delta"),
    (cal.gaussian_sigma_analytic, (1.0, 1.0, 1.0), "delta"),
    (cal.gaussian_sigma_analytic, (0.0, 1.0, 0.1), "sensitivity"),
    (cal.gaussian_delta, (-1.0, 1.0), "epsilon"),
    (cal.gaussian_delta, (1.0, -1.0), "mu"),
    (cal.gaussian_epsilon, (1.5, 1.0), "delta"),
    (cal.gaussian_epsilon, (-0.1, 1.0), "delta"),
    (cal.gaussian_epsilon, (0.1, -1.0), "mu"),
    (cal.laplace_delta, (-1.0, 1.0), "epsilon"),
    (cal.laplace_delta, (1.0, float("nan")), "mu"),
    (cal.laplace_epsilon, (2.0, 1.0), "delta"),
    (cal.laplace_epsilon, (0.1, -2.0), "mu"),
]


@pytest.mark.parametrize("fn,args,name", BAD_CALLS, ids=lambda x: getattr(x, "__name__", None))
def test_rejects_out_of_range(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


def test_profiles_vectorise_over_a_grid_consistently():
    mus = np.linspace(0.1, 3, 7)
    vals = [cal.gaussian_delta(1.0, m) for m in mus]
    assert np.all(np.diff(vals) > 0)  # δ increases with μ
