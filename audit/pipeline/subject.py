"""What is audited: the subject protocol, and the one factory that builds a subject.

A **subject** is whatever the runner audits. It draws outputs of both sides of a neighbouring
pair (a pilot, held raw), counts a statistic of many more as they are drawn (the main run),
exposes its exact laws or none (a black box), and states its ceilings before any sampling.
Two subjects exist:

- :class:`audit.pipeline.model_subject.ModelSubject`: the release of the model (mask
  sampling, then a Laplace or Gaussian release) with known laws, drawn by the numba kernels;
  ceilings ε_pair, ε_theory and ε_fdp;
- :class:`audit.pipeline.implementation.ImplementationSubject`: an implementation called as
  a black box on masked datasets (a DP library's release, a user's mechanism); ceilings its
  claim and the claim amplified by [RPS] Theorem 3.2.

The runner (:mod:`audit.pipeline.runner`) knows a subject only through :class:`Subject`; the
statistical choices live in :mod:`audit.estimation.policy`;
:func:`audit.pipeline.factory.make_subject` is the only place of the pipeline that asks
whether a config names an implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from audit.interfaces import Monitor, Subject
from audit.protocols import Pilot, Score
from audit.records import Setting
from audit.statistics import SampleCounts, Statistic

if TYPE_CHECKING:
    from audit.pipeline.config import AuditConfig

__all__ = ["Subject", "PlannedSubject", "Setting", "SampleCounts", "FittedPilot", "Monitor",
           "pilot_size"]


@dataclass(frozen=True, eq=False)
class FittedPilot:
    """What the runner fixed on the pilot, handed to :meth:`Subject.with_pilot`: the raw
    ``pilot`` (its first ``fit_size`` draws per side are the fit half, the rest the
    selection half), the attack's ``score`` and its ``statistic`` of ``bins`` bins fitted on
    the fit half, and ``fit``, the audit's attack (fits a score on any pilot)."""

    pilot: Pilot
    fit_size: int
    score: Score
    statistic: Statistic
    bins: int
    fit: Callable[[Pilot], Score]


class PlannedSubject:
    """What every subject built on a plan shares: its config and planning time come from the
    plan (a frozen dataclass field ``plan`` in the subclass), copied at construction so that
    reading them is an attribute, not a call."""

    plan: object
    config: AuditConfig
    seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", self.plan.config)
        object.__setattr__(self, "seconds", self.plan.seconds)

    def with_pilot(self, fitted: FittedPilot) -> PlannedSubject:
        """The subject that runs the main run: itself (its main run does not depend on the
        pilot beyond the statistic and region the runner hands to :meth:`count`)."""
        return self

    #: whether :meth:`count` returns n i.i.d. draws of each side for every n (the subjects
    #: that can say so set True)
    poissonisable = False

    @property
    def stratified(self) -> bool:
        """Whether the subject audits by mask stratum (a stratified audit says True)."""
        return False

    @property
    def tests_at_looks(self) -> bool:
        """Whether the subject runs its own sequential test at declared looks, the runner's
        chunk-by-chunk monitor unused (a stratified audit says True)."""
        return False


def pilot_size(subject: Subject) -> int:
    """Pilot draws (or calls) per side of ``subject``'s audit: ``audit.pilot_trials``, else
    the subject's default rule."""
    au = subject.config.audit
    if au.pilot_trials is not None:
        return au.pilot_trials
    return subject.pilot_rule.default_size(au.trials)
