"""Generic trade-off curves: piecewise-linear (empirical or pair curves) and any callable.

Also the coercion used by every public function that accepts "a trade-off function":
a :class:`TradeoffFunction` passes through, a callable is wrapped in :class:`CallableTradeoff`.
"""

from __future__ import annotations

import math

import numpy as np

from audit._numeric import lower_convex_hull
from audit.theory.tradeoff.base import SHAPE_TOL, SYMMETRY_TOL, TradeoffFunction

__all__ = ["PiecewiseLinearTradeoff", "CallableTradeoff"]


class PiecewiseLinearTradeoff(TradeoffFunction):
    """The piecewise-linear interpolation of points (α_i, β_i) (empirical or pair curves).

    Its profile is exact: the minimum of e^ε α + f(α) over a convex piecewise-linear f is
    attained at a vertex ([DRS] Prop. 2.12 by enumeration).

    Parameters
    ----------
    alphas, betas : array_like, shape (k,), k ≥ 2
        Strictly increasing α_i in [0, 1] with α_0 = 0 and α_{k−1} = 1; β_i in [0, 1],
        non-increasing and convex (slopes non-decreasing, within 1e-9).
    symmetric : bool or None
        Declared symmetry; None checks f = f⁻¹ numerically (tolerance 1e-6 on a grid).
    convexify : bool
        Replace the points by their lower convex hull first (for noisy empirical points).

    Raises
    ------
    ValueError
        On bad shapes, values outside [0, 1], missing end points, or a curve that is not
        non-increasing and convex.
    """

    def __init__(self, alphas, betas, symmetric: bool | None = None, *, convexify=False):
        a = np.asarray(alphas, dtype=np.float64).reshape(-1)
        b = np.asarray(betas, dtype=np.float64).reshape(-1)
        if a.shape != b.shape or a.size < 2:
            raise ValueError(
                f"alphas and betas must have the same length >= 2, got {a.size} and {b.size}"
            )
        for name, v in (("alphas", a), ("betas", b)):
            if not np.all((v >= 0) & (v <= 1)):
                bad = v[~((v >= 0) & (v <= 1))][0]
                raise ValueError(f"{name} must be in [0, 1], got {name} containing {bad!r}")
        if convexify:
            order = np.lexsort((b, a))
            a, b = a[order], b[order]
            idx = lower_convex_hull(a, b)
            a, b = a[idx], b[idx]
        self._check_shape(a, b)
        self.alphas, self.betas = a, b
        self._slopes = np.diff(b) / np.diff(a)
        self._symmetric = _resolve_symmetry(self, symmetric)

    @staticmethod
    def _check_shape(a: np.ndarray, b: np.ndarray) -> None:
        if np.any(np.diff(a) <= 0):
            raise ValueError("alphas must be strictly increasing")
        if a[0] != 0.0 or a[-1] != 1.0:
            raise ValueError(
                f"alphas must start at 0 and end at 1, got alphas[0]={a[0]!r}, "
                f"alphas[-1]={a[-1]!r}"
            )
        if np.any(np.diff(b) > SHAPE_TOL):
            raise ValueError("betas must be non-increasing")
        slopes = np.diff(b) / np.diff(a)
        if np.any(np.diff(slopes) < -SHAPE_TOL * np.maximum(1.0, np.abs(slopes[1:]))):
            raise ValueError("the points (alphas, betas) must form a convex curve")

    @property
    def symmetric(self) -> bool:
        return self._symmetric

    @property
    def name(self) -> str:
        return f"PiecewiseLinearTradeoff(k={self.alphas.size})"

    def _eval(self, alpha):
        return np.interp(alpha, self.alphas, self.betas)

    def _log_slope_at_zero(self):
        s = -self._slopes[0]
        return math.log(s) if s > 0 else -math.inf

    def _kinks(self):
        return tuple(self.alphas[1:-1])

    def _delta(self, epsilon):
        # convex piecewise-linear: the minimum of e^ε α + f(α) is at a vertex
        bp = self.alphas
        with np.errstate(over="ignore"):
            vals = self._complement(bp) - np.exp(epsilon + np.log(np.maximum(bp, 1e-320)))
        vals = np.where(bp == 0.0, self._complement(np.zeros_like(bp)), vals)
        return float(np.max(vals))


class CallableTradeoff(TradeoffFunction):
    """Wrap a Python callable α ↦ f(α) as a ``TradeoffFunction`` (everything numerical).

    Parameters
    ----------
    func : callable
        Vectorised (ndarray → ndarray) or scalar function on [0, 1].
    symmetric : bool or None
        Declared symmetry; None checks f = f⁻¹ numerically on a grid.
    name : str, optional

    Raises
    ------
    ValueError
        If ``func`` is not callable, or its values on a test grid are outside [0, 1] or not
        non-increasing.
    """

    _slope_exact = False

    def __init__(self, func, symmetric: bool | None = None, name: str | None = None):
        if not callable(func):
            raise ValueError(f"f must be callable, got f={func!r}")
        self._func = func
        # a callable need not have a __name__ (functools.partial, callable objects)
        self._name = name or f"CallableTradeoff({getattr(func, '__name__', 'f')})"
        vals = self._eval(_check_grid())
        if not np.all((vals >= -SHAPE_TOL) & (vals <= 1 + SHAPE_TOL)):
            raise ValueError(f"f must take values in [0, 1], got f={func!r}")
        if np.any(np.diff(vals) > SHAPE_TOL):
            raise ValueError(f"f must be non-increasing, got f={func!r}")
        self._symmetric = _resolve_symmetry(self, symmetric)

    @property
    def symmetric(self) -> bool:
        return self._symmetric

    @property
    def name(self) -> str:
        return self._name

    def _eval(self, alpha):
        alpha = np.asarray(alpha, dtype=np.float64)
        try:
            out = np.asarray(self._func(alpha), dtype=np.float64)
            if out.shape != alpha.shape:
                raise TypeError
        except (TypeError, ValueError):
            out = np.vectorize(lambda t: float(self._func(float(t))), otypes=[float])(alpha)
        return out


def _check_grid() -> np.ndarray:
    return np.unique(
        np.concatenate([[0.0, 1.0], np.logspace(-12, -0.31, 60), np.linspace(0, 1, 201),
                        1.0 - np.logspace(-12, -0.31, 60)])
    )


def _resolve_symmetry(f: TradeoffFunction, declared: bool | None) -> bool:
    if declared is not None:
        return bool(declared)
    grid = _check_grid()
    diff = np.abs(f._eval(grid) - f._bisect_inverse(grid))
    return bool(np.max(diff) <= SYMMETRY_TOL)


def as_tradeoff(f: object, name: str = "f") -> TradeoffFunction:
    """``f`` as a TradeoffFunction (a callable is wrapped); ValueError naming ``name`` else."""
    if isinstance(f, TradeoffFunction):
        return f
    if callable(f):
        return CallableTradeoff(f)
    raise ValueError(f"{name} must be a TradeoffFunction or a callable, got {name}={f!r}")


def as_symmetric(f: object, name: str) -> TradeoffFunction:
    """``f`` as a symmetric TradeoffFunction; ValueError naming ``name`` if it is not."""
    tf = as_tradeoff(f, name)
    if not tf.symmetric:
        raise ValueError(
            f"{name} must be a symmetric trade-off function (f = f^-1, checked numerically "
            f"for callables) for the subsampling operator C_p, got {name}={tf!r}"
        )
    return tf
