"""One audit end to end: plan → pilot → attack → statistic and region → main run → bound.

The runner only orchestrates: each step is a call into the layer that owns it (the plan and
its ceilings: :mod:`audit.pipeline.plan` over ``audit.model`` and ``audit.theory``; sampling:
``audit.simulation``; regions and bounds: ``audit.estimation``; the distinguisher: an attack
loaded by name). For a correct implementation, with probability ≥ confidence,

    eps_lower ≤ eps_pair ≤ eps_theory,   eps_lower ≤ eps_pair ≤ eps_fdp.

Randomness: ``SeedSequence(seed)`` is spawned into three independent streams: the raw pilot
sample an attack is fitted on (and the statistic's range read from), the selection pilot
(histogram counts from which a region is chosen) and the main run. The main run never reuses
pilot randomness, so a region chosen on the pilot is independent of the counts it is
evaluated on.

Memory is flat in the trial counts: the raw pilot is capped at :data:`MAX_RAW_PILOT` draws
per side, and the selection pilot, like the main run, is counted by the kernels into fixed
bins as it is drawn.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from audit.enums import Selection
from audit.estimation import regions
from audit.estimation.regions import EpsLowerResult
from audit.estimation.tradeoff_points import (
    TradeoffPoints,
    empirical_tradeoff_points,
    tradeoff_violation,
)
from audit.pipeline.config import AuditConfig
from audit.pipeline.plan import AuditPlan, plan_audit
from audit.pipeline.results import AuditResult, to_jsonable
from audit.protocols import Attack, Laws, Pilot, Score, load_attack
from audit.statistics import OutputValue, Statistic, edges_spanning

__all__ = ["run_audit", "run_tradeoff_audit", "TradeoffAudit", "resolve_selection"]

#: Number of pilot quantiles a Bonferroni grid declares (thresholds; two directions each).
GRID_QUANTILES = 41
#: Most raw pilot draws per side an audit keeps in memory (attack fit, statistic range, grid
#: quantiles); the rest of the pilot is counted by the kernels.
MAX_RAW_PILOT = 100_000


class _Timer:
    """Seconds spent in each named phase of an audit."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0

    @property
    def total(self) -> float:
        return sum(self.phases.values())


def _streams(seed: int) -> tuple[int, int, int]:
    """Independent 63-bit seeds: raw pilot, selection pilot, main run."""
    children = np.random.SeedSequence(seed).spawn(3)
    return tuple(int(c.generate_state(1, np.uint64)[0] >> np.uint64(1)) for c in children)


def resolve_selection(selection: Selection, attack: Attack, scalar: bool) -> Selection:
    """``AUTO`` → ``MODEL`` for white-box attacks on scalar outputs, else ``PILOT``."""
    if selection is Selection.AUTO:
        return Selection.MODEL if (attack.white_box and scalar) else Selection.PILOT
    if selection is Selection.MODEL and not (attack.white_box and scalar):
        raise ValueError("audit.selection='model' needs a white-box attack and a scalar output")
    return selection


def _draw_pilot(plan: AuditPlan, size: int, seed: int) -> Pilot:
    """Raw pilot draws of both sides (side 0: A_D(z), side 1: A_D(z') of one stream key)."""
    from audit.simulation.engine import sample_outputs

    return Pilot(sample_outputs(plan.P, size, seed, side=0),
                 sample_outputs(plan.Q, size, seed, side=1))


def _pilot_sizes(attack: Attack, selection: Selection, size: int) -> tuple[int, int]:
    """(raw draws per side, counted selection draws per side) of a pilot of ``size``.

    A black-box attack is fitted on raw draws and the region chosen on other draws, so the
    region is not tuned to the noise the score was fitted to; a white-box attack needs raw
    draws only for the statistic's range. Model selection draws no pilot at all.
    """
    if selection is Selection.MODEL:
        return 0, 0
    if attack.white_box:
        return min(size, MAX_RAW_PILOT), size
    fit = min(size // 2, MAX_RAW_PILOT)
    return fit, size - fit


def _fit(attack: Attack, pilot: Pilot, plan: AuditPlan) -> Score:
    """Fit the attack on the raw pilot; white-box attacks also see the laws."""
    if attack.white_box:
        return attack.fit(pilot, Laws(plan.P, plan.Q))
    return attack.fit(pilot)


def _statistic(score: Score, plan: AuditPlan, pilot: Pilot, bins: int) -> Statistic:
    """The engine statistic with fixed edges, decided before the main run: the output's own
    range for scalar outputs, the pilot's projected range for kernel statistics."""
    from audit.simulation.engine import default_edges, project_outputs

    if isinstance(score.projection, OutputValue):
        return Statistic(score.projection, default_edges(plan.P, plan.Q, bins))
    provisional = Statistic(score.projection, [0.0, 1.0])  # edges are not read to project
    values = np.concatenate([project_outputs(plan.P, plan.Q, provisional, pilot.p),
                             project_outputs(plan.P, plan.Q, provisional, pilot.q)])
    return Statistic(score.projection, edges_spanning(values, bins))


def _grid_thresholds(score: Score, pilot: Pilot) -> np.ndarray:
    """The Bonferroni grid, declared from pilot quantiles before the main run."""
    levels = np.linspace(0.0, 1.0, GRID_QUANTILES)
    if isinstance(score.projection, OutputValue):
        return np.unique(score(np.quantile(np.concatenate([pilot.p, pilot.q]), levels)))
    return np.unique(np.quantile(np.concatenate([score(pilot.p), score(pilot.q)]), levels))


def _bound(selection: Selection, plan: AuditPlan, score: Score, statistic: Statistic,
           raw: Pilot, selection_counts, counts, alpha: float) -> EpsLowerResult:
    """Choose the region as ``selection`` says (never from the main counts) and bound it."""
    bin_scores = score.per_bin(statistic.edges)
    cp, cq, delta = counts.counts_p, counts.counts_q, plan.audit_delta
    if selection is Selection.GRID:
        return regions.grid_bound(cp, cq, bin_scores, _grid_thresholds(score, raw), delta,
                                  alpha)
    if selection is Selection.MODEL:
        region = regions.select_region_by_model(plan.P, plan.Q, statistic.edges, bin_scores,
                                                counts.trials, delta, alpha)
    else:
        region = regions.select_region_on_pilot(
            selection_counts.counts_p, selection_counts.counts_q, bin_scores, delta,
            pilot_alpha=regions.PILOT_GUARD_ALPHA)
    return regions.region_bound(cp, cq, bin_scores, region, delta, alpha,
                                method=selection.value)


def _count(plan: AuditPlan, statistic: Statistic, trials: int, seed: int, progress: bool,
           label: str, checkpoint: str | None = None):
    """Histogram counts of ``trials`` draws per side, counted by the kernels as drawn."""
    from audit.simulation.engine import run_histograms

    return run_histograms(plan.P, plan.Q, statistic, trials, seed,
                          n_jobs=plan.config.audit.jobs, backend=plan.config.engine_backend,
                          progress=progress,
                          label=f"{plan.config.name}: {label}", checkpoint=checkpoint)


def run_audit(cfg: AuditConfig, *, progress: bool = False,
              plan: AuditPlan | None = None) -> AuditResult:
    """Run one audit as configured.

    Parameters
    ----------
    cfg : AuditConfig
        Validated configuration (:func:`audit.pipeline.config.load_config`).
    progress : bool
        Show a progress bar over the main run's chunks.
    plan : AuditPlan, optional
        A precomputed :func:`plan_audit` (or, for a config with an ``[implementation]``,
        :func:`audit.pipeline.implementation.plan_implementation_audit`) for this config.

    Returns
    -------
    AuditResult
    """
    if cfg.implementation is not None:
        from audit.pipeline.implementation import run_implementation_audit

        return run_implementation_audit(cfg, progress=progress, plan=plan)
    timer = _Timer()
    au = cfg.audit
    plan = plan if plan is not None else plan_audit(cfg)
    timer.phases["plan"] = plan.seconds  # measured where it was built
    with timer.phase("plan"):
        attack = load_attack(au.attack)
        selection = resolve_selection(au.selection, attack, plan.is_scalar)
    seed_raw, seed_select, seed_main = _streams(au.seed)
    n_raw, n_select = _pilot_sizes(attack, selection, au.pilot_size)
    with timer.phase("pilot"):
        raw = _draw_pilot(plan, n_raw, seed_raw) if n_raw else Pilot(np.empty(0), np.empty(0))
    with timer.phase("fit"):
        score = _fit(attack, raw, plan)
        statistic = _statistic(score, plan, raw, au.bins)
    with timer.phase("pilot"):
        selection_counts = (_count(plan, statistic, n_select, seed_select, progress, "pilot")
                            if n_select else None)
    with timer.phase("main run"):
        counts = _count(plan, statistic, au.trials, seed_main, progress, "main run",
                        au.checkpoint)
    with timer.phase("selection and bound"):
        res = _bound(selection, plan, score, statistic, raw, selection_counts, counts,
                     au.alpha)
    return AuditResult(
        name=cfg.name, eps_lower=float(res.eps_lower), eps_point=res.plug_in(),
        eps_pair=plan.eps_pair, eps_pair_error=plan.eps_pair_error,
        eps_theory=plan.eps_theory, theory=plan.theory, eps_fdp=plan.eps_fdp,
        eps_base=plan.eps_base, eps_mar_formula=plan.eps_mar_formula, delta=plan.audit_delta,
        p_star=plan.p_star, rho=plan.rho, missing_class=plan.missing_class.name,
        noise_scale=plan.noise_scale, attack=au.attack, selection=selection.value,
        trials=au.trials, pilot_trials=n_raw + n_select, seconds=timer.total,
        confidence=au.confidence,
        seed=au.seed, witness=to_jsonable(res), config=cfg.to_dict(), timings=timer.phases,
    )


@dataclass(frozen=True, eq=False)
class TradeoffAudit:
    """Empirical trade-off points of one pair, simultaneously valid at ``points.alpha``.

    ``fdp_violation`` is max_i f(α_hi,i) − β_hi,i for the §7 curve f (positive = the curve is
    violated at the stated confidence).
    """

    plan: AuditPlan
    points: TradeoffPoints
    fdp_violation: float | None
    trials: int
    seconds: float


def run_tradeoff_audit(cfg: AuditConfig, *, n_thresholds: int = 12, progress: bool = False,
                       plan: AuditPlan | None = None) -> TradeoffAudit:
    """Empirical trade-off points for a scalar-output audit, checked against the §7 curve.

    Thresholds on the exact log-likelihood ratio are declared from pilot quantiles (the pilot
    streams are independent of the main run), and every point's two error bounds hold
    simultaneously at 1 − alpha (Bonferroni,
    :func:`audit.estimation.tradeoff_points.empirical_tradeoff_points`).
    """
    from audit.simulation.engine import default_edges

    t0 = time.perf_counter()
    plan = plan if plan is not None else plan_audit(cfg)
    if not plan.is_scalar:
        raise ValueError("run_tradeoff_audit needs a scalar output")
    seed_raw, _, seed_main = _streams(cfg.audit.seed)
    pilot = _draw_pilot(plan, min(cfg.audit.pilot_size, MAX_RAW_PILOT), seed_raw)
    score = _fit(load_attack("exact-lr"), pilot, plan)
    statistic = Statistic(score.projection, default_edges(plan.P, plan.Q, cfg.audit.bins))
    pooled = score(np.concatenate([pilot.p, pilot.q]))
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.02, 0.98, n_thresholds)))
    counts = _count(plan, statistic, cfg.audit.trials, seed_main, progress, "main run",
                    cfg.audit.checkpoint)
    points = empirical_tradeoff_points(counts.counts_p, counts.counts_q,
                                       score.per_bin(statistic.edges), thresholds,
                                       cfg.audit.alpha)
    violation = None if plan.fdp_curve is None else tradeoff_violation(points, plan.fdp_curve)
    return TradeoffAudit(plan, points, violation, cfg.audit.trials, time.perf_counter() - t0)
