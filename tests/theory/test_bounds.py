"""Tests for audit.theory.bounds: the bound table of the ``bound`` CLI."""

from __future__ import annotations

import inspect
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.theory import amplification as amp
from audit.theory import bounds
from audit.theory.bounds import all_bounds


def _rows(**kw):
    return {(r.reference, r.epsilon is None, r.delta): r for r in bounds.all_bounds(**kw)}


def test_all_bounds_laplace():
    rows = bounds.all_bounds(1.0, None, 0.5, "laplace", rho=0.5, d=10)
    refs = [r.reference for r in rows]
    assert refs[:4] == ["calibration", "[RPS] Thm 3.2", "[RPS] Thm 4.5", "[RPS] Cor 4.6"]
    by = {r.reference: r for r in rows}
    assert by["[RPS] Thm 3.2"].epsilon == pytest.approx(amp.amplify(1.0, 0, 0.5)[0])
    assert by["[RPS] Thm 4.5"].epsilon == pytest.approx(amp.laplace_fwl_bound(1, 0.5, 0.5))
    assert by["[RPS] Cor 4.6"].epsilon == pytest.approx(amp.corollary_4_6(1, 0.5, 0.5, 10))
    s7 = [r for r in rows if r.reference.startswith("docs/THEORY.md §7")]
    assert s7[0].epsilon <= by["[RPS] Thm 4.5"].epsilon + 1e-9
    assert s7[-1].epsilon is None and s7[-1].min_error_sum > 0


def test_all_bounds_refuses_corollary_outside_domain_with_a_row():
    rows = bounds.all_bounds(4.0, 1e-6, 0.5, "laplace", rho=0.5)
    cor = [r for r in rows if r.reference == "[RPS] Cor 4.6"][0]
    assert cor.epsilon is None and cor.note.startswith("not applicable: rho*epsilon > 1")
    rows = bounds.all_bounds(1.0, None, 0.5, "laplace", rho=0.25, d=10)
    cor = [r for r in rows if r.reference == "[RPS] Cor 4.6"][0]
    assert cor.epsilon is None and "not an integer" in cor.note


def test_all_bounds_gaussian():
    rows = bounds.all_bounds(1.0, 1e-5, 0.5, "gaussian", rho=0.3, d=10)
    by = {r.reference: r for r in rows if r.epsilon is not None}
    e47, d47 = amp.gaussian_fwl_bound(1.0, 1e-5, 0.5, 0.3)
    assert by["[RPS] Thm 4.7"].epsilon == pytest.approx(e47)
    assert by["[RPS] Thm 4.7"].delta == pytest.approx(d47)
    s7 = by["docs/THEORY.md §7 (derived here)"]
    assert s7.delta == pytest.approx(d47)
    assert s7.epsilon <= e47
    assert all(r.reference != "[RPS] Cor 4.6" for r in rows)


def test_all_bounds_ratio_defaults():
    r_none = {r.reference: r for r in bounds.all_bounds(1.0, None, 0.5, "laplace")}
    assert r_none["[RPS] Thm 4.5"].epsilon == pytest.approx(r_none["[RPS] Thm 3.2"].epsilon)
    r_rho = {r.reference: r for r in bounds.all_bounds(1.0, None, 0.5, "laplace", rho=0.35, d=10)}
    assert r_rho["[RPS] Thm 4.5"].epsilon == pytest.approx(amp.laplace_fwl_bound(1, 0.5, 0.3))


def test_corollary_4_6_row_refused_when_given_ratio_exceeds_equal_lj_ratio():
    # Reviewer's counterexample: ratio = 1 with rho = 0.5 means unequal L_j; the closed form
    # 0.5 would sit below the true epsilon 1.0 (p* = 1, full ratio).
    rows = {r.reference: r for r in all_bounds(1.0, None, 1.0, "laplace", rho=0.5, ratio=1.0)}
    assert rows["[RPS] Cor 4.6"].epsilon is None
    assert "equal-L_j" in rows["[RPS] Cor 4.6"].note
    assert rows["[RPS] Thm 4.5"].epsilon == pytest.approx(1.0)
    ok = {r.reference: r for r in all_bounds(1.0, None, 1.0, "laplace", rho=0.5, ratio=0.5,
                                             d=10)}
    assert ok["[RPS] Cor 4.6"].epsilon == pytest.approx(0.5)



BAD = [
    (lambda: bounds.all_bounds(1.0, None, 0.5, "exponential"), "mechanism"),
    (lambda: bounds.all_bounds(0.0, None, 0.5, "laplace"), "epsilon"),
    (lambda: bounds.all_bounds(1.0, 1.0, 0.5, "laplace"), "delta"),
    (lambda: bounds.all_bounds(1.0, None, 1.5, "laplace"), "p_star"),
    (lambda: bounds.all_bounds(1.0, None, 0.5, "laplace", rho=0.0), "rho"),
    (lambda: bounds.all_bounds(1.0, None, 0.5, "laplace", ratio=2.0), "ratio"),
    (lambda: bounds.all_bounds(1.0, None, 0.5, "laplace", rho=0.5, d=0), "d"),
    (lambda: bounds.all_bounds(1.0, None, 0.5, "laplace", rho=0.05, d=10), r"rho\*d"),
    (lambda: bounds.all_bounds(2.0, 1e-5, 0.5, "gaussian"), "epsilon"),
    (lambda: bounds.all_bounds(1.0, None, 0.5, "gaussian"), "delta"),
    (lambda: bounds.all_bounds(1.0, 0.0, 0.5, "gaussian"), "delta"),
    (lambda: bounds.all_bounds(1.0, None, 0.5, "laplace", missingness_class="mnar"), "missingness"),
    (lambda: bounds.bound_table(1.0, None, 0.5, "laplace", releases=0), "releases"),
    (lambda: bounds.bound_table(1.0, None, 0.5, "laplace", releases=2, masks="x"), "masks"),
    (lambda: bounds.bound_table(1.0, 1e-5, 0.5, "gaussian", target_delta=-1.0), "target_delta"),
]


@pytest.mark.parametrize("call,name", BAD)
def test_rejects_out_of_hypothesis_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_public_function_is_covered_by_a_rejection_case():
    src = "\n".join(inspect.getsource(c) for c, _ in BAD)
    own = [n for n in bounds.__all__ if callable(getattr(bounds, n)) and n[0].islower()]
    assert own == ["all_bounds", "bound_table"]
    missing = [n for n in own if f"bounds.{n}(" not in src]
    assert not missing, missing


# ----------------------------------------------------------- the §7 rows against Theorem 3.2
# The §7 curve C_p*(f) is at least as tight as Theorem 3.2 applied to the base mechanism
# (docs/THEORY.md §7), so its ε may never be larger. For the scalar Laplace curve and for f_{ε,0}
# the likelihood ratio e^μ is attained, so at δ = 0 the two must coincide. Before the profiles
# were computed in log space the §7 row read 59.76 at ε = 1000 (Theorem 3.2: 999.31) and the
# command died with OverflowError for 709.8 ≤ ε ≤ 744.
EPS_LARGE = [1e-3, 0.1, 1.0, 5.0, 30.0, 100.0, 512.0, 600.0, 700.0, 709.8, 720.0, 744.0, 746.0,
             1000.0, 3000.0, 1e4]
P_STARS = [1e-3, 0.1, 0.5, 0.9, 1.0]


def _theorem_and_section7(rows):
    by_ref = {r.reference: r for r in rows}
    s7 = {r.delta: r.epsilon for r in rows
          if r.reference.startswith("docs/THEORY.md §7") and r.epsilon is not None}
    return by_ref, s7


@pytest.mark.parametrize("eps", EPS_LARGE)
@pytest.mark.parametrize("p", P_STARS)
@pytest.mark.parametrize("scalar", [True, False], ids=["scalar", "vector"])
def test_laplace_section7_equals_theorem_3_2_at_delta_0(eps, p, scalar):
    rows = bounds.all_bounds(eps, 1e-6, p, "laplace", scalar_output=scalar)
    by_ref, s7 = _theorem_and_section7(rows)
    e32 = by_ref["[RPS] Thm 3.2"].epsilon
    assert e32 == amp.amplify(eps, 0.0, p)[0]
    assert math.isfinite(s7[0.0]) and math.isfinite(s7[1e-6])
    assert s7[0.0] == pytest.approx(e32, rel=1e-15, abs=1e-300)
    assert s7[1e-6] <= e32
    assert 0.0 <= by_ref["docs/THEORY.md §7 (derived here)"].min_error_sum <= 1.0


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    log_eps=st.floats(-3.0, 4.0),
    p=st.floats(1e-6, 1.0),
    ratio=st.floats(1e-3, 1.0),
    delta=st.sampled_from([1e-12, 1e-6, 1e-3, 0.1, 0.5]),
    scalar=st.booleans(),
)
def test_laplace_section7_never_above_theorem_4_5(log_eps, p, ratio, delta, scalar):
    """Property over ε ∈ [1e-3, 1e4]: δ = 0 coincides with Theorem 4.5 (ratio·ε amplified),
    δ > 0 is never above it, and Theorem 4.5 is never above Theorem 3.2."""
    eps = 10.0**log_eps
    rows = bounds.all_bounds(eps, delta, p, "laplace", ratio=ratio, scalar_output=scalar)
    by_ref, s7 = _theorem_and_section7(rows)
    e45, e32 = by_ref["[RPS] Thm 4.5"].epsilon, by_ref["[RPS] Thm 3.2"].epsilon
    assert s7[0.0] == pytest.approx(e45, rel=1e-15, abs=1e-300)
    assert s7[delta] <= e45 <= e32


@settings(derandomize=True, max_examples=100, deadline=None)
@given(eps=st.floats(1e-3, 1.0), log_delta=st.floats(-12.0, -1.0), p=st.floats(1e-6, 1.0),
       ratio=st.floats(1e-3, 1.0))
def test_gaussian_section7_never_above_theorem_4_7(eps, log_delta, p, ratio):
    """The classical σ leaves a margin, so the §7 ε at δ' = p*δ is strictly below Thm 4.7."""
    delta = 10.0**log_delta
    rows = bounds.all_bounds(eps, delta, p, "gaussian", ratio=ratio)
    by_ref, s7 = _theorem_and_section7(rows)
    e47 = by_ref["[RPS] Thm 4.7"].epsilon
    (d7, e7), = s7.items()
    assert d7 == by_ref["[RPS] Thm 4.7"].delta
    assert e7 <= e47 <= by_ref["[RPS] Thm 3.2"].epsilon


def test_section7_row_of_the_cli_example():
    """``python -m audit bound --mechanism laplace --epsilon 1000 --p-star 0.5``."""
    by_ref, s7 = _theorem_and_section7(bounds.all_bounds(1000.0, None, 0.5, "laplace"))
    assert by_ref["[RPS] Thm 3.2"].epsilon == 1000.0 + math.log(0.5)
    assert s7 == {0.0: by_ref["[RPS] Thm 3.2"].epsilon}


# ----------------------------------------------------------------------------- k releases
def test_bound_table_without_releases_is_all_bounds():
    from audit.theory.bounds import all_bounds, bound_table

    table = bound_table(1.0, 1e-5, 0.3, "gaussian", rho=0.5, d=10)
    rows = all_bounds(1.0, 1e-5, 0.3, "gaussian", rho=0.5, d=10)
    assert [r.epsilon for r in table.bounds] == [r.epsilon for r in rows]
    assert table.comparisons == () and table.target_delta is None


def test_bound_table_rejects_bad_release_parameters():
    from audit.theory.bounds import bound_table

    with pytest.raises(ValueError, match="target_delta must be in"):
        bound_table(1.0, 1e-5, 0.3, "gaussian", releases=3, target_delta=0.0)
    with pytest.raises(ValueError, match="target_delta must be in"):
        bound_table(1.0, 1e-5, 0.3, "gaussian", releases=3, target_delta=1.0)
    with pytest.raises(ValueError, match="p_star must be in"):
        bound_table(1.0, None, 0.0, "laplace", releases=3)
    with pytest.raises(ValueError, match="releases must be a positive integer"):
        bound_table(1.0, None, 0.5, "laplace", releases=2.5)
    with pytest.raises(ValueError, match="masks must be one of"):
        bound_table(1.0, None, 0.5, "laplace", releases=2, masks="both")
