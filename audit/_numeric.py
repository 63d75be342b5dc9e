"""Numerical helpers shared by the theory layer: log-space closed forms, hulls, 1-D searches.

This module depends on numpy, scipy and math only, so that every layer may use it. Each
helper is the single implementation of its formula in the package (dp_accounting keeps
``log_a_times_exp_b_plus_c`` in one ``common`` module for the same reason: copies drift in
their overflow guards and rounding).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = [
    "brentq",
    "round_decimals",
    "log1p_c_expm1",
    "log1p_expm1_div",
    "lower_convex_hull",
    "bisect_increasing",
    "golden_max",
    "first_true",
]

# A double of magnitude ≥ 2**52 is an integer: it has no decimals to round.
_INTEGRAL = 2.0**52


def round_decimals(a, decimals: int) -> np.ndarray:
    """``np.round(a, decimals)`` without overflow.

    ``np.round`` scales by 10**decimals, which overflows to ±inf for huge values (above about
    1e296 at 12 decimals: distinct values would round to the same inf, with a numpy
    ``RuntimeWarning``). A value of magnitude ≥ 2**52 is already an integer and is returned
    as is; NaN and ±inf are too.

    Parameters
    ----------
    a : array_like
        Floats.
    decimals : int
        Decimals kept, ≥ 0.

    Returns
    -------
    ndarray
        The rounded floats, of ``a``'s shape.
    """
    x = np.asarray(a, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.round(x, decimals)
    return np.where(np.abs(x) < _INTEGRAL, r, x)


# e^x − 1 is a finite double up to x ≈ 709.78.
_MAX_EXPM1 = 709.0


def _log1p_exp(t: float) -> float:
    """ln(1 + e^t) (softplus) without overflow or loss of relative accuracy."""
    return t + math.log1p(math.exp(-t)) if t > 0.0 else math.log1p(math.exp(t))


def log1p_c_expm1(x: float, c: float) -> float:
    """ln(1 + c (e^x − 1)) = ln(1 − c + c e^x), accurate to a few ulps for every x and c.

    This is the amplified privacy parameter of subsampling ([DRS] Lemma 4.4) and of MAR
    missing data ([RPS] Theorem 3.2) with c = p or p*. While e^x − 1 is a finite double
    (x ≤ 709) it is log1p(c·expm1(x)), exact for tiny x and tiny c alike; beyond, with
    t = ln c + x + ln(1 − e^{−x}) = ln(c (e^x − 1)), it is ln(1 + e^t), which never forms e^x
    (ε = 1000, c = 1/2 gives 1000 − ln 2).

    Parameters
    ----------
    x : float
        In [−∞, ∞].
    c : float
        In [0, 1]. c = 0 gives 0 and c = 1 gives x exactly.

    Returns
    -------
    float
    """
    if c == 0.0 or x == 0.0:
        return 0.0
    if c == 1.0 or math.isinf(x):
        return float(x) if x > 0 or c == 1.0 else math.log1p(-c)
    if x <= _MAX_EXPM1:
        return math.log1p(c * math.expm1(x))
    return _log1p_exp(math.log(c) + x + math.log1p(-math.exp(-x)))


def log1p_expm1_div(x: float, c: float) -> float:
    """ln(1 + (e^x − 1)/c), the inverse of ``y ↦ log1p_c_expm1(y, c)`` for x ≥ 0.

    log1p(expm1(x)/c) while that quotient is finite; beyond, ln(1 + e^t) with
    t = x + ln(1 − e^{−x}) − ln c = ln((e^x − 1)/c).

    Parameters
    ----------
    x : float
        In [0, ∞].
    c : float
        In (0, 1]. c = 1 gives x exactly.

    Returns
    -------
    float
    """
    if c == 1.0 or x == 0.0 or math.isinf(x):
        return float(x)
    if x <= _MAX_EXPM1:
        t = math.expm1(x) / c
        if math.isfinite(t):
            return math.log1p(t)
    return _log1p_exp(x + math.log1p(-math.exp(-x)) - math.log(c))


def lower_convex_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of points sorted by (x, y) (Andrew's monotone chain).

    Collinear middle points are dropped; of several points with the same x only the first
    (lowest) is kept.

    Parameters
    ----------
    x, y : ndarray, shape (n,)
        Coordinates, sorted by x and, within equal x, by y.

    Returns
    -------
    ndarray of int64
        Increasing indices of the hull vertices, from the leftmost to the rightmost point.
    """
    hull: list[int] = []
    for i in range(x.shape[0]):
        xi, yi = x[i], y[i]
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            cross = (x[k] - x[j]) * (yi - y[j]) - (y[k] - y[j]) * (xi - x[j])
            if cross <= 0.0:
                hull.pop()
            else:
                break
        if hull and x[hull[-1]] == xi:
            continue  # same x, larger or equal y (sorted): not on the lower hull
        hull.append(i)
    return np.asarray(hull, dtype=np.int64)


def bisect_increasing(
    func: Callable[[np.ndarray], np.ndarray],
    target: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    iters: int = 80,
) -> np.ndarray:
    """Vectorised bisection for func(x) = target with func non-decreasing on [lo, hi].

    Returns the upper end of the final bracket (so func(x) >= target up to the bracket width).
    The midpoint is geometric while the bracket spans more than a factor 4 (lo = 0 read as
    1e-300), which keeps relative accuracy for tiny roots: ~10 geometric steps, then halving.
    """
    lo = np.array(lo, dtype=np.float64, copy=True)
    hi = np.array(hi, dtype=np.float64, copy=True)
    target = np.asarray(target, dtype=np.float64)
    if lo.size == 0:
        return hi
    for _ in range(iters):
        lo_eff = np.maximum(lo, 1e-300)
        geo = hi > 4.0 * lo_eff
        mid = np.where(geo, np.sqrt(lo_eff * hi), 0.5 * (lo + hi))
        up = func(mid) >= target
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return hi


def golden_max(func: Callable[[float], float], lo: float, hi: float) -> float:
    """Maximum of a unimodal function on [lo, hi] by golden-section search to the last bit.

    scipy's bounded Brent stops at a relative 1.5e-8 in x, too coarse at a kink. Returns the
    largest value seen (the end points included).
    """
    invphi = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - invphi * (b - a), a + invphi * (b - a)
    fc, fd = func(c), func(d)
    best = max(func(lo), func(hi), fc, fd)
    for _ in range(200):
        if b - a <= 4e-16 * max(1.0, abs(a), abs(b)):
            break
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - invphi * (b - a)
            fc = func(c)
            best = max(best, fc)
        else:
            a, c, fc = c, d, fd
            d = a + invphi * (b - a)
            fd = func(d)
            best = max(best, fd)
    return best


def first_true(pred: Callable[[float], bool], lo: float, hi: float) -> float:
    """The smallest double x in (lo, hi] with pred(x), for pred monotone (False, then True),
    given pred(lo) False and pred(hi) True: bisection until lo and hi are adjacent doubles.

    Used to round a root found to a relative 1e-15 by ``brentq`` to the last bit, in the
    direction the predicate certifies.
    """
    while True:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            return hi
        if pred(mid):
            hi = mid
        else:
            lo = mid


def brentq(f: Callable[[float], float], a: float, b: float, **kwargs) -> float:
    """:func:`scipy.optimize.brentq`, imported on first use: importing ``scipy.optimize``
    takes about 0.14 s, a tenth of a short audit's whole start-up, and only the theory's root
    finders need it."""
    from scipy.optimize import brentq as _brentq

    return _brentq(f, a, b, **kwargs)
