"""Tests for audit.theory.pair.split: the optimal set S* = {p > e^t q} as intervals.

Oracles: the closed-form roots of single-component pairs (Laplace: (1 + t b)/2; Gaussian:
1/2 + t σ²) and of the symmetric Gaussian two-component pair (p/q = e^{-2} cosh 2x), and the
sign of ln p − ln q − t checked on a dense grid inside every labelled segment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.theory.pair.methods import pair_method
from audit.theory.pair.split import Split


def split(P: Mixture, Q: Mixture, t: float) -> Split:
    """The optimal set {p > e^t q} through the noise's own split (the integrator's path)."""
    return pair_method(P.noise).split(P, Q, t)


def _segments_agree_with_the_sign_of_L(sp: Split, P, Q, t):
    edges = np.concatenate([[-40.0], sp.cuts, [40.0]])
    for lab, a, b in zip(sp.labels, edges[:-1], edges[1:], strict=True):
        if lab == 2 or b - a < 1e-9:
            continue
        x = np.linspace(a, b, 41)[1:-1]
        L = P.logpdf(x) - Q.logpdf(x) - t
        assert np.all((L > 0) == bool(lab)) or np.all(np.abs(L) < 1e-12), (a, b, lab)


@pytest.mark.parametrize("t", [-0.4, 0.0, 0.3])
def test_laplace_single_root_closed_form(t):
    b = 1.25
    P = Mixture([1.0], [1.0], "laplace", b)
    Q = Mixture([1.0], [0.0], "laplace", b)
    sp = split(P, Q, t)
    assert sp.n_roots == 1 and sp.root_bound == 1
    root = (1.0 + t * b) / 2.0
    assert np.any(np.isclose(sp.cuts, root, rtol=0, atol=1e-13))
    lo, hi = sp.brackets[0]
    assert lo <= root <= hi and hi - lo < 1e-9
    _segments_agree_with_the_sign_of_L(sp, P, Q, t)
    assert sp.labels[0] == 0 and sp.labels[-1] == 1  # S* is the right of the root


def test_laplace_beyond_the_ratio_bound_has_no_root():
    # |L + t| <= 1/b: for t above it, S* is empty; below, S* is the whole line
    P = Mixture([1.0], [1.0], "laplace", 1.0)
    Q = Mixture([1.0], [0.0], "laplace", 1.0)
    assert split(P, Q, 1.5).n_roots == 0 and not split(P, Q, 1.5).labels.any()
    assert split(P, Q, -1.5).labels.all()


@pytest.mark.parametrize("t", [-1.0, 0.0, 2.0])
def test_gaussian_single_root_closed_form(t):
    sigma = 0.7
    P = Mixture([1.0], [1.0], "gaussian", sigma)
    Q = Mixture([1.0], [0.0], "gaussian", sigma)
    sp = split(P, Q, t)
    assert sp.n_roots == 1 and sp.root_bound == 1
    assert sp.cuts[0] == pytest.approx(0.5 + t * sigma ** 2, rel=1e-12, abs=1e-13)
    assert sp.labels.tolist() == [0, 1]


@pytest.mark.parametrize("t", [0.0, 0.5])
def test_gaussian_two_roots_of_a_symmetric_mixture(t):
    # p/q = e^{-2} cosh(2x) for σ = 1: roots ±arccosh(e^{t+2})/2, S* outside them
    P = Mixture([0.5, 0.5], [-2.0, 2.0], "gaussian", 1.0)
    Q = Mixture([1.0], [0.0], "gaussian", 1.0)
    sp = split(P, Q, t)
    r = math.acosh(math.exp(t + 2.0)) / 2.0
    assert sp.n_roots == 2 == sp.root_bound
    assert np.allclose(sp.cuts, [-r, r], rtol=1e-12)
    assert sp.labels.tolist() == [1, 0, 1]
    _segments_agree_with_the_sign_of_L(sp, P, Q, t)


def test_identical_laws_give_an_empty_set_at_t_zero():
    P = Mixture([0.3, 0.7], [0.0, 1.0], "gaussian", 1.0)
    sp = split(P, P, 0.0)
    assert sp.cuts.size == 0 and sp.labels.tolist() == [0] and sp.n_roots == 0


def test_laplace_mixture_segments_match_the_sign_of_L():
    P = Mixture([0.25, 0.5, 0.25], [-1.0, 0.0, 3.0], "laplace", 0.5)
    Q = Mixture([0.6, 0.4], [0.0, 2.0], "laplace", 0.5)
    for t in (-0.5, 0.0, 0.4):
        sp = split(P, Q, t)
        # at most one root between consecutive breakpoints (the 4 distinct shifts)
        assert sp.n_roots == 2 and sp.root_bound == 3
        _segments_agree_with_the_sign_of_L(sp, P, Q, t)
