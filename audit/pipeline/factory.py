"""The one factory of audit subjects (:mod:`audit.pipeline.subject`).

:func:`make_subject` is the only place of the pipeline that asks whether a config names an
implementation: everything downstream sees a :class:`~audit.pipeline.subject.Subject`.
"""

from __future__ import annotations

import dataclasses

from audit.enums import AuditMode, Selection
from audit.pipeline.config import AuditConfig
from audit.pipeline.implementation import ImplementationPlan, ImplementationSubject
from audit.pipeline.model_subject import ModelSubject
from audit.pipeline.plan import AuditPlan, plan_audit
from audit.pipeline.search_config import NEEDS_IMPLEMENTATION
from audit.pipeline.strata_subject import StratifiedImplementationSubject
from audit.pipeline.subject import Subject
from audit.protocols import load_attack

__all__ = ["make_subject", "check_subject", "implementation_of"]


def make_subject(cfg: AuditConfig | None = None, *, plan=None,
                 implementation=None) -> Subject:
    """The subject ``cfg`` describes.

    Parameters
    ----------
    cfg : AuditConfig, optional
        A validated config; with an ``[implementation]`` table the subject is that
        implementation, else the model's release.
    plan : AuditPlan or ImplementationPlan, optional
        A plan already built for this setting (the model's pair and ceilings are costly);
        with ``cfg`` too, ``cfg``'s audit settings replace the plan's.
    implementation : Implementation, optional
        An implementation object to audit under ``cfg``'s pair and missingness (what
        ``assert_private`` audits), instead of the one ``cfg`` names.
    """
    if plan is not None and cfg is not None and plan.config is not cfg:
        # the plan's pair and ceilings with this config's audit settings (seed, trials, ...)
        plan = dataclasses.replace(plan, config=cfg)
    return check_subject(_build(cfg, plan, implementation))


def implementation_of(cfg: AuditConfig, implementation=None):
    """The implementation an audit of ``cfg`` calls: ``implementation`` when given, else the
    one its ``[implementation]`` table names (built). Refuses a config with neither (a model
    audit) for what needs a black box (the pair search)."""
    if implementation is not None:
        return implementation
    if cfg.implementation is None:
        raise ValueError(NEEDS_IMPLEMENTATION)
    return cfg.implementation.build()


def _build(cfg: AuditConfig | None, plan, implementation) -> Subject:
    if isinstance(plan, AuditPlan):
        return ModelSubject(plan)
    if isinstance(plan, ImplementationPlan):
        _refuse_strata(plan.config)
        return _implementation_subject(plan.config).from_plan(plan)
    if plan is not None:
        raise ValueError(f"plan must be an AuditPlan or an ImplementationPlan, got "
                         f"plan={type(plan).__name__}")
    if cfg is None:
        raise ValueError("make_subject needs a config (cfg) or a plan")
    if not isinstance(cfg, AuditConfig):
        raise ValueError(f"cfg must be an AuditConfig (from audit.load_config(path) or "
                         f"audit.config_from_dict(doc)), got {type(cfg).__name__}")
    if implementation is not None or cfg.implementation is not None:
        _refuse_strata(cfg)  # before the plan's work
        return _implementation_subject(cfg).from_config(cfg, implementation)
    if cfg.audit.mode is AuditMode.SEQUENTIAL:  # before the plan's work
        raise ValueError(_SEQUENTIAL_NEEDS)
    if cfg.search is not None:
        raise ValueError(NEEDS_IMPLEMENTATION)
    return ModelSubject(plan_audit(cfg))


def _implementation_subject(cfg: AuditConfig) -> type[ImplementationSubject]:
    """Plain calls, or calls by mask stratum (``[strata]``)."""
    return ImplementationSubject if cfg.strata is None else StratifiedImplementationSubject


def _refuse_strata(cfg: AuditConfig) -> None:
    """What a stratified audit cannot run: a grid of regions."""
    if cfg.strata is None:
        return
    if cfg.audit.selection is Selection.GRID:
        raise ValueError("[strata] bounds one region chosen on the pilot: audit.selection "
                         "must be 'pilot' or 'auto', got audit.selection='grid'")


_SEQUENTIAL_NEEDS = ("audit.mode='sequential' tests an implementation's claim: it needs an "
                     "[implementation] table")


def check_subject(subject: Subject) -> Subject:
    """Refuse, before any work, what the subject cannot run under its config: a sequential
    audit of a subject without a claim, or on a grid of regions; a white-box attack on a black
    box. :func:`make_subject` and the runner (for a subject handed to it) call it."""
    au = subject.config.audit
    _refuse_strata(subject.config)
    if subject.config.strata is not None and not isinstance(subject,
                                                            StratifiedImplementationSubject):
        raise ValueError("a config with [strata] is audited by mask stratum: build its "
                         "subject with make_subject (a StratifiedImplementationSubject), got "
                         f"{type(subject).__name__}")
    if au.mode is AuditMode.SEQUENTIAL:
        if not subject.supports_sequential:
            raise ValueError(_SEQUENTIAL_NEEDS)
        if au.selection is Selection.GRID:
            raise ValueError("audit.mode='sequential' tests one region declared from the "
                             "pilot: audit.selection must be 'pilot' or 'auto', got "
                             "audit.selection='grid'")
    if subject.laws is None and load_attack(au.attack).white_box:
        raise ValueError(f"an implementation is a black box: audit.attack must be a black-box "
                         f"attack (density-ratio, logistic, threshold, ...), got "
                         f"audit.attack={au.attack!r}")
    return subject
