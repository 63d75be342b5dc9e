"""How a command stops: the handlers :func:`own_signals` installs for its block and puts back,
SIGTERM as :class:`Terminated` (exit 143) once, then the default action."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from audit.cli import main
from audit.cli.interrupts import Terminated, exit_status, own_signals


def test_sigterm_raises_terminated_once_and_the_handlers_come_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(Terminated) as info, own_signals():
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert callable(signal.getsignal(signal.SIGTERM))  # never SIGTERM ourselves without
        os.kill(os.getpid(), signal.SIGTERM)
    assert info.value.code == 143 and exit_status(info.value) == 143
    assert isinstance(info.value, SystemExit)  # code that does not know it unwinds as on exit
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_second_sigterm_is_not_caught():
    """After the first SIGTERM the default action is back: a clean-up that hangs can still be
    ended by a second one (checked by reading the handler, not by dying)."""
    old = signal.getsignal(signal.SIGTERM)
    try:
        with own_signals():
            handler = signal.getsignal(signal.SIGTERM)
            with pytest.raises(Terminated):
                handler(signal.SIGTERM, None)
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, old)


def test_an_ignored_sigterm_stays_ignored_and_ctrl_c_is_130():
    old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with own_signals():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        assert exit_status(KeyboardInterrupt()) == 130
    finally:
        signal.signal(signal.SIGTERM, old)


def test_off_the_main_thread_nothing_is_installed():
    seen = []

    def run():
        with own_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [before]


def test_a_command_run_in_process_leaves_no_handler_behind(tmp_path, capsys, monkeypatch):
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setenv("MISSINGNESS_AUDIT_CACHE", str(tmp_path))
    assert main(["env", "list"]) == 0
    capsys.readouterr()
    assert {s: signal.getsignal(s) for s in before} == before
