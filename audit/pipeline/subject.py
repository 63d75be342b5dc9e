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
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from audit.pipeline.ceilings import Ceiling, ClaimReport, Comparison
from audit.policy import PilotRule
from audit.protocols import Laws, Pilot, Score
from audit.statistics import Statistic

if TYPE_CHECKING:
    from audit.pipeline.config import AuditConfig

__all__ = ["Subject", "PlannedSubject", "Setting", "SampleCounts", "Monitor", "pilot_size"]


@dataclass(frozen=True)
class Setting:
    """The missingness setting of a subject, as the result reports it."""

    p_star: float
    rho: float
    missing_class: str
    noise_scale: float | None
    eps_base: float
    eps_mar_formula: float | None = None


@dataclass(frozen=True, eq=False)
class SampleCounts:
    """Histogram counts of ``trials`` draws per side (the bins of a ``Statistic``)."""

    counts_p: np.ndarray
    counts_q: np.ndarray
    trials: int


class Monitor(Protocol):
    """Watches the main run chunk by chunk (a sequential test): ``update`` gets the bin
    indices of one chunk of paired draws and returns True to stop the run."""

    def update(self, bins_p: np.ndarray, bins_q: np.ndarray) -> bool: ...


@runtime_checkable
class Subject(Protocol):
    """What the runner audits (see the module docstring)."""

    config: AuditConfig
    #: seconds spent building the subject (its plan), reported as the ``plan`` phase
    seconds: float

    @property
    def laws(self) -> Laws | None:
        """The exact laws (P, Q) for white-box attacks; None for a black box."""

    @property
    def is_scalar(self) -> bool: ...

    @property
    def delta(self) -> float:
        """The δ of the audited (ε, δ) statement."""

    @property
    def pilot_rule(self) -> PilotRule: ...

    @property
    def ceilings(self) -> tuple[Ceiling, ...]: ...

    @property
    def setting(self) -> Setting: ...

    @property
    def claim(self) -> ClaimReport | None:
        """The implementation's claim, None for the model."""

    @property
    def comparison(self) -> Comparison | None:
        """A value beside the ceilings that is NOT a bound (the per-release accounting of k
        releases with shared masks); None when there is none."""

    @property
    def supports_sequential(self) -> bool: ...

    @property
    def unit(self) -> str:
        """What one trial per side is: ``"draws"`` or ``"calls"``."""

    def draw(self, n: int, seed: int, *, progress: bool = False) -> Pilot: ...

    def statistic(self, score: Score, pilot: Pilot, bins: int) -> Statistic: ...

    def fit_rates(self, fit: Callable[[Pilot], Score], pilot: Pilot, bins: int) -> None:
        """Fit further scores on the pilot's fit half ``pilot`` with ``fit`` (the audit's
        attack), for a subject that bounds several settings at once (a stratified grid of
        missing rates: one score per rate); others do nothing."""

    def count(self, statistic: Statistic, trials: int, seed: int, *, progress: bool = False,
              label: str = "main run", checkpoint: str | None = None,
              monitor: Monitor | None = None): ...

    def rate(self) -> float:
        """Draws (or calls) per second per side measured now, in one process."""

    def workers(self, jobs: int) -> int:
        """How many processes divide the expected duration."""


class PlannedSubject:
    """What every subject built on a plan shares: its config and planning time come from the
    plan (a frozen dataclass field ``plan`` in the subclass)."""

    plan: object

    @property
    def config(self) -> AuditConfig:
        return self.plan.config

    @property
    def seconds(self) -> float:
        return self.plan.seconds

    def fit_rates(self, fit, pilot, bins: int) -> None:
        """One setting, one score: nothing more to fit."""

    @property
    def tests_at_looks(self) -> bool:
        """Whether the subject runs its own sequential test at declared looks, the runner's
        chunk-by-chunk monitor unused (an optional member: a stratified audit says True)."""
        return False


def pilot_size(subject: Subject) -> int:
    """Pilot draws (or calls) per side of ``subject``'s audit: ``audit.pilot_trials``, else
    the subject's default rule."""
    au = subject.config.audit
    if au.pilot_trials is not None:
        return au.pilot_trials
    return subject.pilot_rule.default_size(au.trials)
