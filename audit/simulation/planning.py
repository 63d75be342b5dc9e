"""How a run is cut into chunks, and how many workers run them.

Chunks are the unit of checkpointing and of dispatch to joblib workers. Their boundaries are
a function of the number of blocks only (or of an explicit ``chunk_blocks``), never of the
workers, so a run resumed with another ``n_jobs`` or ``threads`` finds the chunk files of the
first (``audit.simulation.checkpoints``). A plan is index arithmetic, never a list: a run of
10^15 trials has 2.4·10^8 chunks and costs nothing to plan.

Short runs are cut into up to :data:`TARGET_CHUNKS` chunks, so that many workers stay busy
(joblib hands chunks to whichever worker is free); long runs use chunks of
:data:`MAX_CHUNK_BLOCKS` blocks, which bounds the memory of one kernel call. A run executed in
the calling process groups consecutive pending chunks into one kernel call of up to
:data:`MAX_CHUNK_BLOCKS` blocks, so its numba threads have as many tasks as before; the
``cuda`` backend groups up to :data:`CUDA_GROUP_BLOCKS` blocks into one GPU launch (always in
the calling process: ``n_jobs`` does not apply).

The workers are capped at the CPUs this process may use and at the number of chunks by the
one rule of :func:`audit.simulation.processes.cap_workers` (``n_jobs=1000`` never starts 1000
processes; −1 is every usable CPU). A cap is reported in the schedule's ``notes`` and, when
``n_jobs`` asked for more CPUs than there are, by one :class:`ResourceCapWarning`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from audit.enums import Backend
from audit.simulation.processes import (
    RegisteredBackend,
    ResourceCapWarning,
    always_sent,
    cap_workers,
    in_threads,
    usable_cpus,
)

__all__ = [
    "MAX_CHUNK_BLOCKS",
    "TARGET_CHUNKS",
    "CUDA_GROUP_BLOCKS",
    "ResourceCapWarning",
    "ChunkPlan",
    "Schedule",
    "usable_cpus",
    "make_schedule",
]

#: Upper bound on the blocks of one chunk and of one kernel call: bounds memory per call.
MAX_CHUNK_BLOCKS = 64
#: Short runs are cut into this many chunks (fewer if there are fewer blocks).
TARGET_CHUNKS = 64
#: Blocks of one kernel call of the ``cuda`` backend: 2^16 blocks, 2^17 GPU threads (one per
#: side and block), enough to keep a large GPU busy; chunks stay the unit of checkpoints.
CUDA_GROUP_BLOCKS = 1 << 16


@dataclass(frozen=True)
class ChunkPlan:
    """Blocks [0, n_blocks) cut into chunks of ``chunk_blocks`` (the last one may be shorter).

    Behaves as a read-only sequence of (first block, end block) pairs, computed on demand.
    """

    n_blocks: int
    chunk_blocks: int

    @classmethod
    def for_blocks(cls, n_blocks: int, chunk_blocks: int | None = None) -> ChunkPlan:
        """The plan of ``n_blocks``; ``chunk_blocks`` None picks the default below."""
        if chunk_blocks is None:
            chunk_blocks = min(MAX_CHUNK_BLOCKS, max(1, math.ceil(n_blocks / TARGET_CHUNKS)))
        return cls(int(n_blocks), int(chunk_blocks))

    def __len__(self) -> int:
        return -(-self.n_blocks // self.chunk_blocks)

    def __getitem__(self, i: int) -> tuple[int, int]:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"chunk index {i} out of range for {n} chunks")
        b0 = i * self.chunk_blocks
        return b0, min(b0 + self.chunk_blocks, self.n_blocks)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for i in range(len(self)):
            yield self[i]


@dataclass(frozen=True)
class Schedule:
    """Where and how the chunks of a plan run.

    ``workers``: joblib workers (−1: all of a dask client's or a registered backend's); 1
    with a local backend runs the chunks in the calling process (dask and a joblib backend
    registered by name are always sent the chunks). ``threads``: numba threads per kernel call
    (None: numba's current setting). ``parallel_kernel``: whether kernel calls use numba's
    ``prange`` (the threading backend, and a registered one running in threads, run serial,
    GIL-free kernels; the cuda backend ignores it).
    ``group_blocks``: consecutive pending chunks run as one kernel call of up to this many
    blocks. ``notes``: what was capped, for the caller to print.
    """

    plan: ChunkPlan
    backend: Backend | RegisteredBackend
    workers: int
    threads: int | None
    parallel_kernel: bool
    group_blocks: int
    notes: tuple[str, ...] = ()

    @property
    def in_process(self) -> bool:
        return self.workers == 1 and not always_sent(self.backend)


def make_schedule(n_blocks: int, *, n_jobs: int, threads: int | None,
                  backend: Backend | RegisteredBackend,
                  chunk_blocks: int | None = None) -> Schedule:
    """The plan and execution of a run (inputs already validated by the engine).

    Warns :class:`ResourceCapWarning` when ``n_jobs`` exceeds :func:`usable_cpus` with a
    local backend (pointing at the caller of the engine function that called this one).
    """
    plan = ChunkPlan.for_blocks(n_blocks, chunk_blocks)
    cap = cap_workers(n_jobs, name="n_jobs", n_chunks=len(plan), backend=backend)
    cap.warn(stacklevel=3)
    workers, notes = cap.workers, cap.notes
    if backend is Backend.CUDA:
        # One GPU launch runs many chunks; numba threads play no part.
        return Schedule(plan, backend, 1, None, False, CUDA_GROUP_BLOCKS, notes)
    parallel_kernel = not in_threads(backend)
    local = workers == 1 and not always_sent(backend)
    if threads is None and not local:
        threads = 1  # one numba thread per worker: the workers are the parallelism
    # In the calling process consecutive chunks share a kernel call (more prange tasks);
    # across workers each chunk is its own job, so joblib can balance them.
    group = MAX_CHUNK_BLOCKS if local else plan.chunk_blocks
    return Schedule(plan, backend, workers, threads, parallel_kernel, group, notes)
