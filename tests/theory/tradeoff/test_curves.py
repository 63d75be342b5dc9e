"""Tests for audit.theory.tradeoff.curves: Id, f_{ε,δ}, G_μ and the Laplace shift ([DRS] §2).

Oracles: mpmath for G_μ in the tails, the Neyman–Pearson tests written out for the Laplace and
Gaussian shifts.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import special

from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    IdentityTradeoff,
    LaplaceTradeoff,
    SubsampledDPTradeoff,
    amplify_tradeoff,
    delta_for_epsilon,
    tradeoff_dp,
    tradeoff_gaussian,
    tradeoff_laplace,
)

from .common import GRID


@pytest.mark.parametrize("mu", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("alpha", [1e-300, 1e-100, 1e-12, 0.3, 1 - 1e-6, 1 - 1e-12])
def test_gaussian_against_mpmath(mu, alpha):
    mpmath.mp.dps = 50
    a = mpmath.mpf(alpha)
    # z = Φ⁻¹(1 − α): solve ½ erfc(z/√2) = α (log form for the deep tail)
    z0 = mpmath.mpf(float(-np.asarray(special.ndtri(alpha))))
    z = mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t / mpmath.sqrt(2)) / 2) - mpmath.log(a),
                        z0)
    exact = mpmath.ncdf(z - mu)
    comp = mpmath.ncdf(mu - z)
    g = GaussianTradeoff(mu)
    assert g(alpha) == pytest.approx(float(exact), rel=1e-12, abs=1e-300)
    assert g.complement(alpha) == pytest.approx(float(comp), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("mu", [0.0, 0.4, 2.0, 7.0])
def test_laplace_and_gaussian_neyman_pearson(mu):
    """Threshold tests reject for X > t: α = P₀(X > t), β = P_μ(X ≤ t)."""
    t = np.linspace(-10, 20, 3001)
    from scipy import stats

    a_l, b_l = stats.laplace.sf(t), stats.laplace.cdf(t, loc=mu)
    assert np.allclose(LaplaceTradeoff(mu)(a_l), b_l, rtol=1e-10, atol=1e-14)
    a_g, b_g = stats.norm.sf(t), stats.norm.cdf(t, loc=mu)
    assert np.allclose(GaussianTradeoff(mu)(a_g), b_g, rtol=1e-10, atol=1e-14)


def test_identity_cases():
    for f in (GaussianTradeoff(0.0), LaplaceTradeoff(0.0), DPTradeoff(0.0, 0.0),
              IdentityTradeoff(), SubsampledDPTradeoff(2.0, 0.1, 0.0)):
        assert np.allclose(f(GRID), 1.0 - GRID, atol=1e-15)
        assert delta_for_epsilon(f, 0.0) == pytest.approx(0.0, abs=1e-15)


def test_scalar_and_array_shapes():
    g = tradeoff_gaussian(1.0)
    assert isinstance(g(0.3), float)
    assert isinstance(g(np.float64(0.3)), float)
    arr = np.full((2, 3), 0.25)
    assert g(arr).shape == (2, 3)
    assert g.inverse(arr).shape == (2, 3)
    c = amplify_tradeoff(g, 0.4)
    assert isinstance(c(0.1), float) and c(arr).shape == (2, 3)
    assert isinstance(tradeoff_dp(1.0, 0.1), DPTradeoff)
    assert isinstance(tradeoff_laplace(1.0), LaplaceTradeoff)
    assert "mu=1.0" in repr(g)



BAD = [
    ("epsilon", lambda: DPTradeoff(-0.1, 0.0)),
    ("epsilon", lambda: DPTradeoff(math.inf, 0.0)),
    ("delta", lambda: DPTradeoff(1.0, 1.5)),
    ("delta", lambda: DPTradeoff(1.0, -1e-9)),
    ("mu", lambda: GaussianTradeoff(-1.0)),
    ("mu", lambda: GaussianTradeoff(float("nan"))),
    ("mu", lambda: LaplaceTradeoff(-0.5)),
    ("alpha", lambda: GaussianTradeoff(1.0)(1.5)),
    ("alpha", lambda: GaussianTradeoff(1.0)(np.array([0.2, -0.1]))),
    ("alpha", lambda: DPTradeoff(1.0, 0.0)(np.array([0.2, np.nan]))),
    ("beta", lambda: GaussianTradeoff(1.0).inverse(-0.5)),
]


@pytest.mark.parametrize(("name", "call"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_input_names_parameter(name, call):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


# ----------------------------------------------------------------- large shifts (issue 11)
@pytest.mark.parametrize("mu", [700.0, 720.0, 746.0, 1000.0, 1e4])
def test_laplace_curve_beyond_the_double_range_of_exp_minus_mu(mu):
    """e^{−μ} underflows for μ > 745 (and is subnormal above 708): the curve is evaluated in log
    space. It used to return NaN at α = 0 (0/0), which the conversions read as δ = 0."""
    f = LaplaceTradeoff(mu)
    alpha = np.array([0.0, 5e-324, 1e-310, 1e-300, 1e-100, 0.25, 0.5, 0.75, 1.0])
    vals, comp = f(alpha), f.complement(alpha)
    assert np.all(np.isfinite(vals)) and np.all(np.isfinite(comp))
    assert f(0.0) == 1.0 and f.complement(0.0) == 0.0
    assert np.all(np.diff(vals) <= 0)
    with mpmath.workdps(50):
        for a in alpha[1:]:
            a_mp, m = mpmath.mpf(float(a)), mpmath.mpf(mu)
            if a_mp < mpmath.exp(-m) / 2:
                exact = 1 - mpmath.exp(m) * a_mp
            elif a_mp <= 0.5:
                exact = mpmath.exp(-m) / (4 * a_mp)
            else:
                exact = mpmath.exp(-m) * (1 - a_mp)
            assert f(float(a)) == pytest.approx(float(exact), rel=1e-12, abs=1e-320)


def test_dp_curve_at_large_epsilon():
    """(1 − δ)/(1 + e^ε) used to overflow (math.exp) for ε > 709."""
    f = DPTradeoff(800.0, 0.0)
    assert f._fixed_point() == 0.0 and f._kinks() == (0.0, 1.0)
    assert f(0.0) == 1.0 and f(1e-300) == 0.0
    assert delta_for_epsilon(f, 10.0) == pytest.approx(1.0, abs=1e-300)
    assert amplify_tradeoff(f, 0.5)(0.25) == pytest.approx(0.25, abs=1e-12)
