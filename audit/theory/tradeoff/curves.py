"""The classical trade-off curves: Id, f_{ε,δ}, G_μ and the Laplace shift ([DRS] Section 2).

Their privacy profiles δ(ε) and inverses ε(δ) are the closed forms of
:mod:`audit.theory.profiles` (Gaussian, Laplace) or of [DRS] Prop. 2.12 applied to f_{ε,δ},
so a curve and the profile function of the same mechanism return the same number.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from audit._validate import check_delta, check_epsilon, check_in_range
from audit.theory.profiles import (
    dp_fixed_point,
    dp_min_error_sum,
    gaussian_delta,
    gaussian_epsilon,
    laplace_delta,
    laplace_epsilon,
)
from audit.theory.tradeoff.base import TradeoffFunction

__all__ = [
    "IdentityTradeoff",
    "DPTradeoff",
    "GaussianTradeoff",
    "LaplaceTradeoff",
    "tradeoff_dp",
    "tradeoff_gaussian",
    "tradeoff_laplace",
]

# e^{−μ} is a normal double for μ below this; above it the Laplace curve works in log space.
_MAX_NORMAL_EXP = 700.0
_LOG2, _LOG4 = math.log(2.0), math.log(4.0)


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

    def _delta(self, epsilon):
        return 0.0

    def _epsilon(self, delta):
        return 0.0

    def _min_error_sum(self):
        return 1.0


class _ShiftTradeoff(TradeoffFunction):
    """The trade-off between a noise law and its shift by μ ≥ 0, symmetric for the laws here
    (Gaussian, Laplace)."""

    def __init__(self, mu: float) -> None:
        self.mu = check_in_range("mu", mu, 0.0, math.inf, hi_closed=False)

    @property
    def symmetric(self) -> bool:
        return True

    @property
    def name(self) -> str:
        return f"{type(self).__name__}(mu={self.mu!r})"


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
        return (self._fixed_point(), 1.0 - self.delta)

    def _fixed_point(self):
        return dp_fixed_point(self.epsilon, self.delta)

    def _delta(self, epsilon):
        # [DRS] Prop. 2.12 on f_{ε,δ}: δ(ε') = δ + (1 − δ)(e^ε − e^ε')/(1 + e^ε) for ε' < ε.
        if epsilon >= self.epsilon:
            return self.delta
        frac = -math.expm1(epsilon - self.epsilon) / (1.0 + math.exp(-self.epsilon))
        return self.delta + (1.0 - self.delta) * frac

    def _epsilon(self, delta):
        eps, d = self.epsilon, self.delta
        if delta >= self._delta(0.0):
            return 0.0
        if delta < d:
            return math.inf  # δ(ε') ≥ δ for every ε'
        if delta == d:
            return eps
        # invert the formula of ``_delta`` for δ < δ_t < δ(0)
        frac = (delta - d) / (1.0 - d) * (1.0 + math.exp(-eps))
        return max(0.0, eps + math.log1p(-frac))

    def _min_error_sum(self):
        return dp_min_error_sum(self.epsilon, self.delta)


class GaussianTradeoff(_ShiftTradeoff):
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) ([DRS] Definition 2.7), the trade-off between N(0, 1) and
    N(μ, 1); μ = Δ/σ for the Gaussian mechanism.

    Evaluated as ndtr(isf(α) − μ) with isf(α) = −ndtri(α), which is accurate for α down to
    the smallest doubles and for α close to 1; the complement is ndtr(μ + ndtri(α)). The
    profile is :func:`audit.theory.profiles.gaussian_delta` and its inverse
    :func:`audit.theory.profiles.gaussian_epsilon` (Balle & Wang 2018, Thm 8).

    Parameters
    ----------
    mu : float
        μ ∈ [0, ∞). μ = 0 gives Id.

    Raises
    ------
    ValueError
        If μ < 0 or not finite.
    """

    def _eval(self, alpha):
        return special.ndtr(-special.ndtri(alpha) - self.mu)

    def _complement(self, alpha):
        return special.ndtr(special.ndtri(alpha) + self.mu)

    def _log_slope_at_zero(self):
        return 0.0 if self.mu == 0.0 else math.inf

    def _fixed_point(self):
        return float(special.ndtr(-self.mu / 2.0))

    def _delta(self, epsilon):
        return gaussian_delta(epsilon, self.mu)

    def _epsilon(self, delta):
        return gaussian_epsilon(delta, self.mu)

    def _min_error_sum(self):
        return 2.0 * float(special.ndtr(-self.mu / 2.0))


class LaplaceTradeoff(_ShiftTradeoff):
    """Trade-off between Lap(0, 1) and Lap(μ, 1) (docs/THEORY.md §6; [DRS] Appendix A):

    1 − e^μ α for α < e^{−μ}/2;  e^{−μ}/(4α) for e^{−μ}/2 ≤ α ≤ 1/2;  e^{−μ}(1 − α) for α > 1/2.

    For μ > 700, where e^{−μ} is no longer a normal double, the first two pieces are evaluated
    in log space (the curve is then 1 at α = 0 and below 1e-300 elsewhere). The profile is
    :func:`audit.theory.profiles.laplace_delta` and its inverse
    :func:`audit.theory.profiles.laplace_epsilon`.

    Parameters
    ----------
    mu : float
        μ = Δ/b ∈ [0, ∞). μ = 0 gives Id.

    Raises
    ------
    ValueError
        If μ < 0 or not finite.
    """

    def _pieces(self, alpha):
        """(α < e^{−μ}/2, α ≤ 1/2, e^{−μ}/(4α)): the piece masks and the middle piece."""
        mu = self.mu
        with np.errstate(divide="ignore", over="ignore"):
            if mu <= _MAX_NORMAL_EXP:  # the direct form is the most accurate
                low = alpha < 0.5 * math.exp(-mu)
                mid = 0.25 * math.exp(-mu) / alpha
            else:  # e^{−μ} underflows: compare and divide in log space
                log_alpha = np.log(alpha)
                low = log_alpha < -mu - _LOG2
                mid = np.exp(-mu - _LOG4 - log_alpha)
        return low, alpha <= 0.5, mid

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
        return laplace_delta(epsilon, self.mu)

    def _epsilon(self, delta):
        return laplace_epsilon(delta, self.mu)

    def _min_error_sum(self):
        return math.exp(-self.mu / 2.0)


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
