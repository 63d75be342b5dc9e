"""What a stratified audit's pilot fixes (audit.pipeline.strata_design): the pilot's spread
over the strata, the per-rate resamples and scores."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from audit.estimation.strata import stratum_weights
from audit.pipeline.strata_design import (
    StrataGrid,
    StratifiedPilot,
    rate_scores,
    resample,
    spread,
)
from audit.policy import DEFAULT_POLICY
from audit.protocols import Pilot

RATES = [0.3, 0.5, 0.7]


def _grid(own: bool = True, rates=RATES, n_open: int = 10) -> StrataGrid:
    w = stratum_weights(n_open, rates)
    return StrataGrid(np.asarray(rates), (w, w), 1000, 0.05, 0.0125, 0.0, 7,
                      SimpleNamespace(own_scores=own), DEFAULT_POLICY.guard_alpha)


def test_the_pilot_spreads_a_quarter_evenly_and_the_rest_by_the_grids_mean_weight():
    w = stratum_weights(10, RATES)
    calls = spread(4000, w)
    assert calls.sum() == 4000 and calls.min() >= 1000 // 11
    rest = calls - 1000 // 11 - (np.arange(11) < 1000 % 11)
    np.testing.assert_allclose(rest, 3000 * w.mean(axis=0), atol=1.0)


def test_a_resample_follows_the_rates_law_over_the_strata():
    # each call's output is its stratum: the resample's strata must follow rate r's weights
    grid = _grid()
    labels = np.repeat(np.arange(11), 2000)
    pilot = Pilot(labels.astype(float), labels.astype(float))
    for r in range(len(RATES)):
        out = resample(grid, r, pilot, (labels, labels))
        freq = np.bincount(out.p.astype(int), minlength=11) / out.p.size
        # 22,000 draws: a frequency's SD is at most 0.0034; 6 SDs
        np.testing.assert_allclose(freq, grid.weights[0][r], atol=0.021)
        assert not np.array_equal(out.p, resample(grid, (r + 1) % 3, pilot,
                                                  (labels, labels)).p)
    # reproducible from the audit's seed
    np.testing.assert_array_equal(resample(grid, 1, pilot, (labels, labels)).q,
                                  resample(grid, 1, pilot, (labels, labels)).q)


def test_a_score_per_rate_only_where_asked_and_where_the_grid_has_several_rates():
    labels = np.repeat(np.arange(11), 10)
    pilot = StratifiedPilot(labels.astype(float), labels.astype(float), (labels, labels))
    fitted = []

    def fit(sample):
        fitted.append(sample)
        return len(fitted)

    fits = rate_scores(_grid(), fit, lambda score, sample: ("stat", score), pilot,
                       pilot.labels, 8)
    assert fits == ((1, 2, 3), (("stat", 1), ("stat", 2), ("stat", 3)))
    assert rate_scores(_grid(own=False), fit, None, pilot, pilot.labels, 8) is None
    assert rate_scores(_grid(rates=[0.3]), fit, None, pilot, pilot.labels, 8) is None
    # more counters than a side may hold: the pooled score serves every rate
    assert rate_scores(_grid(), fit, None, pilot, pilot.labels, 2**24) is None


def test_a_stratified_pilot_is_a_pilot_with_labels():
    pilot = StratifiedPilot(np.zeros(4), np.ones(4), (np.arange(4), np.arange(4)))
    first, rest = pilot.split(2)
    assert isinstance(first, Pilot) and rest.p.size == 2
    with pytest.raises(AttributeError):
        pilot.labels = ()
