"""The abstract trade-off function and the validation shared by every curve ([DRS] Def. 2.1).

A trade-off function f : [0, 1] → [0, 1] is convex, continuous, non-increasing and
f(α) ≤ 1 − α ([DRS] Def. 2.1, Prop. 2.2). Subclasses describe one curve each; the
conversions of :mod:`audit.theory.tradeoff.conversions` use the closed forms a subclass
provides (``_delta``, ``_epsilon``, ``_min_error_sum``) and fall back to numerics otherwise.
"""

from __future__ import annotations

import abc
import math

import numpy as np

from audit._numeric import brentq
from audit._validate import check_in_range

__all__ = ["TradeoffFunction"]

# Tolerance of the numerical symmetry / shape checks of generic curves.
SYMMETRY_TOL = 1e-6
SHAPE_TOL = 1e-9


def check_alpha_array(alpha: object, name: str = "alpha") -> tuple[np.ndarray, bool]:
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


class TradeoffFunction(abc.ABC):
    """A trade-off function f : [0, 1] → [0, 1] ([DRS] Definition 2.1).

    Subclasses implement ``_eval`` on float arrays in [0, 1]; they may override
    ``_complement`` (1 − f(α) without cancellation), ``_log_slope_at_zero`` (ln(−f'(0+))),
    ``_kinks``, ``_fixed_point`` and the closed-form conversions ``_delta`` / ``_epsilon`` /
    ``_min_error_sum``.
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
        a, scalar = check_alpha_array(alpha)
        out = np.clip(self._eval(a), 0.0, 1.0)
        return float(out) if scalar else out

    def complement(self, alpha):
        """1 − f(α), computed without cancellation where the subclass knows how."""
        a, scalar = check_alpha_array(alpha)
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
        b, scalar = check_alpha_array(beta, "beta")
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
        return float(brentq(g, 0.0, 1.0, xtol=1e-300, rtol=1e-15, maxiter=500))

    def _delta(self, epsilon: float) -> float | None:
        """Closed-form δ(ε) for ε ∈ [0, ∞), or None to use the numerical conversion."""
        return None

    def _epsilon(self, delta: float) -> float | None:
        """Closed-form smallest ε ≥ 0 with δ(ε) ≤ δ, for every δ ∈ [0, 1] (∞ where none
        exists), or None to use root finding."""
        return None

    def _min_error_sum(self) -> float | None:
        """Closed-form min_α (α + f(α)), or None to use 1 − δ(0)."""
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
