"""The one factory of audit subjects (:mod:`audit.pipeline.subject`): an audit's parts,
asked, then built.

:func:`assemble` asks the parts of an audit (:func:`audit.pipeline.parts.check_parts`)
before any work, has its target build the subject (the model's release on its plan, or the
implementation called plainly or by mask stratum) and has every design wrap it, in order.
Everything downstream sees the parts and a :class:`~audit.pipeline.subject.Subject`. The
target is built here, not in :mod:`audit.pipeline.parts`, because the parts answer the
config's loader (below the subjects) while a subject is built on a plan (above it).
"""

from __future__ import annotations

import dataclasses

from audit.pipeline.config import AuditConfig
from audit.pipeline.implementation import ImplementationPlan, ImplementationSubject
from audit.pipeline.model_subject import ModelSubject
from audit.pipeline.parts import (
    NEEDS_IMPLEMENTATION,
    AuditParts,
    StratifiedDesign,
    check_parts,
    names_black_box,
)
from audit.pipeline.plan import AuditPlan, build_plan
from audit.pipeline.strata_subject import StratifiedImplementationSubject
from audit.pipeline.subject import Subject

__all__ = ["assemble", "make_subject", "check_subject", "implementation_of"]


def make_subject(cfg: AuditConfig | None = None, *, plan=None,
                 implementation=None) -> Subject:
    """The subject ``cfg`` describes (:func:`assemble`'s subject)."""
    return assemble(cfg, plan=plan, implementation=implementation)[1]


def assemble(cfg: AuditConfig | None = None, *, plan=None,
             implementation=None) -> tuple[AuditParts, Subject]:
    """The parts of the audit ``cfg`` describes, asked before any work, and the subject they
    build.

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

    Raises
    ------
    ValueError
        Before any work, when the parts refuse the combination
        (:func:`audit.pipeline.parts.check_parts`) or the inputs are not a config or a plan.
    """
    if plan is not None and not isinstance(plan, AuditPlan | ImplementationPlan):
        raise ValueError(f"plan must be an AuditPlan or an ImplementationPlan, got "
                         f"plan={type(plan).__name__}")
    if cfg is None and plan is not None:
        cfg = plan.config
    if cfg is None:
        raise ValueError("make_subject needs a config (cfg) or a plan")
    if not isinstance(cfg, AuditConfig):
        raise ValueError(f"cfg must be an AuditConfig (from audit.load_config(path) or "
                         f"audit.config_from_dict(doc)), got {type(cfg).__name__}")
    black_box = (implementation is not None or names_black_box(cfg)
                 or isinstance(plan, ImplementationPlan))
    parts = check_parts(cfg, black_box=black_box)  # before the plan's work
    if plan is not None and plan.config is not cfg:
        # the plan's pair and ceilings with this config's audit settings (seed, trials, ...)
        plan = dataclasses.replace(plan, config=cfg)
    subject = _build(parts, plan, implementation)
    for design in parts.designs:  # built-in, then registered, in the config's order
        subject = design.wrap(subject)
    return parts, subject  # (check_subject is for subjects handed in)


def implementation_of(cfg: AuditConfig, implementation=None):
    """The implementation an audit of ``cfg`` calls: ``implementation`` when given, else the
    one its ``[implementation]`` table names (built). Refuses a config with neither (a model
    audit) for what needs a black box (the pair search)."""
    if implementation is not None:
        return implementation
    if not names_black_box(cfg):
        raise ValueError(NEEDS_IMPLEMENTATION)
    return cfg.implementation.build()


def _build(parts: AuditParts, plan, implementation) -> Subject:
    """The subject of ``parts``' target: the model's release on its plan, or the black box
    called plainly or by mask stratum (a :class:`StratifiedDesign` among the designs)."""
    cfg = parts.config
    if not parts.black_box:
        return ModelSubject(plan if plan is not None else build_plan(cfg))
    kind = (StratifiedImplementationSubject if parts.has(StratifiedDesign)
            else ImplementationSubject)
    if plan is not None:
        return kind.from_plan(plan)
    return kind.from_config(cfg, implementation)


def check_subject(subject: Subject) -> AuditParts:
    """Refuse, before any work, what the subject cannot run under its config: the parts'
    answers for its target kind (:func:`audit.pipeline.parts.check_parts`), and a config with
    ``[strata]`` handed a subject that does not stratify (its optional ``stratified`` member).
    The runner calls it for a subject handed to it (:func:`make_subject` asks the parts
    itself, before building). Returns the subject's parts."""
    cfg = subject.config
    parts = check_parts(cfg, black_box=subject.laws is None)
    if parts.has(StratifiedDesign) and not subject.stratified:
        raise ValueError("a config with [strata] is audited by mask stratum: build its "
                         "subject with make_subject (a StratifiedImplementationSubject), got "
                         f"{type(subject).__name__}")
    return parts
