"""f-DP toolkit: trade-off functions, the subsampling operator C_p, and conversions ([DRS]).

- :mod:`~audit.theory.tradeoff.base`: the abstract :class:`TradeoffFunction`;
- :mod:`~audit.theory.tradeoff.curves`: ``IdentityTradeoff``, ``DPTradeoff`` (f_{ε,δ},
  [DRS] Eq. 5), ``GaussianTradeoff`` (G_μ, [DRS] Def. 2.7), ``LaplaceTradeoff``
  (docs/THEORY.md §6);
- :mod:`~audit.theory.tradeoff.generic`: ``PiecewiseLinearTradeoff`` (empirical or pair
  curves) and ``CallableTradeoff`` (any callable);
- :mod:`~audit.theory.tradeoff.subsampling`: C_p(f) numerically (``SubsampledTradeoff``,
  ``amplify_tradeoff``) and in closed form (``SubsampledDPTradeoff``, [DRS] Corollary 4.3 with
  the factor (1 − δ); ``subsampled_closed_form``, [DRS] Eq. 14);
- :mod:`~audit.theory.tradeoff.conversions`: ``delta_for_epsilon`` / ``epsilon_for_delta``
  ([DRS] Prop. 2.12, δ(ε) = 1 + f*(−e^ε)) and ``min_error_sum``.

Numerics. G_μ and the Laplace curve are steep near α = 0, so nothing here interpolates a curve
linearly on a uniform grid (that overstates a convex curve: an invalid, too optimistic bound).
Every class also computes the complement 1 − f(α) without cancellation (``_complement``), which
keeps δ(ε) accurate when it is small and C_p(f)(α) accurate for α close to 1. Profiles of the
classical curves and of C_p(f) are closed forms evaluated in log space, valid for any ε.

References
----------
[DRS] J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS-B 84(1), 2022.
Balle, Wang. Improving the Gaussian mechanism for differential privacy. ICML 2018.
"""

from audit.theory.tradeoff.base import TradeoffFunction
from audit.theory.tradeoff.conversions import delta_for_epsilon, epsilon_for_delta, min_error_sum
from audit.theory.tradeoff.curves import (
    DPTradeoff,
    GaussianTradeoff,
    IdentityTradeoff,
    LaplaceTradeoff,
    tradeoff_dp,
    tradeoff_gaussian,
    tradeoff_laplace,
)
from audit.theory.tradeoff.generic import CallableTradeoff, PiecewiseLinearTradeoff
from audit.theory.tradeoff.subsampling import (
    SubsampledDPTradeoff,
    SubsampledTradeoff,
    amplify_tradeoff,
    subsampled_closed_form,
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
