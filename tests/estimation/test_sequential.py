"""Tests for audit.estimation.sequential: the betting e-process on one declared region.

Oracles: the wealth Π (1 + λ_i Z_i(ε)) recomputed trial by trial in plain Python with the
aGRAPA bet written out by hand, Ville's inequality (a true claim is refuted in at most a
fraction α of seeded runs) and a far-from-the-claim pair that must be refuted.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.estimation.sequential import BettingTest, PairCounts


def _chunk(rng, n, p_s, q_s):
    return PairCounts.from_indicators(rng.random(n) < p_s, rng.random(n) < q_s)


def test_pair_counts_from_indicators_by_hand():
    a = np.array([1, 1, 0, 0, 1, 0], dtype=bool)
    b = np.array([1, 0, 1, 0, 0, 0], dtype=bool)
    c = PairCounts.from_indicators(a, b)
    assert (c.both, c.num_only, c.den_only, c.neither, c.n) == (1, 2, 1, 2, 6)
    with pytest.raises(ValueError, match="a and b must be 1-D of the same length"):
        PairCounts.from_indicators(a, b[:-1])
    with pytest.raises(ValueError, match="a and b must be 1-D"):
        PairCounts.from_indicators(a.reshape(2, 3), b.reshape(2, 3))


def test_wealth_matches_a_trial_by_trial_recomputation():
    eps, delta, cap = np.array([0.0, 0.7]), 0.01, 0.5
    test = BettingTest(eps, delta, 0.05, cap=cap)
    chunks = [PairCounts(3, 10, 1, 6), PairCounts(0, 7, 2, 11), PairCounts(2, 9, 0, 9)]
    log_w = np.zeros(2)
    zs_top: list[float] = []
    lam_max = cap / (math.exp(0.7) + delta)
    for chunk in chunks:
        if zs_top:  # aGRAPA: mean/(var + mean²) of Z at the largest ε, from earlier chunks
            mean = sum(zs_top) / len(zs_top)
            var = sum(z * z for z in zs_top) / len(zs_top) - mean * mean
            lam = min(lam_max, mean / (var + mean * mean)) if mean > 0 else 0.0
        else:
            lam = 0.0
        pairs = ([(1, 1)] * chunk.both + [(1, 0)] * chunk.num_only + [(0, 1)] * chunk.den_only
                 + [(0, 0)] * chunk.neither)
        for a, b in pairs:
            for j, e in enumerate(eps):
                log_w[j] += math.log(1.0 + lam * (a - math.exp(e) * b - delta))
            zs_top.append(a - math.exp(eps[-1]) * b - delta)
        test.update(chunk)
        assert np.allclose(test.log_wealth, log_w, rtol=1e-12, atol=1e-12)
    assert test.trials == 60
    assert test.log_wealth[0] >= test.log_wealth[1]  # non-increasing in ε on every path


def test_the_first_chunk_is_not_bet_on_and_an_empty_chunk_changes_nothing():
    test = BettingTest([0.5], 0.0, 0.05)
    test.update(PairCounts(0, 0, 0, 0))
    assert test.trials == 0
    test.update(PairCounts(0, 100, 0, 0))  # λ = 0 before any data
    assert test.log_wealth.tolist() == [0.0] and test.trials == 100
    test.update(PairCounts(0, 100, 0, 0))  # now λ = λ_max: 100 ln(1 + λ_max)
    assert test.log_wealth[0] == pytest.approx(100 * math.log1p(0.5 / math.exp(0.5)))


def test_false_claims_are_refuted_smallest_epsilon_first():
    # P(S) = 0.9, Q(S) = 0.1: ε_S = ln 9 ≈ 2.197, so every claim on the grid is false
    rng = np.random.default_rng(5)
    test = BettingTest([0.0, 0.5, 1.0, 1.5], 0.0, 0.05)
    for _ in range(40):
        test.update(_chunk(rng, 200, 0.9, 0.1))
    assert all(test.refuted(e) for e in (0.0, 0.5, 1.0, 1.5)) and test.refuted()
    assert test.eps_lower == 1.5
    stops = test.stopped_at
    assert 0 < stops[0] <= stops[1] <= stops[2] <= stops[3] <= 8000
    assert np.all(test.max_log_wealth >= test.threshold) and test.threshold == -math.log(0.05)
    summary = test.summary()
    assert summary["eps_lower"] == 1.5 and summary["trials"] == 8000
    assert summary["stopped_at"] == stops.tolist()


def test_bets_are_sized_for_the_largest_claim():
    # with a true claim at the top of the grid (3 > ln 9), Z there has a negative mean: the
    # aGRAPA bet is 0 and no claim is refuted, false ones included (the grid's price)
    rng = np.random.default_rng(5)
    test = BettingTest([0.5, 3.0], 0.0, 0.05)
    for _ in range(10):
        test.update(_chunk(rng, 200, 0.9, 0.1))
    assert test.log_wealth.tolist() == [0.0, 0.0] and test.eps_lower == 0.0
    assert not test.refuted(0.5) and not test.refuted(3.0)


def test_a_true_claim_is_refuted_at_most_at_rate_alpha():
    # the claim holds with equality on S: P(S) = e^ε Q(S) + δ; Ville: P[refuted] <= α
    eps, delta, alpha = 0.5, 0.02, 0.1
    q_s = 0.2
    p_s = math.exp(eps) * q_s + delta
    rng = np.random.default_rng(17)
    refuted = 0
    for _ in range(200):
        test = BettingTest([eps], delta, alpha)
        for _ in range(15):
            test.update(_chunk(rng, 50, p_s, q_s))
        refuted += test.refuted()
    assert refuted <= 0.1 * 200 + 3 * math.sqrt(200 * 0.1 * 0.9)


def test_refuted_needs_an_epsilon_on_the_grid():
    test = BettingTest([1.0, 0.0], 0.0, 0.05)
    assert test.epsilons.tolist() == [0.0, 1.0]  # sorted
    with pytest.raises(ValueError, match=r"epsilon must be on the grid \[0.0, 1.0\], got"):
        test.refuted(0.5)
    with pytest.raises(ValueError, match="epsilon must be on the grid"):
        test.refuted(2.0)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"epsilons": []}, "epsilons must be finite values >= 0"),
    ({"epsilons": [-0.1, 1.0]}, "epsilons must be finite values >= 0"),
    ({"epsilons": [np.inf]}, "epsilons must be finite values >= 0"),
    ({"delta": 1.0}, r"delta must be in \[0, 1\), got delta=1.0"),
    ({"delta": -0.5}, r"delta must be in \[0.0, 1.0\]"),
    ({"alpha": 0.0}, "alpha must be in"),
    ({"alpha": 1.0}, "alpha must be in"),
    ({"cap": 0.0}, r"cap must be in \(0.0, 1.0\)"),
    ({"cap": 1.0}, r"cap must be in \(0.0, 1.0\)"),
])
def test_each_parameter_is_validated(kwargs, message):
    args = {"epsilons": [0.5], "delta": 0.0, "alpha": 0.05} | kwargs
    with pytest.raises(ValueError, match=message):
        BettingTest(**args)
