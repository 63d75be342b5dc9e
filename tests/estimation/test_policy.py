"""audit.estimation.policy: the selection rules the one runner applies."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attacks import DensityRatio, ExactLikelihoodRatio
from audit.enums import BoundRule, Direction, Selection
from audit.estimation import policy, regions
from audit.estimation.policy import DEFAULT_POLICY, PilotDesign, PilotRule
from audit.protocols import Pilot
from audit.statistics import OutputValue, Statistic

MODEL = PilotRule(divisor=10, lo=100_000, hi=10_000_000, raw_cap=100_000,
                  counted_selection=True)
BLACK_BOX = PilotRule(divisor=5, lo=1_000, hi=50_000, raw_cap=None, counted_selection=False)


@pytest.mark.parametrize("rule, trials, size", [
    (MODEL, 10, 100_000), (MODEL, 10**7, 10**6), (MODEL, 10**12, 10**7),
    (BLACK_BOX, 100, 1_000), (BLACK_BOX, 20_000, 4_000), (BLACK_BOX, 10**9, 50_000),
    (MODEL, 10**18 + 7, 10**7), (BLACK_BOX, 4_999, 1_000),
    (PilotRule(5, 1_000, None, None, False), 10**9, 2 * 10**8),
    # the pilots of six audits at once, within the cap
    (PilotRule(5, 1_000, 50_000, None, False, scale=6), 20_000, 24_000),
    (PilotRule(5, 1_000, 50_000, None, False, scale=6), 100, 6_000),
    (PilotRule(5, 1_000, 50_000, None, False, scale=6), 10**9, 50_000),
    (PilotRule(5, 1_000, None, None, False, scale=6), 10**6, 1_200_000),
    # the main run's own size up to ``whole``, at least ``whole`` above, then a fifth
    (PilotRule(5, 1_000, None, None, False, whole=10_000), 500, 1_000),
    (PilotRule(5, 1_000, None, None, False, whole=10_000), 5_000, 5_000),
    (PilotRule(5, 1_000, None, None, False, whole=10_000), 20_000, 10_000),
    (PilotRule(5, 1_000, None, None, False, whole=10_000), 10**6, 200_000),
    (PilotRule(5, 1_000, None, None, False, whole=10_000, scale=6), 5_000, 30_000),
])
def test_default_pilot_size_is_a_fraction_of_the_budget_clipped(rule, trials, size):
    assert rule.default_size(trials) == size


def test_pilot_design_of_each_kind_of_subject_and_attack():
    white, black = ExactLikelihoodRatio(), DensityRatio()
    # model, white box, pilot selection: every raw draw (capped) fits; the selection is counted
    assert policy.pilot_design(10**6, MODEL, white_box=True, selection=Selection.PILOT) == \
        PilotDesign(100_000, 100_000, 10**6)
    # model, black box: half fits (capped), the rest is counted on its own stream
    assert policy.pilot_design(10**6, MODEL, white_box=False, selection=Selection.PILOT) == \
        PilotDesign(100_000, 100_000, 900_000)
    # implementation: all raw, first half fits, second half chooses the region
    d = policy.pilot_design(4_001, BLACK_BOX, white_box=False, selection=Selection.PILOT)
    assert d == PilotDesign(4_001, 2_000, 0) and d.total == 4_001
    # model selection draws nothing
    assert policy.pilot_design(10**6, MODEL, white_box=True, selection=Selection.MODEL).total == 0
    assert white.white_box and not black.white_box


def test_resolve_selection_auto_and_refusals():
    white, black = ExactLikelihoodRatio(), DensityRatio()
    assert policy.resolve_selection("auto", white, True) is Selection.MODEL
    assert policy.resolve_selection("auto", white, False) is Selection.PILOT
    assert policy.resolve_selection("auto", black, True) is Selection.PILOT
    assert policy.resolve_selection("auto", white, True, laws_known=False) is Selection.PILOT
    with pytest.raises(ValueError, match="selection='model'"):
        policy.resolve_selection("model", black, True)
    with pytest.raises(ValueError, match="selection must be one of"):
        policy.resolve_selection("best", black, True)


def test_sequential_claims_grid():
    grid = policy.sequential_claims(1.0, 0.62, None, 0.0)
    assert np.allclose(grid, sorted(set(np.arange(1, 9) / 8) | {0.62}))
    assert np.all(np.diff(grid) > 0)  # unique, sorted
    assert np.allclose(policy.sequential_claims(2.0), 2.0 * np.arange(1, 9) / 8)


def test_choose_region_and_fixed_bound_agree_with_the_region_functions():
    rng = np.random.default_rng(1)
    pilot = Pilot(rng.normal(1.0, 1.0, 4000), rng.normal(0.0, 1.0, 4000))
    score = DensityRatio().fit(pilot)
    statistic = Statistic(score.projection, np.linspace(-4, 5, 50))
    fit, sel = pilot.split(2000)
    counts = type("C", (), {"counts_p": statistic.counts(sel.p),
                            "counts_q": statistic.counts(sel.q)})()
    region = policy.choose_region(Selection.PILOT, score, statistic, delta=0.0, alpha=0.05,
                                  trials=10, selection_counts=counts)
    direct = regions.select_region_on_pilot(counts.counts_p, counts.counts_q,
                                            score.per_bin(statistic.edges), 0.0,
                                            guard="predicted",
                                            pilot_alpha=DEFAULT_POLICY.guard_alpha,
                                            trials=10, alpha=0.05)
    assert region == direct and region.direction is Direction.Z_VS_ZPRIME
    main = type("C", (), {"counts_p": statistic.counts(rng.normal(1.0, 1.0, 20_000)),
                          "counts_q": statistic.counts(rng.normal(0.0, 1.0, 20_000))})()
    res = policy.fixed_bound(Selection.PILOT, score, statistic, region, main, delta=0.0,
                             alpha=0.05, grid_pilot=fit)
    assert res.method == "pilot" and res.n_regions == 1 and 0.0 < res.eps_lower
    grid = policy.fixed_bound(Selection.GRID, score, statistic, None, main, delta=0.0,
                              alpha=0.05, grid_pilot=fit)
    assert grid.method == "bonferroni-grid" and grid.n_regions > 2
    assert policy.choose_region(Selection.GRID, score, statistic, delta=0.0, alpha=0.05,
                                trials=10) is None
    with pytest.raises(ValueError, match="exact laws"):
        policy.choose_region(Selection.MODEL, score, statistic, delta=0.0, alpha=0.05,
                             trials=10)


def test_grid_thresholds_are_pilot_quantiles_of_the_score():
    pilot = Pilot(np.arange(100.0), np.arange(100.0) + 0.5)
    score = DensityRatio().fit(pilot)
    th = policy.grid_thresholds(score, pilot)
    assert th.size <= DEFAULT_POLICY.grid_quantiles and np.all(np.diff(th) > 0)
    assert isinstance(score.projection, OutputValue)


def test_bound_rules_offer_the_joint_bound_only_where_it_is_valid():
    both = (BoundRule.JOINT, BoundRule.TWO_INTERVALS)
    two = (BoundRule.TWO_INTERVALS,)
    assert policy.bound_rules(Selection.PILOT, delta=0.0, poissonised=True) == both
    assert policy.bound_rules("model", delta=0.0, poissonised=True) == both
    assert policy.bound_rules(Selection.PILOT, delta=1e-6, poissonised=True) == two
    assert policy.bound_rules(Selection.GRID, delta=0.0, poissonised=True) == two
    assert policy.bound_rules(Selection.PILOT, delta=0.0, poissonised=False) == two
    off = dataclasses.replace(DEFAULT_POLICY, black_box_joint_bound=False)
    assert policy.bound_rules(Selection.PILOT, delta=0.0, poissonised=True, policy=off) == two
    # the model keeps the two intervals by default (its suite fails on any violation of its
    # exact ceilings); a policy may offer it the joint bound
    assert policy.bound_rules("model", delta=0.0, poissonised=True, black_box=False) == two
    on = dataclasses.replace(DEFAULT_POLICY, model_joint_bound=True)
    assert policy.bound_rules("model", delta=0.0, poissonised=True, black_box=False,
                              policy=on) == both


def test_choose_region_offered_both_rules_picks_the_joint_one_where_predicted_stronger():
    rng = np.random.default_rng(1)
    pilot = Pilot(rng.normal(1.0, 1.0, 4000), rng.normal(0.0, 1.0, 4000))
    score = DensityRatio().fit(pilot)
    statistic = Statistic(score.projection, np.linspace(-4, 5, 50))
    _, sel = pilot.split(2000)
    counts = type("C", (), {"counts_p": statistic.counts(sel.p),
                            "counts_q": statistic.counts(sel.q)})()
    rules = policy.bound_rules(Selection.PILOT, delta=0.0, poissonised=True)
    region = policy.choose_region(Selection.PILOT, score, statistic, delta=0.0, alpha=0.05,
                                  trials=10_000, selection_counts=counts, rules=rules)
    direct = regions.select_region_on_pilot(counts.counts_p, counts.counts_q,
                                            score.per_bin(statistic.edges), 0.0,
                                            guard="predicted",
                                            pilot_alpha=DEFAULT_POLICY.guard_alpha,
                                            trials=10_000, alpha=0.05, rules=rules)
    assert region == direct and region.rule is BoundRule.JOINT
