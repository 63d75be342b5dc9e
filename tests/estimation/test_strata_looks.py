"""The looks of a sequential stratified audit (audit.estimation.strata_looks; THEORY §8.5):
the cumulative calls per look, and the bound over the looks, valid because each look holds at
alpha / looks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.enums import Direction, SideDesign
from audit.estimation.regions import Region
from audit.estimation.strata import SideCounts, StratifiedBound, StratifiedCounts, stratum_weights
from audit.estimation.strata_looks import MAX_LOOKS, look_calls, over_looks
from tests.estimation.test_strata import _counts


def test_look_calls_halve_the_budget_back_from_the_last_look():
    np.testing.assert_array_equal(look_calls([100, 7, 0], 3),
                                  [[25, 1, 0], [50, 3, 0], [100, 7, 0]])
    np.testing.assert_array_equal(look_calls([9], 1), [[9]])
    for bad in (0, MAX_LOOKS + 1):
        with pytest.raises(ValueError, match="looks"):
            look_calls([10], bad)


def _sequential_failures(reps: int, alpha: float, split: bool) -> int:
    """Runs of 4 looks (500, 1000, 2000, 4000 calls) on one region with P(S) = 0.5 and
    Q(S) = 0.5/e (ε_S = 1) whose ε_lower exceeds 1: the bound over the looks at alpha / 4
    each (``split``), or the largest of the looks' bounds each at alpha."""
    w = stratum_weights(0, [0.0])
    calls = look_calls([4000], 4)[:, 0]
    inc = np.diff(calls, prepend=0)
    rng = np.random.default_rng(11)
    region = Region(Direction.Z_VS_ZPRIME, 0.5)
    fails = 0
    for _ in range(reps):
        kp = np.cumsum(rng.binomial(inc, 0.5))
        kq = np.cumsum(rng.binomial(inc, 0.5 / np.e))
        bounds = []
        for j, n in enumerate(calls):
            sides = [SideCounts(SideDesign.STRATIFIED, np.array([[k[j], n - k[j]]]),
                                np.array([n]), w) for k in (kp, kq)]
            counts = StratifiedCounts(*sides, np.array([0.0]), 0, int(n))
            bounds.append(counts.bound(region, np.array([1.0, 0.0]), 0.0,
                                       alpha / 4 if split else alpha))
        eps = (over_looks(bounds, 4, alpha, "budget").eps_lower if split
               else max(b.eps_lower for b in bounds))
        fails += eps > 1.0
    return fails


def test_the_bound_over_looks_is_valid_with_alpha_split_over_the_looks():
    # at alpha = 0.2 the looks' bounds each at alpha exceed the truth 7x as often as the
    # bound over the looks at alpha / 4 each (seed 11: 117 against 17 of 1000)
    reps, alpha = 1000, 0.2
    split = _sequential_failures(reps, alpha, True)
    assert split <= stats.binom.ppf(1 - 1e-3, reps, alpha)
    assert _sequential_failures(reps, alpha, False) > 3 * split


def test_the_bound_over_looks_is_each_rates_largest_and_names_its_looks():
    counts = [_counts(True, None), _counts(True, True)]
    region = Region(Direction.Z_VS_ZPRIME, 0.5)
    looks = [c.bound(region, np.array([1.0, 0.0]), 0.0, 0.05 / 3) for c in counts]
    bound = over_looks(looks, 3, 0.05, "refuted")
    np.testing.assert_array_equal(bound.eps, np.maximum(looks[0].eps, looks[1].eps))
    assert bound.alpha == 0.05 and bound.sequential and bound.stopped_early
    assert (bound.looks, bound.looks_run, bound.stop) == (3, 2, "refuted")
    assert "sequential, 3 looks, stopped at look 2" in bound.describe()
    assert StratifiedBound.from_dict(bound.to_dict()) == bound
    with pytest.raises(ValueError, match="alpha / planned"):
        over_looks(looks, 2, 0.05, "refuted")
    with pytest.raises(ValueError, match="1 to planned=1 bounds"):
        over_looks(looks, 1, 0.05 / 3, "refuted")
    fixed = counts[0].bound(region, np.array([1.0, 0.0]), 0.0, 0.05)
    assert not fixed.sequential and "looks" not in fixed.describe()
