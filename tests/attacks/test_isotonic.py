"""The isotonic additive score (attacks.isotonic): monotone per-coordinate log-ratios whose
flat ends make the corner of a Laplace shift an atom of the score."""

from __future__ import annotations

import numpy as np
import pytest

from attacks import IsotonicSum
from attacks.isotonic import monotone_log_ratio
from audit.protocols import Pilot
from audit.statistics import CoordinateSum

RNG = np.random.default_rng(5)


def test_a_laplace_shift_gives_the_clipped_log_ratio_with_flat_ends():
    # ln p/q = (|x| − |x − 1|)/3: −1/3 below 0, +1/3 above 1, linear between
    a, b = RNG.laplace(1.0, 3.0, 40_000), RNG.laplace(0.0, 3.0, 40_000)
    knots, values = monotone_log_ratio(a, b, min_block=2400)  # 3 % of the values
    assert np.all(np.diff(knots) > 0) and np.all(np.diff(values) >= 0)  # increasing
    x = np.array([-8.0, -3.0, 0.5, 4.0, 9.0])
    truth = (np.abs(x) - np.abs(x - 1.0)) / 3.0
    # each end holds ~40 % of 80,000 values: its log-ratio within ±0.05 (> 6 standard errors)
    np.testing.assert_allclose(np.interp(x, knots, values), truth, atol=0.1)
    flip_k, flip_v = monotone_log_ratio(b, a, min_block=2400)  # the other way: decreasing
    assert np.all(np.diff(flip_v) <= 0)


def test_the_corner_of_a_three_coordinate_laplace_shift_scores_nearly_alike():
    a, b = RNG.laplace(1.0, 3.0, (20_000, 3)), RNG.laplace(0.0, 3.0, (20_000, 3))
    score = IsotonicSum().fit(Pilot(a, b))
    assert isinstance(score.projection, CoordinateSum) and score.note == ""
    corner = np.array([[4.0, 5.0, 6.0], [7.0, 4.5, 12.0], [30.0, 30.0, 30.0]])
    s = score(corner)
    # the orthant beyond both centres: within the noise of a few merged blocks, the whole
    # ratio e^ε, ε = 3 · 1/3 (each end block holds ≥ 3 % of 40,000 values)
    assert np.ptp(s) < 0.2 and s == pytest.approx(1.0, abs=0.2)
    assert score(np.array([[4.0, 5.0, -6.0]]))[0] < s.min() - 0.4


def test_special_values_and_degenerate_coordinates_are_scored_without_raising():
    a, b = RNG.normal(1.0, 1.0, (3000, 2)), RNG.normal(0.0, 1.0, (3000, 2))
    a[::100, 1] = np.nan
    b[:, 0] = a[:, 0] = 2.0  # a constant coordinate
    score = IsotonicSum().fit(Pilot(a, b))
    assert "non-finite" in score.note
    out = score(np.array([[2.0, np.nan], [2.0, 5.0], [2.0, -5.0]]))
    assert np.all(np.isfinite(out)) and out[0] > out[2] and out[1] > out[2]
    knots, values = monotone_log_ratio(np.full(5, np.nan), np.full(5, np.nan))
    np.testing.assert_array_equal(values, [0.0, 0.0])


def test_small_blocks_merge_into_their_nearer_neighbour():
    from attacks.isotonic import _merged

    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1], dtype=float)
    # blocks [0, 4) mean 0, [4, 5) mean 1, [5, 10) mean 1: the single value joins the right
    assert _merged(np.array([0, 4, 5, 10]), labels, 2) == [(0, 4), (4, 10)]
    assert _merged(np.array([0, 4, 5, 10]), labels, 11) == [(0, 10)]
    assert _merged(np.array([0, 10]), labels, 50) == [(0, 10)]


@pytest.mark.parametrize("kwargs, name", [({"pseudo_count": 0.0}, "pseudo_count"),
                                          ({"min_block": 0.6}, "min_block")])
def test_the_settings_are_checked(kwargs, name):
    with pytest.raises(ValueError, match=name):
        IsotonicSum(**kwargs)
