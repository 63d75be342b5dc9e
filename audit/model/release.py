"""The noisy release A = f + noise of a query: Laplace or Gaussian with a calibrated scale."""

from __future__ import annotations

from dataclasses import dataclass

from audit._validate import check_positive
from audit.mixture import NoiseKind
from audit.theory import calibration as _cal

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

    @classmethod
    def laplace(cls, sensitivity: float, epsilon: float) -> Release:
        """Laplace mechanism, b = C_1/ε ([RPS] Theorem 4.5; Dwork & Roth Thm 3.6)."""
        return cls(NoiseKind.LAPLACE, _cal.laplace_scale(sensitivity, epsilon))

    @classmethod
    def gaussian(
        cls, sensitivity: float, epsilon: float, delta: float, calibration: str = "classical"
    ) -> Release:
        """Gaussian mechanism with σ from ``audit.theory.calibration``.

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
        if calibration == "classical":
            sigma = _cal.gaussian_sigma_classical(sensitivity, epsilon, delta)
        elif calibration == "analytic":
            sigma = _cal.gaussian_sigma_analytic(sensitivity, epsilon, delta)
        else:
            raise ValueError(
                "calibration must be one of 'classical', 'analytic', "
                f"got calibration={calibration!r}"
            )
        return cls(NoiseKind.GAUSSIAN, sigma)
