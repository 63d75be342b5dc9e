"""The model's release as an audit subject: exact laws, drawn by the numba kernels.

Wraps an :class:`audit.pipeline.plan.AuditPlan` (the worst-case pair, its two output laws
P = A_D(z), Q = A_D(z') and every ceiling, evaluated before any sampling). Raw pilot draws come
from :func:`audit.simulation.engine.sample_outputs`; counts from
:func:`audit.simulation.engine.run_histograms`, on the CPU kernels or the CUDA backend, so
memory is flat in the trial counts. Ceilings: the exact ε of the pair (ε_pair, with its stated
numerical error), the applicable [RPS] theorem (ε_theory) and the §7 bound (ε_fdp).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit.enums import Backend, CeilingKind
from audit.pipeline.ceilings import Ceiling
from audit.pipeline.plan import AuditPlan
from audit.pipeline.subject import PlannedSubject, Setting
from audit.policy import PilotRule
from audit.protocols import Laws, Pilot, Score
from audit.statistics import OutputValue, Statistic, edges_spanning

__all__ = ["ModelSubject"]


@dataclass(frozen=True, eq=False)
class ModelSubject(PlannedSubject):
    """The release A_D of the model on the plan's worst-case pair."""

    plan: AuditPlan
    #: Its ``count`` draws ``trials`` i.i.d. outputs of each side for any ``trials``: a main
    #: run may be Poissonised (:mod:`audit.pipeline.poisson`; the top-up is a two-sided
    #: kernel run, one side discarded).
    poissonisable = True

    @property
    def laws(self) -> Laws:
        return Laws(self.plan.P, self.plan.Q)

    @property
    def is_scalar(self) -> bool:
        return self.plan.is_scalar

    @property
    def delta(self) -> float:
        return self.plan.audit_delta

    @property
    def pilot_rule(self) -> PilotRule:
        """The model's pilot rule of the audit's policy (``AuditPolicy.model_pilot``: its
        ``raw_cap`` is the most raw pilot draws per side held in memory, for the attack's fit,
        the statistic's range and the grid's quantiles; the rest is counted by the kernels)."""
        return self.config.policy.pilot_rule(black_box=False)

    @property
    def ceilings(self) -> tuple[Ceiling, ...]:
        p = self.plan
        return (Ceiling(CeilingKind.PAIR, p.eps_pair, p.pair_method, p.eps_pair_error or 0.0),
                Ceiling(CeilingKind.THEORY, p.eps_theory, p.theory),
                Ceiling(CeilingKind.FDP, p.eps_fdp, "f-DP amplification, docs/THEORY.md §7"))

    @property
    def setting(self) -> Setting:
        p = self.plan
        return Setting(p.p_star, p.rho, p.missing_class.name, p.noise_scale, p.eps_base,
                       p.eps_mar_formula)

    @property
    def claim(self) -> None:
        return None

    @property
    def comparison(self):
        return self.plan.comparison

    @property
    def supports_sequential(self) -> bool:
        return False

    @property
    def unit(self) -> str:
        return "draws"

    def draw(self, n: int, seed: int, *, progress: bool = False) -> Pilot:
        """Raw draws of both sides (side 0: A_D(z), side 1: A_D(z') of one stream key)."""
        from audit.simulation.engine import sample_outputs

        if n == 0:
            return Pilot(np.empty(0), np.empty(0))
        return Pilot(sample_outputs(self.plan.P, n, seed, side=0),
                     sample_outputs(self.plan.Q, n, seed, side=1))

    def statistic(self, score: Score, pilot: Pilot, bins: int) -> Statistic:
        """Fixed edges decided before the main run: the output's own range for scalar
        outputs, the pilot's projected range for kernel statistics."""
        from audit.simulation.engine import default_edges, project_outputs

        P, Q = self.plan.P, self.plan.Q
        if isinstance(score.projection, OutputValue):
            return Statistic(score.projection, default_edges(P, Q, bins))
        provisional = Statistic(score.projection, [0.0, 1.0])  # edges are not read to project
        values = np.concatenate([project_outputs(P, Q, provisional, pilot.p),
                                 project_outputs(P, Q, provisional, pilot.q)])
        return Statistic(score.projection, edges_spanning(values, bins))

    def count(self, statistic: Statistic, trials: int, seed: int, *, progress: bool = False,
              label: str = "main run", checkpoint: str | None = None, monitor=None):
        """Histogram counts of ``trials`` draws per side, counted by the kernels as drawn."""
        from audit.simulation.engine import run_histograms

        if monitor is not None:
            raise ValueError(f"monitor must be None: a ModelSubject counts its whole budget "
                             f"(its parts refuse a sequential test), got monitor={monitor!r}")
        cfg = self.config
        return run_histograms(self.plan.P, self.plan.Q, statistic, trials, seed,
                              n_jobs=cfg.audit.jobs, backend=cfg.engine_backend,
                              progress=progress, label=f"{cfg.name}: {label}",
                              checkpoint=checkpoint)

    def rate(self) -> float:
        """Draws per second per side of the slowest statistic this audit may count."""
        from audit.simulation.engine import default_edges, measure_rate

        P, Q, bins = self.plan.P, self.plan.Q, self.config.audit.bins
        if P.is_scalar:
            statistic = Statistic.output(default_edges(P, Q, bins))
        else:  # the exact LLR: the slowest statistic a vector audit can count
            statistic = Statistic.llr(P, Q, np.linspace(-1.0, 1.0, bins + 1))
        backend = self.config.engine_backend
        # a dask run is timed here: the cluster's speed is not known before it runs
        return measure_rate(P, Q, statistic,
                            backend=backend if backend is Backend.CUDA else Backend.LOKY)

    def workers(self, jobs: int) -> int:
        """The engine's rate is measured with every thread of this process."""
        return 1
