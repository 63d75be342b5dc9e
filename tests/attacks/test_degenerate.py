"""No attack raises on degenerate pilots — NaN, ±inf, constant, collinear, separable, all-NaN —
and each says in its score's note what it fell back on; a NaN in one coordinate no longer
blinds the vector projection."""

from __future__ import annotations

import numpy as np
import pytest

from attacks import (
    AdditiveDensityRatio,
    Auto,
    Categorical,
    DensityRatio,
    IsotonicSum,
    LogisticRegression,
    NearestNeighbours,
    OutputThreshold,
)
from audit.protocols import Pilot
from audit.statistics import LinearProjection, Statistic

BLACK_BOX = [DensityRatio(), LogisticRegression(), OutputThreshold(), Categorical(),
             NearestNeighbours(), AdditiveDensityRatio(), IsotonicSum(), Auto()]
RNG = np.random.default_rng(0)
N = 2000


def _scalar(kind):
    a, b = RNG.normal(1.0, 1.0, N), RNG.normal(0.0, 1.0, N)
    if kind == "nan":
        a[::7] = np.nan
    elif kind == "inf":
        a[::5], b[::11] = np.inf, -np.inf
    elif kind == "constant":
        a, b = np.ones(N), np.ones(N)
    elif kind == "separable":
        a, b = RNG.uniform(5, 6, N), RNG.uniform(-6, -5, N)
    elif kind == "all-nan":
        a, b = np.full(N, np.nan), np.full(N, np.nan)
    return Pilot(a, b)


def _vector(kind):
    a, b = RNG.normal(1.0, 1.0, (N, 2)), RNG.normal(0.0, 1.0, (N, 2))
    if kind == "nan":
        a[::1000, 1] = np.nan  # 0.1 % NaN in one coordinate
    elif kind == "inf":
        a[::9, 0], b[::13, 1] = np.inf, -np.inf
    elif kind == "constant":
        a, b = np.ones((N, 2)), np.ones((N, 2))
    elif kind == "collinear":
        a[:, 1], b[:, 1] = a[:, 0], b[:, 0]
    elif kind == "separable":
        a, b = RNG.uniform(5, 6, (N, 2)), RNG.uniform(-6, -5, (N, 2))
    elif kind == "all-nan":
        a, b = np.full((N, 2), np.nan), np.full((N, 2), np.nan)
    return Pilot(a, b)


@pytest.mark.parametrize("attack", BLACK_BOX, ids=lambda a: a.name)
@pytest.mark.parametrize("kind", ["nan", "inf", "constant", "collinear", "separable", "all-nan"])
@pytest.mark.parametrize("shape", ["scalar", "vector"])
def test_no_attack_raises_and_every_bin_gets_a_score(attack, kind, shape):
    if shape == "scalar" and kind == "collinear":
        pytest.skip("a scalar has no second coordinate")
    pilot = (_scalar if shape == "scalar" else _vector)(kind)
    score = attack.fit(pilot)
    values = np.concatenate([score.projection.evaluate(pilot.p),
                             score.projection.evaluate(pilot.q)])
    finite = values[np.isfinite(values)]
    edges = np.linspace(finite.min() - 1, finite.max() + 1, 20) if finite.size \
        else np.linspace(-1, 1, 20)
    stat = Statistic(score.projection, edges, infinities=bool(np.isinf(values).any()))
    bins = stat.bin_scores(score)
    assert bins.shape == (stat.n_bins,) and not np.isnan(bins).any()
    assert isinstance(score.note, str)


def test_the_logistic_fit_says_when_it_fell_back():
    assert LogisticRegression().fit(_vector("collinear")).note != ""
    assert "non-finite" in LogisticRegression().fit(_vector("nan")).note
    assert LogisticRegression().fit(_vector("plain")).note == ""


def test_a_rare_nan_in_one_coordinate_keeps_the_projection():
    clean, dirty = _vector("plain"), _vector("nan")
    w_clean = DensityRatio().fit(clean).projection.weights
    w_dirty = DensityRatio().fit(dirty).projection.weights
    assert isinstance(DensityRatio().fit(dirty).projection, LinearProjection)
    # both point along (1, 1)/√2 (the mean shift), not at the first axis
    assert np.allclose(w_clean, w_dirty, atol=0.1) and abs(w_dirty[1]) > 0.5


def test_infinite_releases_get_bins_of_their_own():
    stat = Statistic(DensityRatio().fit(_scalar("inf")).projection, np.linspace(-3, 3, 11),
                     infinities=True)
    idx = stat.indices(np.array([-np.inf, np.inf, np.nan, 0.0, 99.0]))
    assert idx.tolist() == [13, 14, 12, 6, 11] and stat.n_bins == 15
    score = DensityRatio().fit(_scalar("inf"))
    bins = stat.bin_scores(score)
    assert bins[14] > 0 > bins[13]  # +inf only on z's side, -inf only on z''s
