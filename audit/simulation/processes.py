"""Process plumbing of both samplers: worker counts, the joblib loop, signals, parent watch.

numba-free (the standard library, joblib when a loop runs, and ``audit.enums``): the numba engine
(``audit.simulation.execution``) and the black-box sampler (``audit.simulation.callables``)
both run their chunks through this module, so an audit of a Python implementation never
imports numba.

Worker counts
-------------
One rule, :func:`cap_workers`, wherever a number of workers is asked for (the engine's and the
black-box sampler's ``n_jobs``, a command line's ``--jobs``, a config's ``audit.jobs``):

- the request is an integer ≥ 1, or −1: every CPU this process may use (:func:`usable_cpus`);
  with the dask backend −1 means every worker of the client's cluster (joblib asks the
  scheduler). Anything else is refused (``ValueError`` naming the setting);
- local backends (loky processes, threads) are capped at :func:`usable_cpus`: ``jobs = 1000``
  never starts 1000 processes; dask's workers are elsewhere and are not capped, nor are those
  of any other joblib backend registered by name (:func:`parse_backend`: ray, spark, ...)
  unless it runs in this process's threads; the cuda backend runs in the calling process
  (one worker);
- given the number of chunks, at most one worker per chunk.

Each cap is one note in one wording, the setting spelled as where it came from:
``--jobs 1000 capped at 2, the CPUs this process may use`` (a command-line flag),
``audit.jobs = 1000 capped at 2, ...`` (a config key), ``n_jobs=1000 capped at 2, ...`` (a
keyword). Library functions never print: they return the notes (:class:`WorkerCap`) and warn
one :class:`ResourceCapWarning` when a request exceeded the CPUs; a command line prints
:attr:`WorkerCap.lines` (or the line of :func:`cap_jobs`) to stderr.

Workers never outlive the run's process
---------------------------------------
An exception or Ctrl-C (KeyboardInterrupt) inside :func:`joblib_results` makes joblib kill its
loky workers; SIGTERM is turned into :class:`Terminated` (a ``SystemExit``) for the duration
of the loop (:func:`sigterm_raises`; the command line does it for the whole command), so it
takes the same path; and every loky worker watches its parent
(:func:`watch_parent`) and exits when the parent is gone, which also covers SIGKILL and
workers left idle in joblib's reusable pool.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from numbers import Integral

from audit._validate import check_jobs, spelled_setting
from audit.enums import Backend
from audit.signals import Terminated  # re-exported: the sampler raises it

__all__ = [
    "PARENT_POLL_S",
    "ResourceCapWarning",
    "WorkerCap",
    "usable_cpus",
    "check_jobs",
    "cap_workers",
    "cap_jobs",
    "RegisteredBackend",
    "registered_backends",
    "parse_backend",
    "BACKEND_SETTINGS",
    "check_backend_setting",
    "in_threads",
    "always_sent",
    "joblib_backend",
    "watch_parent",
    "Terminated",
    "sigterm_raises",
    "joblib_results",
    "WorkerDiedError",
    "deaths_reported",
]

#: Seconds between a worker's checks that its parent is alive.
PARENT_POLL_S = 0.5


class ResourceCapWarning(UserWarning):
    """A worker count asked for more CPUs than this machine gives the process."""


class WorkerDiedError(RuntimeError):
    """A worker of a run died mid-run (``os._exit`` in an implementation, a signal, the
    system out of memory): the message says which run and which chunk was pending."""


def _died(exc: BaseException) -> bool:
    from concurrent.futures import BrokenExecutor  # loky's TerminatedWorkerError is one

    return isinstance(exc, BrokenExecutor) or type(exc).__name__ == "KilledWorker"  # dask


def deaths_reported(results: Iterable, run: str, pending: Callable[[], str]) -> Iterator:
    """``results``, with a dead worker (loky's ``TerminatedWorkerError``, a broken pool,
    dask's ``KilledWorker``) raised as one :class:`WorkerDiedError`.

    ``run`` names the run (``"main run"``), ``pending()`` what it was waiting for
    (``"chunk 4 was pending"``).
    """
    it = iter(results)
    while True:
        try:
            result = next(it)
        except StopIteration:
            return
        except Exception as exc:
            if not _died(exc):
                raise
            codes = re.search(r"exit codes of the workers are (\{[^}]*\})", str(exc))
            how = f"; exit codes {codes.group(1)}" if codes else ""
            raise WorkerDiedError(
                f"a worker process died during the {run} while {pending()} "
                f"({type(exc).__name__}{how}): an implementation that calls os._exit, a "
                "signal, or the system out of memory") from None
        yield result


@dataclass(frozen=True)
class WorkerCap:
    """The workers a run uses for a request, and what was capped.

    ``requested``: the request as given (−1 included). ``workers``: the count used (−1 only
    with the dask backend: every worker of the client). ``notes``: one sentence per cap, no
    ``note:`` prefix (see :attr:`lines`). ``over_cpus``: the request exceeded the CPUs this
    process may use (the one case :meth:`warn` warns about).
    """

    requested: int
    workers: int
    notes: tuple[str, ...] = ()
    over_cpus: bool = False

    @property
    def lines(self) -> tuple[str, ...]:
        """The notes as a command line prints them: ``note: <sentence>``, one per cap."""
        return tuple(f"note: {n}" for n in self.notes)

    def warn(self, stacklevel: int = 1) -> None:
        """Warn one :class:`ResourceCapWarning` (the first note) when over the CPUs.

        ``stacklevel`` 1 points at the line calling this method, 2 at its caller, ...
        """
        if self.over_cpus:
            warnings.warn(self.notes[0], ResourceCapWarning, stacklevel=stacklevel + 1)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one), ≥ 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class RegisteredBackend:
    """A joblib parallel backend registered by name that is not a :class:`~audit.enums.Backend`
    (``joblib.register_parallel_backend``, ``ray.util.joblib.register_ray()``,
    ``joblibspark.register_spark()``, or joblib's own ``"multiprocessing"`` and
    ``"sequential"``): the chunks go to joblib under that name, as they go to dask.

    Parameters
    ----------
    name : str
        A key of ``joblib.parallel.BACKENDS`` (checked by :func:`parse_backend`).
    """

    name: str

    @property
    def value(self) -> str:
        """The name joblib knows the backend by (as :attr:`Backend.value`)."""
        return self.name

    @property
    def uses_threads(self) -> bool:
        """Whether the backend runs its jobs in this process's threads (its class's
        ``uses_threads``, as joblib's threading and sequential backends): then the engine's
        kernels run serial, as on the threading backend, and nothing needs pickling."""
        import joblib.parallel

        return bool(getattr(joblib.parallel.BACKENDS.get(self.name), "uses_threads", False))


def registered_backends() -> tuple[str, ...]:
    """The names joblib knows a parallel backend by now (``joblib.parallel.BACKENDS``,
    sorted), those registered by the caller included."""
    import joblib.parallel

    return tuple(sorted(joblib.parallel.BACKENDS))


def parse_backend(backend: object, name: str = "backend") -> Backend | RegisteredBackend:
    """``backend`` as a :class:`~audit.enums.Backend` member (its values in any case), else
    as a :class:`RegisteredBackend` when joblib knows a parallel backend by that exact name.

    Raises
    ------
    ValueError
        For anything else, naming ``name`` and every known name (one line).
    """
    if isinstance(backend, Backend | RegisteredBackend):
        return backend
    builtin = tuple(b.value for b in Backend)
    if isinstance(backend, str):
        if backend.lower() in builtin:
            return Backend.parse(backend, name)
        if backend in registered_backends():
            return RegisteredBackend(backend)
    others = [k for k in registered_backends() if k not in builtin]
    known = ", ".join(repr(k) for k in builtin)
    if others:
        known += f" or a joblib backend registered by name ({', '.join(map(repr, others))})"
    raise ValueError(f"{name} must be one of {known}, got {name}={backend!r}")


def in_threads(backend: Backend | RegisteredBackend) -> bool:
    """Whether ``backend``'s jobs run in this process's threads (threading, or a registered
    backend whose class says ``uses_threads``): serial kernels, nothing to pickle."""
    if isinstance(backend, RegisteredBackend):
        return backend.uses_threads
    return backend is Backend.THREADING


def always_sent(backend: Backend | RegisteredBackend) -> bool:
    """Whether a run of one worker still goes to ``backend`` rather than running in the calling
    process: dask, and every registered backend (the caller named where the work runs)."""
    return backend is Backend.DASK or isinstance(backend, RegisteredBackend)


#: the names of ``audit.backend`` and ``--backend`` besides the registered joblib backends
BACKEND_SETTINGS = ("cpu", "cuda", "dask")


def check_backend_setting(value: object, name: str) -> str:
    """A config's or a command line's backend setting (``audit.backend``, ``--backend``): one
    of :data:`BACKEND_SETTINGS` (any case, lowered), or the exact name of a joblib backend
    registered in this process (:func:`registered_backends`).

    Raises
    ------
    ValueError
        Naming ``name`` and every known name (one line).
    """
    if isinstance(value, str) and value.lower() in BACKEND_SETTINGS:
        return value.lower()
    joblib_names = [k for k in registered_backends() if k not in BACKEND_SETTINGS]
    if isinstance(value, str) and value in joblib_names:
        return value
    raise ValueError(f"{name} must be one of {', '.join(BACKEND_SETTINGS)} or a joblib backend "
                     f"registered by name ({', '.join(joblib_names)}), got {name}={value!r}")


def _remote(backend: Backend | RegisteredBackend) -> bool:
    """Whether the backend's workers may be elsewhere (dask, a registered backend that does
    not run in this process's threads): not capped at this process's CPUs, and a run of one
    worker is still sent to it."""
    if isinstance(backend, RegisteredBackend):
        return not backend.uses_threads
    return backend is Backend.DASK


def cap_workers(requested: object, *, name: str = "n_jobs", n_chunks: int | None = None,
                backend: Backend | str = Backend.LOKY) -> WorkerCap:
    """The workers a run of ``n_chunks`` chunks uses on ``backend`` for ``requested``.

    Parameters
    ----------
    requested : int
        ≥ 1, or −1: every usable CPU (dask: every worker of the client's cluster).
    name : str
        The setting, as its source spells it (``"--jobs"``, ``"audit.jobs"``, ``"n_jobs"``):
        it names the setting in errors and notes.
    n_chunks : int or None
        Chunks of the run, ≥ 1: at most one worker per chunk. None: no such cap.
    backend : Backend, RegisteredBackend or str
        ``"loky"``, ``"threading"``, ``"dask"``, ``"cuda"`` or a joblib backend registered by
        name (:func:`parse_backend`). Local backends are capped at :func:`usable_cpus`; dask
        and a registered backend that does not run in threads are not; cuda uses one.

    Returns
    -------
    WorkerCap
        Does not warn and does not print (see :meth:`WorkerCap.warn`, :attr:`WorkerCap.lines`).

    Examples
    --------
    >>> cap = cap_workers(10**6, name="--jobs")
    >>> cap.workers == usable_cpus(), cap.over_cpus
    (True, True)
    >>> cap.lines[0] == f"note: --jobs 1000000 capped at {usable_cpus()}, the CPUs this " \\
    ...                 "process may use"
    True
    >>> cap_workers(-1, n_chunks=1).workers
    1
    """
    requested = check_jobs(requested, name)
    backend = parse_backend(backend)
    if n_chunks is not None and (isinstance(n_chunks, bool) or not isinstance(
            n_chunks, Integral) or n_chunks < 1):
        raise ValueError(f"n_chunks must be an integer >= 1 or None, got n_chunks={n_chunks!r}")
    spelled = spelled_setting(name, requested)
    if backend is Backend.CUDA:
        notes = () if requested == 1 else (
            f"{spelled} ignored: backend='cuda' runs on the GPU from the calling process",)
        return WorkerCap(requested, 1, notes)
    notes, over = [], False
    if _remote(backend):
        if requested == -1:  # the client's workers: joblib asks the scheduler
            return WorkerCap(requested, -1)
        workers = requested
    else:
        cpus = usable_cpus()
        workers = cpus if requested == -1 else requested
        if workers > cpus:
            notes.append(f"{spelled} capped at {cpus}, the CPUs this process may use")
            workers, over = cpus, True
    if n_chunks is not None and workers > n_chunks:
        unit = "chunk" if n_chunks == 1 else "chunks"
        notes.append(f"{workers} workers capped at the run's {n_chunks} {unit}")
        workers = int(n_chunks)
    return WorkerCap(requested, workers, tuple(notes), over)


def cap_jobs(requested: object, name: str, *, backend: Backend | str = Backend.LOKY
             ) -> tuple[int, str | None]:
    """A command line's or a config's jobs setting: (the count to run with, the ``note:``
    line to print on stderr, or None when nothing was capped).

    The count is what :func:`cap_workers` gives without a number of chunks (−1 resolved to
    :func:`usable_cpus` on local backends); passing it on as ``n_jobs`` caps nothing more at
    the CPUs, so the engine and the sampler add no second note or warning.

    Examples
    --------
    >>> cap_jobs(1, "audit.jobs")
    (1, None)
    >>> n, line = cap_jobs(10**6, "audit.jobs")
    >>> line == f"note: audit.jobs = 1000000 capped at {n}, the CPUs this process may use"
    True
    """
    cap = cap_workers(requested, name=name, backend=backend)
    return cap.workers, ("\n".join(cap.lines) or None)


def joblib_backend(backend: object) -> Backend | RegisteredBackend:
    """``backend`` as a joblib backend: loky, threading, dask (with its optional extra), or a
    joblib backend registered by name (:func:`parse_backend`).

    Raises
    ------
    ValueError
        For ``"cuda"`` (not a joblib backend: the engine drives the GPU itself), a name that
        is neither a :class:`~audit.enums.Backend` nor registered, or dask without
        ``distributed`` installed.
    """
    backend = parse_backend(backend)
    if backend is Backend.CUDA:
        raise ValueError("backend must be one of 'loky', 'threading', 'dask' for joblib "
                         "workers, got backend='cuda'")
    if backend is Backend.DASK:
        import importlib.util

        if importlib.util.find_spec("distributed") is None:  # pragma: no cover
            raise ValueError("backend='dask' needs the optional extra: pip install .[dask]")
    return backend


_WATCHING = False


def watch_parent() -> None:
    """Exit this (worker) process as soon as its parent has gone; once per process.

    Called at the start of each job a loky worker runs: a daemon thread polls the parent's
    pid every :data:`PARENT_POLL_S` seconds and ends the process when it changes.
    """
    global _WATCHING
    if _WATCHING:
        return
    _WATCHING = True
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="audit-parent-watch", daemon=True).start()


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Raise :class:`Terminated` (SystemExit 143) on SIGTERM in the main thread, for the block.

    The default SIGTERM action ends the process at once and orphans its workers; an
    exception instead unwinds through joblib, which kills them. A handler the application
    installed itself is left alone, and so is a run outside the main thread (where Python
    cannot install handlers).
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def handler(signum, frame):
        raise Terminated

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def joblib_results(calls: Iterable, *, workers: int, backend: Backend | RegisteredBackend
                   ) -> Iterator[Iterator]:
    """The results of joblib ``calls`` (``joblib.delayed`` objects), in the order of the calls.

    Runs them on ``backend`` (loky, threading, dask or a registered backend) over ``workers`` (from
    :func:`cap_workers`), under :func:`sigterm_raises`. Leaving the block early (an exception,
    SIGTERM, Ctrl-C, a caller that stops iterating) aborts the pending calls and shuts the
    workers down now rather than when the generator is collected.
    """
    import joblib

    backend = joblib_backend(backend)
    with sigterm_raises(), joblib.parallel_config(backend=backend.value):
        results = joblib.Parallel(n_jobs=workers, return_as="generator")(calls)
        try:
            yield results
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results.close()
