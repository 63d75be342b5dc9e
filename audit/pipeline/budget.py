"""How long an audit will take, measured before it starts.

A run of 10^15 trials per side is legal (the streams and counts allow up to ``MAX_TRIALS``)
but would take months: the command line refuses it up front, stating the expected duration
at the rate measured on this machine for this audit's laws, unless the user raises the limit.
"""

from __future__ import annotations

from audit.pipeline.subject import pilot_size

__all__ = ["expected_seconds", "LARGE_RUN_TRIALS", "format_duration", "check_duration"]

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


def check_duration(subject, max_hours: float, *, trials: str = "--trials",
                   hours: str = "--max-hours") -> str | None:
    """Refuse an audit expected to take longer than ``max_hours`` at the rate measured here
    (a ``ValueError`` naming the options ``trials`` and ``hours`` as the caller wrote them);
    return the estimate of a run expected to take over a minute (None otherwise). A model
    audit below ``LARGE_RUN_TRIALS // 100`` draws is not timed (it takes seconds). The one
    rule of the command line and the Python API (``assert_private``)."""
    au = subject.config.audit
    pilot = pilot_size(subject)
    if subject.unit == "draws" and au.trials + pilot < LARGE_RUN_TRIALS // 100:
        return None
    seconds, rate = expected_seconds(subject)
    unit = subject.unit
    if seconds > max_hours * 3600:
        raise ValueError(
            f"this audit ({trials} {au.trials:.3g} and a pilot of {pilot:.3g} {unit} per side) "
            f"would take about {format_duration(seconds)} at {rate:.3g} {unit}/s measured here, "
            f"more than {hours} {max_hours:g}; lower {trials} (or audit.pilot_trials), or "
            f"raise {hours} (and use --checkpoint DIR so that an interrupted run resumes)")
    if seconds > 60:
        return f"expected duration about {format_duration(seconds)} at {rate:.3g} {unit}/s " \
               "measured here"
    return None
