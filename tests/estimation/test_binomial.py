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

from audit.enums import BoundRule
from audit.estimation.binomial import (
    beta_quantile,
    check_alpha,
    check_count,
    cp_lower,
    cp_lower_array,
    cp_upper,
    cp_upper_array,
    eps_by_rule,
    eps_from_bounds,
    eps_joint_bound,
    eps_joint_from_counts,
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


# ------------------------------------------------------------------ the joint bound (δ = 0)
JOINT_CASES = [(0, 0), (0, 7), (1, 0), (5, 5), (90, 10), (900, 100), (3, 40_000),
               (123_456, 45_678)]


@pytest.mark.parametrize(("k_num", "k_den"), JOINT_CASES)
@pytest.mark.parametrize("alpha", [0.05, 0.1, 1e-3])
def test_joint_bound_is_the_one_sided_clopper_pearson_bound_on_the_share(k_num, k_den, alpha):
    """Oracles: statsmodels' two-sided beta interval at 2α (its lower end is the one-sided
    bound at α) and scipy's one-sided exact binomtest interval, on k_num of k_num + k_den."""
    from statsmodels.stats.proportion import proportion_confint

    s = k_num + k_den
    got = eps_joint_bound(k_num, k_den, alpha)
    if s == 0:
        assert got == 0.0
        return
    lo_sm = proportion_confint(k_num, s, alpha=2 * alpha, method="beta")[0]
    lo_sp = stats.binomtest(k_num, s, alternative="greater").proportion_ci(
        confidence_level=1 - alpha, method="exact").low
    assert lo_sm == pytest.approx(lo_sp, rel=1e-6)  # (binomtest finds its root to ~1e-8)
    want = max(math.log(lo_sm / (1 - lo_sm)), 0.0) if lo_sm > 0 else 0.0
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert got == pytest.approx(float(eps_joint_from_counts(k_num, k_den, alpha)), rel=1e-15)


def test_joint_bound_at_the_ends_by_hand():
    # k_den = 0: θ_lo = α^(1/k_num), so ε = ln(θ_lo/(1 − θ_lo)), finite
    lo = 0.05 ** (1 / 20)
    assert eps_joint_bound(20, 0, 0.05) == pytest.approx(math.log(lo / (1 - lo)), rel=1e-12)
    assert eps_joint_bound(0, 20, 0.05) == 0.0  # no numerator hit: the floor
    assert eps_joint_bound(10, 30, 0.05) == 0.0  # a share below one half: the floor


def test_joint_bound_beats_two_intervals_where_masses_are_small_and_not_where_one_is_large():
    # the joint bound spends the whole α on one interval of the share; with a numerator mass
    # near 1 the Poisson counts are more variable than binomial ones, and it loses
    n = 100_000
    small = (eps_joint_bound(1_000, 100, 0.05), eps_lower_bound(1_000, n, 100, n, 0.0, 0.05))
    large = (eps_joint_bound(99_000, 50_000, 0.05),
             eps_lower_bound(99_000, n, 50_000, n, 0.0, 0.05))
    assert small[0] > small[1] and large[0] < large[1]


def test_eps_by_rule_dispatches_and_refuses_the_joint_rule_above_delta_zero():
    args = (900, 1000, 100, 1000)
    assert float(eps_by_rule(BoundRule.TWO_INTERVALS, *args, 0.0, 0.05)) == pytest.approx(
        eps_lower_bound(*args, 0.0, 0.05), rel=1e-15)
    assert float(eps_by_rule("joint", *args, 0.0, 0.05)) == pytest.approx(
        eps_joint_bound(900, 100, 0.05), rel=1e-15)
    with pytest.raises(ValueError, match="joint bound needs delta = 0, got delta=0.001"):
        eps_by_rule(BoundRule.JOINT, *args, 1e-3, 0.05)
    with pytest.raises(ValueError, match="rule must be one of"):
        eps_by_rule("both", *args, 0.0, 0.05)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: eps_joint_bound(-1, 3, 0.05), r"k_num must be an integer >= 0, got k_num=-1"),
    (lambda: eps_joint_bound(2, 1.5, 0.05), r"k_den must be an integer >= 0, got k_den=1.5"),
    (lambda: eps_joint_bound(2, 1, 0.0), r"alpha must be in \(0.0, 1.0\), got alpha=0.0"),
    (lambda: eps_joint_bound(True, 1, 0.1), r"k_num must be an integer >= 0, got k_num=True"),
])
def test_the_joint_bound_validates_each_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _conditional_chi2_p(x, y, theta: float, sums: range) -> float:
    """Pearson's χ² p-value of the counts x given x + y = s against Binomial(s, θ), pooled
    over ``sums`` (cells expecting fewer than 5 merged into one)."""
    stat, df = 0.0, 0
    for s in sums:
        sel = x[(x + y) == s]
        obs = np.bincount(sel, minlength=s + 1).astype(np.float64)
        exp = stats.binom.pmf(np.arange(s + 1), s, theta) * sel.size
        keep = exp >= 5
        o = np.append(obs[keep], obs[~keep].sum())
        e = np.append(exp[keep], exp[~keep].sum())
        o, e = (o, e) if e[-1] > 0 else (o[:-1], e[:-1])
        stat += float(((o - e) ** 2 / e).sum())
        df += o.size - 1
    return float(stats.chi2.sf(stat, df))


@pytest.mark.statistical
def test_poisson_counts_given_their_sum_are_binomial_in_the_share():
    """The identity the joint bound rests on, by simulation: N_P, N_Q ~ Poisson(λ), each draw
    in S with probability P(S) (resp. Q(S)); then X given X + Y = s is Binomial(s, θ),
    θ = P(S)/(P(S) + Q(S)). A χ² test at 1e-3 (false-failure probability 1e-3, fixed seed);
    the same test on FIXED numbers of draws (N_P = N_Q = λ, where the identity is false)
    rejects (p-value 0 in float64 here), so the check has teeth."""
    rng = np.random.default_rng(20261204)
    reps, lam, p, q = 400_000, 20, 0.3, 0.1
    theta, sums = p / (p + q), range(4, 15)
    x = rng.binomial(rng.poisson(lam, reps), p)
    y = rng.binomial(rng.poisson(lam, reps), q)
    assert _conditional_chi2_p(x, y, theta, sums) > 1e-3
    xf, yf = rng.binomial(lam, p, reps), rng.binomial(lam, q, reps)
    assert _conditional_chi2_p(xf, yf, theta, sums) < 1e-6


@pytest.mark.statistical
def test_the_joint_bound_fails_at_most_at_rate_alpha_and_spends_it():
    """At the boundary ε = ln(P(S)/Q(S)) exactly, on Poisson counts: exceedances ≤ the
    Bin(reps, α) 1 − 1e-3 quantile (false failure ≤ 1e-3), and ≥ its 1e-3 quantile at 0.7 α
    (the bound is near-exact at these counts: 4.8 % measured at 2·10⁴ repetitions; a bound
    at α/2 would sit near 2.5 % and fail this)."""
    rng = np.random.default_rng(7)
    reps, lam, p, eps, alpha = 6_000, 20_000, 0.15, 1.0, 0.05
    x = rng.poisson(lam * p, reps)
    y = rng.poisson(lam * p / math.e, reps)
    over = int((eps_joint_from_counts(x, y, alpha) > eps).sum())
    assert over <= stats.binom.ppf(1 - 1e-3, reps, alpha)
    assert over >= stats.binom.ppf(1e-3, reps, 0.7 * alpha)
