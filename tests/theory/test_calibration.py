"""Tests for audit.theory.calibration (noise scales) against the exact profiles and references."""

from __future__ import annotations

import math

import pytest

from audit.theory import calibration as cal
from audit.theory import profiles as prof


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6, 1e-10])
def test_analytic_sigma_attains_delta(eps, delta):
    sens = 2.0
    sigma = cal.gaussian_sigma_analytic(sens, eps, delta)
    d_at = prof.gaussian_delta(eps, sens / sigma)
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
    assert prof.gaussian_delta(eps, 1.5 / sc) <= delta


def test_laplace_scale():
    assert cal.laplace_scale(2.0, 0.5) == 4.0


def test_profiles_are_reexported_not_copied():
    for name in ("gaussian_delta", "gaussian_epsilon", "laplace_delta", "laplace_epsilon"):
        assert getattr(cal, name) is getattr(prof, name)


@pytest.mark.parametrize("eps", [0.5, 10.0, 100.0, 600.0, 1e4])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-12])
def test_analytic_sigma_at_large_epsilon_and_its_inverse(eps, delta):
    """The analytic σ is certified (δ ≤ target) and the profile's ε(δ) at that σ is ε up to
    the profile's evaluation noise (it is the smallest ε with δ(ε) ≤ δ)."""
    mu = 1.0 / cal.gaussian_sigma_analytic(1.0, eps, delta)
    assert prof.gaussian_delta(eps, mu) <= delta
    assert prof.gaussian_epsilon(delta, mu) == pytest.approx(eps, rel=1e-13)


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
]


@pytest.mark.parametrize("fn,args,name", BAD_CALLS, ids=lambda x: getattr(x, "__name__", None))
def test_rejects_out_of_range(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)
