"""Stratum weights, allocation and the combined bounds (audit.estimation.strata; THEORY §8.5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.enums import Direction, SideDesign
from audit.estimation.binomial import cp_lower_array, cp_upper_array
from audit.estimation.regions import Region
from audit.estimation.strata import (
    MAX_ENTRIES,
    SideCounts,
    StratifiedBound,
    StratifiedCounts,
    allocate,
    check_rates,
    predicted_side_bounds,
    sampled_strata,
    side_bounds,
    stratum_weights,
)
from audit.estimation.strata_designs import choose_designs

GRID = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]


@pytest.mark.parametrize("n", [0, 1, 7, 20, 200])
def test_weights_are_the_binomial_pmf_and_sum_to_one(n):
    w = stratum_weights(n, GRID)
    assert w.shape == (len(GRID), n + 1)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
    for g, pi in enumerate(GRID):
        np.testing.assert_allclose(w[g], stats.binom.pmf(np.arange(n + 1), n, pi),
                                   rtol=1e-9, atol=1e-300)
    assert w[0, 0] == 1.0 and w[-1, -1] == 1.0  # π = 0 and 1: one stratum


@pytest.mark.parametrize("kwargs, needle", [
    ({"n_entries": -1, "rates": [0.3]}, "n_entries"),
    ({"n_entries": MAX_ENTRIES + 1, "rates": [0.3]}, "n_entries"),
    ({"n_entries": 2.5, "rates": [0.3]}, "n_entries"),
    ({"n_entries": 5, "rates": []}, "rates"),
    ({"n_entries": 5, "rates": [0.3, 1.2]}, "rates"),
    ({"n_entries": 5, "rates": [0.3, 0.3]}, "distinct"),
    ({"n_entries": 5, "rates": "0.3"}, "rates"),
    ({"n_entries": 5, "rates": [True]}, "rates"),
])
def test_bad_weights_input_names_the_parameter(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        stratum_weights(**kwargs)


def test_check_rates_names_the_config_key():
    with pytest.raises(ValueError, match="strata.rates"):
        check_rates([-0.1], "strata.rates")


def test_allocation_floor_total_and_the_rare_telling_stratum():
    w = stratum_weights(20, [0.3])
    p = np.zeros(21)
    p[0] = 1.0  # the event lives in the stratum of weight 0.7^20 = 8e-4
    alloc = allocate(20_000, w, p, 20)
    on = sampled_strata(w)
    assert alloc.sum() == 20_000 and np.all(alloc[on] >= 20) and np.all(alloc[~on] == 0)
    assert not on[20]  # 0.3^20 < MIN_WEIGHT: no calls
    assert alloc[0] > 100 * w[0, 0] * 20_000  # far above its weight's share
    np.testing.assert_array_equal(alloc, allocate(20_000, w, p, 20))  # deterministic
    # for an upper bound the event-free strata are what matters (k = 0 there)
    up = allocate(20_000, w, p, 20, lower=False)
    assert up[0] == 20 and up.sum() == 20_000
    with pytest.raises(ValueError, match="floor"):
        allocate(300, w, p, 20)
    with pytest.raises(ValueError, match="p_hat"):
        allocate(20_000, w, p[:-1], 20)


def test_side_bounds_are_the_weighted_bonferroni_clopper_pearson_bounds():
    w = stratum_weights(4, [0.2, 0.6])
    k = np.array([3, 5, 0, 9, 10])
    n = np.array([10, 10, 0, 10, 10])  # stratum 2 unsampled
    lo, hi = side_bounds(SideDesign.STRATIFIED, k, n, w, 0.025)
    a = 0.025 / 4
    safe = np.where(n > 0, n, 1)
    lo_m = np.where(n > 0, cp_lower_array(k, safe, a), 0.0)
    hi_m = np.where(n > 0, cp_upper_array(np.minimum(k, safe), safe, a), 1.0)
    np.testing.assert_allclose(lo, w @ lo_m)
    np.testing.assert_allclose(hi, np.minimum(w @ hi_m, 1.0))
    assert np.all(hi - lo >= w[:, 2])  # an unsampled stratum's weight stays in the interval
    plo, phi = side_bounds(SideDesign.PLAIN, [3, 4], [10, 10], w, 0.025)
    np.testing.assert_allclose(plo, cp_lower_array(np.array([3, 4]), 10, 0.025))
    np.testing.assert_allclose(phi, cp_upper_array(np.array([3, 4]), 10, 0.025))


def _coverage_failures(reps: int, seed: int) -> int:
    """Runs where some rate's combined interval misses the true P_π(S) (simultaneous over
    the grid), strata with a telling stratum of weight ≤ 1e-3."""
    rng = np.random.default_rng(seed)
    rates = [0.3, 0.5, 0.7]
    w = stratum_weights(10, rates)
    p_m = np.full(11, 0.02)
    p_m[0] = 0.98  # the rare stratum: weight 9.8e-4 at π = 0.5
    truth = stats.binom.pmf(np.arange(11)[None], 10, np.array(rates)[:, None]) @ p_m
    alloc = allocate(3000, w, p_m, 20)
    fails = 0
    for _ in range(reps):
        k = rng.binomial(alloc, p_m)
        lo, hi = side_bounds(SideDesign.STRATIFIED, k, alloc, w, 0.025)
        fails += bool(np.any(lo > truth) or np.any(hi < truth))
    return fails


def test_combined_intervals_cover_every_rate_at_once():
    # each side's interval is two one-sided bounds at 0.025: misses at most 5 % of runs
    reps = 2000
    fails = _coverage_failures(reps, 1)
    assert fails <= stats.binom.ppf(1 - 1e-3, reps, 0.05)


def test_bonferroni_over_strata_is_what_makes_the_grid_simultaneous():
    # π = 0 and π = 1 each read one stratum alone: without the split over the 3 strata the
    # chance that some rate's interval misses would be about 1 − 0.975^4 ≈ 10 %
    reps, rates = 2000, [0.0, 0.5, 1.0]
    w = stratum_weights(2, rates)
    truth = np.full(3, 0.5)
    n = np.full(3, 2000)
    k = np.random.default_rng(2).binomial(n, 0.5, size=(reps, 3))
    fails = 0
    for row in k:
        lo, hi = side_bounds(SideDesign.STRATIFIED, row, n, w, 0.025)
        fails += bool(np.any(lo > truth) or np.any(hi < truth))
    assert fails <= stats.binom.ppf(1 - 1e-3, reps, 0.05)
    assert fails >= 1  # the intervals are not vacuous


def _counts(design_p, design_q):
    w = stratum_weights(2, [0.0, 0.5])
    strat = SideCounts(SideDesign.STRATIFIED, np.array([[90, 10], [50, 50], [0, 100]]),
                       np.array([100, 100, 100]), w)
    plain = SideCounts(SideDesign.PLAIN, np.array([[5, 995], [40, 960]]),
                       np.array([1000, 1000]), w)
    return StratifiedCounts(strat if design_p else plain, plain if design_q is None
                            else strat, np.array([0.0, 0.5]), 1, 300)


def test_the_bound_at_every_rate_and_its_json():
    counts = _counts(True, None)  # z stratified, z' plain
    region = Region(Direction.Z_VS_ZPRIME, 0.5)  # bin 0 (score 1) of two (scores 1, 0)
    bound = counts.bound(region, np.array([1.0, 0.0]), 0.0, 0.05)
    w = stratum_weights(2, [0.0, 0.5])
    lo_m = cp_lower_array(np.array([90, 50, 0]), 100, 0.025 / 3)
    hi_q = cp_upper_array(np.array([5, 40]), 1000, 0.025)
    np.testing.assert_allclose(bound.p_lower, w @ lo_m)
    np.testing.assert_allclose(bound.q_upper, hi_q)
    np.testing.assert_allclose(bound.eps, np.log(w @ lo_m / hi_q))
    assert bound.eps_lower == bound.eps[1] and not bound.simultaneous
    assert bound.plug_in() == pytest.approx(np.log((0.25 * 0.9 + 0.5 * 0.5) / 0.04))
    doc = bound.to_dict()
    assert doc["kind"] == "strata" and [r["rate"] for r in doc["rates"]] == [0.0, 0.5]
    assert doc["design"] == {"p": "stratified", "q": "plain"}
    assert "z stratified, z' plain" in bound.describe()


def test_design_rule_stratifies_a_rare_event_and_not_a_side_that_never_sees_it():
    w = stratum_weights(20, [0.3])
    p = np.full(21, 1e-5)
    p[0] = 0.999  # z: the event lives (almost) only in the rare stratum m = 0
    never = np.full(21, 1e-4)  # z′: (almost) never
    allocs = [allocate(20_000, w, p, 20), allocate(20_000, w, never, 20, lower=False)]
    assert choose_designs([p, never], [w, w], allocs, 20_000, 0.025, True) == \
        (SideDesign.STRATIFIED, SideDesign.PLAIN)
    # the same with the sides swapped (z′ in the numerator)
    allocs = [allocate(20_000, w, never, 20, lower=False), allocate(20_000, w, p, 20)]
    assert choose_designs([never, p], [w, w], allocs, 20_000, 0.025, False) == \
        (SideDesign.PLAIN, SideDesign.STRATIFIED)


def test_design_rule_is_not_decided_by_a_rate_no_design_can_bound():
    """Rate 0.1: a region of probability 0.5 against 0.3 in every stratum, where Bonferroni
    over the strata only loses (plain is better on both sides). Rate 0.9: a region no design
    bounds above 0 (10⁻³ in one stratum, on both sides). The rule sums the predicted
    ε_lower (clipped at 0 as reported), so rate 0.9 does not decide: both sides plain. Each
    side alone, by the sum of its own log-bounds, would stratify z (the log of a stratified
    lower bound of order 10⁻⁵ against ln 10⁻³⁰⁰ for a plain one of 0)."""
    w = stratum_weights(20, [0.1, 0.9])
    rare = np.zeros(21)
    rare[20] = 1e-3
    p_hats = [np.stack([np.full(21, 0.5), rare]), np.stack([np.full(21, 0.3), rare])]
    allocs = [allocate(12_000, w, p_hats[0], 20),
              allocate(12_000, w, p_hats[1], 20, lower=False)]
    assert choose_designs(p_hats, [w, w], allocs, 6_000, 0.025, True) == \
        (SideDesign.PLAIN, SideDesign.PLAIN)
    lo_plain = predicted_side_bounds(SideDesign.PLAIN, p_hats[0], w, [6_000] * 2, 0.025)[0]
    lo_strat = predicted_side_bounds(SideDesign.STRATIFIED, p_hats[0], w, allocs[0], 0.025)[0]
    assert lo_plain[0] > lo_strat[0] and lo_plain[1] == 0.0 < lo_strat[1] < 1e-4
    # the trap of the per-side rule: z alone, by its summed log lower bounds, looks better
    # stratified
    assert np.log(lo_strat).sum() > np.log(np.maximum(lo_plain, 1e-300)).sum()


def test_design_rule_refuses_bad_directions_and_probabilities():
    w = stratum_weights(20, [0.1, 0.9])
    p = np.full(21, 0.5)
    allocs = [allocate(12_000, w, p, 20), allocate(12_000, w, p, 20, lower=False)]
    with pytest.raises(ValueError, match="forward must be a bool or 2 bools"):
        choose_designs([p, p], [w, w], allocs, 6_000, 0.025, [True] * 3)
    with pytest.raises(ValueError, match="p_hat"):
        choose_designs([p[:5], p], [w, w], allocs, 6_000, 0.025, True)


def test_per_rate_probabilities_equal_to_one_region_give_the_same_allocation_and_design():
    w = stratum_weights(20, [0.1, 0.3, 0.5])
    p = np.linspace(0.9, 0.01, 21)
    rows = np.tile(p, (3, 1))
    np.testing.assert_array_equal(allocate(20_000, w, rows, 20), allocate(20_000, w, p, 20))
    np.testing.assert_array_equal(allocate(20_000, w, rows, 20, lower=[False] * 3),
                                  allocate(20_000, w, p, 20, lower=False))
    allocs = [allocate(20_000, w, p, 20), allocate(20_000, w, p[::-1], 20, lower=False)]
    for fwd in (True, False):
        assert choose_designs([rows, np.tile(p[::-1], (3, 1))], [w, w], allocs, 5000, 0.025,
                              [fwd] * 3) == \
            choose_designs([p, p[::-1]], [w, w], allocs, 5000, 0.025, fwd)
    with pytest.raises(ValueError, match="lower"):
        allocate(20_000, w, rows, 20, lower=[True, False])
    with pytest.raises(ValueError, match="p_hat"):
        allocate(20_000, w, rows[:2], 20)


def test_a_rate_whose_events_sit_in_other_strata_gets_its_own_allocation():
    # rate 0 reads stratum 0 alone, rate 1 stratum 2 alone: per-rate regions whose mass is
    # in those strata pull the calls there, where one region's mass (stratum 0) would not
    w = stratum_weights(2, [0.0, 1.0])
    one = allocate(3000, w, np.array([0.5, 0.0, 0.0]), 20)
    per_rate = allocate(3000, w, np.array([[0.5, 0.0, 0.0], [0.0, 0.0, 0.5]]), 20)
    assert one.tolist() == [2980, 0, 20]  # stratum 1 weighs 0 at both rates: no calls
    assert per_rate.tolist() == [1500, 0, 1500]


def test_one_region_per_rate_bounds_each_rate_on_its_own_region():
    counts = _counts(True, False)  # both sides stratified
    scores = np.array([1.0, 0.0])
    regions = (Region(Direction.Z_VS_ZPRIME, 0.5), Region(Direction.ZPRIME_VS_Z, 0.5))
    both = counts.bound(regions, scores, 0.0, 0.05)
    for g, region in enumerate(regions):
        alone = counts.bound(region, scores, 0.0, 0.05)  # that region at every rate
        assert both.eps[g] == alone.eps[g] and both.p_lower[g] == alone.p_lower[g]
        assert both.q_upper[g] == alone.q_upper[g] and both.point[g] == alone.point[g]
        assert alone.simultaneous and alone.one_region
    assert not both.simultaneous and not both.one_region
    assert both.direction is Direction.ZPRIME_VS_Z  # the main rate's (rates[1])
    back = StratifiedBound.from_dict(both.to_dict())
    assert back == both and "each rate its own region" in both.describe()
    old = both.to_dict()  # a witness from before per-rate regions: the top region throughout
    for r in old["rates"]:
        del r["direction"], r["threshold"]
    assert StratifiedBound.from_dict(old).directions == (Direction.ZPRIME_VS_Z,) * 2
    with pytest.raises(ValueError, match="one region per rate"):
        counts.bound(regions[:1], scores, 0.0, 0.05)


def test_counts_under_each_rates_own_statistic_bound_each_rate_on_its_own_bins():
    # rate 0 counted on 2 bins, rate 1 on 3: each rate's bound is that of its own histograms
    w = stratum_weights(2, [0.0, 0.5])
    by_rate_p = (np.array([[90, 10], [50, 50], [0, 100]]),
                 np.array([[60, 30, 10], [20, 30, 50], [0, 0, 100]]))
    by_rate_q = (np.array([[10, 90], [50, 50], [100, 0]]),
                 np.array([[10, 30, 60], [50, 30, 20], [100, 0, 0]]))
    calls = np.array([100, 100, 100])
    masks = (np.array([True, False]), np.array([True, True, False]))
    regions = (Region(Direction.Z_VS_ZPRIME, 0.5), Region(Direction.Z_VS_ZPRIME, 0.5))
    sides = [SideCounts(SideDesign.STRATIFIED, c[1], calls, w, by_rate=c) for c in
             (by_rate_p, by_rate_q)]
    both = StratifiedCounts(*sides, np.array([0.0, 0.5]), 1, 300, regions=regions,
                            masks=masks).bound(None, None, 0.0, 0.05)
    assert both.own_scores and not both.simultaneous and not both.one_region
    for g in range(2):
        alone = [SideCounts(SideDesign.STRATIFIED, c[g], calls, w) for c in
                 (by_rate_p, by_rate_q)]
        ref = StratifiedCounts(*alone, np.array([0.0, 0.5]), 1, 300).bound(
            regions[g], np.where(masks[g], 1.0, 0.0), 0.0, 0.05)
        assert both.eps[g] == ref.eps[g] and both.p_lower[g] == ref.p_lower[g]
    assert StratifiedBound.from_dict(both.to_dict()) == both

