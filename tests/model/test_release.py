"""Tests for audit.model.release: the calibrated Laplace and Gaussian releases.

Oracles: the closed forms b = C_1/ε and σ = C_2 √(2 ln(1.25/δ))/ε, and for the analytic
calibration Balle–Wang's exact condition Φ(C/(2σ) − εσ/C) − e^ε Φ(−C/(2σ) − εσ/C) = δ
evaluated with scipy.
"""

from __future__ import annotations

import math

import pytest
from scipy import stats

from audit.enums import Calibration, NoiseKind
from audit.model.release import Release


def test_laplace_scale_is_sensitivity_over_epsilon():
    r = Release.laplace(3.0, 0.5)
    assert r.noise is NoiseKind.LAPLACE and r.scale == pytest.approx(6.0, rel=1e-15)


def test_classical_gaussian_sigma_closed_form():
    r = Release.gaussian(2.0, 0.8, 1e-5)
    assert r.noise is NoiseKind.GAUSSIAN
    assert r.scale == pytest.approx(2.0 * math.sqrt(2.0 * math.log(1.25 / 1e-5)) / 0.8, rel=1e-14)
    assert Release.gaussian(2.0, 0.8, 1e-5, Calibration.CLASSICAL) == r  # members accepted


@pytest.mark.parametrize(("eps", "delta"), [(0.5, 1e-5), (1.0, 1e-3), (3.0, 1e-6)])
def test_analytic_gaussian_sigma_meets_balle_wang_exactly(eps, delta):
    c = 1.5
    s = Release.gaussian(c, eps, delta, "analytic").scale
    got = stats.norm.cdf(c / (2 * s) - eps * s / c) \
        - math.exp(eps) * stats.norm.cdf(-c / (2 * s) - eps * s / c)
    assert got == pytest.approx(delta, rel=1e-6)
    if eps <= 1.0:  # the analytic σ never exceeds the classical one
        assert s <= Release.gaussian(c, eps, delta).scale


def test_a_release_is_a_frozen_description():
    r = Release("gaussian", 2)
    assert r.noise is NoiseKind.GAUSSIAN and r.scale == 2.0 and isinstance(r.scale, float)
    with pytest.raises(AttributeError):
        r.scale = 3.0


@pytest.mark.parametrize(("call", "message"), [
    (lambda: Release("cauchy", 1.0), "noise must be one of 'laplace', 'gaussian'"),
    (lambda: Release("laplace", 0.0), r"scale must be in \(0.0, inf\), got scale=0.0"),
    (lambda: Release("laplace", math.inf), "scale must be in"),
    (lambda: Release.laplace(0.0, 1.0), "sensitivity"),
    (lambda: Release.laplace(1.0, 0.0), "epsilon"),
    (lambda: Release.gaussian(1.0, 0.5, 1e-5, "exact"),
     r"calibration must be one of 'classical', 'analytic', got calibration='exact'"),
    (lambda: Release.gaussian(1.0, 2.0, 1e-5), "epsilon"),  # classical needs ε <= 1
    (lambda: Release.gaussian(1.0, 0.5, 0.0), "delta"),
    (lambda: Release.gaussian(-1.0, 0.5, 1e-5), "sensitivity"),
])
def test_each_parameter_is_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()
