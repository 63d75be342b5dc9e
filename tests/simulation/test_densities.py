"""Tests for audit.simulation.densities: the kernels' log densities of the output laws.

Oracles: scipy's Laplace and normal log-densities combined by ``scipy.special.logsumexp`` —
over the components of a mixture, per coordinate of a product law, and over every subset of
``observed`` coordinates (enumerated with itertools) for a subset law — and the laws' own
plain-numpy ``logpdf``.

The first call compiles ``log_law`` (a few seconds without numba's on-disk cache): the
module-scoped fixture pays it once, outside the tests.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import special, stats

from audit.laws import ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.simulation.densities import log_law, scratch
from audit.simulation.packing import law_of

LAWS = {"laplace": stats.laplace, "gaussian": stats.norm}


@pytest.fixture(scope="module")
def kernel_log():
    def evaluate(M, x):
        law = law_of(M)
        buf = np.zeros(int(scratch(law, law)))
        return np.array([log_law(np.ascontiguousarray(row, dtype=np.float64), law, buf)
                         for row in np.atleast_2d(x)])

    evaluate(Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0), np.zeros((1, 1)))
    return evaluate


def _points(dim, n=7, seed=0):
    return np.random.default_rng(seed).normal(scale=2.0, size=(n, dim))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_mixture_log_density_matches_scipy(kernel_log, noise):
    w = np.array([0.1, 0.6, 0.3])
    s = np.array([[0.0, 1.0], [-1.0, 0.5], [2.0, 2.0]])
    M = Mixture(w, s, noise, 0.7)
    x = _points(2)
    law = LAWS[noise]
    want = special.logsumexp(np.log(w)[None, :] + law.logpdf(x[:, None, :], s[None], 0.7)
                             .sum(axis=2), axis=1)
    got = kernel_log(M, x)
    assert np.allclose(got, want, rtol=1e-13, atol=1e-13)
    assert np.allclose(got, M.logpdf(x), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("K", [2, 3])  # K = 2 has its own code path
def test_product_log_density_matches_scipy(kernel_log, noise, K):
    rng = np.random.default_rng(K)
    dim = 4
    w = rng.dirichlet(np.ones(K), size=dim)
    w[1] = np.eye(K)[0]  # a coordinate with zero-weight components
    s = rng.normal(size=(dim, K))
    M = ProductMixture(w, s, noise, 0.9)
    x = _points(dim, seed=K)
    law = LAWS[noise]
    with np.errstate(divide="ignore"):
        per = special.logsumexp(np.log(w)[None] + law.logpdf(x[:, :, None], s[None], 0.9),
                                axis=2)
    assert np.allclose(kernel_log(M, x), per.sum(axis=1), rtol=1e-13, atol=1e-12)


def test_a_product_of_many_coordinates_does_not_overflow(kernel_log):
    # Π_j (sum of K terms <= K) exceeds 1e250 after ~830 coordinates of K = 2: folded in time
    dim = 1200
    M = ProductMixture(np.full((dim, 2), 0.5), np.zeros((dim, 2)), "gaussian", 1.0)
    x = np.zeros((1, dim))
    assert kernel_log(M, x)[0] == pytest.approx(dim * stats.norm.logpdf(0.0), rel=1e-13)


def _subset_oracle(S: SubsetMixture, x):
    law = LAWS[S.noise.value]
    d, k = S.values.size, S.observed
    base = law.logpdf(x, 0.0, S.scale)
    terms = [np.log1p(-S.p_observed) + base.sum(axis=1)] if S.p_observed < 1 else []
    for sub in itertools.combinations(range(d), k):
        shift = np.zeros(d)
        shift[list(sub)] = S.values[list(sub)]
        terms.append(math.log(S.p_observed) - math.log(math.comb(d, k))
                     + law.logpdf(x, shift, S.scale).sum(axis=1))
    return special.logsumexp(np.stack(terms), axis=0)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize(("observed", "p"), [(1, 0.5), (2, 0.3), (4, 1.0), (3, 0.9)])
def test_subset_log_density_matches_an_enumeration_of_the_subsets(kernel_log, noise,
                                                                  observed, p):
    S = SubsetMixture(np.array([1.0, -2.0, 0.5, 3.0]), observed, p, noise, 0.8)
    x = _points(4, seed=observed)
    got = kernel_log(S, x)
    assert np.allclose(got, _subset_oracle(S, x), rtol=1e-12, atol=1e-12)
    assert np.allclose(got, S.logpdf(x), rtol=1e-12, atol=1e-12)


def test_subset_log_density_where_the_linear_recurrence_underflows(kernel_log):
    # one coordinate's ratio r_j dwarfs the others by e^{~1000}: e_k of the rescaled ratios
    # underflows to 0 and the log-space recurrence takes over
    S = SubsetMixture(np.array([40.0, -40.0, -40.0, -40.0]), 3, 0.5, "gaussian", 1.0)
    x = np.array([[40.0, 5.0, 5.0, 5.0]])
    got = kernel_log(S, x)
    assert np.isfinite(got[0])
    assert got[0] == pytest.approx(_subset_oracle(S, x)[0], rel=1e-12)


def test_scratch_covers_both_laws():
    a = law_of(Mixture(np.full(5, 0.2), np.arange(5.0), "laplace", 1.0))
    b = law_of(SubsetMixture(np.ones(3), 2, 0.5, "laplace", 1.0))
    assert scratch(a, b) == 3 + 2 + 1 and scratch(a, a) == 5  # K, or dim + observed + 1
    assert scratch(a, b) == max(a.scratch, b.scratch)
