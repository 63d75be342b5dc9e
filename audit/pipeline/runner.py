"""One audit end to end: plan → subject → attack → statistic → policy → counts → bound →
result.

The runner only orchestrates, for any subject (:mod:`audit.pipeline.subject`: the model's
release with known laws, or an implementation run as a black box): the subject draws and
counts, an attack loaded by name scores, :mod:`audit.estimation.policy` decides how the pilot
is split, which region the main counts are evaluated on and which bound they give, and the
subject's ceilings say what the bound is compared with. For a correct implementation of a
valid theory, with probability ≥ confidence, ε_lower is below every ceiling:

    eps_lower ≤ eps_pair ≤ eps_theory, eps_fdp        (the model)
    eps_lower ≤ the claim (and the amplified claim)    (an implementation)

Randomness: ``SeedSequence(seed)`` is spawned into four independent streams: the raw pilot
(the attack is fitted on it, and the statistic's range read from it), the counted selection
pilot (a subject whose pilot is held raw chooses the region on the raw pilot's second half
instead), the main run, and the numbers of calls of a Poissonised main run (the joint bound,
:mod:`audit.pipeline.poisson`; the first three are those of every other audit). The main run
never reuses pilot randomness, so a region chosen on the pilot is independent of the counts
it is evaluated on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from audit._validate import check_bool
from audit.enums import BoundRule, Selection
from audit.estimation import policy as estimation_policy
from audit.estimation.regions import Region
from audit.estimation.tradeoff_points import (
    TradeoffPoints,
    empirical_tradeoff_points,
    tradeoff_violation,
)
from audit.pipeline.config import AuditConfig
from audit.pipeline.designs import DesignPart, Scored
from audit.pipeline.factory import assemble, check_subject, implementation_of
from audit.pipeline.parts import AuditParts, check_parts, names_black_box
from audit.pipeline.plan import AuditPlan
from audit.pipeline.poisson import count_poissonised, poissonisable
from audit.pipeline.results import AuditResult
from audit.pipeline.search import CandidateScore, searched_config
from audit.pipeline.subject import FittedPilot, Subject, pilot_size
from audit.policy import AuditPolicy
from audit.protocols import Attack, Laws, Pilot, Score, load_attack
from audit.statistics import Statistic

__all__ = ["run_audit", "run_tradeoff_audit", "TradeoffAudit", "resolve_selection"]

resolve_selection = estimation_policy.resolve_selection


class PhaseTimer:
    """Seconds spent in each named phase of an audit (``phases``, in the order first
    entered)."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0


def _streams(seed: int) -> tuple[int, int, int, int]:
    """Independent 63-bit seeds: raw pilot, selection pilot, main run, Poisson numbers of
    calls (``spawn(4)``'s first three children are ``spawn(3)``'s)."""
    children = np.random.SeedSequence(seed).spawn(4)
    return tuple(int(c.generate_state(1, np.uint64)[0] >> np.uint64(1)) for c in children)


def _fit(attack: Attack, pilot: Pilot, laws: Laws | None) -> Score:
    """Fit the attack on the raw pilot; white-box attacks also see the laws (that a black box
    gets no white-box attack is checked before any work: ``check_subject``)."""
    return attack.fit(pilot, laws) if attack.white_box else attack.fit(pilot)


@dataclass(frozen=True, eq=False)
class _Prepared:
    """What is fixed before the main run: the statistic, the region, the pilot used."""

    selection: Selection
    score: Score
    statistic: Statistic
    #: the region the main run is bounded on (None: a Bonferroni grid, chosen on the counts)
    region: Region | None
    fit_pilot: Pilot
    pilot_trials: int
    #: the subject that runs the main run (:meth:`Subject.with_pilot`)
    subject: Subject
    #: the score and statistic as the designs read them
    scored: Scored
    #: the design whose claim is tested and its region (chosen on the pilot), or None
    claimed: tuple[DesignPart, Region] | None = None


def _prepare(subject: Subject, parts: AuditParts, attack: Attack, seeds, timer: PhaseTimer,
             progress: bool) -> _Prepared:
    """Pilot, attack fit, statistic and region: everything decided before the main run."""
    au = subject.config.audit
    selection = estimation_policy.resolve_selection(au.selection, attack, subject.is_scalar,
                                         subject.laws is not None)
    size = pilot_size(subject)
    design = estimation_policy.pilot_design(size, subject.pilot_rule, white_box=attack.white_box,
                                 selection=selection)
    seed_raw, seed_select = seeds[:2]
    with timer.phase("pilot"):
        raw = subject.draw(design.raw, seed_raw, progress=progress)
    with timer.phase("fit"):
        fit_part, rest = raw.split(design.fit)
        score = _fit(attack, fit_part, subject.laws)
        statistic = subject.statistic(score, fit_part, au.bins)
        laws = subject.laws
        subject = subject.with_pilot(FittedPilot(raw, design.fit, score, statistic, au.bins,
                                                 lambda pilot: _fit(attack, pilot, laws)))
    with timer.phase("pilot"):
        selection_counts = None
        if design.counted:
            selection_counts = subject.count(statistic, design.counted, seed_select,
                                             progress=progress, label="pilot")
        elif len(rest.p):
            selection_counts = statistic.pilot_counts(rest)
    watched = any(d.watches_main_run for d in parts.designs)
    rules = estimation_policy.bound_rules(selection, delta=subject.delta,
                               poissonised=poissonisable(subject) and not watched,
                               black_box=subject.laws is None, policy=au.policy)
    with timer.phase("fit"):
        region = estimation_policy.choose_region(selection, score, statistic, delta=subject.delta,
                                      alpha=au.alpha, trials=au.trials, laws=subject.laws,
                                      selection_counts=selection_counts, rules=rules,
                                      policy=au.policy)
    scored = Scored(statistic, score)
    claim = next(((d, r) for d in parts.designs
                  if (r := d.claim_region(subject, scored, selection_counts, fit_part))
                  is not None), None)
    return _Prepared(selection, score, statistic, region, fit_part, design.total, subject,
                     scored, claim)


def run_audit(cfg: AuditConfig | None = None, *, progress: bool = False, plan=None,
              subject: Subject | None = None, implementation=None,
              policy: AuditPolicy | None = None) -> AuditResult:
    """Run one audit.

    Parameters
    ----------
    cfg : AuditConfig, dict, str or Path, optional
        Validated configuration (:func:`audit.pipeline.config.load_config`), a config
        document (read by :func:`audit.pipeline.config.config_from_dict`) or the path of a
        TOML config; not needed when a ``subject`` is given.
    progress : bool
        Show labelled progress bars over the pilot's and the main run's chunks.
    plan : AuditPlan or ImplementationPlan, optional
        A plan already built for ``cfg``.
    subject : Subject, optional
        The subject to audit (:func:`audit.pipeline.factory.make_subject`).
    implementation : Implementation, optional
        Audit this implementation object under ``cfg`` (instead of the one ``cfg`` names).
    policy : AuditPolicy, optional
        The statistical defaults the audit reads (:class:`audit.policy.AuditPolicy`: pilot
        rules, guards, default attack and confidence where ``cfg`` sets none, ...); default
        the config's own (``DEFAULT_POLICY`` unless it was built with another).

    Returns
    -------
    AuditResult

    Raises
    ------
    TypeError
        If ``cfg`` is none of the above.
    ValueError
        On a bad config, before any work.
    """
    cfg = _checked_arguments(_as_config(cfg), progress, plan, subject, implementation, policy)
    report = None
    if subject is None:
        if cfg is not None and cfg.search is not None and plan is None:
            # the pair, found on calls of its own; then an audit like any with a given pair
            # (the parts asked first, for the black box a searched pair needs, before any
            # call; with no implementation to call, _candidate_scorer refuses)
            # no black box to call: the model's parts refuse [search], with their own reason
            check_parts(cfg, black_box=names_black_box(cfg) or implementation is not None)
            cfg, report = searched_config(cfg, _candidate_scorer(cfg, implementation))
        parts, subject = assemble(cfg, plan=plan, implementation=implementation)
    else:
        parts = check_subject(subject)
    return _audit(parts, subject, report, progress)


def _audit(parts: AuditParts, subject: Subject, report, progress: bool) -> AuditResult:
    """The audit of ``subject`` by its ``parts``: a design's own run, or the plain run (pilot,
    main run watched by a design's monitor, bound, a design's claim verdict)."""
    au, timer, seeds = subject.config.audit, PhaseTimer(), _streams(subject.config.audit.seed)
    timer.phases["plan"] = subject.seconds  # measured where it was built
    for design in parts.designs:  # a design that spends the calls its own way
        t0 = time.perf_counter()
        own = design.run(subject, seeds[2], progress)
        if own is not None:
            timer.phases["main run"] = time.perf_counter() - t0
            return AuditResult.from_run(subject, own.bound, attack=own.attack,
                                        selection=own.selection, trials=own.trials,
                                        pilot_trials=own.pilot_trials, timings=timer.phases,
                                        attack_note=own.attack_note, search=report)
    attack_name = au.attack_for(black_box=subject.laws is None)
    attack = load_attack(attack_name)
    prep = _prepare(subject, parts, attack, seeds, timer, progress)
    subject = prep.subject
    monitor = next((m for d in parts.designs
                    if (m := d.monitor(subject, prep.region, prep.scored)) is not None), None)
    with timer.phase("main run"):
        # (the region and its rule were chosen before this run; a grid has no one region)
        if prep.region is not None and prep.region.rule is BoundRule.JOINT:
            counts = count_poissonised(subject, prep.statistic, au.trials, seeds[2], seeds[3],
                                       progress=progress, checkpoint=au.checkpoint)
        else:
            counts = subject.count(prep.statistic, au.trials, seeds[2], progress=progress,
                                   checkpoint=au.checkpoint, monitor=monitor)
    with timer.phase("selection and bound"):
        if monitor is not None:
            bound = monitor.bound(counts.trials, au.trials)
        else:
            bound = estimation_policy.fixed_bound(prep.selection, prep.score, prep.statistic,
                                       prep.region, counts, delta=subject.delta,
                                       alpha=au.alpha, grid_pilot=prep.fit_pilot,
                                       policy=au.policy)
        curve_claim = None
        if prep.claimed is not None:  # the claim's verdict, by the design that chose its region
            claimant, region = prep.claimed
            curve_claim = claimant.verdict(subject, prep.scored, region, counts)
    label = prep.selection.value
    if subject.supports_sequential:
        label += f" ({au.mode.value})"
    return AuditResult.from_run(subject, bound, attack=attack_name, selection=label,
                                trials=counts.trials, pilot_trials=prep.pilot_trials,
                                timings=timer.phases, attack_note=prep.score.note,
                                search=report, curve_claim=curve_claim)


def _checked_arguments(cfg: AuditConfig | None, progress, plan, subject, implementation,
                       policy) -> AuditConfig | None:
    """:func:`run_audit`'s arguments checked before any work, each error naming its
    parameter; the config under ``policy`` when one is given."""
    check_bool(progress, "progress")
    _check_objects(subject, implementation)
    if policy is None:
        return cfg
    if not isinstance(policy, AuditPolicy):
        raise TypeError(f"policy must be an audit.policy.AuditPolicy, got "
                        f"policy={type(policy).__name__}")
    if subject is not None:
        raise ValueError("policy applies to a config: a subject runs under its config's "
                         "policy (make_subject(cfg.with_policy(policy))), got both "
                         "subject= and policy=")
    if cfg is None and plan is not None:
        cfg = plan.config
    if cfg is None:
        raise ValueError("policy needs a config (cfg) to apply to, got cfg=None")
    return cfg.with_policy(policy)


def _check_objects(subject, implementation) -> None:
    """Refuse, naming the parameter, a ``subject`` or an ``implementation`` of the wrong
    kind (before any work)."""
    from audit.interfaces import Subject as SubjectProtocol

    if subject is not None and not isinstance(subject, SubjectProtocol):
        raise TypeError(f"subject must be an audit subject (audit.pipeline.factory."
                        f"make_subject(cfg)), got subject={type(subject).__name__}")
    if implementation is not None and not (callable(implementation)
                                           and hasattr(implementation, "claim")):
        raise TypeError(f"implementation must be an implementation (callable as impl(data, "
                        f"rng), with a claim: audit.model.implementation."
                        f"CallableImplementation or an adapter's), got implementation="
                        f"{type(implementation).__name__}")


def _candidate_scorer(cfg: AuditConfig, implementation):
    """What the pair search scores a candidate with: a short audit of the implementation (the
    one ``cfg`` names, built once, unless one is handed in) on the candidate's config."""
    impl = implementation_of(cfg, implementation)
    return lambda candidate: CandidateScore.of(run_audit(candidate, implementation=impl))


def _as_config(cfg) -> AuditConfig | None:
    """``cfg`` as an :class:`AuditConfig`: a config document or a TOML path read as the
    command line reads them."""
    from pathlib import Path

    from audit.pipeline.config import config_from_dict, load_config

    if cfg is None or isinstance(cfg, AuditConfig):
        return cfg
    if isinstance(cfg, dict):
        return config_from_dict(cfg)
    if isinstance(cfg, str | Path):
        return load_config(cfg)
    raise TypeError(f"cfg must be an AuditConfig, a config document (dict) or the path of a "
                    f"TOML config, got {type(cfg).__name__}")


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
    """Empirical trade-off points for a scalar-output model audit, checked against the §7
    curve.

    Thresholds on the exact log-likelihood ratio are declared from pilot quantiles (the pilot
    streams are independent of the main run), and every point's two error bounds hold
    simultaneously at 1 − alpha (Bonferroni,
    :func:`audit.estimation.tradeoff_points.empirical_tradeoff_points`).
    """
    from audit.pipeline.model_subject import ModelSubject
    from audit.pipeline.plan import plan_audit
    from audit.simulation.engine import default_edges

    t0 = time.perf_counter()
    subject = ModelSubject(plan if plan is not None else plan_audit(cfg))
    if not subject.is_scalar:
        raise ValueError("run_tradeoff_audit needs a scalar output")
    au = subject.config.audit
    seed_raw, _, seed_main, _ = _streams(au.seed)
    pilot = subject.draw(min(pilot_size(subject), subject.pilot_rule.raw_cap), seed_raw)
    score = _fit(load_attack("exact-lr"), pilot, subject.laws)
    statistic = Statistic(score.projection, default_edges(subject.plan.P, subject.plan.Q,
                                                          au.bins))
    pooled = score(np.concatenate([pilot.p, pilot.q]))
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.02, 0.98, n_thresholds)))
    counts = subject.count(statistic, au.trials, seed_main, progress=progress,
                           checkpoint=au.checkpoint)
    points = empirical_tradeoff_points(counts.counts_p, counts.counts_q,
                                       statistic.bin_scores(score), thresholds, au.alpha)
    fdp = subject.plan.fdp_curve
    violation = None if fdp is None else tradeoff_violation(points, fdp)
    return TradeoffAudit(subject.plan, points, violation, au.trials, time.perf_counter() - t0)
