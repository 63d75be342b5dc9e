"""Exact privacy of one audited pair (P, Q) of scalar noise mixtures.

For a neighbouring pair (z, z') the output laws P = A_D(z) and Q = A_D(z') are explicit finite
mixtures (``audit.mixture.Mixture``) with the same noise kind and scale. This package computes
their hockey-stick divergence, privacy profile, ε(δ) and trade-off curve, each with a stated
bound on its numerical error (docs/THEORY.md §8: the ceiling ε_pair of every audit).

Method
------
The optimal set of D_{e^t}(P‖Q) = sup_S P(S) − e^t Q(S) is S* = {p > e^t q}. It is located as
an exact union of intervals, and its P- and Q-masses are summed from the mixtures' closed-form
CDF/SF component by component (upper tails via SF, so tiny masses keep their relative accuracy).

* Laplace (common scale b): between consecutive breakpoints (all shifts of both mixtures)
  p − e^t q = A e^{x/b} + C e^{−x/b}, which is constant-signed or strictly monotone, so each
  piece holds at most one root, found in closed form x = m + (b/2) ln(−C/A) (log space).
* Gaussian (common σ): the kernel is totally positive, so p − e^t q has at most as many sign
  changes as its signed coefficient sequence (w_k at s_k, −e^t w'_k at s'_k, sorted by shift)
  (Karlin, *Total Positivity*, 1968, Thm 3.1 of ch. 5). All roots lie in an explicit range (the
  top/bottom component dominates outside it). The log density ratio L = log p − log q − t is
  evaluated on a grid over that range; grid intervals are refined by bisection until either the
  number of sign changes found equals the bound (then every root is isolated: one brentq per
  sign-changing interval) or every interval is certified root-free by the Lipschitz bound
  |L'| ≤ max(|s^P_max − s^Q_min|, |s^Q_max − s^P_min|)/σ² or is shorter than the tolerance.
  Intervals still undecided are kept as an explicit uncertain set U whose mass enters the error.

Error statement
---------------
``PairValue(value, error)``: the exact quantity lies in [value − error, value + error]. The error
adds (i) for each root r, the mass P(B) + e^t Q(B) of a bracket B = [r − τ, r + τ] verified to
contain the root (τ ≈ 1e-13·scale), (ii) half the P-mass of the uncertain set U (zero when the
sign-change bound is met, the usual case), (iii) floating-point rounding of the mass sums
(8·u·(number of terms)·(P(S) + e^t Q(S)), u = 2^-53).
"""

from audit.theory.pair.curve import (
    PairTradeoffBounds,
    pair_tradeoff,
    pair_tradeoff_bounds,
    symmetric_pair_tradeoff,
)
from audit.theory.pair.epsilon import pair_epsilon
from audit.theory.pair.hockey import PairProfile, PairValue, hockey_stick, pair_delta, pair_profile
from audit.theory.pair.methods import PairMethod, pair_method

__all__ = [
    "PairValue",
    "PairProfile",
    "PairMethod",
    "pair_method",
    "PairTradeoffBounds",
    "hockey_stick",
    "pair_delta",
    "pair_epsilon",
    "pair_profile",
    "pair_tradeoff",
    "pair_tradeoff_bounds",
    "symmetric_pair_tradeoff",
]
