"""Tests for audit.theory.pair.masses: interval masses of a scalar mixture, their rounding
bounds, the log density ratio and the signed log-difference.

Oracles: scipy's Laplace and normal CDF/SF, mpmath at 50 digits for far-tail masses, and
closed forms written out by hand.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.theory.pair.masses import U, check_pair, interval_masses, logdiff, logratio, tails

LAWS = {NoiseKind.LAPLACE: stats.laplace, NoiseKind.GAUSSIAN: stats.norm}


@pytest.mark.parametrize("noise", list(NoiseKind))
def test_tails_match_scipy_in_both_tails(noise):
    z = np.array([-300.0, -30.0, -2.0, -1e-9, 0.0, 1e-9, 0.7, 30.0, 300.0])
    lo, hi = tails(noise, z)
    law = LAWS[noise]
    assert np.allclose(lo, law.cdf(z), rtol=1e-13, atol=0.0)
    assert np.allclose(hi, law.sf(z), rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("noise", list(NoiseKind))
def test_interval_masses_match_scipy(noise):
    M = Mixture(np.array([0.2, 0.5, 0.3]), np.array([-1.0, 0.5, 2.0]), noise, 0.8)
    lo = np.array([-np.inf, -3.0, 0.0, 0.4, 1.0, -np.inf])
    hi = np.array([-1.5, 0.0, 0.4, 1.0, np.inf, np.inf])
    law = LAWS[noise]
    want = sum(w * (law.cdf(hi, s, 0.8) - law.cdf(lo, s, 0.8))
               for w, s in zip(M.weights, M.scalar_shifts, strict=True))
    got, err = interval_masses(M, lo, hi)
    assert np.all(np.abs(got - want) <= err + 1e-15)
    assert got[-1] == pytest.approx(1.0, abs=4 * U * 3)
    assert np.all(err > 0) and np.all(err < 1e-14)


def test_far_tail_masses_keep_their_relative_accuracy():
    # Laplace(0, 1) on [30, 31] and Gaussian on [10, 11]: masses near 1e-14 and 1e-23, which
    # 1 − cdf would round to 0 or to a multiple of 2^-53
    lap = Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0)
    gau = Mixture(np.array([1.0]), np.array([0.0]), "gaussian", 1.0)
    with mpmath.workdps(50):
        want_lap = float((mpmath.exp(-30) - mpmath.exp(-31)) / 2)
        want_gau = float(mpmath.ncdf(-10) - mpmath.ncdf(-11))
    (m_lap,), (e_lap,) = interval_masses(lap, [30.0], [31.0])
    (m_gau,), (e_gau,) = interval_masses(gau, [-11.0], [-10.0])  # the lower tail, by symmetry
    assert m_lap == pytest.approx(want_lap, rel=1e-14) and abs(m_lap - want_lap) <= e_lap
    assert m_gau == pytest.approx(want_gau, rel=1e-12) and abs(m_gau - want_gau) <= e_gau + \
        1e-12 * want_gau


def test_logratio_by_hand():
    P = Mixture(np.array([1.0]), np.array([1.0]), "laplace", 2.0)
    Q = Mixture(np.array([1.0]), np.array([0.0]), "laplace", 2.0)
    x = np.array([-3.0, 0.25, 5.0])
    val, err = logratio(P, Q, 0.1, x)
    assert np.allclose(val, (np.abs(x) - np.abs(x - 1.0)) / 2.0 - 0.1, rtol=1e-13, atol=1e-14)
    assert np.all(err > 0) and np.all(err < 1e-11)
    assert logratio(P, Q, 0.0, 0.5)[0].shape == (1,)  # scalars are promoted


@pytest.mark.parametrize(("la", "lb"), [(0.0, -1.0), (-1.0, 0.0), (-700.0, -700.5),
                                        (3.0, -np.inf), (1e-12, 0.0)])
def test_logdiff_is_the_signed_log_of_the_difference(la, lb):
    sign, val = logdiff(la, lb)
    with mpmath.workdps(50):
        d = mpmath.exp(la) - (mpmath.exp(lb) if np.isfinite(lb) else 0)
        want = float(mpmath.log(abs(d)))
    assert sign == (1.0 if la > lb else -1.0)
    assert val == pytest.approx(want, rel=1e-12)
    assert logdiff(2.0, 2.0) == (0.0, -np.inf)


@pytest.mark.parametrize(("P", "Q", "message"), [
    ("P", Mixture([1.0], [0.0], "laplace", 1.0), r"P must be an audit.mixture.Mixture"),
    (Mixture([1.0], [0.0], "laplace", 1.0), None, r"Q must be an audit.mixture.Mixture"),
    (Mixture([1.0], [[0.0, 1.0]], "laplace", 1.0), Mixture([1.0], [0.0], "laplace", 1.0),
     r"P must be a scalar mixture \(dim = 1\), got dim=2"),
    (Mixture([1.0], [0.0], "laplace", 1.0), Mixture([1.0], [0.0], "gaussian", 1.0),
     r"P and Q must have the same noise kind, got P.noise='laplace', Q.noise='gaussian'"),
    (Mixture([1.0], [0.0], "laplace", 1.0), Mixture([1.0], [0.0], "laplace", 2.0),
     r"P and Q must have the same noise scale, got P.scale=1.0, Q.scale=2.0"),
])
def test_check_pair(P, Q, message):
    with pytest.raises(ValueError, match=message):
        check_pair(P, Q)


def test_check_pair_returns_the_pair():
    P = Mixture([1.0], [0.0], "gaussian", 1.0)
    Q = Mixture([0.5, 0.5], [0.0, 1.0], "gaussian", 1.0)
    got = check_pair(P, Q)
    assert got[0] is P and got[1] is Q
    assert math.isclose(U, 2.0 ** -53)
