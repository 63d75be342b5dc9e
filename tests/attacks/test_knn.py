"""The learned scores for vector releases: k-NN (NeighbourLogRatio), additive (CoordinateSum)
and the auto attack's choice among them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from attacks import AdditiveDensityRatio, Auto, NearestNeighbours
from attacks.auto import held_out_epsilon
from attacks.knn import loo_k
from audit.protocols import Pilot, Score
from audit.statistics import (
    CategoryIndex,
    CoordinateSum,
    LinearProjection,
    NeighbourLogRatio,
    OutputValue,
    Statistic,
)

RNG = np.random.default_rng(11)


def _gauss(m, shift, rng=RNG):
    return rng.normal(0.0, 1.0, (m, 2)) + np.asarray(shift)


def test_knn_estimates_the_log_ratio_of_two_gaussians():
    score = NearestNeighbours().fit(Pilot(_gauss(4000, [1.0, 0.0]), _gauss(4000, [0.0, 0.0])))
    assert isinstance(score.projection, NeighbourLogRatio) and score.note == ""
    x = np.array([[-1.0, 0.0], [0.5, 0.0], [2.0, 1.0]])
    np.testing.assert_allclose(score(x), x[:, 0] - 0.5, atol=0.35)  # truth: x₀ − ½


def test_knn_counts_neighbours_from_each_side():
    proj = NeighbourLogRatio(np.array([[0.0], [1.0], [2.0], [10.0]]),
                             np.array([True, True, False, False]), 2, np.ones(1))
    out = proj.evaluate(np.array([[0.4], [9.0], [np.nan], [np.inf]]))
    np.testing.assert_allclose(out[:2], [np.log(2.5 / 0.5), np.log(0.5 / 2.5)])
    assert np.isnan(out[2:]).all()
    clone = pickle.loads(pickle.dumps(proj))  # loky workers and checkpoints may pickle it
    np.testing.assert_array_equal(clone.evaluate(np.array([[0.4]])), out[:1])


@pytest.mark.parametrize(("kw", "needle"), [
    ({"k": 4}, "k must be an integer in"),
    ({"from_p": np.ones(4, bool)}, "both sides"),
    ({"scale": np.zeros(1)}, "scale must be"),
    ({"points": np.array([[0.0], [np.nan], [1.0], [2.0]])}, "points must be"),
])
def test_knn_projection_rejects_bad_parameters(kw, needle):
    args = {"points": np.arange(4.0).reshape(4, 1), "from_p": np.array([1, 0, 1, 0], bool),
            "k": 2, "scale": np.ones(1), **kw}
    with pytest.raises(ValueError, match=needle):
        NeighbourLogRatio(**args)


def test_leave_one_out_chooses_k_in_the_grid_below_half_the_pilot():
    points = np.concatenate([_gauss(1000, [1.0, 0.0]), _gauss(1000, [0.0, 0.0])])
    side = np.arange(2000) < 1000
    assert loo_k(points, side) in (5, 10, 20, 40, 80, 160)
    assert loo_k(points[990:1010], side[990:1010]) == 5  # 20 points: only k = 5 < 10


def test_knn_scores_non_finite_outputs_apart():
    a, b = _gauss(2000, [1.0, 0.0]), _gauss(2000, [0.0, 0.0])
    a[:200, 1] = np.nan  # 10 % NaN on z's side only
    score = NearestNeighbours().fit(Pilot(a, b))
    assert "non-finite" in score.note
    special = score(np.array([[0.0, np.nan]]))[0]
    np.testing.assert_allclose(special, np.log(200.5 / 2001) - np.log(0.5 / 2001))


def test_knn_scores_a_nan_row_by_its_observed_coordinates():
    """A NaN in the second coordinate on both sides (10 %, independent of the data): such a
    row still carries its first coordinate, whose log-ratio is x - 1/2 for N(1, 1) vs
    N(0, 1); the score follows it (it was one frequency score for every NaN row)."""
    rng = np.random.default_rng(5)
    a, b = _gauss(4000, [1.0, 0.0], rng), _gauss(4000, [0.0, 0.0], rng)
    a[rng.random(4000) < 0.1, 1] = np.nan
    b[rng.random(4000) < 0.1, 1] = np.nan
    score = NearestNeighbours().fit(Pilot(a, b))
    assert "1 scored by the neighbours" in score.note
    lo, hi = score(np.array([[-1.0, np.nan], [2.0, np.nan]]))
    assert hi - lo > 1.5  # the truth: 3.0; one frequency score would give 0
    assert np.isfinite(score(np.array([[0.0, np.inf]]))[0])  # an unseen pattern: scored


@pytest.mark.parametrize("kind", ["constant", "all-nan", "few-finite"])
def test_knn_falls_back_on_degenerate_pilots(kind):
    a, b = _gauss(500, [1.0, 0.0]), _gauss(500, [0.0, 0.0])
    if kind == "constant":
        a, b = np.ones((500, 2)), np.ones((500, 2))
    elif kind == "all-nan":
        a[:], b[:] = np.nan, np.nan
    else:
        a[5:, 0] = np.nan
    score = NearestNeighbours().fit(Pilot(a, b))
    assert "fell back to the density-ratio attack" in score.note
    assert isinstance(score.projection, LinearProjection)


def test_additive_score_is_the_sum_of_the_coordinate_ratios():
    # product of Laplace shifts: ln p/q = Σ_j (|x_j| − |x_j − 1|)/b
    a, b = RNG.laplace(1.0, 2.0, (20_000, 3)), RNG.laplace(0.0, 2.0, (20_000, 3))
    score = AdditiveDensityRatio().fit(Pilot(a, b))
    assert isinstance(score.projection, CoordinateSum)
    x = np.array([[-3.0, -3.0, -3.0], [3.0, 3.0, 3.0], [3.0, -3.0, 0.5]])
    truth = ((np.abs(x) - np.abs(x - 1.0)) / 2.0).sum(axis=1)
    np.testing.assert_allclose(score(x), truth, atol=0.25)


def test_coordinate_sum_scores_special_values_per_coordinate():
    proj = CoordinateSum((np.array([0.0, 1.0]), np.array([0.0, 2.0])),
                         (np.array([0.0, 1.0]), np.array([-1.0, 1.0])),
                         np.array([[5.0, 6.0, 7.0], [50.0, 60.0, 70.0]]))
    x = np.array([[0.5, 1.0], [np.nan, 9.0], [np.inf, -np.inf], [-4.0, np.nan]])
    np.testing.assert_allclose(proj.evaluate(x), [0.5, 6.0, 76.0, 50.0])
    with pytest.raises(ValueError, match="special must be"):
        CoordinateSum(proj.knots, proj.values, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="values\\[1\\]"):
        CoordinateSum(proj.knots, (np.zeros(2), np.zeros(3)), np.zeros((2, 3)))


def test_held_out_epsilon_sees_separation_and_not_noise():
    same = Pilot(RNG.normal(size=2000), RNG.normal(size=2000))
    ident = Score("x", OutputValue())
    assert held_out_epsilon(ident, same) < 0.25
    apart = Pilot(RNG.normal(3.0, 1.0, 2000), RNG.normal(size=2000))
    assert held_out_epsilon(ident, apart) > 3.0
    with pytest.raises(ValueError, match="alpha"):
        held_out_epsilon(ident, same, alpha=1.5)


def _checkerboard(m, odd, r=10):
    """Integer pairs in {0..r−1}²: odd x₁ + x₂ with probability ``odd``, marginals uniform."""
    x = RNG.integers(0, r, (m, 2))
    keep = RNG.random(m) < np.where(x.sum(axis=1) % 2 == 1, odd, 1 - odd)
    x[~keep, 1] = (x[~keep, 1] + 1) % r
    return x.astype(np.float64)


def test_auto_picks_categories_for_a_checkerboard_release():
    # 100 patterns: the 1-D density ratio on a projection blurs neighbouring parities
    score = Auto().fit(Pilot(_checkerboard(1500, 0.8), _checkerboard(1500, 0.2)))
    assert isinstance(score.projection, CategoryIndex), score.note
    assert score.note.endswith(": categorical")


def test_auto_keeps_the_density_ratio_unless_another_score_is_clearly_better():
    pilot = Pilot(_checkerboard(1500, 0.8), _checkerboard(1500, 0.2))
    score = Auto(margin=1e9).fit(pilot)
    assert isinstance(score.projection, LinearProjection), score.note
    assert score.note.endswith(": density-ratio")
    with pytest.raises(ValueError, match="margin"):
        Auto(margin=-1.0)


def test_auto_finds_a_change_of_noise_law_at_the_same_mean():
    n = 5000
    a = np.column_stack([RNG.laplace(size=n), RNG.normal(0.0, 0.3, n)])
    b = np.column_stack([RNG.laplace(size=n), RNG.laplace(0.0, 1.5, n)])
    score = Auto().fit(Pilot(a, b))
    assert isinstance(score.projection, CoordinateSum | NeighbourLogRatio), score.note
    stat = Statistic(score.projection, np.linspace(-20, 20, 101))
    assert stat.bin_scores(score).shape == (stat.n_bins,)
