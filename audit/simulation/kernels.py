"""numba kernels: draw outputs of an output law, reduce them to a statistic, histogram.

Every kernel works block by block (see ``audit.simulation.rng`` for the stream scheme). One
trial consumes, from its block's xoshiro256** stream:

1. the location (the noise-free output), by the law's kind:
   - a mixture Σ_k w_k · Noise(s_k): one uniform u for the component through a Walker/Vose
     alias table (k = ⌊uK⌋, kept if the fractional part is below prob[k], else alias[k]);
   - a product law (``audit.laws.ProductMixture``): one uniform per coordinate, inverted
     through that coordinate's cumulative weights;
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
``audit.statistics``: ``numpy.searchsorted(edges, v, side="right")`` for numbers (0 is the
underflow bin, len(edges) the overflow bin) and one more bin, the last, for NaN; uniform edges
are located in O(1) and corrected against the edge array so the two paths agree exactly.

Kernel arguments are small flat named tuples (numba passes them by value):

- :class:`Blocks`: the stream key and the blocks [first, end) of ``trials`` per side;
- :class:`Law`: one output law (noise and kind codes and the arrays of every kind; a kind
  reads only its own), for each sampled side and for each law of an exact likelihood ratio;
- :class:`Score`: the projection (mode, linear weights and offset);
- :class:`Bins`: the edges and their O(1) lookup data.

:class:`HistSpec` bundles all but the blocks for Python callers.

Scalar helpers (``_draw``, ``_log_mixture``, ``bin_index``) sit under the array kernels. A
block is drawn, projected and binned in batches of :data:`BATCH` outputs, so the projection
branches on its mode once per batch (``_project_rows``, also behind :func:`project`), and one
per-task body (``_hist_task``) serves the parallel (``prange``) and the serial loop.

Plain-numpy references: the laws' ``sample`` (same law, different stream) and ``logpdf``,
the projections' ``evaluate`` and ``audit.statistics.histogram``; the tests compare against
them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from audit.enums import NoiseKind
from audit.laws import Law as OutputLaw
from audit.laws import ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.simulation.rng import _jit, _next_double, _next_open, _seed_state
from audit.statistics import ExactLLR, LinearProjection, OutputValue, Statistic, check_edges

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

_LOG_2PI = math.log(2.0 * math.pi)
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
        return self.shifts.shape[0] if self.kind == LAW_MIXTURE else self.observed + 1


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
    """The kernels' view of bin edges (checked: finite, strictly increasing, ≥ 2)."""
    edges = np.ascontiguousarray(check_edges(edges), dtype=np.float64)
    widths = np.diff(edges)
    uniform = bool(np.all(np.abs(widths - widths[0]) <= 1e-9 * abs(widths[0])))
    inv_width = 1.0 / float(widths[0]) if uniform else 0.0
    return Bins(edges, uniform, float(edges[0]), inv_width)


# ----------------------------------------------------------------------- scalar helpers
@_jit(inline="always")
def _locate(state, law, x, row, perm):
    """Draw the noise-free output of one trial into ``x[row]`` (by the law's kind)."""
    D = law.dim
    shifts = law.shifts
    if law.kind == LAW_MIXTURE:
        K = law.prob.shape[0]
        u = _next_double(state) * K
        i = int(u)
        if i >= K:
            i = K - 1
        k = i if (u - i) < law.prob[i] else law.alias[i]
        for j in range(D):
            x[row, j] = shifts[k, j]
    elif law.kind == LAW_PRODUCT:
        last = law.cdf.shape[1] - 1
        for j in range(D):
            u = _next_double(state)
            k = 0
            while k < last and u >= law.cdf[j, k]:
                k += 1
            x[row, j] = shifts[j, k]
    else:
        for j in range(D):
            x[row, j] = 0.0
        if _next_double(state) < law.p_obs:
            for j in range(D):
                perm[j] = j
            for i in range(law.observed):  # partial Fisher–Yates: perm[:observed] observed
                r = i + int(_next_double(state) * (D - i))
                if r >= D:
                    r = D - 1
                t = perm[i]
                perm[i] = perm[r]
                perm[r] = t
                x[row, perm[i]] = shifts[0, perm[i]]


@_jit(inline="always")
def _add_noise(state, law, x, row, spare):
    """Add i.i.d. noise to every coordinate of ``x[row]``. Gaussian normals come in pairs
    (Box–Muller); ``spare`` = [flag, value] carries the second to the next coordinate or
    trial of the block."""
    scale = law.scale
    if law.noise == NOISE_LAPLACE:
        for j in range(law.dim):
            v = _next_open(state)
            if v < 0.5:
                e = scale * math.log(2.0 * v)
            else:
                e = -scale * math.log(2.0 * (1.0 - v))
            x[row, j] = x[row, j] + e
    else:
        for j in range(law.dim):
            if spare[0] != 0.0:
                z = spare[1]
                spare[0] = 0.0
            else:
                r = math.sqrt(-2.0 * math.log(_next_open(state)))
                th = 2.0 * math.pi * _next_double(state)
                z = r * math.cos(th)
                spare[1] = r * math.sin(th)
                spare[0] = 1.0
            x[row, j] = x[row, j] + scale * z


@_jit(inline="always")
def _draw(state, law, x, row, spare, perm):
    """Draw one output of ``law`` into ``x[row]`` (length dim)."""
    _locate(state, law, x, row, perm)
    _add_noise(state, law, x, row, spare)


@_jit(inline="always")
def _kernel_log(t, laplace, scale):
    """ln of the noise density at t, up to its normalising constant."""
    if laplace:
        return -abs(t) / scale
    return -0.5 * t * t / (scale * scale)


@_jit(inline="always")
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    m = a if a > b else b
    return m + math.log1p(math.exp(-abs(a - b)))


@_jit(inline="always")
def _log_mixture(x, law, buf):
    """ln Σ_k w_k φ(x − s_k) with the full normalising constants."""
    shifts = law.shifts
    scale = law.scale
    laplace = law.noise == NOISE_LAPLACE
    K = shifts.shape[0]
    D = x.shape[0]
    top = -np.inf
    for k in range(K):
        acc = 0.0
        if laplace:
            for j in range(D):
                acc += abs(x[j] - shifts[k, j])
            acc = -acc / scale
        else:
            for j in range(D):
                d = x[j] - shifts[k, j]
                acc += d * d
            acc = -0.5 * acc / (scale * scale)
        acc += law.logw[k]
        buf[k] = acc
        if acc > top:
            top = acc
    s = 0.0
    for k in range(K):
        s += math.exp(buf[k] - top)
    return top + math.log(s)


@_jit(inline="always")
def _log_product(x, law):
    """Σ_j ln Σ_k w_jk φ(x_j − s_jk), normalising constants left out."""
    laplace = law.noise == NOISE_LAPLACE
    K = law.shifts.shape[1]
    total = 0.0
    for j in range(law.dim):
        top = -np.inf
        for k in range(K):
            a = law.logw2[j, k] + _kernel_log(x[j] - law.shifts[j, k], laplace, law.scale)
            if a > top:
                top = a
        s = 0.0
        for k in range(K):
            s += math.exp(law.logw2[j, k]
                          + _kernel_log(x[j] - law.shifts[j, k], laplace, law.scale) - top)
        total += top + math.log(s)
    return total


@_jit(inline="always")
def _log_subset(x, law, buf):
    """ln Π_j φ(x_j) + ln[(1 − p) + p e_k(r)/C(d, k)], r_j = φ(x_j − v_j)/φ(x_j), constants
    left out; e_k by the recurrence e_m ← e_m + r_j e_{m−1} in log space (``buf``: k + 1)."""
    laplace = law.noise == NOISE_LAPLACE
    k = law.observed
    buf[0] = 0.0
    for m in range(1, k + 1):
        buf[m] = -np.inf
    base = 0.0
    for j in range(law.dim):
        b = _kernel_log(x[j], laplace, law.scale)
        lr = _kernel_log(x[j] - law.shifts[0, j], laplace, law.scale) - b
        base += b
        for m in range(min(j + 1, k), 0, -1):
            buf[m] = _logaddexp(buf[m], buf[m - 1] + lr)
    return base + _logaddexp(law.log_off, law.log_on + buf[k])


@_jit(inline="always")
def _log_law(x, law, buf):
    """ln of the law's density at x (full normalising constants)."""
    D = x.shape[0]
    if law.noise == NOISE_LAPLACE:
        const = -D * math.log(2.0 * law.scale)
    else:
        const = -D * (math.log(law.scale) + 0.5 * _LOG_2PI)
    if law.kind == LAW_MIXTURE:
        return _log_mixture(x, law, buf) + const
    if law.kind == LAW_PRODUCT:
        return _log_product(x, law) + const
    return _log_subset(x, law, buf) + const


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


@_jit(inline="always")
def _scratch(lp, lq):
    a = lp.shifts.shape[0] if lp.kind == LAW_MIXTURE else lp.observed + 1
    b = lq.shifts.shape[0] if lq.kind == LAW_MIXTURE else lq.observed + 1
    return max(a, b, 1)


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
            out[i] = _log_law(x[i], lp, buf) - _log_law(x[i], lq, buf)


@_jit()
def _run_block(key, side, block, n, law, score, lp, lq, bins, counts):
    """Run ``n`` trials of block ``block`` of side ``side`` and add them to ``counts``."""
    state = np.empty(4, dtype=np.uint64)
    _seed_state(key, side, block, state)
    x = np.empty((BATCH, law.dim), dtype=np.float64)
    v = np.empty(BATCH, dtype=np.float64)
    buf = np.empty(_scratch(lp, lq), dtype=np.float64)
    spare = np.zeros(2)
    perm = np.empty(law.dim, dtype=np.int64)
    done = 0
    while done < n:
        m = min(BATCH, n - done)
        for i in range(m):
            _draw(state, law, x, i, spare, perm)
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
        for _ in range(_block_len(b, blocks.trials, blocks.block_trials)):
            _draw(state, law, out, row, spare, perm)
            row += 1


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
