"""The online test (audit.estimation.online): regions chosen from past calls only, no pilot.

Validity: under a true claim every predictable choice keeps the wealth a supermartingale, so
a claim that holds is refuted with probability ≤ α; the null runs below count refutations
against the 0.999 quantile of Binomial(runs, α). Power: a Laplace release of true ε = 2
claimed at ε = 1 is refuted within a few hundred calls.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from audit.estimation.online import (
    OnlineBound,
    OnlineCurveTest,
    OnlineMonitor,
    choose_region,
)
from audit.pipeline.results import bound_from_witness
from audit.theory.tradeoff.conversions import delta_for_epsilon
from audit.theory.tradeoff.curves import GaussianTradeoff

ALPHA = 0.05


def _feed(test, rng, shift: float, budget: int, noise="laplace") -> int:
    """Chunks of 10, 12, 15, ... calls per side (×1.25, at most 1,000) until the test says
    stop or the budget is spent; the calls per side made."""
    draw = rng.laplace if noise == "laplace" else rng.normal
    size, done = 10.0, 0
    while done < budget:
        k = min(int(size), budget - done)
        done += k
        if test.update(draw(shift, 1.0, k), draw(0.0, 1.0, k)):
            break
        size = min(size * 1.25, 1000)
    return done


def test_a_violation_is_refuted_within_a_few_hundred_calls():
    stops = []
    for seed in range(20):
        mon = OnlineMonitor([0.5, 1.0], 0.0, ALPHA)
        stops.append(_feed(mon, np.random.default_rng(seed), 2.0, 5_000))
        assert mon.bound().refutes(1.0) and mon.bound().eps_lower >= 1.0
    assert np.median(stops) <= 250  # calls per side: 500 in total


def test_a_true_claim_is_refuted_at_most_at_the_level():
    """120 runs of 600 calls per side at true ε = claim = 1: refutations within the 0.999
    quantile of Binomial(120, 0.05) (12), and no bound above the truth more often."""
    runs = 120
    refuted = above = 0
    for seed in range(runs):
        mon = OnlineMonitor([1.0], 0.0, ALPHA)
        _feed(mon, np.random.default_rng(1000 + seed), 1.0, 600)
        refuted += mon.bound().refutes(1.0)
        above += mon.bound().eps_lower > 1.0
    allowed = stats.binom.ppf(0.999, runs, ALPHA)
    assert refuted <= allowed and above <= allowed, (refuted, above, allowed)


def test_the_budget_mode_estimates_and_stays_below_the_truth():
    mon = OnlineMonitor([1.0], 0.0, ALPHA, stop="budget", budget=20_000)
    assert _feed(mon, np.random.default_rng(5), 2.0, 20_000) == 20_000
    b = mon.bound()
    assert 1.6 < b.eps_lower <= 2.0 and not b.stopped_early
    assert b.at_budget is not None and b.at_budget_alpha == pytest.approx(ALPHA * 0.9)
    assert "second half's fixed-sample bound" in b.describe()


def test_the_region_follows_the_side_that_is_larger():
    rng = np.random.default_rng(0)
    x, y = np.sort(rng.laplace(3.0, 1.0, 500)), np.sort(rng.laplace(0.0, 1.0, 500))
    up = choose_region(x, y, 1.0, 0.0)
    assert (up.sign, up.numerator) in ((1.0, "z"), (-1.0, "z_prime"))
    down = choose_region(y, x, 1.0, 0.0)  # A(z) now the lower side
    assert (down.sign, down.numerator) in ((-1.0, "z"), (1.0, "z_prime"))
    assert choose_region(np.empty(0), y, 1.0, 0.0) is None
    same = np.sort(rng.laplace(0.0, 1.0, 500))
    assert choose_region(same, same, 1.0, 0.0) is None  # no region with a positive mean


def test_each_chunk_is_bet_on_a_region_from_the_calls_before_it():
    """Predictability, the validity condition: the region bet on chunk 3 is the one chosen
    from chunks 1 and 2 alone (a choice that saw chunk 3 would differ here)."""
    rng = np.random.default_rng(4)
    chunks = [(rng.laplace(2.0, 1.0, 40), rng.laplace(0.0, 1.0, 40)) for _ in range(3)]
    mon = OnlineMonitor([1.0], 0.0, ALPHA)
    for x, y in chunks:
        mon.update(x, y)
    past_x = np.sort(np.concatenate([chunks[0][0], chunks[1][0]]))
    past_y = np.sort(np.concatenate([chunks[0][1], chunks[1][1]]))
    assert mon.region == choose_region(past_x, past_y, 1.0, 0.0)
    seen = np.sort(np.concatenate([past_x, chunks[2][0]]))
    assert mon.region != choose_region(seen, np.sort(np.concatenate(
        [past_y, chunks[2][1]])), 1.0, 0.0)


def test_the_bound_travels_as_json():
    mon = OnlineMonitor([1.0], 0.0, ALPHA)
    _feed(mon, np.random.default_rng(1), 2.0, 2_000)
    b = mon.bound()
    back = bound_from_witness(json.loads(json.dumps(b.to_dict())))
    assert isinstance(back, OnlineBound) and back == b


@pytest.mark.parametrize("call,message", [
    (lambda: OnlineMonitor([], 0.0, ALPHA), "claims must be finite values >= 0"),
    (lambda: OnlineMonitor([1.0], 1.0, ALPHA), r"delta must be in \[0, 1\)"),
    (lambda: OnlineMonitor([1.0], 0.0, ALPHA, stop="budget", budget_share=0.5),
     "budget_share"),
    (lambda: OnlineMonitor([1.0], 0.0, ALPHA).update(np.zeros(3), np.zeros(2)),
     "the same number of calls"),
    (lambda: OnlineMonitor([1.0], 0.0, ALPHA).update(np.array([np.nan]), np.zeros(1)),
     "finite scalar outputs"),
    (lambda: OnlineCurveTest(lambda e: 2.0, [1.0], ALPHA), r"profile must return δ in \[0, 1\]"),
])
def test_bad_input_is_refused(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _curve_test(mu: float) -> OnlineCurveTest:
    f = GaussianTradeoff(mu)
    return OnlineCurveTest(lambda e: delta_for_epsilon(f, e), np.linspace(0.0, 6.0, 25), ALPHA)


def test_a_curve_claim_is_refuted_and_a_true_one_holds():
    """μ = 2 claimed as 1-GDP: refuted within a few hundred calls; 60 runs of the true
    1-GDP claim: refutations within the 0.999 quantile of Binomial(60, 0.05) (8)."""
    stops = []
    for seed in range(10):
        t = _curve_test(1.0)
        stops.append(_feed(t, np.random.default_rng(seed), 2.0, 3_000, noise="gauss"))
        assert t.refuted
    assert np.median(stops) <= 250
    refuted = 0
    for seed in range(60):
        t = _curve_test(1.0)
        _feed(t, np.random.default_rng(500 + seed), 1.0, 400, noise="gauss")
        refuted += t.refuted
    assert refuted <= stats.binom.ppf(0.999, 60, ALPHA)
