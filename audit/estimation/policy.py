"""Selection policy: how a pilot is split, how the test region is chosen, and which bound
the main counts give.

Every rule that decides what the main run's counts are evaluated on lives here, so that the
one audit runner (``audit.pipeline.runner``) holds no statistical choice. Validity rests on
one principle: the region (or the declared grid, or the sequential test's region) is fixed
before the main run, from the exact laws, from pilot draws independent of the main run, or
from a finite family paid for by a Bonferroni union bound.

- :func:`resolve_selection`: ``auto`` → ``model`` for a white-box attack on scalar outputs
  with known laws, else ``pilot``;
- :func:`pilot_design` (with the target kind's :class:`audit.policy.PilotRule`): how many
  pilot draws are held raw (to fit the attack and read the statistic's range) and how many
  are only counted (to choose the region);
- :func:`grid_thresholds`: the Bonferroni grid, declared from pilot quantiles;
- :func:`bound_rules`: the bound rules a fixed audit may choose between (the joint bound of a
  Poissonised run at δ = 0 beside the two intervals);
- :func:`choose_region` and :func:`fixed_bound`: the region, the rule it is bounded by and its
  Clopper–Pearson bound;
- :func:`sequential_claims`: the grid of claims a sequential audit tests at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit._validate import check_positive_int
from audit.enums import BoundRule, Selection
from audit.estimation import regions
from audit.estimation.regions import EpsLowerResult, Region
from audit.estimation.strata import StratifiedCounts
from audit.policy import DEFAULT_POLICY, AuditPolicy, PilotRule
from audit.protocols import Attack, Laws, Pilot, Score
from audit.statistics import OutputValue, Statistic

__all__ = [
    "PilotRule",
    "PilotDesign",
    "DEFAULT_POLICY",
    "resolve_selection",
    "pilot_design",
    "grid_thresholds",
    "bound_rules",
    "choose_region",
    "fixed_bound",
    "sequential_claims",
]

@dataclass(frozen=True)
class PilotDesign:
    """Draws per side of each part of a pilot: ``raw`` held in memory, of which the first
    ``fit`` fit the attack (the rest, if any, choose the region); ``counted`` drawn on their own
    stream and only counted (they choose the region)."""

    raw: int
    fit: int
    counted: int

    @property
    def total(self) -> int:
        return self.raw + self.counted


def resolve_selection(selection: Selection, attack: Attack, scalar: bool,
                      laws_known: bool = True) -> Selection:
    """``AUTO`` → ``MODEL`` for white-box attacks on scalar outputs with known laws, else
    ``PILOT``; ``MODEL`` is refused where it cannot apply."""
    selection = Selection.parse(selection, "selection")
    model_ok = attack.white_box and scalar and laws_known
    if selection is Selection.AUTO:
        return Selection.MODEL if model_ok else Selection.PILOT
    if selection is Selection.MODEL and not model_ok:
        raise ValueError(f"selection='model' needs attack.white_box, scalar and laws_known "
                         f"(the parts refuse such a config: audit.pipeline.parts), got "
                         f"attack.white_box={attack.white_box}, scalar={scalar}, "
                         f"laws_known={laws_known}")
    return selection


def pilot_design(size: int, rule: PilotRule, *, white_box: bool,
                 selection: Selection) -> PilotDesign:
    """Split a pilot of ``size`` draws per side as ``rule`` and the attack need.

    A black-box attack is fitted on raw draws and the region chosen on other draws, so the
    region is not tuned to the noise the score was fitted to; a white-box attack needs raw
    draws only for the statistic's range; model selection draws no pilot at all.
    """
    size = check_positive_int(size, "pilot size")
    if selection is Selection.MODEL:
        return PilotDesign(0, 0, 0)
    cap = size if rule.raw_cap is None else rule.raw_cap
    if white_box:
        raw = min(size, cap)
        return PilotDesign(raw, raw, size if rule.counted_selection else 0)
    if rule.counted_selection:
        fit = min(size // 2, cap)
        return PilotDesign(fit, fit, size - fit)
    return PilotDesign(size, size // 2, 0)


def grid_thresholds(score: Score, pilot: Pilot, *, policy: AuditPolicy | None = None
                    ) -> np.ndarray:
    """The Bonferroni grid, declared from ``policy.grid_quantiles`` pilot quantiles (default
    :data:`DEFAULT_POLICY`) before the main run."""
    policy = DEFAULT_POLICY if policy is None else policy
    levels = np.linspace(0.0, 1.0, policy.grid_quantiles)
    if isinstance(score.projection, OutputValue):
        return np.unique(score(np.quantile(np.concatenate([pilot.p, pilot.q]), levels)))
    return np.unique(np.quantile(np.concatenate([score(pilot.p), score(pilot.q)]), levels))


def bound_rules(selection: Selection, *, delta: float, poissonised: bool,
                black_box: bool = True, policy=None) -> tuple[BoundRule, ...]:
    """The bound rules a region choice may pick between: the joint bound
    (:class:`audit.enums.BoundRule`) beside the two intervals where ``policy`` (default
    :data:`DEFAULT_POLICY`) offers it to the target kind (``black_box``), δ = 0, the region
    is one region chosen before the run (not ``GRID``) and the subject can count a
    Poissonised main run (``poissonised``: a fixed-mode audit of a subject whose draws of
    each side are i.i.d., :func:`audit.pipeline.poisson.poissonisable`); else the two
    intervals only."""
    policy = DEFAULT_POLICY if policy is None else policy
    joint = (policy.joint_bound(black_box=black_box) and delta == 0.0 and poissonised
             and Selection.parse(selection, "selection") is not Selection.GRID)
    two = (BoundRule.TWO_INTERVALS,)
    return (BoundRule.JOINT,) + two if joint else two


def choose_region(selection: Selection, score: Score, statistic: Statistic, *, delta: float,
                  alpha: float, trials: int, laws: Laws | None = None,
                  selection_counts=None, rules=(BoundRule.TWO_INTERVALS,),
                  policy: AuditPolicy | None = None) -> Region | None:
    """The region a fixed or sequential audit is evaluated on (None for ``GRID``, whose
    regions are declared by :func:`grid_thresholds`), with the rule among ``rules``
    (:func:`bound_rules`) its main-run counts will be bounded by: each candidate region is
    predicted under each rule by the selection's own prediction, and the best (region,
    rule) kept, the joint rule where it is predicted at least as strong. The guards are
    ``policy``'s (default :data:`DEFAULT_POLICY`), in the one prediction rule of
    :mod:`audit.estimation.prediction`: ``guard_alpha`` for a pilot's numerator,
    ``pessimism_sd`` for every expected count."""
    policy = DEFAULT_POLICY if policy is None else policy
    bin_scores = statistic.bin_scores(score)
    if selection is Selection.GRID:
        return None
    if selection is Selection.MODEL:
        if laws is None:
            raise ValueError("model selection needs the exact laws")
        return regions.select_region_by_model(laws.P, laws.Q, statistic.edges, bin_scores,
                                              trials, delta, alpha, rules, policy=policy)
    return regions.select_region_on_pilot(selection_counts.counts_p,
                                          selection_counts.counts_q, bin_scores, delta,
                                          guard="predicted",
                                          pilot_alpha=policy.guard_alpha,
                                          trials=trials, alpha=alpha, rules=rules,
                                          pessimism_sd=policy.pessimism_sd)


def fixed_bound(selection: Selection, score: Score, statistic: Statistic, region: Region | None,
                counts, *, delta: float, alpha: float, grid_pilot: Pilot,
                policy: AuditPolicy | None = None) -> EpsLowerResult:
    """Clopper–Pearson on the chosen region by its rule (the joint rule needs the counts of a
    Poissonised main run), or the Bonferroni maximum over the grid; the
    counts of a stratified run (:class:`audit.estimation.strata.StratifiedCounts`) bound
    themselves at every rate of their grid (a :class:`~audit.estimation.strata.
    StratifiedBound`)."""
    bin_scores = statistic.bin_scores(score)
    if isinstance(counts, StratifiedCounts):
        return counts.bound(region, bin_scores, delta, alpha)
    cp, cq = counts.counts_p, counts.counts_q
    if selection is Selection.GRID:
        return regions.grid_bound(cp, cq, bin_scores, grid_thresholds(score, grid_pilot,
                                                                      policy=policy),
                                  delta, alpha)
    return regions.region_bound(cp, cq, bin_scores, region, delta, alpha,
                                method=selection.value)


def sequential_claims(*claims: float | None, policy: AuditPolicy | None = None) -> np.ndarray:
    """The claims a sequential audit tests at once: ``policy.claim_fractions`` (default
    :data:`DEFAULT_POLICY`) of the first (the implementation's claim) and every further
    positive one (the amplified claim)."""
    policy = DEFAULT_POLICY if policy is None else policy
    first, *rest = claims
    grid = list(first * np.asarray(policy.claim_fractions, dtype=np.float64))
    grid += [c for c in rest if c is not None and c > 0]
    return np.unique(np.asarray(grid, dtype=np.float64))
