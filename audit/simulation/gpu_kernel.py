"""The CUDA kernel of the ``cuda`` backend (imports numba.cuda: load through ``gpu``).

One CUDA thread per (side, block) task, one thread block per (chunk, side): see
:mod:`audit.simulation.gpu` for the design. The draw, projection and binning are the CPU
kernels' own numba helpers, compiled by numba-cuda as device functions from the same source.
"""

from __future__ import annotations

import numba
from numba import cuda

from audit.simulation.jit import _jit
from audit.simulation.kernels import _block_len, _draw_rows, _project_rows, bin_index
from audit.simulation.rng import _seed_state

__all__ = ["hist_kernel", "trial_bin"]


@_jit(inline="always")
def trial_bin(state, law, score, lp, lq, bins, x, spare, perm, buf, v):
    """One trial of a block: draw row 0 of ``x``, project it into v[0], return its bin.

    The CPU kernels draw, project and bin a batch of trials per step; one trial per step
    consumes the block's stream in the same order (each trial's uniforms follow the last's).
    """
    _draw_rows(state, law, x, 0, 1, spare, perm)
    _project_rows(x, 1, score, lp, lq, buf, v)
    return bin_index(v[0], bins)


@cuda.jit
def hist_kernel(key, first, end, chunk_blocks, trials, block_trials, p, q, score, lp, lq,
                bins, scratch, out, shared):
    """Thread block 2c + s counts side s of chunk c of the launch (blocks first + c·cb + t,
    t < cb, below ``end``) into ``out[c, s]``; thread t runs block t of it.

    ``scratch`` = (x, perm, buf, v): per-thread draw buffers, row = global thread index.
    ``shared``: count into a dynamic shared-memory histogram (len(edges) + 2 int64) and write
    it out once; else add into ``out`` with global atomics (``out`` zeroed by the caller).
    """
    hist = cuda.shared.array(0, dtype=numba.int64)
    tid = cuda.threadIdx.x
    c = cuda.blockIdx.x >> 1
    side = cuda.blockIdx.x & 1
    n_bins = out.shape[2]
    if shared:
        for i in range(tid, n_bins, cuda.blockDim.x):
            hist[i] = 0
        cuda.syncthreads()
    b = first + c * chunk_blocks + tid
    if tid < chunk_blocks and b < end:
        g = cuda.blockIdx.x * cuda.blockDim.x + tid
        xs, perms, bufs, vs = scratch
        state = cuda.local.array(4, dtype=numba.uint64)
        spare = cuda.local.array(2, dtype=numba.float64)
        _seed_state(key, side, b, state)
        spare[0] = 0.0  # a block's stream starts afresh: no normal carried in
        spare[1] = 0.0
        law = p if side == 0 else q
        for _ in range(_block_len(b, trials, block_trials)):
            j = trial_bin(state, law, score, lp, lq, bins, xs[g], spare, perms[g], bufs[g],
                          vs[g])
            if shared:
                cuda.atomic.add(hist, j, 1)
            else:
                cuda.atomic.add(out, (c, side, j), 1)
    if shared:
        cuda.syncthreads()
        for i in range(tid, n_bins, cuda.blockDim.x):
            out[c, side, i] = hist[i]
