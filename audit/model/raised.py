"""A release whose failure is one of its outputs: "raised" as an output symbol.

A library that raises, or whose process dies, on some inputs and not on others reveals which
kind of input it was given: the event "the call failed" is an output like any other. A
release that fails with probability 1 on z′ and never on z has ε = ∞ (the event {failed} has
probability 1 under z′ and 0 under z). :class:`RaisedAsOutput` makes that event countable by
the black-box audit, which otherwise ends at the first exception (``ImplementationError``):
a call that raises one of ``catch`` releases :data:`RAISED` instead, and the audit counts it
the way it counts every output. :data:`RAISED` is NaN, the value every attack already keeps
apart from the real numbers (the categorical attack compares NaN equal to NaN, the fitted
scores send it to a bin of its own); a wrapped release that returns NaN itself could not be
told apart from a failure, so that is refused (``ValueError``).

A failure that kills the process (OpenDP 0.16 panics inside an FFI function that cannot
unwind, and the process aborts: #2929) cannot be caught in the process: with
``own_process=True`` the calls run in a child process forked from the caller (POSIX only),
one child for as many calls as it survives; a child that dies (a signal, an exit) makes that
call release :data:`RAISED` and the next call forks a new child. A fork costs about 12 ms
(OpenDP and polars loaded, one core), a call that does not fail a pipe round trip. The
child's standard error is discarded (a panic prints its backtrace on every call). The
child's generator is seeded from the caller's (``rng.integers``), so a seeded release stays
reproducible.

Examples
--------
>>> import numpy as np
>>> def release(data, rng):
...     if np.isnan(data).any():
...         raise ValueError("NaN in the input")
...     return float(data.sum())
>>> wrapped = RaisedAsOutput(release, catch=(ValueError,))
>>> rng = np.random.default_rng(0)
>>> wrapped(np.ones((3, 1)), rng), bool(np.isnan(wrapped(np.full((3, 1), np.nan), rng)))
(3.0, True)
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import signal
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["RAISED", "RaisedAsOutput"]

#: the output symbol of a failed call
RAISED = float("nan")
_HEADER = struct.Struct("<Q")


def _send(fd: int, payload: bytes) -> None:
    data = _HEADER.pack(len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]


def _receive(fd: int) -> bytes | None:
    """One message from ``fd``; None when the other end closed before a whole one came."""
    head = _read_exactly(fd, _HEADER.size)
    return None if head is None else _read_exactly(fd, _HEADER.unpack(head)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts, left = [], size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _serve(release: Callable, catch: tuple, requests: int, replies: int) -> None:
    """The child's loop: (data, seed) in, ("ok", output) / ("raised", name) out."""
    faulthandler.disable()  # its dump of an abort goes to a copy of the caller's stderr
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    while (message := _receive(requests)) is not None:
        data, seed = pickle.loads(message)
        try:
            reply = ("ok", np.asarray(release(data, np.random.default_rng(seed)),
                                      dtype=np.float64))
        except catch as exc:
            reply = ("raised", type(exc).__name__)
        except BaseException as exc:  # not a failure the release declares: the caller's
            reply = ("error", f"{type(exc).__name__}: {exc}")
        _send(replies, pickle.dumps(reply))


@dataclass
class _Child:
    pid: int
    requests: int
    replies: int

    def close(self) -> None:
        for fd in (self.requests, self.replies):
            os.close(fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


@dataclass
class RaisedAsOutput:
    """``release(data, rng)`` with a failure released as :data:`RAISED` (module docstring).

    Parameters
    ----------
    release : callable
        The release, ``release(data, rng)`` → a number or a vector of numbers, never NaN.
    catch : tuple of exception types
        The exceptions that count as the output "raised" (default: any ``Exception``); any
        other propagates.
    own_process : bool
        Run the calls in a forked child, so that a failure killing the process counts too.
    """

    release: Callable
    catch: tuple = (Exception,)
    own_process: bool = False
    #: calls that released :data:`RAISED` so far, by the exception's name or "died"
    failures: dict = field(default_factory=dict, compare=False)
    _child: _Child | None = field(default=None, init=False, repr=False, compare=False)

    def __call__(self, data, rng: np.random.Generator):
        if self.own_process:
            out = self._in_child(np.asarray(data, dtype=np.float64),
                                 int(rng.integers(2**63)))
        else:
            try:
                out = self.release(data, rng)
            except self.catch as exc:
                out = self._failed(type(exc).__name__)
        if out is not RAISED and np.isnan(np.asarray(out, dtype=np.float64)).any():
            raise ValueError(f"release {self.release!r} returned NaN, the symbol of a failed "
                             "call: the two could not be told apart")
        return out

    def _failed(self, why: str) -> float:
        self.failures[why] = self.failures.get(why, 0) + 1
        return RAISED

    def _in_child(self, data: np.ndarray, seed: int):
        if self._child is None:
            self._child = self._fork()
        child = self._child
        try:
            _send(child.requests, pickle.dumps((data, seed)))
            message = _receive(child.replies)
        except BrokenPipeError:
            message = None
        if message is None:  # the child died on this call
            self._child = None
            child.close()
            return self._failed("died")
        status, value = pickle.loads(message)
        if status == "error":
            raise RuntimeError(f"release {self.release!r} raised {value} in its process")
        return self._failed(value) if status == "raised" else value

    def _fork(self) -> _Child:
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: serve, then leave without the parent's exit handlers
            code = 0
            try:
                os.close(request_write)
                os.close(reply_read)
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file per abort
                os.environ["RUST_BACKTRACE"] = "0"  # a panic's backtrace costs 0.4 s
                _serve(self.release, self.catch, request_read, reply_write)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(request_read)
        os.close(reply_write)
        return _Child(pid, request_write, reply_read)

    def close(self) -> None:
        """End the child process, if one runs (a later call forks a new one)."""
        if self._child is not None:
            child, self._child = self._child, None
            child.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to clean
            pass

    def __getstate__(self) -> dict:
        return {"release": self.release, "catch": self.catch, "own_process": self.own_process}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)
