"""Clopper–Pearson bounds and empirical ε / trade-off estimators: oracles and validity."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from audit.estimation import (
    Region,
    TradeoffPoints,
    cp_lower,
    cp_upper,
    empirical_tradeoff_points,
    eps_lower_bound,
    gdp_mu_lower_bound,
    grid_bound,
    region_bound,
    select_region_on_pilot,
    tradeoff_violation,
)

ALPHA = 0.05


def slack(reps: int, alpha: float, fail_prob: float = 1e-3) -> float:
    """Largest failure fraction a valid procedure (failure prob ≤ alpha) exceeds with
    probability ≤ fail_prob: the (1 − fail_prob) quantile of Bin(reps, alpha) / reps."""
    return stats.binom.ppf(1 - fail_prob, reps, alpha) / reps


@pytest.mark.parametrize("n", [1, 7, 50, 1000])
def test_cp_matches_statsmodels_and_scipy(n):
    for k in sorted({0, 1, n // 3, n - 1, n}):
        lo2, hi2 = proportion_confint(k, n, alpha=2 * ALPHA, method="beta")
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * ALPHA, method="exact")
        assert cp_upper(k, n, ALPHA) == pytest.approx(hi2, abs=1e-12)
        assert cp_lower(k, n, ALPHA) == pytest.approx(lo2, abs=1e-12)
        assert cp_upper(k, n, ALPHA) == pytest.approx(ci.high, abs=1e-12)
        assert cp_lower(k, n, ALPHA) == pytest.approx(ci.low, abs=1e-12)


def test_cp_edge_cases():
    assert cp_upper(5, 5, 0.1) == 1.0
    assert cp_lower(0, 5, 0.1) == 0.0
    assert cp_upper(0, 10, 0.1) == pytest.approx(1 - 0.1 ** (1 / 10))
    assert cp_lower(10, 10, 0.1) == pytest.approx(0.1 ** (1 / 10))


@pytest.mark.parametrize("n", [5, 20, 60])
def test_cp_exact_coverage_and_one_sidedness(n):
    """Exact non-coverage P[p > cp_upper(K)] summed from the pmf: ≤ α for every p, and its
    maximum over p exceeds α/2 — impossible for the upper end of a two-sided level-α interval
    (whose upper non-coverage is ≤ α/2), so this fails if a two-sided bound were used."""
    ks = np.arange(n + 1)
    up = np.array([cp_upper(int(k), n, ALPHA) for k in ks])
    lo = np.array([cp_lower(int(k), n, ALPHA) for k in ks])
    worst_up, worst_lo = 0.0, 0.0
    for p in np.linspace(0.0, 1.0, 2001):
        pmf = stats.binom.pmf(ks, n, p)
        worst_up = max(worst_up, pmf[up < p].sum())
        worst_lo = max(worst_lo, pmf[lo > p].sum())
    assert worst_up <= ALPHA + 1e-12 and worst_lo <= ALPHA + 1e-12
    assert worst_up > 0.7 * ALPHA and worst_lo > 0.7 * ALPHA


def test_eps_lower_bound_monotone_and_zero_cases():
    base = eps_lower_bound(900, 1000, 100, 1000, 0.0, ALPHA)
    assert 0 < base < np.log(9)
    assert eps_lower_bound(950, 1000, 100, 1000, 0.0, ALPHA) > base  # more P mass
    assert eps_lower_bound(900, 1000, 50, 1000, 0.0, ALPHA) > base  # less Q mass
    assert eps_lower_bound(900, 1000, 100, 1000, 0.1, ALPHA) < base  # larger δ
    assert eps_lower_bound(900, 1000, 100, 1000, 0.0, 0.001) < base  # more confidence
    assert eps_lower_bound(9000, 10000, 1000, 10000, 0.0, ALPHA) > base  # more data
    assert eps_lower_bound(100, 1000, 900, 1000, 0.0, ALPHA) == 0.0  # negative log
    assert eps_lower_bound(10, 1000, 0, 1000, 0.5, ALPHA) == 0.0  # numerator ≤ δ
    exact = np.log(cp_lower(900, 1000, ALPHA / 2) / cp_upper(100, 1000, ALPHA / 2))
    assert base == pytest.approx(exact)


@pytest.mark.statistical
@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_eps_lower_bound_validity_monte_carlo(delta):
    """Worst case: true ε of the region exactly ln((P(S) − δ)/Q(S)); failure rate ≤ α + slack
    (slack: Bin(reps, α) quantile at 1e-3, i.e. a false alarm probability ≤ 1e-3)."""
    rng = np.random.default_rng(12345)
    reps, n = 2000, 2000
    pS, qS = 0.3, 0.1
    eps_true = np.log((pS - delta) / qS)
    kp = rng.binomial(n, pS, reps)
    kq = rng.binomial(n, qS, reps)
    fails = sum(
        eps_lower_bound(int(a), n, int(b), n, delta, ALPHA) > eps_true
        for a, b in zip(kp, kq, strict=True)
    )
    print("failure fraction", fails / reps, "limit", slack(reps, ALPHA))
    assert fails / reps <= slack(reps, ALPHA)
    # The union bound splits α over two intervals, so failures are typically well below α.


def _histogram_law():
    """A 12-bin law with likelihood-ratio score; P shifted towards high bins."""
    x = np.linspace(-3, 3, 12)
    p = stats.norm.pdf(x, 0.6)
    q = stats.norm.pdf(x, 0.0)
    p, q = p / p.sum(), q / q.sum()
    return p, q, np.log(p / q)


def _region_truth(p, q, score, region, delta):
    m = region.mask(score)
    num, den = (p[m].sum(), q[m].sum()) if region.direction.value == "z_vs_zprime" else (
        q[m].sum(),
        p[m].sum(),
    )
    return np.log((num - delta) / den) if num > delta else 0.0


@pytest.mark.statistical
def test_pilot_procedure_validity_monte_carlo():
    rng = np.random.default_rng(777)
    p, q, score = _histogram_law()
    reps, n_pilot, n = 600, 300, 3000
    delta = 0.01
    fails = 0
    for _ in range(reps):
        region = select_region_on_pilot(
            rng.multinomial(n_pilot, p), rng.multinomial(n_pilot, q), score, delta
        )
        res = region_bound(rng.multinomial(n, p), rng.multinomial(n, q), score, region, delta,
                           ALPHA)
        assert res.method == "pilot" and res.n_regions == 1
        fails += res.eps_lower > _region_truth(p, q, score, region, delta)
    print("failure fraction", fails / reps, "limit", slack(reps, ALPHA))
    assert fails / reps <= slack(reps, ALPHA)


@pytest.mark.statistical
def test_bonferroni_grid_validity_monte_carlo():
    rng = np.random.default_rng(999)
    p, q, score = _histogram_law()
    thresholds = np.quantile(score, [0.2, 0.5, 0.8, 0.95])
    reps, n, delta = 600, 2000, 0.0
    fails = 0
    for _ in range(reps):
        res = grid_bound(rng.multinomial(n, p), rng.multinomial(n, q), score, thresholds,
                         delta, ALPHA)
        assert res.n_regions == 8 and res.method == "bonferroni-grid"
        region = Region(res.direction, res.threshold)
        fails += res.eps_lower > _region_truth(p, q, score, region, delta)
    print("failure fraction", fails / reps, "limit", slack(reps, ALPHA))
    assert fails / reps <= slack(reps, ALPHA)


@pytest.mark.slow
@pytest.mark.statistical
def test_pilot_procedure_validity_monte_carlo_large():
    rng = np.random.default_rng(4242)
    p, q, score = _histogram_law()
    reps, delta = 5000, 0.0
    fails = 0
    for _ in range(reps):
        region = select_region_on_pilot(
            rng.multinomial(200, p), rng.multinomial(200, q), score, delta
        )
        res = region_bound(rng.multinomial(500, p), rng.multinomial(500, q), score, region,
                           delta, ALPHA)
        fails += res.eps_lower > _region_truth(p, q, score, region, delta)
    print("failure fraction", fails / reps, "limit", slack(reps, ALPHA))
    assert fails / reps <= slack(reps, ALPHA)


def test_region_and_grid_results_are_consistent():
    cp_ = np.array([1, 5, 20, 74])
    cq_ = np.array([60, 25, 10, 5])
    score = np.log((cp_ + 1) / (cq_ + 1))
    res = region_bound(cp_, cq_, score, Region("z_vs_zprime", score[2]), 0.0, ALPHA)
    assert (res.k_p, res.n_p, res.k_q, res.n_q) == (94, 100, 15, 100)
    assert res.eps_lower == pytest.approx(eps_lower_bound(94, 100, 15, 100, 0.0, ALPHA))
    res2 = region_bound(cp_, cq_, score, Region("zprime_vs_z", score[1]), 0.0, ALPHA)
    assert (res2.k_p, res2.k_q) == (6, 85)
    assert res2.eps_lower == pytest.approx(eps_lower_bound(85, 100, 6, 100, 0.0, ALPHA))
    g = grid_bound(cp_, cq_, score, score, 0.0, ALPHA)
    assert g.n_regions == 8
    assert g.eps_lower <= max(
        eps_lower_bound(94, 100, 15, 100, 0.0, ALPHA / 8),
        eps_lower_bound(85, 100, 6, 100, 0.0, ALPHA / 8),
        eps_lower_bound(74, 100, 5, 100, 0.0, ALPHA / 8),
        eps_lower_bound(60, 100, 1, 100, 0.0, ALPHA / 8),
    ) + 1e-12
    pick = select_region_on_pilot(cp_, cq_, score, 0.0)
    assert isinstance(pick, Region)


def test_tradeoff_points_orientation_and_violation():
    # P and Q far apart: threshold tests have tiny errors in both orders.
    cp_ = np.array([0, 0, 100, 900])
    cq_ = np.array([900, 100, 0, 0])
    score = np.array([-2.0, -1.0, 1.0, 2.0])
    pts = empirical_tradeoff_points(cp_, cq_, score, [0.0], ALPHA)
    assert isinstance(pts, TradeoffPoints) and pts.n_intervals == 4
    assert pts.order == ("T(P,Q)", "T(Q,P)")
    # α = P(score ≤ 0) = 0, β = Q(score > 0) = 0: both upper bounds ≈ −ln(α/4)/n.
    assert np.all(pts.alpha_hi < 0.01) and np.all(pts.beta_hi < 0.01)
    assert pts.alpha_hi[0] == pytest.approx(cp_upper(0, 1000, ALPHA / 4))

    def identity(a):  # perfect privacy: T = 1 − α
        return 1.0 - a

    assert tradeoff_violation(pts, identity) > 0.9
    mu = gdp_mu_lower_bound(pts)
    assert mu > 4.0  # Φ⁻¹(1 − 0.0045) − Φ⁻¹(0.0045) ≈ 5.2

    # Identical laws: no violation of the identity, μ bound 0.
    same = empirical_tradeoff_points(cq_, cq_, score, [-1.5, 0.0], ALPHA)
    assert tradeoff_violation(same, identity) <= 0.0
    assert gdp_mu_lower_bound(same) == 0.0


@pytest.mark.statistical
def test_gdp_mu_lower_bound_validity_monte_carlo():
    rng = np.random.default_rng(2024)
    mu_true = 1.0
    edges = np.linspace(-3, 4, 15)
    cdf_p = stats.norm.cdf(edges, mu_true)
    cdf_q = stats.norm.cdf(edges, 0.0)
    p = np.diff(np.concatenate([[0.0], cdf_p, [1.0]]))
    q = np.diff(np.concatenate([[0.0], cdf_q, [1.0]]))
    score = np.arange(p.size, dtype=float)  # monotone in the likelihood ratio
    reps, n = 400, 5000
    fails = 0
    for _ in range(reps):
        pts = empirical_tradeoff_points(
            rng.multinomial(n, p), rng.multinomial(n, q), score, [4.5, 7.5, 10.5], ALPHA
        )
        fails += gdp_mu_lower_bound(pts) > mu_true
    print("failure fraction", fails / reps, "limit", slack(reps, ALPHA))
    assert fails / reps <= slack(reps, ALPHA)


def test_validation():
    with pytest.raises(ValueError, match="k must be in"):
        cp_upper(6, 5, 0.1)
    with pytest.raises(ValueError, match="k must be an integer >= 0"):
        cp_lower(-1, 5, 0.1)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        cp_upper(0, 0, 0.1)
    for bad in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"alpha must be in \(0(\.0)?, 1(\.0)?\)"):
            cp_upper(1, 5, bad)
    for bad in (-0.1, 1.1):
        with pytest.raises(ValueError, match="delta must be in"):
            eps_lower_bound(1, 5, 1, 5, bad, 0.1)
    with pytest.raises(ValueError, match="k_q must be in"):
        eps_lower_bound(1, 5, 7, 5, 0.0, 0.1)
    with pytest.raises(ValueError, match="counts_p must be >= 0"):
        grid_bound([1, -1, 3], [1, 1, 1], [0, 1, 2], [1], 0.0, 0.1)
    with pytest.raises(ValueError, match="same length"):
        grid_bound([1, 1, 3], [1, 1], [0, 1, 2], [1], 0.0, 0.1)
    with pytest.raises(ValueError, match="direction must be one of"):
        Region("sideways", 0.0)
    with pytest.raises(ValueError, match="alpha must be in"):
        empirical_tradeoff_points([1, 2], [2, 1], [0, 1], [0.5], 1.0)


def test_plug_in_estimate_by_hand():
    from audit.estimation import EpsLowerResult

    def res(direction, kp, kq, delta=0.0):
        return EpsLowerResult(0.0, direction, 0.0, kp, 100, kq, 200, 0.0, 1.0, 0.05, delta,
                              "pilot", 1)

    assert res("z_vs_zprime", 50, 50).plug_in() == pytest.approx(math.log(0.5 / 0.25))
    assert res("zprime_vs_z", 10, 100).plug_in() == pytest.approx(math.log(0.5 / 0.1))
    assert res("z_vs_zprime", 50, 50, delta=0.1).plug_in() == pytest.approx(math.log(0.4 / 0.25))
    assert res("z_vs_zprime", 5, 50, delta=0.1).plug_in() == 0.0
    assert res("z_vs_zprime", 50, 0).plug_in() == math.inf


def test_pilot_selection_breaks_ties_towards_the_smaller_region():
    # The pilot sees z only in bin 5 and z' only in bins 0-1: every region {score >= t} with
    # t between the scores of bins 2 and 5 has the same pilot counts; the smallest is chosen,
    # so main-run draws of z' in the never-seen bins 2-4 are not counted against the bound.
    from audit.estimation import select_region_on_pilot

    cp = np.array([0, 0, 0, 0, 0, 50, 0])
    cq = np.array([30, 20, 0, 0, 0, 0, 0])
    score = np.array([-3.0, -2.0, 0.5, 0.6, 0.7, 4.0, -1.0])
    region = select_region_on_pilot(cp, cq, score, 0.0, pilot_alpha=0.05)
    assert region.direction.value == "z_vs_zprime" and region.threshold == 4.0
