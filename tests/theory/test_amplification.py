"""Tests for audit.theory.amplification: [RPS] Theorems 3.2, 4.5, 4.7, Corollary 4.6 and the
f-DP bounds of docs/THEORY.md §7 (derived here)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from audit.theory import amplification as amp
from audit.theory import calibration as cal
from audit.theory.profiles import dp_min_error_sum, gaussian_delta
from audit.theory.tradeoff import (
    PiecewiseLinearTradeoff,
    epsilon_for_delta,
    min_error_sum,
    tradeoff_dp,
    tradeoff_gaussian,
)

EPS_GRID = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0]
P_GRID = [0.0, 0.05, 0.3, 0.7, 1.0]


def test_seed_value_theorem_3_2():
    e, d = amp.amplify(3, 0.1, 0.2)
    assert e == pytest.approx(1.5722, abs=5e-5)
    assert e == pytest.approx(math.log(1 + 0.2 * (math.exp(3) - 1)), rel=1e-15)
    assert d == pytest.approx(0.02, rel=1e-15)


def test_amplify_is_stable_at_both_ends():
    e, _ = amp.amplify(1e-12, 0.0, 0.5)
    assert e == pytest.approx(0.5e-12, rel=1e-9)
    e, _ = amp.amplify(1000.0, 0.0, 0.5)
    assert e == pytest.approx(1000.0 + math.log(0.5), rel=1e-15)
    assert amp.amplify(2.0, 0.3, 0.0) == (0.0, 0.0)
    assert amp.amplify(2.0, 0.3, 1.0) == pytest.approx((2.0, 0.3), rel=1e-15)


def test_p_star_mcar_iid():
    assert amp.p_star_mcar_iid(0.5, 3) == pytest.approx(0.875)
    assert amp.p_star_mcar_iid(0.0, 4) == 1.0
    assert amp.p_star_mcar_iid(1.0, 4) == 0.0
    assert amp.p_star_mcar_iid(1e-3, 1) == pytest.approx(1 - 1e-3, rel=1e-15)


@pytest.mark.parametrize("eps", EPS_GRID)
@pytest.mark.parametrize("p", P_GRID)
@pytest.mark.parametrize("ratio", [0.1, 0.5, 1.0])
def test_theorem_4_5_no_worse_than_theorem_3_2(eps, p, ratio):
    e45 = amp.laplace_fwl_bound(eps, p, ratio)
    e32, _ = amp.amplify(eps, 0.0, p)
    assert e45 <= e32 + 1e-15
    if ratio == 1.0:
        assert e45 == pytest.approx(e32, rel=1e-15)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("p", P_GRID)
@pytest.mark.parametrize("rho", [0.1, 0.25, 0.5, 1.0])
def test_corollary_4_6_upper_bounds_theorem_4_5_where_valid(eps, p, rho):
    if rho * eps > 1:
        with pytest.raises(ValueError, match=r"rho\*epsilon"):
            amp.corollary_4_6(eps, p, rho)
        return
    e45 = amp.laplace_fwl_bound(eps, p, rho)
    assert amp.corollary_4_6(eps, p, rho) >= e45 - 1e-15


def test_corollary_4_6_formula_fails_outside_its_domain():
    """Why the refusal: at ρε = 5 the closed form is below ε0' (so not a bound)."""
    eps, p, rho = 5.0, 0.5, 1.0
    e45 = amp.laplace_fwl_bound(eps, p, rho)
    assert min((math.e - 1) * p, 1.0) * rho * eps < e45


def test_corollary_4_6_needs_integer_rho_d():
    assert amp.corollary_4_6(1.0, 0.5, 0.5, d=10) == pytest.approx((math.e - 1) * 0.5 * 0.5)
    assert amp.corollary_4_6(1.0, 0.29, 0.29, d=100) > 0  # float ρ·d within 1e-9 of 29
    with pytest.raises(ValueError, match=r"rho\*d"):
        amp.corollary_4_6(1.0, 0.5, 0.25, d=10)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
def test_theorem_4_7(eps, delta, p):
    e, d = amp.gaussian_fwl_bound(eps, delta, p, 0.5)
    assert e == pytest.approx(math.log1p(p * math.expm1(0.5 * eps)), rel=1e-14)
    assert d == pytest.approx(p * delta, rel=1e-15)


# ----------------------------------------------------------------------------- §7
def test_fdp_closed_form_values_from_theory_sheet():
    """docs/THEORY.md §6: C_0.2(f_{3, 0.1}) min error sum 0.8171; (1.5722, 0.02) gives 0.3369."""
    curve = amp.fdp_missing(tradeoff_dp(3.0, 0.1), 0.2)
    assert float(min_error_sum(curve)) == pytest.approx(0.8171, abs=2e-4)
    assert dp_min_error_sum(*amp.amplify(3, 0.1, 0.2)) == pytest.approx(0.3369, abs=1e-4)
    assert dp_min_error_sum(3.0, 0.1) == pytest.approx(0.0854, abs=1e-4)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("ratio", [0.3, 1.0])
def test_section7_gaussian_no_weaker_than_theorem_4_7(eps, delta, p, ratio):
    C2 = 2.0
    sigma = cal.gaussian_sigma_classical(C2, eps, delta)
    curve = amp.fdp_missing_gaussian(ratio * C2, sigma, p)
    e47, d47 = amp.gaussian_fwl_bound(eps, delta, p, ratio)
    e7 = float(epsilon_for_delta(curve, d47))
    assert e7 <= e47 + 1e-9
    assert float(min_error_sum(curve)) >= dp_min_error_sum(e47, d47) - 1e-9


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("p", [0.2, 0.6, 1.0])
def test_section7_gaussian_matches_theorem_3_2_applied_to_exact_profile(mu, p):
    """Independent check: for each ε, Thm 3.2 applied to the exact (ε, δ_G(ε)) gives a point
    (ε', p δ_G(ε)); the §7 curve's ε at that δ must not exceed ε' (it is their envelope)."""
    curve = amp.fdp_missing_gaussian(mu, 1.0, p)
    for eps in (0.0, 0.25, 0.5, 1.0, 2.0):
        dG = gaussian_delta(eps, mu)
        e_prime, d_prime = amp.amplify(eps, dG, p)
        if d_prime <= 0:
            continue
        e7 = float(epsilon_for_delta(curve, d_prime))
        assert e7 <= e_prime + 1e-6
        assert e7 == pytest.approx(e_prime, abs=2e-3)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("ratio", [0.25, 1.0])
def test_section7_laplace_vs_theorem_4_5(eps, p, ratio):
    C1 = 3.0
    b = cal.laplace_scale(C1, eps)
    e45 = amp.laplace_fwl_bound(eps, p, ratio)
    for scalar in (True, False):
        curve = amp.fdp_missing_laplace(ratio * C1, b, p, scalar_output=scalar)
        e7 = float(epsilon_for_delta(curve, 0.0))
        # at δ = 0 both curves reduce to Theorem 4.5 exactly
        assert e7 == pytest.approx(e45, abs=1e-6)
        assert float(epsilon_for_delta(curve, 0.01)) <= e45 + 1e-9


# ----------------------------------------------------------------------------- validation
G = tradeoff_gaussian(1.0)


def _asymmetric():
    return PiecewiseLinearTradeoff([0.0, 0.1, 1.0], [1.0, 0.5, 0.0], symmetric=False)


BAD = [
    (lambda: amp.amplify(-0.1, 0.1, 0.5), "eps"),
    (lambda: amp.amplify(1.0, 1.5, 0.5), "delta"),
    (lambda: amp.amplify(1.0, -0.1, 0.5), "delta"),
    (lambda: amp.amplify(1.0, 0.1, 1.1), "p_star"),
    (lambda: amp.amplify(1.0, 0.1, -0.1), "p_star"),
    (lambda: amp.amplify(1.0, 0.1, 0.5, missingness_class="mnar"), "missingness_class"),
    (lambda: amp.amplify(1.0, 0.1, 0.5, missingness_class="weird"), "missingness_class"),
    (lambda: amp.p_star_mcar_iid(1.2, 3), "rate"),
    (lambda: amp.p_star_mcar_iid(0.5, 0), "d"),
    (lambda: amp.laplace_fwl_bound(-1.0, 0.5, 0.5), "epsilon"),
    (lambda: amp.laplace_fwl_bound(1.0, 2.0, 0.5), "p_star"),
    (lambda: amp.laplace_fwl_bound(1.0, 0.5, 0.0), "ratio"),
    (lambda: amp.laplace_fwl_bound(1.0, 0.5, 1.5), "ratio"),
    (lambda: amp.laplace_fwl_bound(1.0, 0.5, 0.5, missingness_class="MNAR"), "missingness_class"),
    (lambda: amp.corollary_4_6(3.0, 0.5, 0.5), r"rho\*epsilon"),
    (lambda: amp.corollary_4_6(-1.0, 0.5, 0.5), "epsilon"),
    (lambda: amp.corollary_4_6(1.0, 0.5, 0.0), "rho"),
    (lambda: amp.corollary_4_6(1.0, 0.5, 1.2), "rho"),
    (lambda: amp.corollary_4_6(1.0, -0.5, 0.5), "p_star"),
    (lambda: amp.corollary_4_6(1.0, 0.5, 0.3, d=5), r"rho\*d"),
    (lambda: amp.corollary_4_6(1.0, 0.5, 0.5, missingness_class="mnar"), "missingness_class"),
    (lambda: amp.gaussian_fwl_bound(1.5, 1e-5, 0.5, 1.0), "epsilon"),
    (lambda: amp.gaussian_fwl_bound(0.0, 1e-5, 0.5, 1.0), "epsilon"),
    (lambda: amp.gaussian_fwl_bound(0.5, 0.0, 0.5, 1.0), "delta"),
    (lambda: amp.gaussian_fwl_bound(0.5, 1.0, 0.5, 1.0), "delta"),
    (lambda: amp.gaussian_fwl_bound(0.5, 0.1, 1.5, 1.0), "p_star"),
    (lambda: amp.gaussian_fwl_bound(0.5, 0.1, 0.5, 0.0), "ratio"),
    (lambda: amp.gaussian_fwl_bound(0.5, 0.1, 0.5, 1.0, missingness_class="mnar"), "missingness"),
    (lambda: amp.fdp_missing(G, 1.5), "p_star"),
    (lambda: amp.fdp_missing("not a curve", 0.5), "f"),
    (lambda: amp.fdp_missing(_asymmetric(), 0.5), "symmetric"),
    (lambda: amp.fdp_missing(G, 0.5, missingness_class="mnar"), "missingness_class"),
    (lambda: amp.fdp_missing_gaussian(0.0, 1.0, 0.5), "sensitivity_tilde"),
    (lambda: amp.fdp_missing_gaussian(1.0, -1.0, 0.5), "sigma"),
    (lambda: amp.fdp_missing_gaussian(1.0, 1.0, -0.5), "p_star"),
    (lambda: amp.fdp_missing_gaussian(1.0, 1.0, 0.5, missingness_class="mnar"), "missingness"),
    (lambda: amp.fdp_missing_laplace(-1.0, 1.0, 0.5), "sensitivity_tilde"),
    (lambda: amp.fdp_missing_laplace(1.0, 0.0, 0.5), "b"),
    (lambda: amp.fdp_missing_laplace(1.0, 1.0, 1.5), "p_star"),
    (lambda: amp.fdp_missing_laplace(1.0, 1.0, 0.5, scalar_output="yes"), "scalar_output"),
    (lambda: amp.fdp_missing_laplace(1.0, 1.0, 0.5, missingness_class="mnar"), "missingness"),
]


@pytest.mark.parametrize("call,name", BAD)
def test_rejects_out_of_hypothesis_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_public_function_is_covered_by_a_rejection_case():
    src = "\n".join(inspect.getsource(c) for c, _ in BAD)
    own = [n for n in amp.__all__ if callable(getattr(amp, n)) and n[0].islower()]
    assert getattr(amp, own[0]).__module__ == "audit.theory.amplification"
    missing = [n for n in own if f"amp.{n}(" not in src]
    assert not missing, missing
    assert np.all([isinstance(n, str) for n in own])


# ----------------------------------------------------------------------------- large ε
@pytest.mark.parametrize("eps", [0.5, 10.0, 100.0, 512.0, 600.0, 700.0, 1000.0, 1e4])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-12])
@pytest.mark.parametrize("p", [1e-3, 0.3, 0.5, 1.0])
def test_section7_gaussian_with_analytic_sigma_matches_theorem_3_2(eps, delta, p):
    """The analytic σ makes the base mechanism exactly (ε, δ)-DP, so the §7 ε at δ' = p*δ is
    Theorem 3.2's ε' up to the profile's evaluation noise (a few ulps), and never above by more.
    The doubling bracket of the old numerical inverse stepped past ε = 700 and returned inf for
    every true ε above 512 (ε = 600: inf against 599.31)."""
    sigma = cal.gaussian_sigma_analytic(1.0, eps, delta)
    e32, d32 = amp.amplify(eps, delta, p)
    e7 = epsilon_for_delta(amp.fdp_missing_gaussian(1.0, sigma, p), d32)
    assert math.isfinite(e7)
    assert e7 == pytest.approx(e32, rel=1e-12)
    assert e7 <= e32 * (1 + 4e-15) + 1e-300


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("p", [0.2, 0.6, 1.0])
def test_section7_gaussian_is_theorem_3_2_on_the_exact_profile_to_round_off(mu, p):
    """The envelope statement above, now exact: ε_§7(p δ_G(ε)) = ln(1 + p(e^ε − 1))."""
    curve = amp.fdp_missing_gaussian(mu, 1.0, p)
    for eps in (0.25, 0.5, 1.0, 2.0, 20.0):
        e_prime, d_prime = amp.amplify(eps, gaussian_delta(eps, mu), p)
        if d_prime == 0.0:  # δ_G(ε) underflows: no finite ε has δ = 0
            assert epsilon_for_delta(curve, d_prime) == math.inf
            continue
        assert epsilon_for_delta(curve, d_prime) == pytest.approx(e_prime, rel=1e-12)
