"""The noisy release A = f + noise of a query: Laplace or Gaussian with a calibrated scale."""

from __future__ import annotations

from dataclasses import dataclass

from audit._validate import check_positive
from audit.enums import Calibration
from audit.mixture import NoiseKind
from audit.noise import AdditiveNoise, GaussianNoise, LaplaceNoise, noise_of

__all__ = ["Release"]

@dataclass(frozen=True)
class Release:
    """Additive i.i.d. noise per output coordinate.

    Parameters
    ----------
    noise : NoiseKind or str
        ``"laplace"`` (scale b) or ``"gaussian"`` (standard deviation σ).
    scale : float
        b or σ, in (0, ∞).
    """

    noise: NoiseKind
    scale: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise))
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))

    @property
    def additive_noise(self) -> AdditiveNoise:
        """The noise class of this release (``audit.noise``)."""
        return noise_of(self.noise)

    @classmethod
    def calibrated(cls, noise: NoiseKind | str | AdditiveNoise, sensitivity: float,
                   epsilon: float, delta: float | None = None,
                   calibration: Calibration | str = Calibration.CLASSICAL) -> Release:
        """The release of ``noise`` calibrated to (ε, δ) at this sensitivity.

        Parameters
        ----------
        noise : NoiseKind, str or AdditiveNoise
        sensitivity : float
            ℓ_p sensitivity in the noise's norm (``noise_of(noise).norm``), > 0.
        epsilon, delta : float
            Target (ε, δ); δ None or 0 for Laplace (see
            :meth:`audit.noise.AdditiveNoise.calibrate` for the ranges).
        calibration : {"classical", "analytic"}

        Raises
        ------
        ValueError
            Unknown noise or calibration, or a parameter out of range.
        """
        law = noise_of(noise)
        return cls(law.kind, law.calibrate(sensitivity, epsilon, delta, calibration))

    @classmethod
    def laplace(cls, sensitivity: float, epsilon: float) -> Release:
        """Laplace mechanism, b = C_1/ε ([RPS] Theorem 4.5; Dwork & Roth Thm 3.6)."""
        return cls.calibrated(LaplaceNoise(), sensitivity, epsilon)

    @classmethod
    def gaussian(
        cls, sensitivity: float, epsilon: float, delta: float, calibration: str = "classical"
    ) -> Release:
        """Gaussian mechanism with σ from :class:`audit.noise.GaussianNoise`.

        Parameters
        ----------
        sensitivity : float
            ℓ2 sensitivity C_2 > 0.
        epsilon, delta : float
            Target (ε, δ); the classical calibration needs ε ∈ (0, 1] and δ ∈ (0, 1)
            (docs/THEORY.md §5).
        calibration : {"classical", "analytic"}
            σ = C_2 √(2 ln(1.25/δ))/ε ([RPS] Theorem 4.7) or Balle–Wang's analytic σ.

        Raises
        ------
        ValueError
            Unknown calibration or a parameter out of range.
        """
        return cls.calibrated(GaussianNoise(), sensitivity, epsilon, delta, calibration)
