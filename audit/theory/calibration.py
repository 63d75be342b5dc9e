"""Noise calibration of the Laplace and Gaussian mechanisms.

Calibration maps (sensitivity, ε[, δ]) to a noise scale:

- Laplace: b = C_1 / ε ([RPS] Theorem 4.5, Dwork–Roth Thm 3.6).
- Classical Gaussian: σ = C_2 √(2 ln(1.25/δ)) / ε, valid for ε ∈ (0, 1], δ ∈ (0, 1)
  (Dwork–Roth Thm A.1; docs/THEORY.md §5: a text extraction of [RPS] drops the square in c²).
- Analytic Gaussian (Balle & Wang 2018, Thm 8): the smallest σ with exact δ(ε) ≤ δ, rounded
  in the safe direction (the profile re-evaluated at the returned σ is ≤ δ).

The closed forms live with their noise classes (:meth:`audit.noise.AdditiveNoise.calibrate`);
the functions here delegate to them. The exact privacy profiles (``gaussian_delta``,
``gaussian_epsilon``, ``laplace_delta``, ``laplace_epsilon``) live in
:mod:`audit.theory.profiles` and are re-exported here.

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising. ICML.
Dwork, C. and Roth, A. (2014). The algorithmic foundations of differential privacy.
"""

from __future__ import annotations

from audit.enums import Calibration
from audit.noise import GaussianNoise, LaplaceNoise
from audit.theory.profiles import (
    gaussian_delta,
    gaussian_epsilon,
    laplace_delta,
    laplace_epsilon,
)

__all__ = [
    "laplace_scale",
    "gaussian_sigma_classical",
    "gaussian_sigma_analytic",
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_delta",
    "laplace_epsilon",
]


_GAUSSIAN, _LAPLACE = GaussianNoise(), LaplaceNoise()


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

    Examples
    --------
    >>> laplace_scale(2.0, 1.0)
    2.0
    >>> laplace_scale(1.0, 0.5)
    2.0
    """
    return _LAPLACE.calibrate(sensitivity, epsilon)


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
    Dwork & Roth (2014), Thm A.1 (needs c² ≥ 2 ln(1.25/δ)); [RPS] Theorem 4.7; docs/THEORY.md §5.

    Examples
    --------
    >>> gaussian_sigma_classical(1.0, 1.0, 1e-5)
    4.8448...
    """
    return _GAUSSIAN.calibrate(sensitivity, epsilon, delta, Calibration.CLASSICAL)


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

    Examples
    --------
    The analytic σ is below the classical one at the same (ε, δ):

    >>> gaussian_sigma_analytic(1.0, 1.0, 1e-5)
    3.7306...
    >>> gaussian_sigma_analytic(1.0, 1.0, 1e-5) < gaussian_sigma_classical(1.0, 1.0, 1e-5)
    True
    """
    return _GAUSSIAN.calibrate(sensitivity, epsilon, delta, Calibration.ANALYTIC)
