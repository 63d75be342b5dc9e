"""How long an audit will take, measured before it starts.

A run of 10^15 trials per side is legal (the streams and counts allow up to ``MAX_TRIALS``)
but would take months: the command line refuses it up front, stating the expected duration
at the rate measured on this machine for this audit's laws, unless the user raises the limit.
"""

from __future__ import annotations

from audit.pipeline.subject import pilot_size

__all__ = ["expected_seconds", "LARGE_RUN_TRIALS", "format_duration"]

#: Runs with at least this many trials per side are timed before they start.
LARGE_RUN_TRIALS = 100_000_000


def expected_seconds(subject) -> tuple[float, float]:
    """(seconds, draws or calls per second): the expected duration of the main run and the
    pilot of ``subject``'s audit at the rate measured now (``subject.rate``), divided among
    the processes that share the work (``subject.workers``)."""
    au = subject.config.audit
    rate = subject.rate()
    draws = 2.0 * (au.trials + pilot_size(subject))
    return draws / rate / subject.workers(au.jobs), rate


def format_duration(seconds: float) -> str:
    """``3 min 20 s``, ``5.2 h``, ``41 days``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"
