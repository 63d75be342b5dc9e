"""What a stratified audit's pilot fixes for its main run (docs/THEORY.md §8.5): the pilot's
spread over the strata, each rate's score and region, each side's design and calls.

Everything here is a function of the pilot and of a :class:`StrataGrid` (the rates, each
side's stratum weights and the audit's levels), computed once before the main run into a
frozen :class:`StrataDesign` that :class:`audit.pipeline.strata_subject.
StratifiedImplementationSubject` runs. Nothing here calls the implementation.

- **Pilot spread** (:func:`spread`): each half (the attack's fit half, then the
  region-selection half) puts a quarter of its calls evenly over a side's strata that get
  calls, so rare strata are seen, and the rest in proportion to the strata's mean weight over
  the grid.
- **Scores per rate** (:func:`rate_scores`): rate g's score is fitted on the fit half
  resampled to rate g's law (a weighted bootstrap, :func:`resample`).
- **Design** (:func:`choose_design`): each rate's region from the selection half's
  per-stratum histograms weighted to that rate, under its own score or the pooled one,
  whichever the main run is predicted to bound better; then each side's allocation
  (:func:`audit.estimation.strata.allocate`) and design (stratified or plain per rate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from audit.enums import Direction, Selection, SideDesign, StrataSides
from audit.estimation import policy
from audit.estimation import strata as st
from audit.estimation.strata_designs import choose_side_designs
from audit.estimation.strata_regions import (
    rate_regions,
    region_prediction,
    stratum_frequencies,
)
from audit.protocols import Pilot, Score
from audit.statistics import Statistic

__all__ = ["StrataGrid", "StrataDesign", "StratifiedPilot", "spread", "rate_scores",
           "resample", "choose_design", "MAX_RATE_COUNTERS"]

_RESAMPLE_TAG = 0x52415445  # the seed part of the per-rate resamples of the fit half
#: most counters one side keeps for per-rate scores (rates × runs × bins): 128 MiB
MAX_RATE_COUNTERS = 2**24


@dataclass(frozen=True, eq=False)
class StrataGrid:
    """The grid a stratified audit bounds and the levels it bounds at: ``weights[side][g, m]``
    the weight of stratum m at rate g on that side; ``trials`` calls per side per rate;
    ``alpha_side`` each side's level at each look; ``strata`` the ``[strata]`` table;
    ``guard_alpha`` the pilot's guard (the audit's ``AuditPolicy.guard_alpha``)."""

    rates: np.ndarray
    weights: tuple
    trials: int
    alpha: float
    alpha_side: float
    delta: float
    seed: int
    strata: object
    guard_alpha: float

    @property
    def n_rates(self) -> int:
        return len(self.rates)


@dataclass(frozen=True, eq=False)
class StratifiedPilot(Pilot):
    """A pilot drawn by stratum: ``labels[side][i]`` is the stratum of call i on that side."""

    labels: tuple = ()


@dataclass(frozen=True, eq=False)
class StrataDesign:
    """What the pilot fixed for the main run: the pooled ``score`` and ``statistic``, each
    rate's region, each side's design and calls per stratum (stratified) or per rate
    (plain)."""

    score: Score
    statistic: Statistic
    regions: tuple
    designs: tuple
    calls: tuple
    #: with a score per rate: each rate's region over its own bins, its statistic and its
    #: score (the rate's own, or the pooled one where the pilot predicts it bounds better)
    masks: tuple | None = None
    statistics: tuple | None = None
    scores: tuple | None = None
    #: the scores and statistics fitted for each rate (None: the pooled ones serve all)
    rate_fits: tuple | None = None


def spread(total: int, weights: np.ndarray) -> np.ndarray:
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


def resample(grid: StrataGrid, r: int, pilot: Pilot, labels: tuple) -> Pilot:
    """The fit half ``pilot`` (its calls' strata ``labels``) resampled to rate ``r``'s law: as
    many calls as the half, drawn with replacement, each with probability ∝ w_m/n_m (m its
    stratum, n_m the half's calls there), a weighted bootstrap. (Drawn down without
    replacement to Kish's effective size instead, diffprivlib nanmean's scores lost power at
    π = 0.7 and 0.9: ε_lower 1.70 and 1.86 against 1.80 and 2.77, mean of 6 seeds; below, the
    two agree within 0.02.)"""
    n = len(pilot.p)
    rng = np.random.default_rng([grid.seed, _RESAMPLE_TAG, r])
    sides = []
    for side, out in enumerate((pilot.p, pilot.q)):
        lab = labels[side][:n]
        w = grid.weights[side]
        n_m = np.bincount(lab, minlength=w.shape[1])
        prob = w[r][lab] / n_m[lab]
        if not prob.sum() > 0:  # (no pilot call where this rate has weight)
            prob = np.ones(n)
        sides.append(out[rng.choice(n, size=n, p=prob / prob.sum())])
    return Pilot(*sides)


def rate_scores(grid: StrataGrid, fit: Callable[[Pilot], Score],
                bin: Callable[[Score, Pilot], Statistic], pilot: Pilot, labels: tuple,
                bins: int) -> tuple | None:
    """(scores, statistics), one per rate (``strata.own_scores``): rate g's score is fitted
    by ``fit`` on the fit half ``pilot`` resampled to rate g's law (:func:`resample`) and
    binned by ``bin`` on that sample. None (the pooled score serves every rate) when the grid
    has one rate, or when the rates' statistics would hold more than
    :data:`MAX_RATE_COUNTERS` counters on a side."""
    g = grid.n_rates
    runs = max(g, *(w.shape[1] for w in grid.weights))
    if not grid.strata.own_scores or g == 1 or g * runs * (bins + 4) > MAX_RATE_COUNTERS:
        return None
    scores, stats = [], []
    for r in range(g):
        resampled = resample(grid, r, pilot, labels)
        score = fit(resampled)
        scores.append(score)
        stats.append(bin(score, resampled))
    return tuple(scores), tuple(stats)


def _on_score(grid: StrataGrid, score: Score, stat: Statistic, rest: Pilot, labels: tuple
              ) -> tuple:
    """On one score: the selection half ``rest``'s histograms per stratum of each side (its
    calls' strata ``labels``), the bins' scores, and the region the pooled selection half
    chooses (every stratum alike; a candidate against each rate's own pick)."""
    hist = []
    for side, out in enumerate((rest.p, rest.q)):
        h = np.zeros((grid.weights[side].shape[1], stat.n_bins), dtype=np.int64)
        np.add.at(h, (labels[side], stat.indices(out)), 1)
        hist.append(h)
    counted = stat.pilot_counts(rest)
    pooled = policy.choose_region(Selection.PILOT, score, stat, delta=grid.delta,
                                  alpha=grid.alpha, trials=grid.trials,
                                  selection_counts=counted)
    return hist, stat.bin_scores(score), pooled


def _pick_regions(grid: StrataGrid, options: list, rows: slice, seen: dict, rest: Pilot,
                  labels: tuple) -> tuple:
    """The regions of the rates ``rows`` under the best of ``options`` ((score, statistic)
    pairs), by the bound the main run is predicted to give (ties: the first)."""
    best = None
    w0, w1 = grid.weights[0][rows], grid.weights[1][rows]
    for score, stat in options:
        if id(stat) not in seen:
            seen[id(stat)] = _on_score(grid, score, stat, rest, labels)
        hist, bin_scores, pooled = seen[id(stat)]
        picks = rate_regions(hist[0], hist[1], bin_scores, w0, w1, grid.delta,
                             guard_alpha=grid.guard_alpha, also=(pooled,),
                             trials=grid.trials, alpha_side=grid.alpha_side)
        value = 0.0 if len(options) == 1 else sum(region_prediction(
            r, bin_scores, hist[0], hist[1], w0, w1, grid.trials, grid.alpha_side,
            grid.delta, grid.guard_alpha)[i] for i, r in enumerate(picks))
        if best is None or value > best[0]:
            best = (value, picks, hist, bin_scores, (score, stat))
    return best[1:]


def choose_design(grid: StrataGrid, score: Score, statistic: Statistic,
                  rest: StratifiedPilot, fits: tuple | None) -> StrataDesign:
    """The regions, designs and calls the pilot fixes: each rate's region from the selection
    half ``rest``'s per-stratum histograms
    (:func:`audit.estimation.strata_regions.rate_regions`) under that rate's own score and
    statistic (``fits``, from :func:`rate_scores`) or the pooled ``score`` and
    ``statistic``, whichever the main run is predicted to bound better at that rate (ties:
    the rate's own), then each side's allocation and design for those regions."""
    own = fits is not None
    g = grid.n_rates
    scores, stats = fits if own else ((score,) * g, (statistic,) * g)
    # each rate on the better of its own score and the pooled one, or every rate at once
    # on the pooled one
    groups = [(r, slice(r, r + 1)) for r in range(g)] if own else [(0, slice(None))]
    regions, masks, p_hats, chosen = [], [], [[], []], []
    seen: dict[int, tuple] = {}  # per statistic (by id): its selection-half histograms,
    # its bin scores and the pooled half's region on it, for every rate alike
    for r, rows in groups:
        options = [(scores[r], stats[r])] + ([(score, statistic)] if own else [])
        picks, hist, bin_scores, pick = _pick_regions(grid, options, rows, seen, rest,
                                                      rest.labels)
        if grid.strata.simultaneous:
            picks = (_one_region(grid, picks, hist, bin_scores),) * len(picks)
        regions += picks
        chosen += [pick] * len(picks)
        for region in picks:
            mask = region.mask(bin_scores)
            masks.append(mask)
            for side in (0, 1):
                p_hats[side].append(stratum_frequencies(hist[side], mask))
    forward = np.array([r.direction is Direction.Z_VS_ZPRIME for r in regions])
    p_hats = [np.stack(p_hats[side]) for side in (0, 1)]
    allocs = [st.allocate(g * grid.trials, grid.weights[side], p_hats[side],
                          grid.strata.floor,
                          lower=forward if side == 0 else ~forward,  # side's numerator
                          alpha_side=grid.alpha_side) for side in (0, 1)]
    designs, calls = _side_designs(grid, p_hats, allocs, forward)
    return StrataDesign(score, statistic, tuple(regions), tuple(designs), tuple(calls),
                        tuple(masks) if own else None,
                        tuple(c[1] for c in chosen) if own else None,
                        tuple(c[0] for c in chosen), fits)


def _one_region(grid: StrataGrid, picks, hist, bin_scores):
    """The one region of a simultaneous audit (``strata.simultaneous``): among the rates'
    picks, the one whose ε_lower the main run is predicted to give, clipped at 0 and summed
    over the grid, is the largest (ties: the first rate's). A function of the pilot only, so
    the bounds it gives hold at every rate at once (docs/THEORY.md §8.5)."""
    best, value = picks[0], -np.inf
    for region in dict.fromkeys(picks):  # (distinct, in order)
        pred = region_prediction(region, bin_scores, hist[0], hist[1], grid.weights[0],
                                 grid.weights[1], grid.trials, grid.alpha_side, grid.delta,
                                 grid.guard_alpha)
        total = float(np.sum(np.clip(pred, 0.0, None)))
        if total > value:
            best, value = region, total
    return best


def _side_designs(grid: StrataGrid, p_hats, allocs, forward) -> tuple[tuple, tuple]:
    """Each side's design and calls (per stratum, or per rate for a plain side, spread over
    the rates by :func:`audit.estimation.strata_designs.plain_allocation`): the best of the
    four designs (``strata.sides = "auto"``) or the one the config forces, predicted on the
    pilot's per-stratum frequencies ``p_hats`` (the regions are fixed: no maximum over
    regions for the numerator's guard to correct, :mod:`audit.estimation.prediction`)."""
    sides = grid.strata.sides
    options = None
    if sides is not StrataSides.AUTO:
        stratified = {StrataSides.BOTH: (0, 1), StrataSides.P: (0,), StrataSides.Q: (1,),
                      StrataSides.NONE: ()}[sides]
        options = [tuple(SideDesign.STRATIFIED if side in stratified else SideDesign.PLAIN
                         for side in (0, 1))]
    return choose_side_designs(p_hats, list(grid.weights), allocs, grid.trials,
                               grid.alpha_side, forward, delta=grid.delta,
                               floor=grid.strata.floor, sides=options)
