"""Tests for audit.theory.tradeoff.subsampling: the operator C_p ([DRS] Section 4.1).

Oracles: the closed forms of [DRS] Corollary 4.3 and Eq. 14 against the numerical convex
minorant (and vice versa); the numerical biconjugate of the hull against the profile identity
δ_{C_p f}(ln(1 + p(e^ε − 1))) = p δ_f(ε) that the conversions use.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit._numeric import log1p_c_expm1
from audit.theory.amplification import amplify
from audit.theory.tradeoff import (
    CallableTradeoff,
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    PiecewiseLinearTradeoff,
    SubsampledDPTradeoff,
    SubsampledTradeoff,
    TradeoffFunction,
    amplify_tradeoff,
    delta_for_epsilon,
    epsilon_for_delta,
    min_error_sum,
    subsampled_closed_form,
)
from audit.theory.tradeoff.conversions import numeric_delta

from .common import GRID, PROP, TOL_CLOSED, TOL_NUM, UNIFORM, base_strategy

#: the two slowest property tests (a bisection inverse and numerical biconjugates per example):
#: 10 derandomized examples each instead of 20
PROP_FEW = settings(derandomize=True, max_examples=10, deadline=None)


# ---------------------------------------------------------------- seed example
class TestSeedExample:
    """ε = 3, δ = 0.1, p = 0.2 (docs/THEORY.md §6; a summary of [DRS] §4 drops (1 − δ))."""

    eps, delta, p = 3.0, 0.1, 0.2

    def test_classical_amplified_parameters(self):
        c = SubsampledDPTradeoff(self.eps, self.delta, self.p)
        assert round(c.epsilon_prime, 4) == 1.5722
        assert c.delta_prime == pytest.approx(0.02, abs=1e-15)

    def test_min_error_sums(self):
        f = DPTradeoff(self.eps, self.delta)
        c = SubsampledDPTradeoff(self.eps, self.delta, self.p)
        classical = DPTradeoff(c.epsilon_prime, c.delta_prime)
        assert min_error_sum(f) == pytest.approx(0.0854, abs=5e-5)
        assert min_error_sum(classical) == pytest.approx(0.3369, abs=5e-5)
        numeric = SubsampledTradeoff(f, self.p)
        eq14 = subsampled_closed_form(f, self.p)
        for curve in (c, numeric, eq14):
            assert min_error_sum(curve) == pytest.approx(0.8171, abs=5e-5)
        # generic numerical path (no closed form) agrees to round-off
        for curve in (c, numeric):
            assert 1.0 - delta_for_epsilon(curve, 0.0) == pytest.approx(0.817073314, abs=1e-9)
            # and so does the numerical biconjugate of the curve itself
            assert 1.0 - numeric_delta(curve, 0.0) == pytest.approx(0.817073314, abs=1e-9)

    def test_seed_note_variant_is_valid_but_weaker(self):
        """The note drops (1 − δ) in the middle line: min error sum 0.799, curve ≤ C_p."""
        eps, delta, p = self.eps, self.delta, self.p
        outer = DPTradeoff(math.log1p(p * math.expm1(eps)), p * delta)
        c_note = 1.0 - p * delta - p * (math.exp(eps) - 1) / (math.exp(eps) + 1)

        def note(a):
            return np.maximum(outer(a), c_note - np.asarray(a))

        variant = CallableTradeoff(note, symmetric=True, name="seed note")
        assert min_error_sum(variant) == pytest.approx(0.799, abs=5e-4)
        true = SubsampledTradeoff(DPTradeoff(eps, delta), p)
        assert np.all(variant(GRID) <= true(GRID) + TOL_NUM)
        assert np.max(true(GRID) - variant(GRID)) > 0.01  # strictly weaker


# ------------------------------------------------ closed forms vs numeric C_p
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 3.0, 6.0])
@pytest.mark.parametrize("delta", [0.0, 1e-5, 0.1])
def test_dp_closed_forms_match_numeric(eps, delta):
    f = DPTradeoff(eps, delta)
    for p in (0.01, 0.2, 0.5, 0.9):
        numeric = SubsampledTradeoff(f, p)(GRID)
        cor43 = SubsampledDPTradeoff(eps, delta, p)(GRID)
        eq14 = subsampled_closed_form(f, p)(GRID)
        assert np.max(np.abs(numeric - cor43)) <= TOL_CLOSED
        assert np.max(np.abs(eq14 - cor43)) <= TOL_CLOSED


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 4.0, 6.0])
def test_gaussian_closed_form_matches_numeric(mu):
    g = GaussianTradeoff(mu)
    pts = np.concatenate([GRID, [1e-300, 1e-100, 1.0 - 2.0**-53]])
    for p in (0.01, 0.2, 0.5, 0.9):
        numeric = SubsampledTradeoff(g, p)(pts)
        eq14 = subsampled_closed_form(g, p)(pts)
        assert np.max(np.abs(numeric - eq14)) <= TOL_CLOSED
        # and relatively in the tails, where the absolute test says little
        tail = (pts < 1e-6) | (pts > 1 - 1e-6)
        both = np.maximum(np.abs(eq14[tail]), 1e-300)
        assert np.all(np.abs(numeric[tail] - eq14[tail]) <= 1e-6 * both + 1e-300)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_laplace_closed_form_matches_numeric(mu):
    f = LaplaceTradeoff(mu)
    for p in (0.05, 0.5, 0.95):
        assert np.max(np.abs(SubsampledTradeoff(f, p)(GRID) - subsampled_closed_form(f, p)(GRID))
                      ) <= TOL_CLOSED



# ------------------------------------------------------------ property tests
@PROP_FEW
@given(f=base_strategy(), p=st.floats(0.0, 1.0))
def test_cp_convex_nonincreasing_symmetric(f, p):
    c = SubsampledTradeoff(f, p)
    y = c(UNIFORM)
    assert np.all(np.diff(y) <= TOL_NUM)
    assert np.all(y[:-2] - 2 * y[1:-1] + y[2:] >= -TOL_NUM)
    # convexity near 0 on a log grid: slopes of the (accurate) complement 1 − C_p(α) are
    # non-increasing
    x = np.concatenate([[0.0], np.logspace(-14, -1, 60)])
    comp = c.complement(x)
    s = np.diff(comp) / np.diff(x)
    noise = 8 * np.finfo(float).eps * comp[1:] / np.diff(x)  # round-off of an offset 1 − f(0)
    assert np.all(np.diff(s) <= 1e-9 * np.abs(s[1:]) + noise[1:] + noise[:-1])
    # symmetry: the generic bisection inverse equals the curve itself
    inv = TradeoffFunction._bisect_inverse(c, UNIFORM)
    assert np.max(np.abs(inv - y)) <= 1e-9


@PROP
@given(f=base_strategy(), p=st.floats(0.0, 1.0))
def test_cp_between_f_and_identity(f, p):
    c = SubsampledTradeoff(f, p)(GRID)
    assert np.all(f(GRID) <= c + TOL_NUM)
    assert np.all(c <= 1.0 - GRID + TOL_NUM)


@PROP
@given(f=base_strategy(), p1=st.floats(0.0, 1.0), p2=st.floats(0.0, 1.0))
def test_cp_nonincreasing_in_p(f, p1, p2):
    lo, hi = min(p1, p2), max(p1, p2)
    assert np.all(SubsampledTradeoff(f, lo)(GRID) >= SubsampledTradeoff(f, hi)(GRID) - TOL_NUM)


@PROP
@given(f=base_strategy())
def test_cp_end_points(f):
    assert np.array_equal(SubsampledTradeoff(f, 1.0)(GRID), f(GRID))
    assert np.array_equal(SubsampledTradeoff(f, 0.0)(GRID), 1.0 - GRID)
    # continuity at the ends of the operator
    assert np.max(np.abs(SubsampledTradeoff(f, 1 - 1e-9)(GRID) - f(GRID))) <= 1e-8
    assert np.max(np.abs(SubsampledTradeoff(f, 1e-9)(GRID) - (1 - GRID))) <= 1e-8


@PROP_FEW
@given(f=base_strategy(), p=st.floats(0.01, 0.99))
def test_cp_matches_eq14_and_profile_identity(f, p):
    c = SubsampledTradeoff(f, p)
    assert np.max(np.abs(c(GRID) - subsampled_closed_form(f, p)(GRID))) <= TOL_CLOSED
    # [DRS] proof of Thm 4.2 / docs/THEORY.md §7: δ_{C_p f}(ln(1 − p + p e^ε)) = p δ_f(ε). The
    # conversions use this identity, so it is checked against the numerical biconjugate of
    # the hull (the curve's own values), with no use of the identity.
    for eps in (0.0, 0.7, 2.0):
        eps_p = math.log1p(p * math.expm1(eps))
        assert delta_for_epsilon(c, eps_p) == pytest.approx(p * delta_for_epsilon(f, eps),
                                                            abs=1e-10)
        assert numeric_delta(c, eps_p) == pytest.approx(p * delta_for_epsilon(f, eps),
                                                        abs=1e-10)
    # min error sum: α + C_p(α) is minimal on the slope −1 segment through x*
    assert min_error_sum(c) == pytest.approx(p * min_error_sum(f) + 1 - p, abs=1e-10)
    assert 1.0 - numeric_delta(c, 0.0) == pytest.approx(p * min_error_sum(f) + 1 - p,
                                                        abs=1e-10)


BAD = [
    ("alpha", lambda: SubsampledTradeoff(LaplaceTradeoff(1.0), 0.3)(2.0)),
    ("p", lambda: SubsampledTradeoff(GaussianTradeoff(1.0), 1.2)),
    ("p", lambda: SubsampledDPTradeoff(1.0, 0.0, -0.2)),
    ("p", lambda: amplify_tradeoff(GaussianTradeoff(1.0), 2.0)),
    ("p", lambda: subsampled_closed_form(GaussianTradeoff(1.0), float("nan"))),
    ("epsilon", lambda: SubsampledDPTradeoff(-1.0, 0.0, 0.5)),
    ("delta", lambda: SubsampledDPTradeoff(1.0, 2.0, 0.5)),
    ("f", lambda: amplify_tradeoff(PiecewiseLinearTradeoff([0, 0.1, 1], [0.5, 0.2, 0]), 0.5)),
    ("f", lambda: amplify_tradeoff(lambda a: np.maximum(0.0, 0.5 - 0.5 * a), 0.5)),
    ("f", lambda: subsampled_closed_form(
        PiecewiseLinearTradeoff([0, 0.1, 1], [0.5, 0.2, 0], symmetric=False), 0.5)),
    ("base", lambda: SubsampledTradeoff(
        PiecewiseLinearTradeoff([0, 0.1, 1], [0.5, 0.2, 0]), 0.5)),
]


@pytest.mark.parametrize(("name", "call"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_input_names_parameter(name, call):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


# ------------------------------------------------------- one formula, large ε (issue 11)
@pytest.mark.parametrize("eps", [1e-9, 0.5, 30.0, 31.0, 709.9, 800.0, 1e4])
@pytest.mark.parametrize("p", [1e-300, 1e-3, 0.5, 1.0])
def test_amplified_epsilon_is_the_accountant_formula(eps, p):
    """SubsampledDPTradeoff(800, 0, 0.5) used to raise OverflowError where amplify returned
    799.31: both now call the one log-space helper."""
    assert SubsampledDPTradeoff(eps, 0.0, p).epsilon_prime == amplify(eps, 0.0, p)[0]


def test_amplified_epsilon_at_800():
    assert SubsampledDPTradeoff(800, 0, 0.5).epsilon_prime == amplify(800, 0, 0.5)[0]
    assert amplify(800, 0, 0.5)[0] == 800.0 + math.log(0.5)


def _cp_representations(base, p):
    return [SubsampledTradeoff(base, p), subsampled_closed_form(base, p)]


@pytest.mark.parametrize("mu", [100.0, 700.0, 709.8, 720.0, 746.0, 1000.0, 1e4])
@pytest.mark.parametrize("p", [1e-3, 0.5, 1.0])
def test_cp_of_large_shifts_in_log_space(mu, p):
    """C_p of the Laplace curve and of f_{μ,0} for μ beyond the double range of e^{−μ}: the
    ε at δ = 0 is ln(1 + p(e^μ − 1)) exactly, δ > 0 gives less, the curve has no NaN.
    Before: f(0) was NaN for μ > 745, ε(0) read 0.0 (p = 1) or 59.76 (p = 1/2), and μ = 720,
    p = 1/2 raised OverflowError in the slope at 0."""
    want = amplify(mu, 0.0, p)[0]
    curves = (_cp_representations(LaplaceTradeoff(mu), p)
              + _cp_representations(DPTradeoff(mu, 0.0), p) + [SubsampledDPTradeoff(mu, 0.0, p)])
    for c in curves:
        assert epsilon_for_delta(c, 0.0) == want
        assert epsilon_for_delta(c, 1e-6) <= want
        vals = c(GRID)
        assert np.all(np.isfinite(vals)) and c(0.0) == 1.0
        assert min_error_sum(c) == pytest.approx(1.0 - p, rel=1e-12, abs=1e-20)


@pytest.mark.parametrize("mu", [1e3, 1e4])
@pytest.mark.parametrize("p", [0.2, 0.7])
def test_eq14_with_an_underflowing_fixed_point_matches_numeric(mu, p):
    """x* = e^{−μ/2}/2 underflows to 0; f_p(x*) = p x* + (1 − p)(1 − x*) ≈ 1 − p, not f_p(0) = 1
    (which would make Eq. 14 the identity: far too optimistic)."""
    f = LaplaceTradeoff(mu)
    eq14, numeric = subsampled_closed_form(f, p), SubsampledTradeoff(f, p)
    assert eq14.fp_x_star == pytest.approx(1.0 - p, rel=1e-15)
    assert np.max(np.abs(eq14(GRID) - numeric(GRID))) <= TOL_CLOSED
    assert eq14(0.5 * (1 - p)) == pytest.approx(0.5 * (1 - p), rel=1e-12)


@PROP
@given(f=base_strategy(), p=st.floats(0.0, 1.0))
def test_cp_slope_at_zero_is_amplified_base_slope(f, p):
    """C_p(f) = f_p on [0, x*] ([DRS] Eq. 14): ln(−C_p'(0+)) = ln(1 + p(−f'(0+) − 1))."""
    ls = f._log_slope_at_zero()
    want = ls if p == 1.0 else (0.0 if f(0.0) == 0.0 else log1p_c_expm1(ls, p))
    for c in (SubsampledTradeoff(f, p), SubsampledDPTradeoff(f.epsilon, f.delta, p)
              if isinstance(f, DPTradeoff) else SubsampledTradeoff(f, p)):
        assert c._log_slope_at_zero() == want
