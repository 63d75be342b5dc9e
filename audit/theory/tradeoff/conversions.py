"""Conversions between a trade-off function and its privacy profile ([DRS] Prop. 2.12).

δ(ε) = 1 + f*(−e^ε) = 1 − min_α (e^ε α + f(α)); for symmetric f, f-DP ⇔ (ε, δ(ε))-DP for
every ε ≥ 0. A curve's closed forms (``_delta``, ``_epsilon``, ``_min_error_sum``) are used
when it has them; otherwise the conversion is numerical: a concave maximisation for δ(ε), root
finding on δ(ε) for ε(δ). Both numerical paths err only in the safe direction (δ up, ε up).
"""

from __future__ import annotations

import math

import numpy as np

from audit._numeric import brentq, golden_max
from audit._validate import check_delta, check_epsilon
from audit.theory.tradeoff.base import TradeoffFunction
from audit.theory.tradeoff.generic import as_tradeoff

__all__ = ["delta_for_epsilon", "epsilon_for_delta", "min_error_sum"]

#: Largest ε the numerical ε(δ) resolves (its δ(ε) grid reaches down to α = 1e-300).
EPS_NUMERIC_MAX = 700.0


def numeric_delta(f: TradeoffFunction, epsilon: float) -> float:
    """max_α (1 − f(α) − e^ε α) for concave g(α) = 1 − f(α) − e^ε α: a scan on a grid that is
    log-spaced down to 1e-300, then golden-section search in ln α around the best grid point.

    When the best grid point is one of the two smallest (0 or 1e-300) the maximiser may lie
    below 1e-300, out of the grid's reach; there g(α) ≤ 1 − f(α) ≤ 1 − f(1e-300), which is
    then included as an upper bound, so the result never understates δ(ε).
    """
    c0 = float(f._complement(np.asarray(0.0)))
    if f._slope_exact and f._log_slope_at_zero() <= epsilon:
        return c0  # g'(0+) ≤ 0: the maximum of the concave g sits at α = 0

    def g(alpha):
        with np.errstate(over="ignore"):
            return f._complement(alpha) - np.exp(epsilon + np.log(np.maximum(alpha, 1e-320)))

    grid = np.unique(np.concatenate([np.logspace(-300, -2, 450), np.linspace(0.0, 1.0, 401)]))
    vals = g(grid)
    i = int(np.argmax(vals))
    best = max(float(vals[i]), c0)
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if lo > 0:  # search in t = ln α: g(e^t) is unimodal as g is concave
        best = max(best, golden_max(lambda t: float(g(np.asarray(math.exp(t)))),
                                    math.log(lo), math.log(hi)))
    else:
        best = max(best, golden_max(lambda t: float(g(np.asarray(t))), lo, hi))
    if i <= 1:
        best = max(best, float(f._complement(np.asarray(grid[1]))))
    return min(1.0, max(0.0, best))


def delta_for_epsilon(f, epsilon: float) -> float:
    """δ(ε) = 1 − min_α (e^ε α + f(α)) = 1 + f*(−e^ε) ([DRS] Prop. 2.12).

    For symmetric f, f-DP ⇔ (ε, δ(ε))-DP for every ε ≥ 0; for any f, f-DP ⇒ (ε, δ(ε))-DP.
    Closed forms: f_{ε,δ} and piecewise-linear curves (vertex enumeration), G_μ and Laplace
    (:mod:`audit.theory.profiles`), C_p(f) for symmetric f (p δ_f(ε_p), see
    :mod:`audit.theory.tradeoff.subsampling`). Other curves: concave maximisation of
    1 − f(α) − e^ε α (absolute accuracy ~1e-12), returning exactly 1 − f(0) when the slope
    −f'(0+) ≤ e^ε is known exactly.

    Parameters
    ----------
    f : TradeoffFunction or callable
        Trade-off function.
    epsilon : float
        ε ∈ [0, ∞).

    Returns
    -------
    float
        δ(ε) ∈ [0, 1].

    Raises
    ------
    ValueError
        If ε < 0 or not finite, or f is not a trade-off function.
    """
    epsilon = check_epsilon(epsilon)
    tf = as_tradeoff(f)
    closed = tf._delta(epsilon)
    value = numeric_delta(tf, epsilon) if closed is None else float(closed)
    return min(1.0, max(0.0, value))


def epsilon_for_delta(f, delta: float) -> float:
    """The smallest ε ≥ 0 with δ(ε) ≤ δ (see ``delta_for_epsilon``).

    Returns 0 when δ(0) ≤ δ and ``math.inf`` when no ε works (δ < 1 − f(0), or δ = 1 − f(0)
    with an unbounded slope at 0, e.g. G_μ with δ = 0). When δ = 1 − f(0) and the slope
    −f'(0+) is finite the answer is exactly ln(−f'(0+)) (e.g. ln(1 − p + p e^μ) for
    C_p(Laplace μ) at δ = 0). Curves with a closed-form inverse (f_{ε,δ}, G_μ, Laplace,
    C_p(f)) use it for every δ, with no root finding.

    Parameters
    ----------
    f : TradeoffFunction or callable
        Trade-off function.
    delta : float
        δ ∈ [0, 1].

    Returns
    -------
    float
        ε ∈ [0, ∞].

    Raises
    ------
    ValueError
        If δ ∉ [0, 1] or f is not a trade-off function; or, for a curve without a closed-form
        inverse, if ε(δ) exceeds 700, beyond what the numerical conversion resolves.
    """
    delta = check_delta(delta)
    tf = as_tradeoff(f)
    closed = tf._epsilon(delta)
    if closed is not None:
        return float(closed)
    return _numeric_epsilon(tf, delta)


def _numeric_epsilon(tf: TradeoffFunction, delta: float) -> float:
    """ε(δ) by root finding on δ(ε), for curves without a closed-form inverse."""
    if delta_for_epsilon(tf, 0.0) <= delta:
        return 0.0
    c0 = float(tf._complement(np.asarray(0.0)))  # δ(ε) ≥ 1 − f(0) for every ε
    if delta < c0:
        return math.inf
    ls = tf._log_slope_at_zero()
    if delta == c0:
        return max(0.0, ls) if ls < math.inf else math.inf
    if delta < 1e-4:
        target = math.log(delta)

        def h(e: float) -> float:
            d = delta_for_epsilon(tf, e)
            return (math.log(d) if d > 0 else -1e300) - target
    else:

        def h(e: float) -> float:
            return delta_for_epsilon(tf, e) - delta

    if tf._slope_exact and ls < math.inf:
        hi = ls  # δ(ln(−f'(0+))) = 1 − f(0) < δ
    else:
        hi = 1.0
        while h(hi) > 0:
            if hi >= EPS_NUMERIC_MAX:
                raise ValueError(
                    f"delta must be at least the curve's delta(epsilon={EPS_NUMERIC_MAX:g}) "
                    f"for the numerical conversion of {tf!r} (it resolves alpha >= 1e-300 only), "
                    f"got delta={delta!r}"
                )
            hi = min(2.0 * hi, EPS_NUMERIC_MAX)
    return _smallest_root(h, hi)


def _smallest_root(h, hi: float) -> float:
    """The smallest ε ∈ (0, hi] with h(ε) ≤ 0, for h non-increasing with h(0) > 0 ≥ h(hi).

    brentq returns *a* zero; where h vanishes on a whole interval (δ(ε) = δ up to rounding) it
    may be the interval's far end, so an exact zero is followed by bisection to the first one.
    """
    r = hi
    if h(hi) != 0.0:
        r = float(brentq(h, 0.0, hi, xtol=1e-13, rtol=1e-15, maxiter=500))
        if h(r) != 0.0:
            return r
    lo = 0.0
    while r - lo > 1e-13 + 1e-15 * r:
        mid = 0.5 * (lo + r)
        if h(mid) <= 0.0:
            r = mid
        else:
            lo = mid
    return r


def min_error_sum(f) -> float:
    """min_α (α + f(α)) = 1 − δ(0): the smallest achievable sum of type I and type II errors.

    Parameters
    ----------
    f : TradeoffFunction or callable

    Returns
    -------
    float in [0, 1].

    Raises
    ------
    ValueError
        If f is not a trade-off function.
    """
    tf = as_tradeoff(f)
    closed = tf._min_error_sum()
    if closed is not None:
        return float(closed)
    return 1.0 - delta_for_epsilon(tf, 0.0)
