"""CUDA backend of the Monte Carlo engine (numba-cuda, optional extra ``[cuda]``).

One source, two targets
-----------------------
The GPU runs the CPU kernels' own draw: the CUDA kernel (:mod:`.gpu_kernel`) calls their numba
helpers (``_seed_state``, ``_draw_rows``, ``_project_rows``, ``bin_index``,
``_block_len`` and, under them, the xoshiro256** step, the open/closed uniforms, the alias
table, the product and subset locations, Laplace inversion, Box–Muller and the log densities).
numba-cuda compiles a CPU ``@njit`` dispatcher called from a CUDA kernel as a device function
from the same Python source, so there is no second copy of the streams or of the draw to keep
in sync. What differs is only the per-trial loop of a task, written out in the kernel (the CPU
loop allocates with ``np.empty``, which a device function cannot): it seeds the task's stream,
starts the Box–Muller spare afresh and draws, projects and bins one trial at a time, which
consumes the stream in the same order as the CPU's batches of :data:`~.packing.BATCH` trials.

Thread mapping and reduction
----------------------------
One CUDA thread per (side, block) task: each runs its block's ``block_trials`` draws
sequentially from the block's own stream. One thread block per (chunk, side): its threads are
the blocks of that chunk (at most :data:`~.planning.MAX_CHUNK_BLOCKS`), they count into one
shared-memory histogram (``cuda.atomic.add`` on int64), and after a barrier the thread block
writes it to row (chunk, side) of the launch's output, which no other thread block touches.
Counts are integer sums, so they do not depend on the order of the atomic adds. When the
``len(edges) + 2`` counters do not fit in :data:`SHARED_BYTES` of shared memory the threads
add into the global row directly (global atomics; slower, same counts).

Exactness
---------
On numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``) the kernel runs as Python calling the
CPU-compiled helpers, and its counts equal the CPU backend's bit for bit (tested). On a GPU the
same source is compiled by NVVM: integer streams and uniforms are identical, but ``log``,
``sin``, ``cos``, ``exp`` come from libdevice (within 1–2 ulp of the CPU's libm) and NVVM fuses
multiply-adds, so a draw can differ from the CPU's in its last bits, which changes a count only
when the draw lies within a few ulp of a bin edge (or of an alias-table threshold). CUDA counts
are still a function of the inputs only (the launch layout never changes what a task draws).

Scratch
-------
A device function cannot allocate, so each thread's draw buffers (the output row, the subset
law's permutation, the log-density buffer, the statistic) are rows of arrays allocated per
launch; launches are sized so that these stay under :data:`SCRATCH_BYTES`.
"""

from __future__ import annotations

import importlib.util

import numba
import numpy as np

from audit.simulation.packing import MODE_LINEAR, MODE_OUTPUT, Blocks, HistSpec

__all__ = ["unavailable", "simulated", "hist_chunks", "on_device", "group_blocks",
           "SHARED_BYTES", "SCRATCH_BYTES", "OUT_BYTES", "uses_shared_memory",
           "kernel_signature"]

#: Shared memory a thread block's histogram may use (the default limit without opt-in).
SHARED_BYTES = 48 * 1024
#: Upper bound on the per-thread scratch arrays of one launch.
SCRATCH_BYTES = 256 << 20
#: Upper bound on the counts (chunks × 2 sides × bins, int64) one kernel call returns.
OUT_BYTES = 256 << 20
_WARP = 32


def unavailable() -> str | None:
    """Why ``backend="cuda"`` cannot run in this process (one line), or None if it can.

    numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1`` set before numba.cuda is first
    imported) counts as a device.
    """
    if importlib.util.find_spec("numba_cuda") is None:
        return ("backend='cuda' needs numba-cuda: install the [cuda] extra "
                "(pip install 'missingness-audit[cuda]')")
    try:
        from numba import cuda
    except ImportError as exc:  # e.g. the CUDA Python bindings are missing
        return f"backend='cuda' cannot import numba.cuda: {' '.join(str(exc).split())}"
    if cuda.is_available():
        return None
    return ("backend='cuda' found no CUDA device (no NVIDIA driver or GPU visible to this "
            "process); use the CPU backends, or NUMBA_ENABLE_CUDASIM=1 for numba-cuda's "
            "simulator")


def simulated() -> bool:
    """Whether numba.cuda is numba-cuda's simulator in this process."""
    from numba.cuda.core import config

    return bool(config.ENABLE_CUDASIM)


# ------------------------------------------------------------------------------ host side
def uses_shared_memory(n_bins: int) -> bool:
    """Whether a histogram of ``n_bins`` counters is reduced in shared memory."""
    return 8 * n_bins <= SHARED_BYTES


def _scratch_floats(spec: HistSpec) -> int:
    """Floats of log-density buffer a trial needs (only the exact LLR reads it)."""
    if spec.score.mode in (MODE_OUTPUT, MODE_LINEAR):
        return 1
    return max(spec.lp.scratch, spec.lq.scratch, 1)


def _scratch(n_threads: int, spec: HistSpec, alloc=np.empty):
    """Per-thread draw buffers: output row, permutation, log-density buffer, statistic."""
    dim = spec.p.dim
    s = _scratch_floats(spec)
    return (alloc((n_threads, 1, dim), dtype=np.float64),
            alloc((n_threads, dim), dtype=np.int64),
            alloc((n_threads, s), dtype=np.float64),
            alloc((n_threads, 1), dtype=np.float64))


def _threads_per_block(chunk_blocks: int) -> int:
    return -(-chunk_blocks // _WARP) * _WARP


def _chunks_per_launch(chunk_blocks: int, spec: HistSpec) -> int:
    dim = spec.p.dim
    per_thread = 8 * (2 * dim + _scratch_floats(spec) + 1)
    threads = max(1, SCRATCH_BYTES // per_thread)
    return max(1, threads // (2 * _threads_per_block(chunk_blocks)))


def group_blocks(requested: int, chunk_blocks: int, n_bins: int) -> int:
    """Blocks of one kernel call: ``requested``, fewer where the per-chunk counts it returns
    would pass :data:`OUT_BYTES` (very many bins); at least one chunk."""
    chunks = max(1, OUT_BYTES // (16 * n_bins))
    return max(chunk_blocks, min(requested, chunks * chunk_blocks))


def on_device(spec: HistSpec) -> HistSpec:
    """``spec`` with its arrays copied to the GPU once per run (unchanged in the simulator,
    whose kernel hands them to the CPU-compiled helpers)."""
    if simulated():
        return spec
    from numba import cuda

    def move(t):
        return type(t)(*(cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in t))

    return HistSpec(*(move(t) for t in spec))


def kernel_signature(spec: HistSpec, n_threads: int = 64):
    """The numba argument types of one launch for ``spec`` (for ahead-of-time compiles)."""
    key = np.uint64(0)
    scratch = _scratch(n_threads, spec)
    out = np.zeros((1, 2, spec.bins.edges.shape[0] + 2), dtype=np.int64)
    args = (key, 0, 1, 1, 1, 1, *spec, scratch, out, True)
    return tuple(numba.typeof(a) for a in args)


def hist_chunks(blocks: Blocks, chunk_blocks: int, spec: HistSpec) -> np.ndarray:
    """Counts of the chunks of blocks [blocks.first, blocks.end) cut every ``chunk_blocks``
    blocks from ``blocks.first``: int64 (n_chunks, 2, len(edges) + 2), run on the GPU.

    ``spec`` may hold device arrays (:func:`on_device`). The caller has checked that a device
    is present (:func:`unavailable`).
    """
    from numba import cuda

    from audit.simulation.gpu_kernel import hist_kernel

    first, end, cb = int(blocks.first), int(blocks.end), int(chunk_blocks)
    n_chunks = -(-(end - first) // cb)
    n_bins = spec.bins.edges.shape[0] + 2
    out = np.zeros((n_chunks, 2, n_bins), dtype=np.int64)
    if n_chunks == 0:
        return out
    tpb = _threads_per_block(cb)
    per_launch = _chunks_per_launch(cb, spec)
    shared = uses_shared_memory(n_bins)
    sim = simulated()
    scratch = _scratch(2 * tpb * min(per_launch, n_chunks), spec,
                       np.empty if sim else cuda.device_array)
    for c0 in range(0, n_chunks, per_launch):
        nc = min(per_launch, n_chunks - c0)
        b0 = first + c0 * cb
        b1 = min(b0 + nc * cb, end)
        d_out = np.zeros((nc, 2, n_bins), dtype=np.int64) if sim else \
            cuda.to_device(np.zeros((nc, 2, n_bins), dtype=np.int64))
        hist_kernel[2 * nc, tpb, 0, 8 * n_bins if shared else 0](
            np.uint64(blocks.key), b0, b1, cb, int(blocks.trials), int(blocks.block_trials),
            *spec, scratch, d_out, shared)
        out[c0:c0 + nc] = d_out if sim else d_out.copy_to_host()
    return out
