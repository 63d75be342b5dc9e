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
  rest in proportion to the strata's mean weight over the grid. Each rate's score is fitted
  on the fit half resampled to that rate's law (``fit_rates``; ``strata.scores``); its
  region is then taken on the better of that score and the pooled one, by the bound the
  main run is predicted to give (:func:`audit.estimation.strata_regions.region_prediction`
  on the selection half).
- **Design and allocation** (before the main run, from the pilot only): each rate has its own
  region, chosen on the selection half's per-stratum histograms weighted to that rate, or the
  pooled half's region where the main run is predicted to bound it better
  (:func:`audit.estimation.strata_regions.rate_regions`; one region for the whole grid lost
  power where the events spread over the strata: diffprivlib nanmean at π = 0.9, ε_lower 0.06
  against 2.89 from its own audit); each stratum's probability of each rate's region is
  estimated on that half; the stratified side's ``len(rates) × trials`` calls are allocated
  with :func:`audit.estimation.strata.allocate`, and with ``strata.sides = "auto"`` the two
  sides take the designs (each stratified, or one plain run of ``trials`` calls per rate)
  whose predicted ε_lower summed over the grid is the largest
  (:func:`audit.estimation.strata.choose_designs`).
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
from dataclasses import dataclass, field

import numpy as np

from audit.enums import AuditMode, Direction, Selection, SideDesign, StopRule, StrataSides
from audit.estimation import policy
from audit.estimation import strata as st
from audit.estimation.binomial import SIDES
from audit.estimation.regions import PILOT_GUARD_ALPHA
from audit.estimation.strata_looks import look_calls
from audit.estimation.strata_regions import (
    rate_regions,
    region_prediction,
    stratum_frequencies,
)
from audit.pipeline.implementation import ImplementationSubject, _bar
from audit.pipeline.subject import Monitor, SampleCounts
from audit.policy import DEFAULT_POLICY
from audit.protocols import Pilot, Score
from audit.statistics import Statistic
from audit.theory import accountant as acc

__all__ = ["StratifiedImplementationSubject", "StrataDesign"]

_PILOT_HALVES = (0, 1)  # run_key parts of the pilot's fit and selection halves
_RESAMPLE_TAG = 0x52415445  # the seed part of the per-rate resamples of the fit half
#: most counters one side keeps for per-rate scores (rates × runs × bins): 128 MiB
MAX_RATE_COUNTERS = 2**24
_MAIN_STRATA = 2  # run_key parts of the fixed main run: 2 (strata), 3 (rates)
_LOOK_PARTS = 4  # run_key parts of a sequential run: 4 + 2j (strata), 5 + 2j (rates), look j


@dataclass(frozen=True, eq=False)
class StrataDesign:
    """What the pilot fixed for the main run: each rate's region, each side's design and
    calls per stratum (stratified) or per rate (plain)."""

    regions: tuple
    designs: tuple
    calls: tuple
    #: with a score per rate: each rate's region over its own bins, its statistic and its
    #: score (the rate's own, or the pooled one where the pilot predicts it bounds better)
    masks: tuple | None = None
    statistics: tuple | None = None
    scores: tuple | None = None


def _spread(total: int, weights: np.ndarray) -> np.ndarray:
    """Pilot calls per stratum: a quarter of ``total`` evenly over the sampled strata (rare
    strata are seen), the rest in proportion to the strata's mean weight over the grid (the
    strata of separate pilots at each rate), rounded by largest remainders (ties: lower m)."""
    w = np.asarray(weights, dtype=np.float64)
    on = st.sampled_strata(w)
    out = _even(total // 4, on)
    rest = total - int(out.sum())
    ideal = np.where(on, w.mean(axis=0), 0.0)
    return out + st.round_calls(rest * ideal / ideal.sum(), rest, on)


def _even(total: int, on: np.ndarray) -> np.ndarray:
    """``total`` calls split evenly over the strata ``on`` (remainder to the lowest m)."""
    k = int(on.sum())
    out = np.zeros(on.size, dtype=np.int64)
    idx = np.flatnonzero(on)
    out[idx] = total // k
    out[idx[: total % k]] += 1
    return out


@dataclass(frozen=True, eq=False)
class StratifiedImplementationSubject(ImplementationSubject):
    """An implementation audited by mask stratum over the grid ``[strata] rates`` (module
    docstring). ``state`` holds what the pilot fixed for the main run (the raw pilot's labels,
    the fitted score, the design)."""

    state: dict = field(default_factory=dict, repr=False)
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
        return DEFAULT_POLICY.pilot_rule(black_box=True, settings=len(self.rates),
                                         most=self._most_pilot_calls())

    def data(self, side: int) -> np.ndarray:
        return self.plan.z if side == 0 else self.plan.z_prime

    def weights(self, side: int) -> np.ndarray:
        """w[g, m]: the weight of stratum m at rate g on ``side`` (0: z, 1: z')."""
        n_open = int(np.count_nonzero(~np.isnan(self.data(side))))
        return st.stratum_weights(n_open, self.rates)

    def _side_run(self, side: int, part: int, index: int, masks, calls: int, seed: int,
                  label: str):
        from audit.simulation.callables import CallableRun
        from audit.simulation.strata import run_key

        p = self.plan
        run = CallableRun(p.implementation, p.z, p.z_prime, masks, self.chunk, int(calls),
                          run_key(seed, part, side, index), p.dim, self.batch, label=label,
                          sides=(side,))
        # the implementation's code digest, read once for the subject's many runs
        code = self.state.setdefault("code", {})
        if id(p.implementation) not in code:
            code[id(p.implementation)] = run._code
        run.__dict__["_code"] = code[id(p.implementation)]
        return run

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

    def draw(self, n: int, seed: int, *, progress: bool = False) -> Pilot:
        """``n`` pilot calls per side: each half spread over the side's strata
        (:func:`_spread`)."""
        sides, labels = [], []
        for side in (0, 1):
            w = self.weights(side)
            outs, labs = [], []
            for part, size in zip(_PILOT_HALVES, (n // 2, n - n // 2), strict=True):
                for m, calls in enumerate(_spread(size, w)):
                    if calls:
                        run = self._side_run(side, part, m, self._stratum_masks(side, m),
                                             calls, seed, "pilot")
                        outs.extend(self._outputs(run))
                        labs.append(np.full(calls, m))
            sides.append(np.concatenate(outs))
            labels.append(np.concatenate(labs))
        pilot = Pilot(sides[0], sides[1])
        for key in ("score", "design", "statistic", "rate_scores"):
            self.state.pop(key, None)
        self.state.update(pilot=pilot, labels=tuple(labels))
        return pilot

    def statistic(self, score: Score, pilot: Pilot, bins: int) -> Statistic:
        self.state["score"] = score
        return super().statistic(score, pilot, bins)

    def fit_rates(self, fit, pilot: Pilot, bins: int) -> None:
        """One score per rate (``own_scores``): rate g's score is fitted on the pilot's fit
        half ``pilot`` resampled to rate g's law (:meth:`_resample`), and binned on that
        sample. The pooled score serves every rate when the grid has one rate, or when the
        rates' statistics would hold more than :data:`MAX_RATE_COUNTERS` counters on a
        side."""
        g = len(self.rates)
        runs = max(g, *(self.weights(side).shape[1] for side in (0, 1)))
        self.state["rate_scores"] = None
        if not self.config.strata.own_scores or g == 1 \
                or g * runs * (bins + 4) > MAX_RATE_COUNTERS:
            return
        scores, stats = [], []
        for r in range(g):
            resampled = self._resample(r, pilot)
            score = fit(resampled)
            scores.append(score)
            stats.append(ImplementationSubject.statistic(self, score, resampled, bins))
        self.state["rate_scores"] = (tuple(scores), tuple(stats))

    def _resample(self, r: int, pilot: Pilot) -> Pilot:
        """The fit half ``pilot`` resampled to rate ``r``'s law: as many calls as the half,
        drawn with replacement, each with probability ∝ w_m/n_m (m its stratum, n_m the
        half's calls there), a weighted bootstrap. (Drawn down without replacement to Kish's
        effective size instead, diffprivlib nanmean's scores lost power at π = 0.7 and 0.9:
        ε_lower 1.70 and 1.86 against 1.80 and 2.77, mean of 6 seeds; below, the two agree
        within 0.02.)"""
        labels, n = self.state["labels"], len(pilot.p)
        rng = np.random.default_rng([self.config.audit.seed, _RESAMPLE_TAG, r])
        sides = []
        for side, out in enumerate((pilot.p, pilot.q)):
            lab = labels[side][:n]
            n_m = np.bincount(lab, minlength=self.weights(side).shape[1])
            prob = self.weights(side)[r][lab] / n_m[lab]
            if not prob.sum() > 0:  # (no pilot call where this rate has weight)
                prob = np.ones(n)
            sides.append(out[rng.choice(n, size=n, p=prob / prob.sum())])
        return Pilot(*sides)

    def _rate_statistics(self, statistic: Statistic) -> tuple[tuple, tuple]:
        """(scores, statistics) per rate: each rate's own, or the pooled one for all."""
        own = self.state.get("rate_scores")
        if own is not None:
            return own
        g = len(self.rates)
        return (self.state["score"],) * g, (statistic,) * g

    def design(self, statistic: Statistic) -> StrataDesign:
        """The regions, designs and calls the pilot fixes (after ``draw``, ``statistic`` and
        ``fit_rates``): each rate's region from the selection half's per-stratum histograms
        (:func:`audit.estimation.strata_regions.rate_regions`) under that rate's statistic or
        the pooled one, whichever the main run is predicted to bound better at that rate
        (ties: the rate's own), then each side's allocation and design for those regions."""
        if "score" not in self.state:
            raise ValueError("a stratified audit fixes its design from its pilot: call draw "
                             "and statistic first (run_audit does)")
        au = self.config.audit
        pilot, labels = self.state["pilot"], self.state["labels"]
        half = len(pilot.p) // 2
        rest = pilot.split(half)[1]
        weights = [self.weights(side) for side in (0, 1)]
        scores, stats = self._rate_statistics(statistic)
        own = self.state.get("rate_scores") is not None
        pooled_score = self.state["score"]
        # each rate on the better of its own score and the pooled one, or every rate at once
        # on the pooled one
        groups = ([(g, slice(g, g + 1)) for g in range(len(self.rates))] if own
                  else [(0, slice(None))])
        regions, masks, p_hats, chosen = [], [], [[], []], []
        seen: dict[int, tuple] = {}  # per statistic (by id): its selection-half histograms,
        # its bin scores and the pooled half's region on it, for every rate alike
        for g, rows in groups:
            options = [(scores[g], stats[g])] + ([(pooled_score, statistic)] if own else [])
            best = None
            for score, stat in options:
                if id(stat) not in seen:
                    seen[id(stat)] = self._on_score(score, stat, rest, half, labels)
                hist, bin_scores, pooled = seen[id(stat)]
                picks = rate_regions(hist[0], hist[1], bin_scores, weights[0][rows],
                                     weights[1][rows], self.delta,
                                     guard_alpha=PILOT_GUARD_ALPHA, also=(pooled,),
                                     trials=au.trials, alpha_side=self.alpha_side)
                value = 0.0 if len(options) == 1 else sum(region_prediction(
                    r, bin_scores, hist[0], hist[1], weights[0][rows], weights[1][rows],
                    au.trials, self.alpha_side, self.delta, PILOT_GUARD_ALPHA)[i]
                    for i, r in enumerate(picks))
                if best is None or value > best[0]:  # ties: the rate's own score
                    best = (value, picks, hist, bin_scores, (score, stat))
            _, picks, hist, bin_scores, pick = best
            regions += picks
            chosen += [pick] * len(picks)
            for region in picks:
                mask = region.mask(bin_scores)
                masks.append(mask)
                for side in (0, 1):
                    p_hats[side].append(stratum_frequencies(hist[side], mask))
        forward = np.array([r.direction is Direction.Z_VS_ZPRIME for r in regions])
        p_hats = [np.stack(p_hats[side]) for side in (0, 1)]
        allocs = [st.allocate(len(self.rates) * au.trials, weights[side], p_hats[side],
                              self.config.strata.floor,
                              lower=forward if side == 0 else ~forward,  # side's numerator
                              alpha_side=self.alpha_side) for side in (0, 1)]
        designs = self._side_designs(p_hats, weights, allocs, forward)
        calls = [alloc if d is SideDesign.STRATIFIED
                 else np.full(len(self.rates), au.trials, dtype=np.int64)
                 for alloc, d in zip(allocs, designs, strict=True)]
        return StrataDesign(tuple(regions), tuple(designs), tuple(calls),
                            tuple(masks) if own else None,
                            tuple(c[1] for c in chosen) if own else None,
                            tuple(c[0] for c in chosen))

    def _on_score(self, score: Score, stat: Statistic, rest: Pilot, half: int, labels
                  ) -> tuple:
        """On one score: the selection half's histograms per stratum of each side, the bins'
        scores, and the region the pooled selection half chooses (every stratum alike; a
        candidate against each rate's own pick, :func:`rate_regions`)."""
        au = self.config.audit
        hist = []
        for side, out in enumerate((rest.p, rest.q)):
            h = np.zeros((self.weights(side).shape[1], stat.n_bins), dtype=np.int64)
            np.add.at(h, (labels[side][half:], stat.indices(out)), 1)
            hist.append(h)
        counted = SampleCounts(stat.counts(rest.p), stat.counts(rest.q), len(rest.p))
        pooled = policy.choose_region(Selection.PILOT, score, stat, delta=self.delta,
                                      alpha=au.alpha, trials=au.trials,
                                      selection_counts=counted)
        return hist, stat.bin_scores(score), pooled

    def _side_designs(self, p_hats, weights, allocs, forward) -> tuple:
        sides = self.config.strata.sides
        if sides is StrataSides.AUTO:
            return st.choose_designs(p_hats, weights, allocs, self.config.audit.trials,
                                     self.alpha_side, forward, delta=self.delta)
        stratified = {StrataSides.BOTH: (0, 1), StrataSides.P: (0,), StrataSides.Q: (1,),
                      StrataSides.NONE: ()}[sides]
        return tuple(SideDesign.STRATIFIED if side in stratified else SideDesign.PLAIN
                     for side in (0, 1))

    def _amplified(self) -> tuple | None:
        p = self.plan
        if p.eps_amplified is None:
            return None
        d = self.config.scenario.d
        return tuple(float(acc.amplify(p.claim.epsilon, p.claim.delta, 1.0 - r**d)[0])
                     for r in self.rates)

    def count(self, statistic: Statistic, trials: int, seed: int, *, progress: bool = False,
              label: str = "main run", checkpoint: str | None = None,
              monitor: Monitor | None = None) -> st.StratifiedCounts:
        """The main run: every side's calls by stratum or by rate, as :meth:`design` fixed
        (``trials`` calls per side per rate), in :attr:`looks` looks (sequential mode; the
        subject tests at its looks, so ``monitor`` must be None)."""
        if monitor is not None:
            raise ValueError("a stratified audit tests at its own looks: monitor must be None")
        if trials != self.config.audit.trials:
            raise ValueError(f"trials must be audit.trials={self.config.audit.trials} (the "
                             f"design's allocation), got trials={trials}")
        design = self.design(statistic)
        self.state.update(design=design, statistic=statistic)
        stats = design.statistics or (statistic,)
        own = design.statistics is not None
        looks = self.looks
        sequential = self.config.audit.mode is AuditMode.SEQUENTIAL
        schedule = [look_calls(design.calls[side], looks) for side in (0, 1)]
        hists = [[np.zeros((c.size, s.n_bins), dtype=np.int64) for s in stats]
                 for c in design.calls]
        increments = [np.diff(c, axis=0, prepend=0) for c in schedule]  # (looks, runs)
        bar = _bar(sum(int((-(-inc // self.chunk)).sum()) for inc in increments),
                   f"{self.config.name}: {label}", progress)
        bin_scores = statistic.bin_scores(self.state["score"])
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
