"""A mask-stratified implementation audit: one run, ε_lower at every missing rate of a grid
(docs/THEORY.md §8.5; the ``[strata]`` table, :mod:`audit.pipeline.strata_config`).

The subject is an :class:`~audit.pipeline.implementation.ImplementationSubject` whose calls are
drawn by stratum. Under MCAR iid with rate π, a side's dataset with N maskable entries has
M ~ Binomial(N, π) masked entries, and given M = m a uniform m-subset of them masked: stratum
m's law is free of π, so its calls serve every rate of the grid.

- **Pilot** (``draw``): by default the pilots of as many separate audits as the grid has
  rates. Each half (the attack's fit half, then the region-selection half) puts a quarter of
  its calls evenly over each side's strata that get calls (weight ≥
  :data:`audit.estimation.strata.MIN_WEIGHT` at some rate), so rare strata are seen, and the
  rest in proportion to the strata's mean weight over the grid
  (:func:`audit.pipeline.strata_design.spread`). Each rate's score is fitted on the fit half
  resampled to that rate's law (``strata.scores``); its region is then taken on the better of
  that score and the pooled one, by the bound the main run is predicted to give
  (:func:`audit.estimation.strata_regions.region_prediction` on the selection half).
- **Design and allocation** (:meth:`StratifiedImplementationSubject.with_pilot`, before the
  main run, from the pilot only, into a frozen
  :class:`~audit.pipeline.strata_design.StrataDesign`): each rate has its own
  region, chosen on the selection half's per-stratum histograms weighted to that rate, or the
  pooled half's region where the main run is predicted to bound it better
  (:func:`audit.estimation.strata_regions.rate_regions`; one region for the whole grid lost
  power where the events spread over the strata: diffprivlib nanmean at π = 0.9, ε_lower 0.06
  against 2.89 from its own audit); each stratum's probability of each rate's region is
  estimated on that half; the stratified side's ``len(rates) × trials`` calls are allocated
  with :func:`audit.estimation.strata.allocate`, and with ``strata.sides = "auto"`` the two
  sides take the designs (each stratified, or one plain run of ``trials`` calls per rate)
  whose predicted ε_lower summed over the grid is the largest
  (:func:`audit.estimation.strata_designs.choose_side_designs`).
- **Main run** (``count``): one one-sided :class:`audit.simulation.callables.CallableRun` per
  stratum (:class:`audit.simulation.strata.SubsetMasks`) or per rate (MCAR iid at that rate),
  each with its own key (:func:`audit.simulation.strata.run_key`) and checkpoint digest (its
  stratum, its calls); counts per run, bounded by
  :meth:`audit.estimation.strata.StratifiedCounts.bound`.

- **Sequential mode** (``audit.mode = "sequential"``): the main run makes ``strata.looks``
  looks, after 1/2^(looks − 1), …, 1/2 and all of every run's calls (each look's increment a
  run with a key of its own), and bounds every rate at each look at ``alpha / looks``
  (Bonferroni over the looks declared before the run); the allocation and designs are
  chosen at that level. With ``audit.stop = "refuted"`` it stops at the first look whose
  bound at the config's rate exceeds the claim. ε_lower at each rate is the largest over the
  looks made (:func:`audit.estimation.strata.over_looks`): valid after any stop at a look,
  but a look is the only place it can stop (not anytime-valid between looks).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from audit.enums import AuditMode, SideDesign, StopRule
from audit.estimation import strata as st
from audit.estimation.binomial import SIDES
from audit.estimation.strata_looks import look_calls
from audit.pipeline.implementation import ImplementationSubject
from audit.pipeline.progress import progress_bar
from audit.pipeline.repeated import releases_of
from audit.pipeline.strata_design import (
    StrataDesign,
    StrataGrid,
    StratifiedPilot,
    choose_design,
    rate_scores,
    spread,
)
from audit.pipeline.subject import FittedPilot, Monitor
from audit.statistics import Statistic

__all__ = ["StratifiedImplementationSubject"]

_PILOT_HALVES = (0, 1)  # run_key parts of the pilot's fit and selection halves
_MAIN_STRATA = 2  # run_key parts of the fixed main run: 2 (strata), 3 (rates)
_LOOK_PARTS = 4  # run_key parts of a sequential run: 4 + 2j (strata), 5 + 2j (rates), look j


@dataclass(frozen=True, eq=False)
class StratifiedImplementationSubject(ImplementationSubject):
    """An implementation audited by mask stratum over the grid ``[strata] rates`` (module
    docstring). ``design`` is what the pilot fixed for the main run (None until
    :meth:`with_pilot` returns the subject that runs it)."""

    design: StrataDesign | None = dataclasses.field(default=None, repr=False)
    #: Its counts are drawn by stratum and bound themselves: never Poissonised.
    poissonisable = False

    def __post_init__(self) -> None:
        super().__post_init__()
        cfg = self.config
        if cfg.strata is None:
            raise ValueError("a StratifiedImplementationSubject needs a config with [strata]")
        for side, data in enumerate((self.plan.z, self.plan.z_prime)):
            n_open = int(np.count_nonzero(~np.isnan(data)))
            if n_open > st.MAX_ENTRIES:
                raise ValueError(f"strata.by='missing-count' needs at most {st.MAX_ENTRIES} "
                                 f"maskable entries per dataset, got {n_open} on side "
                                 f"{'zz′'[side]}")
            k = int(st.sampled_strata(self.weights(side)).sum())
            if cfg.strata.floor * k > len(self.rates) * cfg.audit.trials:
                raise ValueError(f"strata.floor={cfg.strata.floor} calls for each of {k} "
                                 f"strata exceeds the {len(self.rates) * cfg.audit.trials} "
                                 "calls of a side: lower strata.floor or raise audit.trials")

    @property
    def rates(self) -> np.ndarray:
        return np.asarray(self.config.strata.rates)

    @property
    def main(self) -> int:
        return int(np.flatnonzero(self.rates == self.plan.missingness.params()["rate"])[0])

    @property
    def supports_sequential(self) -> bool:
        return True

    @property
    def stratified(self) -> bool:
        """Draws its calls by mask stratum (what a config with ``[strata]`` needs; an
        optional member of the subject protocol, False where absent)."""
        return True

    @property
    def tests_at_looks(self) -> bool:
        """The sequential mode is this subject's own (looks; the runner's monitor is not
        used)."""
        return True

    @property
    def looks(self) -> int:
        """The looks of the main run (1 in fixed mode)."""
        return self.config.strata.n_looks(self.config.audit.mode is AuditMode.SEQUENTIAL)

    @property
    def alpha_side(self) -> float:
        """The level of each side's bounds at each look: alpha / (2 · looks)."""
        return self.config.audit.alpha / (SIDES * self.looks)

    @property
    def pilot_rule(self):
        """The pilot of as many separate audits as the grid has rates (within the memory
        bound of the raw pilot)."""
        return self.config.policy.pilot_rule(black_box=True, settings=len(self.rates),
                                             most=self._most_pilot_calls())

    @property
    def grid(self) -> StrataGrid:
        """The rates, the strata's weights and the levels the design is chosen at."""
        au = self.config.audit
        return StrataGrid(self.rates, (self.weights(0), self.weights(1)), au.trials,
                          au.alpha, self.alpha_side, self.delta, au.seed, self.config.strata,
                          self.config.policy.guard_alpha)

    def data(self, side: int) -> np.ndarray:
        return self.plan.z if side == 0 else self.plan.z_prime

    def weights(self, side: int) -> np.ndarray:
        """w[g, m]: the weight of stratum m at rate g on ``side`` (0: z, 1: z')."""
        n_open = int(np.count_nonzero(~np.isnan(self.data(side))))
        return st.stratum_weights(n_open, self.rates)

    @functools.cached_property
    def _code(self) -> tuple[str, str]:
        """The implementation's code digest, read once for the subject's many runs."""
        from audit.simulation.checkpoints import code_digest

        return code_digest(self.plan.implementation)

    def _side_run(self, side: int, part: int, index: int, masks, calls: int, seed: int,
                  label: str):
        from audit.simulation.callables import CallableRun
        from audit.simulation.strata import run_key

        p = self.plan
        return CallableRun(p.implementation, p.z, p.z_prime, masks, self.chunk, int(calls),
                           run_key(seed, part, side, index), p.dim, self.batch, label=label,
                           sides=(side,), code=self._code)

    def _outputs(self, run, checkpoint=None):
        """The outputs of a one-sided run, chunk by chunk."""
        from audit.simulation.callables import iter_chunks

        chunks = iter_chunks(run, n_jobs=self.config.audit.jobs,
                             backend=self.config.engine_backend, checkpoint=checkpoint)
        try:
            for chunk in chunks:
                yield chunk[1 + run.sides[0]]
        finally:
            chunks.close()

    def _stratum_masks(self, side: int, m: int):
        from audit.simulation.strata import SubsetMasks

        return SubsetMasks(m, self.data(side).shape[0])

    def draw(self, n: int, seed: int, *, progress: bool = False) -> StratifiedPilot:
        """``n`` pilot calls per side: each half spread over the side's strata
        (:func:`audit.pipeline.strata_design.spread`); the pilot carries each call's
        stratum."""
        sides, labels = [], []
        for side in (0, 1):
            w = self.weights(side)
            outs, labs = [], []
            for part, size in zip(_PILOT_HALVES, (n // 2, n - n // 2), strict=True):
                for m, calls in enumerate(spread(size, w)):
                    if calls:
                        run = self._side_run(side, part, m, self._stratum_masks(side, m),
                                             calls, seed, "pilot")
                        outs.extend(self._outputs(run))
                        labs.append(np.full(calls, m))
            sides.append(np.concatenate(outs))
            labels.append(np.concatenate(labs))
        return StratifiedPilot(sides[0], sides[1], tuple(labels))

    def with_pilot(self, fitted: FittedPilot) -> StratifiedImplementationSubject:
        """The subject that runs the main run the pilot fixes: each rate's score (fitted on
        the fit half resampled to its law, ``strata.scores``), region, each side's design
        and calls (:func:`audit.pipeline.strata_design.choose_design`)."""
        pilot = fitted.pilot
        if not isinstance(pilot, StratifiedPilot):
            raise ValueError("a stratified audit fixes its design from its own pilot (drawn "
                             f"by stratum, with its labels), got {type(pilot).__name__}")
        grid, half = self.grid, fitted.fit_size
        fit_half, rest = pilot.split(half)
        fits = rate_scores(grid, fitted.fit,
                           lambda score, sample: ImplementationSubject.statistic(
                               self, score, sample, fitted.bins),
                           fit_half, pilot.labels, fitted.bins)
        rest = StratifiedPilot(rest.p, rest.q, tuple(lab[half:] for lab in pilot.labels))
        design = choose_design(grid, fitted.score, fitted.statistic, rest, fits)
        return dataclasses.replace(self, design=design)

    def _amplified(self) -> tuple | None:
        """The claim amplified at each rate of the grid (p* = 1 − π^d), as the release
        design amplifies it (one release, or k releases sharing the table's mask)."""
        p = self.plan
        if p.eps_amplified is None:
            return None
        d, releases = self.config.scenario.d, releases_of(self.config)
        return tuple(releases.amplified(p.implementation, 1.0 - r**d)[0] for r in self.rates)

    def count(self, statistic: Statistic, trials: int, seed: int, *, progress: bool = False,
              label: str = "main run", checkpoint: str | None = None,
              monitor: Monitor | None = None) -> st.StratifiedCounts:
        """The main run: every side's calls by stratum or by rate, as :meth:`design` fixed
        (``trials`` calls per side per rate), in :attr:`looks` looks (sequential mode; the
        subject tests at its looks, so ``monitor`` must be None)."""
        if monitor is not None:
            raise ValueError("a stratified audit tests at its own looks: monitor must be None")
        design = self.design
        if design is None:
            raise ValueError("a stratified audit fixes its design from its pilot: count the "
                             "subject with_pilot returns (run_audit does)")
        if trials != self.config.audit.trials:
            raise ValueError(f"trials must be audit.trials={self.config.audit.trials} (the "
                             f"design's allocation), got trials={trials}")
        stats = design.statistics or (statistic,)
        own = design.statistics is not None
        looks = self.looks
        sequential = self.config.audit.mode is AuditMode.SEQUENTIAL
        schedule = [look_calls(design.calls[side], looks) for side in (0, 1)]
        hists = [[np.zeros((c.size, s.n_bins), dtype=np.int64) for s in stats]
                 for c in design.calls]
        increments = [np.diff(c, axis=0, prepend=0) for c in schedule]  # (looks, runs)
        bar = progress_bar(sum(int((-(-inc // self.chunk)).sum()) for inc in increments),
                   f"{self.config.name}: {label}", progress)
        bin_scores = statistic.bin_scores(design.score)
        amplified = self._amplified()
        bounds, snapshot = [], None
        try:
            for j in range(looks):
                for side in (0, 1):
                    self._count_side(side, design, increments[side][j], stats, hists[side],
                                     seed, j if sequential else None, label, checkpoint, bar)
                sides = [st.SideCounts(design.designs[side],
                                       hists[side][self.main if own else 0],
                                       schedule[side][j], self.weights(side),
                                       by_rate=tuple(hists[side]) if own else None)
                         for side in (0, 1)]
                snapshot = st.StratifiedCounts(
                    sides[0], sides[1], self.rates, self.main,
                    max(int(schedule[side][j].sum()) for side in (0, 1)), amplified,
                    regions=design.regions, masks=design.masks)
                if not sequential:
                    return snapshot
                bounds.append(snapshot.bound(None, bin_scores, self.delta,
                                             self.config.audit.alpha / looks))
                best = max(b.eps_lower for b in bounds)
                if self.config.audit.stop is StopRule.REFUTED \
                        and best > self.plan.claim.epsilon:
                    break
        finally:
            if bar is not None:
                bar.close()
        return dataclasses.replace(snapshot, looks=tuple(bounds), planned_looks=looks,
                                   stop=self.config.audit.stop.value)

    def _count_side(self, side: int, design: StrataDesign, calls, stats, hists, seed: int,
                    look: int | None, label: str, checkpoint, bar) -> None:
        """Run ``calls[r]`` more calls of each of ``side``'s runs (strata or rates) and add
        their outputs' histograms under each of ``stats`` to ``hists``; ``look`` None: the
        fixed run's keys, else look ``look``'s."""
        from audit.model.missingness import make_missingness

        stratified = design.designs[side] is SideDesign.STRATIFIED
        part = ((_MAIN_STRATA if look is None else _LOOK_PARTS + 2 * look)
                + (0 if stratified else 1))
        for r, n_r in enumerate(calls):
            if not n_r:
                continue
            masks = (self._stratum_masks(side, r) if stratified else
                     make_missingness("mcar-iid", rate=float(self.rates[r])))
            run = self._side_run(side, part, r, masks, int(n_r), seed, label)
            for out in self._outputs(run, checkpoint):
                for h, s in zip(hists, stats, strict=True):
                    h[r] += np.bincount(s.indices(out), minlength=s.n_bins)
                if bar is not None:
                    bar.update(1)
