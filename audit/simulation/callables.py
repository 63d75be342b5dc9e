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
created: the audit moves to a cluster with the same seeds and the same outputs). Results
arrive in chunk order whatever the backend. Workers are counted, and die with the parent, by
the same numba-free plumbing as the engine's (``audit.simulation.processes``): a black-box
run never imports numba.

Checkpoints: with a directory, each finished chunk's raw outputs are saved atomically as
``DIR/<run hash>_c<chunk>.npz``; a rerun reads them back instead of calling again, and an
exception in a worker mid-run leaves every chunk that finished on disk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audit.enums import Backend
from audit.simulation import processes
from audit.simulation.checkpoints import check_directory, load_arrays, save_arrays

__all__ = ["ImplementationError", "CallableRun", "chunk_generator", "call_chunk",
           "iter_chunks", "probe"]


class ImplementationError(ValueError):
    """An implementation raised, or returned something that is not a release."""


def chunk_generator(key: int, side: int, chunk: int) -> np.random.Generator:
    """The generator of chunk ``chunk`` of side ``side`` (masks and the implementation's
    randomness)."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(int(key), spawn_key=(int(side), int(chunk)))))


def _as_outputs(value: object, m: int, dim: int | None, where: str, name: str) -> np.ndarray:
    """``value`` (the outputs of m calls) as floats, shape (m,) or (m, dim); NaN and ±inf are
    values like any other."""
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(
            f"implementation {name!r} returned a non-numeric value ({type(value).__name__}: "
            f"{str(value)[:80]!r}) {where}") from None
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


@dataclass(frozen=True, eq=False)
class CallableRun:
    """Everything a chunk needs (sent to each worker).

    ``dim`` is the output dimension found by :func:`probe` (0 for a scalar).
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

    @property
    def n_chunks(self) -> int:
        return -(-self.trials // self.chunk)

    def chunk_len(self, c: int) -> int:
        return min(self.chunk, self.trials - c * self.chunk)

    def digest(self) -> str:
        """The name prefix of this run's checkpoint files (every input that changes them)."""
        h = hashlib.sha256()
        for a in (self.z, self.z_prime):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        impl = self.implementation
        desc = {"impl": getattr(impl, "name", type(impl).__name__),
                "params": _jsonable(getattr(impl, "params", {})),
                "claim": repr(getattr(impl, "claim", None)),
                "missingness": [self.missingness.kind, _jsonable(self.missingness.params())],
                "chunk": self.chunk, "trials": self.trials, "key": int(self.key),
                "batch": self.use_batch and getattr(impl, "batch", None) is not None}
        h.update(json.dumps(desc, sort_keys=True).encode())
        return h.hexdigest()[:20]


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=lambda o: np.asarray(o).tolist()))


def _masked(data: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return np.where(masks, np.nan, data)


def _side_outputs(run: CallableRun, side: int, c: int) -> np.ndarray:
    data = run.z if side == 0 else run.z_prime
    m = run.chunk_len(c)
    rng = chunk_generator(run.key, side, c)
    impl = run.implementation
    name = getattr(impl, "name", "implementation")
    batch = getattr(impl, "batch", None) if run.use_batch else None
    n, d = data.shape
    dataset = "z" if side == 0 else "z'"
    where = f"(dataset {dataset}, chunk {c})"
    try:
        if batch is not None:
            masks = run.missingness.sample_masks(np.tile(data, (m, 1)), rng).reshape(m, n, d)
            return _as_outputs(batch(_masked(data[None], masks), rng), m, run.dim, where, name)
        out = np.empty((m, run.dim) if run.dim else m)
        for i in range(m):
            value = impl(_masked(data, run.missingness.sample_masks(data, rng)), rng)
            out[i] = _as_outputs(value, 1, run.dim, f"on call {i} {where}", name)[0]
        return out
    except ImplementationError:
        raise
    except Exception as exc:  # the implementation's own failure, reported as ours
        raise ImplementationError(f"implementation {name!r} raised {type(exc).__name__}: "
                                  f"{exc} {where}") from exc


def call_chunk(run: CallableRun, c: int, watch_parent: bool = False
               ) -> tuple[int, np.ndarray, np.ndarray]:
    """Outputs of chunk ``c`` of both sides: (c, outputs on z, outputs on z')."""
    if watch_parent:
        processes.watch_parent()
    return c, _side_outputs(run, 0, c), _side_outputs(run, 1, c)


def probe(implementation, data: np.ndarray, missingness, key: int) -> int:
    """Call the implementation once on ``data`` (masked) to check it releases numbers, and
    return the output dimension (0 for a scalar). Raises :class:`ImplementationError` with
    the failure of that first call."""
    name = getattr(implementation, "name", "implementation")
    rng = chunk_generator(key, 2, 0)  # a side no run uses
    try:
        value = implementation(_masked(data, missingness.sample_masks(data, rng)), rng)
    except Exception as exc:
        raise ImplementationError(f"implementation {name!r} raised {type(exc).__name__}: "
                                  f"{exc} on its first call") from exc
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ImplementationError(f"implementation {name!r} returned a non-numeric value "
                                  f"({type(value).__name__}) on its first call") from None
    if out.ndim > 1 or (out.ndim == 1 and out.size == 0):
        raise ImplementationError(f"implementation {name!r} returned shape {out.shape} on its "
                                  "first call; a release must be a scalar or a vector")
    return 0 if out.size == 1 else int(out.size)


def _check_picklable(run: CallableRun) -> None:
    import cloudpickle  # what joblib's loky workers pickle with (a joblib dependency)

    try:
        cloudpickle.dumps(run)
    except Exception as exc:
        name = getattr(run.implementation, "name", "implementation")
        raise ImplementationError(
            f"implementation {name!r} cannot be sent to worker processes ({exc}); run it "
            "with one job (jobs = 1)") from None


def iter_chunks(run: CallableRun, *, n_jobs: int = 1, backend: Backend | str = Backend.LOKY,
                checkpoint=None, on_chunk: Callable[[int], None] | None = None
                ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """The chunks of ``run`` in order, as (c, outputs on z, outputs on z').

    Finished chunks found in ``checkpoint`` are read back; the others are computed (in this
    process, or over ``n_jobs`` joblib workers on ``backend``) and saved there as they
    arrive. The outputs are the same for every ``n_jobs`` and ``backend``. The caller may stop
    iterating at any time (the sequential test does): pending work is cancelled and the
    workers are shut down. ``on_chunk(c)`` is called after each chunk (progress).

    Parameters
    ----------
    run : CallableRun
    n_jobs : int
        Workers, ≥ 1, or −1: every usable CPU (dask: every worker of the client). Capped as
        :func:`audit.simulation.processes.cap_workers` says (at the usable CPUs, with one
        :class:`~audit.simulation.processes.ResourceCapWarning`, and at the run's chunks).
        1 with a local backend runs the chunks in this process.
    backend : Backend or {"loky", "threading", "dask"}
        joblib's backend for ``n_jobs`` workers; ``"dask"`` needs a ``distributed.Client``.
    checkpoint : path or None
        Directory of the chunk files (created if missing).
    on_chunk : callable or None
        Called with each chunk's index once it is read back or computed.

    Returns
    -------
    generator of (int, ndarray, ndarray)

    Raises
    ------
    ValueError
        On a bad argument, when called (before any chunk runs).
    ImplementationError
        When called, for an implementation that cannot be pickled for workers (loky, dask);
        while iterating, for a call that raised or returned something that is not a release.
    """
    if not isinstance(run, CallableRun):
        raise ValueError(f"run must be a CallableRun, got run={run!r}")
    backend = processes.joblib_backend(backend)
    cap = processes.cap_workers(n_jobs, name="n_jobs", n_chunks=run.n_chunks, backend=backend)
    cap.warn(stacklevel=2)
    directory = check_directory(checkpoint)
    if on_chunk is not None and not callable(on_chunk):
        raise ValueError(f"on_chunk must be callable or None, got on_chunk={on_chunk!r}")
    in_process = cap.workers == 1 and backend is not Backend.DASK
    if not in_process and backend is not Backend.THREADING:
        _check_picklable(run)
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    return _iter_chunks(run, cap.workers, None if in_process else backend,
                        _Chunks(directory, run.digest()), on_chunk)


class _Chunks:
    """The checkpoint files of one run (none without a directory)."""

    def __init__(self, directory: Path | None, prefix: str) -> None:
        self.directory = directory
        self.prefix = prefix

    def load(self, c: int) -> tuple[int, np.ndarray, np.ndarray] | None:
        if self.directory is None:
            return None
        arrays = load_arrays(self.directory / f"{self.prefix}_c{c:012d}.npz", ("p", "q"))
        return None if arrays is None else (c, arrays["p"], arrays["q"])

    def save(self, c: int, p: np.ndarray, q: np.ndarray) -> None:
        if self.directory is not None:
            save_arrays(self.directory / f"{self.prefix}_c{c:012d}.npz", p=p, q=q)


def _iter_chunks(run: CallableRun, workers: int, backend: Backend | None, store: _Chunks,
                 on_chunk: Callable[[int], None] | None):
    """The chunks of ``run`` (``backend`` None: in this process)."""
    if backend is None:
        results = (store.load(c) or call_chunk(run, c) for c in range(run.n_chunks))
        yield from _kept(results, store, on_chunk)
        return
    import joblib

    watch = backend is Backend.LOKY
    # Stored chunks are not recomputed; each result keeps its chunk index, and results come
    # back in the order of the calls, so the order of arrival is the order of the chunks.
    calls = (joblib.delayed(_stored_or_call)(run, c, store.load(c), watch)
             for c in range(run.n_chunks))
    with processes.joblib_results(calls, workers=workers, backend=backend) as results:
        yield from _kept(results, store, on_chunk)


def _kept(results, store: _Chunks, on_chunk):
    for result in results:
        store.save(*result)
        if on_chunk is not None:
            on_chunk(result[0])
        yield result


def _stored_or_call(run: CallableRun, c: int, found, watch_parent: bool):
    return found if found is not None else call_chunk(run, c, watch_parent=watch_parent)
