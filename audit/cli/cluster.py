"""The local dask cluster of ``run --backend dask``, and how it stops.

A Ctrl-C reaches the whole process group, a SIGTERM may reach only this process: either way
this process alone ends the run, closes the client and the cluster, and prints one
``interrupted:`` line.

- The workers ignore SIGINT (:func:`dask_setup`, their preload): else each prints a
  KeyboardInterrupt traceback. This process does not ignore it while the cluster starts (the
  workers cannot inherit an ignored SIGINT without this process losing a Ctrl-C pressed
  meanwhile: the run then went on, and looked hung); a stop asked for while the cluster
  starts waits until it has started, then closes it.
- The cluster's processes write their standard error into a pipe that a thread of this
  process copies to its own (half a second late), until the run is stopped: from the signal
  on, it is drained and dropped, for workers that lose their scheduler while the cluster closes
  print tracebacks (a heartbeat failing, a client's ``__del__`` at exit) that say nothing
  about the audit, nor does the traceback of a worker that got the Ctrl-C before its preload
  ran (held half a second, it is dropped too). What a worker's failure means for the audit
  comes back through dask (a task's exception, a worker that died: exit 3).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["local_cluster", "dask_setup"]


def dask_setup(worker) -> None:
    """The workers' preload (run in each worker process as it starts): ignore SIGINT."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


#: seconds the copy holds what the cluster's processes write before passing it on: a worker
#: hit by the same Ctrl-C as this process may print before this process's handler has run
HOLD_S = 0.5


class _Forwarder:
    """A pipe for child processes' standard error, copied to ours (:data:`HOLD_S` late) until
    :attr:`stopped` is set; from then on drained and dropped."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        self.target = os.dup(sys.stderr.fileno())
        self.stopped = threading.Event()
        threading.Thread(target=self._pump, name="audit-dask-stderr", daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                data = os.read(self.read, 1 << 16)
            except OSError:
                return
            if not data:  # every process holding the pipe is gone
                os.close(self.read)
                return
            if not self.stopped.wait(HOLD_S):
                with contextlib.suppress(OSError):
                    os.write(self.target, data)

    @contextlib.contextmanager
    def as_stderr(self) -> Iterator[None]:
        """Our fd 2 is the pipe for the block, so that the processes started in it inherit it;
        our own writes meanwhile are copied too."""
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(self.write, 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            os.close(self.write)  # the children hold their copies

    @contextlib.contextmanager
    def muted_on_signals(self) -> Iterator[None]:
        """For the block (in the main thread): SIGINT and SIGTERM stop the copying first, then
        do what they did (KeyboardInterrupt, :class:`audit.cli.interrupts.Terminated`) or,
        while :attr:`deferring`, are kept for :meth:`raise_deferred`."""
        self.deferring, self.pending = False, None
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        self.previous = saved

        def handler(signum, frame):
            self.stopped.set()
            if self.deferring:
                self.pending = self.pending or signum
            else:
                _act(saved[signum], signum, frame)

        for s, previous in saved.items():
            if previous != signal.SIG_IGN:
                signal.signal(s, handler)
        try:
            yield
        finally:
            for s, previous in saved.items():
                if signal.getsignal(s) is handler:
                    signal.signal(s, previous)

    def raise_deferred(self) -> None:
        """Stop deferring; act on a signal that came meanwhile."""
        self.deferring = False
        if self.pending is not None:
            _act(self.previous[self.pending], self.pending, None)


def _act(previous, signum: int, frame) -> None:
    """What the handler ``previous`` (replaced) did on ``signum``."""
    if callable(previous):
        previous(signum, frame)
    elif signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator[None]:
    """A ``distributed.LocalCluster`` of ``workers`` single-threaded worker processes on
    loopback and a client over it (the default client: joblib's dask backend finds it), closed
    on the way out; see the module docstring for a run that is stopped."""
    import logging

    import distributed

    forwarder = _Forwarder()
    with forwarder.muted_on_signals():
        # a cluster left half-started fails again at exit (distributed's atexit hook, with a
        # traceback): a stop asked for while it starts waits until it has, then closes it
        forwarder.deferring = True
        try:
            with forwarder.as_stderr():
                cluster = distributed.LocalCluster(
                    n_workers=max(workers, 1), threads_per_worker=1, host="127.0.0.1",
                    dashboard_address=":0", silence_logs=logging.ERROR,
                    preload=[__name__])
        except Exception:
            forwarder.raise_deferred()  # a worker killed by the Ctrl-C is not the failure
            raise
        try:
            with cluster, distributed.Client(cluster):
                forwarder.raise_deferred()
                yield
        except BaseException:
            forwarder.stopped.set()
            raise
