"""Noise calibration and exact privacy profiles of the Laplace and Gaussian mechanisms.

Calibration maps (sensitivity, ε[, δ]) to a noise scale; profiles map a normalised shift
μ = sensitivity / scale to the exact hockey-stick divergence δ(ε) (and its inverse ε(δ)).

- Laplace: b = C_1 / ε ([RPS] Theorem 4.5, Dwork–Roth Thm 3.6).
- Classical Gaussian: σ = C_2 √(2 ln(1.25/δ)) / ε, valid for ε ∈ (0, 1], δ ∈ (0, 1)
  (Dwork–Roth Thm A.1; THEORY.md §5 — the extracted seed drops the square in c²).
- Analytic Gaussian (Balle & Wang 2018, Thm 8): the smallest σ with exact δ(ε) ≤ δ.
- Gaussian profile (Balle & Wang 2018, Thm 8): δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
- Laplace profile (scalar output, shift μ in units of b): δ(ε) = 1 − e^{(ε − μ)/2} for ε < μ,
  0 otherwise (the hockey-stick divergence between Lap(0, 1) and Lap(μ, 1); symmetric).

The Gaussian profile is evaluated as Φ(a)·(1 − R(b)/R(a)) with the Mills ratio
R(x) = Φ(x)/φ(x) = √(π/2)·erfcx(−x/√2); this avoids the cancellation of the direct difference
in the tails, and its logarithm stays finite when δ underflows (e.g. δ = 1e-300).

Every inverse (``gaussian_epsilon``, ``gaussian_sigma_analytic``) is rounded in the safe
direction: the returned ε (or σ) satisfies δ(ε) ≤ δ when re-evaluated with the same profile.

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising. ICML.
Dwork, C. and Roth, A. (2014). The algorithmic foundations of differential privacy.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from audit._validate import check_delta, check_epsilon, check_in_range, check_positive

__all__ = [
    "laplace_scale",
    "gaussian_sigma_classical",
    "gaussian_sigma_analytic",
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_delta",
    "laplace_epsilon",
]

_SQRT2 = math.sqrt(2.0)
_LOG_HALF_PI = 0.5 * math.log(math.pi / 2.0)


# ----------------------------------------------------------------------------- validation
def _check_mu(mu: object) -> float:
    """μ ∈ [0, ∞]: μ = 0 means no distinguishability, μ = ∞ means no noise."""
    return check_in_range("mu", mu, 0.0, math.inf, lo_closed=True, hi_closed=True)


def _check_sensitivity(sensitivity: object) -> float:
    return check_positive(sensitivity, "sensitivity")


# ----------------------------------------------------------------------------- calibration
def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Laplace noise scale b = C_1 / ε giving (ε, 0)-DP.

    Parameters
    ----------
    sensitivity : float
        ℓ1 sensitivity C_1, in (0, ∞).
    epsilon : float
        Privacy parameter, in (0, ∞).

    Returns
    -------
    float
        The scale b.

    Raises
    ------
    ValueError
        If a parameter is out of range.

    References
    ----------
    Dwork & Roth (2014), Thm 3.6; [RPS] Theorem 4.5.
    """
    c = _check_sensitivity(sensitivity)
    eps = check_epsilon(epsilon, allow_zero=False)
    return c / eps


def gaussian_sigma_classical(sensitivity: float, epsilon: float, delta: float) -> float:
    """Classical Gaussian σ = C_2 √(2 ln(1.25/δ)) / ε giving (ε, δ)-DP.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity C_2, in (0, ∞).
    epsilon : float
        In (0, 1]: the classical theorem is proved only there.
    delta : float
        In (0, 1).

    Returns
    -------
    float
        The standard deviation σ.

    Raises
    ------
    ValueError
        If a parameter is out of range (in particular ε > 1).

    References
    ----------
    Dwork & Roth (2014), Thm A.1 (needs c² ≥ 2 ln(1.25/δ)); [RPS] Theorem 4.7; THEORY.md §5.
    """
    c = _check_sensitivity(sensitivity)
    eps = check_in_range("epsilon", epsilon, 0.0, 1.0, lo_closed=False, hi_closed=True)
    dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    return c * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def gaussian_sigma_analytic(sensitivity: float, epsilon: float, delta: float) -> float:
    """Analytic Gaussian calibration: the smallest σ with exact δ(ε) ≤ δ.

    Parameters
    ----------
    sensitivity : float
        ℓ2 sensitivity Δ, in (0, ∞).
    epsilon : float
        In [0, ∞).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        σ = Δ / μ*, where μ* is the largest μ with ``gaussian_delta(epsilon, μ) <= delta``
        (rounded so that the inequality holds in floating point).

    Raises
    ------
    ValueError
        If a parameter is out of range.

    References
    ----------
    Balle & Wang (2018), Theorem 8 and Algorithm 1.
    """
    c = _check_sensitivity(sensitivity)
    eps = check_epsilon(epsilon)
    dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    mu = _gaussian_mu_for(eps, dlt)
    return c / mu


def _gaussian_mu_for(eps: float, dlt: float) -> float:
    """Largest μ > 0 with δ_μ(ε) ≤ δ (δ_μ(ε) is increasing in μ)."""
    log_target = math.log(dlt)

    def g(log_mu: float) -> float:
        return _log_gaussian_delta(eps, math.exp(log_mu)) - log_target

    lo, hi = -1.0, 1.0
    while g(lo) > 0:
        lo -= 2.0
        if lo < -700:  # pragma: no cover - δ(ε) → 0 as μ → 0 for any δ > 0
            raise RuntimeError("could not bracket mu")
    while g(hi) <= 0:
        hi += 2.0
        if hi > 700:  # pragma: no cover
            raise RuntimeError("could not bracket mu")
    root = optimize.brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    mu = math.exp(root)
    # Safe rounding: step down until the profile is certified at this μ.
    while _delta_value(eps, mu) > dlt:
        mu = float(np.nextafter(mu, 0.0)) * (1 - 1e-15)
    return float(mu)


# ----------------------------------------------------------------------------- Gaussian profile
def _log_mills(x: float) -> float:
    """log R(x) with R(x) = Φ(x)/φ(x) = √(π/2) erfcx(−x/√2)."""
    return _LOG_HALF_PI + math.log(special.erfcx(-x / _SQRT2))


def _log_gaussian_delta(eps: float, mu: float) -> float:
    """log δ_μ(ε) for μ ∈ (0, ∞), ε ∈ [0, ∞); −inf when δ = 0 exactly."""
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


def _delta_value(eps: float, mu: float) -> float:
    """δ_μ(ε) exactly as :func:`gaussian_delta` returns it (for safe rounding of inverses)."""
    return float(min(1.0, math.exp(_log_gaussian_delta(eps, mu))))


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
    Balle & Wang (2018), Theorem 8; THEORY.md §5.
    """
    eps = check_in_range("epsilon", epsilon, 0.0, math.inf, hi_closed=True)
    m = _check_mu(mu)
    if m == 0.0 or math.isinf(eps):
        return 0.0
    if math.isinf(m):
        return 1.0
    return _delta_value(eps, m)


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
    if _log_gaussian_delta(0.0, m) <= log_target:
        return 0.0

    def g(e: float) -> float:
        return _log_gaussian_delta(e, m) - log_target

    hi = max(1.0, m * m)
    while g(hi) > 0:
        hi *= 2.0
    root = optimize.brentq(g, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500)
    eps = float(root)
    while _delta_value(eps, m) > dlt:
        eps = float(np.nextafter(eps, math.inf)) * (1 + 1e-15) + 1e-300
    return eps


# ----------------------------------------------------------------------------- Laplace profile
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
    privacy profile); THEORY.md §6 (the same pair's trade-off curve).
    """
    eps = check_in_range("epsilon", epsilon, 0.0, math.inf, hi_closed=True)
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
