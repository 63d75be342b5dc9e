"""The certified box bracket of a persistent-mask pair (audit.theory.persistent_boxes,
docs/THEORY.md §10.7): both ends hold an independent integration, meet the shared and fresh
pairs at r = 1 and 0, and the inputs it does not cover are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from audit.theory.pair.releases import fresh_pair_epsilon, shared_pair_epsilon
from audit.theory.persistent import PersistentPair, observed_counts
from audit.theory.persistent_boxes import box_bracket, path_probabilities
from tests.theory.test_persistent import SIGMA, Q, _pair, _paths


@pytest.mark.parametrize("k", [2, 3])
def test_the_box_bracket_meets_the_shared_and_fresh_pairs_at_the_ends(k):
    # r = 1: one mask (the shared pair's exact value); r = 0: a mask per release (the fresh
    # pair by its PLD bracket); the box bracket alone, without the known ends to start from
    pair = _pair(k, 1.0)
    shared = shared_pair_epsilon(*pair.epoch(1), k, 1e-5)
    box = box_bracket(pair, 1e-5, tolerance=1e-3)
    assert box.converged and box.error <= 1e-3
    assert box.lower <= shared.value + shared.error and shared.value - shared.error <= box.upper
    pair = _pair(k, 0.0)
    fresh = fresh_pair_epsilon(*pair.epoch(1), k, 1e-5)
    box = box_bracket(pair, 1e-5, tolerance=1e-3)
    assert box.converged and box.error <= 1e-3
    assert box.lower <= fresh.value + fresh.error and fresh.value - fresh.error <= box.upper


def test_the_box_bracket_of_two_observed_values():
    # a = 1 against b = −1 (both observed values, NA read as 0): the last coordinate's
    # three-exponential roots; r = 1 is the shared pair's closed form, r = 0 the fresh pair
    for r, exact in ((1.0, shared_pair_epsilon), (0.0, fresh_pair_epsilon)):
        pair = PersistentPair(1.0, -1.0, 0.0, Q, SIGMA, 2, r)
        ref = exact(*pair.epoch(1), 2, 1e-5)
        box = box_bracket(pair, 1e-5, tolerance=1e-3)
        assert box.converged and box.error <= 1e-3
        assert box.lower <= ref.value + ref.error and ref.value - ref.error <= box.upper


def _direct_epsilon_two(a: float, b: float, r: float, n: int = 1601) -> float:
    """ε at δ = 1e-5 of the 4-path mixture of two releases against its neighbour, by a fine
    2-d grid (both orders): an oracle with no code of the box bracket."""
    y = np.linspace(min(a, b, 0.0) - 8 * SIGMA, max(a, b, 0.0) + 8 * SIGMA, n)
    h = y[1] - y[0]
    pa = {0: stats.norm.pdf(y, 0, SIGMA), 1: stats.norm.pdf(y, a, SIGMA)}
    pb = {0: stats.norm.pdf(y, 0, SIGMA), 1: stats.norm.pdf(y, b, SIGMA)}
    paths = list(_paths(2, r))
    P = sum(prob * np.outer(pa[m[0]], pa[m[1]]) for m, prob in paths)
    Qd = sum(prob * np.outer(pb[m[0]], pb[m[1]]) for m, prob in paths)

    def delta(eps: float) -> float:
        e = math.exp(eps)
        return max(np.clip(P - e * Qd, 0, None).sum(), np.clip(Qd - e * P, 0, None).sum()) * h * h

    return optimize.brentq(lambda e: delta(e) - 1e-5, 0.5, 4.0, xtol=1e-9)


@pytest.mark.parametrize(("b", "measured"), [(0.0, 1.4591695), (-1.0, 1.8980470)])
def test_a_tight_box_bracket_holds_a_fine_two_release_integration(b, measured):
    # k = 2 at r = 0.5: the grid's ε moves by < 1e-6 from n = 1601 to 3201; the box bracket
    # at 1e-4 (measured [1.4591492, 1.4592202] and [1.8980461, 1.8981097]) holds it, both
    # ends within 1e-4 of it, for the record against the missing one and against −1
    direct = _direct_epsilon_two(1.0, b, 0.5)
    assert direct == pytest.approx(measured, abs=2e-6)
    box = box_bracket(PersistentPair(1.0, b, 0.0, Q, SIGMA, 2, 0.5), 1e-5, tolerance=1e-4)
    assert box.converged and box.error <= 1e-4
    assert box.lower - 2e-6 <= direct <= box.upper + 2e-6


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"delta": 0.0}, r"delta must be in \(0, 1\) for the box bracket, got delta=0.0"),
    ({"delta": 1.0}, r"delta must be in \(0, 1\) for the box bracket, got delta=1.0"),
    ({"k": 1}, r"releases must be an integer in \[2, 4\] for the box bracket, got releases=1"),
    ({"k": 5}, r"releases must be an integer in \[2, 4\] for the box bracket, got releases=5"),
])
def test_the_box_bracket_refuses_what_it_does_not_cover(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        box_bracket(_pair(kwargs.get("k", 3), 0.5), kwargs.get("delta", 1e-5))


def test_path_probabilities_are_the_chain():
    for k, r in ((3, 0.5), (4, 0.3)):
        paths, prob = path_probabilities(k, Q, r)
        want = dict(_paths(k, r)) if k == 3 else None
        assert prob.sum() == pytest.approx(1.0, abs=1e-12)
        if want is not None:
            for row, p in zip(paths, prob, strict=True):
                assert p == pytest.approx(want[tuple(int(x) for x in row)], rel=1e-12)
        np.testing.assert_allclose(
            np.bincount(paths.sum(1), weights=prob, minlength=k + 1),
            observed_counts(k, Q, r), rtol=1e-12)
