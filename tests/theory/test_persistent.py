"""Persistent non-response (audit.theory.persistent): the epochs' mixture bounds the pair's
ε from above, the sum of the releases from below; both are exact where they should be, and
they bracket a direct integration of the 2^k-path mixture."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from audit.enums import MaskRegime
from audit.theory.persistent import (
    PersistentPair,
    epoch_partitions,
    observed_counts,
    persistent_bound,
    persistent_lower,
)
from audit.theory.worst_case import Setting, worst_case

Q, SIGMA = 0.3, 2.0


def _pair(k: int, r: float) -> PersistentPair:
    return PersistentPair(1.0, 0.0, 0.0, Q, SIGMA, k, r)  # the record against the missing one


def _transitions(r: float) -> np.ndarray:
    """[from, to] over (missing, observed)."""
    return np.array([[r + (1 - r) * (1 - Q), (1 - r) * Q], [(1 - r) * (1 - Q), r + (1 - r) * Q]])


def _paths(k: int, r: float):
    t = _transitions(r)
    for path in itertools.product((0, 1), repeat=k):
        prob = Q if path[0] else 1 - Q
        for a, b in zip(path, path[1:], strict=False):
            prob *= t[a, b]
        yield path, prob


def test_partitions_and_counts_match_brute_force():
    k, r = 4, 0.3
    by_parts: dict = {}
    for redraws in itertools.product((False, True), repeat=k - 1):  # collections 2..k
        cuts = [0] + [t + 1 for t, x in enumerate(redraws) if x] + [k]
        parts = tuple(sorted((b - a for a, b in zip(cuts, cuts[1:], strict=False)),
                             reverse=True))
        prob = math.prod((1 - r) if x else r for x in redraws)
        by_parts[parts] = by_parts.get(parts, 0.0) + prob
    got = dict(epoch_partitions(k, r))
    assert got.keys() == by_parts.keys()
    for parts, prob in by_parts.items():
        assert got[parts] == pytest.approx(prob, rel=1e-12)
    counts = np.zeros(k + 1)
    for path, prob in _paths(k, r):
        counts[sum(path)] += prob
    np.testing.assert_allclose(observed_counts(k, Q, r), counts, rtol=1e-12)


def test_shared_and_fresh_ends_are_the_exact_pairs():
    # r = 1: one mask for the k releases; r = 0: a mask per release (the count-like pair is
    # the setting's worst case on the domain [0, 1] with NA read as 0)
    shared = worst_case(Setting("gaussian", SIGMA, (0.0, 1.0), 0.0, Q, 3), 1e-5)
    one = persistent_bound(_pair(3, 1.0), 1e-5)
    assert one.lower == pytest.approx(shared.epsilon, abs=1e-9)  # the sum is sufficient
    assert shared.epsilon <= one.epsilon <= shared.epsilon + 5e-4  # the PLD's rounding up
    fresh = worst_case(Setting("gaussian", SIGMA, (0.0, 1.0), 0.0, Q, 3, MaskRegime.FRESH),
                       1e-5)
    none = persistent_bound(_pair(3, 0.0), 1e-5)
    assert fresh.lower - 1e-9 <= none.epsilon <= fresh.epsilon + 1e-9


def _direct_delta(k: int, r: float, eps: float, n: int = 121) -> float:
    """δ(ε) of the 2^k-path mixture against its neighbour, by a k-dimensional trapezoid
    rule (both orders, the larger)."""
    y = np.linspace(-7 * SIGMA, 1 + 7 * SIGMA, n)
    w = np.full(n, y[1] - y[0])
    w[[0, -1]] /= 2
    f = {0: stats.norm.pdf(y, 0, SIGMA), 1: stats.norm.pdf(y, 1, SIGMA)}
    P = sum(prob * np.einsum("i,j,k->ijk", *(f[s] for s in path)) for path, prob in _paths(k, r))
    Qd = np.einsum("i,j,k->ijk", f[0], f[0], f[0])
    W = np.einsum("i,j,k->ijk", w, w, w)
    e = math.exp(eps)
    return max(float(np.sum(W * np.clip(P - e * Qd, 0, None))),
               float(np.sum(W * np.clip(Qd - e * P, 0, None))))


def test_the_box_bracket_closes_on_a_direct_integration_at_half_persistence():
    b = persistent_bound(_pair(3, 0.5), 1e-5, tolerance=1e-3)
    direct = optimize.brentq(lambda e: _direct_delta(3, 0.5, e) - 1e-5, 0.5, 4.0)
    # measured: the box bracket [1.84189, 1.84237] around the direct integration's 1.84199
    # (the trapezoid's own error about 2e-4); the epochs and the sum gave [1.8362, 2.0569]
    assert b.boxes and b.error <= 1e-3
    assert b.lower - 3e-4 <= direct <= b.epsilon + 3e-4
    assert persistent_lower(_pair(3, 0.5), 1e-5) == pytest.approx(1.8362, abs=1e-3)
    assert 1.8412 < b.lower <= b.epsilon < 1.8430


def test_more_releases_never_lose_privacy_less():
    # the first k − 1 releases are a post-processing of k (the chain's marginal), so the
    # pair's ε is non-decreasing in k: each upper end is above the previous lower end; the
    # brackets (measured: [1.4579, 1.4622], [1.8398, 1.8474], [2.1476, 2.1578]) are apart
    brackets = [persistent_bound(_pair(k, 0.5), 1e-5) for k in (1, 2, 3, 4)]
    for prev, nxt in zip(brackets, brackets[1:], strict=False):
        assert nxt.epsilon >= prev.lower and nxt.lower > prev.epsilon
    for b in brackets[1:]:
        assert b.boxes and b.error <= max(1e-3, 0.005 * b.epsilon)


def test_a_bad_tolerance_is_refused():
    with pytest.raises(ValueError, match="tolerance must be"):
        persistent_bound(_pair(3, 0.5), 1e-5, tolerance=0.0)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"q": 0.0}, "q must be in"), ({"releases": 13}, "releases must be an integer in"),
    ({"persistence": 1.5}, "persistence must be"), ({"sigma": -1.0}, "sigma must be"),
    ({"b": 1.0}, "a and b must differ"),
])
def test_bad_pairs_are_refused_naming_the_parameter(kwargs, needle):
    base = {"a": 1.0, "b": 0.0, "na": 0.0, "q": Q, "sigma": SIGMA, "releases": 3,
            "persistence": 0.5}
    with pytest.raises(ValueError, match=needle):
        PersistentPair(**{**base, **kwargs})


def test_fresh_end_is_closed_by_the_fresh_pair():
    # at r = 0 the sum is not sufficient (1.4078); the fresh pair's own value closes it
    none = persistent_bound(_pair(3, 0.0), 1e-5)
    assert none.lower == pytest.approx(1.4327, abs=1e-3) and none.error < 2e-3


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"masks": "persistent"}, "persistence must be given with masks='persistent'"),
    ({"masks": "persistent", "persistence": 1.5}, "persistence must be in"),
    ({"masks": "shared", "persistence": 0.5}, "persistence applies to masks='persistent'"),
])
def test_settings_check_the_persistence(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        Setting("gaussian", SIGMA, (0.0, 1.0), 0.0, Q, 3, **kwargs)


@pytest.mark.parametrize(("noise", "k", "needle"), [
    ("laplace", 13, r"releases must be an integer in \[1, 12\] for persistent masks"),
    ("gaussian", 13, r"releases must be an integer in \[1, 12\] for persistent masks"),
])
def test_the_worst_case_refuses_what_the_bracket_does_not_cover(noise, k, needle):
    s = Setting(noise, SIGMA, (0.0, 1.0), 0.0, Q, k, "persistent", 0.5)
    with pytest.raises(ValueError, match=needle):
        worst_case(s, 1e-5)


def test_the_envelope_of_one_pair_is_that_pair():
    from audit.theory.persistent import persistent_envelope_epsilon, persistent_epsilon

    pair = _pair(3, 0.5)
    assert persistent_envelope_epsilon([pair], 1e-5) == persistent_epsilon(pair, 1e-5)
    other = PersistentPair(1.0, 0.0, 0.0, Q, SIGMA, 3, 0.25)
    with pytest.raises(ValueError, match="pairs must share"):
        persistent_envelope_epsilon([pair, other], 1e-5)
