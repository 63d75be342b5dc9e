"""Mirror of audit._numeric (tests/theory/test_numeric.py holds the mpmath grid and the hull
property test); here: negative arguments, the overflow branch in closed form, and the 1-D
searches against closed-form roots and maxima.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from audit._numeric import (
    bisect_increasing,
    brentq,
    first_true,
    golden_max,
    log1p_c_expm1,
    log1p_expm1_div,
    lower_convex_hull,
    round_decimals,
)


@pytest.mark.parametrize("x", [-1e-9, -0.5, -5.0, -40.0, -800.0])
@pytest.mark.parametrize("c", [1e-6, 0.3, 0.9])
def test_log1p_c_expm1_for_negative_x_matches_mpmath(x, c):
    with mpmath.workdps(50):
        want = float(mpmath.log(1 - mpmath.mpf(c) + mpmath.mpf(c) * mpmath.exp(mpmath.mpf(x))))
    assert log1p_c_expm1(x, c) == pytest.approx(want, rel=4e-15, abs=1e-320)


@pytest.mark.parametrize("c", [1e-300, 1e-8, 0.25])
def test_beyond_exp_overflow_the_closed_form_is_x_plus_log_c(c):
    # x = 5000: ln(1 − c + c e^x) = x + ln c + ln(1 + (1 − c) e^{−x}/c), the last term ~0
    # unless c is tiny enough that (1 − c)/c rivals e^x
    x = 5000.0
    assert log1p_c_expm1(x, c) == pytest.approx(x + math.log(c), rel=1e-15)
    assert log1p_expm1_div(x, c) == pytest.approx(x - math.log(c), rel=1e-15)
    assert log1p_expm1_div(log1p_c_expm1(x, c), c) == pytest.approx(x, rel=1e-15)


def test_bisect_increasing_matches_the_cube_root_elementwise():
    target = np.array([1e-150, 1e-9, 0.125, 8.0, 1e6])
    root = bisect_increasing(lambda a: a ** 3, target, np.zeros(5), np.full(5, 1e3), iters=300)
    assert np.allclose(root, np.cbrt(target), rtol=1e-13, atol=0.0)
    assert np.all(root ** 3 >= target * (1 - 1e-12))  # the upper end of the bracket
    empty = bisect_increasing(lambda a: a, np.array([]), np.array([]), np.array([]))
    assert empty.shape == (0,)


def test_golden_max_at_a_kink_and_at_an_end():
    # a tent with its apex at 1/3: the maximum is 1 exactly, to the last bits
    assert golden_max(lambda t: 1.0 - abs(t - 1.0 / 3.0), 0.0, 1.0) == pytest.approx(1.0, abs=1e-15)
    # increasing on the interval: the end point is the maximum
    assert golden_max(math.exp, 0.0, 2.0) == math.exp(2.0)


def test_first_true_rounds_to_the_certified_side():
    x = first_true(lambda v: math.log(v) >= 1.0, 1.0, 3.0)
    assert math.log(x) >= 1.0 and math.log(np.nextafter(x, 0.0)) < 1.0
    assert x == pytest.approx(math.e, rel=1e-15)


def test_brentq_is_scipys_root_finder():
    root = brentq(lambda t: t * t - 2.0, 0.0, 2.0, xtol=1e-15)
    assert root == pytest.approx(math.sqrt(2.0), rel=1e-14)
    with pytest.raises(ValueError):  # scipy refuses a bracket without a sign change
        brentq(lambda t: t * t + 1.0, 0.0, 2.0)


def test_lower_convex_hull_of_a_parabola_keeps_every_point():
    x = np.linspace(-1.0, 1.0, 11)
    assert lower_convex_hull(x, x ** 2).tolist() == list(range(11))
    # an upward bump in the middle is dropped, collinear points are dropped
    x3 = np.array([0.0, 1.0, 2.0])
    assert lower_convex_hull(x3, np.array([0.0, 5.0, 0.0])).tolist() == [0, 2]
    assert lower_convex_hull(x3, np.array([0.0, 1.0, 2.0])).tolist() == [0, 2]


def test_round_decimals_keeps_huge_values_apart():
    a = np.array([1e300, 2e300, -1e308, 0.1234567890123456, np.nan, np.inf])
    r = round_decimals(a, 12)
    assert r[0] == 1e300 and r[1] == 2e300 and r[2] == -1e308
    assert r[3] == np.round(a[3], 12) and np.isnan(r[4]) and r[5] == np.inf
