"""Tests for audit.theory.bounds: the bound table of the ``bound`` CLI."""

from __future__ import annotations

import inspect

import pytest

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
    s7 = [r for r in rows if r.reference.startswith("THEORY §7")]
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
    s7 = by["THEORY §7 (derived here)"]
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
]


@pytest.mark.parametrize("call,name", BAD)
def test_rejects_out_of_hypothesis_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_every_public_function_is_covered_by_a_rejection_case():
    src = "\n".join(inspect.getsource(c) for c, _ in BAD)
    own = [n for n in bounds.__all__ if callable(getattr(bounds, n)) and n[0].islower()]
    assert own == ["all_bounds"]
    missing = [n for n in own if f"bounds.{n}(" not in src]
    assert not missing, missing
