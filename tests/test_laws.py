"""Structured output laws: their fast densities equal the enumerated mixtures they stand for."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.laws import ProductMixture, SubsetMixture, fresh_releases, shared_releases
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


# ------------------------------------------------------------ laws of k releases (§9.5)
def _scalar_pair_law(noise: str = "laplace") -> Mixture:
    return Mixture([0.2, 0.5, 0.3], [0.0, 0.4, 1.1], noise, 0.7)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_shared_releases_is_the_mixture_of_k_fold_products(noise):
    M = _scalar_pair_law(noise)
    K = shared_releases(M, 4)
    x = np.random.default_rng(1).normal(0.5, 1.5, size=(300, 4))
    one = stats.laplace if noise == "laplace" else stats.norm
    # independent: Σ_c w_c Π_j φ(x_j − s_c), by scipy
    ref = np.log(sum(w * np.prod(one.pdf(x, loc=s, scale=0.7), axis=1)
                     for w, s in zip(M.weights, M.scalar_shifts, strict=True)))
    np.testing.assert_allclose(K.logpdf(x), ref, rtol=1e-10)
    # not the product of the marginals: the releases share the mask
    assert np.max(np.abs(K.logpdf(x) - M.logpdf(x.reshape(-1)).reshape(300, 4).sum(1))) > 0.1


def test_fresh_releases_is_the_k_fold_product():
    M = _scalar_pair_law()
    x = np.random.default_rng(2).normal(0.5, 1.5, size=(300, 3))
    np.testing.assert_allclose(fresh_releases(M, 3).logpdf(x),
                               M.logpdf(x.reshape(-1)).reshape(300, 3).sum(axis=1), rtol=1e-12)
    prod = ProductMixture([[0.4, 0.6], [0.9, 0.1]], [[1.0, 0.0], [2.0, 0.0]], "laplace", 1.0)
    y = np.random.default_rng(3).normal(size=(50, 4))
    np.testing.assert_allclose(fresh_releases(prod, 2).logpdf(y),
                               prod.logpdf(y[:, :2]) + prod.logpdf(y[:, 2:]), rtol=1e-12)


def test_the_engine_draws_shared_releases_with_one_component_per_trial():
    """Under shared masks the k outputs of a trial share the component: their covariance is
    Var(S) (here 0.1344), and 0 under fresh masks."""
    from audit.simulation.engine import sample_outputs

    M = _scalar_pair_law("gaussian")
    var_s = float(M.weights @ M.scalar_shifts**2 - (M.weights @ M.scalar_shifts) ** 2)
    n = 200_000
    for law, cov in ((shared_releases(M, 3), var_s), (fresh_releases(M, 3), 0.0)):
        x = sample_outputs(law, n, 5)
        c = np.cov(x, rowvar=False)
        # off-diagonal sample covariances: sd ≈ (0.49 + 0.13)/√n ≈ 0.0014; 6 sd tolerance
        assert np.abs(c[np.triu_indices(3, 1)] - cov).max() < 0.009
        np.testing.assert_allclose(x.mean(axis=0), M.weights @ M.scalar_shifts, atol=0.01)


@pytest.mark.parametrize("call, needle", [
    (lambda: shared_releases(_scalar_pair_law(), 0), "releases must be"),
    (lambda: shared_releases(_scalar_pair_law(), 2_000_000), "must be at most"),
    (lambda: fresh_releases(Mixture([1.0], [[0.0, 1.0]], "laplace", 1.0), 2),
     "a scalar Mixture or a ProductMixture"),
])
def test_k_release_laws_refuse_what_they_cannot_build(call, needle):
    with pytest.raises(ValueError, match=needle):
        call()
