"""Masks drawn by stratum (audit.simulation.strata) and one-sided black-box runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from audit.model.implementation import CallableImplementation, Claim
from audit.simulation.callables import CallableRun, iter_chunks
from audit.simulation.strata import SubsetMasks, maskable_entries, run_key


def test_exactly_m_entries_masked_never_a_nan_one():
    data = np.arange(12.0).reshape(6, 2)
    data[2, 1] = np.nan
    rng = np.random.default_rng(0)
    masks = SubsetMasks(4, 6).sample_masks(np.tile(data, (50, 1)), rng).reshape(50, 6, 2)
    assert np.all(masks.sum(axis=(1, 2)) == 4)
    assert not masks[:, 2, 1].any()
    assert maskable_entries(data) == 11


def test_the_masked_subset_is_uniform():
    # N = 5 maskable entries, m = 2: the 10 subsets equally likely (chi-square)
    data = np.zeros((5, 1))
    draws = 20_000
    masks = SubsetMasks(2, 5).sample_masks(np.tile(data, (draws, 1)),
                                           np.random.default_rng(1)).reshape(draws, 5)
    subsets = list(itertools.combinations(range(5), 2))
    index = {s: i for i, s in enumerate(subsets)}
    freq = np.bincount([index[tuple(np.flatnonzero(m))] for m in masks], minlength=10)
    assert stats.chisquare(freq).pvalue > 1e-3
    # and a biased sampler (the first entries preferred) would be caught
    assert freq.min() > 0.8 * draws / 10


def test_masks_are_reproducible_and_checked():
    data = np.zeros((4, 3))
    a = SubsetMasks(5, 4).sample_masks(data, np.random.default_rng(7))
    b = SubsetMasks(5, 4).sample_masks(data, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="masked"):
        SubsetMasks(13, 4).sample_masks(data, np.random.default_rng(0))
    with pytest.raises(ValueError, match="records"):
        SubsetMasks(1, 3).sample_masks(data, np.random.default_rng(0))
    with pytest.raises(ValueError, match="masked"):
        SubsetMasks(-1, 4)


def test_run_keys_are_distinct_and_fixed():
    keys = {run_key(5, part, side, i) for part in range(4) for side in (0, 1)
            for i in range(30)}
    assert len(keys) == 4 * 2 * 30
    assert run_key(5, 2, 1, 3) == run_key(5, 2, 1, 3) < 2**63
    with pytest.raises(ValueError, match="index"):
        run_key(5, 2, 1, -1)


def _count_masked(batch, rng):
    return np.isnan(batch).sum(axis=(1, 2)).astype(float)


IMPL = CallableImplementation(lambda d, rng: float(np.isnan(d).sum()), Claim(1.0), "count-nan",
                              _count_masked)


def test_one_sided_run_calls_one_side_and_has_its_own_digest(tmp_path):
    z = np.zeros((6, 1))
    run = CallableRun(IMPL, z, z, SubsetMasks(3, 6), 40, 100, 11, 0, sides=(1,))
    chunks = list(iter_chunks(run, checkpoint=tmp_path))
    assert all(c[1].shape == (0,) for c in chunks)
    assert np.all(np.concatenate([c[2] for c in chunks]) == 3.0)  # stratum m = 3
    again = list(iter_chunks(run, checkpoint=tmp_path))  # read back from the checkpoint
    np.testing.assert_array_equal(again[1][2], chunks[1][2])
    both = CallableRun(IMPL, z, z, SubsetMasks(3, 6), 40, 100, 11, 0)
    other = CallableRun(IMPL, z, z, SubsetMasks(2, 6), 40, 100, 11, 0, sides=(1,))
    assert len({run.digest(), both.digest(), other.digest()}) == 3
    with pytest.raises(ValueError, match="sides"):
        CallableRun(IMPL, z, z, SubsetMasks(3, 6), 40, 100, 11, 0, sides=(2,))
