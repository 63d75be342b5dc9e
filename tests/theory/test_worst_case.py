"""The worst case of a user's own setting (audit.theory.worst_case, docs/THEORY.md §10).

Oracles that share no code with the implementation: scipy's quadrature of the two mixture
densities (the check value), a dense grid of interior pairs (the corner lemma), dp_accounting's
subsampled Laplace (the count-like pair under fresh masks).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from audit.enums import MaskRegime
from audit.theory.pair.epsilon import pair_epsilon
from audit.theory.pair.releases import RecordLevelPair, record_level_pair_epsilon
from audit.theory.releases import shared_masks_epsilon
from audit.theory.tradeoff import LaplaceTradeoff
from audit.theory.worst_case import (
    REFERENCE,
    Setting,
    fresh_pair,
    substitution_sensitivity,
    worst_case,
)

SIGMA_1 = 2 * math.sqrt(2 * math.log(1.25e5))  # classical σ at ε = 1, δ = 1e-5, Δ = 2


def _quad_delta(q: float, s: float, a: float, b: float, eps: float) -> float:
    """D_{e^ε} of ((1 − q)N(0, s) + qN(a, s), (1 − q)N(0, s) + qN(b, s)) by quadrature."""
    def p(y):
        return (1 - q) * stats.norm.pdf(y, 0, s) + q * stats.norm.pdf(y, a, s)

    def r(y):
        return (1 - q) * stats.norm.pdf(y, 0, s) + q * stats.norm.pdf(y, b, s)

    pts = np.linspace(-12 * s + min(a, b), 12 * s + max(a, b), 60)
    return sum(integrate.quad(lambda y: max(p(y) - math.exp(eps) * r(y), 0.0), lo, hi,
                              epsabs=1e-15, epsrel=1e-12, limit=200)[0]
               for lo, hi in zip(pts[:-1], pts[1:], strict=True))


def test_check_value_of_the_issue_against_quadrature():
    setting = Setting("gaussian", SIGMA_1, (-1.0, 1.0), 0.0, 0.1, 100)
    w = worst_case(setting, 1e-5)
    assert w.exact and w.pair == ("hi", "lo")
    assert w.epsilon == pytest.approx(1.9117, abs=5e-5)
    # independent: at the reported ε the quadrature's δ is 1e-5 (k releases = one at σ/√k)
    s = SIGMA_1 / 10
    assert _quad_delta(0.1, s, 1.0, -1.0, w.epsilon) == pytest.approx(1e-5, rel=1e-6)
    eps_na = optimize.brentq(lambda e: _quad_delta(0.1, s, 1.0, 0.0, e) - 1e-5, 0.5, 5.0)
    assert eps_na == pytest.approx(1.8070, abs=5e-5)  # the record against the missing record


def test_count_like_setting_attains_the_theorem_row():
    # NA read as an end of the domain: the shared-mask theorem bound C_q(G_{√k μ}) is attained
    sigma = 1 / 0.2064
    setting = Setting("gaussian", sigma, (0.0, 1.0), 0.0, 0.1, 100)
    w = worst_case(setting, 1e-5)
    from audit.theory.tradeoff import GaussianTradeoff
    theorem = shared_masks_epsilon(GaussianTradeoff(10 * 0.2064), 0.1, 1e-5)
    assert w.exact and w.epsilon == pytest.approx(theorem, rel=1e-6)
    assert w.epsilon == pytest.approx(6.937, abs=1e-3)


_SLOW = pytest.mark.slow


@pytest.mark.parametrize("noise,q,m,delta", [
    ("gaussian", 0.1, 0.0, 1e-5), pytest.param("gaussian", 0.5, 0.4, 1e-3, marks=_SLOW),
    pytest.param("gaussian", 0.9, -1.0, 1e-4, marks=_SLOW),
    pytest.param("laplace", 0.3, 0.0, 1e-3, marks=_SLOW), ("laplace", 0.3, 0.7, 0.0),
    pytest.param("laplace", 0.6, 1.5, 1e-4, marks=_SLOW),
])
def test_corner_lemma_no_interior_pair_is_worse(noise, q, m, delta):
    """A wrong lemma (an interior pair worse than every candidate) trips this grid (one
    setting per noise by default, NA inside and at the middle of the domain; the other four
    under -m slow)."""
    scale = 0.7
    setting = Setting(noise, scale, (-1.0, 1.0), m, q, 1)
    w = worst_case(setting, delta)
    grid = np.linspace(-1.0, 1.0, 9)
    worst_interior = max(
        pair_epsilon(setting.law(a), setting.law(b), delta).value
        for a in grid for b in grid if a != b)
    assert worst_interior <= w.epsilon + 1e-9
    assert w.exact and w.error < 1e-6


@pytest.mark.parametrize("noise,scale", [("gaussian", 1 / 0.2064), ("laplace", 2.0)])
@pytest.mark.parametrize("q,k,delta", [(0.1, 10, 1e-5),
                                       pytest.param(0.3, 20, 1e-6, marks=_SLOW),
                                       (0.5, 5, 1e-3)])
def test_shared_count_like_setting_matches_pld_accounting(noise, scale, q, k, delta):
    """An oracle sharing no code with this project: PLD_accounting's ``subsample_pld``
    (Feldman–Shenfeld) of the k-fold composed base PLD is the shared record-level closed form
    (measured: within 1e-7 on these six settings)."""
    import warnings

    dpl = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    subsample = pytest.importorskip("PLD_accounting.subsample_pld").subsample_pld
    w = worst_case(Setting(noise, scale, (0.0, 1.0), 0.0, q, k), delta)
    build = dpl.from_gaussian_mechanism if noise == "gaussian" else dpl.from_laplace_mechanism
    base = build(scale, sensitivity=1.0, value_discretization_interval=1e-4).self_compose(k)
    with warnings.catch_warnings():  # (its projection warns on grids it widens)
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = float(subsample(pld=base, sampling_probability=q).get_epsilon_for_delta(delta))
    assert w.exact and abs(w.epsilon - ref) <= 1e-5


@pytest.mark.parametrize("k", [1, 10, 100, 1000])
def test_fresh_count_like_pair_matches_dp_accounting(k):
    """The issue's check: within 1e-3 of dp_accounting's Poisson-subsampled Laplace (its
    connect-the-dots PLD, stable to 1e-8 from h = 1e-4 down to 3e-6 at k = 1000)."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    setting = Setting("laplace", 1.0, (0.0, 1.0), 0.0, 0.1, k, MaskRegime.FRESH)
    low, high = fresh_pair(setting, "hi", "lo", 1e-5)  # the record against the missing one
    one = dpl.from_laplace_mechanism(1.0, sensitivity=1.0, sampling_prob=0.1,
                                     value_discretization_interval=1e-4)
    ref = float((one if k == 1 else one.self_compose(k)).get_epsilon_for_delta(1e-5))
    assert abs(high - ref) <= 1e-3 and high - low <= 1e-3 and low <= ref + 1e-8
    w = worst_case(setting, 1e-5)
    assert low - 1e-9 <= w.lower <= high + 1e-9 and w.epsilon >= w.lower
    # one release: the corner lemma; k > 1: the boxes close on the pair (§10.4)
    assert w.exact and w.epsilon <= ref * 1.005 and ("boxes" in w.method) == (k > 1)


def _dp_optimistic(noise: str, scale: float, k: int, h: float) -> float:
    """A lower bound on the exact ε of the count-like pair that shares no code with ours:
    dp_accounting's Poisson-subsampled mechanism with losses rounded down (off by about
    k·h/2), at δ + 2e-15 (its tails truncated in the composition)."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    build = dpl.from_laplace_mechanism if noise == "laplace" else dpl.from_gaussian_mechanism
    one = build(scale, sensitivity=1.0, sampling_prob=0.1, pessimistic_estimate=False,
                value_discretization_interval=h, use_connect_dots=False)
    return float((one if k == 1 else one.self_compose(k)).get_epsilon_for_delta(1e-5 + 2e-15))


@pytest.mark.parametrize("noise, scale, k", [
    ("laplace", 1.0, 10), ("laplace", 1.0, 100), ("gaussian", 2.0, 100),
    pytest.param("laplace", 1.0, 1000, marks=pytest.mark.slow),
    pytest.param("gaussian", 2.0, 1000, marks=pytest.mark.slow)])
def test_fresh_pair_upper_end_is_never_below_a_fine_lower_reference(noise, scale, k):
    """Our upper end is a bound: at or above dp_accounting's optimistic value on a 10x finer
    grid (a lower bound on the truth), with no tolerance but float rounding; and our lower
    end is at most the truth within that reference's k·h/2."""
    setting = Setting(noise, scale, (0.0, 1.0), 0.0, 0.1, k, MaskRegime.FRESH)
    low, high = fresh_pair(setting, "hi", "lo", 1e-5)
    ref = _dp_optimistic(noise, scale, k, 1e-5)
    assert high >= ref - 1e-12 and low <= high
    assert high - ref <= 1e-3 + k * 1e-5 / 2  # and it is tight


@pytest.mark.parametrize("noise, scale", [
    ("laplace", 1.0), pytest.param("gaussian", 0.7, marks=pytest.mark.slow)])
def test_fresh_symmetric_pair_brackets_the_certified_one_release_value(noise, scale):
    """k = 1: the bracket holds the integrator's certified ε of the (hi, lo) pair (value ±
    error); k = 10: the upper end is at or above the pair's rounded-down PLD on a 10x finer
    grid (a lower bound on the truth)."""
    from audit.theory.pair import pair_epsilon
    from audit.theory.pld import compose_epsilon, pair_pmfs

    one = Setting(noise, scale, (-1.0, 1.0), 0.0, 0.1, 1, MaskRegime.FRESH)
    P, Q = one.law(1.0), one.law(-1.0)
    exact = pair_epsilon(P, Q, 1e-5)
    low, high = fresh_pair(one, "hi", "lo", 1e-5)
    assert low <= exact.value + exact.error and high >= exact.value - exact.error
    low, high = fresh_pair(replace(one, releases=10), "hi", "lo", 1e-5)
    ref = compose_epsilon(pair_pmfs(P, Q, 1e-5, pessimistic=False), 10, 1e-5 + 2e-15)
    assert high >= ref - 1e-12 and high - low <= 1e-3


def test_fresh_masks_close_on_the_count_like_pair_below_the_envelope():
    from audit.theory.releases import fresh_masks_epsilon

    setting = Setting("laplace", 1.0, (0.0, 1.0), 0.0, 0.1, 100, "fresh")
    w = worst_case(setting, 1e-5)
    sym = fresh_masks_epsilon(LaplaceTradeoff(1.0), 0.1, 100, 1e-5)
    # lower: the remove/add pair composed direction by direction (4.152); the envelope of
    # both orders, the symmetrised C_q(f)^k (4.709), was the upper end; the boxes bring it
    # within 0.5 % of the pair, at or above dp_accounting's pair rounded down on a 10x finer
    # grid (a lower bound on the truth)
    assert w.lower == pytest.approx(4.152, abs=1e-3) and sym == pytest.approx(4.709, abs=1e-3)
    assert w.exact and w.lower - 1e-9 <= w.epsilon <= 1.005 * w.lower < sym
    assert _dp_optimistic("laplace", 1.0, 100, 1e-5) <= w.epsilon + 1e-12
    # a symmetric domain: the (hi, lo) pair dominates, and the bracket closes (measured:
    # 1.6e-5 at k = 10, 2.7e-5 at k = 100, from Connect-the-Dots on both ends)
    for k in (10, 100):
        w = worst_case(Setting("laplace", 1.0, (-1.0, 1.0), 0.0, 0.1, k, "fresh"), 1e-5)
        assert w.pair == ("hi", "lo") and w.exact and w.error <= 1e-4


def test_laplace_shared_upper_bound_is_above_every_computable_pair():
    b, q, k = 2.0, 0.2, 5
    setting = Setting("laplace", b, (-1.0, 1.0), 0.0, q, k)
    for delta in (1e-5, 1e-3):
        w = worst_case(setting, delta)
        assert w.pair == ("hi", "lo")  # the pair across the missing reading
        # it closes at δ = 1e-5 (1.37612 to 1.37732: the δ = 0 cap) and at 1e-3 (1.27031 to
        # 1.27158: every pair bounded on boxes of its numerator; [1.2703, 1.3773] before)
        assert w.exact and w.epsilon <= (1.3774 if delta == 1e-5 else 1.2716)
        # the record against the missing record has an exact record-level form, below it
        for c in (1.0, -1.0):
            pair = RecordLevelPair(q, np.full(k, c), np.zeros(k), "laplace", b)
            v = record_level_pair_epsilon(pair, delta)
            assert v.value - v.error <= w.lower + 1e-9 <= w.epsilon + 1e-9
        # and it is below the theorem row (substitution sensitivity 2 per release)
        theorem = math.log1p(q * math.expm1(k * 2 / b))
        assert w.epsilon < theorem
        assert w.upper_pair == ("hi", "lo")  # the upper end's argument: the domain's move
    # δ = 0 is exact (§10.3): every release at hi against lo, (1−q+qe^{k/b})/(1−q+qe^{−k/b})
    pure = worst_case(setting, 0.0)
    assert pure.exact and pure.pair == ("hi", "lo")
    assert pure.epsilon == pytest.approx(
        math.log((1 - q + q * math.exp(k / b)) / (1 - q + q * math.exp(-k / b))), rel=1e-12)
    assert pure.epsilon < math.log1p(q * math.expm1(k))  # the former upper end (AJC at δ = 0)


@pytest.mark.parametrize("m,q,k,delta,exact", [
    (3.0, 0.95, 2, 1e-2, 5.9067), (3.0, 0.5, 4, 1e-2, 11.0248), (-2.0, 0.9, 3, 1e-3, 8.8858)])
def test_laplace_shared_bound_with_na_read_outside_the_domain(m, q, k, delta, exact):
    """A second read's counterexamples to the first form of the bound (the pair with the
    missing record moves by |c - na|, not hi - lo): now the bound is exact there."""
    w = worst_case(Setting("laplace", 1.0, (0.0, 1.0), m, q, k), delta)
    assert w.epsilon >= exact - 1e-4 and w.exact and "NA" in w.pair


def test_laplace_shared_upper_bound_is_the_exact_remove_pair_when_na_is_an_end():
    b, q, k = 1.0, 0.3, 4
    w = worst_case(Setting("laplace", b, (0.0, 1.0), 0.0, q, k), 1e-4)
    exact = record_level_pair_epsilon(RecordLevelPair(q, np.ones(k), np.zeros(k), "laplace", b),
                                      1e-4)
    assert w.epsilon == pytest.approx(exact.value, abs=exact.error + w.error + 1e-6)


def test_missing_record_outside_the_domain_is_its_own_candidate():
    setting = Setting("gaussian", 1.0, (0.0, 1.0), 3.0, 0.5, 1)
    assert list(setting.candidates()) == ["lo", "hi", "NA"]
    w = worst_case(setting, 1e-5)
    assert "NA" in w.pair  # NA at 3 is farther from both ends than they are from each other
    assert substitution_sensitivity(0.0, 1.0, 3.0) == 3.0


def test_to_dict_names_the_reference_and_pair():
    d = worst_case(Setting("gaussian", 2.0, (-1, 1), 0.0, 0.5), 1e-5).to_dict()
    assert d["reference"] == REFERENCE == "exact worst case"
    assert set(d) >= {"epsilon", "error", "pair", "exact"} and d["pair"] == ["hi", "lo"]


@pytest.mark.parametrize("kwargs,match", [
    ({"scale": 0.0}, "scale"), ({"domain": (1.0, 1.0)}, "domain"),
    ({"domain": (0.0, math.inf)}, "domain"), ({"na_value": math.nan}, "na_value"),
    ({"observation": 0.0}, "observation"), ({"observation": 1.5}, "observation"),
    ({"releases": 0}, "releases"), ({"masks": "both"}, "masks"), ({"noise": "cauchy"}, "noise"),
])
def test_setting_refuses_bad_parameters(kwargs, match):
    base = {"noise": "gaussian", "scale": 1.0, "domain": (-1.0, 1.0), "na_value": 0.0,
            "observation": 0.5}
    with pytest.raises(ValueError, match=match):
        Setting(**{**base, **kwargs})


def test_worst_case_refuses_bad_delta_and_too_many_fresh_releases():
    with pytest.raises(ValueError, match="delta"):
        worst_case(Setting("gaussian", 1.0, (-1, 1), 0.0, 0.5), 1.5)
    with pytest.raises(ValueError, match="releases"):
        worst_case(Setting("laplace", 1.0, (-1, 1), 0.0, 0.5, 20_000, "fresh"), 1e-5)


def test_a_record_missing_in_the_data_is_a_candidate_even_when_nothing_is_masked():
    # q = 1: the mechanism masks nothing, but an all-NA record is a legal record; NA read
    # outside the domain moves the sum further than the domain's ends
    setting = Setting("laplace", 1.0, (0.0, 1.0), 3.0, 1.0, 1)
    w = worst_case(setting, 0.0)
    assert w.pair == ("lo", "NA") and w.epsilon == pytest.approx(3.0)


@pytest.mark.parametrize("q,k,delta", [(0.01, 1000, 1e-10), (1.0, 1, 1e-3), (0.3, 20, 1e-7)])
def test_gaussian_shared_worst_case_against_quadrature_over_the_issue_range(q, k, delta):
    """Within 1 % above and never below the truth (independent quadrature of the two mixture
    densities): at the reported ε the true δ is at most the target, at ε/1.01 above it."""
    setting = Setting("gaussian", SIGMA_1, (-1.0, 1.0), 0.0, q, k)
    w = worst_case(setting, delta)
    s = SIGMA_1 / math.sqrt(k)
    assert w.exact and w.pair == ("hi", "lo")
    assert _quad_delta(q, s, 1.0, -1.0, w.epsilon) <= delta * (1 + 1e-6)
    assert _quad_delta(q, s, 1.0, -1.0, w.epsilon / 1.01) > delta


def test_a_billion_releases_need_no_k_vector_and_bad_ones_are_refused_by_name():
    # Laplace at δ = 0: the closed forms, with no array of k entries (it allocated 24 GB)
    w = worst_case(Setting("laplace", 2.0, (-1.0, 1.0), 0.0, 0.1, 10**9), 0.0)
    # exact (§10.3): every release at hi against lo, ln((1 − q + q e^{k/2})/(1 − q)) here
    assert w.exact and w.pair == ("hi", "lo")
    assert w.epsilon == pytest.approx(10**9 / 2 + math.log(0.1) - math.log(0.9), abs=1e-6)
    # Gaussian from one table: one release at σ/√k, whose pair leaves the float range
    with pytest.raises(ValueError, match="releases must be fewer .* got releases=1000000000"):
        worst_case(Setting("gaussian", SIGMA_1, (-1.0, 1.0), 0.0, 0.1, 10**9), 1e-5)


def test_fresh_masks_at_delta_zero_compose_purely_with_no_pld():
    one = worst_case(Setting("laplace", 2.0, (-1.0, 1.0), 0.0, 0.1, 1), 0.0)
    w = worst_case(Setting("laplace", 2.0, (-1.0, 1.0), 0.0, 0.1, 10**9, "fresh"), 0.0)
    assert w.epsilon == pytest.approx(10**9 * one.epsilon) and w.pair == one.pair and w.exact
    # a Gaussian mixture pair has no finite ε at δ = 0: both ends infinite, exactly so
    g = worst_case(Setting("gaussian", 1.0, (-1.0, 1.0), 0.0, 0.5, 3, "fresh"), 0.0)
    assert math.isinf(g.epsilon) and g.exact and g.error == 0.0


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_laplace_shared_boxes_stay_out_beyond_the_float_range_of_their_products():
    """b = 0.05, k = 32: ε ≈ 630, but the boxes would multiply e^ε by density ratios up to
    e^1280 (they overflowed, with RuntimeWarnings); left out, the row is a certified bracket
    below the δ = 0 value and within 1.5 %."""
    s = Setting("laplace", 0.05, (-1.0, 1.0), 0.0, 0.05, 32)
    w = worst_case(s, 1e-5)
    pure = worst_case(s, 0.0).epsilon
    assert 0.98 * pure < w.lower <= w.epsilon <= pure and not w.exact
    assert w.epsilon - w.lower <= 0.015 * w.epsilon


def test_laplace_settings_whose_one_release_loss_leaves_the_float_range_are_refused_by_scale():
    # span 2 over scale 0.002: one release's loss is 1,000; the pair integrator raised its own
    # "eps must be in [0, 700.0]" after the work had started, naming no parameter of the user
    with pytest.raises(ValueError, match=r"scale must be at least 0\.00285714 .*got scale=0\.002"):
        Setting("laplace", 0.002, (-1.0, 1.0), 0.0, 0.1, 1)
    # the missing reading outside the domain widens the span: 10 / 700
    with pytest.raises(ValueError, match=r"scale must be at least 0\.0142857"):
        Setting("laplace", 0.01, (0.0, 1.0), 10.0, 0.1, 1)
    assert Setting("gaussian", 0.002, (-1.0, 1.0), 0.0, 0.1, 1).scale == 0.002


def test_laplace_losses_at_the_limit_are_accounted_on_a_grid_relative_to_the_loss():
    """One release's loss 700, k = 2 (at h = 10⁻⁴ the k-fold Laplace PLDs took 99 s and
    3.2 GB): the step scales with the loss, and the row is still a certified bracket below
    the δ = 0 value, within the tolerance."""
    s = Setting("laplace", 2.0 / 700.0, (-1.0, 1.0), 0.0, 0.1, 2)
    w = worst_case(s, 1e-6)
    assert w.lower <= w.epsilon <= worst_case(s, 0.0).epsilon and w.exact
    assert w.epsilon == pytest.approx(700.0 + math.log(0.1 / 0.9), rel=1e-3)


def test_forty_laplace_releases_from_one_table_close_on_boxes():
    """b = 2 on [−1, 1], NA read as 0, q = 0.05, k = 40: with the boxes capped at 32 releases
    the row was the bracket [10.2115, 17.0556]; they now run to 48 and close it."""
    w = worst_case(Setting("laplace", 2.0, (-1.0, 1.0), 0.0, 0.05, 40), 1e-5)
    assert w.exact and "bounded on boxes" in w.method
    assert w.lower == pytest.approx(10.262, abs=2e-3) and w.epsilon <= 1.005 * w.lower
