"""Connect-the-Dots PLDs of a pair (audit.theory.pair.ctd, docs/THEORY.md §10.5) against the
certified hockey-stick integrator and against dp_accounting's subsampled mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.theory.pair import ctd
from audit.theory.pair.hockey import hockey
from audit.theory.pair.masses import U

Q_OBS = 0.1


def _pair(noise: str, scale: float, lo: float, hi: float, q: float = Q_OBS):
    """(hi against lo) behind the mask: both read as 0 when missing (lo = 0: the missing
    record itself, the count-like pair)."""
    P = Mixture([1 - q, q], [0.0, hi], noise, scale)
    Q = Mixture([1.0], [0.0], noise, scale) if lo == 0.0 else \
        Mixture([1 - q, q], [0.0, lo], noise, scale)
    return P, Q


PAIRS = {
    "laplace-count": _pair("laplace", 1.0, 0.0, 1.0),
    "laplace-sym": _pair("laplace", 1.0, -1.0, 1.0),
    "gaussian-count": _pair("gaussian", 2.0, 0.0, 1.0),
    "gaussian-sym": _pair("gaussian", 0.7, -1.0, 1.0),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_order_profile_is_an_upper_bound_within_float_error_of_the_integrator(name):
    """Every ``upper`` lies above the integrator's lower end (value − error, below the exact
    δ) and at most its error plus 1e-13 above its value (ours: brackets of ~1e-11 of x, whose
    error is second order, and mass rounding of a few u)."""
    P, Q = PAIRS[name]
    eps = np.linspace(-0.6, 1.2, 37)
    for A, B in ((P, Q), (Q, P)):
        prof = ctd.order_profile(A, B, eps)
        for e, up in zip(eps, prof.upper, strict=True):
            ref = hockey(A, B, float(e))
            assert ref.value - ref.error <= up <= ref.value + ref.error + 1e-13, (e, up, ref)
        # the cells partition the output axis: P- and Q-masses sum to 1 (each cell's mass
        # is rounded down for P, up for Q, by at most a few u)
        n = prof.p_bins.size
        assert 1 - 8 * U * n <= prof.p_bins.sum() <= 1 + 1e-15
        assert 1 - 1e-15 <= prof.q_bins.sum() <= 1 + 8 * U * n


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_one_release_pmfs_bracket_the_exact_profile_off_the_grid(name):
    """k = 1: the pessimistic PMF's δ is above the exact profile at ε between grid points
    (where Connect-the-Dots interpolates), the optimistic one's below, both orders."""
    P, Q = PAIRS[name]
    hi, lo = ctd.ctd_pair_plds(P, Q, 1e-3)
    eps = np.arange(0.0, 0.8, 0.0173)  # off the 1e-3 grid
    for A, B, up, down in ((P, Q, hi._pmf_remove, lo._pmf_remove),
                           (Q, P, hi._pmf_add, lo._pmf_add)):
        d_up, d_lo = up.get_delta_for_epsilon(eps), down.get_delta_for_epsilon(eps)
        for e, a, b in zip(eps, d_up, d_lo, strict=True):
            ref = hockey(A, B, float(e))
            assert a >= ref.value - ref.error - 1e-15 and b <= ref.value + ref.error + 1e-15
            # tight: Connect-the-Dots is off by the chord over one 1e-3 step at most
            assert a - b <= 2e-3


def test_unordered_gaussian_shifts_are_not_supported_and_fall_back():
    from audit.theory.pair.releases import fresh_pair_epsilon

    P = Mixture([0.9, 0.1], [0.0, 2.0], "gaussian", 1.0)
    Q = Mixture([0.9, 0.1], [0.0, 1.0], "gaussian", 1.0)  # NA read outside the domain
    assert not ctd.supports(P, Q) and ctd.ctd_pair_plds(P, Q, 1e-4) is None
    with pytest.raises(ValueError, match="monotone"):
        ctd.order_profile(P, Q, [0.0, 1.0])
    v = fresh_pair_epsilon(P, Q, 5, 1e-5)  # the rounded grid of audit.theory.pld
    assert math.isfinite(v.value) and v.error <= 2e-3


def test_bad_arguments_are_refused_by_name():
    P, Q = PAIRS["laplace-count"]
    with pytest.raises(ValueError, match="epsilons"):
        ctd.order_profile(P, Q, [0.2, 0.1])
    with pytest.raises(ValueError, match="discretization"):
        ctd.ctd_pair_plds(P, Q, 0.0)
    with pytest.raises(ValueError, match="discretization"):
        ctd.ctd_pair_plds(P, Q, 1e-9)  # 2.2e8 grid points


def test_pessimistic_pmf_of_exact_points_is_their_hull():
    """The hull construction reproduces given convex δ values at the grid points (the
    profile of Lap(0) against Lap(1): dp_accounting's closed form), within 16u."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    h = 1e-3
    ref = dpl.from_laplace_mechanism(1.0, sensitivity=1.0, value_discretization_interval=h)
    idx = np.arange(-1001, 1002)
    d = np.asarray(ref.get_delta_for_epsilon(idx * h))
    pmf = ctd.ctd_pessimistic_pmf(idx, d, h)
    got = np.asarray(pmf.get_delta_for_epsilon(idx * h))
    assert np.all(got >= d - 1e-15) and np.max(got - d) <= 32 * U


def test_profile_beyond_the_largest_loss_is_certified_zero():
    """The missing record against the record (σ = 0.7): L = −ln(0.9 + 0.1 e^{(x−1/2)/σ²}) is
    at most −ln 0.9, flat far left; above it δ = 0, and the bound must say so (a crossing at
    the end of the piece, where L′ ≈ e^{−55}, gets a bracket of a few ulps, not the piece)."""
    P, Q = _pair("gaussian", 0.7, 0.0, 1.0)
    prof = ctd.order_profile(Q, P, np.array([-math.log(0.9) + 1e-6, 1.0, 5.0, 14.0]))
    assert np.all(prof.upper <= 1e-15)
    hi, lo = ctd.ctd_pair_plds(P, Q, 1e-4)
    assert hi._pmf_add._infinity_mass <= 1e-14 and hi._pmf_remove._infinity_mass <= 1e-14


def test_a_large_laplace_loss_puts_no_mass_at_infinity():
    """A Laplace pair of loss up to 18.8 (shift 20, q = 0.3): the profile's cancellation
    bound there is about e^18.8 ulps (6.5e-8), which composed 10 times moved ε at δ = 1e-5
    from 166.5545 to 166.717; beyond the largest loss δ is 0 exactly, so the pessimistic PLD
    holds no infinite mass, and ten releases agree with dp_accounting's subsampled Laplace
    (its own pessimistic estimate, an independent construction) to 1e-4."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    from audit.theory.pld import compose_epsilon

    P, Q = _pair("laplace", 1.0, 0.0, 20.0, q=0.3)
    hi, lo = ctd.ctd_pair_plds(P, Q, 1e-4)
    assert hi._pmf_remove._infinity_mass <= 1e-14 and hi._pmf_add._infinity_mass <= 1e-14
    upper, lower = compose_epsilon(hi, 10, 1e-5), compose_epsilon(lo, 10, 1e-5)
    assert 0 <= upper - lower <= 1e-3
    ref = dpl.from_laplace_mechanism(1.0, sensitivity=20.0, sampling_prob=0.3,
                                     value_discretization_interval=1e-4)
    assert upper == pytest.approx(ref.self_compose(10).get_epsilon_for_delta(1e-5), abs=1e-4)


class _Flat:
    """One more pair given by its bounds: δ ≤ ``value`` at every ε below ``top``."""

    def __init__(self, value: float, top: float) -> None:
        self.value, self.top = value, top

    def upper(self, eps):
        return np.where(np.asarray(eps) < self.top, self.value, 0.0)


def test_the_envelope_takes_one_more_pair_by_its_bounds():
    """``more``: the envelope covers the extra pair's bounds too. A flat 10⁻³ up to ε = 10
    lifts δ at ε = 2 to the convex hull of those points: 10⁻³ less e²/e¹⁰ of it. A bad ``top``
    is refused by name."""
    P = Mixture([0.7, 0.3], [0.0, 1.0], "gaussian", 1.0)
    Q = Mixture([1.0], [0.0], "gaussian", 1.0)
    plain = ctd.envelope_pmf([(P, Q)], 1e-3)
    more = ctd.envelope_pmf([(P, Q)], 1e-3, more=_Flat(1e-3, 10.0))
    assert plain.get_delta_for_epsilon(2.0) < 5e-4
    assert more.get_delta_for_epsilon(2.0) == pytest.approx(1e-3 * (1 - math.exp(-8)), rel=1e-3)
    with pytest.raises(ValueError, match="more.top"):
        ctd.envelope_pmf([(P, Q)], 1e-3, more=_Flat(1e-3, float("nan")))
