"""Tests for audit.theory.tradeoff.conversions: δ(ε), ε(δ) and the minimum error sum.

Oracles: the closed forms against the generic numerical path (the same curve hidden behind a
callable), mpmath in the tails, and dp_accounting's privacy-loss distributions.
"""

from __future__ import annotations

import math

import mpmath
import pytest

from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    SubsampledDPTradeoff,
    SubsampledTradeoff,
    amplify_tradeoff,
    delta_for_epsilon,
    epsilon_for_delta,
    min_error_sum,
    subsampled_closed_form,
)
from audit.theory.tradeoff.conversions import _numeric_epsilon, _smallest_root, numeric_delta

from .common import hidden


@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0, 6.0])
def test_numeric_delta_matches_gaussian_closed_form(mu):
    g = GaussianTradeoff(mu)
    h = hidden(g)
    for eps in (0.0, 0.3, 1.0, 2.5, 5.0, 10.0):
        assert delta_for_epsilon(h, eps) == pytest.approx(delta_for_epsilon(g, eps), abs=1e-12)


@pytest.mark.parametrize("f", [DPTradeoff(2.0, 0.01), LaplaceTradeoff(1.7),
                               SubsampledDPTradeoff(3.0, 0.1, 0.2)], ids=repr)
def test_numeric_delta_matches_closed_forms(f):
    for eps in (0.0, 0.5, 1.0, 1.69, 3.0):
        assert delta_for_epsilon(hidden(f), eps) == pytest.approx(delta_for_epsilon(f, eps),
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



BAD = [
    ("epsilon", lambda: delta_for_epsilon(GaussianTradeoff(1.0), -1.0)),
    ("delta", lambda: epsilon_for_delta(GaussianTradeoff(1.0), 1.1)),
    ("f", lambda: min_error_sum("not a curve")),
    ("f", lambda: delta_for_epsilon(3.0, 1.0)),
]


@pytest.mark.parametrize(("name", "call"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_input_names_parameter(name, call):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


# ------------------------------------------------------------------ edges (issue 11)
@pytest.mark.parametrize("mu", [20.0, 30.0, 40.0])
@pytest.mark.parametrize("p", [0.3, 0.5, 1.0])
def test_epsilon_is_zero_at_delta_zero_up_to_rounding(mu, p):
    """δ(0) = p(2Φ(μ/2) − 1) rounds to p for μ ≥ 20: every ε ≥ 0 satisfies δ(ε) ≤ p, so the
    answer is 0 (it used to be 1.0, the end of the root bracket)."""
    assert epsilon_for_delta(amplify_tradeoff(GaussianTradeoff(mu), p), p) == 0.0
    assert epsilon_for_delta(GaussianTradeoff(mu), 1.0) == 0.0


def test_numeric_path_refuses_beyond_its_range():
    """A curve without closed forms whose ε(δ) exceeds 700: a ValueError, not inf or a number
    that may be too small (its δ(ε) grid reaches α = 1e-300 only)."""
    with pytest.raises(ValueError, match=r"\bdelta\b"):
        epsilon_for_delta(hidden(LaplaceTradeoff(800.0)), 1e-6)
    # within the range it agrees with the closed form
    assert epsilon_for_delta(hidden(LaplaceTradeoff(50.0)), 1e-6) == pytest.approx(
        epsilon_for_delta(LaplaceTradeoff(50.0), 1e-6), rel=1e-9)


@pytest.mark.parametrize("eps", [0.0, 10.0, 600.0, 700.0])
def test_numeric_delta_never_understates_below_the_grid(eps):
    """The maximiser of 1 − f(α) − e^ε α for Laplace μ = 800 lies near α = e^{−(ε+μ)/2} < 1e-300,
    out of the grid's reach; the numerical δ(ε) is then an upper bound, never below the truth."""
    f = LaplaceTradeoff(800.0)
    assert numeric_delta(hidden(f), eps) >= delta_for_epsilon(f, eps) - 1e-12


def test_smallest_root_on_a_plateau():
    """brentq stops at any zero; the conversion wants the first ε with δ(ε) ≤ δ."""
    def h(e):
        return max(0.5 - e, 0.0)

    assert _smallest_root(h, 2.0) == pytest.approx(0.5, abs=1e-12)
    assert _smallest_root(lambda e: max(0.5 - e, -1.0), 0.7) == pytest.approx(0.5, abs=1e-12)


def test_generic_inverse_agrees_with_closed_form_inverse():
    """The root finder (no closed form) against the profile identity of C_p."""
    for c in (SubsampledTradeoff(LaplaceTradeoff(2.0), 0.3), SubsampledDPTradeoff(1.5, 1e-3, 0.4)):
        for delta in (1e-9, 1e-4, 0.05):
            assert _numeric_epsilon(c, delta) == pytest.approx(epsilon_for_delta(c, delta),
                                                               abs=1e-8)
