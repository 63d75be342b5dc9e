"""A mask-stratified implementation audit: one run, ε_lower at every missing rate of a grid
(docs/THEORY.md §8.5; the ``[strata]`` table, :mod:`audit.pipeline.strata_config`).

The subject is an :class:`~audit.pipeline.implementation.ImplementationSubject` whose calls are
drawn by stratum. Under MCAR iid with rate π, a side's dataset with N maskable entries has
M ~ Binomial(N, π) masked entries, and given M = m a uniform m-subset of them masked: stratum
m's law is free of π, so its calls serve every rate of the grid.

- **Pilot** (``draw``): each half (the attack's fit half, then the region-selection half) is
  split evenly over each side's strata that get calls (weight ≥
  :data:`audit.estimation.strata.MIN_WEIGHT` at some rate), so rare strata are seen.
- **Design and allocation** (before the main run, from the pilot only): each rate has its own
  region, chosen on the selection half's per-stratum histograms weighted to that rate, or the
  pooled half's region where the main run is predicted to bound it better
  (:func:`audit.estimation.strata_regions.rate_regions`; one region for the whole grid lost
  power where the events spread over the strata: diffprivlib nanmean at π = 0.9, ε_lower 0.06
  against 2.89 from its own audit); each stratum's probability of each rate's region is
  estimated on that half; the stratified side's ``len(rates) × trials`` calls are allocated
  with :func:`audit.estimation.strata.allocate`,
  and with ``strata.sides = "auto"`` each side takes the design (stratified, or one plain run
  of ``trials`` calls per rate) whose predicted bounds are better
  (:func:`audit.estimation.strata.choose_design`).
- **Main run** (``count``): one one-sided :class:`audit.simulation.callables.CallableRun` per
  stratum (:class:`audit.simulation.strata.SubsetMasks`) or per rate (MCAR iid at that rate),
  each with its own key (:func:`audit.simulation.strata.run_key`) and checkpoint digest (its
  stratum, its calls); counts per run, bounded by
  :meth:`audit.estimation.strata.StratifiedCounts.bound`.

Fixed mode only (a sequential test over strata is not built).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from audit.enums import Direction, Selection, SideDesign, StrataSides
from audit.estimation import policy
from audit.estimation import strata as st
from audit.estimation.regions import PILOT_GUARD_ALPHA
from audit.estimation.strata_regions import rate_regions
from audit.pipeline.implementation import ImplementationSubject
from audit.pipeline.subject import Monitor, SampleCounts
from audit.protocols import Pilot, Score
from audit.statistics import Statistic
from audit.theory import accountant as acc

__all__ = ["StratifiedImplementationSubject", "StrataDesign"]

_PILOT_HALVES = (0, 1)  # run_key parts of the pilot's fit and selection halves
_MAIN_STRATA, _MAIN_RATES = 2, 3


@dataclass(frozen=True, eq=False)
class StrataDesign:
    """What the pilot fixed for the main run: each rate's region, each side's design and
    calls per stratum (stratified) or per rate (plain)."""

    regions: tuple
    designs: tuple
    calls: tuple


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
        return False

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
        """``n`` pilot calls per side: each half split evenly over the side's strata."""
        sides, labels = [], []
        for side in (0, 1):
            on = st.sampled_strata(self.weights(side))
            outs, labs = [], []
            for part, size in zip(_PILOT_HALVES, (n // 2, n - n // 2), strict=True):
                for m, calls in enumerate(_even(size, on)):
                    if calls:
                        run = self._side_run(side, part, m, self._stratum_masks(side, m),
                                             calls, seed, "pilot")
                        outs.extend(self._outputs(run))
                        labs.append(np.full(calls, m))
            sides.append(np.concatenate(outs))
            labels.append(np.concatenate(labs))
        pilot = Pilot(sides[0], sides[1])
        for key in ("score", "design", "statistic"):
            self.state.pop(key, None)
        self.state.update(pilot=pilot, labels=tuple(labels))
        return pilot

    def statistic(self, score: Score, pilot: Pilot, bins: int) -> Statistic:
        self.state["score"] = score
        return super().statistic(score, pilot, bins)

    def design(self, statistic: Statistic) -> StrataDesign:
        """The regions, designs and calls the pilot fixes (after ``draw`` and ``statistic``):
        each rate's region from the selection half's per-stratum histograms
        (:func:`audit.estimation.strata_regions.rate_regions`), then each side's allocation and
        design for those regions."""
        if "score" not in self.state:
            raise ValueError("a stratified audit fixes its design from its pilot: call draw "
                             "and statistic first (run_audit does)")
        au, score = self.config.audit, self.state["score"]
        pilot, labels = self.state["pilot"], self.state["labels"]
        half = len(pilot.p) // 2
        rest = pilot.split(half)[1]
        weights = [self.weights(side) for side in (0, 1)]
        hist = []
        for side, out in enumerate((rest.p, rest.q)):
            lab = labels[side][half:]
            h = np.zeros((weights[side].shape[1], statistic.n_bins), dtype=np.int64)
            np.add.at(h, (lab, statistic.indices(out)), 1)
            hist.append(h)
        bin_scores = statistic.bin_scores(score)
        # the region of the pooled selection half (every stratum alike) as a further candidate
        counted = SampleCounts(statistic.counts(rest.p), statistic.counts(rest.q), len(rest.p))
        pooled = policy.choose_region(Selection.PILOT, score, statistic, delta=self.delta,
                                      alpha=au.alpha, trials=au.trials,
                                      selection_counts=counted)
        regions = rate_regions(hist[0], hist[1], bin_scores, weights[0], weights[1],
                               self.delta, guard_alpha=PILOT_GUARD_ALPHA, also=(pooled,),
                               trials=au.trials, alpha_side=au.alpha / 2)
        masks = np.stack([r.mask(bin_scores) for r in regions])
        forward = np.array([r.direction is Direction.Z_VS_ZPRIME for r in regions])
        designs, calls = [], []
        for side in (0, 1):
            w, h = weights[side], hist[side]
            n_m = h.sum(axis=1)
            k_gm = masks.astype(np.int64) @ h.T  # (rates, strata): hits of each rate's region
            pooled = k_gm.sum(axis=1, keepdims=True) / max(n_m.sum(), 1)  # (unreached strata)
            p_hat = np.where(n_m > 0, k_gm / np.maximum(n_m, 1), pooled)
            lower = forward if side == 0 else ~forward  # where this side is the numerator
            alloc = st.allocate(len(self.rates) * au.trials, w, p_hat,
                                self.config.strata.floor, lower=lower,
                                alpha_side=au.alpha / 2)
            d = self._side_design(side, p_hat, w, alloc, lower)
            designs.append(d)
            calls.append(alloc if d is SideDesign.STRATIFIED
                         else np.full(len(self.rates), au.trials, dtype=np.int64))
        return StrataDesign(regions, tuple(designs), tuple(calls))

    def _side_design(self, side: int, p_hat, w, alloc, numerator) -> SideDesign:
        sides = self.config.strata.sides
        if sides is StrataSides.AUTO:
            return st.choose_design(p_hat, w, alloc, self.config.audit.trials,
                                    self.config.audit.alpha / 2, numerator=numerator,
                                    delta=self.delta)
        stratified = {StrataSides.BOTH: (0, 1), StrataSides.P: (0,), StrataSides.Q: (1,),
                      StrataSides.NONE: ()}[sides]
        return SideDesign.STRATIFIED if side in stratified else SideDesign.PLAIN

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
        (``trials`` calls per side per rate)."""
        from audit.model.missingness import make_missingness

        if monitor is not None:
            raise ValueError("a stratified audit runs in fixed mode (audit.mode='fixed')")
        if trials != self.config.audit.trials:
            raise ValueError(f"trials must be audit.trials={self.config.audit.trials} (the "
                             f"design's allocation), got trials={trials}")
        design = self.design(statistic)
        self.state.update(design=design, statistic=statistic)
        sides = []
        for side in (0, 1):
            calls = design.calls[side]
            counts = np.zeros((calls.size, statistic.n_bins), dtype=np.int64)
            stratified = design.designs[side] is SideDesign.STRATIFIED
            for r, n_r in enumerate(calls):
                if not n_r:
                    continue
                masks = (self._stratum_masks(side, r) if stratified else
                         make_missingness("mcar-iid", rate=float(self.rates[r])))
                run = self._side_run(side, _MAIN_STRATA if stratified else _MAIN_RATES, r,
                                     masks, n_r, seed, label)
                for out in self._outputs(run, checkpoint):
                    counts[r] += np.bincount(statistic.indices(out),
                                             minlength=statistic.n_bins)
            sides.append(st.SideCounts(design.designs[side], counts, calls,
                                       self.weights(side)))
        return st.StratifiedCounts(sides[0], sides[1], self.rates, self.main,
                                   len(self.rates) * trials, self._amplified(),
                                   regions=design.regions)
