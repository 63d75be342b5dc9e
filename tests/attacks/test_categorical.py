"""Exact categorical counting: the CategoryIndex projection and the categorical attack."""

from __future__ import annotations

import numpy as np
import pytest

from attacks import Categorical
from attacks.categorical import distinct_rows
from audit.mixture import Mixture
from audit.protocols import Pilot
from audit.simulation.engine import run_histograms
from audit.statistics import (
    CategoryIndex,
    LinearProjection,
    OutputValue,
    Statistic,
    quantise_scores,
)

RNG = np.random.default_rng(3)


def _bits(m, probs, rng=RNG):
    return (rng.random((m, len(probs))) < np.asarray(probs)).astype(np.float64)


def test_category_index_maps_rows_exactly_and_unseen_values_to_other():
    proj = CategoryIndex([[0.0, 1.0], [np.nan, 2.0], [1.0, -0.0]])
    x = np.array([[np.nan, 2.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1e-300], [5.0, 5.0],
                  [float.fromhex("0x1.8p-1"), 1.0]])
    # NaN equals NaN, -0.0 equals 0.0; a value one ulp away is another category
    assert proj.evaluate(x).tolist() == [1.0, 0.0, 2.0, 3.0, 3.0, 3.0]
    assert proj.other == 3
    assert CategoryIndex([0.0, 3.0]).evaluate(np.array([3.0, 1.0])).tolist() == [1.0, 2.0]


@pytest.mark.parametrize(("table", "needle"), [
    ([[1.0, np.nan], [1.0, np.nan]], "distinct rows"),
    (np.zeros((0, 2)), "table must have shape"),
])
def test_category_index_rejects_bad_tables(table, needle):
    with pytest.raises(ValueError, match=needle):
        CategoryIndex(table)


def test_category_index_refuses_outputs_of_another_dimension():
    with pytest.raises(ValueError, match="dimension 2"):
        CategoryIndex([[0.0, 1.0]]).evaluate(np.zeros((3, 3)))


def test_scores_are_the_smoothed_log_ratios_in_increasing_order():
    p = np.array([[0.0, 1.0]] * 6 + [[1.0, 1.0]] * 2 + [[0.0, 0.0]] * 2)
    q = np.array([[0.0, 1.0]] * 2 + [[1.0, 1.0]] * 2 + [[0.0, 0.0]] * 6)
    score = Categorical().fit(Pilot(p, q))
    table = score.projection.table
    assert table.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    # 4 cells (3 categories and other), pseudo count 0.5 each: totals 12 on both sides
    expected = [np.log(2.5 / 6.5), 0.0, np.log(6.5 / 2.5), 0.0]
    np.testing.assert_allclose(score.of_projected(np.arange(4.0)), expected)
    np.testing.assert_allclose(score(np.array([[0.0, 1.0], [7.0, 7.0]])), [expected[2], 0.0])


def test_distinct_rows_needs_repeated_values():
    assert distinct_rows(Pilot(RNG.normal(size=100), RNG.normal(size=100)), 1000) is None
    rows, cp, cq = distinct_rows(Pilot(np.array([1.0, 1.0, 2.0]), np.array([2.0, 2.0, 2.0])),
                                 10)
    found = {r: (a, b) for r, a, b in zip(rows.ravel().tolist(), cp.tolist(), cq.tolist(),
                                          strict=True)}
    assert found == {1.0: (2, 0), 2.0: (1, 3)}
    assert distinct_rows(Pilot(np.arange(6.0) % 3, np.arange(6.0) % 3), 2) is None


def test_a_parity_release_is_caught_where_the_linear_projection_is_blind():
    # P: b1 xor b2 = 1 with probability 0.8, Q: 0.2; both marginals uniform
    def draw(m, odd):
        b1 = RNG.random(m) < 0.5
        flip = RNG.random(m) < odd
        return np.column_stack([b1, b1 ^ flip]).astype(np.float64)

    pilot = Pilot(draw(4000, 0.8), draw(4000, 0.2))
    score = Categorical().fit(pilot)
    assert isinstance(score.projection, CategoryIndex) and score.note == ""
    fresh_p, fresh_q = score(draw(20_000, 0.8)), score(draw(20_000, 0.2))
    assert fresh_p.mean() - fresh_q.mean() > 1.5  # ≈ 2 · 0.6 · ln 4 = 1.66
    top = score(np.array([[0.0, 1.0], [1.0, 0.0]]))
    np.testing.assert_allclose(top, np.log(4.0), atol=0.15)


def test_a_scalar_few_valued_release_is_counted_exactly():
    p, q = RNG.poisson(3.0, 3000).astype(float), RNG.poisson(2.0, 3000).astype(float)
    score = Categorical().fit(Pilot(p, q))
    assert isinstance(score.projection, CategoryIndex)
    x = np.array([0.0, 2.0, 5.0])  # true log-ratio: −1 + x ln 1.5
    np.testing.assert_allclose(score(x), -1 + x * np.log(1.5), atol=0.25)


def test_too_many_values_fall_back_to_the_density_ratio():
    p, q = RNG.integers(0, 3000, 4000).astype(float), RNG.integers(0, 3000, 4000).astype(float)
    score = Categorical(max_categories=100).fit(Pilot(p, q))
    assert isinstance(score.projection, OutputValue) and "max_categories=100" in score.note
    score = Categorical(max_categories=2).fit(Pilot(_bits(500, [0.5, 0.5]),
                                                    _bits(500, [0.4, 0.4])))
    assert isinstance(score.projection, LinearProjection) and "fell back" in score.note


def test_statistic_bins_keep_the_categories_apart():
    p, q = _bits(2000, [0.7, 0.2, 0.5]), _bits(2000, [0.3, 0.2, 0.5])
    score = Categorical().fit(Pilot(p, q))
    stat = Statistic(score.projection, np.linspace(-2.0, 10.0, 4001))
    assert np.unique(stat.indices(np.concatenate([p, q]))).size == 8
    bins = stat.bin_scores(score)
    assert bins.shape == (stat.n_bins,) and not np.isnan(bins).any()
    # each reached bin is scored exactly as its category (the bins are narrower than 1/2),
    # quantised as every bin score is (audit.statistics.quantise_scores)
    reached = np.unique(stat.indices(np.concatenate([p, q])))
    np.testing.assert_array_equal(np.sort(bins[reached]),
                                  np.sort(quantise_scores(score(np.concatenate([p, q]))[np.unique(
                                      stat.indices(np.concatenate([p, q])),
                                      return_index=True)[1]])))
    assert stat.to_dict()["kind"] == "category" and stat.to_dict()["size"] == 8


@pytest.mark.parametrize("bad", [{"max_categories": 0}, {"pseudo_count": 0.0}])
def test_rejects_bad_parameters(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        Categorical(**bad)


def test_the_engine_refuses_black_box_projections():
    P = Mixture([1.0], [[0.0, 0.0]], "laplace", 1.0)
    stat = Statistic(CategoryIndex([[0.0, 0.0]]), [0.0, 1.0])
    with pytest.raises(ValueError, match=r"statistic.projection must be one of .*got a "
                                         r"CategoryIndex"):
        run_histograms(P, P, stat, 100, 0)
