"""One class per additive noise: what the package knows about Laplace and Gaussian noise.

A release adds i.i.d. noise of one kind and one scale s to every output coordinate. The base
class :class:`AdditiveNoise` holds what every such noise shares (the density written as
e^{−energy}/normaliser, argument checks, the edge cases of the privacy profile, the lookup);
:class:`LaplaceNoise` and :class:`GaussianNoise` add only their own: energy and normaliser,
CDF/SF of the standard law, the numpy sampler, the calibration closed forms and the exact
privacy profile δ(ε) of the unamplified mechanism. Callers look a noise up with
:func:`noise_of` and never branch on its kind; the numba kernels' integer code per noise
(``audit.simulation.packing.NOISE_CODES``) is the only other per-noise table.

The calibration and profile closed forms live here, in the shared layer, because they need
only numpy, scipy and the shared helpers; ``audit.theory.calibration`` and
``audit.theory.profiles`` keep their public functions as delegates (docs/DESIGN.md).

References
----------
Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising. ICML.
Balle, B., Barthe, G. and Gaboardi, M. (2018). Privacy amplification by subsampling: tight
analyses via couplings and divergences. NeurIPS.
Dwork, C. and Roth, A. (2014). The algorithmic foundations of differential privacy.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._numeric import brentq, first_true
from audit._validate import check_delta, check_epsilon, check_in_range, check_positive
from audit.enums import Calibration, NoiseKind

__all__ = ["AdditiveNoise", "LaplaceNoise", "GaussianNoise", "noise_of", "NOISES"]


class _Special:
    """``scipy.special``, imported on first use: a config, an adapter or the ``bound``
    command that never evaluates a Gaussian CDF does not pay for importing scipy."""

    def __getattr__(self, name: str):
        from scipy import special as module

        return getattr(module, name)


special = _Special()

_EPS = float(np.finfo(float).eps)
_SQRT2 = math.sqrt(2.0)
_LOG_HALF_PI = 0.5 * math.log(math.pi / 2.0)


def _check_mu(mu: object) -> float:
    """μ ∈ [0, ∞]: μ = 0 means no distinguishability, μ = ∞ means no noise."""
    return check_in_range("mu", mu, 0.0, math.inf, lo_closed=True, hi_closed=True)


@dataclass(frozen=True)
class AdditiveNoise(abc.ABC):
    """I.i.d. noise of scale s per output coordinate, density e^{−energy(t/s)} / normaliser(s).

    Class attributes (declarative, so that callers need not know which noise they hold):

    ``kind``
        The :class:`audit.enums.NoiseKind` member.
    ``norm``
        The ℓ-norm of the sensitivity its calibration uses (1 Laplace, 2 Gaussian).
    ``pure``
        True when its calibration gives pure ε-DP (natural δ = 0).
    ``negligible_tail``
        t such that each tail beyond t scales holds a mass of order 1e-11 (histogram ranges).
    ``mean_is_sufficient``
        True when the mean of k i.i.d. draws around one location is sufficient for it, so k
        releases of one query from one masked table are one release at scale s/√k
        (docs/THEORY.md §9.2).
    """

    kind: ClassVar[NoiseKind]
    norm: ClassVar[int]
    pure: ClassVar[bool]
    negligible_tail: ClassVar[float]
    mean_is_sufficient: ClassVar[bool]

    # --------------------------------------------------------------------- densities
    @abc.abstractmethod
    def _energy(self, diff: np.ndarray, scale: float) -> np.ndarray:
        """−log of the unnormalised density at ``diff`` (elementwise)."""

    @abc.abstractmethod
    def _energy_sum(self, diff: np.ndarray, scale: float) -> np.ndarray:
        """Σ over the last axis of :meth:`_energy`, scaled once after the sum."""

    @abc.abstractmethod
    def log_normaliser(self, scale: float) -> float:
        """log of the density's normalising constant at ``scale`` (ln 2b; ln σ + ln(2π)/2)."""

    def logpdf(self, diff: np.ndarray, scale: float) -> np.ndarray:
        """log density of one coordinate at ``diff`` (elementwise), scale > 0 (not checked)."""
        return -self._energy(diff, scale) - self.log_normaliser(scale)

    def logpdf_sum(self, diff: np.ndarray, scale: float) -> np.ndarray:
        """Σ over the last axis of :meth:`logpdf` (the normaliser added once, after the sum)."""
        return -self._energy_sum(diff, scale) - diff.shape[-1] * self.log_normaliser(scale)

    @abc.abstractmethod
    def cdf(self, z: np.ndarray) -> np.ndarray:
        """P[N ≤ z] of the standard noise (scale 1), accurate in the lower tail."""

    def sf(self, z: np.ndarray) -> np.ndarray:
        """P[N > z] of the standard noise, accurate in the upper tail (symmetry: cdf(−z))."""
        return self.cdf(-np.asarray(z, dtype=np.float64))

    @abc.abstractmethod
    def logcdf(self, z: np.ndarray) -> np.ndarray:
        """ln P[N ≤ z] of the standard noise, finite far into the lower tail."""

    def logsf(self, z: np.ndarray) -> np.ndarray:
        """ln P[N > z] of the standard noise (symmetry: logcdf(−z))."""
        return self.logcdf(-np.asarray(z, dtype=np.float64))

    # ---------------------------------------------------------------------- sampling
    def sample(self, rng: np.random.Generator, scale: float, size) -> np.ndarray:
        """Noise of the given scale and shape from ``rng``: the package's one numpy draw.

        Parameters
        ----------
        rng : numpy.random.Generator
        scale : float
            b or σ, in (0, ∞).
        size : int or tuple of int

        Returns
        -------
        ndarray of shape ``size``
            Exactly the stream of ``rng.laplace(scale=scale, size=size)`` (Laplace) or
            ``rng.normal(scale=scale, size=size)`` (Gaussian).
        """
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator, got rng={rng!r}")
        return self._draw(rng, check_positive(scale, "scale"), size)

    @abc.abstractmethod
    def _draw(self, rng: np.random.Generator, scale: float, size) -> np.ndarray:
        """The numpy call itself (arguments already checked)."""

    # ------------------------------------------------------------------- calibration
    def calibrate(self, sensitivity: float, epsilon: float, delta: float | None = None,
                  calibration: Calibration | str = Calibration.CLASSICAL) -> float:
        """The noise scale that makes a query of this sensitivity (ε, δ)-DP.

        Parameters
        ----------
        sensitivity : float
            ℓ_norm sensitivity (``self.norm``), in (0, ∞).
        epsilon : float
            Target ε (the range depends on the noise and calibration).
        delta : float or None
            Target δ: None or 0 for a pure noise, in (0, 1) otherwise.
        calibration : Calibration or str
            ``"classical"`` or ``"analytic"`` (a pure noise has one calibration: both agree).

        Returns
        -------
        float
            The scale b or σ.

        Raises
        ------
        ValueError
            If a parameter is out of range.
        """
        cal = Calibration.parse(calibration, "calibration")
        c = check_positive(sensitivity, "sensitivity")
        return self._calibrate(c, epsilon, delta, cal)

    @abc.abstractmethod
    def _calibrate(self, c: float, epsilon, delta, calibration: Calibration) -> float:
        """The closed form (sensitivity checked; ε and δ checked here)."""

    # ----------------------------------------------------------------------- profile
    def delta_for_epsilon(self, epsilon: float, mu: float) -> float:
        """Exact privacy profile δ(ε) of the mechanism at normalised sensitivity μ = Δ/s.

        Parameters
        ----------
        epsilon : float
            In [0, ∞] (∞ gives 0).
        mu : float
            Δ/s in [0, ∞] (0 gives δ = 0, ∞ gives δ = 1).

        Returns
        -------
        float
            δ(ε) in [0, 1].

        Raises
        ------
        ValueError
            If a parameter is out of range.
        """
        eps = check_in_range("epsilon", epsilon, 0.0, math.inf, hi_closed=True)
        m = _check_mu(mu)
        if m == 0.0 or math.isinf(eps):
            return 0.0
        if math.isinf(m):
            return 1.0
        return self._delta(eps, m)

    def epsilon_for_delta(self, delta: float, mu: float) -> float:
        """Smallest ε ≥ 0 with δ_μ(ε) ≤ δ, rounded so that the profile re-evaluated there is ≤ δ.

        Parameters
        ----------
        delta : float
            In [0, 1].
        mu : float
            Δ/s in [0, ∞].

        Returns
        -------
        float
            ε(δ) in [0, ∞].

        Raises
        ------
        ValueError
            If a parameter is out of range.
        """
        dlt = check_delta(delta)
        m = _check_mu(mu)
        if m == 0.0 or dlt == 1.0:
            return 0.0
        if math.isinf(m):
            return math.inf
        return self._epsilon(dlt, m)

    @abc.abstractmethod
    def _delta(self, eps: float, mu: float) -> float:
        """δ_μ(ε) for ε finite, μ ∈ (0, ∞)."""

    @abc.abstractmethod
    def _epsilon(self, dlt: float, mu: float) -> float:
        """ε_μ(δ) for δ ∈ [0, 1), μ ∈ (0, ∞)."""


# ================================================================================ Laplace
@dataclass(frozen=True)
class LaplaceNoise(AdditiveNoise):
    """Laplace noise of scale b: density e^{−|t|/b}/(2b); b = C_1/ε gives (ε, 0)-DP."""

    kind: ClassVar[NoiseKind] = NoiseKind.LAPLACE
    norm: ClassVar[int] = 1
    pure: ClassVar[bool] = True
    mean_is_sufficient: ClassVar[bool] = False
    negligible_tail: ClassVar[float] = 25.0  # e^{−25}/2 ≈ 7e−12 per side

    def _energy(self, diff, scale):
        return np.abs(diff) / scale

    def _energy_sum(self, diff, scale):
        return np.abs(diff).sum(axis=-1) / scale

    def log_normaliser(self, scale):
        return np.log(2.0 * scale)

    def cdf(self, z):
        # ½e^z below 0, 1 − ½e^{−z} above: the exponent is clipped so neither branch overflows
        z = np.asarray(z, dtype=np.float64)
        return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1 - 0.5 * np.exp(-np.abs(z)))

    def logcdf(self, z):
        z = np.asarray(z, dtype=np.float64)
        return np.where(z < 0, np.minimum(z, 0.0) - math.log(2.0),
                        np.log1p(-0.5 * np.exp(-np.abs(z))))

    def _draw(self, rng, scale, size):
        return rng.laplace(scale=scale, size=size)

    def _calibrate(self, c, epsilon, delta, calibration):
        """b = C_1/ε (Dwork & Roth 2014, Thm 3.6; [RPS] Theorem 4.5)."""
        eps = check_epsilon(epsilon, allow_zero=False)
        if delta not in (None, 0, 0.0):
            raise ValueError(f"delta must be 0 or None for laplace noise (b = C_1/epsilon gives "
                             f"pure epsilon-DP), got delta={delta!r}")
        return c / eps

    def _delta(self, eps, mu):
        """Scalar output: 1 − e^{(ε − μ)/2} for ε < μ, else 0 (Balle, Barthe & Gaboardi 2018,
        §4). For vector outputs with ℓ1 sensitivity only the pure bound δ(μ) = 0 is claimed."""
        if eps >= mu:
            return 0.0
        return float(-math.expm1((eps - mu) / 2.0))

    def _epsilon(self, dlt, mu):
        """max(0, μ + 2 ln(1 − δ)), the inverse of :meth:`_delta`."""
        return float(max(0.0, mu + 2.0 * math.log1p(-dlt)))


# =============================================================================== Gaussian
def _log_mills(x: float) -> float:
    """log R(x) with R(x) = Φ(x)/φ(x) = √(π/2) erfcx(−x/√2)."""
    return _LOG_HALF_PI + math.log(special.erfcx(-x / _SQRT2))


def log_gaussian_delta(eps: float, mu: float) -> float:
    """log δ_μ(ε) for μ ∈ (0, ∞), ε ∈ [0, ∞]; −inf when δ = 0 exactly (no validation).

    δ = Φ(a) − e^ε Φ(b) with a = −ε/μ + μ/2, b = −ε/μ − μ/2 (Balle & Wang 2018, Thm 8),
    evaluated as Φ(a)·(1 − R(b)/R(a)) with the Mills ratio R: no cancellation in the tails,
    and finite in log space when δ underflows.
    """
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
    """δ_μ(ε) exactly as the profile returns it, for μ ∈ (0, ∞) (no validation).

    Every inverse re-evaluates this to round its answer in the safe direction.
    """
    return float(min(1.0, math.exp(log_gaussian_delta(eps, mu))))


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


def _gaussian_mu_for(eps: float, dlt: float) -> float:
    """Largest μ > 0 with δ_μ(ε) ≤ δ (δ_μ(ε) is increasing in μ), rounded down until certified."""
    log_target = math.log(dlt)

    def g(log_mu: float) -> float:
        return log_gaussian_delta(eps, math.exp(log_mu)) - log_target

    lo, hi = -1.0, 1.0
    while g(lo) > 0:
        lo -= 2.0
        if lo < -700:  # pragma: no cover - δ(ε) → 0 as μ → 0 for any δ > 0
            raise RuntimeError("could not bracket mu")
    while g(hi) <= 0:
        hi += 2.0
        if hi > 700:  # pragma: no cover
            raise RuntimeError("could not bracket mu")
    root = brentq(g, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    mu = math.exp(root)
    # Safe rounding: step down until the profile is certified at this μ.
    while gaussian_delta_value(eps, mu) > dlt:
        mu = float(np.nextafter(mu, 0.0)) * (1 - 1e-15)
    return float(mu)


@dataclass(frozen=True)
class GaussianNoise(AdditiveNoise):
    """Gaussian noise of standard deviation σ: density e^{−t²/(2σ²)}/(σ√(2π)).

    Calibration: classical σ = C_2 √(2 ln(1.25/δ))/ε for ε ∈ (0, 1] (Dwork & Roth 2014,
    Thm A.1; [RPS] Theorem 4.7; docs/THEORY.md §5: a text extraction of [RPS] drops the square
    in c²), or Balle & Wang's analytic σ = Δ/μ* (Thm 8, Algorithm 1), the largest μ* with
    δ_{μ*}(ε) ≤ δ, rounded in the safe direction.
    """

    kind: ClassVar[NoiseKind] = NoiseKind.GAUSSIAN
    norm: ClassVar[int] = 2
    pure: ClassVar[bool] = False
    mean_is_sufficient: ClassVar[bool] = True
    negligible_tail: ClassVar[float] = 7.0  # Φ(−7) ≈ 1.3e−12 per side

    def _energy(self, diff, scale):
        return 0.5 * (diff / scale) ** 2

    def _energy_sum(self, diff, scale):
        return 0.5 * (diff**2).sum(axis=-1) / scale**2

    def log_normaliser(self, scale):
        return np.log(scale) + 0.5 * np.log(2.0 * np.pi)

    def cdf(self, z):
        return special.ndtr(z)

    def logcdf(self, z):
        return special.log_ndtr(z)

    def _draw(self, rng, scale, size):
        return rng.normal(scale=scale, size=size)

    def _calibrate(self, c, epsilon, delta, calibration):
        if calibration is Calibration.CLASSICAL:
            eps = check_in_range("epsilon", epsilon, 0.0, 1.0, lo_closed=False, hi_closed=True)
            dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
            return c * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps
        eps = check_epsilon(epsilon)
        dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
        return c / _gaussian_mu_for(eps, dlt)

    def _delta(self, eps, mu):
        """Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8; docs/THEORY.md §5)."""
        return gaussian_delta_value(eps, mu)

    def _epsilon(self, dlt, mu):
        if dlt == 0.0:
            return math.inf
        log_target = math.log(dlt)
        if log_gaussian_delta(0.0, mu) <= log_target:
            return 0.0

        def g(e: float) -> float:
            return log_gaussian_delta(e, mu) - log_target

        # δ_μ(ε) ≤ Φ(−ε/μ + μ/2) is tiny once ε ≫ μ²: the doubling ends, for any δ > 0
        hi = max(1.0, mu * mu)
        while g(hi) > 0:
            hi *= 2.0
        root = brentq(g, 0.0, hi, xtol=1e-14, rtol=4 * _EPS, maxiter=500)
        return _round_to_smallest(float(root), lambda e: gaussian_delta_value(e, mu) <= dlt)


#: every additive noise, by kind (one instance each: the classes hold no state)
NOISES: dict[NoiseKind, AdditiveNoise] = {n.kind: n for n in (LaplaceNoise(), GaussianNoise())}


def noise_of(kind: NoiseKind | str | AdditiveNoise) -> AdditiveNoise:
    """The noise class of a kind.

    Parameters
    ----------
    kind : NoiseKind, str or AdditiveNoise
        ``"laplace"``, ``"gaussian"`` or a member (a noise instance passes through).

    Returns
    -------
    AdditiveNoise

    Raises
    ------
    ValueError
        For an unknown kind (the message lists the allowed values).

    Examples
    --------
    >>> noise_of("laplace").norm, noise_of("gaussian").pure
    (1, False)
    """
    if isinstance(kind, AdditiveNoise):
        return kind
    member = NoiseKind.parse(kind)
    if member not in NOISES:  # pragma: no cover - every member has a class below
        raise ValueError(f"noise {member.value!r} has no AdditiveNoise class")
    return NOISES[member]
