"""Exact privacy of the audited pair over k releases (audit.theory.pair.releases,
docs/THEORY.md §9.5): each reduction against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpl

from audit.mixture import Mixture
from audit.theory import releases as rel
from audit.theory.pair import pair_delta, pair_epsilon
from audit.theory.pair.releases import (
    RecordLevelPair,
    fresh_pair_bounds,
    fresh_pair_epsilon,
    record_level_form,
    record_level_pair_epsilon,
    releases_pair_epsilon,
    shared_pair_epsilon,
)
from audit.theory.tradeoff import LaplaceTradeoff

MU, Q_OBS, DELTA = 1 / math.sqrt(2 * math.log(1.25e5)), 0.1, 1e-5


def _count_pair(mu: float = MU, q: float = Q_OBS) -> tuple[Mixture, Mixture]:
    return (Mixture([q, 1 - q], [mu, 0.0], "gaussian", 1.0),
            Mixture([1.0], [0.0], "gaussian", 1.0))


def test_fresh_pair_against_dp_accountings_subsampled_gaussian():
    """An independent PLD: dp_accounting's own Poisson-subsampled Gaussian (add/remove) is
    exactly this pair in both orders."""
    ref = dpl.from_gaussian_mechanism(1 / MU, sensitivity=1.0, sampling_prob=Q_OBS,
                                      value_discretization_interval=1e-4)
    for k in (10, 30):
        mine = rel.fresh_pair_epsilon(*_count_pair(), k, DELTA)
        theirs = ref.self_compose(k).get_epsilon_for_delta(DELTA)
        assert abs(mine.value - theirs) <= mine.error + 2e-3


def test_fresh_pair_bounds_keep_the_lower_end_where_the_upper_end_is_infinite():
    """μ = 10 (a loss beyond the Gaussian pair grid's reach of 60, whose rest goes to the
    infinite loss): the upper end is ∞, and the lower end, which the midpoint of
    :func:`fresh_pair_epsilon` loses, stays a valid lower bound on dp_accounting's
    subsampled Gaussian (measured 297.04 against 321.95: the grid ends at 60)."""
    P, Q = _count_pair(10.0, 0.5)
    lo, hi = fresh_pair_bounds(P, Q, 5, DELTA, discretization=1e-3)
    ref = dpl.from_gaussian_mechanism(0.1, sensitivity=1.0, sampling_prob=0.5,
                                      value_discretization_interval=1e-3)
    theirs = ref.self_compose(5).get_epsilon_for_delta(DELTA)
    assert math.isfinite(lo) and 0.9 * theirs <= lo <= theirs <= hi


def test_shared_record_level_sufficiency_against_composed_loss_k300():
    """The one-release reduction (σ/√k) against the loss S of the observed record composed
    300 times by dp_accounting: D(P‖Q) = q δ_S(ln((e^ε − 1 + q)/q)),
    D(Q‖P) = a δ_S(ln(e^ε q/a)), a = 1 − e^ε(1 − q)."""
    k, q = 300, Q_OBS
    S = dpl.from_gaussian_mechanism(1 / MU, value_discretization_interval=1e-4).self_compose(k)
    Pk, Qk = rel.shared_pair(*_count_pair(), k)
    for eps in (2.0, 5.0, 9.0):
        up = q * S.get_delta_for_epsilon(math.log(math.expm1(eps) + q) - math.log(q))
        a = -math.expm1(eps + math.log1p(-q))
        down = a * S.get_delta_for_epsilon(eps + math.log(q) - math.log(a)) if a > 0 else 0.0
        assert pair_delta(Pk, Qk, eps).value == pytest.approx(max(up, down), rel=2e-3, abs=1e-12)


def test_record_level_gaussian_parallel_vectors_match_the_same_query_reduction():
    k = 7
    pair = rel.RecordLevelPair(Q_OBS, np.full(k, MU), np.zeros(k), "gaussian", 1.0)
    assert rel.record_level_pair_epsilon(pair, DELTA).value == pytest.approx(
        rel.shared_pair_epsilon(*_count_pair(), k, DELTA).value, abs=1e-9)
    # different queries: the 1-D projection has shift √(Σ μ_j²)
    mus = np.array([0.1, 0.3, 0.2])
    pair = rel.RecordLevelPair(0.4, mus * 2.0, np.zeros(3), "gaussian", 2.0)
    mu = rel.composed_gaussian_mu(mus)
    one = pair_epsilon(*_count_pair(mu, 0.4), DELTA)
    assert rel.record_level_pair_epsilon(pair, DELTA).value == pytest.approx(one.value, abs=1e-9)


def test_laplace_record_level_delta0_closed_form_against_a_grid_k2():
    """ε at δ = 0 is the saturating likelihood ratio ln(1 + q(e^{Σ μ_j} − 1)): the sup of
    ln p/q over a 2-D grid reaches it and no grid point exceeds it."""
    q, a, b = 0.3, np.array([0.5, 1.2]), np.array([1.0, 2.0])
    pair = rel.RecordLevelPair(q, a, np.zeros(2), "laplace", b)
    closed = rel.record_level_pair_epsilon(pair, 0.0).value
    assert closed == pytest.approx(math.log1p(q * math.expm1(0.5 + 0.6)), rel=1e-14)
    assert closed == pytest.approx(
        rel.shared_masks_dp(rel.composed_laplace_epsilon([0.5, 0.6]), 0.0, q)[0], rel=1e-14)
    x = np.linspace(-6, 8, 281)
    X1, X2 = np.meshgrid(x, x)
    lo = -np.abs(X1) / b[0] - np.abs(X2) / b[1]
    lp = np.logaddexp(math.log(q) - np.abs(X1 - a[0]) / b[0] - np.abs(X2 - a[1]) / b[1],
                      math.log1p(-q) + lo)
    llr = np.abs(lp - lo)
    assert llr.max() <= closed + 1e-12
    assert llr.max() == pytest.approx(closed, abs=1e-12)


def test_laplace_record_level_delta_positive_k1_against_the_exact_pair():
    q, mu = 0.2, 0.9
    pair = rel.RecordLevelPair(q, [mu], [0.0], "laplace", 1.0)
    P = Mixture([q, 1 - q], [mu, 0.0], "laplace", 1.0)
    Q = Mixture([1.0], [0.0], "laplace", 1.0)
    for d in (1e-3, 1e-2):
        got = rel.record_level_pair_epsilon(pair, d)
        assert got.value == pytest.approx(pair_epsilon(P, Q, d).value, abs=got.error + 2e-4)
    # more releases of the same query lose more, and δ > 0 is below the δ = 0 value
    pair3 = rel.RecordLevelPair(q, [mu] * 3, [0.0] * 3, "laplace", 1.0)
    e3 = rel.record_level_pair_epsilon(pair3, 1e-3).value
    assert pair_epsilon(P, Q, 1e-3).value < e3 < rel.record_level_pair_epsilon(pair3, 0).value


def test_fresh_laplace_delta0_is_k_times_the_pair_and_the_closed_form():
    q, mu, k = 0.25, 0.8, 12
    P = Mixture([q, 1 - q], [mu, 0.0], "laplace", 1.0)
    Q = Mixture([1.0], [0.0], "laplace", 1.0)
    per = math.log1p(q * math.expm1(mu))
    assert rel.fresh_pair_epsilon(P, Q, k, 0.0).value == pytest.approx(k * per, rel=1e-9)
    assert rel.fresh_masks_epsilon(LaplaceTradeoff(mu), q, k, 0.0) == pytest.approx(k * per)
    # at δ > 0 the pair's fresh composition is below the composed bound
    pv = rel.fresh_pair_epsilon(P, Q, k, 1e-6)
    assert pv.value - pv.error <= rel.fresh_masks_epsilon(LaplaceTradeoff(mu), q, k, 1e-6)


def test_laplace_record_level_always_observed_is_the_plain_laplace_pair():
    """q = 1: the plain pair Lap(μ) against Lap(0), whose two orders agree."""
    from audit.theory.profiles import laplace_epsilon

    mu, d = 0.8, 1e-2
    got = rel.record_level_pair_epsilon(rel.RecordLevelPair(1.0, [mu], [0.0], "laplace", 1.0), d)
    P = Mixture([1.0], [mu], "laplace", 1.0)
    Q = Mixture([1.0], [0.0], "laplace", 1.0)
    assert got.value == pytest.approx(pair_epsilon(P, Q, d).value, abs=got.error + 2e-4)
    assert got.value == pytest.approx(laplace_epsilon(d, mu), abs=got.error + 2e-4)


@pytest.mark.slow
@pytest.mark.parametrize("k,want", [(100, 0.786), (300, None)])
def test_fresh_pair_fine_grid(k, want):
    """A finer grid (h = 2e-5) narrows the bracket five-fold and keeps the midpoint; the
    default-size twin is the check-table test at h = 1e-4."""
    coarse = rel.fresh_pair_epsilon(*_count_pair(), k, DELTA)
    fine = rel.fresh_pair_epsilon(*_count_pair(), k, DELTA, discretization=2e-5)
    assert fine.error < coarse.error / 4
    assert abs(fine.value - coarse.value) <= fine.error + coarse.error
    if want is not None:
        assert round(fine.value, 3) == want


# ------------------------------------------- the k-release pair of single-release laws
def test_record_level_form_is_read_from_the_laws():
    P = Mixture([0.9, 0.1], [0.0, 2.0], "laplace", 1.5)
    Q = Mixture([1.0], [0.0], "laplace", 1.5)
    form = record_level_form(P, Q, 7)
    assert form.observation == pytest.approx(0.1)
    np.testing.assert_array_equal(form.contributions, np.full(7, 2.0))
    np.testing.assert_array_equal(form.contributions_prime, np.zeros(7))
    # both records contributing, with the same observation probability
    both = record_level_form(P, Mixture([0.9, 0.1], [0.0, -2.0], "laplace", 1.5), 2)
    assert both.contributions_prime.tolist() == [-2.0, -2.0]


@pytest.mark.parametrize("Q", [
    Mixture([0.5, 0.3, 0.2], [0.0, 1.0, 2.0], "laplace", 1.5),  # feature-wise: 3 shifts
    Mixture([0.8, 0.2], [0.0, 2.0], "laplace", 1.5),            # another observation rate
    Mixture([0.9, 0.1], [0.5, 2.0], "laplace", 1.5),            # missing is not read as 0
])
def test_record_level_form_is_none_outside_that_form(Q):
    assert record_level_form(Mixture([0.9, 0.1], [0.0, 2.0], "laplace", 1.5), Q, 3) is None


def test_releases_pair_epsilon_dispatches_to_the_exact_forms():
    P = Mixture([0.9, 0.1], [0.0, 2.0], "laplace", 1.5)
    Q = Mixture([1.0], [0.0], "laplace", 1.5)
    value, method = releases_pair_epsilon(P, Q, 12, 0.0, "shared")
    # δ = 0: the saturating ratio, ln(1 + q(e^{k a/b} − 1))
    assert value.value == pytest.approx(math.log1p(0.1 * math.expm1(12 * 2.0 / 1.5)))
    assert "record-level" in method
    fresh, _ = releases_pair_epsilon(P, Q, 12, 1e-6, "fresh")
    assert fresh.value == pytest.approx(fresh_pair_epsilon(P, Q, 12, 1e-6).value)
    G = [Mixture(M.weights, M.scalar_shifts, "gaussian", 1.5) for M in (P, Q)]
    gauss, _ = releases_pair_epsilon(*G, 12, 1e-6, "shared")
    assert gauss.value == pytest.approx(shared_pair_epsilon(*G, 12, 1e-6).value)
    sym = Mixture([0.9, 0.1], [0.0, -2.0], "laplace", 1.5)
    none, why = releases_pair_epsilon(P, sym, 12, 0.0, "shared")
    assert none is None and "no low-dimensional form" in why
    with pytest.raises(ValueError, match="masks must be one of"):
        releases_pair_epsilon(P, Q, 2, 0.0, "sometimes")


def test_laplace_record_level_pair_far_beyond_the_float_range_of_e_to_the_epsilon():
    """ε0 = ln(1 + q(e^2000 − 1)) ≈ 1997: the remove order's a = 1 − e^ε(1 − q) is 0 there
    (e^ε overflowed); the pair's ε at δ > 0 lies just below ε0."""
    pair = RecordLevelPair(0.05, np.full(10, 2.0), np.zeros(10), "laplace", 0.01)
    v = record_level_pair_epsilon(pair, 1e-5, discretization=0.01)
    eps0 = record_level_pair_epsilon(pair, 0.0).value
    assert 0.99 * eps0 < v.value - v.error <= v.value + v.error <= eps0 + 1e-9


@pytest.mark.parametrize("kwargs,name", [({"releases": 0}, "releases"), ({"delta": -1.0}, "delta"),
                                         ({"releases": 10_001}, "releases")])
def test_fresh_pair_bounds_refuse_bad_input_naming_the_parameter(kwargs, name):
    args = {"releases": 2, "delta": 1e-5, **kwargs}
    with pytest.raises(ValueError, match=name):
        fresh_pair_bounds(*_count_pair(), args["releases"], args["delta"])
