"""numba kernels: draw outputs of a shifted-noise mixture, reduce them to a statistic, histogram.

Every kernel works block by block (see ``audit.simulation.rng`` for the stream scheme). One trial of a
mixture Σ_k w_k · Noise(s_k, scale) consumes, from its block's xoshiro256** stream:

1. one uniform u for the component, through a Walker/Vose alias table
   (k = ⌊uK⌋, kept if the fractional part is below prob[k], else alias[k]);
2. the noise, coordinate by coordinate: Laplace by inversion of one open uniform u,
   b·ln(2u) for u < 1/2 and −b·ln(2(1 − u)) otherwise; Gaussian by Box–Muller, one pair of
   uniforms per two coordinates (the spare of an odd last coordinate is discarded).

The statistic of an output x is selected by ``mode``: ``MODE_OUTPUT`` (x itself, scalar
outputs), ``MODE_LINEAR`` (w·x + c) or ``MODE_LLR`` (exact ln p(x) − ln q(x) of the two
mixtures, log-sum-exp over components). Histogram bins are ``numpy.searchsorted(edges, v,
side="right")``: 0 is the underflow bin (v < edges[0]), len(edges) the overflow bin
(v >= edges[-1]); uniform edges are located in O(1) and corrected against the edge array so
the two paths agree exactly.

Plain-numpy references: ``Mixture.sample`` (same law, different stream) and
``numpy.searchsorted``; the tests compare both.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from audit.simulation.rng import _jit, _next_double, _next_open, _seed_state

__all__ = [
    "MODE_OUTPUT",
    "MODE_LINEAR",
    "MODE_LLR",
    "NOISE_LAPLACE",
    "NOISE_GAUSSIAN",
    "alias_table",
    "hist_blocks",
    "sample_blocks",
    "bin_index",
]

MODE_OUTPUT = 0
MODE_LINEAR = 1
MODE_LLR = 2
NOISE_LAPLACE = 0
NOISE_GAUSSIAN = 1

_LOG_2PI = math.log(2.0 * math.pi)


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


@_jit(inline="always")
def _draw(state, prob, alias, shifts, noise, scale, x):
    """Draw one output of the mixture into ``x`` (length dim)."""
    K = prob.shape[0]
    D = x.shape[0]
    u = _next_double(state) * K
    i = int(u)
    if i >= K:
        i = K - 1
    k = i if (u - i) < prob[i] else alias[i]
    if noise == NOISE_LAPLACE:
        for j in range(D):
            v = _next_open(state)
            if v < 0.5:
                e = scale * math.log(2.0 * v)
            else:
                e = -scale * math.log(2.0 * (1.0 - v))
            x[j] = shifts[k, j] + e
    else:
        j = 0
        while j < D:
            u1 = _next_open(state)
            u2 = _next_double(state)
            r = scale * math.sqrt(-2.0 * math.log(u1))
            th = 2.0 * math.pi * u2
            x[j] = shifts[k, j] + r * math.cos(th)
            if j + 1 < D:
                x[j + 1] = shifts[k, j + 1] + r * math.sin(th)
            j += 2


@_jit(inline="always")
def _log_mixture(x, shifts, logw, scale, noise, buf):
    """ln Σ_k w_k φ(x − s_k) with the full normalising constants."""
    K = shifts.shape[0]
    D = x.shape[0]
    top = -np.inf
    for k in range(K):
        acc = 0.0
        if noise == NOISE_LAPLACE:
            for j in range(D):
                acc += abs(x[j] - shifts[k, j])
            acc = -acc / scale
        else:
            for j in range(D):
                d = x[j] - shifts[k, j]
                acc += d * d
            acc = -0.5 * acc / (scale * scale)
        acc += logw[k]
        buf[k] = acc
        if acc > top:
            top = acc
    s = 0.0
    for k in range(K):
        s += math.exp(buf[k] - top)
    if noise == NOISE_LAPLACE:
        const = -D * math.log(2.0 * scale)
    else:
        const = -D * (math.log(scale) + 0.5 * _LOG_2PI)
    return top + math.log(s) + const


@_jit(inline="always")
def bin_index(v, edges, uniform, lo, inv_width):
    """``numpy.searchsorted(edges, v, side='right')`` (O(1) for uniform edges).

    NaN goes to the overflow bin, as numpy sorts it (and never to a negative index).
    """
    nE = edges.shape[0]
    if v != v:
        return nE
    if uniform:
        t = (v - lo) * inv_width
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
def _run_block(key, side, block, n, prob, alias, shifts, scale, noise, mode, w, c,
               shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
               edges, uniform, lo, inv_width, counts):
    """Run ``n`` trials of block ``block`` of side ``side`` and add them to ``counts``."""
    state = np.empty(4, dtype=np.uint64)
    _seed_state(key, side, block, state)
    D = shifts.shape[1]
    x = np.empty(D, dtype=np.float64)
    buf = np.empty(max(shifts_p.shape[0], shifts_q.shape[0]), dtype=np.float64)
    for _ in range(n):
        _draw(state, prob, alias, shifts, noise, scale, x)
        if mode == MODE_OUTPUT:
            v = x[0]
        elif mode == MODE_LINEAR:
            v = c
            for j in range(D):
                v += w[j] * x[j]
        else:
            v = _log_mixture(x, shifts_p, logw_p, scale_p, noise, buf) - _log_mixture(
                x, shifts_q, logw_q, scale_q, noise, buf
            )
        counts[bin_index(v, edges, uniform, lo, inv_width)] += 1


@_jit()
def _block_len(b, trials, block_trials):
    rest = trials - b * block_trials
    return block_trials if rest > block_trials else rest


@_jit(parallel=True)
def _hist_blocks_parallel(key, b0, b1, trials, block_trials,
                          prob_p, alias_p, sp, sc_p, prob_q, alias_q, sq, sc_q, noise, mode, w, c,
                          shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
                          edges, uniform, lo, inv_width, out):
    nb = b1 - b0
    for t in numba.prange(2 * nb):
        side = t // nb
        b = b0 + t % nb
        n = _block_len(b, trials, block_trials)
        if side == 0:
            _run_block(key, side, b, n, prob_p, alias_p, sp, sc_p, noise, mode, w, c,
                       shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
                       edges, uniform, lo, inv_width, out[t])
        else:
            _run_block(key, side, b, n, prob_q, alias_q, sq, sc_q, noise, mode, w, c,
                       shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
                       edges, uniform, lo, inv_width, out[t])


@_jit()
def _hist_blocks_serial(key, b0, b1, trials, block_trials,
                        prob_p, alias_p, sp, sc_p, prob_q, alias_q, sq, sc_q, noise, mode, w, c,
                        shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
                        edges, uniform, lo, inv_width, out):
    nb = b1 - b0
    for t in range(2 * nb):
        side = t // nb
        b = b0 + t % nb
        n = _block_len(b, trials, block_trials)
        if side == 0:
            _run_block(key, side, b, n, prob_p, alias_p, sp, sc_p, noise, mode, w, c,
                       shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
                       edges, uniform, lo, inv_width, out[t])
        else:
            _run_block(key, side, b, n, prob_q, alias_q, sq, sc_q, noise, mode, w, c,
                       shifts_p, logw_p, scale_p, shifts_q, logw_q, scale_q,
                       edges, uniform, lo, inv_width, out[t])


def hist_blocks(key, b0, b1, trials, block_trials, kp, kq, lp, lq, noise, mode, w, c, edges,
                *, parallel=True):
    """Histogram counts of blocks [b0, b1) of both sides.

    ``kp``/``kq`` are ``(prob, alias, shifts, logw, scale)`` tuples of the two sampled
    mixtures, ``lp``/``lq`` those of the laws whose log-likelihood ratio ``MODE_LLR`` computes
    (float64/int64 C-contiguous arrays). Returns ``(counts_p, counts_q)``, int64 arrays of
    length len(edges) + 1. Inputs are assumed validated (see ``audit.simulation.engine``).
    """
    edges = np.ascontiguousarray(edges, dtype=np.float64)
    widths = np.diff(edges)
    uniform = bool(
        edges.shape[0] >= 2 and np.all(np.abs(widths - widths[0]) <= 1e-9 * abs(widths[0]))
    )
    lo = float(edges[0])
    inv_width = 1.0 / float(widths[0]) if uniform else 0.0
    nb = int(b1) - int(b0)
    out = np.zeros((2 * nb, edges.shape[0] + 1), dtype=np.int64)
    fn = _hist_blocks_parallel if parallel else _hist_blocks_serial
    fn(np.uint64(key), np.int64(b0), np.int64(b1), np.int64(trials), np.int64(block_trials),
       kp[0], kp[1], kp[2], float(kp[4]), kq[0], kq[1], kq[2], float(kq[4]),
       np.int64(noise), np.int64(mode), np.ascontiguousarray(w, dtype=np.float64), float(c),
       lp[2], lp[3], float(lp[4]), lq[2], lq[3], float(lq[4]),
       edges, uniform, lo, inv_width, out)
    return out[:nb].sum(axis=0), out[nb:].sum(axis=0)


@_jit()
def _sample_blocks(key, side, b0, b1, trials, block_trials, prob, alias, shifts, scale, noise,
                   out):
    D = shifts.shape[1]
    x = np.empty(D, dtype=np.float64)
    state = np.empty(4, dtype=np.uint64)
    row = 0
    for b in range(b0, b1):
        _seed_state(key, side, b, state)
        n = _block_len(b, trials, block_trials)
        for _ in range(n):
            _draw(state, prob, alias, shifts, noise, scale, x)
            for j in range(D):
                out[row, j] = x[j]
            row += 1


def sample_blocks(key, side, b0, b1, trials, block_trials, prob, alias, shifts, scale, noise):
    """Raw outputs of blocks [b0, b1) of one side: array (rows, dim)."""
    n = sum(min(block_trials, trials - b * block_trials) for b in range(int(b0), int(b1)))
    out = np.empty((n, shifts.shape[1]), dtype=np.float64)
    _sample_blocks(np.uint64(key), np.int64(side), np.int64(b0), np.int64(b1), np.int64(trials),
                   np.int64(block_trials), prob, alias, shifts, float(scale), np.int64(noise),
                   out)
    return out
