"""Terminated: a SystemExit of status 143, one class wherever it is named."""

from __future__ import annotations

import signal

from audit.signals import Terminated


def test_terminated_is_a_system_exit_of_status_143():
    exc = Terminated()
    assert isinstance(exc, SystemExit) and exc.code == 128 + signal.SIGTERM == 143


def test_the_sampler_and_the_command_line_name_the_same_class():
    from audit.cli.interrupts import Terminated as cli_terminated
    from audit.simulation.processes import Terminated as sampler_terminated

    assert cli_terminated is sampler_terminated is Terminated
