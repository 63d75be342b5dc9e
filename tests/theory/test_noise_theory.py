"""audit.theory.noise_theory: the accountant's per-noise row agrees with the accountant."""

from __future__ import annotations

import math

import pytest

from audit.enums import Calibration, NoiseKind
from audit.noise import noise_of
from audit.theory import accountant as acc
from audit.theory.noise_theory import theory_of


def test_laplace_row_is_theorem_4_5_and_its_base_epsilon():
    t = theory_of("laplace")
    name, eps, delta = t.rps_bound(1.0, None, Calibration.CLASSICAL, 0.5, 0.3)
    assert name == "RPS Theorem 4.5" and delta == 0.0
    assert eps == pytest.approx(math.log1p(0.5 * math.expm1(0.3)), rel=1e-12)
    assert t.base_epsilon(1.0, 0.5, 0.0) == 1.0


def test_gaussian_row_picks_theorem_4_7_or_3_2():
    t = theory_of(NoiseKind.GAUSSIAN)
    name, eps, delta = t.rps_bound(1.0, 1e-5, Calibration.CLASSICAL, 0.5, 1.0)
    assert name == "RPS Theorem 4.7"
    assert (eps, delta) == acc.gaussian_fwl_bound(1.0, 1e-5, 0.5, 1.0)
    name, eps, delta = t.rps_bound(2.0, 1e-5, Calibration.ANALYTIC, 0.5, 1.0)
    assert name == "RPS Theorem 3.2" and (eps, delta) == acc.amplify(2.0, 1e-5, 0.5)
    mu = 0.2
    assert t.base_epsilon(1.0, mu, 1e-5) == acc.epsilon_for_delta(acc.tradeoff_gaussian(mu),
                                                                  1e-5)


def test_unknown_noise_is_refused():
    with pytest.raises(ValueError, match="noise"):
        theory_of("cauchy")


def test_base_curve_is_the_curve_section_7_amplifies():
    from audit.theory.tradeoff import DPTradeoff, GaussianTradeoff, LaplaceTradeoff

    lap, gauss = theory_of("laplace"), theory_of("gaussian")
    assert isinstance(lap.base_curve(0.7, True), LaplaceTradeoff)
    assert lap.base_curve(0.7, True).mu == 0.7
    # vector Laplace outputs: only the pure-DP curve is proved (docs/THEORY.md §7.2)
    vec = lap.base_curve(0.7, False)
    assert isinstance(vec, DPTradeoff) and (vec.epsilon, vec.delta) == (0.7, 0.0)
    assert isinstance(gauss.base_curve(0.7, False), GaussianTradeoff)
    # the mean of k draws is sufficient for a Gaussian location only
    assert noise_of("gaussian").mean_is_sufficient and not noise_of("laplace").mean_is_sufficient
