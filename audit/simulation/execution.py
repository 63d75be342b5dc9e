"""Running the chunks of a schedule: in the calling process or over joblib workers.

The ``cuda`` backend runs in the calling process: each job (up to
:data:`~audit.simulation.planning.CUDA_GROUP_BLOCKS` blocks of consecutive chunks) is one
GPU launch (:mod:`audit.simulation.gpu`) returning the counts of each of its chunks.

Counts of finished chunks flow into a :class:`Tally` (running totals, a progress bar, the
checkpoint store). Pending chunks are found lazily, one chunk file at a time, and grouped
into jobs of consecutive chunks; a job is one kernel call that returns the counts of each of
its chunks.

Workers never outlive the run's process: the joblib loop, the SIGTERM handling and the watch
of the parent are :mod:`audit.simulation.processes`' (numba-free, shared with the black-box
sampler ``audit.simulation.callables``).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Iterator
from typing import NamedTuple

import numba
import numpy as np

from audit.enums import Backend
from audit.simulation import processes
from audit.simulation.checkpoints import ChunkStore
from audit.simulation.kernels import Blocks, HistSpec, hist_blocks
from audit.simulation.planning import ChunkPlan, Schedule

__all__ = ["Work", "Tally", "iter_jobs", "run_job", "execute"]


class Work(NamedTuple):
    """What every job of a run shares (sent to each worker with its job)."""

    key: np.uint64
    trials: int
    block_trials: int
    spec: HistSpec
    threads: int | None  # numba threads per kernel call (None: numba's current setting)
    parallel: bool  # prange kernel (else serial)
    cuda: bool = False  # the GPU kernel (audit.simulation.gpu), in the calling process


class Tally:
    """Running totals of a run, fed by the main thread and by joblib's dispatch thread.

    ``bar`` (a tqdm bar or None) advances by one per finished chunk; ``store`` (or None)
    receives each computed chunk.
    """

    def __init__(self, n_bins: int, store: ChunkStore | None = None, bar=None) -> None:
        self.counts_p = np.zeros(n_bins, dtype=np.int64)
        self.counts_q = np.zeros(n_bins, dtype=np.int64)
        self.store = store
        self.bar = bar
        self._lock = threading.Lock()

    def add(self, cp: np.ndarray, cq: np.ndarray) -> None:
        with self._lock:
            self.counts_p += cp
            self.counts_q += cq
            if self.bar is not None:
                self.bar.update(1)

    def add_computed(self, plan: ChunkPlan, job: range, counts: np.ndarray) -> None:
        """Save and add the per-chunk ``counts`` (n_chunks, 2, n_bins) of ``job``."""
        for i, (cp, cq) in zip(job, counts, strict=True):
            if self.store is not None:
                self.store.save(*plan[i], cp, cq)
            self.add(cp, cq)


def iter_jobs(plan: ChunkPlan, tally: Tally, group_blocks: int) -> Iterator[range]:
    """The pending chunks of ``plan`` as runs of consecutive chunk indices.

    A run holds at most ``group_blocks`` blocks (at least one chunk). Chunks already in the
    store are added to ``tally`` on the way. Lazy: one chunk file is looked at per step.
    """
    start = None
    blocks = 0
    for i in range(len(plan)):
        b0, b1 = plan[i]
        loaded = tally.store.load(b0, b1) if tally.store is not None else None
        if start is not None and (loaded is not None or blocks + (b1 - b0) > group_blocks):
            yield range(start, i)
            start = None
        if loaded is not None:
            tally.add(*loaded)
            continue
        if start is None:
            start, blocks = i, 0
        blocks += b1 - b0
    if start is not None:
        yield range(start, len(plan))


def _kernel(blocks: Blocks, work: Work) -> np.ndarray:
    if not (work.parallel and work.threads is not None):
        return hist_blocks(blocks, work.spec, parallel=work.parallel)
    old = numba.get_num_threads()
    numba.set_num_threads(min(work.threads, numba.config.NUMBA_NUM_THREADS))
    try:
        return hist_blocks(blocks, work.spec, parallel=True)
    finally:
        numba.set_num_threads(old)


def run_job(plan: ChunkPlan, job: range, work: Work, watch_parent: bool = False
            ) -> np.ndarray:
    """Counts of the chunks ``job`` of ``plan``: int64 (len(job), 2, n_bins).

    Runs in the calling process or in a worker; ``watch_parent`` makes a worker exit when
    the process that started it dies.
    """
    if watch_parent:
        processes.watch_parent()
    first, end = plan[job[0]][0], plan[job[-1]][1]
    blocks = Blocks(np.uint64(work.key), first, end, int(work.trials), int(work.block_trials))
    if work.cuda:
        from audit.simulation.gpu import hist_chunks

        return hist_chunks(blocks, plan.chunk_blocks, work.spec)
    out = _kernel(blocks, work)
    starts = [plan[i][0] - first for i in job]
    return np.add.reduceat(out, starts, axis=1).transpose(1, 0, 2)


def _run_in_process(schedule: Schedule, tally: Tally, work: Work) -> None:
    plan = schedule.plan
    for job in iter_jobs(plan, tally, schedule.group_blocks):
        tally.add_computed(plan, job, run_job(plan, job, work))


def _run_joblib(schedule: Schedule, tally: Tally, work: Work) -> None:
    import joblib

    plan = schedule.plan
    watch = schedule.backend is Backend.LOKY
    if watch:
        # Compile (or load the cache) once here so that workers load cached kernels.
        _kernel(Blocks(np.uint64(0), 0, 0, 1, 1), work)
    sent: collections.deque[range] = collections.deque()  # dispatched, not yet back
    calls = (joblib.delayed(_job_result)(plan, job, work, watch)
             for job in _recorded(iter_jobs(plan, tally, schedule.group_blocks), sent))
    # Leaving early (an exception, SIGTERM, Ctrl-C) aborts the pending jobs and kills the
    # loky workers at once.
    with processes.joblib_results(calls, workers=schedule.workers,
                                  backend=schedule.backend) as results:
        for job, counts in processes.deaths_reported(
                results, "engine run", lambda: _pending(plan, sent)):
            sent.popleft()
            tally.add_computed(plan, job, counts)


def _recorded(jobs: Iterator[range], sent: collections.deque) -> Iterator[range]:
    for job in jobs:
        sent.append(job)
        yield job


def _pending(plan: ChunkPlan, sent: collections.deque) -> str:
    """What a run was waiting for when a worker died (for the message)."""
    if not sent:
        return "its jobs were being sent"
    job = sent[0]
    return f"the chunk(s) of blocks [{plan[job[0]][0]}, {plan[job[-1]][1]}) were pending"


def _job_result(plan: ChunkPlan, job: range, work: Work, watch_parent: bool
                ) -> tuple[range, np.ndarray]:
    return job, run_job(plan, job, work, watch_parent)


def execute(schedule: Schedule, spec: HistSpec, key: np.uint64, trials: int,
            block_trials: int, tally: Tally) -> None:
    """Run every chunk of ``schedule`` not already in ``tally.store`` into ``tally``."""
    cuda = schedule.backend is Backend.CUDA
    if cuda:
        from audit.simulation.gpu import group_blocks, on_device

        group = group_blocks(schedule.group_blocks, schedule.plan.chunk_blocks,
                             spec.bins.edges.shape[0] + 2)
        schedule = dataclasses.replace(schedule, group_blocks=group)
        spec = on_device(spec)  # the laws' arrays go to the GPU once per run
    work = Work(key, trials, block_trials, spec, schedule.threads, schedule.parallel_kernel,
                cuda)
    if schedule.in_process:
        _run_in_process(schedule, tally, work)
    else:
        _run_joblib(schedule, tally, work)
