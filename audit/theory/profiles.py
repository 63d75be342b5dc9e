"""Exact privacy profiles δ(ε) and their inverses ε(δ) of the Gaussian, Laplace and (ε, δ) laws.

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

The Gaussian and Laplace closed forms live with their noise classes
(:meth:`audit.noise.AdditiveNoise.delta_for_epsilon`, ``epsilon_for_delta``); the functions
here delegate to them. The Gaussian profile is evaluated as Φ(a)·(1 − R(b)/R(a)) with the
Mills ratio R(x) = Φ(x)/φ(x) = √(π/2)·erfcx(−x/√2); this avoids the cancellation of the direct
difference in the tails, and its logarithm stays finite when δ underflows (e.g. δ = 1e-300).

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

from audit._validate import check_delta, check_in_range
from audit.noise import GaussianNoise, LaplaceNoise

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_delta",
    "laplace_epsilon",
    "dp_min_error_sum",
]

_GAUSSIAN, _LAPLACE = GaussianNoise(), LaplaceNoise()


def _check_epsilon_or_inf(epsilon: object) -> float:
    return check_in_range("epsilon", epsilon, 0.0, math.inf, hi_closed=True)


# ----------------------------------------------------------------------------- Gaussian
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
    return _GAUSSIAN.delta_for_epsilon(epsilon, mu)


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
    return _GAUSSIAN.epsilon_for_delta(delta, mu)


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
    return _LAPLACE.delta_for_epsilon(epsilon, mu)


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
    return _LAPLACE.epsilon_for_delta(delta, mu)


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
