"""f-DP toolkit: trade-off functions, the subsampling operator C_p, and conversions ([DRS]).

A trade-off function f : [0, 1] → [0, 1] is convex, continuous, non-increasing and
f(α) ≤ 1 − α ([DRS] Def. 2.1, Prop. 2.2). This module provides

- the classical curves: ``DPTradeoff`` (f_{ε,δ}, [DRS] Eq. 5), ``GaussianTradeoff`` (G_μ,
  [DRS] Def. 2.7) and ``LaplaceTradeoff`` (shift of a Laplace law, THEORY §6);
- ``SubsampledTradeoff``: the subsampling operator C_p(f) of [DRS] Section 4.1 computed
  *numerically*, as the greatest convex minorant of min{f_p, f_p⁻¹} (f_p = p f + (1 − p) Id),
  with no use of the closed forms, so that those can be checked against it;
- the closed forms ``SubsampledDPTradeoff`` ([DRS] Corollary 4.3, with the factor (1 − δ)) and
  ``subsampled_closed_form`` ([DRS] Eq. 14);
- ``PiecewiseLinearTradeoff`` (empirical or pair curves) and ``CallableTradeoff`` (any callable);
- conversions ``delta_for_epsilon`` / ``epsilon_for_delta`` ([DRS] Prop. 2.12, the primal-dual
  view δ(ε) = 1 + f*(−e^ε)) and ``min_error_sum``.

Numerics. G_μ and the Laplace curve are steep near α = 0, so nothing here interpolates a curve
linearly on a uniform grid (that overstates a convex curve: an invalid, too optimistic bound).
Every class also computes the complement 1 − f(α) without cancellation (``_complement``), which
keeps δ(ε) accurate when it is small and C_p(f)(α) accurate for α close to 1.

References
----------
[DRS] J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS-B 84(1), 2022.
Balle, Wang. Improving the Gaussian mechanism for differential privacy. ICML 2018.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable

import numpy as np
from scipy import optimize, special

from audit._validate import (
    check_delta,
    check_epsilon,
    check_in_range,
    check_probability,
)

__all__ = [
    "TradeoffFunction",
    "IdentityTradeoff",
    "DPTradeoff",
    "GaussianTradeoff",
    "LaplaceTradeoff",
    "SubsampledTradeoff",
    "SubsampledDPTradeoff",
    "PiecewiseLinearTradeoff",
    "CallableTradeoff",
    "subsampled_closed_form",
    "amplify_tradeoff",
    "delta_for_epsilon",
    "epsilon_for_delta",
    "min_error_sum",
    "tradeoff_dp",
    "tradeoff_gaussian",
    "tradeoff_laplace",
]

# Tolerance of the numerical symmetry / shape checks of generic curves.
_SYMMETRY_TOL = 1e-6
_SHAPE_TOL = 1e-9


def _check_alpha_array(alpha: object, name: str = "alpha") -> tuple[np.ndarray, bool]:
    """Validate α (scalar or array) in [0, 1]; return (float array, was_scalar)."""
    if np.ndim(alpha) == 0:
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        a = check_in_range(name, alpha, 0.0, 1.0)
        return np.asarray(a, dtype=np.float64), True
    try:
        arr = np.asarray(alpha, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be real numbers in [0, 1], got {name}={alpha!r}") from None
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # also catches NaN
    if np.any(bad):
        first = arr[bad].reshape(-1)[0]
        raise ValueError(f"{name} must be in [0, 1], got {name}={first!r} (and possibly others)")
    return arr, False


def _bisect_increasing(
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


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull (Andrew's monotone chain) of points sorted by (x, y)."""
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


class TradeoffFunction(abc.ABC):
    """A trade-off function f : [0, 1] → [0, 1] ([DRS] Definition 2.1).

    Subclasses implement ``_eval`` on float arrays in [0, 1]; they may override
    ``_complement`` (1 − f(α) without cancellation), ``_log_slope_at_zero`` (ln(−f'(0+))),
    ``_kinks``, ``_fixed_point`` and the closed-form conversions ``_delta`` / ``_epsilon``.
    """

    #: whether ``_log_slope_at_zero`` is exact (False: a finite-difference estimate)
    _slope_exact: bool = True

    # ------------------------------------------------------------------ interface
    @abc.abstractmethod
    def _eval(self, alpha: np.ndarray) -> np.ndarray:
        """f(α) on a validated float array."""

    @property
    @abc.abstractmethod
    def symmetric(self) -> bool:
        """True when f = f⁻¹ ([DRS] Section 2.2), the case of every neighbouring relation
        that is itself symmetric."""

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return self.name

    def __call__(self, alpha):
        """Evaluate f.

        Parameters
        ----------
        alpha : float or array_like
            Type I error(s) in [0, 1].

        Returns
        -------
        float or ndarray
            f(α): a float for a scalar input, else an array of the same shape.

        Raises
        ------
        ValueError
            If any α is outside [0, 1] or not a number.
        """
        a, scalar = _check_alpha_array(alpha)
        out = np.clip(self._eval(a), 0.0, 1.0)
        return float(out) if scalar else out

    def complement(self, alpha):
        """1 − f(α), computed without cancellation where the subclass knows how."""
        a, scalar = _check_alpha_array(alpha)
        out = np.clip(self._complement(a), 0.0, 1.0)
        return float(out) if scalar else out

    def inverse(self, beta):
        """f⁻¹(β) = inf{α ∈ [0, 1] : f(α) ≤ β} ([DRS] Eq. 6).

        Equal to f itself for symmetric f; otherwise computed by vectorised bisection in a
        variable that is logarithmic near α = 0 and near α = 1.

        Parameters
        ----------
        beta : float or array_like
            Type II error(s) in [0, 1].

        Returns
        -------
        float or ndarray
            Same shape convention as ``__call__``.
        """
        b, scalar = _check_alpha_array(beta, "beta")
        out = self._eval(b) if self.symmetric else self._bisect_inverse(b)
        out = np.clip(out, 0.0, 1.0)
        return float(out) if scalar else out

    # ----------------------------------------------------------- overridable
    def _complement(self, alpha: np.ndarray) -> np.ndarray:
        return 1.0 - self._eval(alpha)

    def _log_slope_at_zero(self) -> float:
        """ln(−f'(0+)), the right-hand slope at 0 (−inf when f'(0+) = 0, inf when unbounded).

        Default: finite differences of the complement at h = 1e-8 and 1e-10 (convexity makes
        them non-decreasing as h ↓ 0); a growth of more than 1e-6 (relative) reads as an
        unbounded slope. Subclasses with a closed form override this and set ``_slope_exact``.
        """
        c0 = float(self._complement(np.asarray(0.0)))
        h = np.array([1e-8, 1e-10])
        s = (self._complement(h) - c0) / h
        if s[1] <= 0:
            return -math.inf
        if s[1] > s[0] * (1.0 + 1e-6) + 1e-6:
            return math.inf
        return math.log(s[1])

    def _kinks(self) -> tuple[float, ...]:
        """Points in (0, 1) where f may fail to be differentiable (used as grid points)."""
        return ()

    def _fixed_point(self) -> float:
        """x* with f(x*) = x* (exists and is unique in [0, 1/2] for a trade-off function)."""

        def g(x: float) -> float:
            return float(self._eval(np.asarray(x))) - x

        if g(0.0) <= 0.0:
            return 0.0
        return float(optimize.brentq(g, 0.0, 1.0, xtol=1e-300, rtol=1e-15, maxiter=500))

    def _breakpoints(self) -> np.ndarray | None:
        """For a piecewise-linear f: every vertex (exact δ(ε) by enumeration), else None."""
        return None

    def _delta(self, epsilon: float) -> float | None:
        """Closed-form δ(ε), or None to use the numerical conversion."""
        return None

    def _epsilon(self, delta: float) -> float | None:
        """Closed-form ε(δ) for δ(0) > δ > 1 − f(0), or None to use root finding."""
        return None

    def _min_error_sum(self) -> float | None:
        return None

    # ---------------------------------------------------------------- helpers
    def _bisect_inverse(self, beta: np.ndarray) -> np.ndarray:
        """inf{α : f(α) ≤ β} by bisection in u, α(u) = e^u/2 (u ≤ 0), 1 − e^{−u}/2 (u > 0)."""
        beta = np.asarray(beta, dtype=np.float64)
        flat = beta.reshape(-1)

        def alpha_of(u: np.ndarray) -> np.ndarray:
            with np.errstate(over="ignore", under="ignore"):
                return np.where(u <= 0, 0.5 * np.exp(np.minimum(u, 0.0)),
                                1.0 - 0.5 * np.exp(-np.maximum(u, 0.0)))

        lo = np.full(flat.shape, -750.0)  # α = 0 after underflow
        hi = np.full(flat.shape, 40.0)  # α = 1 after rounding
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            ok = self._eval(alpha_of(mid)) <= flat
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
        out = alpha_of(hi)
        out = np.where(self._eval(np.zeros_like(flat)) <= flat, 0.0, out)
        return out.reshape(beta.shape)


# --------------------------------------------------------------------- classics
class IdentityTradeoff(TradeoffFunction):
    """Id(α) = 1 − α: perfect privacy ([DRS] Section 2.1)."""

    def _eval(self, alpha):
        return 1.0 - alpha

    def _complement(self, alpha):
        return np.asarray(alpha, dtype=np.float64).copy()

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return "Id"

    def _log_slope_at_zero(self):
        return 0.0

    def _fixed_point(self):
        return 0.5

    def _breakpoints(self):
        return np.array([0.0, 1.0])

    def _delta(self, epsilon):
        return 0.0

    def _min_error_sum(self):
        return 1.0


class DPTradeoff(TradeoffFunction):
    """f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)} ([DRS] Eq. 5, Prop. 2.5).

    Parameters
    ----------
    epsilon : float
        ε ∈ [0, ∞).
    delta : float
        δ ∈ [0, 1].

    Raises
    ------
    ValueError
        If ε < 0 or not finite, or δ ∉ [0, 1].
    """

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"DPTradeoff(epsilon={self.epsilon!r}, delta={self.delta!r})"

    def _eval(self, alpha):
        eps, d = self.epsilon, self.delta
        with np.errstate(divide="ignore", over="ignore"):
            # e^ε α in log space: fine for large ε, exactly 0 at α = 0
            first = (1.0 - d) - np.exp(eps + np.log(alpha))
        second = math.exp(-eps) * ((1.0 - d) - alpha)
        return np.maximum(0.0, np.maximum(first, second))

    def _complement(self, alpha):
        eps, d = self.epsilon, self.delta
        with np.errstate(divide="ignore", over="ignore"):
            first = d + np.exp(eps + np.log(alpha))
        # 1 − e^{−ε}(1 − δ − α) written without cancellation at ε = 0
        second = -math.expm1(-eps) + math.exp(-eps) * (d + alpha)
        return np.minimum(1.0, np.minimum(first, second))

    def _log_slope_at_zero(self):
        return -math.inf if self.delta == 1.0 else self.epsilon

    def _kinks(self):
        d = self.delta
        return ((1.0 - d) / (1.0 + math.exp(self.epsilon)), 1.0 - d)

    def _fixed_point(self):
        return (1.0 - self.delta) / (1.0 + math.exp(self.epsilon))

    def _breakpoints(self):
        return np.array([0.0, *self._kinks(), 1.0])

    def _delta(self, epsilon):
        # [DRS] Prop. 2.12 on f_{ε,δ}: δ(ε') = δ + (1 − δ)(e^ε − e^ε')/(1 + e^ε) for ε' < ε.
        if epsilon >= self.epsilon:
            return self.delta
        frac = -math.expm1(epsilon - self.epsilon) / (1.0 + math.exp(-self.epsilon))
        return self.delta + (1.0 - self.delta) * frac

    def _epsilon(self, delta):
        # invert the formula above for δ < δ_t < δ(0)
        d = self.delta
        frac = (delta - d) / (1.0 - d) * (1.0 + math.exp(-self.epsilon))
        return max(0.0, self.epsilon + math.log1p(-frac))

    def _min_error_sum(self):
        return 2.0 * (1.0 - self.delta) / (1.0 + math.exp(self.epsilon))


class GaussianTradeoff(TradeoffFunction):
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) ([DRS] Definition 2.7), the trade-off between N(0, 1) and
    N(μ, 1); μ = Δ/σ for the Gaussian mechanism.

    Evaluated as ndtr(isf(α) − μ) with isf(α) = −ndtri(α), which is accurate for α down to
    the smallest doubles and for α close to 1; the complement is ndtr(μ + ndtri(α)).

    Parameters
    ----------
    mu : float
        μ ∈ [0, ∞). μ = 0 gives Id.

    Raises
    ------
    ValueError
        If μ < 0 or not finite.
    """

    def __init__(self, mu: float) -> None:
        self.mu = check_in_range("mu", mu, 0.0, math.inf, hi_closed=False)

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"GaussianTradeoff(mu={self.mu!r})"

    def _eval(self, alpha):
        return special.ndtr(-special.ndtri(alpha) - self.mu)

    def _complement(self, alpha):
        return special.ndtr(special.ndtri(alpha) + self.mu)

    def _log_slope_at_zero(self):
        return 0.0 if self.mu == 0.0 else math.inf

    def _fixed_point(self):
        return float(special.ndtr(-self.mu / 2.0))

    def _delta(self, epsilon):
        return _gaussian_delta(epsilon, self.mu)

    def _epsilon(self, delta):
        mu = self.mu
        target = math.log(delta)

        def g(e: float) -> float:
            d = _gaussian_delta(e, mu)
            return (math.log(d) if d > 0 else -1e300) - target

        hi = 1.0
        while g(hi) > 0:
            hi *= 2.0
            if hi > 1e6:  # pragma: no cover - δ far below double precision
                return math.inf
        return float(optimize.brentq(g, 0.0, hi, xtol=1e-14, rtol=1e-15, maxiter=500))

    def _min_error_sum(self):
        return 2.0 * float(special.ndtr(-self.mu / 2.0))


def _gaussian_delta(epsilon: float, mu: float) -> float:
    """Balle–Wang (2018, Thm. 8) profile Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), in log space:
    δ = Φ(a) · (−expm1(ε + ln Φ(b) − ln Φ(a))), no cancellation when both terms are tiny."""
    if mu == 0.0:
        return 0.0
    la = special.log_ndtr(-epsilon / mu + mu / 2.0)
    lb = special.log_ndtr(-epsilon / mu - mu / 2.0)
    return max(0.0, math.exp(la) * -math.expm1(min(0.0, epsilon + lb - la)))


class LaplaceTradeoff(TradeoffFunction):
    """Trade-off between Lap(0, 1) and Lap(μ, 1) (THEORY §6; [DRS] Appendix A):

    1 − e^μ α for α < e^{−μ}/2;  e^{−μ}/(4α) for e^{−μ}/2 ≤ α ≤ 1/2;  e^{−μ}(1 − α) for α > 1/2.

    Parameters
    ----------
    mu : float
        μ = Δ/b ∈ [0, ∞). μ = 0 gives Id.

    Raises
    ------
    ValueError
        If μ < 0 or not finite.
    """

    def __init__(self, mu: float) -> None:
        self.mu = check_in_range("mu", mu, 0.0, math.inf, hi_closed=False)

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"LaplaceTradeoff(mu={self.mu!r})"

    def _pieces(self, alpha):
        mu = self.mu
        a1 = 0.5 * math.exp(-mu)
        with np.errstate(divide="ignore", over="ignore"):
            mid = 0.25 * math.exp(-mu) / alpha
        return alpha < a1, alpha <= 0.5, mid

    def _eval(self, alpha):
        mu = self.mu
        low, midmask, mid = self._pieces(alpha)
        with np.errstate(over="ignore", divide="ignore"):
            first = 1.0 - np.exp(mu + np.log(alpha))
        return np.where(low, first, np.where(midmask, mid, math.exp(-mu) * (1.0 - alpha)))

    def _complement(self, alpha):
        mu = self.mu
        low, midmask, mid = self._pieces(alpha)
        with np.errstate(over="ignore", divide="ignore"):
            first = np.exp(mu + np.log(alpha))
        last = -math.expm1(-mu) + math.exp(-mu) * alpha
        return np.where(low, first, np.where(midmask, 1.0 - mid, last))

    def _log_slope_at_zero(self):
        return self.mu

    def _kinks(self):
        return (0.5 * math.exp(-self.mu), 0.5)

    def _fixed_point(self):
        return 0.5 * math.exp(-self.mu / 2.0)

    def _delta(self, epsilon):
        # min over the middle piece of e^ε α + e^{−μ}/(4α) = e^{(ε−μ)/2}, valid for ε ≤ μ
        return -math.expm1((epsilon - self.mu) / 2.0) if epsilon < self.mu else 0.0

    def _epsilon(self, delta):
        return max(0.0, self.mu + 2.0 * math.log1p(-delta))

    def _min_error_sum(self):
        return math.exp(-self.mu / 2.0)


# ------------------------------------------------------------ generic curves
class PiecewiseLinearTradeoff(TradeoffFunction):
    """The piecewise-linear interpolation of points (α_i, β_i) (empirical or pair curves).

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
            idx = _lower_hull(a, b)
            a, b = a[idx], b[idx]
        if np.any(np.diff(a) <= 0):
            raise ValueError("alphas must be strictly increasing")
        if a[0] != 0.0 or a[-1] != 1.0:
            raise ValueError(
                f"alphas must start at 0 and end at 1, got alphas[0]={a[0]!r}, "
                f"alphas[-1]={a[-1]!r}"
            )
        if np.any(np.diff(b) > _SHAPE_TOL):
            raise ValueError("betas must be non-increasing")
        slopes = np.diff(b) / np.diff(a)
        if np.any(np.diff(slopes) < -_SHAPE_TOL * np.maximum(1.0, np.abs(slopes[1:]))):
            raise ValueError("the points (alphas, betas) must form a convex curve")
        self.alphas, self.betas = a, b
        self._slopes = slopes
        self._symmetric = _resolve_symmetry(self, symmetric)

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

    def _breakpoints(self):
        return self.alphas


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
        self._name = name or f"CallableTradeoff({getattr(func, '__name__', 'f')})"
        grid = _check_grid()
        vals = self._eval(grid)
        if not np.all((vals >= -_SHAPE_TOL) & (vals <= 1 + _SHAPE_TOL)):
            raise ValueError(f"f must take values in [0, 1], got f={func!r}")
        if np.any(np.diff(vals) > _SHAPE_TOL):
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
    return bool(np.max(diff) <= _SYMMETRY_TOL)


def _as_tradeoff(f: object, name: str = "f") -> TradeoffFunction:
    if isinstance(f, TradeoffFunction):
        return f
    if callable(f):
        return CallableTradeoff(f)
    raise ValueError(f"{name} must be a TradeoffFunction or a callable, got {name}={f!r}")


def _as_symmetric(f: object, name: str) -> TradeoffFunction:
    tf = _as_tradeoff(f, name)
    if not tf.symmetric:
        raise ValueError(
            f"{name} must be a symmetric trade-off function (f = f^-1, checked numerically "
            f"for callables) for the subsampling operator C_p, got {name}={tf!r}"
        )
    return tf


# ------------------------------------------------------------- subsampling
class SubsampledTradeoff(TradeoffFunction):
    """C_p(f), the greatest convex minorant of min{f_p, f_p⁻¹}, f_p = p f + (1 − p) Id,
    computed numerically ([DRS] Definition 4.1, Theorem 4.2).

    The graph of f_p⁻¹ is the mirror image of the graph of f_p, so C_p(f) is the lower convex
    hull of the points (a, f_p(a)) and (f_p(a), a) over a parameter grid dense near 0 and 1
    (log-spaced down to 1e-20 and to 1 − 1e-16, plus the kinks of f). Between two hull
    vertices that are consecutive samples of the same curve the curve itself is evaluated
    (f_p directly, f_p⁻¹ by bisection inside the bracket), never a chord; straight lines are used
    only on bridging segments between the two curves, whose end points are refined by local
    re-sampling (the 4 widest bridges, 5 rounds, ×16 each) until they sit within ~1e-9 of
    the tangency points.
    The result is an upper bound on the exact C_p(f) that exceeds it by at most about
    f''·(1e-9)² on bridges (smooth f) and by rounding error elsewhere.

    Parameters
    ----------
    base : TradeoffFunction or callable
        A symmetric trade-off function f (a callable is wrapped and checked numerically).
    p : float
        Sampling probability in [0, 1]. p = 1 gives f, p = 0 gives Id.

    Raises
    ------
    ValueError
        If p ∉ [0, 1] or ``base`` is not symmetric.
    """

    _ROUNDS = 5
    _REFINE = 33
    _MAX_BRIDGES = 4
    _MIN_WIDTH = 1e-12

    def __init__(self, base, p: float) -> None:
        self.p = check_probability(p, "p")
        self.base = _as_symmetric(base, "base")
        self._slope_exact = self.base._slope_exact
        if 0.0 < self.p < 1.0:
            self._build()

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"SubsampledTradeoff({self.base!r}, p={self.p!r})"

    # f_p and its complement 1 − f_p
    def _fp(self, a):
        return self.p * self.base._eval(a) + (1.0 - self.p) * (1.0 - a)

    def _cfp(self, a):
        return self.p * self.base._complement(a) + (1.0 - self.p) * a

    def _build(self) -> None:
        tiny = np.logspace(-20, math.log10(0.5), 300)
        params = np.concatenate(
            [[0.0, 1.0], tiny, 1.0 - np.logspace(-16, math.log10(0.5), 200),
             np.linspace(0.0, 1.0, 257),
             [k for k in self.base._kinks() if 0.0 < k < 1.0]]
        )
        params = np.unique(params)
        for rnd in range(self._ROUNDS + 1):
            hull = self._hull(params)
            if rnd == self._ROUNDS:
                break
            hx, hc, hidx = hull[0], hull[1], hull[2]
            bridge = np.flatnonzero((hc[:-1] != hc[1:]) & (hc[:-1] != 2) & (hc[1:] != 2))
            width = hx[bridge + 1] - hx[bridge]
            # the widest bridges only: when f_p ≈ f_p⁻¹ (p near 1) round-off creates many
            # ulp-wide ones whose chords cannot overstate the curve measurably
            bridge = bridge[width > self._MIN_WIDTH]
            bridge = bridge[np.argsort(hx[bridge + 1] - hx[bridge])[::-1][: self._MAX_BRIDGES]]
            new = []
            for k in bridge:
                for i in (hidx[k], hidx[k + 1]):
                    lo, hi = params[max(i - 1, 0)], params[min(i + 1, params.size - 1)]
                    new.append(np.linspace(lo, hi, self._REFINE))
            if not new:
                break
            params = np.unique(np.concatenate([params, *new]))
        self._params = params
        self._hx, self._hy, self._hc, self._hi = hull[0], hull[3], hull[1], hull[2]
        self._hcy = hull[4]  # 1 − y at the vertices, accurate near y = 1

    def _hull(self, params: np.ndarray):
        fp, cfp = self._fp(params), self._cfp(params)
        n = params.size
        # curve 0: (a, f_p(a)); curve 1: (f_p(a), a); label 2: the corner (1, 0), needed only
        # when f_p(0) < 1 (then f_p⁻¹ = 0 on [f_p(0), 1])
        corner = [1.0] if fp[0] < 1.0 else []
        m = len(corner)
        x = np.concatenate([params, fp, corner])
        y = np.concatenate([fp, params, [0.0] * m])
        cy = np.concatenate([cfp, 1.0 - params, [1.0] * m])
        curve = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64),
                                np.full(m, 2, np.int64)])
        index = np.concatenate([np.arange(n), np.arange(n), np.zeros(m, np.int64)])
        order = np.lexsort((y, x))
        h = order[_lower_hull(x[order], y[order])]
        return x[h], curve[h], index[h], y[h], cy[h]

    def _evaluate(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(C_p(f)(α), 1 − C_p(f)(α)) for 0 < p < 1."""
        shape = alpha.shape
        a = alpha.reshape(-1)
        hx, hy, hc, hcy = self._hx, self._hy, self._hc, self._hcy
        k = np.clip(np.searchsorted(hx, a, side="right") - 1, 0, hx.size - 2)
        x0, x1, y0, y1 = hx[k], hx[k + 1], hy[k], hy[k + 1]
        w = np.where(x1 > x0, (a - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0)
        val = y0 + w * (y1 - y0)
        comp = hcy[k] + w * (hcy[k + 1] - hcy[k])
        c0, c1 = hc[k], hc[k + 1]
        # Both curves are evaluated exactly (f_p directly, f_p⁻¹ by bisection) and the value
        # is min{f_p, f_p⁻¹} on edges between samples of one curve (that curve lies below its
        # chord) and min{chord, f_p, f_p⁻¹} on bridges. Every term is ≥ the exact minorant, so
        # the minimum only removes excess: where f_p ≈ f_p⁻¹ (p near 1) round-off makes the
        # hull hop between the curves, and one curve's samples can be sparser than the other's.
        fv, cv = self._fp(a), self._cfp(a)
        inv = self._fp_inverse(a, np.zeros_like(a), 1.0 - a)  # f_p ≤ Id ⇒ f_p⁻¹(t) ≤ 1 − t
        same = (c0 == c1) & (c0 != 2)
        val = np.where(same, np.inf, val)
        comp = np.where(same, -np.inf, comp)
        # ties within round-off go to the curve whose complement is accurate there: f_p for
        # α < 1/2 (1 − f_p⁻¹(α) ≈ 1 − (a number near 1) would lose all relative precision)
        low = a < 0.5
        sel_a = fv - np.where(low, 4e-16, 0.0)
        sel_b = inv - np.where(low, 0.0, 4e-16)
        use_a = (sel_a <= val) & (sel_a <= sel_b)
        use_b = ~use_a & (sel_b <= val)
        val = np.where(use_a, fv, np.where(use_b, inv, val))
        comp = np.where(use_a, cv, np.where(use_b, 1.0 - inv, comp))
        return val.reshape(shape), comp.reshape(shape)

    def _fp_inverse(self, t, lo, hi):
        """f_p⁻¹(t) with the root bracketed in [lo, hi]; via 1 − f_p(a) = 1 − t for t ≥ 1/2
        (exact subtraction), which keeps tiny roots accurate near t = 1. Targets t ≥ f_p(0)
        converge to ~1e-300 (f_p⁻¹ = 0 there)."""
        t = np.asarray(t, dtype=np.float64)
        big = t >= 0.5
        out = np.empty_like(t)
        if np.any(big):
            out[big] = _bisect_increasing(self._cfp, 1.0 - t[big], lo[big], hi[big])
        if np.any(~big):
            out[~big] = _bisect_increasing(lambda a: -self._fp(a), -t[~big], lo[~big], hi[~big])
        return out

    def _eval(self, alpha):
        if self.p == 1.0:
            return self.base._eval(alpha)
        if self.p == 0.0:
            return 1.0 - alpha
        return self._evaluate(alpha)[0]

    def _complement(self, alpha):
        if self.p == 1.0:
            return self.base._complement(alpha)
        if self.p == 0.0:
            return np.asarray(alpha, dtype=np.float64).copy()
        return self._evaluate(alpha)[1]

    def _log_slope_at_zero(self):
        ls = self.base._log_slope_at_zero()
        if self.p == 0.0:
            return 0.0
        if self.p == 1.0:
            return ls
        if self._hc[0] == 0 and self._hc[1] == 0:  # C_p = f_p near 0
            return math.log1p(self.p * math.expm1(ls)) if ls < math.inf else math.inf
        s = -(self._hy[1] - self._hy[0]) / (self._hx[1] - self._hx[0])
        return math.log(s) if s > 0 else -math.inf

    def _kinks(self):
        return self.base._kinks()


class SubsampledDPTradeoff(TradeoffFunction):
    """C_p(f_{ε,δ}) in closed form ([DRS] Corollary 4.3):

    max{ f_{ε',δ'}(α), 1 − pδ − p(1 − δ)(e^ε − 1)/(e^ε + 1) − α },
    ε' = ln(1 − p + p e^ε), δ' = pδ.

    The factor (1 − δ) in the middle line comes from the fixed point x* = (1 − δ)/(1 + e^ε)
    of f_{ε,δ}; the seed note omits it, which gives a valid but weaker curve (THEORY §6).

    Parameters
    ----------
    epsilon : float
        ε ∈ [0, ∞).
    delta : float
        δ ∈ [0, 1].
    p : float
        Sampling probability in [0, 1].

    Raises
    ------
    ValueError
        On ε < 0, δ ∉ [0, 1] or p ∉ [0, 1].
    """

    def __init__(self, epsilon: float, delta: float, p: float) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.p = check_probability(p, "p")
        self.epsilon_prime = math.log1p(self.p * math.expm1(self.epsilon))
        self.delta_prime = self.p * self.delta
        self._outer = DPTradeoff(self.epsilon_prime, self.delta_prime)
        # 1 − c, with c the intercept of the middle line
        self._one_minus_c = self.delta_prime + self.p * (1.0 - self.delta) * math.tanh(
            self.epsilon / 2.0
        )

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return (
            f"SubsampledDPTradeoff(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"p={self.p!r})"
        )

    def _eval(self, alpha):
        return np.maximum(self._outer._eval(alpha), (1.0 - self._one_minus_c) - alpha)

    def _complement(self, alpha):
        return np.minimum(self._outer._complement(alpha), self._one_minus_c + alpha)

    def _log_slope_at_zero(self):
        return self._outer._log_slope_at_zero()

    def _kinks(self):
        return self._outer._kinks()

    def _fixed_point(self):
        return 0.5 * (1.0 - self._one_minus_c)

    def _breakpoints(self):
        d1, e1 = self.delta_prime, math.exp(self.epsilon_prime)
        c = 1.0 - self._one_minus_c
        cands = [0.0, 1.0, *self._outer._kinks(), c]
        if e1 > 1.0:
            cands.append((1.0 - d1 - c) / (e1 - 1.0))
            cands.append((c - (1.0 - d1) / e1) / (1.0 - 1.0 / e1))
        return np.clip(np.asarray(cands), 0.0, 1.0)

    def _min_error_sum(self):
        return max(1.0 - self._one_minus_c, self._outer._min_error_sum())


class _Eq14Tradeoff(TradeoffFunction):
    """C_p(f) by [DRS] Eq. 14 (f symmetric, x* = f(x*)):
    f_p on [0, x*]; x* + f_p(x*) − α on [x*, f_p(x*)]; f_p⁻¹ on [f_p(x*), 1]."""

    def __init__(self, base: TradeoffFunction, p: float) -> None:
        self.base, self.p = base, p
        self._slope_exact = base._slope_exact
        self.x_star = base._fixed_point()
        self.fp_x_star = float(self._fp(np.asarray(self.x_star)))

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"subsampled_closed_form({self.base!r}, p={self.p!r})"

    def _fp(self, a):
        return self.p * self.base._eval(a) + (1.0 - self.p) * (1.0 - a)

    def _cfp(self, a):
        return self.p * self.base._complement(a) + (1.0 - self.p) * a

    def _both(self, alpha):
        a = np.asarray(alpha, dtype=np.float64).reshape(-1)
        xs, fx = self.x_star, self.fp_x_star
        val = np.empty_like(a)
        comp = np.empty_like(a)
        left, right = a <= xs, a >= fx
        midm = ~left & ~right
        val[left], comp[left] = self._fp(a[left]), self._cfp(a[left])
        val[midm] = xs + fx - a[midm]
        comp[midm] = (1.0 - xs - fx) + a[midm]
        if np.any(right):
            t = a[right]
            lo, hi = np.zeros_like(t), np.full_like(t, xs)
            big = t >= 0.5
            inv = np.empty_like(t)
            if np.any(big):
                inv[big] = _bisect_increasing(self._cfp, 1.0 - t[big], lo[big], hi[big])
            if np.any(~big):
                inv[~big] = _bisect_increasing(
                    lambda s: -self._fp(s), -t[~big], lo[~big], hi[~big]
                )
            inv = np.where(t >= float(self._fp(np.asarray(0.0))), 0.0, inv)
            val[right], comp[right] = inv, 1.0 - inv
        return val.reshape(np.shape(alpha)), comp.reshape(np.shape(alpha))

    def _eval(self, alpha):
        return self._both(alpha)[0]

    def _complement(self, alpha):
        return self._both(alpha)[1]

    def _log_slope_at_zero(self):
        ls = self.base._log_slope_at_zero()
        if self.x_star == 0.0:
            return 0.0
        return math.log1p(self.p * math.expm1(ls)) if ls < math.inf else math.inf

    def _fixed_point(self):
        return 0.5 * (self.x_star + self.fp_x_star)

    def _min_error_sum(self):
        # α + C_p(α) is minimal (constant) on the slope −1 segment
        return self.x_star + self.fp_x_star


def subsampled_closed_form(f, p: float) -> TradeoffFunction:
    """C_p(f) by the closed form [DRS] Eq. 14, for a symmetric trade-off function f.

    With x* the fixed point f(x*) = x* (closed form for the classical curves, else root
    finding): C_p(f)(α) = f_p(α) on [0, x*], x* + f_p(x*) − α on [x*, f_p(x*)], and
    f_p⁻¹(α) (bisection) on [f_p(x*), 1].

    Parameters
    ----------
    f : TradeoffFunction or callable
        Symmetric trade-off function.
    p : float
        Sampling probability in [0, 1].

    Returns
    -------
    TradeoffFunction

    Raises
    ------
    ValueError
        If p ∉ [0, 1] or f is not symmetric.
    """
    p = check_probability(p, "p")
    tf = _as_symmetric(f, "f")
    if p == 1.0:
        return tf
    if p == 0.0:
        return IdentityTradeoff()
    return _Eq14Tradeoff(tf, p)


def amplify_tradeoff(f, p: float) -> TradeoffFunction:
    """C_p(f) computed numerically: the f-DP guarantee of a subsampled f-DP mechanism
    ([DRS] Theorem 4.2) and, with p = p*, of A_D under MAR missingness (THEORY §7).

    Parameters
    ----------
    f : TradeoffFunction or callable
        Symmetric trade-off function of the base mechanism.
    p : float
        Sampling (observation) probability in [0, 1].

    Returns
    -------
    SubsampledTradeoff

    Raises
    ------
    ValueError
        If p ∉ [0, 1] or f is not symmetric.
    """
    p = check_probability(p, "p")
    return SubsampledTradeoff(_as_symmetric(f, "f"), p)


# ---------------------------------------------------------------- conversions
def _golden_max(func: Callable[[float], float], lo: float, hi: float) -> float:
    """Maximum of a unimodal function on [lo, hi] by golden-section search to the last bit
    (scipy's bounded Brent stops at a relative 1.5e-8 in x, too coarse at a kink)."""
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


def _numeric_delta(f: TradeoffFunction, epsilon: float) -> float:
    """max_α (1 − f(α) − e^ε α) for concave g(α) = 1 − f(α) − e^ε α: a scan on a grid that is
    log-spaced down to 1e-300, then bounded Brent in ln α around the best grid point."""
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
        best = max(best, _golden_max(lambda t: float(g(np.asarray(math.exp(t)))),
                                     math.log(lo), math.log(hi)))
    else:
        best = max(best, _golden_max(lambda t: float(g(np.asarray(t))), lo, hi))
    return min(1.0, max(0.0, best))


def delta_for_epsilon(f, epsilon: float) -> float:
    """δ(ε) = 1 − min_α (e^ε α + f(α)) = 1 + f*(−e^ε) ([DRS] Prop. 2.12).

    For symmetric f, f-DP ⇔ (ε, δ(ε))-DP for every ε ≥ 0; for any f, f-DP ⇒ (ε, δ(ε))-DP.
    Closed forms: f_{ε,δ}, Corollary 4.3 and piecewise-linear curves (vertex enumeration),
    G_μ (Balle–Wang, log-space form), Laplace (1 − e^{(ε−μ)/2} for ε < μ, else 0). Other curves:
    concave maximisation of 1 − f(α) − e^ε α (absolute accuracy ~1e-12), returning exactly
    1 − f(0) when the slope −f'(0+) ≤ e^ε is known exactly.

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
    tf = _as_tradeoff(f)
    closed = tf._delta(epsilon)
    if closed is not None:
        return min(1.0, max(0.0, float(closed)))
    bp = tf._breakpoints()
    if bp is not None:
        # convex piecewise-linear: the minimum of e^ε α + f(α) is at a vertex
        with np.errstate(over="ignore"):
            vals = tf._complement(bp) - np.exp(epsilon + np.log(np.maximum(bp, 1e-320)))
        vals = np.where(bp == 0.0, tf._complement(np.zeros_like(bp)), vals)
        return min(1.0, max(0.0, float(np.max(vals))))
    return _numeric_delta(tf, epsilon)


def epsilon_for_delta(f, delta: float) -> float:
    """The smallest ε ≥ 0 with δ(ε) ≤ δ (see ``delta_for_epsilon``).

    Returns 0 when δ(0) ≤ δ and ``math.inf`` when no ε works (δ < 1 − f(0), or δ = 1 − f(0)
    with an unbounded slope at 0, e.g. G_μ with δ = 0). When δ = 1 − f(0) and the slope
    −f'(0+) is finite the answer is exactly ln(−f'(0+)) (e.g. ln(1 − p + p e^μ) for
    C_p(Laplace μ) at δ = 0).

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
        If δ ∉ [0, 1] or f is not a trade-off function.
    """
    delta = check_delta(delta)
    tf = _as_tradeoff(f)
    if delta_for_epsilon(tf, 0.0) <= delta:
        return 0.0
    c0 = float(tf._complement(np.asarray(0.0)))  # δ(ε) ≥ 1 − f(0) for every ε
    if delta < c0:
        return math.inf
    ls = tf._log_slope_at_zero()
    if delta == c0:
        return max(0.0, ls) if ls < math.inf else math.inf
    closed = tf._epsilon(delta)
    if closed is not None:
        return float(closed)
    if delta < 1e-4:
        target = math.log(delta)

        def h(e: float) -> float:
            d = delta_for_epsilon(tf, e)
            return (math.log(d) if d > 0 else -1e300) - target
    else:

        def h(e: float) -> float:
            return delta_for_epsilon(tf, e) - delta

    if tf._slope_exact and ls < math.inf:
        hi = ls
    else:
        hi = 1.0
        while h(hi) > 0:
            hi *= 2.0
            if hi > 700.0:
                return math.inf
    return float(optimize.brentq(h, 0.0, hi, xtol=1e-13, rtol=1e-15, maxiter=500))


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
    tf = _as_tradeoff(f)
    closed = tf._min_error_sum()
    if closed is not None:
        return float(closed)
    return 1.0 - delta_for_epsilon(tf, 0.0)


# ---------------------------------------------------------------- aliases
def tradeoff_dp(epsilon: float, delta: float = 0.0) -> DPTradeoff:
    """f_{ε,δ} ([DRS] Eq. 5); see ``DPTradeoff``."""
    return DPTradeoff(epsilon, delta)


def tradeoff_gaussian(mu: float) -> GaussianTradeoff:
    """G_μ ([DRS] Definition 2.7); see ``GaussianTradeoff``."""
    return GaussianTradeoff(mu)


def tradeoff_laplace(mu: float) -> LaplaceTradeoff:
    """Laplace trade-off with shift μ = Δ/b; see ``LaplaceTradeoff``."""
    return LaplaceTradeoff(mu)
