"""Ties resolved the same way on every CPU: bin edges and score rankings.

Two CPUs of different makes compute logarithms and exponentials with different vector code, so
a seeded run sees values that differ in their last bits. A value that equals a bin edge in
exact arithmetic, or two scores that are equal in exact arithmetic, would then be told apart
by those bits, and a count or a chosen region would depend on the CPU. The two rules here keep
the last bits out of every count and ranking: :func:`binning_edges` (a value within
:func:`tie_tolerance` below an edge is on it; the numpy reference
``audit.statistics.bin_indices`` and the kernels' ``audit.simulation.packing.bins_of`` both
bin against these edges) and :func:`quantise_scores` (bin scores and region-ranking keys
rounded to multiples of :data:`SCORE_QUANTUM` before any ranking).
"""

from __future__ import annotations

import numpy as np

__all__ = ["TIE_PRECISION", "SCORE_QUANTUM", "tie_tolerance", "binning_edges",
           "quantise_scores"]

#: Ties with an edge: a value less than ``TIE_PRECISION`` times the edges' magnitude below an
#: edge is binned as if it were on it (:func:`binning_edges`). A value that equals an edge in
#: exact arithmetic (a plateau of a Laplace log-likelihood ratio, LLR 0 of a symmetric pair)
#: is computed a few ulps either side of it, and which side depends on the CPU's vector math
#: (the kernels' logarithm, numpy's SIMD paths): without this rule one atom of the statistic
#: is split between two bins differently on Intel and AMD. 2^-30 ≈ 9.3e-10 is 10^6 times the
#: rounding error of a double and far below any bin width the pilots choose.
TIE_PRECISION = 2.0 ** -30
#: Bin scores are rounded to multiples of this (:func:`quantise_scores`), so that bins whose
#: scores are equal in exact arithmetic are equal in floating point, on every CPU, and a
#: region {score ≥ t} never splits them. A power of two (exact scaling); scores are log
#: ratios of order 1 to 10^2, so 2^-36 ≈ 1.5e-11 changes none of them by more than that.
SCORE_QUANTUM = 2.0 ** -36


def tie_tolerance(edges: np.ndarray) -> float:
    """How far below an edge a value still counts as on it: :data:`TIE_PRECISION` times the
    edges' largest magnitude, and at most 2^-20 of the narrowest bin (so the bins keep their
    order)."""
    e = np.asarray(edges, dtype=np.float64)
    scale = max(abs(float(e[0])), abs(float(e[-1])))
    return min(TIE_PRECISION * scale, 2.0 ** -20 * float(np.min(np.diff(e))))


def binning_edges(edges: np.ndarray) -> np.ndarray:
    """The edges values are compared with: ``edges`` moved down by :func:`tie_tolerance`, so a
    value a few ulps below an edge (an exact tie computed with rounding) lands in the bin the
    edge opens, whatever the CPU. The numpy reference (:func:`bin_indices`) and the kernels
    (``audit.simulation.packing.bins_of``) both bin against these."""
    e = np.asarray(edges, dtype=np.float64)
    return e - tie_tolerance(e)


def quantise_scores(scores: np.ndarray) -> np.ndarray:
    """Finite scores rounded to the nearest multiple of :data:`SCORE_QUANTUM` (infinite and
    NaN ones unchanged): equal-in-exact-arithmetic bins get equal scores on every CPU."""
    s = np.asarray(scores, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        q = np.round(s / SCORE_QUANTUM) * SCORE_QUANTUM
    return np.where(np.isfinite(s), q, s)
