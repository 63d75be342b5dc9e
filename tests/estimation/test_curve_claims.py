"""Tests for audit.estimation.curve_claims: curve-claim audits on one held-out region.

Oracles: counts summed by hand, ``scipy.stats.beta`` quantiles for the Clopper–Pearson
bounds, ``scipy.stats.norm`` for the Gaussian boundary, ``scipy.stats.binom`` for the null
studies' acceptance limits (each test's failure probability is stated beside it).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.enums import CurveFamily, Direction
from audit.estimation.curve_claims import (
    CurveClaimResult,
    audit_curve_claim,
    choose_claim_region,
    claim_errors,
    curve_claim_bound,
)
from audit.estimation.regions import Region
from audit.theory.tradeoff.families import (
    GaussianFamily,
    PointsCurve,
    SubsampledGaussianFamily,
)

CP = np.array([5, 15, 30, 50])  # z (P): high scores
CQ = np.array([50, 30, 15, 5])
SCORE = np.array([-1.5, -0.5, 0.5, 1.5])
G = GaussianFamily()


def _cp_upper(k, n, a):
    return 1.0 if k == n else stats.beta.ppf(1 - a, k + 1, n - k)


@pytest.mark.parametrize(("region", "k_fpr", "k_fnr"), [
    (Region(Direction.Z_VS_ZPRIME, 0.5), 15 + 5, 5 + 15),  # reject z' on {score >= 0.5}
    (Region(Direction.ZPRIME_VS_Z, -0.5), 50 + 30, 30 + 50),  # reject z' on {score <= -0.5}
])
def test_errors_are_hand_counted_with_clopper_pearson_bounds(region, k_fpr, k_fnr):
    k_a, n_a, k_b, n_b, a_hi, b_hi = claim_errors(CP, CQ, SCORE, region, 0.1)
    assert (k_a, n_a, k_b, n_b) == (k_fpr, 100, k_fnr, 100)
    assert a_hi == pytest.approx(_cp_upper(k_fpr, 100, 0.05), rel=1e-12)
    assert b_hi == pytest.approx(_cp_upper(k_fnr, 100, 0.05), rel=1e-12)


def test_the_gaussian_verdict_is_the_closed_form_and_its_epsilon():
    region = Region(Direction.Z_VS_ZPRIME, 0.5)
    r = curve_claim_bound(CP, CQ, SCORE, region, G, 1e-5, 0.1)
    mu = stats.norm.ppf(1 - r.fpr_hi) - stats.norm.ppf(r.fnr_hi)
    assert r.refuted and r.theta == pytest.approx(mu, rel=1e-12)
    assert r.eps_family == G.epsilon(r.theta, 1e-5) and r.curve is CurveFamily.GAUSSIAN
    # the reversed score's test on these counts is above the identity: nothing refuted
    none = curve_claim_bound(CP, CQ, SCORE, Region(Direction.ZPRIME_VS_Z, -0.5), G, 1e-5, 0.1)
    assert not none.refuted and none.theta == 0.0 and none.eps_family == 0.0


def test_a_points_claim_has_a_verdict_and_no_family_epsilon():
    region = Region(Direction.Z_VS_ZPRIME, 0.5)
    weak = PointsCurve([[0, 1], [0.5, 0.2], [1, 0]])  # f(0.3) ~ 0.52 > beta_hi ~ 0.29
    r = curve_claim_bound(CP, CQ, SCORE, region, weak, 0.0, 0.1)
    assert r.refuted and r.theta is None and r.eps_family is None
    low = PointsCurve([[0, 0.5], [0.5, 0.0], [1, 0]])
    assert not curve_claim_bound(CP, CQ, SCORE, region, low, 0.0, 0.1).refuted


def test_the_result_round_trips_and_says_what_it_bounds():
    r = curve_claim_bound(CP, CQ, SCORE, Region(Direction.Z_VS_ZPRIME, 0.5),
                          SubsampledGaussianFamily(0.5), 1e-5, 0.1)
    assert CurveClaimResult.from_dict(r.to_dict()) == r
    assert r.to_dict()["family"] == {"curve": "subsampled-gaussian", "p_star": 0.5}
    assert "only if it is in the family" in r.describe()


def test_the_region_choice_reads_the_pilot_in_both_orientations():
    # pilot favouring a mid threshold; the reversed score is chosen as zprime_vs_z
    r = choose_claim_region(CP * 10, CQ * 10, SCORE, G, trials=10_000, alpha=0.05)
    assert r.direction is Direction.Z_VS_ZPRIME
    rev = choose_claim_region(CP * 10, CQ * 10, -SCORE, G, trials=10_000, alpha=0.05)
    assert rev.direction is Direction.ZPRIME_VS_Z and rev.threshold == -r.threshold
    # no signal at all: the first threshold (nothing will be refuted there either)
    flat = choose_claim_region(CQ, CQ, SCORE, G, trials=100, alpha=0.05)
    assert flat == Region(Direction.Z_VS_ZPRIME, -1.5)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_gaussian_mechanism_is_bounded_tightly_in_every_orientation(swap, sign):
    # μ = 1, 5·10⁴ per side: θ* is within 0.06 of μ in all but ~1e-6 of seeds (sd ≈ 0.009)
    rng = np.random.default_rng(43)
    z, zp = sign * rng.normal(1.0, 1.0, 50_000), sign * rng.normal(0.0, 1.0, 50_000)
    if swap:
        z, zp = zp, z
    r = audit_curve_claim(z, zp, G, 1e-5)
    assert 0.94 < r.theta < 1.0
    assert r.eps_family < G.epsilon(1.0, 1e-5)


def test_a_stronger_claim_is_refuted_and_a_mixture_is_bounded_in_its_family():
    rng = np.random.default_rng(7)
    n = 50_000
    z = rng.standard_normal(n) + 2.0 * (rng.random(n) < 0.3)
    zp = rng.standard_normal(n)
    fam = SubsampledGaussianFamily(0.3)
    r = audit_curve_claim(z, zp, fam, 1e-5)
    # the claim C_0.3(G_1.5) is refuted, the truth C_0.3(G_2) is not (failure ≤ 0.05 each)
    assert 1.5 < r.theta < 2.0
    assert r.eps_family < fam.epsilon(2.0, 1e-5)


def test_null_audits_refute_the_true_member_at_most_at_the_level_reduced():
    # 300 audits of G_1 at 2000 calls per side, 90 % confidence: exceedances ~ Bin(300, ≤ 0.1);
    # the 0.999 quantile of Bin(300, 0.1) bounds the count with failure probability ≤ 1e-3
    rng = np.random.default_rng(2026)
    exceed = sum(audit_curve_claim(rng.normal(1.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000), G,
                                   1e-5, confidence=0.9, pilot_fraction=0.1,
                                   n_thresholds=32).theta > 1.0 for _ in range(300))
    assert exceed <= stats.binom.ppf(0.999, 300, 0.1)


def test_a_points_curve_the_mechanism_satisfies_is_refuted_at_most_at_the_level():
    # G_1 is (ε, δ)-DP at δ = 0.1, so f_{ε,δ} (its four vertices) holds and touches G_1 at
    # its kink; 200 audits at 2000 calls per side, 90 % confidence: refutations ~ Bin(200,
    # ≤ 0.1), bounded by its 0.999 quantile (failure probability ≤ 1e-3)
    d = 0.1
    e = np.exp(G.epsilon(1.0, d))
    kink = (1 - d) / (1 + e)
    curve = PointsCurve([[0.0, 1 - d], [kink, kink], [1 - d, 0.0], [1.0, 0.0]])
    rng = np.random.default_rng(11)
    refuted = sum(audit_curve_claim(rng.normal(1.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000),
                                    curve, d, confidence=0.9, pilot_fraction=0.1,
                                    n_thresholds=32).refuted for _ in range(200))
    assert refuted <= stats.binom.ppf(0.999, 200, 0.1)
    # and a curve above G_1 (the Gaussian of μ = 0.8's chords) is refuted at 5·10⁴ calls
    a = np.linspace(0.0, 1.0, 41)
    above = PointsCurve(np.c_[a, GaussianFamily().member(0.8)(a)])
    assert audit_curve_claim(rng.normal(1.0, 1.0, 50_000), rng.normal(0.0, 1.0, 50_000),
                             above, d).refuted


@pytest.mark.slow
@pytest.mark.parametrize(("p_star", "mu"), [(None, 0.5), (None, 1.0), (None, 2.0),
                                             (0.1, 1.0), (0.1, 2.0), (0.3, 1.0), (0.3, 2.0)])
def test_null_studies_of_the_benchmark_settings(p_star, mu):
    # 1000 audits at 5·10⁴ calls per side, 95 % confidence, the mechanism exactly the family
    # member μ: eps_family > true ε at most the 0.999 quantile of Bin(1000, 0.05) (failure
    # ≤ 1e-3 per setting for a valid audit)
    fam = G if p_star is None else SubsampledGaussianFamily(p_star)
    true = fam.epsilon(mu, 1e-5)
    exceed = 0
    for seed in range(1000):
        rng = np.random.default_rng(seed)
        shift = mu if p_star is None else mu * (rng.random(50_000) < p_star)
        z, zp = rng.standard_normal(50_000) + shift, rng.standard_normal(50_000)
        exceed += audit_curve_claim(z, zp, fam, 1e-5, confidence=0.95).eps_family > true
    assert exceed <= stats.binom.ppf(0.999, 1000, 0.05)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"delta": 2.0}, r"delta must be in \[0(\.0)?, 1(\.0)?\], got delta=2\.0"),
    ({"confidence": 1.0}, r"confidence must be in \(0\.0, 1\.0\), got confidence=1\.0"),
    ({"pilot_fraction": 0.0}, r"pilot_fraction must be in \(0\.0, 1\.0\), got pilot_fraction=0\.0"),
    ({"n_thresholds": 0}, r"n_thresholds must be an integer >= 1"),
    ({"samples_z": np.ones(5)}, r"samples_z must be a 1-D array of at least 20"),
    ({"samples_zprime": np.r_[np.ones(30), np.nan]}, r"samples_zprime must be finite"),
    ({"policy": "strict"}, r"policy must be an audit\.policy\.AuditPolicy"),
    ({"family": "gaussian"}, r"family must be a curve family or curve"),
])
def test_bad_inputs_name_the_parameter(kwargs, message):
    args = {"samples_z": np.arange(100.0), "samples_zprime": np.arange(100.0), "family": G,
            "delta": 1e-5}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        audit_curve_claim(**args)


def test_bad_counts_and_regions_are_refused():
    with pytest.raises(ValueError, match="region must be"):
        claim_errors(CP, CQ, SCORE, (Direction.Z_VS_ZPRIME, 0.5), 0.1)
    with pytest.raises(ValueError, match="alpha must be in"):
        claim_errors(CP, CQ, SCORE, Region(Direction.Z_VS_ZPRIME, 0.5), 1.5)
    with pytest.raises(ValueError, match="trials must be an integer >= 1"):
        choose_claim_region(CP, CQ, SCORE, G, trials=0, alpha=0.05)


# --------------------------------------------------------------------------- the joint region
def test_the_product_level_solves_fishers_equation():
    from scipy import integrate

    from audit.estimation.curve_claims import fisher_product_level

    for alpha in (0.01, 0.05, 0.1, 0.5):
        c = fisher_product_level(alpha)
        assert c * (1 - np.log(c)) <= alpha < (c * (1 + 1e-12)) * (1 - np.log(c * (1 + 1e-12)))
        # P(U V <= c) for independent uniforms, by quadrature: integral of min(1, c/u)
        mass = integrate.quad(lambda u, c=c: min(1.0, c / u), 0, 1, points=[c])[0]
        assert mass == pytest.approx(alpha, rel=1e-9)


def _theta_star(k_a, n, k_b, alpha, family=G):
    from audit.estimation.curve_claims import joint_region_corners

    a, b = joint_region_corners(k_a, n, k_b, n, alpha)
    return float(np.min(family.boundary(a, b)))


@pytest.mark.parametrize(("mu0", "a0"), [(1.0, 0.3), (1.0, 0.05), (2.0, 0.2), (0.5, 0.5)])
def test_the_joint_region_refutes_a_true_member_at_most_at_the_level_exactly(mu0, a0):
    # every outcome of two binomials of 40 draws enumerated: the probability that a
    # mechanism whose errors (a0, G_mu0(a0)) lie on its curve has mu0 refuted is <= alpha
    n, alpha = 40, 0.1
    b0 = float(stats.norm.cdf(stats.norm.ppf(1 - a0) - mu0))
    k = np.arange(n + 1)
    pa, pb = stats.binom.pmf(k, n, a0), stats.binom.pmf(k, n, b0)
    miss = sum(pa[i] * pb[j] for i in k for j in k
               if pa[i] * pb[j] > 1e-14 and _theta_star(i, n, j, alpha) > mu0)
    assert miss <= alpha
    # the separate intervals' rule on the same outcomes is more conservative
    two = sum(pa[i] * pb[j] for i in k for j in k
              if float(G.boundary(_cp_upper(i, n, alpha / 2), _cp_upper(j, n, alpha / 2)))
              > mu0)
    assert two <= miss


def test_the_joint_region_is_tighter_than_two_intervals_where_both_sides_count():
    n, alpha = 50_000, 0.05
    for k_a, k_b in ((15_000, 20_000), (2_000, 30_000), (500, 45_000)):
        joint = _theta_star(k_a, n, k_b, alpha)
        two = float(G.boundary(_cp_upper(k_a, n, alpha / 2), _cp_upper(k_b, n, alpha / 2)))
        plug = float(G.boundary(k_a / n, k_b / n))
        assert two < joint < plug


@pytest.mark.parametrize(("args", "message"), [
    ((5, 0, 1, 10), r"n_a must be in \(0(\.0)?, inf\), got n_a=0"),
    ((5, 10, 1, -1), r"n_b must be in \(0(\.0)?, inf\), got n_b=-1"),
    ((11, 10, 1, 10), r"k_a must be in \[0(\.0)?, 10(\.0)?\], got k_a=11"),
    ((5, 10, -1, 10), r"k_b must be in \[0(\.0)?, 10(\.0)?\], got k_b=-1"),
])
def test_the_joint_region_refuses_counts_outside_their_sizes(args, message):
    from audit.estimation.curve_claims import fisher_product_level, joint_region_corners

    with pytest.raises(ValueError, match=message):
        joint_region_corners(*args, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        joint_region_corners(5, 10, 1, 10, 1.5)
    with pytest.raises(ValueError, match="alpha"):
        fisher_product_level(0.0)
