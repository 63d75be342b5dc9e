"""Structured output laws: their fast densities equal the enumerated mixtures they stand for."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.laws import ProductMixture, SubsetMixture
from audit.mixture import Mixture


def _product(noise, d=6, seed=1):
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.1, 0.9, d)
    return ProductMixture(np.column_stack([1 - r, r]),
                          np.column_stack([rng.normal(size=d), np.zeros(d)]), noise, 1.3)


def _subset(noise, d=6, k=3, p=0.6, seed=2):
    return SubsetMixture(np.random.default_rng(seed).normal(size=d), k, p, noise, 0.8)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("make", [_product, _subset])
def test_logpdf_equals_the_enumerated_mixture(noise, make):
    law = make(noise)
    x = np.random.default_rng(3).normal(size=(400, law.dim)) * 3
    M = law.as_mixture()
    assert isinstance(M, Mixture) and M.n_components == law.n_components
    np.testing.assert_allclose(law.logpdf(x), M.logpdf(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("make", [_product, _subset])
def test_sampler_has_the_law_of_the_enumerated_mixture(noise, make):
    # Two-sample KS per coordinate at 1e-4 each (family false-failure ≤ 2·6·1e-4 ≈ 1e-3)
    law = make(noise)
    a, b = law.sample(40_000, 5), law.as_mixture().sample(40_000, 6)
    for j in range(law.dim):
        assert stats.ks_2samp(a[:, j], b[:, j]).pvalue > 1e-4


def test_edge_cases_of_the_subset_law():
    # p = 1: never all-missing; p = 0: always all-missing (a pure noise law)
    on = SubsetMixture([1.0, 2.0, 3.0], 3, 1.0, "laplace", 1.0)
    assert on.n_components == 1
    x = np.zeros((2, 3))
    np.testing.assert_allclose(on.logpdf(x), on.as_mixture().logpdf(x), atol=1e-12)
    off = SubsetMixture([1.0, 2.0, 3.0], 2, 0.0, "gaussian", 1.0)
    np.testing.assert_allclose(off.logpdf(x), stats.norm.logpdf(x).sum(axis=1), atol=1e-12)


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"values": [1.0, np.nan], "observed": 1, "p_observed": 0.5}, "finite"),
    ({"values": [1.0, 2.0], "observed": 3, "p_observed": 0.5}, "observed must be in"),
    ({"values": [1.0, 2.0], "observed": 1, "p_observed": 1.5}, "p_observed must be in"),
])
def test_subset_law_refuses_bad_parameters(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        SubsetMixture(noise="laplace", scale=1.0, **kwargs)


def test_product_law_refuses_bad_weights():
    with pytest.raises(ValueError, match="sum to 1"):
        ProductMixture([[0.5, 0.6]], [[0.0, 1.0]], "laplace", 1.0)
    with pytest.raises(ValueError, match="same shape"):
        ProductMixture([[0.5, 0.5]], [[0.0, 1.0, 2.0]], "laplace", 1.0)


def test_large_dimension_needs_no_enumeration():
    # d = 24 independent masks: 2^24 patterns, evaluated in O(d)
    d = 24
    law = ProductMixture(np.tile([0.7, 0.3], (d, 1)), np.column_stack([np.ones(d), np.zeros(d)]),
                         "laplace", 2.0)
    assert law.n_components == 2**24
    assert np.all(np.isfinite(law.logpdf(law.sample(1000, 0))))
    with pytest.raises(ValueError, match="as_mixture needs at most"):
        law.as_mixture()
