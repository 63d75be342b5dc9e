"""Tests for audit.theory.pair.curve: rigorous bounds on the trade-off curve of a pair."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from audit.mixture import Mixture
from audit.theory.pair import pair_tradeoff, pair_tradeoff_bounds, symmetric_pair_tradeoff

from .common import single


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
