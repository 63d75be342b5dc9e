"""Tests for audit.theory.tradeoff.base: what every trade-off function inherits (evaluation,
complement, the generic inverse, slope at 0, fixed point) and the α validation.

Oracles: small curves whose inverse, fixed point and slope are known in closed form:
f(α) = (1 − α)² (f⁻¹(β) = 1 − √β, fixed point (3 − √5)/2, f'(0) = −2), f(α) = max(0, 1 − 2α)
(f⁻¹(β) = (1 − β)/2), f(α) = (1 − √α)² (unbounded slope at 0) and f ≡ 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.theory.tradeoff.base import TradeoffFunction, check_alpha_array


class Square(TradeoffFunction):
    symmetric = False

    def _eval(self, alpha):
        return (1.0 - alpha) ** 2


class Steep(TradeoffFunction):
    symmetric = False

    def _eval(self, alpha):
        return np.maximum(0.0, 1.0 - 2.0 * alpha)


class SqrtSquare(TradeoffFunction):
    symmetric = True  # (1 − √α)² is its own inverse

    def _eval(self, alpha):
        return (1.0 - np.sqrt(alpha)) ** 2


class Perfect(TradeoffFunction):
    symmetric = True

    def _eval(self, alpha):
        return np.zeros_like(alpha)


class Overshoot(TradeoffFunction):
    symmetric = True

    def _eval(self, alpha):
        return 1.5 - 2.0 * alpha  # outside [0, 1] at the ends: __call__ clips


BETAS = np.array([0.0, 1e-12, 1e-4, 0.1, 0.5, 0.9, 1.0 - 1e-9, 1.0])


def test_call_returns_a_float_for_a_scalar_and_keeps_array_shapes():
    f = Square()
    assert f(0.25) == 0.5625 and isinstance(f(0.25), float)
    assert isinstance(f(np.float64(0.5)), float) and isinstance(f(np.array(0.5)), float)
    grid = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    assert np.array_equal(f(grid), (1.0 - grid) ** 2) and f(grid).shape == (2, 3)
    assert Overshoot()(0.0) == 1.0 and Overshoot()(1.0) == 0.0


def test_complement_default_and_clipping():
    f = Square()
    assert f.complement(0.25) == pytest.approx(1.0 - 0.5625)
    assert Overshoot().complement(0.0) == 0.0  # 1 − 1.5 clipped


def test_generic_inverse_matches_the_closed_forms():
    assert np.allclose(Square().inverse(BETAS), 1.0 - np.sqrt(BETAS), rtol=1e-12, atol=1e-15)
    assert np.allclose(Steep().inverse(BETAS), (1.0 - BETAS) / 2.0, rtol=1e-12, atol=1e-15)
    assert Steep().inverse(0.0) == pytest.approx(0.5, abs=1e-15)  # the infimum, not any root
    assert Square().inverse(1.0) == 0.0  # f(0) <= 1


def test_a_symmetric_curve_is_its_own_inverse():
    f = SqrtSquare()
    assert np.array_equal(f.inverse(BETAS), f(BETAS))


def test_fixed_point():
    assert Square()._fixed_point() == pytest.approx((3.0 - math.sqrt(5.0)) / 2.0, rel=1e-14)
    assert Perfect()._fixed_point() == 0.0


def test_log_slope_at_zero_by_finite_differences():
    # the default complement 1 − f(h) cancels at h = 1e-10: about 1e-7 relative
    assert Square()._log_slope_at_zero() == pytest.approx(math.log(2.0), rel=1e-6)
    assert SqrtSquare()._log_slope_at_zero() == math.inf
    assert Perfect()._log_slope_at_zero() == -math.inf


def test_defaults_of_the_interface():
    f = Square()
    assert f._delta(1.0) is None and f._epsilon(0.1) is None and f._min_error_sum() is None
    assert f._kinks() == () and f.name == "Square" and repr(f) == "Square"
    with pytest.raises(TypeError):
        TradeoffFunction()  # abstract


def test_check_alpha_array():
    arr, scalar = check_alpha_array([0.0, 0.5, 1.0])
    assert arr.tolist() == [0.0, 0.5, 1.0] and scalar is False
    val, scalar = check_alpha_array(np.array(0.3))
    assert val.item() == 0.3 and scalar is True


@pytest.mark.parametrize(("value", "message"), [
    (1.5, r"^alpha must be in \[0.0, 1.0\], got alpha=1.5$"),
    (math.nan, r"alpha must be a finite real number"),
    ("half", r"alpha must be a real number"),
    # (numpy 2 prints the offending element as np.float64(...))
    ([0.5, -0.1, 2.0],
     r"^alpha must be in \[0, 1\], got alpha=(np\.float64\()?-0.1\)? \(and possibly others\)$"),
    ([0.5, math.nan], r"alpha must be in \[0, 1\], got alpha=(np\.float64\()?nan"),
    ([0.5, "x"], r"alpha must be real numbers in \[0, 1\]"),
])
def test_alpha_is_validated(value, message):
    with pytest.raises(ValueError, match=message):
        check_alpha_array(value)
    with pytest.raises(ValueError, match=message):
        Square()(value)


def test_beta_is_validated_under_its_own_name():
    with pytest.raises(ValueError, match=r"^beta must be in \[0.0, 1.0\], got beta=-1$"):
        Square().inverse(-1)
    with pytest.raises(ValueError, match="alpha must be in"):
        Square().complement(2.0)
