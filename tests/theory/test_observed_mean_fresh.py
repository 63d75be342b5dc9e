"""Fresh masks for a Gaussian mean over the observed entries at δ > 0
(audit.theory.observed_mean_fresh, docs/THEORY.md §10.8): the bracket against dp_accounting's
Poisson-subsampled Gaussian, the one-release shared row, the pair (hi, lo)'s certified values,
and a pair inside the domain."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.theory.observed_mean import (
    ObservedMeanSetting,
    gaussian_pair_delta_bounds,
    observed_mean_worst_case,
)

DELTA = 1e-5


def _setting(k: int, q: float = 0.3, domain=(-1.0, 1.0), split: float = 0.5
             ) -> ObservedMeanSetting:
    return ObservedMeanSetting("gaussian", 1.0, 1e-5, domain, q, releases=k, masks="fresh",
                               split=split)


@pytest.fixture(scope="module")
def row():
    return observed_mean_worst_case(_setting(5), DELTA)


def test_the_bracket_holds_the_subsampled_gaussian_of_the_far_end(row):
    """The pair (hi, NA) over 5 fresh releases is the Poisson-subsampled Gaussian of shift
    μ = √((1/σ_S)² + (1/σ_N)²), which dp_accounting composes independently (both orders):
    its optimistic ε is at most the row's upper end, its pessimistic one at least the row's
    lower end; the bracket closes (the pair (hi, lo) stays below at every γ)."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    s = _setting(5)
    mu = math.hypot(1.0 / s.sum_scale, 1.0 / s.count_scale)
    refs = [float(dpl.from_gaussian_mechanism(1.0 / mu, sampling_prob=0.3,
                                              pessimistic_estimate=est,
                                              value_discretization_interval=1e-4)
                  .self_compose(5).get_epsilon_for_delta(DELTA)) for est in (True, False)]
    assert row.lower <= refs[0] + 1e-9 and refs[1] <= row.epsilon + 1e-9
    assert row.pair == ("hi", "NA") and row.exact
    assert row.epsilon - row.lower <= 0.005 * row.epsilon


@pytest.mark.parametrize("q,split,worst", [(0.3, 0.5, ("hi", "NA")), (0.5, 0.7, ("hi", "lo"))])
def test_one_release_meets_the_shared_row(q, split, worst):
    """k = 1: fresh and shared masks are one setting; the two computations (an envelope
    composed once against the corner lemma's candidates each bracketed) agree to their
    errors. At split 0.7 the pair (hi, lo) is the worst: its 2-D profile must enter the
    envelope (read on the sum alone it is 0.5 % below the shared row's lower end)."""
    from audit.theory.observed_mean_fresh import gaussian_fresh_worst_case

    s = _setting(1, q, split=split)
    fresh = gaussian_fresh_worst_case(s, DELTA)
    shared = observed_mean_worst_case(s, DELTA)
    assert shared.pair == worst
    assert fresh.lower <= shared.epsilon + 1e-9 and shared.lower <= fresh.epsilon + 1e-9
    assert abs(fresh.epsilon - shared.epsilon) <= fresh.error + shared.error + 2e-3


def test_the_chords_bound_the_pair_hi_lo_in_both_orders_at_every_epsilon():
    """The chord profile of (hi, lo) is at least the pair's certified lower δ bound at ε ≥ 0
    off its points, in both orders, and at ε < 0 the conjugate 1 − γ + γ·(the other order at
    −ε) of those lower bounds."""
    from audit.theory.observed_mean_fresh import _ChordProfile

    a, a2, tau, q = 1.3, -0.8, 0.9, 0.3
    chords = _ChordProfile(a, a2, tau, q, lambda e: 0.02, 1e-5)
    for e in np.linspace(0.013, 4.9, 9):
        low = max(gaussian_pair_delta_bounds(a, a2, tau, q, e)[0],
                  gaussian_pair_delta_bounds(a2, a, tau, q, e)[0])
        assert chords.upper(np.array([e]))[0] >= low * (1 - 1e-9)
        g = math.exp(-e)
        conj = 1 - g + g * low
        assert chords.upper(np.array([-e]))[0] >= conj * (1 - 1e-9)
    # and it is not loose: within 10⁻³ relative plus the certified bracket at a point between
    e = 1.2345
    up = max(gaussian_pair_delta_bounds(a, a2, tau, q, e)[1],
             gaussian_pair_delta_bounds(a2, a, tau, q, e)[1])
    assert chords.upper(np.array([e]))[0] <= up * (1 + 2e-3)


def test_a_pair_inside_the_domain_is_below_the_upper_end(row):
    """A record inside the domain against NA, composed exactly over the 5 releases, lies
    below the row's upper end (which covers every pair), and below its lower end (the far end
    dominates the pairs with NA)."""
    from audit.mixture import Mixture
    from audit.theory.pair.releases import fresh_pair_bounds

    s = _setting(5)
    mu = math.hypot(0.4 / s.sum_scale, 1.0 / s.count_scale)
    P = Mixture([0.7, 0.3], [0.0, mu], "gaussian", 1.0)
    low, _ = fresh_pair_bounds(P, Mixture([1.0], [0.0], "gaussian", 1.0), 5, DELTA)
    assert 0.0 < low < row.lower <= row.epsilon


def test_fresh_masks_at_delta_above_zero_refuse_too_many_releases():
    from audit.theory.pld import MAX_PLD_RELEASES

    with pytest.raises(ValueError, match="releases must be at most"):
        observed_mean_worst_case(_setting(MAX_PLD_RELEASES + 1), DELTA)


@pytest.mark.parametrize("bad", ["setting", "laplace"])
def test_the_fresh_worst_case_refuses_what_it_does_not_cover(bad):
    from audit.theory.observed_mean_fresh import gaussian_fresh_worst_case

    s = (ObservedMeanSetting("laplace", 1.0, 0.0, (-1.0, 1.0), 0.3, releases=3, masks="fresh")
         if bad == "laplace" else bad)
    with pytest.raises(ValueError, match="setting must be a Gaussian"):
        gaussian_fresh_worst_case(s, DELTA)
    with pytest.raises(ValueError, match="delta"):
        gaussian_fresh_worst_case(_setting(3), 0.0)
