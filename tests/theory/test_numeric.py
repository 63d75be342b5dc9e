"""Tests for audit._numeric: the shared log-space closed forms and hull/search helpers.

Oracles: mpmath at 50 digits for the closed forms, brute force for the hull.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit._numeric import (
    bisect_increasing,
    first_true,
    golden_max,
    log1p_c_expm1,
    log1p_expm1_div,
    lower_convex_hull,
)

XS = [0.0, 1e-300, 1e-12, 1e-6, 0.3, 1.0, 29.9, 30.0, 30.1, 100.0, 709.0, 709.8, 744.0, 800.0,
      1000.0, 1e4]
CS = [1e-300, 1e-12, 1e-3, 0.2, 0.5, 0.999, 1.0]


def _mp_forward(x: float, c: float) -> float:
    with mpmath.workdps(60):
        return float(mpmath.log1p(mpmath.mpf(c) * mpmath.expm1(mpmath.mpf(x))))


def _mp_inverse(x: float, c: float) -> float:
    with mpmath.workdps(60):
        return float(mpmath.log1p(mpmath.expm1(mpmath.mpf(x)) / mpmath.mpf(c)))


@pytest.mark.parametrize(("x", "c"), list(itertools.product(XS, CS)))
def test_log1p_c_expm1_matches_mpmath(x, c):
    got = log1p_c_expm1(x, c)
    assert math.isfinite(got)
    assert got == pytest.approx(_mp_forward(x, c), rel=4e-15, abs=1e-320)


@pytest.mark.parametrize(("x", "c"), list(itertools.product(XS, CS)))
def test_log1p_expm1_div_matches_mpmath_and_inverts(x, c):
    got = log1p_expm1_div(x, c)
    assert math.isfinite(got)
    assert got == pytest.approx(_mp_inverse(x, c), rel=4e-15, abs=1e-320)
    if x > 0:
        assert log1p_c_expm1(got, c) == pytest.approx(x, rel=1e-14)


def test_exact_special_cases():
    for x in XS:
        assert log1p_c_expm1(x, 1.0) == x
        assert log1p_c_expm1(x, 0.0) == 0.0
        assert log1p_expm1_div(x, 1.0) == x
    assert log1p_c_expm1(math.inf, 0.5) == math.inf
    assert log1p_expm1_div(math.inf, 0.5) == math.inf
    assert log1p_c_expm1(-math.inf, 0.25) == pytest.approx(math.log(0.75), rel=1e-15)
    # ε = 1000 does not overflow (e^ε − 1 would)
    assert log1p_c_expm1(1000.0, 0.5) == 1000.0 + math.log(0.5)


def _brute_lower_hull(x, y):
    """Points (sorted, distinct x) on the lower hull: no other pair has a chord below them."""
    keep = []
    for i in range(len(x)):
        below = False
        for j in range(len(x)):
            for k in range(len(x)):
                if x[j] < x[i] < x[k]:
                    t = (x[i] - x[j]) / (x[k] - x[j])
                    if y[j] + t * (y[k] - y[j]) <= y[i] - 1e-12:
                        below = True
        if not below:
            keep.append(i)
    return keep


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(-20, 20)), min_size=1, max_size=25,
                unique_by=lambda t: t[0]))
def test_lower_convex_hull_matches_brute_force(points):
    pts = sorted(points)
    x = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    hull = lower_convex_hull(x, y)
    assert hull[0] == 0 and hull[-1] == len(x) - 1
    # every point is on or above the hull polyline, every hull vertex is a strict corner
    assert np.all(np.interp(x, x[hull], y[hull]) <= y + 1e-12)
    assert set(hull.tolist()) <= set(_brute_lower_hull(x, y))
    for j, k, m in zip(hull[:-2], hull[1:-1], hull[2:], strict=True):
        cross = (x[k] - x[j]) * (y[m] - y[j]) - (y[k] - y[j]) * (x[m] - x[j])
        assert cross > 0


def test_lower_convex_hull_keeps_the_lowest_of_equal_x():
    x = np.array([0.0, 0.0, 1.0, 1.0])
    y = np.array([1.0, 2.0, 0.0, 5.0])
    assert lower_convex_hull(x, y).tolist() == [0, 2]


def test_bisect_increasing_tiny_roots():
    target = np.array([1e-200, 1e-20, 0.25])
    root = bisect_increasing(lambda a: a * a, target, np.zeros(3), np.ones(3), iters=200)
    assert np.allclose(root, np.sqrt(target), rtol=1e-12)


def test_golden_max_and_first_true():
    assert golden_max(lambda t: -(t - 0.3) ** 2, 0.0, 1.0) == pytest.approx(0.0, abs=1e-30)
    x = first_true(lambda v: v >= 600.0, 599.0, 601.0)
    assert x == 600.0
    x = first_true(lambda v: v * v >= 2.0, 1.0, 2.0)
    assert x * x >= 2.0 and np.nextafter(x, 0.0) ** 2 < 2.0
