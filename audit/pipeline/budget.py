"""How long an audit will take, measured before it starts.

A run of 10^15 trials per side is legal (the streams and counts allow up to ``MAX_TRIALS``)
but would take months: the command line refuses it up front, stating the expected duration
at the rate measured on this machine for this audit's laws, unless the user raises the limit.
"""

from __future__ import annotations

import time

import numpy as np

from audit.pipeline.config import AuditConfig

__all__ = ["expected_seconds", "LARGE_RUN_TRIALS", "format_duration"]

#: Runs with at least this many trials per side are timed before they start.
LARGE_RUN_TRIALS = 100_000_000


def _model_rate(plan) -> float:
    from audit.simulation.engine import default_edges, measure_rate
    from audit.statistics import Statistic

    P, Q = plan.P, plan.Q
    if P.is_scalar:
        statistic = Statistic.output(default_edges(P, Q, plan.config.audit.bins))
    else:  # the exact LLR: the slowest statistic a vector audit can count
        statistic = Statistic.llr(P, Q, np.linspace(-1.0, 1.0, plan.config.audit.bins + 1))
    return measure_rate(P, Q, statistic, backend=plan.config.engine_backend)


def _implementation_rate(plan, calls: int = 20) -> float:
    """Calls per second of the implementation on masked datasets (one process)."""
    from audit.simulation.callables import CallableRun, call_chunk

    run = CallableRun(plan.implementation, plan.z, plan.z_prime, plan.missingness, calls,
                      calls, 0, plan.dim, plan.config.implementation.batch
                      if plan.config.implementation is not None else True)
    t = time.perf_counter()
    call_chunk(run, 0)
    return 2.0 * calls / max(time.perf_counter() - t, 1e-9)


def expected_seconds(cfg: AuditConfig, plan) -> tuple[float, float]:
    """(seconds, draws or calls per second): the expected duration of the main run and the
    pilot at the rate measured now, in one process (workers divide it), or on the GPU with
    ``audit.backend = "cuda"``."""
    from audit.simulation.planning import usable_cpus

    if cfg.implementation is not None:
        rate = _implementation_rate(plan)
        draws = 2.0 * (cfg.audit.trials + plan.pilot_size)
    else:
        rate = _model_rate(plan)
        draws = 2.0 * (cfg.audit.trials + cfg.audit.pilot_size)
    workers = max(1, min(cfg.audit.jobs, usable_cpus())) if cfg.implementation is not None \
        else 1
    return draws / rate / workers, rate


def format_duration(seconds: float) -> str:
    """``3 min 20 s``, ``5.2 h``, ``41 days``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"
