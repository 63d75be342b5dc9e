"""Tests for audit.theory.pair.hockey: closed forms, brute-force integration, invariances."""

from __future__ import annotations

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.theory.pair import hockey_stick, pair_delta, pair_epsilon, pair_profile

from .common import brute, gauss_delta, laplace_delta, random_pairs, single


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 8.0])
def test_gaussian_single_component_matches_balle_wang(mu, eps):
    for P, Q in [(single("gaussian", mu), single("gaussian", 0.0)),
                 (single("gaussian", 0.0, 2.0), single("gaussian", 2 * mu, 2.0))]:
        h = hockey_stick(P, Q, eps)
        exact = gauss_delta(eps, mu)
        assert abs(h.value - exact) <= h.error + 1e-14 * exact + 1e-300
        assert h.error < 1e-10
        assert h.n_roots == h.root_bound == 1


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.0, 0.2, 0.9, 4.0])
def test_laplace_single_component_matches_closed_form(mu, eps):
    b = 0.5  # shift mu·b: privacy-loss parameter mu
    P, Q = single("laplace", mu * b, b), single("laplace", 0.0, b)
    h = hockey_stick(P, Q, eps)
    assert abs(h.value - laplace_delta(eps, mu)) <= h.error + 1e-14
    assert pair_epsilon(P, Q, 0.0).value == pytest.approx(mu, abs=1e-11)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_mixtures_agree_with_brute_force_integration(kind):
    worst = 0.0
    for P, Q in random_pairs(kind, 5, seed=1 if kind == "gaussian" else 2):
        for eps in (0.0, 0.3, 1.0, 2.0):
            h = hockey_stick(P, Q, eps)
            b, qerr = brute(P, Q, eps)
            assert abs(h.value - b) <= h.error + qerr + 1e-13, (P, Q, eps, h, b)
            assert h.error < 1e-9
            worst = max(worst, abs(h.value - b))
            if h.root_bound is not None:
                assert h.n_roots <= h.root_bound
    assert worst < 1e-10


def test_gaussian_three_sign_changes_found():
    # Coefficients +, −, +, − : up to three roots, all three present at ε = 0.
    P = Mixture([0.5, 0.5], [-2.0, 1.0], "gaussian", 1.0)
    Q = Mixture([0.5, 0.5], [-1.0, 2.0], "gaussian", 1.0)
    h = hockey_stick(P, Q, 0.0)
    assert h.root_bound == 3 and h.n_roots == 3
    b, qerr = brute(P, Q, 0.0)
    assert abs(h.value - b) <= h.error + qerr + 1e-13


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_identical_laws_give_zero(kind):
    P = Mixture([0.2, 0.8], [0.0, 1.0], kind, 1.0)
    Q = Mixture([0.8, 0.2], [1.0, 0.0], kind, 1.0)  # same law, other order
    for eps in (0.0, 1.0):
        assert hockey_stick(P, Q, eps).value == 0.0
    assert pair_epsilon(P, Q, 0.0).value == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_order_and_symmetry(kind):
    P = Mixture([0.3, 0.7], [0.0, 1.0], kind, 1.0)
    Q = Mixture([1.0], [0.0], kind, 1.0)
    a, b = hockey_stick(P, Q, 0.5), hockey_stick(Q, P, 0.5)
    assert a.value != pytest.approx(b.value)  # genuinely asymmetric pair
    d = pair_delta(P, Q, 0.5)
    assert d.value == max(a.value, b.value)
    assert d.value == pair_delta(Q, P, 0.5).value
    # D_1 is the total variation distance in both orders.
    assert hockey_stick(P, Q, 0.0).value == pytest.approx(hockey_stick(Q, P, 0.0).value, abs=1e-12)
    prof = pair_profile(P, Q, [0.0, 0.5, 1.0])
    assert np.all(np.diff(prof.deltas) <= 0)
    assert pair_epsilon(P, Q, 0.01).value == pytest.approx(pair_epsilon(Q, P, 0.01).value)


def test_shift_and_scale_invariance():
    P = Mixture([0.4, 0.6], [0.0, 1.0], "gaussian", 1.0)
    Q = Mixture([1.0], [0.2], "gaussian", 1.0)
    P2 = Mixture([0.4, 0.6], [10.0, 13.0], "gaussian", 3.0)
    Q2 = Mixture([1.0], [10.6], "gaussian", 3.0)
    ref = hockey_stick(P2, Q2, 0.3).value
    assert hockey_stick(P, Q, 0.3).value == pytest.approx(ref, rel=1e-10)


def test_tiny_delta_relative_accuracy():
    P, Q = single("gaussian", 1.0), single("gaussian", 0.0)
    h = hockey_stick(P, Q, 30.0)
    exact = gauss_delta(30.0, 1.0)
    assert exact < 1e-100
    assert h.value == pytest.approx(exact, rel=1e-9)
    assert h.error < 1e-7 * exact


def test_validation():
    G, L = single("gaussian", 0.0), single("laplace", 0.0)
    with pytest.raises(ValueError, match="noise kind"):
        hockey_stick(G, L, 1.0)
    with pytest.raises(ValueError, match="scale"):
        hockey_stick(G, single("gaussian", 0.0, 2.0), 1.0)
    V = Mixture([1.0], [[0.0, 1.0]], "gaussian", 1.0)
    with pytest.raises(ValueError, match="scalar"):
        hockey_stick(V, V, 1.0)
    with pytest.raises(ValueError, match=r"eps must be in \[0(\.0)?, inf\), got eps=-1"):
        hockey_stick(G, G, -1.0)
    with pytest.raises(ValueError, match="delta must be in"):
        pair_epsilon(G, G, 1.5)
    with pytest.raises(ValueError, match="delta must be in"):
        pair_epsilon(G, G, -0.1)
    with pytest.raises(ValueError, match="Mixture"):
        pair_delta(G, "x", 1.0)
