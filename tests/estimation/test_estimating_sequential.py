"""The estimating sequential mode: per-claim bets on a grid above the claim (Bonferroni),
valid after any stop, and able to report ε above the claim; the stop rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.enums import Direction
from audit.estimation.sequential import (
    EstimatingTest,
    PairCounts,
    SequentialMonitor,
    estimation_grid,
)


def _chunks(eps_s: float, rng, n_chunks: int = 20, m: int = 500, p: float = 0.5):
    """Paired indicators with P(S) = p, Q(S) = p e^{-eps_s}: the region's ε is eps_s."""
    q = p * math.exp(-eps_s)
    for _ in range(n_chunks):
        yield PairCounts.from_indicators(rng.random(m) < p, rng.random(m) < q)


def test_grid_is_geometric_above_the_claim_and_capped():
    g = estimation_grid(0.5)
    assert g[0] == pytest.approx(0.5 / 8) and 0.5 not in g
    above = g[g > 0.5]
    assert above[0] == pytest.approx(0.5 * 2**0.25) and np.allclose(above[1:] / above[:-1],
                                                                    2**0.25)
    assert estimation_grid(0.1).size == 44 and g.max() <= 40.0 < g.max() * 2**0.25
    assert estimation_grid(30.0).max() <= 40.0
    with pytest.raises(ValueError, match="claim must be"):
        estimation_grid(0.0)


@pytest.mark.statistical
def test_no_true_claim_is_refuted_more_often_than_alpha():
    # 300 runs whose region has ε_S = 1 exactly; a run fails if it refutes a grid ε ≥ 1
    # (every grid point 0.25·2^{k/4} ≥ 1 is a true claim). Allowed: the
    # Binomial(300, 0.1) quantile at 1 − 1e-3, so a valid test fails this w.p. ≤ 1e-3.
    rng = np.random.default_rng(2024)
    alpha, reps, fails = 0.1, 300, 0
    for _ in range(reps):
        t = EstimatingTest(estimation_grid(0.25), 0.0, alpha)
        for c in _chunks(1.0, rng):
            t.update(c)
        fails += t.eps_lower > 1.0
    assert fails <= stats.binom.ppf(1 - 1e-3, reps, alpha)


def test_it_estimates_above_the_claim():
    rng = np.random.default_rng(7)
    t = EstimatingTest(estimation_grid(0.5), 0.0, 0.05)
    for c in _chunks(2.0, rng, n_chunks=40):
        t.update(c)
    assert 1.4 < t.eps_lower <= 2.0  # within two grid steps of the truth, never above


@pytest.mark.parametrize("stop, stops", [("refuted", True), ("budget", False)])
def test_the_stop_rule(stop, stops):
    rng = np.random.default_rng(3)
    mon = SequentialMonitor(np.array([False, True]), Direction.Z_VS_ZPRIME, 0.0,
                            [0.25, 0.5], 0.0, 0.05, stop=stop)
    said = [mon.update(np.full(500, 1), (rng.random(500) < 0.05).astype(int))
            for _ in range(10)]
    assert any(said) is stops
    bound = mon.bound(5000, 5000)
    assert bound.eps_lower > 0.5 and bound.stop == stop and bound.refuted(0.5)
