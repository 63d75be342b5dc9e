"""Tests for audit.theory.tradeoff: f-DP curves, the subsampling operator C_p and conversions ([DRS]).

Oracles: the closed forms of [DRS] Corollary 4.3 and Eq. 14 against the numerical convex
minorant (and vice versa), mpmath for G_μ in the tails, the Neyman–Pearson tests written out
for the Laplace and Gaussian shifts, and dp_accounting's privacy-loss distributions for δ(ε).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.theory.tradeoff import (
    CallableTradeoff,
    DPTradeoff,
    GaussianTradeoff,
    IdentityTradeoff,
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
    tradeoff_dp,
    tradeoff_gaussian,
    tradeoff_laplace,
)

# α grid: uniform plus log-spaced towards 0 and 1 (the steep ends of G_μ and Laplace)
DECADES = 10.0 ** -np.arange(1, 13)  # 1e-1 … 1e-12
GRID = np.unique(np.concatenate([np.linspace(0.0, 1.0, 1001), DECADES, 1.0 - DECADES,
                                 np.logspace(-15, -0.3, 120), 1.0 - np.logspace(-15, -0.3, 120)]))

TOL_CLOSED = 1e-6  # required agreement of closed forms with the numerical C_p (brief)
TOL_NUM = 1e-12  # round-off level used for shape properties


# ---------------------------------------------------------------- seed example
class TestSeedExample:
    """ε = 3, δ = 0.1, p = 0.2 (THEORY §6; the seed note on [DRS] Section 4)."""

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
def _base_strategy():
    dp = st.builds(DPTradeoff, st.floats(0.0, 6.0), st.sampled_from([0.0, 1e-6, 0.05, 0.3]))
    gauss = st.builds(GaussianTradeoff, st.floats(0.0, 6.0))
    lap = st.builds(LaplaceTradeoff, st.floats(0.0, 6.0))
    return st.one_of(dp, gauss, lap)


PROP = settings(derandomize=True, max_examples=30, deadline=None)
UNIFORM = np.linspace(0.0, 1.0, 801)


@PROP
@given(f=_base_strategy(), p=st.floats(0.0, 1.0))
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
@given(f=_base_strategy(), p=st.floats(0.0, 1.0))
def test_cp_between_f_and_identity(f, p):
    c = SubsampledTradeoff(f, p)(GRID)
    assert np.all(f(GRID) <= c + TOL_NUM)
    assert np.all(c <= 1.0 - GRID + TOL_NUM)


@PROP
@given(f=_base_strategy(), p1=st.floats(0.0, 1.0), p2=st.floats(0.0, 1.0))
def test_cp_nonincreasing_in_p(f, p1, p2):
    lo, hi = min(p1, p2), max(p1, p2)
    assert np.all(SubsampledTradeoff(f, lo)(GRID) >= SubsampledTradeoff(f, hi)(GRID) - TOL_NUM)


@PROP
@given(f=_base_strategy())
def test_cp_end_points(f):
    assert np.array_equal(SubsampledTradeoff(f, 1.0)(GRID), f(GRID))
    assert np.array_equal(SubsampledTradeoff(f, 0.0)(GRID), 1.0 - GRID)
    # continuity at the ends of the operator
    assert np.max(np.abs(SubsampledTradeoff(f, 1 - 1e-9)(GRID) - f(GRID))) <= 1e-8
    assert np.max(np.abs(SubsampledTradeoff(f, 1e-9)(GRID) - (1 - GRID))) <= 1e-8


@PROP
@given(f=_base_strategy(), p=st.floats(0.01, 0.99))
def test_cp_matches_eq14_and_profile_identity(f, p):
    c = SubsampledTradeoff(f, p)
    assert np.max(np.abs(c(GRID) - subsampled_closed_form(f, p)(GRID))) <= TOL_CLOSED
    # [DRS] proof of Thm 4.2 / THEORY §7: δ_{C_p f}(ln(1 − p + p e^ε)) = p δ_f(ε)
    for eps in (0.0, 0.7, 2.0):
        eps_p = math.log1p(p * math.expm1(eps))
        assert delta_for_epsilon(c, eps_p) == pytest.approx(p * delta_for_epsilon(f, eps),
                                                            abs=1e-10)
    # min error sum: α + C_p(α) is minimal on the slope −1 segment through x*
    assert min_error_sum(c) == pytest.approx(p * min_error_sum(f) + 1 - p, abs=1e-10)


# ------------------------------------------------------ single-curve oracles
@pytest.mark.parametrize("mu", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("alpha", [1e-300, 1e-100, 1e-12, 0.3, 1 - 1e-6, 1 - 1e-12])
def test_gaussian_against_mpmath(mu, alpha):
    mpmath.mp.dps = 50
    a = mpmath.mpf(alpha)
    # z = Φ⁻¹(1 − α): solve ½ erfc(z/√2) = α (log form for the deep tail)
    z0 = mpmath.mpf(float(-np.asarray(__import__("scipy").special.ndtri(alpha))))
    z = mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t / mpmath.sqrt(2)) / 2) - mpmath.log(a),
                        z0)
    exact = mpmath.ncdf(z - mu)
    comp = mpmath.ncdf(mu - z)
    g = GaussianTradeoff(mu)
    assert g(alpha) == pytest.approx(float(exact), rel=1e-12, abs=1e-300)
    assert g.complement(alpha) == pytest.approx(float(comp), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("mu", [0.0, 0.4, 2.0, 7.0])
def test_laplace_and_gaussian_neyman_pearson(mu):
    """Threshold tests reject for X > t: α = P₀(X > t), β = P_μ(X ≤ t)."""
    t = np.linspace(-10, 20, 3001)
    from scipy import stats

    a_l, b_l = stats.laplace.sf(t), stats.laplace.cdf(t, loc=mu)
    assert np.allclose(LaplaceTradeoff(mu)(a_l), b_l, rtol=1e-10, atol=1e-14)
    a_g, b_g = stats.norm.sf(t), stats.norm.cdf(t, loc=mu)
    assert np.allclose(GaussianTradeoff(mu)(a_g), b_g, rtol=1e-10, atol=1e-14)


def test_identity_cases():
    for f in (GaussianTradeoff(0.0), LaplaceTradeoff(0.0), DPTradeoff(0.0, 0.0),
              IdentityTradeoff(), SubsampledDPTradeoff(2.0, 0.1, 0.0)):
        assert np.allclose(f(GRID), 1.0 - GRID, atol=1e-15)
        assert delta_for_epsilon(f, 0.0) == pytest.approx(0.0, abs=1e-15)


def test_scalar_and_array_shapes():
    g = tradeoff_gaussian(1.0)
    assert isinstance(g(0.3), float)
    assert isinstance(g(np.float64(0.3)), float)
    arr = np.full((2, 3), 0.25)
    assert g(arr).shape == (2, 3)
    assert g.inverse(arr).shape == (2, 3)
    c = amplify_tradeoff(g, 0.4)
    assert isinstance(c(0.1), float) and c(arr).shape == (2, 3)
    assert isinstance(tradeoff_dp(1.0, 0.1), DPTradeoff)
    assert isinstance(tradeoff_laplace(1.0), LaplaceTradeoff)
    assert "mu=1.0" in repr(g)


def test_generic_inverse_of_nonsymmetric_curve():
    pl = PiecewiseLinearTradeoff([0.0, 0.1, 1.0], [0.5, 0.2, 0.0])
    assert not pl.symmetric
    beta = np.array([0.0, 0.1, 0.2, 0.35, 0.5, 0.9])
    # inf{α: f(α) ≤ β}, by hand
    expected = np.array([1.0, 0.55, 0.1, 0.05, 0.0, 0.0])
    assert np.allclose(pl.inverse(beta), expected, atol=1e-12)


def test_piecewise_linear_and_callable_symmetry_detection():
    dp = DPTradeoff(1.0, 0.05)
    x = np.unique(np.concatenate([np.linspace(0, 1, 201), dp._kinks()]))  # exact interpolation
    pl = PiecewiseLinearTradeoff(x, dp(x))
    assert pl.symmetric
    assert not CallableTradeoff(lambda a: np.maximum(0.0, 0.5 - 0.5 * a)).symmetric
    assert CallableTradeoff(GaussianTradeoff(1.5)).symmetric
    noisy = PiecewiseLinearTradeoff([0.0, 0.3, 0.5, 0.6, 1.0], [1.0, 0.4, 0.45, 0.1, 0.0],
                                    symmetric=False, convexify=True)
    assert np.all(np.diff(noisy.alphas) > 0) and 0.5 not in noisy.alphas


# ------------------------------------------------------------- conversions
def _hidden(f: TradeoffFunction) -> CallableTradeoff:
    """The same curve without closed forms, slope or complement: the generic numeric path."""
    return CallableTradeoff(lambda a: f(a), symmetric=True, name="hidden")


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0, 6.0])
def test_numeric_delta_matches_gaussian_closed_form(mu):
    g = GaussianTradeoff(mu)
    h = _hidden(g)
    for eps in (0.0, 0.3, 1.0, 2.5, 5.0, 10.0):
        assert delta_for_epsilon(h, eps) == pytest.approx(delta_for_epsilon(g, eps), abs=1e-12)


@pytest.mark.parametrize("f", [DPTradeoff(2.0, 0.01), LaplaceTradeoff(1.7),
                               SubsampledDPTradeoff(3.0, 0.1, 0.2)], ids=repr)
def test_numeric_delta_matches_closed_forms(f):
    for eps in (0.0, 0.5, 1.0, 1.69, 3.0):
        assert delta_for_epsilon(_hidden(f), eps) == pytest.approx(delta_for_epsilon(f, eps),
                                                                   abs=1e-12)


def test_gaussian_delta_is_stable_in_the_tail():
    # Balle–Wang with μ = 1, ε = 30: both terms ~1e-100, the difference needs log space
    d = delta_for_epsilon(GaussianTradeoff(1.0), 30.0)
    mpmath.mp.dps = 60
    e, m = mpmath.mpf(30), mpmath.mpf(1)
    exact = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
    assert d == pytest.approx(float(exact), rel=1e-9)


@pytest.mark.parametrize(
    "f",
    [GaussianTradeoff(1.0), GaussianTradeoff(4.0), LaplaceTradeoff(2.0), DPTradeoff(1.5, 1e-3),
     SubsampledDPTradeoff(2.0, 1e-4, 0.3), SubsampledTradeoff(GaussianTradeoff(2.0), 0.1)],
    ids=repr,
)
def test_epsilon_delta_round_trip(f):
    for eps in (0.05, 0.5, 1.0, 1.4):
        d = delta_for_epsilon(f, eps)
        if d > 1.0 - f(0.0) + 1e-12:  # strictly inside the decreasing part
            assert epsilon_for_delta(f, d) == pytest.approx(eps, abs=1e-8)
    assert epsilon_for_delta(f, delta_for_epsilon(f, 0.0)) == 0.0


def test_epsilon_for_delta_edge_cases():
    assert epsilon_for_delta(GaussianTradeoff(1.0), 0.0) == math.inf
    assert epsilon_for_delta(DPTradeoff(1.0, 0.1), 0.05) == math.inf
    assert epsilon_for_delta(DPTradeoff(1.0, 0.1), 0.1) == pytest.approx(1.0, abs=1e-15)
    assert epsilon_for_delta(LaplaceTradeoff(2.5), 0.0) == pytest.approx(2.5, abs=1e-15)
    assert epsilon_for_delta(DPTradeoff(1.0, 0.1), 1.0) == 0.0
    for mu in (0.3, 1.3, 5.0):
        for p in (0.01, 0.3, 0.9):
            want = math.log(1 - p + p * math.exp(mu))
            for c in (SubsampledTradeoff(LaplaceTradeoff(mu), p),
                      subsampled_closed_form(LaplaceTradeoff(mu), p),
                      SubsampledTradeoff(DPTradeoff(mu, 0.0), p),
                      SubsampledDPTradeoff(mu, 0.0, p)):
                assert epsilon_for_delta(c, 0.0) == pytest.approx(want, abs=1e-9)
    # Gaussian under subsampling still has unbounded slope at 0
    assert epsilon_for_delta(SubsampledTradeoff(GaussianTradeoff(1.0), 0.2), 0.0) == math.inf


def _pld_upper(f, eps, dv):
    """δ at ε − dv, extended to ε − dv < 0 by δ(−x) = 1 − e^{−x} + e^{−x} δ(x) (symmetric f)."""
    x = eps - dv
    if x >= 0:
        return delta_for_epsilon(f, x)
    return 1 - math.exp(x) + math.exp(x) * delta_for_epsilon(f, -x)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_against_dp_accounting_pld():
    """Pessimistic PLDs without connect-the-dots round every privacy loss up by < dv, so
    δ_f(ε) ≤ δ_PLD(ε) ≤ δ_f(ε − dv) (+ the 2e^{−50} truncated tail for the Gaussian).
    PLD conventions: μ = sensitivity / standard_deviation (Gaussian), sensitivity / parameter
    (Laplace)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    dv = 1e-4
    worst = 0.0
    cases = [
        (GaussianTradeoff(1.0 / 1.0), pld.from_gaussian_mechanism(
            standard_deviation=1.0, sensitivity=1.0, value_discretization_interval=dv,
            pessimistic_estimate=True, use_connect_dots=False)),
        (GaussianTradeoff(3.0 / 1.5), pld.from_gaussian_mechanism(
            standard_deviation=1.5, sensitivity=3.0, value_discretization_interval=dv,
            pessimistic_estimate=True, use_connect_dots=False)),
        (LaplaceTradeoff(1.0 / 1.0), pld.from_laplace_mechanism(
            parameter=1.0, sensitivity=1.0, value_discretization_interval=dv,
            pessimistic_estimate=True, use_connect_dots=False)),
        (LaplaceTradeoff(2.0 / 0.5), pld.from_laplace_mechanism(
            parameter=0.5, sensitivity=2.0, value_discretization_interval=dv,
            pessimistic_estimate=True, use_connect_dots=False)),
    ]
    for f, dist in cases:
        for eps in (0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0):
            got = dist.get_delta_for_epsilon(eps)
            ours = delta_for_epsilon(f, eps)
            assert ours - 1e-12 <= got <= _pld_upper(f, eps, dv) + 1e-12
            worst = max(worst, abs(got - ours))
    assert worst <= 1e-4  # ≤ dv · max|δ'(ε)| ≤ dv (measured: 1.5e-5)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_against_dp_accounting_connect_the_dots():
    """dp_accounting's default connect-the-dots PLD is pessimistic with a second-order
    discretisation error (interpolation of e^{-L} between grid points): O(dv²) = 1e-8."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    dv = 1e-4
    for f, dist in [
        (GaussianTradeoff(2.0), pld.from_gaussian_mechanism(
            standard_deviation=1.5, sensitivity=3.0, value_discretization_interval=dv)),
        (LaplaceTradeoff(4.0), pld.from_laplace_mechanism(
            parameter=0.5, sensitivity=2.0, value_discretization_interval=dv)),
    ]:
        for eps in (0.0, 0.5, 1.0, 3.0, 5.0):
            got, ours = dist.get_delta_for_epsilon(eps), delta_for_epsilon(f, eps)
            assert ours - 1e-12 <= got <= ours + dv**2


# ---------------------------------------------------------- bad parameters
BAD = [
    ("epsilon", lambda: DPTradeoff(-0.1, 0.0)),
    ("epsilon", lambda: DPTradeoff(math.inf, 0.0)),
    ("delta", lambda: DPTradeoff(1.0, 1.5)),
    ("delta", lambda: DPTradeoff(1.0, -1e-9)),
    ("mu", lambda: GaussianTradeoff(-1.0)),
    ("mu", lambda: GaussianTradeoff(float("nan"))),
    ("mu", lambda: LaplaceTradeoff(-0.5)),
    ("alpha", lambda: GaussianTradeoff(1.0)(1.5)),
    ("alpha", lambda: GaussianTradeoff(1.0)(np.array([0.2, -0.1]))),
    ("alpha", lambda: DPTradeoff(1.0, 0.0)(np.array([0.2, np.nan]))),
    ("alpha", lambda: SubsampledTradeoff(LaplaceTradeoff(1.0), 0.3)(2.0)),
    ("beta", lambda: GaussianTradeoff(1.0).inverse(-0.5)),
    ("p", lambda: SubsampledTradeoff(GaussianTradeoff(1.0), 1.2)),
    ("p", lambda: SubsampledDPTradeoff(1.0, 0.0, -0.2)),
    ("p", lambda: amplify_tradeoff(GaussianTradeoff(1.0), 2.0)),
    ("p", lambda: subsampled_closed_form(GaussianTradeoff(1.0), float("nan"))),
    ("epsilon", lambda: SubsampledDPTradeoff(-1.0, 0.0, 0.5)),
    ("delta", lambda: SubsampledDPTradeoff(1.0, 2.0, 0.5)),
    ("epsilon", lambda: delta_for_epsilon(GaussianTradeoff(1.0), -1.0)),
    ("delta", lambda: epsilon_for_delta(GaussianTradeoff(1.0), 1.1)),
    ("f", lambda: amplify_tradeoff(PiecewiseLinearTradeoff([0, 0.1, 1], [0.5, 0.2, 0]), 0.5)),
    ("f", lambda: amplify_tradeoff(lambda a: np.maximum(0.0, 0.5 - 0.5 * a), 0.5)),
    ("f", lambda: subsampled_closed_form(
        PiecewiseLinearTradeoff([0, 0.1, 1], [0.5, 0.2, 0], symmetric=False), 0.5)),
    ("base", lambda: SubsampledTradeoff(
        PiecewiseLinearTradeoff([0, 0.1, 1], [0.5, 0.2, 0]), 0.5)),
    ("f", lambda: min_error_sum("not a curve")),
    ("f", lambda: delta_for_epsilon(3.0, 1.0)),
    ("alphas", lambda: PiecewiseLinearTradeoff([0.0, 1.5], [1.0, 0.0])),
    ("betas", lambda: PiecewiseLinearTradeoff([0.0, 1.0], [0.0, 1.0])),
]


@pytest.mark.parametrize(("name", "call"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_input_names_parameter(name, call):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
