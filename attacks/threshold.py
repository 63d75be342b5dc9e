"""Black-box baseline: threshold the output (or the sum of its coordinates)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attacks.base import AttackInput, Score

__all__ = ["OutputThreshold"]


@dataclass(frozen=True)
class OutputThreshold:
    """Score = ± the output (scalar) or ± the sum of its coordinates (vector).

    The sign is chosen on the pilot so that larger scores point to z: the side whose pilot
    mean is larger. Regions are then upper sets of the score for z and lower sets for z'.
    """

    name: str = "threshold"
    white_box: bool = False

    def fit(self, data: AttackInput) -> Score:
        if data.is_scalar:
            sign = 1.0 if np.mean(data.pilot_p) >= np.mean(data.pilot_q) else -1.0
            return Score(self.name, lambda x: sign * np.asarray(x, dtype=np.float64).reshape(-1))
        w = np.ones(data.P.dim)
        sign = 1.0 if np.mean(data.pilot_p @ w) >= np.mean(data.pilot_q @ w) else -1.0
        w = sign * w
        return Score(self.name, lambda x: np.asarray(x) @ w, ("linear", w, 0.0))
