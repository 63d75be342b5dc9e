"""Several releases from one incomplete dataset (docs/THEORY.md §9): the check table, every
closed form against an independent computation, and the hypothesis checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpl
from scipy import integrate, stats

from audit.enums import MaskRegime
from audit.mixture import Mixture
from audit.theory import accountant as acc
from audit.theory import releases as rel
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    amplify_tradeoff,
    delta_for_epsilon,
    epsilon_for_delta,
)

# The check table: record-level MCAR, q = p* = 0.1, a record contributing Δ against one
# contributing 0, the same Gaussian query k times at μ = Δ/σ = 0.2064 (the classical
# calibration ε = 1, δ = 1e-5: μ = 1/√(2 ln(1.25/δ))), final δ = 1e-5.
MU, Q_OBS, DELTA = 1 / math.sqrt(2 * math.log(1.25e5)), 0.1, 1e-5
KS = (1, 10, 30, 100)
NO_MISSING = (0.751, 2.688, 5.048, 10.394)
SHARED = (0.083, 0.645, 2.206, 6.937)
FRESH_EXACT = (0.083, 0.240, 0.419, 0.786)
FRESH_COMPOSED = (0.083, 0.243, 0.431, 0.822)


def _count_pair(mu: float = MU, q: float = Q_OBS) -> tuple[Mixture, Mixture]:
    return (Mixture([q, 1 - q], [mu, 0.0], "gaussian", 1.0),
            Mixture([1.0], [0.0], "gaussian", 1.0))


# ----------------------------------------------------------------------------- the table
@pytest.mark.parametrize("i", range(len(KS)))
def test_check_table_no_missingness_and_shared_masks(i):
    k = KS[i]
    mu_k = rel.repeated_gaussian_mu(MU, k)
    assert round(epsilon_for_delta(GaussianTradeoff(mu_k), DELTA), 3) == NO_MISSING[i]
    closed = rel.shared_masks_epsilon(GaussianTradeoff(mu_k), Q_OBS, DELTA)
    exact = rel.shared_pair_epsilon(*_count_pair(), k, DELTA)
    assert round(exact.value, 3) == SHARED[i]
    assert exact.value == pytest.approx(closed, abs=1e-9)  # the pair attains the bound
    # ln(1 + q(e^{ε_k} − 1)) with ε_k read at δ/q
    e_k = epsilon_for_delta(GaussianTradeoff(mu_k), DELTA / Q_OBS)
    assert closed == pytest.approx(math.log1p(Q_OBS * math.expm1(e_k)), rel=1e-12)
    assert rel.shared_masks_dp(e_k, DELTA / Q_OBS, Q_OBS) == pytest.approx((closed, DELTA))


@pytest.mark.parametrize("i", range(len(KS)))
def test_check_table_fresh_masks(i):
    k = KS[i]
    exact = rel.fresh_pair_epsilon(*_count_pair(), k, DELTA)
    assert round(exact.value, 3) == FRESH_EXACT[i]
    assert exact.error < 0.011
    composed = rel.fresh_masks_epsilon(GaussianTradeoff(MU), Q_OBS, k, DELTA)
    assert composed >= exact.value - exact.error  # a bound on the pair
    assert abs(composed - FRESH_COMPOSED[i]) <= 0.1 * FRESH_COMPOSED[i]
    assert composed >= FRESH_COMPOSED[i] - 5e-4  # pessimistic: never below the exact curve
    # composing the per-release guarantee understates the shared-mask loss
    assert composed < SHARED[i] or k == 1


# ----------------------------------------------------------------------------- cross-checks
def test_fresh_composition_k1_is_the_closed_form_of_section_7():
    for f, d in ((GaussianTradeoff(0.5), 1e-6), (LaplaceTradeoff(0.7), 1e-4),
                 (DPTradeoff(0.8, 0.0), 1e-3)):
        closed = epsilon_for_delta(amplify_tradeoff(f, 0.3), d)
        pld = rel.fresh_masks_epsilon(f, 0.3, 1, d)
        assert closed - 1e-9 <= pld <= closed + 2e-4


def _delta_two_fold_quadrature(mu: float, p: float, eps: float) -> float:
    """δ of C_p(G_μ)^{⊗2} at ε by 1-D quadrature: E_ω[δ_1(ε − L)], ω the symmetric PLD of
    C_p(G_μ) written through the pair (p N(μ) + (1 − p) N(0), N(0)) on {L > 0}."""
    curve = amplify_tradeoff(GaussianTradeoff(mu), p)

    def d1(t: float) -> float:  # hockey stick of the symmetric pair at any real t
        if t >= 0:
            return delta_for_epsilon(curve, t)
        return -math.expm1(t) + math.exp(t) * delta_for_epsilon(curve, -t)

    def loss(x):
        return math.log1p(p * math.expm1(mu * x - mu * mu / 2))

    def pos(x):
        px = p * stats.norm.pdf(x - mu) + (1 - p) * stats.norm.pdf(x)
        return px * d1(eps - loss(x)) + stats.norm.pdf(x) * d1(eps + loss(x))

    x0 = mu / 2  # L > 0 exactly for x > μ/2
    mass = p * stats.norm.sf(x0 - mu) + (1 - p) * stats.norm.sf(x0) + stats.norm.sf(x0)
    val, _ = integrate.quad(pos, x0, x0 + 40, limit=400, epsabs=1e-13, epsrel=1e-10)
    return val + (1 - mass) * d1(eps)


def test_fresh_two_fold_pld_against_quadrature():
    from audit.theory.pld import gaussian_loss, subsampled_pmf

    mu, p = 1.0, 0.3
    pld = dpl.PrivacyLossDistribution(subsampled_pmf(gaussian_loss(mu), p, 1e-4)).self_compose(2)
    for eps in (0.3, 1.0):
        exact = _delta_two_fold_quadrature(mu, p, eps)
        got = float(pld.get_delta_for_epsilon(eps))
        assert exact - 1e-12 <= got <= exact * 1.01 + 1e-9


@pytest.mark.parametrize("k", [2, 30, 300])
def test_gaussian_same_query_closed_form_against_pld_composition(k):
    """G_μ^{⊗k} = G_{√k μ}: against dp_accounting's k-fold Gaussian PLD, and our symmetric
    PLD of G_μ (p = 1) composed k times."""
    from audit.theory.pld import compose_epsilon, gaussian_loss, subsampled_pmf

    closed = epsilon_for_delta(GaussianTradeoff(rel.repeated_gaussian_mu(MU, k)), DELTA)
    theirs = dpl.from_gaussian_mechanism(1 / MU, value_discretization_interval=1e-4)
    assert theirs.self_compose(k).get_epsilon_for_delta(DELTA) == pytest.approx(closed, abs=2e-3)
    ours = compose_epsilon(subsampled_pmf(gaussian_loss(MU), 1.0, 1e-4), k, DELTA)
    assert closed - 1e-9 <= ours <= closed + k * 1e-4
    assert rel.composed_gaussian_mu([MU] * k) == pytest.approx(rel.repeated_gaussian_mu(MU, k))


# ----------------------------------------------------------------------------- comparisons
def test_basic_and_advanced_composition():
    assert rel.basic_composition(0.5, 1e-6, 4) == (2.0, 4e-6)
    e, d = rel.advanced_composition(0.1, 1e-7, 100, 1e-5)
    assert e == pytest.approx(0.1 * math.sqrt(200 * math.log(1e5)) + 10 * math.expm1(0.1))
    assert d == pytest.approx(100 * 1e-7 + 1e-5)


def test_clt_mu_gaussian_and_its_accuracy_at_k100():
    assert rel.clt_mu(GaussianTradeoff(MU), Q_OBS, 100) == pytest.approx(
        Q_OBS * math.sqrt(100 * math.expm1(MU * MU)))
    approx = epsilon_for_delta(GaussianTradeoff(rel.clt_mu(GaussianTradeoff(MU), Q_OBS, 100)),
                               DELTA)
    assert abs(approx - FRESH_COMPOSED[-1]) < 0.1 * FRESH_COMPOSED[-1]
    # χ² of the Laplace and pure-DP pairs against numerical integration
    def ratio2(x):  # p²/q for Lap(0.7) against Lap(0)
        return 0.5 * np.exp(-2 * abs(x - 0.7) + abs(x))

    chi2 = integrate.quad(ratio2, -50, 50, points=[0, 0.7])[0] - 1
    assert rel.clt_mu(LaplaceTradeoff(0.7), 1.0, 1) == pytest.approx(math.sqrt(chi2), rel=1e-8)
    e = 0.8
    chi2 = (math.exp(2 * e) + math.exp(-e)) / (1 + math.exp(e)) - 1
    assert rel.clt_mu(DPTradeoff(e, 0.0), 1.0, 1) == pytest.approx(math.sqrt(chi2))


# ----------------------------------------------------------------------------- which share
def test_mask_regime_of():
    assert rel.mask_regime_of([{0, 1}, {0, 1}], record_level=False) is MaskRegime.SHARED
    assert rel.mask_regime_of([{0}, {1, 2}], record_level=False) is MaskRegime.FRESH
    assert rel.mask_regime_of([{0}, {1, 2}], record_level=True) is MaskRegime.SHARED
    assert rel.mask_regime_of([{0, 1}, {1, 2}], record_level=False) is MaskRegime.SHARED
    assert rel.mask_regime_of([{0}, {0}], record_level=True, redrawn=True) is MaskRegime.FRESH
    assert rel.feature_group_p_stars(0.5, [1, 3]) == pytest.approx((0.5, 0.875))


# ----------------------------------------------------------------------------- hypotheses
@pytest.mark.parametrize("bad", [0, -3, 1.5, "2", True, math.inf, math.nan])
def test_releases_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="releases must be a positive integer"):
        rel.check_releases(bad)


def test_integral_floats_are_releases():
    assert rel.check_releases(1e9) == 10**9


def test_hypotheses_are_checked():
    P, Q = _count_pair()
    f = GaussianTradeoff(MU)
    with pytest.raises(ValueError, match="p_star must be in"):
        rel.fresh_masks_epsilon(f, 0.0, 3, DELTA)
    with pytest.raises(ValueError, match="p_star must be in"):
        rel.shared_masks_dp(1.0, 0.0, 1.5)
    with pytest.raises(ValueError, match="mnar"):
        rel.shared_masks_tradeoff(f, 0.5, missingness_class="mnar")
    with pytest.raises(ValueError, match="mnar"):
        rel.fresh_masks_epsilon(f, 0.5, 3, DELTA, missingness_class="mnar")
    with pytest.raises(ValueError, match="releases must be at most"):
        rel.fresh_masks_epsilon(f, 0.5, rel.MAX_PLD_RELEASES + 1, DELTA)
    with pytest.raises(ValueError, match="f must be"):
        rel.fresh_masks_epsilon(DPTradeoff(1.0, 1e-3), 0.5, 3, DELTA)
    with pytest.raises(ValueError, match="masks must be one of 'shared', 'fresh'"):
        MaskRegime.parse("sometimes")
    with pytest.raises(ValueError, match="P must be a Gaussian"):
        rel.shared_pair(Mixture([1.0], [1.0], "laplace", 1.0),
                        Mixture([1.0], [0.0], "laplace", 1.0), 3)
    with pytest.raises(ValueError, match="parallel"):
        rel.record_level_pair_epsilon(
            rel.RecordLevelPair(0.5, [1.0, 0.0], [0.0, 1.0], "gaussian", 1.0), DELTA)
    with pytest.raises(ValueError, match="must be all 0"):
        rel.record_level_pair_epsilon(
            rel.RecordLevelPair(0.5, [1.0], [-1.0], "laplace", 1.0), DELTA)
    with pytest.raises(ValueError, match="scales must be in"):
        rel.RecordLevelPair(0.5, [1.0], [0.0], "laplace", 0.0)
    with pytest.raises(ValueError, match="observation|p_star"):
        rel.RecordLevelPair(0.0, [1.0], [0.0], "laplace", 1.0)
    with pytest.raises(ValueError, match="releases must be a positive integer"):
        rel.fresh_pair_epsilon(P, Q, 0, DELTA)


def test_accountant_exports_the_releases_api():
    for name in ("shared_masks_dp", "fresh_masks_epsilon", "fresh_pair_epsilon",
                 "record_level_pair_epsilon", "bound_table", "MaskRegime"):
        assert getattr(acc, name) is not None and name in acc.__all__


# ----------------------------------------------------------------------------- curves, regimes
def test_fresh_masks_tradeoff_lies_below_the_exact_curve_and_composes():
    f, p = GaussianTradeoff(0.5), 0.3
    exact = amplify_tradeoff(f, p)
    one = rel.fresh_masks_tradeoff(f, p, 1)
    a = np.concatenate([np.logspace(-12, -1, 60), np.linspace(0.1, 1.0, 60)])
    assert np.all(one(a) <= exact(a) + 1e-12)
    assert np.max(exact(a) - one(a)) < 1e-3  # and close to it
    ten = rel.fresh_masks_tradeoff(f, p, 10)
    assert np.all(ten(a) <= one(a) + 1e-12)  # composing only loses privacy
    # its ε at δ agrees with the PLD composition it was built from
    assert epsilon_for_delta(ten, 1e-5) == pytest.approx(
        rel.fresh_masks_epsilon(f, p, 10, 1e-5), abs=2e-3)
    assert ten.symmetric


def test_tradeoff_from_profile_is_the_envelope_of_the_dp_lines():
    from audit.theory.pld import tradeoff_from_profile

    eps, dlt = np.array([0.0, 0.5, 1.0, 2.0]), np.array([0.4, 0.2, 0.1, 0.01])
    curve = tradeoff_from_profile(eps, dlt)
    a = np.linspace(0, 1, 2001)
    lines = np.max([np.maximum.reduce([np.zeros_like(a), 1 - d - np.exp(e) * a,
                                       np.exp(-e) * (1 - d - a)])
                    for e, d in zip(eps, dlt, strict=True)], axis=0)
    assert np.max(np.abs(curve(a) - lines)) < 1e-12
    with pytest.raises(ValueError, match="epsilons"):
        tradeoff_from_profile([0.1], [1.5])


def test_releases_epsilon_names_the_rule_per_regime():
    f = GaussianTradeoff(MU)
    shared = rel.releases_epsilon(f, Q_OBS, 100, DELTA, "shared")
    assert round(shared.epsilon, 3) == SHARED[-1] and "G_(sqrt(k) mu)" in shared.rule
    fresh = rel.releases_epsilon(f, Q_OBS, 100, DELTA, MaskRegime.FRESH)
    assert fresh.epsilon == pytest.approx(rel.fresh_masks_epsilon(f, Q_OBS, 100, DELTA))
    assert "PLD" in fresh.rule
    lap = rel.releases_epsilon(LaplaceTradeoff(0.4), 0.2, 6, 0.0, "shared")
    assert lap.epsilon == pytest.approx(math.log1p(0.2 * math.expm1(2.4)))
    with pytest.raises(ValueError, match="masks must be one of 'shared', 'fresh'"):
        rel.releases_epsilon(f, Q_OBS, 3, DELTA, "both")


def test_composed_epsilon_laplace_pld_against_pure_composition():
    k, mu = 20, 0.3
    pld = rel.composed_epsilon(LaplaceTradeoff(mu), k, 1e-6)
    assert pld.epsilon < k * mu and "PLD" in pld.rule  # tighter than k ε0 at δ > 0
    assert rel.composed_epsilon(LaplaceTradeoff(mu), k, 0.0).epsilon == pytest.approx(k * mu)
    big = rel.composed_epsilon(LaplaceTradeoff(mu), rel.MAX_PLD_RELEASES + 1, 1e-6)
    assert big.epsilon == pytest.approx((rel.MAX_PLD_RELEASES + 1) * mu)
    assert "too costly" in big.rule


@pytest.mark.parametrize("eps,delta,k,target", [
    (1.0, 0.0, 1, 0.0), (1.0, 1e-6, 10, 1e-4), (0.5, 1e-5, 50, 1e-3), (2.0, 0.0, 20, 1e-5),
    (0.1, 1e-7, 200, 1e-4)])
def test_optimal_composition_matches_dp_accountings_pld(eps, delta, k, target):
    # an independent computation: dp_accounting's PLD of the canonical (ε, δ) pair, composed
    # k times (its discretisation rounds losses up: above the exact value by about k·h/2)
    from dp_accounting import dp_event  # noqa: F401  (the package is there)
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as dpl

    from audit.theory.releases import optimal_composition

    exact = optimal_composition(eps, delta, k, target)
    pld = dpl.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, delta),
                                      value_discretization_interval=1e-5)
    ref = float((pld if k == 1 else pld.self_compose(k)).get_epsilon_for_delta(target))
    assert exact <= ref + 1e-9 and ref - exact <= k * 1e-5 + 1e-6
    if k == 1:
        assert exact == pytest.approx(eps if delta <= target else math.inf)


def test_optimal_composition_is_infinite_below_the_delta_mass_and_refuses_bad_input():
    from audit.theory.releases import optimal_composition

    assert optimal_composition(1.0, 1e-3, 10, 1e-3) == math.inf  # 1 − (1 − δ)^10 ≈ 0.00996
    assert optimal_composition(1.0, 1e-3, 10, 0.5) < optimal_composition(1.0, 1e-3, 10, 0.02)
    with pytest.raises(ValueError, match="target_delta must be in"):
        optimal_composition(1.0, 0.0, 3, 1.5)
    with pytest.raises(ValueError, match="releases must be at most 1000000"):
        optimal_composition(1.0, 0.0, 10**9, 1e-5)  # (no 8 GB array)


def test_fresh_laplace_loss_too_large_for_the_grid_gives_the_pure_composition():
    # ε0 = 700: the grid at h = 10⁻⁴ would need 1.4·10⁷ points (it raised "discretization
    # must give at most 4000000 grid points", naming a parameter the user never gave)
    value = rel.fresh_masks_epsilon(LaplaceTradeoff(700.0), 0.1, 2, 1e-6)
    assert value == pytest.approx(2 * (700.0 + math.log(0.1)), rel=1e-12)
    row = rel.releases_epsilon(LaplaceTradeoff(700.0), 0.1, 2, 1e-6, "fresh")
    assert row.epsilon == value and row.rule.startswith("k ln(1 + p*(e^eps0 - 1))")
