"""numba kernels: draw outputs of an output law, reduce them to a statistic, histogram.

Every kernel works block by block (see ``audit.simulation.rng`` for the stream scheme). One
trial consumes, from its block's xoshiro256** stream:

1. the location (the noise-free output), by the law's kind:
   - a mixture Σ_k w_k · Noise(s_k): one uniform u for the component through a Walker/Vose
     alias table (k = ⌊uK⌋, kept if the fractional part is below prob[k], else alias[k]);
   - a product law (``audit.laws.ProductMixture``): per coordinate, one uniform inverted
     through that coordinate's cumulative weights, then that coordinate's noise;
   - a subset law (``audit.laws.SubsetMixture``): one uniform for "observed" (u < p), then
     ``observed`` uniforms choosing the observed coordinates by a partial Fisher–Yates shuffle;
2. the noise, coordinate by coordinate: Laplace by inversion of one open uniform u,
   b·ln(2u) for u < 1/2 and −b·ln(2(1 − u)) otherwise; Gaussian by Box–Muller, one pair of
   uniforms giving two normals, the second kept for the next coordinate or the next trial of
   the same block (nothing is discarded).

The statistic of an output x is selected by the score's ``mode``: ``MODE_OUTPUT`` (x itself,
scalar outputs), ``MODE_LINEAR`` (w·x + c) or ``MODE_LLR`` (exact ln p(x) − ln q(x) of two
laws: log-sum-exp over components for a mixture, a sum of d one-dimensional log-sum-exps for a
product law, the elementary-symmetric recurrence for a subset law). Histogram bins follow
``audit.statistics``: ``numpy.searchsorted(binning_edges(edges), v, side="right")`` (ties with an
edge resolved upward, whatever the CPU) for numbers (0 is the
underflow bin, len(edges) the overflow bin) and one more bin, the last, for NaN; uniform edges
are located in O(1) and corrected against the edge array so the two paths agree exactly.

Kernel arguments are the small flat named tuples of :mod:`audit.simulation.packing` (re-exported
here); the log densities of the LLR are in :mod:`audit.simulation.densities`.

Scalar helpers (``_noise_value``, ``bin_index``) sit under the array kernels. A
block is drawn, projected and binned in batches of :data:`BATCH` outputs, so the projection
branches on its mode once per batch (``_project_rows``, also behind :func:`project`), and one
per-task body (``_hist_task``) serves the parallel (``prange``) and the serial loop.

Plain-numpy references: the laws' ``sample`` (same law, different stream) and ``logpdf``,
the projections' ``evaluate`` and ``audit.statistics.histogram``; the tests compare against
them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from audit.simulation.densities import log_law, scratch
from audit.simulation.jit import _jit
from audit.simulation.packing import (
    BATCH,
    LAW_CODES,
    LAW_MIXTURE,
    LAW_PRODUCT,
    MODE_CODES,
    MODE_LINEAR,
    MODE_OUTPUT,
    NOISE_CODES,
    NOISE_LAPLACE,
    Bins,
    Blocks,
    HistSpec,
    Law,
    Score,
    alias_table,
    bins_of,
    law_of,
    spec_of,
)
from audit.simulation.rng import _next_double, _next_open, _seed_state

__all__ = [
    "NOISE_CODES",
    "MODE_CODES",
    "LAW_CODES",
    "Law",
    "Score",
    "Bins",
    "HistSpec",
    "Blocks",
    "alias_table",
    "law_of",
    "spec_of",
    "bins_of",
    "bin_index",
    "hist_blocks",
    "sample_blocks",
    "project",
    "bin_indices",
]

# ----------------------------------------------------------------------- scalar helpers
@_jit(inline="always")
def _noise_value(state, laplace, scale, spare):
    """One draw of the noise. Laplace: inversion of one open uniform. Gaussian: Box–Muller,
    whose second normal ``spare`` = [flag, value] keeps for the next call of the block."""
    if laplace:
        # b·ln(2v) for v < 1/2, −b·ln(2(1 − v)) otherwise, without a branch on v (a coin
        # flip the processor cannot predict): the same two values, bit for bit.
        v = _next_open(state)
        m = min(v, 1.0 - v)
        sign = 1.0 if v < 0.5 else -1.0
        return (sign * scale) * math.log(2.0 * m)
    if spare[0] != 0.0:
        spare[0] = 0.0
        return scale * spare[1]
    r = math.sqrt(-2.0 * math.log(_next_open(state)))
    th = 2.0 * math.pi * _next_double(state)
    spare[1] = r * math.sin(th)
    spare[0] = 1.0
    return scale * (r * math.cos(th))


@_jit()
def _draw_rows(state, law, x, first, end, spare, perm):
    """Draw outputs of ``law`` into rows [first, end) of ``x``.

    The law's kind is branched on once per call, so each loop body is specialised to one way
    of locating an output (and reads the law's arrays from locals, not through the tuple).
    """
    laplace = law.noise == NOISE_LAPLACE
    scale = law.scale
    shifts = law.shifts
    D = law.dim
    if law.kind == LAW_MIXTURE:
        prob = law.prob
        alias = law.alias
        K = prob.shape[0]
        for row in range(first, end):
            u = _next_double(state) * K
            i = int(u)
            if i >= K:
                i = K - 1
            k = i if (u - i) < prob[i] else alias[i]
            for j in range(D):
                x[row, j] = shifts[k, j] + _noise_value(state, laplace, scale, spare)
    elif law.kind == LAW_PRODUCT:
        cdf = law.cdf
        last = cdf.shape[1] - 1
        for row in range(first, end):
            for j in range(D):
                u = _next_double(state)
                k = 0
                while k < last and u >= cdf[j, k]:
                    k += 1
                x[row, j] = shifts[j, k] + _noise_value(state, laplace, scale, spare)
    else:
        for row in range(first, end):
            _locate_subset(state, law, x, row, perm)
            for j in range(D):
                x[row, j] = x[row, j] + _noise_value(state, laplace, scale, spare)


@_jit(inline="always")
def _locate_subset(state, law, x, row, perm):
    """Observed with probability p; then ``observed`` coordinates by a partial Fisher–Yates
    shuffle (perm[:observed]) carry their value, the others 0."""
    D = law.dim
    for j in range(D):
        x[row, j] = 0.0
    if _next_double(state) < law.p_obs:
        for j in range(D):
            perm[j] = j
        for i in range(law.observed):
            r = i + int(_next_double(state) * (D - i))
            if r >= D:
                r = D - 1
            t = perm[i]
            perm[i] = perm[r]
            perm[r] = t
            x[row, perm[i]] = law.shifts[0, perm[i]]


@_jit(inline="always")
def bin_index(v, bins):
    """``numpy.searchsorted(bins.edges, v, side='right')`` (O(1) for uniform edges), and
    len(edges) + 1, the NaN bin, for NaN."""
    edges = bins.edges
    nE = edges.shape[0]
    if v != v:
        return nE + 1
    if bins.uniform:
        t = (v - bins.lo) * bins.inv_width
        if t < 0.0:
            j = 0
        elif t >= nE:
            j = nE
        else:
            j = int(t) + 1
        while j > 0 and v < edges[j - 1]:
            j -= 1
        while j < nE and v >= edges[j]:
            j += 1
        return j
    a = 0
    b = nE
    while a < b:
        m = (a + b) >> 1
        if v >= edges[m]:
            a = m + 1
        else:
            b = m
    return a


@_jit()
def _block_len(b, trials, block_trials):
    rest = trials - b * block_trials
    return block_trials if rest > block_trials else rest


# ------------------------------------------------------------------------ array kernels
@_jit()
def _project_rows(x, m, score, lp, lq, buf, out):
    """The statistic of rows [0, m) of ``x`` into ``out``; ``buf`` holds the LLR laws'
    scratch (:attr:`Law.scratch`)."""
    if score.mode == MODE_OUTPUT:
        for i in range(m):
            out[i] = x[i, 0]
    elif score.mode == MODE_LINEAR:
        for i in range(m):
            v = score.offset
            for j in range(x.shape[1]):
                v += score.weights[j] * x[i, j]
            out[i] = v
    else:
        for i in range(m):
            out[i] = log_law(x[i], lp, buf) - log_law(x[i], lq, buf)


@_jit()
def _run_block(key, side, block, n, law, score, lp, lq, bins, counts):
    """Run ``n`` trials of block ``block`` of side ``side`` and add them to ``counts``."""
    state = np.empty(4, dtype=np.uint64)
    _seed_state(key, side, block, state)
    x = np.empty((BATCH, law.dim), dtype=np.float64)
    v = np.empty(BATCH, dtype=np.float64)
    buf = np.empty(scratch(lp, lq), dtype=np.float64)
    spare = np.zeros(2)
    perm = np.empty(law.dim, dtype=np.int64)
    done = 0
    while done < n:
        m = min(BATCH, n - done)
        _draw_rows(state, law, x, 0, m, spare, perm)
        _project_rows(x, m, score, lp, lq, buf, v)
        for i in range(m):
            counts[bin_index(v[i], bins)] += 1
        done += m


@_jit(inline="always")
def _hist_task(t, blocks, p, q, score, lp, lq, bins, out):
    """Task t of a chunk: side t // nb, block first + t % nb, counted into row t of ``out``."""
    nb = blocks.end - blocks.first
    side = t // nb
    b = blocks.first + t % nb
    n = _block_len(b, blocks.trials, blocks.block_trials)
    _run_block(blocks.key, side, b, n, p if side == 0 else q, score, lp, lq, bins, out[t])


@_jit(parallel=True)
def _hist_parallel(blocks, p, q, score, lp, lq, bins, out):
    for t in numba.prange(2 * (blocks.end - blocks.first)):
        _hist_task(t, blocks, p, q, score, lp, lq, bins, out)


@_jit()
def _hist_serial(blocks, p, q, score, lp, lq, bins, out):
    for t in range(2 * (blocks.end - blocks.first)):
        _hist_task(t, blocks, p, q, score, lp, lq, bins, out)


def hist_blocks(blocks: Blocks, spec: HistSpec, *, parallel: bool = True) -> np.ndarray:
    """Histogram counts of blocks [blocks.first, blocks.end) of both sides.

    Returns an int64 array of shape (2, end − first, len(edges) + 2): the counts of each side
    and block, so a caller can sum any run of consecutive blocks. ``parallel`` runs the tasks
    over numba threads (``prange``), else serially in the calling thread (the GIL is released
    either way). Inputs are assumed validated (see ``audit.simulation.engine``).
    """
    nb = int(blocks.end) - int(blocks.first)
    out = np.zeros((2 * nb, spec.bins.edges.shape[0] + 2), dtype=np.int64)
    (_hist_parallel if parallel else _hist_serial)(blocks, *spec, out)  # nb = 0: compiles only
    return out.reshape(2, nb, out.shape[1])


@_jit()
def _sample_blocks(blocks, side, law, out):
    state = np.empty(4, dtype=np.uint64)
    spare = np.zeros(2)
    perm = np.empty(law.dim, dtype=np.int64)
    row = 0
    for b in range(blocks.first, blocks.end):
        _seed_state(blocks.key, side, b, state)
        spare[0] = 0.0  # a block's stream starts afresh: no normal carried in
        n = _block_len(b, blocks.trials, blocks.block_trials)
        _draw_rows(state, law, out, row, row + n, spare, perm)
        row += n


def sample_blocks(blocks: Blocks, side: int, law: Law) -> np.ndarray:
    """Raw outputs of blocks [blocks.first, blocks.end) of one side: array (rows, dim)."""
    bt, trials = int(blocks.block_trials), int(blocks.trials)
    n = sum(min(bt, trials - b * bt) for b in range(int(blocks.first), int(blocks.end)))
    out = np.empty((n, law.dim), dtype=np.float64)
    _sample_blocks(blocks, np.int64(side), law, out)
    return out


def project(x: np.ndarray, spec: HistSpec) -> np.ndarray:
    """The statistic of each output (rows of ``x``, or scalars), exactly as the kernels see it."""
    x = np.asarray(x, dtype=np.float64)
    x = np.ascontiguousarray(x.reshape(x.shape[0], -1))
    out = np.empty(x.shape[0], dtype=np.float64)
    buf = np.empty(max(spec.lp.scratch, spec.lq.scratch, 1), dtype=np.float64)
    _project_rows(x, x.shape[0], spec.score, spec.lp, spec.lq, buf, out)
    return out


@_jit()
def _bin_rows(v, bins, out):
    for i in range(v.shape[0]):
        out[i] = bin_index(v[i], bins)


def bin_indices(values: np.ndarray, bins: Bins) -> np.ndarray:
    """The kernels' bin index of each value (int64), as ``numpy.searchsorted(..., 'right')``."""
    v = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    out = np.empty(v.shape[0], dtype=np.int64)
    _bin_rows(v, bins, out)
    return out
