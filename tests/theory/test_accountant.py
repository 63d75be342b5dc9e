"""Tests for audit.theory.accountant: [RPS] bounds, the §7 f-DP bounds (derived here) and all_bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.theory import accountant as acc
from audit.theory import calibration as cal
from audit.theory import fwl

EPS_GRID = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0]
P_GRID = [0.0, 0.05, 0.3, 0.7, 1.0]


def test_seed_value_theorem_3_2():
    e, d = acc.amplify(3, 0.1, 0.2)
    assert e == pytest.approx(1.5722, abs=5e-5)
    assert e == pytest.approx(math.log(1 + 0.2 * (math.exp(3) - 1)), rel=1e-15)
    assert d == pytest.approx(0.02, rel=1e-15)


def test_amplify_is_stable_at_both_ends():
    e, _ = acc.amplify(1e-12, 0.0, 0.5)
    assert e == pytest.approx(0.5e-12, rel=1e-9)
    e, _ = acc.amplify(1000.0, 0.0, 0.5)
    assert e == pytest.approx(1000.0 + math.log(0.5), rel=1e-15)
    assert acc.amplify(2.0, 0.3, 0.0) == (0.0, 0.0)
    assert acc.amplify(2.0, 0.3, 1.0) == pytest.approx((2.0, 0.3), rel=1e-15)


def test_p_star_mcar_iid():
    assert acc.p_star_mcar_iid(0.5, 3) == pytest.approx(0.875)
    assert acc.p_star_mcar_iid(0.0, 4) == 1.0
    assert acc.p_star_mcar_iid(1.0, 4) == 0.0
    assert acc.p_star_mcar_iid(1e-3, 1) == pytest.approx(1 - 1e-3, rel=1e-15)


@pytest.mark.parametrize("eps", EPS_GRID)
@pytest.mark.parametrize("p", P_GRID)
@pytest.mark.parametrize("ratio", [0.1, 0.5, 1.0])
def test_theorem_4_5_no_worse_than_theorem_3_2(eps, p, ratio):
    e45 = acc.laplace_fwl_bound(eps, p, ratio)
    e32, _ = acc.amplify(eps, 0.0, p)
    assert e45 <= e32 + 1e-15
    if ratio == 1.0:
        assert e45 == pytest.approx(e32, rel=1e-15)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("p", P_GRID)
@pytest.mark.parametrize("rho", [0.1, 0.25, 0.5, 1.0])
def test_corollary_4_6_upper_bounds_theorem_4_5_where_valid(eps, p, rho):
    if rho * eps > 1:
        with pytest.raises(ValueError, match=r"rho\*epsilon"):
            acc.corollary_4_6(eps, p, rho)
        return
    e45 = acc.laplace_fwl_bound(eps, p, rho)
    assert acc.corollary_4_6(eps, p, rho) >= e45 - 1e-15


def test_corollary_4_6_formula_fails_outside_its_domain():
    """Why the refusal: at ρε = 5 the closed form is below ε0' (so not a bound)."""
    eps, p, rho = 5.0, 0.5, 1.0
    e45 = acc.laplace_fwl_bound(eps, p, rho)
    assert min((math.e - 1) * p, 1.0) * rho * eps < e45


def test_corollary_4_6_needs_integer_rho_d():
    assert acc.corollary_4_6(1.0, 0.5, 0.5, d=10) == pytest.approx((math.e - 1) * 0.5 * 0.5)
    assert acc.corollary_4_6(1.0, 0.29, 0.29, d=100) > 0  # float ρ·d within 1e-9 of 29
    with pytest.raises(ValueError, match=r"rho\*d"):
        acc.corollary_4_6(1.0, 0.5, 0.25, d=10)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
def test_theorem_4_7(eps, delta, p):
    e, d = acc.gaussian_fwl_bound(eps, delta, p, 0.5)
    assert e == pytest.approx(math.log1p(p * math.expm1(0.5 * eps)), rel=1e-14)
    assert d == pytest.approx(p * delta, rel=1e-15)


# ----------------------------------------------------------------------------- §7
def test_fdp_closed_form_values_from_theory_sheet():
    """THEORY §6: C_0.2(f_{3, 0.1}) min error sum 0.8171; (1.5722, 0.02) gives 0.3369."""
    curve = acc.fdp_missing(acc.tradeoff_dp(3.0, 0.1), 0.2)
    assert float(acc.min_error_sum(curve)) == pytest.approx(0.8171, abs=2e-4)
    assert acc.dp_min_error_sum(*acc.amplify(3, 0.1, 0.2)) == pytest.approx(0.3369, abs=1e-4)
    assert acc.dp_min_error_sum(3.0, 0.1) == pytest.approx(0.0854, abs=1e-4)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("ratio", [0.3, 1.0])
def test_section7_gaussian_no_weaker_than_theorem_4_7(eps, delta, p, ratio):
    C2 = 2.0
    sigma = cal.gaussian_sigma_classical(C2, eps, delta)
    curve = acc.fdp_missing_gaussian(ratio * C2, sigma, p)
    e47, d47 = acc.gaussian_fwl_bound(eps, delta, p, ratio)
    e7 = float(acc.epsilon_for_delta(curve, d47))
    assert e7 <= e47 + 1e-9
    assert float(acc.min_error_sum(curve)) >= acc.dp_min_error_sum(e47, d47) - 1e-9


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("p", [0.2, 0.6, 1.0])
def test_section7_gaussian_matches_theorem_3_2_applied_to_exact_profile(mu, p):
    """Independent check: for each ε, Thm 3.2 applied to the exact (ε, δ_G(ε)) gives a point
    (ε', p δ_G(ε)); the §7 curve's ε at that δ must not exceed ε' (it is their envelope)."""
    curve = acc.fdp_missing_gaussian(mu, 1.0, p)
    for eps in (0.0, 0.25, 0.5, 1.0, 2.0):
        dG = cal.gaussian_delta(eps, mu)
        e_prime, d_prime = acc.amplify(eps, dG, p)
        if d_prime <= 0:
            continue
        e7 = float(acc.epsilon_for_delta(curve, d_prime))
        assert e7 <= e_prime + 1e-6
        assert e7 == pytest.approx(e_prime, abs=2e-3)


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("ratio", [0.25, 1.0])
def test_section7_laplace_vs_theorem_4_5(eps, p, ratio):
    C1 = 3.0
    b = cal.laplace_scale(C1, eps)
    e45 = acc.laplace_fwl_bound(eps, p, ratio)
    for scalar in (True, False):
        curve = acc.fdp_missing_laplace(ratio * C1, b, p, scalar_output=scalar)
        e7 = float(acc.epsilon_for_delta(curve, 0.0))
        # at δ = 0 both curves reduce to Theorem 4.5 exactly
        assert e7 == pytest.approx(e45, abs=1e-6)
        assert float(acc.epsilon_for_delta(curve, 0.01)) <= e45 + 1e-9


# ----------------------------------------------------------------------------- all_bounds
def _rows(**kw):
    return {(r.reference, r.epsilon is None, r.delta): r for r in acc.all_bounds(**kw)}


def test_all_bounds_laplace():
    rows = acc.all_bounds(1.0, None, 0.5, "laplace", rho=0.5, d=10)
    refs = [r.reference for r in rows]
    assert refs[:4] == ["calibration", "[RPS] Thm 3.2", "[RPS] Thm 4.5", "[RPS] Cor 4.6"]
    by = {r.reference: r for r in rows}
    assert by["[RPS] Thm 3.2"].epsilon == pytest.approx(acc.amplify(1.0, 0, 0.5)[0])
    assert by["[RPS] Thm 4.5"].epsilon == pytest.approx(acc.laplace_fwl_bound(1, 0.5, 0.5))
    assert by["[RPS] Cor 4.6"].epsilon == pytest.approx(acc.corollary_4_6(1, 0.5, 0.5, 10))
    s7 = [r for r in rows if r.reference.startswith("THEORY §7")]
    assert s7[0].epsilon <= by["[RPS] Thm 4.5"].epsilon + 1e-9
    assert s7[-1].epsilon is None and s7[-1].min_error_sum > 0


def test_all_bounds_refuses_corollary_outside_domain_with_a_row():
    rows = acc.all_bounds(4.0, 1e-6, 0.5, "laplace", rho=0.5)
    cor = [r for r in rows if r.reference == "[RPS] Cor 4.6"][0]
    assert cor.epsilon is None and cor.note.startswith("not applicable: rho*epsilon > 1")
    rows = acc.all_bounds(1.0, None, 0.5, "laplace", rho=0.25, d=10)
    cor = [r for r in rows if r.reference == "[RPS] Cor 4.6"][0]
    assert cor.epsilon is None and "not an integer" in cor.note


def test_all_bounds_gaussian():
    rows = acc.all_bounds(1.0, 1e-5, 0.5, "gaussian", rho=0.3, d=10)
    by = {r.reference: r for r in rows if r.epsilon is not None}
    e47, d47 = acc.gaussian_fwl_bound(1.0, 1e-5, 0.5, 0.3)
    assert by["[RPS] Thm 4.7"].epsilon == pytest.approx(e47)
    assert by["[RPS] Thm 4.7"].delta == pytest.approx(d47)
    s7 = by["THEORY §7 (derived here)"]
    assert s7.delta == pytest.approx(d47)
    assert s7.epsilon <= e47
    assert all(r.reference != "[RPS] Cor 4.6" for r in rows)


def test_all_bounds_ratio_defaults():
    r_none = {r.reference: r for r in acc.all_bounds(1.0, None, 0.5, "laplace")}
    assert r_none["[RPS] Thm 4.5"].epsilon == pytest.approx(r_none["[RPS] Thm 3.2"].epsilon)
    r_rho = {r.reference: r for r in acc.all_bounds(1.0, None, 0.5, "laplace", rho=0.35, d=10)}
    assert r_rho["[RPS] Thm 4.5"].epsilon == pytest.approx(acc.laplace_fwl_bound(1, 0.5, 0.3))


def test_reexports_and_fwl_integration():
    for name in [
        "tradeoff_dp",
        "tradeoff_gaussian",
        "tradeoff_laplace",
        "amplify_tradeoff",
        "delta_for_epsilon",
        "epsilon_for_delta",
        "min_error_sum",
    ]:
        assert callable(getattr(acc, name))
    c = fwl.bounded_mean(100, 10)
    e = acc.laplace_fwl_bound(1.0, 0.9, c.ratio(0.3))
    assert e == pytest.approx(math.log1p(0.9 * math.expm1(0.3)))


# ----------------------------------------------------------------------------- validation
G = acc.tradeoff_gaussian(1.0)


def _asymmetric():
    from audit.theory.tradeoff import PiecewiseLinearTradeoff

    return PiecewiseLinearTradeoff([0.0, 0.1, 1.0], [1.0, 0.5, 0.0], symmetric=False)


BAD = [
    (lambda: acc.amplify(-0.1, 0.1, 0.5), "eps"),
    (lambda: acc.amplify(1.0, 1.5, 0.5), "delta"),
    (lambda: acc.amplify(1.0, -0.1, 0.5), "delta"),
    (lambda: acc.amplify(1.0, 0.1, 1.1), "p_star"),
    (lambda: acc.amplify(1.0, 0.1, -0.1), "p_star"),
    (lambda: acc.amplify(1.0, 0.1, 0.5, missingness_class="mnar"), "missingness_class"),
    (lambda: acc.amplify(1.0, 0.1, 0.5, missingness_class="weird"), "missingness_class"),
    (lambda: acc.p_star_mcar_iid(1.2, 3), "rate"),
    (lambda: acc.p_star_mcar_iid(0.5, 0), "d"),
    (lambda: acc.laplace_fwl_bound(-1.0, 0.5, 0.5), "epsilon"),
    (lambda: acc.laplace_fwl_bound(1.0, 2.0, 0.5), "p_star"),
    (lambda: acc.laplace_fwl_bound(1.0, 0.5, 0.0), "ratio"),
    (lambda: acc.laplace_fwl_bound(1.0, 0.5, 1.5), "ratio"),
    (lambda: acc.laplace_fwl_bound(1.0, 0.5, 0.5, missingness_class="MNAR"), "missingness_class"),
    (lambda: acc.corollary_4_6(3.0, 0.5, 0.5), r"rho\*epsilon"),
    (lambda: acc.corollary_4_6(-1.0, 0.5, 0.5), "epsilon"),
    (lambda: acc.corollary_4_6(1.0, 0.5, 0.0), "rho"),
    (lambda: acc.corollary_4_6(1.0, 0.5, 1.2), "rho"),
    (lambda: acc.corollary_4_6(1.0, -0.5, 0.5), "p_star"),
    (lambda: acc.corollary_4_6(1.0, 0.5, 0.3, d=5), r"rho\*d"),
    (lambda: acc.corollary_4_6(1.0, 0.5, 0.5, missingness_class="mnar"), "missingness_class"),
    (lambda: acc.gaussian_fwl_bound(1.5, 1e-5, 0.5, 1.0), "epsilon"),
    (lambda: acc.gaussian_fwl_bound(0.0, 1e-5, 0.5, 1.0), "epsilon"),
    (lambda: acc.gaussian_fwl_bound(0.5, 0.0, 0.5, 1.0), "delta"),
    (lambda: acc.gaussian_fwl_bound(0.5, 1.0, 0.5, 1.0), "delta"),
    (lambda: acc.gaussian_fwl_bound(0.5, 0.1, 1.5, 1.0), "p_star"),
    (lambda: acc.gaussian_fwl_bound(0.5, 0.1, 0.5, 0.0), "ratio"),
    (lambda: acc.gaussian_fwl_bound(0.5, 0.1, 0.5, 1.0, missingness_class="mnar"), "missingness"),
    (lambda: acc.fdp_missing(G, 1.5), "p_star"),
    (lambda: acc.fdp_missing("not a curve", 0.5), "f"),
    (lambda: acc.fdp_missing(_asymmetric(), 0.5), "symmetric"),
    (lambda: acc.fdp_missing(G, 0.5, missingness_class="mnar"), "missingness_class"),
    (lambda: acc.fdp_missing_gaussian(0.0, 1.0, 0.5), "sensitivity_tilde"),
    (lambda: acc.fdp_missing_gaussian(1.0, -1.0, 0.5), "sigma"),
    (lambda: acc.fdp_missing_gaussian(1.0, 1.0, -0.5), "p_star"),
    (lambda: acc.fdp_missing_gaussian(1.0, 1.0, 0.5, missingness_class="mnar"), "missingness"),
    (lambda: acc.fdp_missing_laplace(-1.0, 1.0, 0.5), "sensitivity_tilde"),
    (lambda: acc.fdp_missing_laplace(1.0, 0.0, 0.5), "b"),
    (lambda: acc.fdp_missing_laplace(1.0, 1.0, 1.5), "p_star"),
    (lambda: acc.fdp_missing_laplace(1.0, 1.0, 0.5, scalar_output="yes"), "scalar_output"),
    (lambda: acc.fdp_missing_laplace(1.0, 1.0, 0.5, missingness_class="mnar"), "missingness"),
    (lambda: acc.dp_min_error_sum(-1.0, 0.1), "epsilon"),
    (lambda: acc.dp_min_error_sum(1.0, 1.1), "delta"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "exponential"), "mechanism"),
    (lambda: acc.all_bounds(0.0, None, 0.5, "laplace"), "epsilon"),
    (lambda: acc.all_bounds(1.0, 1.0, 0.5, "laplace"), "delta"),
    (lambda: acc.all_bounds(1.0, None, 1.5, "laplace"), "p_star"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "laplace", rho=0.0), "rho"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "laplace", ratio=2.0), "ratio"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "laplace", rho=0.5, d=0), "d"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "laplace", rho=0.05, d=10), r"rho\*d"),
    (lambda: acc.all_bounds(2.0, 1e-5, 0.5, "gaussian"), "epsilon"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "gaussian"), "delta"),
    (lambda: acc.all_bounds(1.0, 0.0, 0.5, "gaussian"), "delta"),
    (lambda: acc.all_bounds(1.0, None, 0.5, "laplace", missingness_class="mnar"), "missingness"),
]


@pytest.mark.parametrize("call,name", BAD)
def test_rejects_out_of_hypothesis_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_public_function_is_covered_by_a_rejection_case():
    import inspect

    src = "\n".join(inspect.getsource(c) for c, _ in BAD)
    public = [n for n in acc.__all__ if callable(getattr(acc, n)) and n[0].islower()]
    own = [n for n in public if getattr(acc, n).__module__ == "audit.theory.accountant"]
    missing = [n for n in own if f"acc.{n}(" not in src]
    assert not missing, missing
    assert np.all([isinstance(n, str) for n in own])


def test_corollary_4_6_row_refused_when_given_ratio_exceeds_equal_lj_ratio():
    # Reviewer's counterexample: ratio = 1 with rho = 0.5 means unequal L_j; the closed form
    # 0.5 would sit below the true epsilon 1.0 (p* = 1, full ratio).
    from audit.theory.accountant import all_bounds

    rows = {r.reference: r for r in all_bounds(1.0, None, 1.0, "laplace", rho=0.5, ratio=1.0)}
    assert rows["[RPS] Cor 4.6"].epsilon is None
    assert "equal-L_j" in rows["[RPS] Cor 4.6"].note
    assert rows["[RPS] Thm 4.5"].epsilon == pytest.approx(1.0)
    ok = {r.reference: r for r in all_bounds(1.0, None, 1.0, "laplace", rho=0.5, ratio=0.5,
                                             d=10)}
    assert ok["[RPS] Cor 4.6"].epsilon == pytest.approx(0.5)
