"""Which sides are stratified and how a plain side's calls are spread over the rates
(audit.estimation.strata_designs), on the pilot's predictions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from audit.enums import SideDesign
from audit.estimation.strata import allocate, predicted_side_bounds, stratum_weights
from audit.estimation.strata_designs import (
    _POSITIVE,
    PLAIN_UNITS,
    choose_side_designs,
    grid_value,
    plain_allocation,
)

RATES = [0.0, 0.1, 0.3, 0.5]


def _nan_propagating():
    """z: finite output only when all 20 entries are observed (stratum 0); z′: never."""
    w = stratum_weights(20, RATES)
    p = np.zeros(21)
    p[0] = 1.0
    return w, p, np.zeros(21)


def test_a_rate_that_needs_many_calls_gets_them_from_rates_bounded_well_with_fewer():
    # the z side stratified (its event lives in stratum 0); the z′ side plain, which must run
    # about 4,600 calls at π = 0.3 (mass 0.7^20 = 8e-4 against 3.7/n) for a bound above 0
    w, p, never = _nan_propagating()
    total = 4 * 2_000
    z = predicted_side_bounds(SideDesign.STRATIFIED, p, w, allocate(total, w, p, 20), 0.025)
    calls = plain_allocation(never, w, total, 0.025, z, np.zeros(4, dtype=bool))
    assert calls.sum() == total and calls[2] >= 4_000 and calls[3] == min(calls)
    even = predicted_side_bounds(SideDesign.PLAIN, never, w, np.full(4, 2_000), 0.025)
    spread = predicted_side_bounds(SideDesign.PLAIN, never, w, calls, 0.025)
    eps_even = np.log(z[0] / even[1]).clip(0)
    eps_spread = np.log(z[0] / spread[1]).clip(0)
    assert eps_even[2] == 0.0 < eps_spread[2]  # one more rate bounded above 0
    assert grid_value(eps_spread) > grid_value(eps_even)


def test_the_knapsack_is_exact_on_its_units():
    # against brute force over every split of the units (3 rates, the floor 1 unit each)
    w = stratum_weights(6, [0.0, 0.4, 0.8])
    p = np.linspace(0.3, 0.01, 7)
    other = (np.full(3, 0.02), np.full(3, 1e-3))
    total = 40 * 50
    calls = plain_allocation(p, w, total, 0.025, other, np.ones(3, dtype=bool))

    def value(split):
        lo, _ = predicted_side_bounds(SideDesign.PLAIN, p, w, np.asarray(split) * 50, 0.025)
        return grid_value(np.log(np.maximum(lo, 1e-300) / other[1]))

    best = max(value(s) for s in itertools.product(range(1, 39), repeat=3) if sum(s) == 40)
    assert value(calls // 50) == pytest.approx(best, abs=1e-6)


def test_nothing_to_gain_keeps_the_even_split_exactly():
    w = stratum_weights(6, [0.0, 0.4, 0.8])
    p = np.full(7, 0.5)
    calls = plain_allocation(p, w, 3_000, 0.025, (np.full(3, 0.5), np.full(3, 0.5)),
                             np.ones(3, dtype=bool))
    np.testing.assert_array_equal(calls, [1_000, 1_000, 1_000])


def test_the_objective_counts_positive_rates_before_the_sum():
    assert grid_value([6.0, 3.9, 0.0]) < grid_value([5.6, 3.5, 0.02])
    assert grid_value([1.0, 0.0]) == pytest.approx(_POSITIVE + 1.0)
    assert PLAIN_UNITS == 40


def test_forced_sides_keep_their_designs_and_get_their_calls():
    w, p, never = _nan_propagating()
    allocs = [allocate(8_000, w, p, 20), allocate(8_000, w, never, 20, lower=False)]
    forced = [(SideDesign.STRATIFIED, SideDesign.PLAIN)]
    designs, calls = choose_side_designs([p, never], [w, w], allocs, 2_000, 0.025, True,
                                         sides=forced)
    assert designs == forced[0]
    np.testing.assert_array_equal(calls[0], allocs[0])
    assert calls[1].sum() == 8_000 and calls[1][2] >= 4_000


def test_fewer_calls_than_units_keep_the_even_split():
    w, p, never = _nan_propagating()
    other = (np.full(4, 0.5), np.full(4, 1e-3))
    calls = plain_allocation(never, w, 30, 0.025, other, np.zeros(4, dtype=bool))
    np.testing.assert_array_equal(calls, [8, 8, 7, 7])
