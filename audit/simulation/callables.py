"""Black-box implementations drawn in chunks: reproducible, parallel, checkpointed.

An implementation (``audit.model.implementation``) is a Python callable, so it cannot run in
the numba kernels. This module runs A_D around it: before every call the missingness
mechanism masks every record of the dataset (a masked entry becomes NaN), and the call
releases one output. Trials are counted per side, as in the engine: a run of ``trials`` calls
the implementation ``trials`` times on z and ``trials`` times on z'.

Reproducibility: the trials of each side are cut into chunks of ``chunk`` calls; chunk c of
side s draws its masks, and hands the implementation its randomness, from a numpy
``Generator`` seeded by ``SeedSequence(key, spawn_key=(s, c))``. Chunks are the unit of work,
of checkpoints and of the sequential test's bets, so the same seed gives the same outputs for
any number of workers. (The batched and the one-call-at-a-time forms of an implementation
use the generator differently: each is reproducible, they differ from each other.)

Parallelism: chunks run in the calling process, or over joblib workers on the engine's
backends (``audit.enums.Backend``): ``"loky"`` processes, ``"threading"`` threads (for an
implementation that releases the GIL), or ``"dask"`` (a ``distributed.Client`` the caller
created: the audit moves to a cluster with the same seeds and the same outputs), or any
joblib backend registered by name (``processes.parse_backend``: ray, spark, ...). Results
arrive in chunk order whatever the backend. Workers are counted, and die with the parent, by
the same numba-free plumbing as the engine's (``audit.simulation.processes``): a black-box
run never imports numba.

Checkpoints: with a directory, each finished chunk's raw outputs are saved atomically as
``DIR/<run hash>_c<chunk>.npz``; a rerun reads them back instead of calling again, and an
exception mid-run leaves on disk every chunk that reached the caller before it (with
workers, chunks computed ahead of the failing one are lost: joblib stops at the first
exception). The run hash
(:meth:`CallableRun.digest`) covers the implementation's code too
(:func:`audit.simulation.checkpoints.code_digest`; :attr:`CallableRun.code_digest_strength`
says how much of it), so a fixed mechanism never reuses the outputs of the buggy one. A chunk
file is checked when read (readable, arrays ``p`` and ``q`` of the chunk's shape): a bad one
is recomputed with one :class:`~audit.simulation.checkpoints.CheckpointWarning`.

Failures: whatever the implementation raises (``SystemExit`` from ``sys.exit`` included) or
returns that is not a release (``None``, a complex or non-numeric value, a wrong shape) is an
:class:`ImplementationError` naming the call, the dataset, the chunk and the run
(``CallableRun.label``: ``"pilot"``, ``"main run"``). A ``KeyboardInterrupt`` in the calling
process is the user's Ctrl-C and propagates. A worker that dies (``os._exit``, a signal) is a
:class:`WorkerDiedError`; the framework's own buffers of a chunk not fitting in memory a
:class:`ChunkMemoryError`; a chunk file that cannot be written (a full disk) a
:class:`~audit.simulation.checkpoints.CheckpointWriteError`. :data:`MID_RUN_ERRORS` lists the
four.

Warnings: what the implementation warns during its calls (a numpy ``RuntimeWarning``, a
library's own warning) is kept, not printed, in every process
(:mod:`audit.simulation.mechanism_warnings`, at most a few distinct messages; workers send
theirs back with their results), and re-emitted in the calling process once per audit (from
:func:`probe` on), as a ``MechanismWarning`` ``"<target>: <message>"``, when :func:`probe`
returns and when :func:`iter_chunks` ends, stops or fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audit.enums import Backend
from audit.records import traits_of
from audit.simulation import checkpoints, processes
from audit.simulation.checkpoints import (
    CheckpointWarning,
    CheckpointWriteError,
    check_directory,
    code_digest,
    count_chunk_files,
    read_chunk,
)
from audit.simulation.mechanism_warnings import LOG, caught, emit
from audit.simulation.processes import WorkerDiedError

__all__ = ["ImplementationError", "ChunkMemoryError", "WorkerDiedError", "check_sendable",
           "CheckpointWriteError", "CheckpointWarning", "MID_RUN_ERRORS", "CallableRun",
           "TASK_CALLS", "TASK_BYTES", "chunk_generator", "call_chunk", "chunks_per_task",
           "iter_chunks", "probe", "count_chunk_files"]


class ImplementationError(ValueError):
    """An implementation raised (any exception, ``SystemExit`` included: a mechanism that
    calls ``sys.exit``), or returned something that is not a release (``None``, a complex
    value, a string, a wrong shape)."""


class ChunkMemoryError(MemoryError):
    """The framework's own buffers of one chunk (the masked datasets, the outputs) do not
    fit in memory: lower the chunk (``implementation.chunk``)."""


#: What a run can raise once its work started (the implementation failing, a worker dying,
#: the checkpoint folder full, a chunk too large for memory); ``KeyboardInterrupt`` is not
#: among them: a Ctrl-C stays the user's.
MID_RUN_ERRORS = (ImplementationError, WorkerDiedError, CheckpointWriteError,
                  ChunkMemoryError)

#: Calls per side one worker task aims at (:func:`chunks_per_task`): consecutive chunks go
#: to a worker together, so that a small chunk does not cost one round trip to the pool.
TASK_CALLS = 100_000
#: Most bytes of raw outputs (both sides) one task of several chunks holds.
TASK_BYTES = 64 * 2**20


def chunk_generator(key: int, side: int, chunk: int) -> np.random.Generator:
    """The generator of chunk ``chunk`` of side ``side`` (masks and the implementation's
    randomness)."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(int(key), spawn_key=(int(side), int(chunk)))))


def _floats(value: object, where: str, name: str) -> np.ndarray:
    """``value`` as a float array; None, complex and non-numeric values refused."""
    who = f"implementation {name!r}"
    if value is None:
        raise ImplementationError(f"{who} returned None {where} (a missing return?); every "
                                  "release must be a number or a vector of numbers")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # a ragged list, ...
        arr = np.asarray(None, dtype=object)
    items = arr.ravel().tolist() if arr.dtype == object else ()
    if any(v is None for v in items):
        raise ImplementationError(f"{who} returned None among its outputs {where} (a missing "
                                  "return?)")
    if arr.dtype.kind == "c" or any(isinstance(v, complex | np.complexfloating)
                                    for v in items):
        raise ImplementationError(f"{who} returned a complex value {where}; every release "
                                  "must be real")
    try:
        if arr.dtype.kind not in "biufO":
            raise TypeError(arr.dtype)
        return np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(
            f"{who} returned a non-numeric value ({type(value).__name__}: "
            f"{str(value)[:80]!r}) {where}") from None


def _as_outputs(value: object, m: int, dim: int | None, where: str, name: str) -> np.ndarray:
    """``value`` (the outputs of m calls) as floats, shape (m,) or (m, dim); NaN and ±inf are
    values like any other."""
    out = _floats(value, where, name)
    shape = (m,) if not dim else (m, dim)
    if not dim and out.size == m and out.shape in ((), (1,), (m, 1)):
        out = out.reshape(m)  # a scalar release given as a number or a 1-element array
    elif m == 1 and dim and out.shape == (dim,):
        out = out.reshape(1, dim)
    if out.shape != shape:
        want = "a scalar" if not dim else f"a vector of length {dim}"
        raise ImplementationError(f"implementation {name!r} returned shape {out.shape} "
                                  f"{where}; every release must be {want}")
    return out


def _call(func, args: tuple, name: str, where: str, in_worker: bool):
    """``func(*args)``, the implementation's failures raised as :class:`ImplementationError`.

    A ``KeyboardInterrupt`` or a :class:`~audit.simulation.processes.Terminated` in the
    calling process is the user's Ctrl-C or SIGTERM and propagates; in a worker (a process or
    a thread of the pool) it can only be the implementation's own.
    """
    try:
        return func(*args)
    except (KeyboardInterrupt, processes.Terminated) as exc:
        if not in_worker:
            raise
        raise ImplementationError(f"implementation {name!r} raised {type(exc).__name__} "
                                  f"{where}") from exc
    except BaseException as exc:  # SystemExit (sys.exit) too: never a silent exit
        what = f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else ""
        raise ImplementationError(
            f"implementation {name!r} raised {type(exc).__name__}: {exc} {where}"
            + (f" (it {what}; a release must return its output)" if what else "")) from exc


@contextlib.contextmanager
def _own_memory(what: str, where: str) -> Iterator[None]:
    """A MemoryError of the framework's own buffers (not of the implementation)."""
    try:
        yield
    except MemoryError:
        raise ChunkMemoryError(f"{what} do not fit in memory {where}; lower "
                               "implementation.chunk") from None


@dataclass(frozen=True, eq=False)
class CallableRun:
    """Everything a chunk needs (sent to each worker).

    ``dim`` is the output dimension found by :func:`probe` (0 for a scalar). ``label`` names
    the run in messages (``"pilot"``, ``"main run"``; not part of :meth:`digest`). ``sides``:
    the sides called (0: z, 1: z'); a side left out releases an empty array (a one-sided run:
    one stratum of a stratified audit, :mod:`audit.simulation.strata`).
    """

    implementation: object
    z: np.ndarray
    z_prime: np.ndarray
    missingness: object
    chunk: int
    trials: int
    key: int
    dim: int
    use_batch: bool = True
    label: str = "run"
    sides: tuple[int, ...] = (0, 1)
    #: the implementation's code digest (:func:`audit.simulation.checkpoints.code_digest`),
    #: when the caller already read it for its many runs; None: read on first use
    code: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.sides not in ((0, 1), (0,), (1,)):
            raise ValueError(f"sides must be (0, 1), (0,) or (1,), got sides={self.sides!r}")

    def shape(self, side: int, c: int) -> tuple[int, ...]:
        """The shape of chunk ``c``'s outputs on ``side`` (0 calls on a side left out)."""
        m = self.chunk_len(c) if side in self.sides else 0
        return (m, self.dim) if self.dim else (m,)

    @property
    def n_chunks(self) -> int:
        return -(-self.trials // self.chunk)

    def chunk_len(self, c: int) -> int:
        return min(self.chunk, self.trials - c * self.chunk)

    @property
    def name(self) -> str:
        return traits_of(self.implementation).name

    def where(self, side: int, c: int) -> str:
        """``(dataset z, chunk 3 of the main run)``: where a message's failure happened."""
        dataset = "z" if side == 0 else "z'"
        return f"(dataset {dataset}, chunk {c} of the {self.label})"

    @functools.cached_property
    def _code(self) -> tuple[str, str]:
        return self.code if self.code is not None else code_digest(self.implementation)

    @property
    def code_digest_strength(self) -> str:
        """How much of the implementation's code :meth:`digest` covers: ``"source"``,
        ``"module"`` or ``"none"`` (:func:`audit.simulation.checkpoints.code_digest`)."""
        return self._code[1]

    def digest(self) -> str:
        """The name prefix of this run's checkpoint files (every input that changes them:
        the pair, the implementation's name, parameters, claim and code, the missingness,
        the chunking, the trials, the key and the batched form)."""
        h = hashlib.sha256()
        for a in (self.z, self.z_prime):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        traits = traits_of(self.implementation)
        desc = {"impl": traits.name, "params": _jsonable(traits.params),
                "claim": repr(traits.claim),
                "code": self._code[0],
                "missingness": [self.missingness.kind, _jsonable(self.missingness.params())],
                "chunk": self.chunk, "trials": self.trials, "key": int(self.key),
                "batch": self.use_batch and traits.batch is not None}
        if self.sides != (0, 1):  # (two-sided runs keep the digests they always had)
            desc["sides"] = list(self.sides)
        h.update(json.dumps(desc, sort_keys=True).encode())
        return h.hexdigest()[:20]


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=lambda o: np.asarray(o).tolist()))


def _masked(data: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return np.where(masks, np.nan, data)


def _side_outputs(run: CallableRun, side: int, c: int, in_worker: bool = False
                  ) -> np.ndarray:
    if side not in run.sides:
        return np.empty(run.shape(side, c))
    data = run.z if side == 0 else run.z_prime
    m = run.chunk_len(c)
    rng = chunk_generator(run.key, side, c)
    impl = run.implementation
    batch = traits_of(impl).batch if run.use_batch else None
    n, d = data.shape
    where = run.where(side, c)
    values = f"{run.dim} values" if run.dim else "1 value"
    if batch is not None:
        with _own_memory(f"the masked datasets of one chunk ({m} calls × {n} × {d} values)",
                         where):
            masks = run.missingness.sample_masks(np.tile(data, (m, 1)), rng).reshape(m, n, d)
            datasets = _masked(data[None], masks)
            del masks
        value = _call(batch, (datasets, rng), run.name, where, in_worker)
        del datasets
        with _own_memory(f"the outputs of one chunk ({m} calls × {values})", where):
            return _as_outputs(value, m, run.dim, where, run.name)
    with _own_memory(f"the outputs of one chunk ({m} calls × {values})", where):
        out = np.empty((m, run.dim) if run.dim else m)
    for i in range(m):
        masked = _masked(data, run.missingness.sample_masks(data, rng))
        at = f"on call {i} {where}"
        out[i] = _as_outputs(_call(impl, (masked, rng), run.name, at, in_worker), 1, run.dim,
                             at, run.name)[0]
    return out


def call_chunk(run: CallableRun, c: int, watch_parent: bool = False, in_worker: bool = False
               ) -> tuple[int, np.ndarray, np.ndarray]:
    """Outputs of chunk ``c`` of both sides: (c, outputs on z, outputs on z').

    ``in_worker``: the chunk runs in a pool's worker (a process or a thread), where a
    ``KeyboardInterrupt`` can only be the implementation's (an :class:`ImplementationError`);
    in the calling process it is the user's Ctrl-C and propagates.
    """
    if watch_parent:
        processes.watch_parent()
    with caught(run.name):  # kept once each (mechanism_warnings), never printed raw here
        return c, _side_outputs(run, 0, c, in_worker), _side_outputs(run, 1, c, in_worker)


def probe(implementation, data: np.ndarray, missingness, key: int) -> int:
    """Call the implementation once on ``data`` (masked) to check it releases numbers, and
    return the output dimension (0 for a scalar). Raises :class:`ImplementationError` with
    the failure of that first call (an exception, ``sys.exit``, ``None``, a complex or
    non-numeric value, a wrong shape); a ``KeyboardInterrupt`` propagates."""
    name = traits_of(implementation).name
    rng = chunk_generator(key, 2, 0)  # a side no run uses
    masked = _masked(data, missingness.sample_masks(data, rng))
    where = "on its first call"
    LOG.new_audit()  # an audit's first call: each of its warnings is reported once from here
    try:
        with caught(name):
            value = _call(implementation, (masked, rng), name, where, False)
    finally:
        emit()
    out = _floats(value, where, name)
    if out.ndim > 1 or (out.ndim == 1 and out.size == 0):
        raise ImplementationError(f"implementation {name!r} returned shape {out.shape} on its "
                                  "first call; a release must be a scalar or a vector")
    return 0 if out.size == 1 else int(out.size)


def check_sendable(run: CallableRun) -> None:
    """Raise :class:`ImplementationError` when ``run`` cannot be pickled for worker
    processes (what joblib's loky workers receive)."""
    import cloudpickle  # what joblib's loky workers pickle with (a joblib dependency)

    try:
        cloudpickle.dumps(run)
    except Exception as exc:
        name = run.name
        raise ImplementationError(
            f"implementation {name!r} cannot be sent to worker processes ({exc}); run it "
            "with one job (jobs = 1)") from None


def iter_chunks(run: CallableRun, *, n_jobs: int = 1, backend: Backend | str = Backend.LOKY,
                checkpoint=None, on_chunk: Callable[[int], None] | None = None,
                label: str | None = None, reduce: Callable | None = None
                ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """The chunks of ``run`` in order, as (c, outputs on z, outputs on z').

    Finished chunks found in ``checkpoint`` are read back (a file that cannot be used is
    recomputed, with one :class:`CheckpointWarning`); the others are computed (in this
    process, or over ``n_jobs`` joblib workers on ``backend``) and saved there as they
    arrive. The outputs are the same for every ``n_jobs`` and ``backend``. The caller may stop
    iterating at any time (the sequential test does): pending work is cancelled and the
    workers are shut down. ``on_chunk(c)`` is called after each chunk (progress).

    Without a checkpoint, workers take consecutive chunks in tasks (:func:`chunks_per_task`;
    chunks, seeds and order unchanged) and apply ``reduce`` to each side's outputs (e.g. bin
    indices), so only the reduced arrays travel back (processes only where ``reduce`` pickles
    smaller than a task's raw outputs). With a checkpoint each chunk is a task of its own
    whose raw outputs come back to be saved, then are reduced here.

    Parameters
    ----------
    run : CallableRun
    n_jobs : int
        Workers, ≥ 1, or −1: every usable CPU (dask: every worker of the client). Capped as
        :func:`audit.simulation.processes.cap_workers` says (at the usable CPUs, with one
        :class:`~audit.simulation.processes.ResourceCapWarning`, and at the run's chunks).
        1 with a local backend runs the chunks in this process.
    backend : Backend, RegisteredBackend or str
        joblib's backend for ``n_jobs`` workers; ``"dask"`` needs a ``distributed.Client``; a
        joblib backend registered by name is always sent the chunks.
    checkpoint : path or None
        Directory of the chunk files (created if missing), named ``<run.digest()>_c<c>.npz``
        (:func:`count_chunk_files` counts them).
    on_chunk : callable or None
        Called with each chunk's index once it is read back or computed.
    label : str or None
        The run's name in messages (``"pilot"``, ``"main run"``); None: ``run.label``.
    reduce : callable or None
        Applied to each side's outputs of each chunk (picklable for process workers); None:
        the raw outputs.

    Returns
    -------
    generator of (int, ndarray, ndarray)

    Raises
    ------
    ValueError
        On a bad argument, when called (before any chunk runs).
    ImplementationError
        When called, for an implementation that cannot be pickled for workers (loky, dask);
        while iterating, for a call that raised (``SystemExit`` included) or returned
        something that is not a release. A ``KeyboardInterrupt`` in this process propagates.
    WorkerDiedError
        While iterating: a worker process died (``os._exit``, a signal, out of memory).
    ChunkMemoryError
        While iterating: the masked datasets or the outputs of one chunk do not fit in memory.
    CheckpointWriteError
        While iterating: a chunk file could not be written (a full disk).
    """
    if not isinstance(run, CallableRun):
        raise ValueError(f"run must be a CallableRun, got run={run!r}")
    if label is not None:
        if not isinstance(label, str) or not label:
            raise ValueError(f"label must be a non-empty str or None, got label={label!r}")
        run = dataclasses.replace(run, label=label)
    backend = processes.joblib_backend(backend)
    cap = processes.cap_workers(n_jobs, name="n_jobs", n_chunks=run.n_chunks, backend=backend)
    cap.warn(stacklevel=2)
    directory = check_directory(checkpoint)
    for name, func in (("on_chunk", on_chunk), ("reduce", reduce)):
        if func is not None and not callable(func):
            raise ValueError(f"{name} must be callable or None, got {name}={func!r}")
    in_process = cap.workers == 1 and not processes.always_sent(backend)
    if not in_process and not processes.in_threads(backend):
        check_sendable(run)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    return _iter_chunks(run, cap.workers, None if in_process else backend,
                        _Chunks(directory, run), on_chunk, reduce)


class _Chunks:
    """The checkpoint files of one run (none without a directory). ``kept``: the run's
    finished chunks on disk (read back or written)."""

    def __init__(self, directory: Path | None, run: CallableRun) -> None:
        self.directory = directory
        self.run = run
        self.prefix = run.digest()
        self.kept = 0
        self._loaded: set[int] = set()
        if directory is not None:
            checkpoints.record_prefix(directory, self.prefix)

    def path(self, c: int) -> Path:
        return self.directory / f"{self.prefix}_c{c:012d}.npz"

    def load(self, c: int) -> tuple[int, np.ndarray, np.ndarray] | None:
        """Chunk ``c`` read back, or None (no file; a bad file, with one warning)."""
        if self.directory is None:
            return None
        shapes = {"p": self.run.shape(0, c), "q": self.run.shape(1, c)}

        def check(arrays: dict[str, np.ndarray]) -> str | None:
            for name, a in arrays.items():
                if a.shape != shapes[name] or a.dtype != np.float64:
                    return (f"{name} is {a.dtype} of shape {a.shape}, expected float64 of "
                            f"shape {shapes[name]} (the chunk's {shapes[name][0]} outputs)")
            return None

        arrays = read_chunk(self.path(c), ("p", "q"), check)
        if arrays is None:
            return None
        self._loaded.add(c)
        self.kept += 1
        return c, arrays["p"], arrays["q"]

    def save(self, c: int, p: np.ndarray, q: np.ndarray) -> None:
        """Write a computed chunk (one read back is already on disk)."""
        if self.directory is not None and c not in self._loaded:
            checkpoints.write_chunk(self.path(c), self.kept, p=p, q=q)
            self.kept += 1


def chunks_per_task(run: CallableRun, workers: int) -> int:
    """Consecutive chunks one worker task runs: about :data:`TASK_CALLS` calls per side
    holding at most :data:`TASK_BYTES` of raw outputs, at least 1, and few enough that every
    worker gets at least four tasks."""
    by_calls = TASK_CALLS // run.chunk
    by_bytes = TASK_BYTES // (16 * run.chunk * max(run.dim, 1))
    by_balance = run.n_chunks // (4 * max(int(workers), 1))
    return max(1, min(by_calls, by_bytes, by_balance))


def _reduced(result: tuple, reduce: Callable | None) -> tuple:
    c, p, q = result
    return (c, p, q) if reduce is None else (c, reduce(p), reduce(q))


def _iter_chunks(run: CallableRun, workers: int, backend: Backend | processes.RegisteredBackend
                 | None, store: _Chunks,
                 on_chunk: Callable[[int], None] | None, reduce: Callable | None):
    """The chunks of ``run``; the warnings its calls raised are re-emitted once each
    (:func:`audit.simulation.mechanism_warnings.emit`) when it ends, stops or fails."""
    try:
        yield from _computed_chunks(run, workers, backend, store, on_chunk, reduce)
    finally:
        emit()


def _computed_chunks(run: CallableRun, workers: int, backend: Backend | None, store: _Chunks,
                     on_chunk: Callable[[int], None] | None, reduce: Callable | None):
    """The chunks of ``run`` (``backend`` None: in this process)."""
    if backend is None:
        results = (store.load(c) or call_chunk(run, c) for c in range(run.n_chunks))
        for result in _kept(results, store, on_chunk):
            yield _reduced(result, reduce)
        return
    import joblib

    watch = backend is Backend.LOKY
    # With a checkpoint, one chunk per task whose raw outputs come back to be saved (so every
    # chunk that finished before a failure is on disk), and are reduced here.
    keep = store.directory is not None
    per = 1 if keep else chunks_per_task(run, workers)
    remote = None if keep else _worth_sending(reduce, run, per, backend)
    here = None if remote is not None else reduce
    tasks = (range(c, min(c + per, run.n_chunks)) for c in range(0, run.n_chunks, per))
    # Stored chunks are not recomputed; each result keeps its chunk index, and results come
    # back in the order of the calls, so the order of arrival is the order of the chunks.
    calls = (joblib.delayed(_task)(run, task, [store.load(c) for c in task], watch, remote)
             for task in tasks)
    done = [0]
    with processes.joblib_results(calls, workers=workers, backend=backend) as results:
        results = processes.deaths_reported(
            results, run.label, lambda: f"chunk {done[0]} was pending ({done[0]} of "
                                        f"{run.n_chunks} chunks finished)")
        chunks = (result for task in results for result in _merged(task))
        for result in _kept(chunks, store, on_chunk):
            done[0] += 1
            yield _reduced(result, here)


def _worth_sending(reduce: Callable | None, run: CallableRun, per: int,
                   backend: Backend | processes.RegisteredBackend) -> Callable | None:
    """``reduce`` if the workers should apply it: always for threads; for processes only
    when it pickles to no more than the raw outputs of the task it travels with (a k-NN
    score holding its whole pilot is cheaper applied here than sent with every task)."""
    if reduce is None or processes.in_threads(backend):
        return reduce
    import cloudpickle  # what joblib's workers pickle with

    raw = 16 * per * run.chunk * max(run.dim, 1)
    return reduce if len(cloudpickle.dumps(reduce)) <= raw else None


def _kept(results, store: _Chunks, on_chunk):
    for result in results:
        store.save(*result)
        if on_chunk is not None:
            on_chunk(result[0])
        yield result


def _task(run: CallableRun, chunks: range, found: list, watch_parent: bool,
          reduce: Callable | None) -> tuple[list, tuple]:
    """One worker task: consecutive ``chunks`` (read back where ``found``), reduced, with
    the warnings their calls raised (:meth:`WarningLog.take`, merged by the caller)."""
    if watch_parent:
        processes.watch_parent()
    results = [_reduced(f if f is not None else call_chunk(run, c, in_worker=True), reduce)
               for c, f in zip(chunks, found, strict=True)]
    return results, LOG.take()


def _merged(task: tuple[list, tuple]) -> list:
    """A task's results; its warnings into this process's log."""
    results, taken = task
    LOG.merge(taken)
    return results
