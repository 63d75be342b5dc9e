"""The one rule by which a choice predicts the main run's bound (audit.estimation.prediction;
docs/THEORY.md §8.1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.estimation.prediction import expected_count, large_mass, resolution, small_mass
from audit.estimation.strata import stratum_weights
from audit.estimation.strata_regions import region_masses
from audit.policy import DEFAULT_POLICY


def test_a_large_mass_is_its_clopper_pearson_lower_bound_at_half_the_guard():
    k, n, guard = np.array([0, 1, 15, 990]), np.array([1000, 1000, 1000, 1000]), 1e-3
    want = [0.0] + [stats.beta.ppf(guard / 2, kk, nn - kk + 1)
                    for kk, nn in zip(k[1:], n[1:], strict=True)]
    assert large_mass(k, n, guard) == pytest.approx(want, rel=1e-10)
    with pytest.raises(ValueError, match="alpha"):
        large_mass(k, n, 0.0)


def test_a_small_mass_is_its_frequency_plus_one_numerator_hit():
    # on a plain pilot one hit of n is 1/n: (k + 1)/n, at most 1
    n = 1000.0
    r = resolution(15 / n, 15, 1 / n)
    assert r == pytest.approx(1 / n)
    assert small_mass([0, 4, 1000], n, r) == pytest.approx([1 / n, 5 / n, 1.0])
    # a numerator with no hit: one call's worth
    assert resolution(0.0, 0, 1 / n) == pytest.approx(1 / n)


def test_a_rare_strata_event_keeps_its_resolution():
    # z′ releases a number only in stratum 0 (weight 8e-4 at π = 0.3), 48 of 48 pilot calls
    # there; z never does (20 strata of 50). One numerator hit stands for 8e-4/48, not for
    # a pilot call's 1/1000, so the main run's stratified bound is not ruled out
    w_q = stratum_weights(20, [0.3])
    hq = np.zeros((21, 2), dtype=int)
    hq[:, 1] = 48
    hq[0] = [48, 0]
    hp = np.zeros((20, 2), dtype=int)
    hp[:, 1] = 50
    finite = np.array([True, False])
    num, den = region_masses(hq, hp, finite, w_q, 1e-3)
    assert num[0] == pytest.approx(stats.beta.ppf(5e-4, 48, 1)) and num[1:].max() == 0.0
    assert den.shape == (1, 20)
    assert den[0] == pytest.approx(np.full(20, w_q[0, 0] / 48))
    assert w_q[0, 0] == pytest.approx(0.7 ** 20)


def test_an_expected_count_moves_against_the_bound_within_its_calls():
    assert expected_count(0.01, 10_000, 1.0, large=True) == pytest.approx(90.0)
    assert expected_count(0.01, 10_000, 1.0, large=False) == pytest.approx(110.0)
    assert expected_count(0.0, 10_000, 1.0, large=False) == 0.0
    assert expected_count(1.0, 100, 2.0, large=False) == 100.0  # within [0, calls]
    assert expected_count(0.5, 4, 3.0, large=True) == 0.0
    assert expected_count(0.3, 1000, 0.0, large=True) == pytest.approx(300.0)
    # no policy given: the default policy's move (one standard deviation)
    assert DEFAULT_POLICY.pessimism_sd == 1.0
    assert expected_count(0.01, 10_000, None, large=True) == pytest.approx(90.0)
