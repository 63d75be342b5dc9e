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
    assert plan.comparisons["eps_fresh_composed"] == pytest.approx(0.822, rel=0.05)


@pytest.mark.statistical
def test_the_shared_mask_audit_refutes_the_per_release_accounting():
    res = run_audit(config_from_dict(_doc(100, trials=10**6)))
    assert res.violations == ()
    assert res.eps_lower > res.comparisons["eps_fresh_composed"]  # 1.208 > 0.826 when written


@pytest.mark.parametrize("over, needle", [
    ({"releases": {"count": 3, "masks": "fresh"}}, "with fresh masks"),
    ({"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1}},
     "a laplace release"),
])
def test_what_the_model_cannot_reduce_is_refused_before_sampling(over, needle):
    with pytest.raises(ValueError, match=needle):
        plan_audit(config_from_dict(_doc(3, **over)))
