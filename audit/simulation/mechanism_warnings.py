"""Warnings raised inside an implementation's calls: kept, then reported once each.

A numpy ``RuntimeWarning`` or a library's own warning raised while an implementation runs
would reach stderr as a raw Python warning (a file path and a source line), once per worker
process. Instead, :mod:`audit.simulation.callables` runs the calls under :func:`caught`:
each distinct (target, category, message) is kept in this process's :data:`LOG` (at most
:data:`MAX_KEPT` of them, the others only counted, so a mechanism that warns on every call
costs no memory), worker processes send theirs back with their results (:meth:`WarningLog.take`,
:meth:`WarningLog.merge`), and the calling process re-emits each once per audit as a
:class:`MechanismWarning` ``"<target>: <message>"`` (:func:`emit`). The command line prints
that as one line, ``warning: <target>: <message>`` (:mod:`audit.cli`).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

__all__ = ["MAX_KEPT", "MechanismWarning", "WarningLog", "LOG", "caught", "emit"]

#: Distinct warnings kept per process between two reports (the others are counted).
MAX_KEPT = 8
#: Characters of a message kept.
MAX_CHARS = 300


class MechanismWarning(UserWarning):
    """A warning raised inside an implementation's calls during an audit, reported once as
    ``"<target>: <message>"``."""


class WarningLog:
    """The distinct warnings of implementations' calls in this process (bounded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, str, str], None] = {}
        self._dropped: dict[str, int] = {}
        self._reported: set[tuple[str, str, str]] = set()

    def add(self, target: str, category: str, message: str) -> None:
        """Keep one warning: once (one kept or reported in this audit is not kept again),
        and only counted beyond :data:`MAX_KEPT`."""
        key = (target, category, " ".join(str(message).split())[:MAX_CHARS])
        with self._lock:
            if key in self._kept or key in self._reported:
                return
            if len(self._kept) < MAX_KEPT:
                self._kept[key] = None
            else:
                self._dropped[target] = self._dropped.get(target, 0) + 1

    def take(self) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
        """The warnings kept and the counts of those dropped, removed from the log (what a
        worker sends back with its results)."""
        with self._lock:
            kept, dropped = list(self._kept), dict(self._dropped)
            self._kept.clear()
            self._dropped.clear()
        return kept, dropped

    def merge(self, taken: tuple[list[tuple[str, str, str]], dict[str, int]]) -> None:
        """Add what :meth:`take` returned (in a worker process or thread)."""
        kept, dropped = taken
        for key in kept:
            self.add(*key)
        with self._lock:
            for target, count in dropped.items():
                self._dropped[target] = self._dropped.get(target, 0) + count

    def new_audit(self) -> None:
        """Forget what was reported: each warning is reported once per audit."""
        with self._lock:
            self._reported.clear()

    def report(self) -> list[tuple[str, str, str]]:
        """The warnings to report now (each once per audit), and for each target whose
        warnings were not all kept, how many were not."""
        kept, dropped = self.take()
        with self._lock:
            self._reported.update(kept)
        notes = [(t, "", f"{n} more warning(s) with other messages not kept")
                 for t, n in dropped.items()]
        return kept + notes


#: This process's log.
LOG = WarningLog()

_state: dict = {"depth": 0, "context": None}
_state_lock = threading.Lock()


@contextlib.contextmanager
def caught(target: str) -> Iterator[None]:
    """Warnings raised in the block are kept in :data:`LOG` under ``target``, not shown.

    Thread-safe: the threads of a pool share one capture (Python's warning filters are
    global), entered by the first and left by the last.
    """

    def keep(message, category, filename, lineno, file=None, line=None):
        LOG.add(target, getattr(category, "__name__", str(category)), str(message))

    with _state_lock:
        if _state["depth"] == 0:
            context = warnings.catch_warnings()
            context.__enter__()
            warnings.simplefilter("always")
            warnings.showwarning = keep
            _state["context"] = context
        _state["depth"] += 1
    try:
        yield
    finally:
        with _state_lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                _state["context"].__exit__(None, None, None)
                _state["context"] = None


def emit() -> None:
    """Re-emit, in the calling process, each warning of :data:`LOG` not yet reported in this
    audit, once, as a :class:`MechanismWarning` ``"<target>: <message>"``."""
    for target, _category, message in LOG.report():
        warnings.warn(f"{target}: {message}", MechanismWarning, stacklevel=2)
