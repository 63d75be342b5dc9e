"""Exact-pair integrator: closed forms, brute-force integration, invariances, validation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.stats import norm

from audit.mixture import Mixture
from audit.theory.pair import (
    hockey_stick,
    pair_delta,
    pair_epsilon,
    pair_profile,
    pair_tradeoff,
    pair_tradeoff_bounds,
    symmetric_pair_tradeoff,
)


def gauss_delta(eps, mu):  # Balle–Wang (2018) Thm 8
    return norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def laplace_delta(eps, mu):
    return max(0.0, 1.0 - np.exp((eps - mu) / 2))


def single(kind, shift, scale=1.0):
    return Mixture([1.0], [shift], kind, scale)


def brute(P, Q, eps):
    """∫ max(0, p − e^ε q) by quad, split at the shifts and at sign changes of log p/q found on
    a dense grid (independent of the integrator under test)."""

    def L(x):
        return P.logpdf(np.atleast_1d(x)) - Q.logpdf(np.atleast_1d(x)) - eps

    pts = np.sort(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    lo, hi = pts[0] - 40 * P.scale, pts[-1] + 40 * P.scale
    xs = np.linspace(lo, hi, 100_001)
    lv = L(xs)
    idx = np.flatnonzero(np.sign(lv[1:]) != np.sign(lv[:-1]))
    roots = [optimize.brentq(lambda x: L(x)[0], xs[i], xs[i + 1], xtol=1e-15) for i in idx]
    brk = np.unique(np.concatenate([[lo, hi], pts, roots]))

    def f(x):
        return max(0.0, P.pdf(np.array([x]))[0] - np.exp(eps) * Q.pdf(np.array([x]))[0])

    total, qerr = 0.0, 0.0
    for a, b in zip(brk[:-1], brk[1:], strict=True):
        v, e = integrate.quad(f, a, b, epsabs=1e-15, epsrel=1e-13, limit=500)
        total, qerr = total + v, qerr + e
    return total, qerr


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


def test_pair_epsilon_inverts_closed_forms():
    P, Q = single("gaussian", 1.0), single("gaussian", 0.0)
    r = pair_epsilon(P, Q, 1e-5)
    assert abs(gauss_delta(r.value, 1.0) - 1e-5) < 1e-12
    assert gauss_delta(r.value - r.error, 1.0) >= 1e-5 >= gauss_delta(r.value + r.error, 1.0)
    PL, QL = single("laplace", 3.0), single("laplace", 0.0)
    r = pair_epsilon(PL, QL, 0.01)
    assert abs(r.value - (3.0 + 2 * np.log(0.99))) <= r.error + 1e-12
    assert pair_epsilon(P, Q, 0.0).value == np.inf
    assert pair_epsilon(P, Q, 1.0).value == 0.0


def random_pairs(kind, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k1, k2 = rng.integers(1, 5, 2)
        out.append(
            (
                Mixture(rng.dirichlet(np.ones(k1)), rng.normal(0, 1.5, k1), kind, 1.0),
                Mixture(rng.dirichlet(np.ones(k2)), rng.normal(0, 1.5, k2), kind, 1.0),
            )
        )
    return out


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


def test_tradeoff_brackets_gaussian_curve():
    P, Q = single("gaussian", 1.0), single("gaussian", 0.0)
    B = pair_tradeoff_bounds(P, Q, n_t=201)
    a = np.concatenate([np.linspace(0, 1, 501), np.logspace(-12, 0, 200)])
    G = norm.cdf(norm.ppf(1 - a) - 1.0)
    assert np.all(B.lower(a) <= G + 1e-12)
    assert np.all(B.upper(a) >= G - 1e-12)
    assert B.error < 2e-3
    assert np.max(B.upper(a) - B.lower(a)) <= B.error + 1e-12


def test_tradeoff_brackets_laplace_curve():
    mu = 1.0
    P, Q = single("laplace", mu), single("laplace", 0.0)
    B = pair_tradeoff_bounds(P, Q, n_t=201)
    a = np.concatenate([np.linspace(0, 1, 501), np.logspace(-12, 0, 200)])
    T = np.where(
        a < np.exp(-mu) / 2,
        1 - np.exp(mu) * a,
        np.where(a <= 0.5, np.exp(-mu) / (4 * np.maximum(a, 1e-300)), np.exp(-mu) * (1 - a)),
    )
    assert np.all(B.lower(a) <= T + 1e-12)
    assert np.all(B.upper(a) >= T - 1e-12)
    assert B.error < 1e-3


def test_symmetric_tradeoff_is_below_both_orders():
    P = Mixture([0.3, 0.7], [0.0, 1.5], "laplace", 1.0)
    Q = Mixture([1.0], [0.0], "laplace", 1.0)
    S = symmetric_pair_tradeoff(P, Q, n_t=101)
    f1, f2 = pair_tradeoff(P, Q, n_t=101), pair_tradeoff(Q, P, n_t=101)
    a = np.linspace(0, 1, 301)
    assert np.all(S(a) <= np.minimum(f1(a), f2(a)) + 1e-12)
    assert np.all(np.diff(S(a), 2) >= -1e-9)  # convex


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
