"""The model's k-release subject: k Gaussian releases with shared masks are one release at
σ/√k (the mean is sufficient), checked against the unreduced k-vector laws; its ceilings are
the §9 bounds, and the audit refutes the per-release accounting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.pipeline.config import config_from_dict
from audit.pipeline.plan import plan_audit
from audit.pipeline.runner import run_audit
from audit.theory import accountant as acc


def _doc(k: int, trials: int = 10**6, **over) -> dict:
    doc = {"scenario": {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "query": "sum",
                        "d": 1, "n": 10},
           "missingness": {"kind": "mcar-row", "p_star": 0.1},
           "releases": {"count": k, "masks": "shared"},
           "audit": {"trials": trials, "seed": 1, "delta": 1e-5}}
    doc.update(over)
    return doc


@pytest.mark.parametrize("k", [2, 3, 7])
def test_the_reduction_equals_the_k_vector_likelihood_ratio(k):
    one = plan_audit(config_from_dict(_doc(1)))
    red = plan_audit(config_from_dict(_doc(k)))
    assert red.noise_scale == pytest.approx(one.noise_scale / math.sqrt(k), rel=1e-15)
    vec = [Mixture(M.weights, np.repeat(M.shifts.reshape(-1, 1), k, axis=1), M.noise,
                   one.noise_scale)
           for M in (one.P, one.Q)]
    x = np.random.default_rng(k).normal(0.0, 3 * one.noise_scale, size=(500, k))
    llr_vector = vec[0].logpdf(x) - vec[1].logpdf(x)
    llr_mean = red.P.logpdf(x.mean(axis=1)) - red.Q.logpdf(x.mean(axis=1))
    np.testing.assert_allclose(llr_vector, llr_mean, rtol=1e-9, atol=1e-9)


def test_ceilings_are_the_shared_mask_bounds_at_k_100():
    plan = plan_audit(config_from_dict(_doc(100)))
    mu = plan.sensitivity / plan.noise_scale  # √k μ of the composition
    eps_k = acc.epsilon_for_delta(acc.tradeoff_gaussian(mu), 1e-5 / 0.1)
    assert plan.eps_theory == pytest.approx(math.log1p(0.1 * math.expm1(eps_k)), rel=1e-9)
    assert plan.eps_theory == pytest.approx(6.937, abs=1e-3)  # docs/THEORY.md §9 check table
    assert plan.eps_base == pytest.approx(10.394, abs=1e-3)
    assert plan.eps_pair <= plan.eps_fdp <= plan.eps_theory + 1e-9
    assert plan.comparison.value == pytest.approx(0.822, rel=0.05)


@pytest.mark.statistical
def test_the_shared_mask_audit_refutes_the_per_release_accounting():
    res = run_audit(config_from_dict(_doc(100, trials=10**6)))
    assert res.violations == ()
    assert res.eps_lower > res.comparisons["eps_fresh_composed"]  # 1.208 > 0.826 when written


def _laplace(k: int, masks: str, trials: int = 10**5, **miss) -> dict:
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 4,
                         "n": 5},
            "missingness": miss or {"kind": "mcar-iid", "rate": 0.7},
            "releases": {"count": k, "masks": masks},
            "audit": {"trials": trials, "seed": 3}}


def test_laplace_shared_releases_are_the_mixture_of_k_fold_products():
    one = plan_audit(config_from_dict(_laplace(1, "shared")))
    plan = plan_audit(config_from_dict(_laplace(6, "shared")))
    assert plan.P.dim == 6 and plan.noise_scale == one.noise_scale
    # the same mixing weights, each component's shift repeated in every release
    np.testing.assert_array_equal(plan.P.weights, one.P.weights)
    np.testing.assert_array_equal(plan.P.shifts, np.repeat(one.P.shifts, 6, axis=1))
    # Proposition 9.1 at δ = 0: ln(1 + p*(e^{k ε̃} − 1)), ε̃ = C̃_1/b = ε here (ρ = 1)
    p = one.p_star
    assert plan.eps_theory == pytest.approx(math.log1p(p * math.expm1(6.0)), rel=1e-12)
    assert plan.eps_base == pytest.approx(6.0, rel=1e-12)
    assert plan.eps_pair is None and "no low-dimensional form" in plan.pair_method
    # the per-release accounting: k ln(1 + p*(e^ε − 1)), below the shared-mask bound
    assert plan.comparison.value == pytest.approx(
        6 * math.log1p(p * math.expm1(1.0)), rel=1e-9)


def test_laplace_fresh_releases_are_the_k_fold_product_with_an_exact_ceiling():
    one = plan_audit(config_from_dict(_laplace(1, "fresh")))
    plan = plan_audit(config_from_dict(_laplace(5, "fresh")))
    assert type(plan.P).__name__ == "ProductMixture" and plan.P.dim == 5
    x = np.random.default_rng(0).laplace(0.0, 3 * one.noise_scale, size=(200, 5))
    np.testing.assert_allclose(plan.P.logpdf(x), one.P.logpdf(x.reshape(-1)).reshape(200, 5)
                               .sum(axis=1), rtol=1e-12)
    # a Laplace likelihood ratio saturates: the δ = 0 composition is exact, k ε_pair(1)
    assert plan.eps_pair == pytest.approx(5 * one.eps_pair, rel=1e-9)
    p = one.p_star
    assert plan.eps_theory == pytest.approx(5 * math.log1p(p * math.expm1(1.0)), rel=1e-12)
    assert plan.eps_pair <= plan.eps_theory
    assert plan.comparison is None


def test_gaussian_fresh_releases_have_the_pld_of_the_pair_as_ceiling():
    doc = _doc(4)
    doc["releases"]["masks"] = "fresh"
    plan = plan_audit(config_from_dict(doc))
    one = plan_audit(config_from_dict(_doc(1)))
    assert plan.P.dim == 4 and plan.noise_scale == one.noise_scale
    assert plan.eps_pair == pytest.approx(
        acc.fresh_pair_epsilon(one.P, one.Q, 4, 1e-5).value, rel=1e-12)
    assert plan.eps_theory == pytest.approx(
        acc.fresh_masks_epsilon(acc.tradeoff_gaussian(one.sensitivity_tilde / one.noise_scale),
                                0.1, 4, 1e-5), rel=1e-12)
    assert one.eps_pair < plan.eps_pair <= plan.eps_theory


@pytest.mark.parametrize("masks", ["shared", "fresh"])
def test_k_laplace_model_audits_stay_below_their_ceilings(masks):
    res = run_audit(config_from_dict(_laplace(8, masks, trials=200_000)))
    assert res.violations == ()
    assert 0.0 < res.eps_lower <= res.eps_theory
    if masks == "fresh":
        assert res.eps_lower <= res.eps_pair


def test_mnar_releases_run_without_a_theorem():
    plan = plan_audit(config_from_dict(_laplace(3, "shared", kind="mnar-value",
                                                rate_low=0.2, rate_high=0.8,
                                                threshold=0.0)))
    assert plan.eps_theory is None and "MNAR" in plan.theory


@pytest.mark.parametrize("over, needle", [
    # 5 distinct shifts × 10^6 releases × 1 > MAX_SHARED_FLOATS
    (_laplace(10**6, "shared"), "releases × dim × components must be at most"),
    (_laplace(20_000, "fresh"), "releases.count must be at most 10000"),
    ({**_laplace(3, "fresh"), "scenario": {"mechanism": "laplace", "epsilon": 1.0,
                                           "query": "sum", "d": 4, "n": 5},
      "missingness": {"kind": "mcar-fixed", "observed": 2}},
     None),
])
def test_what_the_model_cannot_draw_is_refused_before_sampling(over, needle):
    if needle is None:  # a scalar mixture: fresh masks work under any mask law
        assert plan_audit(config_from_dict(over)).P.dim == 3
        return
    with pytest.raises(ValueError, match=needle):
        plan_audit(config_from_dict(over))


def test_fresh_vector_releases_without_independent_coordinates_are_refused():
    doc = _laplace(3, "fresh", kind="mcar-fixed", observed=2)
    doc["scenario"]["query"] = "vector-sum"
    with pytest.raises(ValueError, match="releases: the model cannot audit 3 releases"):
        plan_audit(config_from_dict(doc))
