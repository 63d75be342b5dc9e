"""Mirror of audit.estimation.binomial (tests/estimation/test_estimators.py holds the
statsmodels comparison and the Monte Carlo coverage checks). Oracles here: the defining
equations of the one-sided Clopper–Pearson bounds in terms of the binomial CDF, scipy's
``binomtest(...).proportion_ci(method="exact")`` and a hand computation of the ε bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.estimation.binomial import (
    beta_quantile,
    check_alpha,
    check_count,
    cp_lower,
    cp_lower_array,
    cp_upper,
    cp_upper_array,
    eps_from_bounds,
    eps_lower_bound,
)

CASES = [(0, 10), (1, 10), (7, 10), (10, 10), (3, 1000), (500, 1000), (999, 1000)]


@pytest.mark.parametrize(("k", "n"), CASES)
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3])
def test_the_bounds_solve_their_defining_binomial_equations(k, n, alpha):
    up, lo = cp_upper(k, n, alpha), cp_lower(k, n, alpha)
    # upper: P[Bin(n, u) <= k] = alpha; lower: P[Bin(n, l) >= k] = alpha
    if k < n:
        assert stats.binom.cdf(k, n, up) == pytest.approx(alpha, rel=1e-8)
    else:
        assert up == 1.0
    if k > 0:
        assert stats.binom.sf(k - 1, n, lo) == pytest.approx(alpha, rel=1e-8)
    else:
        assert lo == 0.0
    assert 0.0 <= lo <= k / n <= up <= 1.0


@pytest.mark.parametrize(("k", "n"), CASES)
def test_one_sided_bounds_are_the_ends_of_scipys_two_sided_interval_at_twice_alpha(k, n):
    # scipy finds these ends with a root finder (about 1e-10 relative), hence the tolerance
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert cp_lower(k, n, 0.05) == pytest.approx(ci.low, rel=1e-9, abs=1e-300)
    assert cp_upper(k, n, 0.05) == pytest.approx(ci.high, rel=1e-9)


@pytest.mark.parametrize("n", [1, 10, 1000])
def test_closed_forms_at_the_ends(n):
    # k = 0: (1 − u)^n = α; k = n: l^n = α; k = 1: 1 − (1 − l)^n = α
    a = 0.05
    assert cp_upper(0, n, a) == pytest.approx(1.0 - a ** (1.0 / n), rel=1e-13)
    assert cp_lower(n, n, a) == pytest.approx(a ** (1.0 / n), rel=1e-13)
    assert cp_lower(1, n, a) == pytest.approx(-math.expm1(math.log1p(-a) / n), rel=1e-13)


def test_beta_quantile_is_scipys_bit_for_bit():
    q = np.array([1e-6, 0.05, 0.5, 0.95])
    a, b = np.array([1.0, 3.0, 10.0, 200.0]), np.array([2.0, 0.5, 10.0, 7.0])
    assert np.array_equal(beta_quantile(q, a, b), stats.beta.ppf(q, a, b))
    assert beta_quantile(0.5, 2.0, 2.0).shape == ()  # scalars broadcast


def test_array_forms_match_the_scalar_forms():
    k = np.array([0, 1, 5, 10])
    n = np.array([10, 10, 10, 10])
    assert np.array_equal(cp_upper_array(k, n, 0.05), [cp_upper(int(x), 10, 0.05) for x in k])
    assert np.array_equal(cp_lower_array(k, n, 0.05), [cp_lower(int(x), 10, 0.05) for x in k])


def test_eps_lower_bound_by_hand():
    # P_lo and Q_hi at alpha/2 each, then ln((P_lo − δ)/Q_hi)
    p_lo = stats.beta.ppf(0.025, 900, 101)
    q_hi = stats.beta.ppf(0.975, 101, 900)
    want = math.log((p_lo - 0.01) / q_hi)
    assert eps_lower_bound(900, 1000, 100, 1000, 0.01, 0.05) == pytest.approx(want, rel=1e-12)
    # the counts the other way round give ln < 0: clipped to the trivial bound 0
    assert eps_lower_bound(100, 1000, 900, 1000, 0.0, 0.05) == 0.0
    # P_lo <= δ: 0
    assert eps_lower_bound(900, 1000, 100, 1000, 0.95, 0.05) == 0.0


def test_eps_from_bounds_clips_to_zero():
    got = eps_from_bounds([0.5, 0.5, 0.05, 0.2], [0.1, 0.6, 0.01, 0.0], 0.1)
    assert got[0] == pytest.approx(math.log(4.0))
    assert got[1] == 0.0  # negative logarithm
    assert got[2] == 0.0  # numerator below δ
    assert got[3] == math.inf  # Q_hi = 0: no finite bound from these counts


@pytest.mark.parametrize(("call", "message"), [
    (lambda: cp_upper(11, 10, 0.05), r"k must be in \[0, n=10\], got k=11"),
    (lambda: cp_upper(-1, 10, 0.05), r"k must be an integer >= 0, got k=-1"),
    (lambda: cp_lower(0, 0, 0.05), r"n must be an integer >= 1, got n=0"),
    (lambda: cp_lower(1.0, 10, 0.05), r"k must be an integer >= 0, got k=1.0"),
    (lambda: cp_lower(1, 10, 0.0), r"alpha must be in \(0.0, 1.0\), got alpha=0.0"),
    (lambda: cp_upper(1, 10, 1.0), r"alpha must be in \(0.0, 1.0\), got alpha=1.0"),
    (lambda: eps_lower_bound(5, 4, 1, 4, 0.0, 0.05), r"k_p must be in \[0, n_p=4\]"),
    (lambda: eps_lower_bound(1, 4, 1, 0, 0.0, 0.05), r"n_q must be an integer >= 1"),
    (lambda: eps_lower_bound(1, 4, 1, 4, 1.5, 0.05), r"delta must be in \[0.0, 1.0\]"),
    (lambda: eps_lower_bound(1, 4, 1, 4, 0.0, 2.0), r"alpha must be in"),
    (lambda: check_alpha(math.nan), r"alpha must be a finite real number"),
    (lambda: check_count("trials", True), r"trials must be an integer >= 0, got trials=True"),
    (lambda: check_count("trials", 2, lo=3), r"trials must be an integer >= 3, got trials=2"),
])
def test_each_parameter_is_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_fractional_counts_are_the_beta_quantiles_of_expected_counts():
    # the model's region choice predicts expected counts such as 0.4 or 999.6 of 1000
    k = np.array([0.0, 0.4, 12.5, 999.6, 1000.0])
    n = 1000.0
    lo = cp_lower_array(k, n, 0.05)
    hi = cp_upper_array(k, n, 0.05)
    for i, ki in enumerate(k):
        want_lo = 0.0 if ki <= 0 else stats.beta.ppf(0.05, ki, n - ki + 1)
        want_hi = 1.0 if ki >= n else stats.beta.ppf(0.95, ki + 1, n - ki)
        assert lo[i] == pytest.approx(want_lo, rel=1e-12, abs=0)
        assert hi[i] == pytest.approx(want_hi, rel=1e-12, abs=0)
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)
