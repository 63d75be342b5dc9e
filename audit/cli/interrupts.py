"""How a command stops when asked to: Ctrl-C (SIGINT, exit 130) and SIGTERM (exit 143).

:func:`own_signals` makes both an exception in the main thread, so that a command unwinds
through its ``finally`` blocks (a pip child killed, a partial folder removed, a cluster closed)
and prints one ``interrupted:`` line instead of dying where it stood: Ctrl-C raises
``KeyboardInterrupt`` even when the parent ignored SIGINT, and the first SIGTERM raises
:class:`Terminated`; a second SIGTERM ends the process at once (the default action), for a
clean-up that hangs.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from audit.signals import Terminated

__all__ = ["Terminated", "own_signals", "exit_status"]


def _terminate(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM: no clean-up
    raise Terminated


@contextlib.contextmanager
def own_signals() -> Iterator[None]:
    """For the block: Ctrl-C raises KeyboardInterrupt even when the parent ignored SIGINT (a
    background job of a non-interactive shell, ``(trap '' INT; ...)``), and SIGTERM raises
    :class:`Terminated` unless the parent ignored it (``nohup`` does not). The handlers found
    are put back afterwards (a command run in-process, from a test, leaves none behind). Only
    the main thread can set a handler (a command run from a thread keeps the ones it has)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if saved[signal.SIGTERM] is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def exit_status(exc: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
