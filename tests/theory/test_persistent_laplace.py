"""Persistent non-response with Laplace noise (audit.theory.persistent_laplace): the epochs'
bound over the domain lies above, and the sum of the losses below, a direct integration of
the 2^k-path mixture of the output densities, for pairs with the missing record, across it
and inside the domain; at r = 1 the lower end is the shared pair's exact value."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize

from audit.enums import MaskRegime
from audit.theory.pair.releases import RecordLevelPair, record_level_pair_epsilon
from audit.theory.persistent_laplace import (
    epoch_profile,
    persistent_laplace_upper,
    sum_loss_lower,
)
from audit.theory.worst_case import Setting, worst_case

LO, HI, NA, B = -1.0, 1.0, 0.0, 1.0


def _path_weights(q: float, r: float, k: int):
    """(path, probability) of the record's mask chain, enumerated."""
    for path in itertools.product((0, 1), repeat=k):
        prob = q if path[0] else 1 - q
        for a, b in zip(path, path[1:], strict=False):
            stay = r + (1 - r) * (q if b else 1 - q)
            prob *= stay if a == b else (1 - r) * (q if b else 1 - q)
        yield path, prob


def _density(y: np.ndarray, c: float, q: float, r: float, k: int, b: float) -> np.ndarray:
    """The k releases' density at the points y (shape (n, k)) for the record c."""
    out = np.zeros(y.shape[0])
    for path, prob in _path_weights(q, r, k):
        locs = np.where(np.array(path) == 1, c, NA)
        out += prob * np.prod(np.exp(-np.abs(y - locs) / b) / (2 * b), axis=1)
    return out


def _direct_epsilon(c: float, c2: float, q: float, r: float, delta: float, b: float = B,
                    h: float = 0.03) -> float:
    """The pair's ε at δ over k = 2 Laplace(b) releases by the midpoint rule on an output
    grid whose cell edges hold every kink (the records and the missing reading), reaching 20b
    (a tail mass of e^{−19}), both orders."""
    reach = 20.0 * b
    edges = np.arange(-reach, reach + h / 2, h)
    mid = (edges[1:] + edges[:-1]) / 2
    y1, y2 = np.meshgrid(mid, mid, indexing="ij")
    y = np.stack([y1.ravel(), y2.ravel()], axis=1)
    p, p2 = _density(y, c, q, r, 2, b) * h * h, _density(y, c2, q, r, 2, b) * h * h
    best = 0.0
    for a, b in ((p, p2), (p2, p)):
        def excess(eps, a=a, b=b):
            return float(np.sum(np.maximum(a - math.exp(eps) * b, 0.0))) - delta
        if excess(0.0) > 0:
            best = max(best, optimize.brentq(excess, 0.0, 30.0, xtol=1e-9))
    return best


@pytest.mark.parametrize(("q", "r"), [(0.2, 0.5), (0.6, 0.3), (0.3, 0.8)])
@pytest.mark.parametrize(("c", "c2"), [(HI, NA), (HI, LO), (0.4, -0.6)])
def test_bracket_holds_a_direct_integration(q, r, c, c2):
    delta = 1e-3
    truth = _direct_epsilon(c, c2, q, r, delta)
    lower = sum_loss_lower(c, c2, NA, q, B, 2, r, delta)
    upper = persistent_laplace_upper(LO, HI, NA, q, B, 2, r, delta)
    assert lower <= truth * (1 + 1e-3) + 1e-6  # the midpoint rule's error, far below 1e-3
    assert upper >= truth * (1 - 1e-3)
    # the statistic is nearly sufficient at two releases: a lower end off by a factor (a
    # wrong law or a wrong chain) trips this
    assert lower >= 0.99 * truth


def _loss_grid_epsilon(q: float, r: float, k: int, d: float, delta: float, n: int = 120):
    """The ε at δ of the record at distance d·b from the missing reading against the
    missing record over k releases, integrated over the k losses v_t ∈ [−d, d] (atoms at
    ±d, midpoints between), likelihood ratio Σ_M π(M) e^{Σ_t M_t v_t}; the first order."""
    e = np.linspace(-d, d, n + 1)
    cdf = -0.5 * np.expm1(-(e + d) / 2)  # the missing record's continuous part
    values = np.concatenate([[-d], (e[1:] + e[:-1]) / 2, [d]])
    masses = np.concatenate([[0.5], np.diff(cdf), [0.5 * math.exp(-d)]])
    grids = np.meshgrid(*[values] * k, indexing="ij")
    v = np.stack([g.ravel() for g in grids], axis=1)
    w = np.prod(np.stack([g.ravel() for g in np.meshgrid(*[masses] * k, indexing="ij")],
                         axis=1), axis=1)
    paths = list(_path_weights(q, r, k))
    ratio = np.exp(v @ np.array([p for p, _ in paths]).T) @ np.array([x for _, x in paths])
    return optimize.brentq(lambda eps: float(np.sum(w * np.maximum(ratio - math.exp(eps), 0)))
                           - delta, 0.0, 30.0, xtol=1e-9)


@pytest.mark.parametrize(("q", "r"), [(0.1, 0.5), (0.5, 0.5)])
def test_three_releases_against_the_loss_integration(q, r):
    delta = 1e-5
    truth = _loss_grid_epsilon(q, r, 3, 1.0, delta)
    lower = sum_loss_lower(1.0, 0.0, 0.0, q, 1.0, 3, r, delta)
    upper = persistent_laplace_upper(0.0, 1.0, 0.0, q, 1.0, 3, r, delta)
    assert truth * 0.99 <= lower <= truth * (1 + 2e-3)
    assert upper >= truth


@pytest.mark.parametrize("k", [1, 4, 9])
def test_at_persistence_one_the_lower_end_is_the_shared_pair(k):
    q, delta = 0.3, 1e-5
    exact = record_level_pair_epsilon(
        RecordLevelPair(q, np.full(k, HI - NA), np.zeros(k), "laplace", B), delta)
    lower = sum_loss_lower(HI, NA, NA, q, B, k, 1.0, delta)
    assert exact.value - exact.error - 1e-9 <= lower + 0.01 * exact.value  # within the grid
    assert lower <= exact.value + exact.error + 1e-9  # and never above the pair


def test_epoch_profile_is_zero_beyond_its_pure_value_and_bounds_every_epsilon():
    profile, top = epoch_profile(LO, HI, NA, 0.3, B, 3)
    eps = np.array([0.0, 0.5, 1.0, top * 0.999, top, top + 1])
    values = profile(eps)
    assert values[-1] == 0.0 and values[-2] == 0.0 and values[-3] > 0.0
    assert np.all(np.diff(values) <= 1e-15)  # a privacy profile is non-increasing
    assert profile(0.5) == pytest.approx(values[1])


def test_setting_row_brackets_and_meets_shared_and_fresh_at_the_ends():
    base = dict(noise="laplace", scale=2.0, domain=(LO, HI), na_value=NA, observation=0.3,
                releases=3)
    mid = worst_case(Setting(**base, masks="persistent", persistence=0.5), 1e-5)
    assert 0 < mid.lower <= mid.epsilon and "redraw epochs" in mid.method
    for r, masks in ((1.0, MaskRegime.SHARED), (0.0, MaskRegime.FRESH)):
        end = worst_case(Setting(**base, masks="persistent", persistence=r), 1e-5)
        ref = worst_case(Setting(**base, masks=masks), 1e-5)
        assert (end.epsilon, end.lower) == (ref.epsilon, ref.lower)
        assert f"persistence {r:g} is {masks.value} masks" in end.method
    # a direct integration of one pair of the setting (k = 2) stays under the upper end
    two = worst_case(Setting(**{**base, "releases": 2}, masks="persistent", persistence=0.5),
                     1e-3)
    for c, c2 in ((HI, LO), (HI, NA), (0.5, -0.2)):
        got = _direct_epsilon(c, c2, 0.3, 0.5, 1e-3, b=2.0, h=0.04)
        assert got <= two.epsilon * (1 + 1e-3)


@pytest.mark.parametrize(("call", "match"), [
    (lambda: sum_loss_lower(1.0, 1.0, 0.0, 0.3, 1.0, 3, 0.5, 1e-5), "c must differ"),
    (lambda: sum_loss_lower(1.0, 0.0, 0.0, 0.3, 1.0, 13, 0.5, 1e-5), r"releases must be"),
    (lambda: sum_loss_lower(1.0, 0.0, 0.0, 0.3, 1.0, 3, 1.5, 1e-5), "persistence"),
    (lambda: persistent_laplace_upper(0.0, 1.0, 0.0, 0.3, 1.0, 0, 0.5, 1e-5),
     r"releases must be an integer in \[1, 12\]"),
    (lambda: persistent_laplace_upper(0.0, 1.0, 0.0, 0.3, 1.0, 3, 0.5, 2.0), "delta"),
    (lambda: persistent_laplace_upper(1.0, 0.0, 0.0, 0.3, 1.0, 3, 0.5, 1e-5), "domain"),
    (lambda: persistent_laplace_upper(0.0, 1.0, 0.0, 0.0, 1.0, 3, 0.5, 1e-5),
     r"q must be in \(0, 1\]"),
    (lambda: persistent_laplace_upper(0.0, 1.0, 0.0, 0.3, -1.0, 3, 0.5, 1e-5), "b must be"),
])
def test_bad_input_is_refused_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_large_loss_uses_a_grid_fitted_to_it(monkeypatch):
    """One release's loss 100 (b = 0.02 on [0, 2]), 3 releases: the epochs' PLDs share a
    step of 1e-5 of the longest epoch's loss (at 1e-4 the 12-release command took 8.5 min and
    8.2 GB); the bracket holds the pair's lower end and the δ = 0 cap."""
    import audit.theory.persistent_laplace as pl
    from audit.theory.pld import loss_step

    steps = []
    real = pl.profile_pmf

    def recording(profile, top, discretization):
        steps.append(discretization)
        return real(profile, top, discretization)

    monkeypatch.setattr(pl, "profile_pmf", recording)
    pl._epoch_pld.cache_clear()
    upper = persistent_laplace_upper(0.0, 2.0, 0.0, 0.3, 0.02, 3, 0.5, 1e-5)
    lower = sum_loss_lower(2.0, 0.0, 0.0, 0.3, 0.02, 3, 0.5, 1e-5)
    assert 0 < lower <= upper <= persistent_laplace_upper(0.0, 2.0, 0.0, 0.3, 0.02, 3, 0.5, 0.0)
    step = loss_step(1e-4, pl._epoch_top(0.0, 2.0, 0.0, 0.3, 0.02, 3))
    assert step > 1e-4 and len(steps) == 3 and set(steps) == {step}
