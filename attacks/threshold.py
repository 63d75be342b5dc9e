"""Black-box baseline: threshold the output (or the sum of its coordinates)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import LinearProjection, OutputValue

__all__ = ["OutputThreshold"]


@dataclass(frozen=True)
class OutputThreshold(BlackBoxAttack):
    """Score = ± the output (scalar) or ± the sum of its coordinates (vector).

    The sign is chosen on the pilot so that larger scores point to z: the side whose pilot
    mean is larger. Regions are then upper sets of the score for z and lower sets for z'.
    """

    name: ClassVar[str] = "threshold"

    def fit(self, pilot: Pilot) -> Score:
        w = np.ones(pilot.dim)
        sign = 1.0 if np.mean(pilot.p) >= np.mean(pilot.q) else -1.0
        if pilot.is_scalar:
            return Score(self.name, OutputValue(), lambda v: sign * v)
        return Score(self.name, LinearProjection(sign * w, 0.0))
