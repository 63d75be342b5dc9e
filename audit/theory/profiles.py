"""Exact privacy profiles δ(ε) and their inverses ε(δ): the one home of each closed form.

A profile maps a normalised shift μ = sensitivity / scale to the hockey-stick divergence
δ(ε) between the two output laws of a neighbouring pair ([DRS] Prop. 2.12: for a symmetric
trade-off function f, δ(ε) = 1 + f*(−e^ε)). The trade-off classes of
:mod:`audit.theory.tradeoff` delegate their conversions here, so a curve and its profile
can never disagree.

- Gaussian (Balle & Wang 2018, Thm 8): δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
- Laplace, scalar output (hockey-stick divergence between Lap(0, 1) and Lap(μ, 1)):
  δ(ε) = 1 − e^{(ε − μ)/2} for ε < μ, 0 otherwise.
- (ε, δ)-DP: the smallest sum of type I and type II errors, 2(1 − δ)/(1 + e^ε), attained
  at the fixed point x* = (1 − δ)/(1 + e^ε) of f_{ε,δ} ([DRS] Eq. 5).

The Gaussian profile is evaluated as Φ(a)·(1 − R(b)/R(a)) with the Mills ratio
R(x) = Φ(x)/φ(x) = √(π/2)·erfcx(−x/√2); this avoids the cancellation of the direct difference
in the tails, and its logarithm stays finite when δ underflows (e.g. δ = 1e-300).

Every inverse is rounded in the safe direction: the returned ε satisfies δ(ε) ≤ δ when
re-evaluated with the same profile.

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising. ICML.
Balle, B., Barthe, G. and Gaboardi, M. (2018). Privacy amplification by subsampling: tight
analyses via couplings and divergences. NeurIPS.
[DRS] J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS-B 84(1), 2022.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from audit._numeric import brentq, first_true
from audit._validate import check_delta, check_in_range

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_delta",
    "laplace_epsilon",
    "dp_min_error_sum",
]

_EPS = float(np.finfo(float).eps)
_SQRT2 = math.sqrt(2.0)
_LOG_HALF_PI = 0.5 * math.log(math.pi / 2.0)


def _check_mu(mu: object) -> float:
    """μ ∈ [0, ∞]: μ = 0 means no distinguishability, μ = ∞ means no noise."""
    return check_in_range("mu", mu, 0.0, math.inf, lo_closed=True, hi_closed=True)


def _check_epsilon_or_inf(epsilon: object) -> float:
    return check_in_range("epsilon", epsilon, 0.0, math.inf, hi_closed=True)


# ----------------------------------------------------------------------------- Gaussian
def _log_mills(x: float) -> float:
    """log R(x) with R(x) = Φ(x)/φ(x) = √(π/2) erfcx(−x/√2)."""
    return _LOG_HALF_PI + math.log(special.erfcx(-x / _SQRT2))


def log_gaussian_delta(eps: float, mu: float) -> float:
    """log δ_μ(ε) for μ ∈ (0, ∞), ε ∈ [0, ∞]; −inf when δ = 0 exactly (no validation)."""
    if math.isinf(eps):
        return -math.inf
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    if a > 5.0:
        # Φ(a) close to 1: the direct form has no cancellation problem that matters here
        # (δ ≥ Φ(a) − e^ε Φ(b) with the second term far below the first in relative terms,
        # or both O(1)); erfcx(−a/√2) would overflow for large a.
        log_t2 = eps + float(special.log_ndtr(b))
        t1 = float(special.ndtr(a))
        val = t1 - math.exp(log_t2) if log_t2 > -745 else t1
        return math.log(val) if val > 0 else -math.inf
    # δ = Φ(a) (1 − R(b)/R(a)); R(b)/R(a) < 1 since R is increasing and b < a.
    log_ratio = _log_mills(b) - _log_mills(a)
    if log_ratio >= 0.0:
        return -math.inf
    return float(special.log_ndtr(a)) + math.log(-math.expm1(log_ratio))


def gaussian_delta_value(eps: float, mu: float) -> float:
    """δ_μ(ε) exactly as :func:`gaussian_delta` returns it, for μ ∈ (0, ∞) (no validation).

    Every inverse re-evaluates this to round its answer in the safe direction.
    """
    return float(min(1.0, math.exp(log_gaussian_delta(eps, mu))))


def gaussian_delta(epsilon: float, mu: float) -> float:
    """Exact privacy profile of the Gaussian mechanism, δ(ε) at μ = Δ/σ.

    Parameters
    ----------
    epsilon : float
        In [0, ∞] (∞ gives 0).
    mu : float
        Normalised sensitivity Δ/σ, in [0, ∞] (0 gives δ = 0, ∞ gives δ = 1).

    Returns
    -------
    float
        δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), in [0, 1].

    Raises
    ------
    ValueError
        If a parameter is out of range.

    References
    ----------
    Balle & Wang (2018), Theorem 8; docs/THEORY.md §5.
    """
    eps = _check_epsilon_or_inf(epsilon)
    m = _check_mu(mu)
    if m == 0.0 or math.isinf(eps):
        return 0.0
    if math.isinf(m):
        return 1.0
    return gaussian_delta_value(eps, m)


def gaussian_epsilon(delta: float, mu: float) -> float:
    """Smallest ε ≥ 0 with Gaussian δ_μ(ε) ≤ δ.

    Parameters
    ----------
    delta : float
        In [0, 1]. δ = 0 gives ε = ∞ for μ > 0.
    mu : float
        Normalised sensitivity Δ/σ, in [0, ∞].

    Returns
    -------
    float
        ε(δ), rounded up so that ``gaussian_delta(result, mu) <= delta``.

    Raises
    ------
    ValueError
        If a parameter is out of range.

    References
    ----------
    Balle & Wang (2018), Theorem 8.
    """
    dlt = check_delta(delta)
    m = _check_mu(mu)
    if m == 0.0 or dlt == 1.0:
        return 0.0
    if math.isinf(m) or dlt == 0.0:
        return math.inf
    log_target = math.log(dlt)
    if log_gaussian_delta(0.0, m) <= log_target:
        return 0.0

    def g(e: float) -> float:
        return log_gaussian_delta(e, m) - log_target

    # δ_μ(ε) ≤ Φ(−ε/μ + μ/2) is tiny once ε ≫ μ²: the doubling ends, for any δ > 0
    hi = max(1.0, m * m)
    while g(hi) > 0:
        hi *= 2.0
    root = brentq(g, 0.0, hi, xtol=1e-14, rtol=4 * _EPS, maxiter=500)
    return _round_to_smallest(float(root), lambda e: gaussian_delta_value(e, m) <= dlt)


def _round_to_smallest(root: float, ok) -> float:
    """The smallest double ε ≥ 0 near ``root`` with ok(ε) (ok: False below ε(δ), True above).

    brentq stops within a relative 1e-15 of the root, on either side; stepping up certifies
    δ(ε) ≤ δ, and the bisection below takes back the excess, so the answer is ε(δ) to the last
    bit whenever the profile is evaluated monotonically.
    """
    hi = root
    while not ok(hi):
        hi = float(np.nextafter(hi, math.inf)) * (1 + 1e-15) + 1e-300
    step = 1e-14 + 8 * _EPS * hi
    lo = max(0.0, hi - step)
    while lo > 0.0 and ok(lo):
        step *= 2.0
        lo = max(0.0, hi - step)
    if ok(lo):
        return 0.0
    return float(first_true(ok, lo, hi))


# ----------------------------------------------------------------------------- Laplace
def laplace_delta(epsilon: float, mu: float) -> float:
    """Exact privacy profile of the scalar Laplace mechanism at μ = Δ/b.

    Parameters
    ----------
    epsilon : float
        In [0, ∞].
    mu : float
        Normalised sensitivity Δ/b, in [0, ∞].

    Returns
    -------
    float
        δ(ε) = 1 − e^{(ε − μ)/2} for ε < μ, else 0.

    Raises
    ------
    ValueError
        If a parameter is out of range.

    Notes
    -----
    This is the profile of a one-dimensional release (hockey-stick divergence between
    Lap(0, b) and Lap(Δ, b), symmetric in the two orders). For vector outputs with ℓ1
    sensitivity Δ only the pure bound δ(μ) = 0 is claimed by this project.

    References
    ----------
    Balle, Barthe & Gaboardi (2018), "Privacy amplification by subsampling", §4 (Laplace
    privacy profile); docs/THEORY.md §6 (the same pair's trade-off curve).
    """
    eps = _check_epsilon_or_inf(epsilon)
    m = _check_mu(mu)
    if eps >= m:
        return 0.0
    if math.isinf(m):
        return 1.0
    return float(-math.expm1((eps - m) / 2.0))


def laplace_epsilon(delta: float, mu: float) -> float:
    """Smallest ε ≥ 0 with scalar Laplace δ_μ(ε) ≤ δ: max(0, μ + 2 ln(1 − δ)).

    Parameters
    ----------
    delta : float
        In [0, 1].
    mu : float
        Normalised sensitivity Δ/b, in [0, ∞].

    Returns
    -------
    float
        ε(δ) (μ at δ = 0, 0 at δ = 1).

    Raises
    ------
    ValueError
        If a parameter is out of range.

    References
    ----------
    Inverse of :func:`laplace_delta`.
    """
    dlt = check_delta(delta)
    m = _check_mu(mu)
    if dlt == 1.0 or m == 0.0:
        return 0.0
    if math.isinf(m):
        return math.inf
    return float(max(0.0, m + 2.0 * math.log1p(-dlt)))


# ----------------------------------------------------------------------------- (ε, δ)-DP
def dp_fixed_point(eps: float, delta: float) -> float:
    """x* = (1 − δ)/(1 + e^ε), the fixed point f(x*) = x* of f_{ε,δ} (no validation).

    Written as (1 − δ) e^{−ε}/(1 + e^{−ε}) so that it never overflows (ε = ∞ gives 0).
    """
    if eps == 0.0:
        return 0.5 * (1.0 - delta)
    return (1.0 - delta) * math.exp(-eps) / (1.0 + math.exp(-eps))


def dp_min_error_sum(epsilon: float, delta: float) -> float:
    """Smallest type I + type II error sum under (ε, δ)-DP: 2(1 − δ)/(1 + e^ε).

    The minimum of α + f_{ε,δ}(α), attained at the fixed point x* = (1 − δ)/(1 + e^ε).

    Parameters
    ----------
    epsilon : float
        In [0, ∞] (∞ gives 0).
    delta : float
        In [0, 1].

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        If a parameter is out of range.

    References
    ----------
    [DRS] Eq. 5 (f_{ε,δ}); docs/THEORY.md §6.
    """
    e = _check_epsilon_or_inf(epsilon)
    d = check_delta(delta)
    return 2.0 * dp_fixed_point(e, d)
