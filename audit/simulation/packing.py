"""The kernels' view of a run: integer codes and small flat tuples, packed from the laws.

numba kernels branch on integers and read arrays: this module is the one place that turns
the shared vocabulary (``audit.enums.NoiseKind``, the output laws of ``audit.mixture`` and
``audit.laws``, the projections of ``audit.statistics``) into them:

- :data:`NOISE_CODES`, :data:`MODE_CODES`, :data:`LAW_CODES`: the one integer encoding;
- :class:`Law`: one output law (noise and kind codes and the arrays of every kind; a kind
  reads only its own), for each sampled side and for each law of an exact likelihood ratio;
- :class:`Score`: the projection (mode, linear weights and offset);
- :class:`Bins`: the edges and their O(1) lookup data;
- :class:`Blocks`: the stream key and the blocks [first, end) of ``trials`` per side;
- :class:`HistSpec`: all but the blocks, for Python callers.

The tuples are flat and passed separately: a ``prange`` body cannot capture a tuple that holds
tuples (numba issue #10139).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from audit.enums import NoiseKind
from audit.laws import Law as OutputLaw
from audit.laws import ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.statistics import (
    ExactLLR,
    LinearProjection,
    OutputValue,
    Statistic,
    binning_edges,
    check_edges,
)

__all__ = [
    "NOISE_CODES",
    "MODE_CODES",
    "LAW_CODES",
    "NOISE_LAPLACE",
    "MODE_OUTPUT",
    "MODE_LINEAR",
    "LAW_MIXTURE",
    "LAW_PRODUCT",
    "BATCH",
    "Law",
    "Score",
    "Bins",
    "HistSpec",
    "Blocks",
    "alias_table",
    "law_of",
    "spec_of",
    "bins_of",
]

#: The one integer encoding of what the kernels branch on. Listed here rather than taken from
#: the enum's declaration order: numba's on-disk cache freezes these globals into the compiled
#: kernels and is invalidated only when this file changes.
NOISE_CODES: dict[NoiseKind, int] = {NoiseKind.LAPLACE: 0, NoiseKind.GAUSSIAN: 1}
MODE_CODES: dict[type, int] = {OutputValue: 0, LinearProjection: 1, ExactLLR: 2}
LAW_CODES: dict[type, int] = {Mixture: 0, ProductMixture: 1, SubsetMixture: 2}

NOISE_LAPLACE = NOISE_CODES[NoiseKind.LAPLACE]
MODE_OUTPUT = MODE_CODES[OutputValue]
MODE_LINEAR = MODE_CODES[LinearProjection]
LAW_MIXTURE = LAW_CODES[Mixture]
LAW_PRODUCT = LAW_CODES[ProductMixture]

#: Outputs a block draws before projecting and binning them. Projecting inside the draw loop
#: (a branch on the mode and the LLR laws' fields per output) ran at less than half the speed.
BATCH = 256


class Law(NamedTuple):
    """An output law as the kernels read it (one type for every kind, so one kernel).

    Mixture: ``prob``/``alias`` (alias table), ``shifts`` (K, dim), ``logw`` (K,). Product:
    ``shifts`` (dim, K) per-coordinate locations, ``cdf`` and ``logw2`` (dim, K) cumulative and
    log weights. Subset: ``shifts`` (1, dim) the observed values, ``observed`` k, ``p_obs``,
    ``log_off`` = ln(1 − p) and ``log_on`` = ln p − ln C(dim, k). Unused fields hold 1-element
    placeholders.
    """

    noise: int  # NOISE_CODES value
    kind: int  # LAW_CODES value
    dim: int
    prob: np.ndarray  # float64 (K,): alias-table acceptance probabilities
    alias: np.ndarray  # int64 (K,)
    shifts: np.ndarray  # float64, C-contiguous (layout by kind, above)
    logw: np.ndarray  # float64 (K,): ln w_k
    scale: float
    cdf: np.ndarray  # float64 (dim, K)
    logw2: np.ndarray  # float64 (dim, K)
    observed: int
    p_obs: float
    log_off: float
    log_on: float

    @property
    def scratch(self) -> int:
        """Floats one log-density evaluation of this law needs in its buffer."""
        if self.kind == LAW_MIXTURE:
            return self.shifts.shape[0]
        return self.dim + self.observed + 1


class Score(NamedTuple):
    """The projection of an output to one number (the LLR laws travel beside it)."""

    mode: int  # MODE_CODES value
    weights: np.ndarray  # float64 (dim,): w of MODE_LINEAR
    offset: float  # c of MODE_LINEAR


class Bins(NamedTuple):
    """Histogram edges and their O(1) lookup data (``uniform``: equally spaced edges)."""

    edges: np.ndarray  # float64, strictly increasing
    uniform: bool
    lo: float
    inv_width: float


class HistSpec(NamedTuple):
    """What a histogram kernel draws and counts: everything but the blocks.

    ``p``/``q`` are the sampled laws of side 0 (A_D(z)) and side 1 (A_D(z')); ``lp``/``lq``
    the numerator and denominator laws of ``MODE_LLR`` (read only in that mode). The kernels
    take these fields as separate arguments: a ``prange`` body cannot capture a tuple that
    holds tuples (numba issue #10139).
    """

    p: Law
    q: Law
    score: Score
    lp: Law
    lq: Law
    bins: Bins


class Blocks(NamedTuple):
    """Blocks [first, end) of a run of ``trials`` per side cut into ``block_trials`` blocks."""

    key: np.uint64
    first: int
    end: int
    trials: int
    block_trials: int


# ------------------------------------------------------------------ Python-side packing
def alias_table(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table for a probability vector (deterministic, plain numpy).

    Returns ``prob`` (float64, K) and ``alias`` (int64, K): component k is drawn as k with
    probability prob[k] and as alias[k] otherwise, after a uniform pick of the column k.
    """
    w = np.asarray(weights, dtype=np.float64)
    K = w.shape[0]
    scaled = w * (K / w.sum())
    prob = np.ones(K, dtype=np.float64)
    alias = np.arange(K, dtype=np.int64)
    small = [i for i in range(K) if scaled[i] < 1.0]
    large = [i for i in range(K) if scaled[i] >= 1.0]
    while small and large:
        s = small.pop()
        g = large.pop()
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = (scaled[g] + scaled[s]) - 1.0
        (small if scaled[g] < 1.0 else large).append(g)
    # Leftovers (rounding) keep prob 1 and alias themselves.
    return prob, alias


def law_of(M: OutputLaw) -> Law:
    """The kernels' view of an output law (``audit.mixture.Mixture`` or ``audit.laws``)."""
    one, one2 = np.zeros(1), np.zeros((1, 1))
    common = dict(noise=NOISE_CODES[M.noise], kind=LAW_CODES[type(M)], dim=M.dim,
                  scale=float(M.scale))
    if isinstance(M, Mixture):
        prob, alias = alias_table(M.weights)
        return Law(**common, prob=prob, alias=alias,
                   shifts=np.ascontiguousarray(M.shifts, dtype=np.float64),
                   logw=np.ascontiguousarray(np.log(M.weights)), cdf=one2, logw2=one2,
                   observed=0, p_obs=1.0, log_off=0.0, log_on=0.0)
    placeholders = dict(prob=one, alias=np.zeros(1, dtype=np.int64), logw=one)
    if isinstance(M, ProductMixture):
        cdf = np.cumsum(M.weights, axis=1)
        cdf[:, -1] = 1.0  # u < 1 always lands in a component of positive weight
        with np.errstate(divide="ignore"):
            logw2 = np.log(M.weights)
        return Law(**common, **placeholders, shifts=np.ascontiguousarray(M.shifts),
                   cdf=np.ascontiguousarray(cdf), logw2=np.ascontiguousarray(logw2),
                   observed=0, p_obs=1.0, log_off=0.0, log_on=0.0)
    log_comb = math.lgamma(M.dim + 1) - math.lgamma(M.observed + 1) \
        - math.lgamma(M.dim - M.observed + 1)
    with np.errstate(divide="ignore"):
        log_off = float(np.log1p(-M.p_observed))
        log_on = float(np.log(M.p_observed)) - log_comb
    return Law(**common, **placeholders, shifts=np.ascontiguousarray(M.values[None, :]),
               cdf=one2, logw2=one2, observed=int(M.observed), p_obs=float(M.p_observed),
               log_off=log_off, log_on=log_on)


def spec_of(P: OutputLaw, Q: OutputLaw, statistic: Statistic) -> HistSpec:
    """The kernels' view of a run: draws from P (side 0) and Q (side 1), counted by ``statistic``.

    Shapes are assumed checked (``audit.simulation.engine``). A non-LLR statistic carries P
    as its LLR laws: never read, but they keep one kernel type for every mode.
    """
    proj = statistic.projection
    p, q = law_of(P), law_of(Q)
    mode = MODE_CODES[type(proj)]
    lp = lq = p
    weights, offset = np.zeros(1), 0.0
    if isinstance(proj, ExactLLR):
        lp, lq = law_of(proj.P), law_of(proj.Q)
    elif isinstance(proj, LinearProjection):
        weights = np.ascontiguousarray(proj.weights, dtype=np.float64)
        offset = float(proj.offset)
    return HistSpec(p, q, Score(mode, weights, offset), lp, lq, bins_of(statistic.edges))


def bins_of(edges: np.ndarray) -> Bins:
    """The kernels' view of bin edges (checked: finite, strictly increasing, ≥ 2), moved down
    by their tie tolerance (``audit.statistics.binning_edges``) exactly as the numpy
    reference bins."""
    edges = np.ascontiguousarray(binning_edges(check_edges(edges)), dtype=np.float64)
    widths = np.diff(edges)
    uniform = bool(np.all(np.abs(widths - widths[0]) <= 1e-9 * abs(widths[0])))
    inv_width = 1.0 / float(widths[0]) if uniform else 0.0
    return Bins(edges, uniform, float(edges[0]), inv_width)
