"""An implementation run as a black box as an audit subject: a DP library's release or a
user's callable.

Every call sees a dataset whose records were all masked by the missingness mechanism
(``audit.simulation.callables``: reproducible chunks, loky workers, checkpoints). The plan
fixes, before any call:

- the pair: given (``[pair]``), or the worst-case search for the declared query and bounds,
  which ranks candidate pairs with the release ``[scenario]`` describes (by default a Laplace
  release at the claimed ε: the search needs a model of the release, and the implementation
  has none);
- the ceilings: the implementation's own claim (ε, δ), and, where the mechanism is MAR, that
  claim amplified by [RPS] Theorem 3.2 with the mechanism's p*;
- a first call that checks the implementation releases numbers (one clear error if not);
- for an implementation whose batched form makes several releases in one library call
  (``batch_in_one_call``), the check that they are independent and have the law of an
  unbatched call (:mod:`audit.model.batch_check`: once per target in a process, α = 10⁻⁶);
  one that fails it is called once per dataset (a ``BatchRefused`` warning).

The pilot is held raw and split: the attack is fitted on its first half, the region chosen on
the second (``audit.estimation.policy``). The main run either runs its whole budget (fixed
mode) or feeds a sequential test chunk by chunk, which stops the run as soon as the claim is
refuted (``audit.estimation.sequential``, anytime-valid).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from audit.enums import CeilingKind, MissingnessClass
from audit.model import batch_check
from audit.model.batch_check import BatchCheck
from audit.model.implementation import Claim, Implementation
from audit.model.neighbours import NeighbourPair, worst_case_pair
from audit.pipeline.ceilings import Ceiling, ClaimReport, Comparison
from audit.pipeline.config import AuditConfig
from audit.pipeline.config_tables import DEFAULT_CHUNK
from audit.pipeline.plan import ranking_release
from audit.pipeline.progress import progress_bar
from audit.pipeline.repeated import releases_of
from audit.pipeline.subject import (
    Monitor,
    PlannedSubject,
    SampleCounts,
    Setting,
    pilot_size,
)
from audit.policy import PilotRule
from audit.protocols import MissingnessMechanism, Pilot, Score
from audit.records import traits_of
from audit.statistics import Statistic, edges_for_pilot

__all__ = ["ImplementationPlan", "ImplementationSubject", "plan_implementation_audit",
           "DEFAULT_CHUNK"]

#: Most calls per side :meth:`ImplementationSubject.rate` times for a batched target.
RATE_BATCH_CALLS = 1000

#: Most bytes of raw pilot outputs (both sides) an implementation audit holds in memory.
MAX_PILOT_BYTES = 2 * 2**30


@dataclass(frozen=True, eq=False)
class ImplementationPlan:
    """Everything fixed before the audit's calls: the implementation, the pair, the claims."""

    config: AuditConfig
    implementation: Implementation
    claim: Claim
    z: np.ndarray
    z_prime: np.ndarray
    missingness: MissingnessMechanism  # what the sampler masks with (none: fresh releases)
    p_star: float
    rho: float
    missing_class: MissingnessClass
    eps_amplified: float | None
    theory: str
    dim: int
    seconds: float
    comparison: Comparison | None = None
    batch_check: BatchCheck | None = None


def _pair(cfg: AuditConfig, mech, query) -> tuple[np.ndarray, np.ndarray]:
    if cfg.pair is not None:
        pair = NeighbourPair(np.asarray(cfg.pair.z, dtype=np.float64),
                             np.asarray(cfg.pair.z_prime, dtype=np.float64),
                             _differing_index(cfg.pair), query, mech, cfg.scenario.bound)
        return pair.z, pair.z_prime
    sc = cfg.scenario
    pair = worst_case_pair(query, mech, sc.d, sc.n, sc.bound, ranking_release(cfg, query),
                           delta=0.0)
    return pair.z, pair.z_prime


def _differing_index(pair) -> int:
    z = np.asarray(pair.z, dtype=np.float64)
    zp = np.asarray(pair.z_prime, dtype=np.float64)
    rows = np.flatnonzero(~np.all((z == zp) | (np.isnan(z) & np.isnan(zp)), axis=1))
    if rows.size != 1:
        raise ValueError(f"pair.z and pair.z_prime must differ in exactly one record, got "
                         f"{rows.size} differing records")
    return int(rows[0])


def plan_implementation_audit(cfg: AuditConfig, implementation=None, *,
                              batch: bool | None = None) -> ImplementationPlan:
    """Build the implementation (or use ``implementation``), probe it, fix the pair and the
    claims, and check a batched form that makes several releases in one call (unless
    ``batch`` is False; None: the config's ``implementation.batch``, default True). Raises
    ``ValueError`` (an ``ImplementationError``) if its first call fails."""
    from audit.simulation.callables import probe

    t0 = time.perf_counter()
    impl = implementation if implementation is not None else cfg.implementation.build()
    sc = cfg.scenario
    mech, query = cfg.components()
    z, z_prime = _pair(cfg, mech, query)
    if batch is None:
        batch = cfg.batch
    check = None
    if batch:
        impl, check = batch_check.checked(impl, z)
    releases = releases_of(cfg)
    impl, sampler = releases.implementation(impl, mech)
    claim = impl.claim
    dim = probe(impl, z, sampler, cfg.audit.seed)
    p_star, rho = float(mech.p_star(sc.d)), float(mech.rho(sc.d))
    if mech.missing_class is MissingnessClass.MNAR:
        amplified, theory = None, "no amplification theorem (MNAR)"
    else:
        amplified, theory = releases.amplified(impl, p_star)
    comparison = releases.comparison(impl, p_star, mech.missing_class)
    return ImplementationPlan(cfg, impl, claim, z, z_prime, sampler, p_star, rho,
                              mech.missing_class, amplified, theory, dim,
                              time.perf_counter() - t0, comparison, check)


def _side_indices(statistic: Statistic, outputs: np.ndarray) -> np.ndarray:
    """The bins of one side's outputs; none for the side a one-sided run leaves out (a
    user's projection need not accept an empty array)."""
    return statistic.indices(outputs) if len(outputs) else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class ImplementationSubject(PlannedSubject):
    """An implementation called as a black box on the plan's pair, ``chunk`` calls per side at
    a time (the unit of reproducibility, checkpoints and the sequential test's bets), in its
    batched form when it has one and ``batch`` allows it."""

    plan: ImplementationPlan
    chunk: int = DEFAULT_CHUNK
    batch: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_sendable()
        if self.config.audit.pilot_trials is None:
            return  # the default rule stays within the memory bound (pilot_rule)
        size, most = pilot_size(self), self._most_pilot_calls()
        if size > most:
            dim = max(self.plan.dim, 1)
            raise ValueError(
                f"audit.pilot_trials must be at most {most} for this release (the pilot's "
                f"outputs are held in memory: {size} calls per side of {dim} value(s) would "
                f"take {16 * size * dim / 2**30:.1f} GiB, more than "
                f"{MAX_PILOT_BYTES / 2**30:.0f} GiB), got audit.pilot_trials={size}")

    def _check_sendable(self) -> None:
        """Refuse, before any call, an implementation that worker processes cannot receive
        (a callable holding an open file, a lock, …) when the audit would send it to some."""
        from audit.simulation import processes
        from audit.simulation.callables import check_sendable

        au = self.config.audit
        backend = processes.joblib_backend(self.config.engine_backend)
        if processes.in_threads(backend) or (self.workers(au.jobs) <= 1
                                             and not processes.always_sent(backend)):
            return
        check_sendable(self._run(self.chunk, 0))

    @classmethod
    def from_plan(cls, plan: ImplementationPlan, *, chunk: int | None = None,
                  batch: bool | None = None) -> ImplementationSubject:
        """The subject of ``plan``: chunk and batch from its config's ``[implementation]``
        table unless given."""
        if chunk is None:
            chunk = plan.config.chunk
        if batch is None:
            batch = plan.config.batch
        return cls(plan, chunk, batch)

    @classmethod
    def from_config(cls, cfg: AuditConfig, implementation=None, *, chunk: int | None = None,
                    batch: bool | None = None) -> ImplementationSubject:
        """Plan ``cfg`` for ``implementation`` (default: the one ``cfg`` names)."""
        return cls.from_plan(plan_implementation_audit(cfg, implementation, batch=batch),
                             chunk=chunk, batch=batch)

    @property
    def laws(self) -> None:
        return None

    @property
    def is_scalar(self) -> bool:
        return self.plan.dim == 0

    @property
    def delta(self) -> float:
        return self.plan.claim.delta

    def _most_pilot_calls(self) -> int:
        """Most pilot calls per side whose raw outputs (both sides) fit in MAX_PILOT_BYTES."""
        return MAX_PILOT_BYTES // (16 * max(self.plan.dim, 1))

    @property
    def pilot_rule(self) -> PilotRule:
        """The black-box rule, capped where the raw pilot would exceed the memory bound."""
        return self.config.policy.pilot_rule(black_box=True, most=self._most_pilot_calls())

    @property
    def ceilings(self) -> tuple[Ceiling, ...]:
        p = self.plan
        out = (Ceiling(CeilingKind.AMPLIFIED_CLAIM, p.eps_amplified, p.theory),
               Ceiling(CeilingKind.CLAIM, p.claim.epsilon, f"claimed by {self.name}"))
        pair = self.config.pair
        if pair is not None and pair.eps_pair is not None:  # a theory's exact ε, declared
            out = (Ceiling(CeilingKind.PAIR, pair.eps_pair,
                           "exact ε of the given pair, declared with it (pair.eps_pair)"), *out)
        return out

    @property
    def name(self) -> str:
        return traits_of(self.plan.implementation).name

    @property
    def setting(self) -> Setting:
        p = self.plan
        return Setting(p.p_star, p.rho, p.missing_class.name, None, p.claim.epsilon)

    @property
    def claim(self) -> ClaimReport:
        c = self.plan.claim
        return ClaimReport(c.epsilon, c.delta, c.note, self.name, self.plan.batch_check)

    @property
    def comparison(self) -> Comparison | None:
        return self.plan.comparison

    @property
    def supports_sequential(self) -> bool:
        return True

    @property
    def unit(self) -> str:
        return "calls"

    #: Its ``count`` makes ``trials`` i.i.d. calls of each side for any ``trials``: a main run
    #: may be Poissonised (:mod:`audit.pipeline.poisson`).
    poissonisable = True

    def _run(self, trials: int, seed: int, sides: tuple[int, ...] = (0, 1)):
        from audit.simulation.callables import CallableRun

        p = self.plan
        return CallableRun(p.implementation, p.z, p.z_prime, p.missingness, self.chunk, trials,
                           seed, p.dim, self.batch, sides=sides)

    def _chunks(self, trials: int, seed: int, label: str, progress: bool,
                checkpoint: str | None = None, reduce=None, sides: tuple[int, ...] = (0, 1)):
        """(chunk, outputs on z, outputs on z') in chunk order, with a progress bar; with
        ``reduce``, each side's outputs reduced (in the workers where they can be); a side
        left out of ``sides`` is not called (its outputs empty)."""
        from audit.simulation.callables import iter_chunks

        run = self._run(trials, seed, sides)
        bar = progress_bar(run.n_chunks, f"{self.config.name}: {label}", progress)
        try:
            chunks = iter_chunks(run, n_jobs=self.config.audit.jobs,
                                 backend=self.config.engine_backend, checkpoint=checkpoint,
                                 on_chunk=None if bar is None else lambda c: bar.update(1),
                                 label=label, reduce=reduce)
            try:
                yield from chunks
            finally:
                chunks.close()
        finally:
            if bar is not None:
                bar.close()

    def draw(self, n: int, seed: int, *, progress: bool = False) -> Pilot:
        chunks = list(self._chunks(n, seed, "pilot", progress))
        return Pilot(np.concatenate([c[1] for c in chunks]),
                     np.concatenate([c[2] for c in chunks]))

    def statistic(self, score: Score, pilot: Pilot, bins: int) -> Statistic:
        """Edges over the finite projected pilot values (its quantiles when it is
        heavy-tailed: :func:`audit.statistics.edges_for_pilot`); NaN has a bin of its own,
        and so do −inf and +inf when the pilot released them."""
        values = np.concatenate([score.projection.evaluate(pilot.p),
                                 score.projection.evaluate(pilot.q)])
        finite = values[np.isfinite(values)]
        edges = edges_for_pilot(finite, bins) if finite.size else np.linspace(-1.0, 1.0,
                                                                              bins + 1)
        # ±inf get bins of their own when the pilot released them (else the edge bins)
        return Statistic(score.projection, edges, infinities=bool(np.isinf(values).any()))

    def count(self, statistic: Statistic, trials: int, seed: int, *, progress: bool = False,
              label: str = "main run", checkpoint: str | None = None,
              monitor: Monitor | None = None) -> SampleCounts:
        """Counts of up to ``trials`` calls per side; a ``monitor`` may stop the run early
        (the counts then cover the calls made)."""
        counts_p = np.zeros(statistic.n_bins, dtype=np.int64)
        counts_q = np.zeros(statistic.n_bins, dtype=np.int64)
        done = 0
        # the workers bin their own outputs: only the bin indices travel back
        for _, ip, iq in self._chunks(trials, seed, label, progress, checkpoint,
                                      reduce=statistic.indices):
            counts_p += np.bincount(ip, minlength=statistic.n_bins)
            counts_q += np.bincount(iq, minlength=statistic.n_bins)
            done += ip.shape[0]
            if monitor is not None and monitor.update(ip, iq):
                break
        return SampleCounts(counts_p, counts_q, done)

    def count_side(self, statistic: Statistic, calls: int, seed: int, side: int, *,
                   progress: bool = False, label: str = "main run",
                   checkpoint: str | None = None) -> np.ndarray:
        """Counts of ``calls`` calls of one side alone (0: z, 1: z'), a one-sided run keyed by
        ``seed`` (the top-up of a Poissonised main run, :mod:`audit.pipeline.poisson`)."""
        counts = np.zeros(statistic.n_bins, dtype=np.int64)
        for chunk in self._chunks(calls, seed, label, progress, checkpoint,
                                  reduce=functools.partial(_side_indices, statistic),
                                  sides=(side,)):
            counts += np.bincount(chunk[1 + side], minlength=statistic.n_bins)
        return counts

    def rate(self, calls: int | None = None) -> float:
        """Calls per second (both sides) on masked datasets, in one process, timed on
        ``calls`` per side (None: 20, or where the run calls the batched form, one chunk
        at most :data:`RATE_BATCH_CALLS`: a batched call costs per call — a Spark job, a
        ``GROUP BY`` query, a worker's round trip — and 20 datasets spread it over too few
        releases; a Tumult sum timed at 20 predicted 4 min 29 s for a run of 33 s)."""
        from audit.simulation.callables import call_chunk
        from audit.simulation.mechanism_warnings import emit

        if calls is None:
            batched = self.batch and traits_of(self.plan.implementation).batch is not None
            calls = min(self.chunk, RATE_BATCH_CALLS) if batched else 20
        t = time.perf_counter()
        try:
            call_chunk(self._run(calls, 0), 0)
        finally:
            emit()  # its calls' warnings, once each
        return 2.0 * calls / max(time.perf_counter() - t, 1e-9)

    def workers(self, jobs: int) -> int:
        from audit.simulation.processes import cap_workers

        return cap_workers(jobs, name="audit.jobs").workers
