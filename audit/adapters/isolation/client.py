"""The auditor's side of an isolated target: a worker process and the implementation over it.

:class:`Worker` starts ``worker.py`` with the environment's interpreter (``python -I``, in a
new session so that a terminal's Ctrl-C reaches the auditor only), waits for its ``ready``
frame (:data:`STARTUP_TIMEOUT`), and sends it batches over its standard input and output in
frames (:mod:`audit.adapters.isolation.framing`; no pickle crosses the environments). Each
answer has a deadline (:data:`CALL_TIMEOUT`). The worker's standard error goes to a temporary
file whose last lines are quoted when it fails.

Lifecycle: a worker that dies (its pipe closes), hangs (no answer in time) or breaks the
protocol is killed (its whole process group) and reported as a :class:`WorkerError`; a
library's own exception comes back as one line, as a ``RuntimeError`` (mid-run, the sampler
turns either into an ``ImplementationError``: exit 3), or as a ``ValueError`` while the target
is being set up (exit 2, before any work). A ``KeyboardInterrupt`` or ``SystemExit`` (SIGTERM)
while waiting kills the worker before it propagates; the worker is also killed when it is
garbage-collected and at interpreter exit (``weakref.finalize``), and the worker exits by
itself when its parent is gone (a parent killed by SIGKILL): no orphan.

:class:`IsolatedImplementation` is an ordinary implementation (``__call__(data, rng)``,
``batch(datasets, rng)``, ``claim``, ``name``, ``params``): each batch draws one seed from
``rng`` for the library (used where the library can be seeded). It is sendable to worker
processes: pickling drops its worker, and each process starts its own on first use (threads
of one process share that process's worker, one batch at a time).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from audit.adapters.isolation import environments
from audit.adapters.isolation.environments import Environment
from audit.adapters.isolation.framing import (
    FrameError,
    FrameReader,
    FrameTimeout,
    array_of,
    write_frame,
)
from audit.model.implementation import Claim
from audit.policy import BatchCheckRule

__all__ = ["STARTUP_TIMEOUT", "CALL_TIMEOUT", "WorkerError", "WorkerTimeout", "Worker",
           "launch", "IsolatedImplementation", "ParametersChecked", "parameters_only"]

#: seconds a worker may take to import its library and say ``ready``
STARTUP_TIMEOUT = 120.0
#: seconds one batch may take
CALL_TIMEOUT = 600.0
_HERE = Path(__file__).resolve().parent
WORKER_SCRIPT = _HERE / "worker.py"
FRAMING_MODULE = _HERE / "framing.py"
_TAIL_BYTES = 4000


class WorkerError(RuntimeError):
    """The worker died, hung or sent something that is not a frame (it has been killed)."""


class WorkerTimeout(WorkerError):
    """The worker did not answer in time (it has been killed)."""


def _stop(process: subprocess.Popen, log, scratch: str | None = None) -> None:
    """End ``process`` and its process group: ask, then kill; close its log and remove its
    scratch folder (its ``TMPDIR``: what a killed worker cannot remove itself)."""
    if process.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            write_frame(process.stdin.fileno(), {"op": "exit"})
        try:
            process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the group is its pid
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5.0)
    for stream in (process.stdin, process.stdout, log):
        with contextlib.suppress(OSError, ValueError):
            stream.close()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


class Worker:
    """One worker process of an isolated target (see the module docstring).

    Parameters
    ----------
    python : path
        The environment's interpreter.
    module : path
        The library-side module (it must not import ``audit``).
    name : str
        The target, for messages.
    startup_timeout, call_timeout : float
        Seconds, > 0.
    """

    def __init__(self, python: str | Path, module: str | Path, name: str, *,
                 startup_timeout: float = STARTUP_TIMEOUT,
                 call_timeout: float = CALL_TIMEOUT) -> None:
        self.name = name
        self.call_timeout = float(call_timeout)
        self._log = tempfile.TemporaryFile()
        # the worker's temporary files (Spark's scratch) go to a folder this side removes
        # when it stops the worker, killed or not
        self.scratch = tempfile.mkdtemp(prefix="audit-worker-")
        try:
            self.process = subprocess.Popen(
                [str(python), "-I", str(WORKER_SCRIPT), str(FRAMING_MODULE), str(module)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                start_new_session=True, close_fds=True,
                env={**os.environ, "TMPDIR": self.scratch})
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self._log.close()
            raise
        self._finalizer = weakref.finalize(self, _stop, self.process, self._log, self.scratch)
        self._reader = FrameReader(self.process.stdout.fileno())
        try:
            self.ready = self._answer("ready", float(startup_timeout), "starting")[0]
        except RuntimeError:  # its library-side module failed to import: it exits
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and self.process.poll() is None

    def close(self) -> None:
        """Stop the worker (at once if it does not exit when asked)."""
        self._finalizer()

    def _tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, self._log.tell() - _TAIL_BYTES))
            lines = [ln.strip() for ln in self._log.read().decode("utf-8", "replace")
                     .splitlines() if ln.strip()]
            if lines:
                return f"; its last output: {lines[-1][:300]}"
        return ""

    def _failed(self, exc: BaseException, doing: str) -> WorkerError:
        """The worker killed, and the error that says why."""
        if isinstance(exc, FrameTimeout):
            self.close()
            return WorkerTimeout(f"{self.name}: the worker (pid {self.pid}) did not answer "
                                 f"within the timeout while {doing}; it was killed"
                                 f"{self._tail()}")
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=2.0)
        code = self.process.poll()
        self.close()
        what = (f"died (exit status {code})" if code is not None
                else f"broke the protocol ({exc})")
        return WorkerError(f"{self.name}: the worker (pid {self.pid}) {what} while {doing}"
                           f"{self._tail()}")

    def _answer(self, op: str, timeout: float, doing: str) -> tuple[dict, bytes]:
        """The next frame, which must be ``op`` (an ``error`` frame: a RuntimeError with the
        library's message)."""
        try:
            header, payload = self._reader.read(timeout)
        except FrameError as exc:
            raise self._failed(exc, doing) from None
        except BaseException:  # Ctrl-C, SIGTERM as SystemExit: the worker goes first
            self.close()
            raise
        if header["op"] == "error":
            raise RuntimeError(f"{self.name}: {header.get('message', '(no message)')}")
        if header["op"] != op:
            self.close()
            raise WorkerError(f"{self.name}: the worker answered {header['op']!r} while "
                              f"{doing} (expected {op!r}); it was killed")
        return header, payload

    def _send(self, header: dict, array: np.ndarray | None, doing: str) -> None:
        try:
            write_frame(self.process.stdin.fileno(), header, array)
        except (OSError, ValueError) as exc:  # BrokenPipeError: it died
            raise self._failed(exc, doing) from None

    def init(self, params: dict) -> dict:
        """Hand the library-side module the target's parameters; what the library states."""
        self._send({"op": "init", "params": params}, None, "setting up")
        return self._answer("ok", self.call_timeout, "setting up")[0].get("info") or {}

    def call(self, datasets: np.ndarray, seed: int) -> np.ndarray:
        """The releases of a stack of datasets (m, n, d)."""
        self._send({"op": "call", "seed": int(seed)}, datasets, "releasing")
        header, payload = self._answer("out", self.call_timeout, "releasing")
        try:
            return array_of(header, payload)
        except FrameError as exc:
            raise self._failed(exc, "releasing") from None


class ParametersChecked(Exception):
    """Raised by :func:`launch` inside :func:`parameters_only`: the adapter checked its
    parameters and would now build its environment and start its worker."""


_DRY = threading.local()


@contextlib.contextmanager
def parameters_only():
    """Within it, :func:`launch` starts nothing and raises :class:`ParametersChecked`: loading
    a config checks an isolated target's parameters without building its environment or
    starting a worker (a Spark-backed one takes half a minute)."""
    before = getattr(_DRY, "on", False)
    _DRY.on = True
    try:
        yield
    finally:
        _DRY.on = before


def launch(environment: Environment, module: str | Path, params: dict, *, name: str,
           startup_timeout: float = STARTUP_TIMEOUT,
           call_timeout: float = CALL_TIMEOUT) -> tuple[Worker, dict]:
    """Build (once) the environment, start a worker and initialise it: (worker, info).

    Raises
    ------
    ValueError
        Anything that fails before work: the interpreter missing, the build failing, the
        worker not starting, the library refusing the parameters (one line each).
    ParametersChecked
        Inside :func:`parameters_only`, before anything is built.
    """
    if getattr(_DRY, "on", False):
        raise ParametersChecked(name)
    built = environments.ensure(environment)
    try:
        worker = Worker(built.python, module, name, startup_timeout=startup_timeout,
                        call_timeout=call_timeout)
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"{name}: the worker could not start in {built.path}: {exc}") from None
    try:
        return worker, worker.init(params)
    except RuntimeError as exc:
        worker.close()
        raise ValueError(str(exc)) from None


@dataclass(frozen=True, eq=False)
class IsolatedImplementation:
    """An implementation run by a worker in its own environment (see the module docstring).

    Parameters
    ----------
    environment : Environment
    module : str
        Path of the library-side module.
    params : dict
        JSON-serialisable parameters handed to the module's ``make``.
    claim : Claim
    name : str
    info : dict
        What the library stated when set up (its version, its privacy cost).
    startup_timeout, call_timeout : float
        Seconds.
    batch_in_one_call : bool
        True when the library side makes a batch's releases in one library call (SmartNoise
        SQL's GROUP BY over a public key per dataset): the audit checks them for independence
        before it counts them as calls (:mod:`audit.model.batch_check`).
    batch_check_rule : BatchCheckRule, optional
        The sizes of that check for this implementation, where an unbatched call is too dear
        for the policy's (Tumult: each call is a Spark job); None: the policy's.

    Notes
    -----
    ``module_sha256`` (set here) is the digest of the library-side module's source: it is
    part of the implementation's ``repr``, which checkpoint digests read
    (:func:`audit.simulation.checkpoints.code_digest`), so an edited module is a new run.
    """

    environment: Environment
    module: str
    params: dict
    claim: Claim
    name: str
    info: dict = field(default_factory=dict)
    startup_timeout: float = STARTUP_TIMEOUT
    call_timeout: float = CALL_TIMEOUT
    batch_in_one_call: bool = False
    batch_check_rule: BatchCheckRule | None = None
    module_sha256: str = field(default="", init=False)
    _state: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.claim, Claim):
            raise ValueError(f"claim must be an audit.model.implementation.Claim, got "
                             f"claim={self.claim!r}")
        try:
            source = Path(self.module).read_bytes()
        except OSError as exc:
            raise ValueError(f"{self.name}: the library-side module {self.module} cannot be "
                             f"read ({exc.strerror or exc})") from None
        object.__setattr__(self, "module_sha256", hashlib.sha256(source).hexdigest())
        self._state["lock"] = threading.Lock()

    def adopt(self, worker: Worker) -> None:
        """Use ``worker`` (already initialised, e.g. by :func:`launch`) in this process."""
        self._state.update(worker=worker, pid=os.getpid())

    def _worker(self) -> Worker:
        worker = self._state.get("worker")
        if worker is None or self._state.get("pid") != os.getpid() or not worker.alive:
            worker, _ = launch(self.environment, self.module, self.params, name=self.name,
                               startup_timeout=self.startup_timeout,
                               call_timeout=self.call_timeout)
            self.adopt(worker)
        return worker

    def cache_identity(self) -> dict | None:
        """What the batch check's cached result depends on besides the target, its
        parameters and the check's rule (:mod:`audit.model.batch_check`): the environment's
        key (its pinned requirements, the interpreter), the library-side module's digest and
        what the library stated (its version); None when the environment is not built here
        (no cache on disk)."""
        built = environments.existing(self.environment)
        if built is None:
            return None
        return {"environment": built.path.name, "module_sha256": self.module_sha256,
                "info": self.info}

    @property
    def batch_check_folder(self) -> Path | None:
        """Where the batch check's results are cached: in the built environment's folder
        (removed with it by ``env remove``); None when it is not built."""
        built = environments.existing(self.environment)
        return None if built is None else built.path / "batch-checks"

    def batch(self, datasets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The releases of ``datasets`` (m, n, d): (m,) or (m, dim)."""
        seed = int(rng.integers(2**63))
        with self._state["lock"]:
            return self._worker().call(np.asarray(datasets, dtype=np.float64), seed)

    def __call__(self, data: np.ndarray, rng: np.random.Generator):
        out = self.batch(np.asarray(data, dtype=np.float64)[None], rng)
        return float(out[0]) if out.ndim == 1 else out[0]

    def close(self) -> None:
        """Stop this process's worker (a later call starts a new one)."""
        worker = self._state.pop("worker", None)
        if worker is not None:
            worker.close()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_state"] = {}  # the worker and its lock stay in this process
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._state["lock"] = threading.Lock()
