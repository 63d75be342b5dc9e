"""Tests for audit.theory.fwl: constants, ρ-sensitivity and the catalogue
([RPS] Table 1, Prop. C.2)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.theory import fwl


def test_sensitivity_and_rho_sensitivity_sorted_descending():
    c = fwl.FWLConstants(1, np.array([1.0, 3.0, 2.0, 0.5]), 2.0)
    assert c.sensitivity() == pytest.approx(2 * 2 * 6.5)
    assert c.sensitivity_under_rho(0.5) == pytest.approx(2 * 2 * (3 + 2))
    assert c.sensitivity_under_rho(1.0) == c.sensitivity()
    assert c.sensitivity_under_rho(0.2) == 0.0  # ⌊0.8⌋ = 0 features observed
    assert c.ratio(0.5) == pytest.approx(5 / 6.5)


@pytest.mark.parametrize("d", [1, 3, 7, 10, 20])
def test_equal_constants_ratio_is_floor_rho_d_over_d(d):
    c = fwl.vector_sum(d, bound=0.7)
    for rho in (0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0):
        k = int(np.floor(rho * d + 1e-9))
        assert c.ratio(rho) == pytest.approx(k / d, abs=1e-15)


def test_floor_is_robust_to_float_rho():
    assert 0.29 * 100 < 29  # the float trap this guards against
    assert fwl.observed_count(0.29, 100) == 29
    assert fwl.vector_sum(100).ratio(0.29) == pytest.approx(0.29)
    assert fwl.observed_count(1 - 0.9, 10) == 1
    assert fwl.observed_count(0.7, 10) == 7
    assert fwl.observed_count(1 / 3, 3) == 1


@settings(max_examples=60, deadline=None)
@given(
    L=st.lists(st.floats(0.0, 10.0), min_size=1, max_size=12).filter(lambda v: max(v) > 0),
    rho=st.floats(0.01, 1.0),
)
def test_rho_sensitivity_is_the_max_over_observed_subsets(L, rho):
    """C̃ is the worst case over every set of ⌊ρd⌋ observed features (brute force)."""
    c = fwl.FWLConstants(2, np.array(L), 1.5)
    k = fwl.observed_count(rho, c.d)
    brute = max(
        (2 * 1.5 * sum(L[j] for j in S) for S in itertools.combinations(range(c.d), k)),
        default=0.0,
    )
    assert c.sensitivity_under_rho(rho) == pytest.approx(brute, rel=1e-12, abs=1e-12)
    assert 0.0 <= c.ratio(rho) <= 1.0


def _max_l1_diff_linear(Bs, bound, rng, trials=2000):
    """Empirical max of ‖f(z) − f(z')‖ / (Σ_j L_j |z_j − z'_j|) for a linear query."""
    n, q, d = Bs.shape
    worst = 0.0
    for _ in range(trials):
        i = rng.integers(n)
        z = rng.uniform(-bound, bound, d) * (rng.random(d) > 0.3)  # NA read as 0
        zp = rng.uniform(-bound, bound, d) * (rng.random(d) > 0.3)
        worst = max(worst, np.abs(Bs[i] @ (z - zp)).sum())
    return worst


def test_linear_constants_are_column_norms_and_bound_the_difference():
    rng = np.random.default_rng(0)
    Bs = rng.normal(size=(4, 3, 5))
    c1 = fwl.linear(Bs, norm=1, bound=2.0)
    np.testing.assert_allclose(c1.lipschitz, np.abs(Bs).sum(axis=1).max(axis=0))
    c2 = fwl.linear(Bs, norm=2, bound=2.0)
    np.testing.assert_allclose(c2.lipschitz, np.sqrt((Bs**2).sum(axis=1)).max(axis=0))
    assert _max_l1_diff_linear(Bs, 2.0, rng) <= c1.sensitivity()
    shared = fwl.linear(Bs[0], norm=1)
    np.testing.assert_allclose(shared.lipschitz, np.abs(Bs[0]).sum(axis=0))


def test_catalogue_constants():
    assert fwl.sum_query(5, bound=2.0).sensitivity() == pytest.approx(20.0)
    assert fwl.vector_sum(4).sensitivity() == pytest.approx(8.0)
    m = fwl.bounded_mean(10, 4, bound=1.0)
    assert m.norm == 1 and m.sensitivity() == pytest.approx(2 * 4 / 10)
    cm = fwl.clipped_mean(10, 4, clip=0.5)
    assert cm.bound == 0.5 and cm.sensitivity() == pytest.approx(2 * 0.5 * 4 / 10)
    h = fwl.histogram(6)
    assert h.norm == 1 and h.d == 6 and h.sensitivity() == pytest.approx(12.0)
    assert h.ratio(0.5) == pytest.approx(0.5)
    sm = fwl.second_moment(20, 3, bound=2.0)
    np.testing.assert_allclose(sm.lipschitz, 2 * 2.0 * 3 / 20)
    A = np.array([[3.0, 0.0, 1.0], [4.0, 0.0, 0.0]])
    pm = fwl.projected_mean(5, A)
    assert pm.norm == 2
    np.testing.assert_allclose(pm.lipschitz, np.array([5.0, 0.0, 1.0]) / 5)
    assert pm.lipschitz.max() <= np.linalg.norm(A, 2) / 5 + 1e-12


def test_second_moment_constant_bounds_the_difference():
    rng = np.random.default_rng(1)
    n, d, B = 7, 4, 1.5
    c = fwl.second_moment(n, d, bound=B)
    for _ in range(2000):
        z = rng.uniform(-B, B, d) * (rng.random(d) > 0.4)
        zp = rng.uniform(-B, B, d) * (rng.random(d) > 0.4)
        lhs = np.abs(np.outer(z, z) - np.outer(zp, zp)).sum() / n
        rhs = (c.lipschitz * np.abs(z - zp)).sum()
        assert lhs <= rhs + 1e-12


def test_combinators():
    a = fwl.bounded_mean(4, 3)
    b = fwl.FWLConstants(1, np.array([1.0, 0.0, 2.0]), 1.0)
    lc = fwl.linear_combination([(2.0, a), (-0.5, b)])
    np.testing.assert_allclose(lc.lipschitz, 2 * 0.25 + 0.5 * np.array([1.0, 0.0, 2.0]))
    pp = fwl.postprocess(b, 3.0)
    np.testing.assert_allclose(pp.lipschitz, [3.0, 0.0, 6.0])
    assert fwl.FWLConstants(1, [1.0], 1.0).as_norm(2).norm == 2


def test_constants_are_frozen():
    c = fwl.vector_sum(3)
    with pytest.raises(Exception):  # noqa: B017 - dataclass FrozenInstanceError
        c.bound = 2.0
    with pytest.raises(ValueError):
        c.lipschitz[0] = 5.0


BAD = [
    (lambda: fwl.FWLConstants(3, [1.0], 1.0), "norm"),
    (lambda: fwl.FWLConstants(1, [-1.0, 1.0], 1.0), "lipschitz"),
    (lambda: fwl.FWLConstants(1, [0.0, 0.0], 1.0), "lipschitz"),
    (lambda: fwl.FWLConstants(1, [], 1.0), "lipschitz"),
    (lambda: fwl.FWLConstants(1, [[1.0]], 1.0), "lipschitz"),
    (lambda: fwl.FWLConstants(1, [np.inf], 1.0), "lipschitz"),
    (lambda: fwl.FWLConstants(1, [1.0], 0.0), "bound"),
    (lambda: fwl.vector_sum(3).sensitivity_under_rho(0.0), "rho"),
    (lambda: fwl.vector_sum(3).sensitivity_under_rho(1.2), "rho"),
    (lambda: fwl.vector_sum(3).ratio(-0.1), "rho"),
    (lambda: fwl.observed_count(0.5, 0), "d"),
    (lambda: fwl.linear(np.ones(3), 1), "matrices"),
    (lambda: fwl.linear(np.ones((2, 2)), 3), "norm"),
    (lambda: fwl.linear(np.full((2, 2), np.nan), 1), "matrices"),
    (lambda: fwl.sum_query(0), "d"),
    (lambda: fwl.vector_sum(2.5), "d"),
    (lambda: fwl.bounded_mean(0, 3), "n"),
    (lambda: fwl.bounded_mean(3, 3, bound=-1.0), "bound"),
    (lambda: fwl.clipped_mean(3, 3, clip=0.0), "clip"),
    (lambda: fwl.histogram(0), "n_categories"),
    (lambda: fwl.second_moment(3, 0), "d"),
    (lambda: fwl.second_moment(3, 2, bound=0), "bound"),
    (lambda: fwl.projected_mean(3, np.ones(3)), "A"),
    (lambda: fwl.projected_mean(0, np.ones((2, 3))), "n"),
    (lambda: fwl.linear_combination([]), "terms"),
    (lambda: fwl.linear_combination([(1.0, fwl.vector_sum(2)), (1.0, fwl.vector_sum(3))]), "terms"),
    (lambda: fwl.linear_combination([(np.nan, fwl.vector_sum(2))]), "terms"),
    (lambda: fwl.linear_combination([(0.0, fwl.vector_sum(2))]), "terms"),
    (lambda: fwl.postprocess(fwl.vector_sum(2), 0.0), "Lambda"),
    (lambda: fwl.postprocess("x", 1.0), "constants"),
    (lambda: fwl.FWLConstants(2, [1.0], 1.0).as_norm(1), "norm"),
]


@pytest.mark.parametrize("call,name", BAD)
def test_rejects_out_of_range(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("d", [1, 3, 7, 10, 100, 1000])
def test_observed_count_and_integrality_share_one_tolerance(d):
    """⌊ρd⌋ (the bound table, C̃_p) and "ρd is an integer" (Corollary 4.6) agree for every
    float ρ = k/d, and a ρ a hair below k/d still counts k observed features."""
    for k in range(1, d + 1):
        rho = k / d
        assert fwl.observed_count(rho, d) == k
        assert fwl.rho_d_is_integer(rho, d)
        assert fwl.observed_count(rho * (1 - 1e-15), d) == k
    if d > 1:
        assert not fwl.rho_d_is_integer(0.5 / d, d)
