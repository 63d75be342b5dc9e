"""OpenDP's quantile over candidates and counts by categories (``audit/adapters/
opendp_discrete.py``): what a NaN does (imputed, dropped, last bin, cast to 0), the calibration
at d_in = 2k, and the parameter checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.adapters import get_adapter, make_implementation
from audit.adapters.protocol import NanSemantics

pytest.importorskip("opendp.prelude")

from audit.adapters import opendp_discrete  # noqa: E402

CANDIDATES = [-1.0, -0.5, 0.0, 0.5, 1.0]


def release(function: str, data, **params):
    """One release at ε = 10⁴: the quantile's choice is the best-scored candidate and the
    counts' integer Laplace noise (scale 2·10⁻⁴) is 0 with probability > 1 − 10⁻¹⁰⁰⁰."""
    return make_implementation(f"opendp:{function}", epsilon=1e4, params=params)(data, None)


def test_declaration():
    adapter = get_adapter("opendp")
    assert adapter.relation is opendp_discrete.RELATION
    assert adapter.functions[-2:] == ("quantile", "count_by_categories")
    sem = {f: {k: v.value for k, v in adapter.target(f).nan_options.items()}
           for f in opendp_discrete.FUNCTIONS}
    assert sem == {"quantile": {"impute": "imputes-constant", "drop": "drops"},
                   "count_by_categories": {"find_bin": "counted", "cast": "imputes-constant",
                                           "drop": "drops"}}
    assert adapter.target("count_by_categories").nan_semantics() is NanSemantics.COUNTED


def test_quantile_scores_an_imputed_nan_and_skips_a_dropped_one():
    # three 1.0, seven missing. OpenDP scores c by |(1 − α)·#{x < c} − α·#{x > c}| (up to a factor)
    # (the lowest wins; tied candidates are drawn at random, so the data leave no tie):
    # imputed as 0, c = 0 scores 1.5, 0.5 scores 2; imputed as −1, c = −1 scores 1.5; dropped,
    # every entry is 1; the 0.9-quantile of three 1.0 and seven 0 is the top candidate
    data = np.array([[1.0]] * 3 + [[np.nan]] * 7)
    assert release("quantile", data, candidates=CANDIDATES) == 0.0
    assert release("quantile", data, candidates=CANDIDATES, constant=-1.0) == -1.0
    assert release("quantile", data, candidates=CANDIDATES, nan="drop") == 1.0
    assert release("quantile", data, candidates=CANDIDATES, alpha=0.9) == 1.0


def test_find_bin_puts_nan_in_the_last_bin_cast_reads_it_as_zero_drop_removes_it():
    data = np.array([[np.nan], [2.0], [0.0], [-1.0], [0.7]])
    # bins (-inf, -0.5), [-0.5, 0.5), [0.5, +inf): NaN with 2.0 and 0.7 in the last
    np.testing.assert_array_equal(release("count_by_categories", data, edges=[-0.5, 0.5]),
                                  [1.0, 1.0, 3.0])
    # cast truncates (0.7 -> 0) and reads NaN as 0; 2 is outside (the last count)
    cast = release("count_by_categories", data, nan="cast", categories=[-1, 0, 1])
    np.testing.assert_array_equal(cast, [1.0, 3.0, 0.0, 1.0])
    drop = release("count_by_categories", data, nan="drop", categories=[-1, 0, 1])
    np.testing.assert_array_equal(drop, [1.0, 2.0, 0.0, 1.0])
    assert cast.dtype == np.float64


@pytest.mark.parametrize(("function", "params", "d", "column"), [
    ("quantile", {"candidates": CANDIDATES}, 3, None),
    ("quantile", {"candidates": CANDIDATES, "nan": "drop"}, 3, 1),
    ("count_by_categories", {"edges": [0.0]}, 3, None),
    ("count_by_categories", {"nan": "cast", "categories": [0, 1]}, 2, None),
])
def test_the_map_at_the_substitution_distance_is_epsilon(function, params, d, column):
    """The calibrated chain's privacy map at d_in = 2k is ≤ ε and within 10⁻⁶ of it (the
    binary search's tolerance); a larger distance costs more."""
    checked = opendp_discrete.check(function, {**params, "column": column})
    m, value = opendp_discrete.build_chain(function, epsilon=0.5, params=checked, n=10, d=d)
    assert value <= 0.5 and value == pytest.approx(0.5, rel=1e-6)
    k = d if column is None else 1
    assert m.map(2 * k) == value and m.map(4 * k) > value


def test_quantile_refuses_a_domain_that_may_hold_nan():
    """Why every quantile chain imputes or drops first (the module docstring's claim)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=True), size=4)
    with pytest.raises(dp.OpenDPException, match="non-nan"):
        dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.max_divergence(),
                                   CANDIDATES, 0.5, 1.0)


@pytest.mark.statistical
def test_the_count_by_categories_spread_is_the_integer_laplace_of_scale_2k_over_epsilon():
    """σ of each count with k = 3 entries per record: scale 2·3/ε = 6, σ = √(2q)/(1 − q),
    q = e^(−1/6); 3,000 vectors of 3 counts: s² within ±6 standard errors (√(5/9,000)
    relative: the discrete Laplace's kurtosis is below 6), each mean within 6 of its standard
    errors (OpenDP is not seedable: each fails with probability ≈ 2e-9)."""
    impl = make_implementation("opendp:count_by_categories", epsilon=1.0,
                               params={"edges": [-0.5, 0.5]})
    data = np.zeros((20, 3))
    out = np.array([impl(data, None) for _ in range(3000)])
    q = math.exp(-1 / 6)
    sigma2 = 2 * q / (1 - q) ** 2
    t = 6 * math.sqrt(5 / out.size)
    assert sigma2 * (1 - t) <= out.var(axis=0, ddof=1).mean() <= sigma2 * (1 + t)
    np.testing.assert_allclose(out.mean(axis=0), [0.0, 60.0, 0.0],
                               atol=6 * math.sqrt(sigma2 / 3000))


@pytest.mark.parametrize(("function", "params", "needle"), [
    ("quantile", {}, "parameter 'candidates' is required"),
    ("quantile", {"candidates": [0.0]}, "parameter 'candidates'"),
    ("quantile", {"candidates": [1.0, 0.0]}, "strictly increasing"),
    ("quantile", {"candidates": [0.0, math.inf]}, "parameter 'candidates'"),
    ("quantile", {"candidates": CANDIDATES, "alpha": 1.5}, "parameter 'alpha'"),
    ("quantile", {"candidates": CANDIDATES, "nan": "cast"}, "parameter 'nan'"),
    ("count_by_categories", {}, "needs parameter 'edges'"),
    ("count_by_categories", {"nan": "cast"}, "needs parameter 'categories'"),
    ("count_by_categories", {"edges": [0.0], "categories": [1.5]}, "parameter 'categories'"),
    ("count_by_categories", {"nan": "drop", "categories": [1, 1]}, "distinct integers"),
    ("count_by_categories", {"nan": "cast", "categories": [0.5]}, "parameter 'categories'"),
    ("count_by_categories", {"nan": "cast", "categories": [2**31]}, "parameter 'categories'"),
    ("count_by_categories", {"edges": []}, "parameter 'edges'"),
])
def test_bad_parameters_are_refused_before_any_work(function, params, needle):
    with pytest.raises(ValueError, match=needle):
        make_implementation(f"opendp:{function}", epsilon=1.0, params=params)


def test_delta_must_be_zero():
    with pytest.raises(ValueError, match="delta must be 0"):
        make_implementation("opendp:quantile", epsilon=1.0, delta=1e-6,
                            params={"candidates": CANDIDATES})
