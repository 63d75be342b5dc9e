"""Black-box baseline: threshold the output (or the sum of its coordinates)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import LinearProjection, OutputValue

__all__ = ["OutputThreshold"]


def _finite_mean(x: np.ndarray) -> float:
    if np.isfinite(x).all():
        return float(np.mean(x))
    finite = x[np.isfinite(x)]
    return float(np.mean(finite)) if finite.size else 0.0


@dataclass(frozen=True)
class OutputThreshold(BlackBoxAttack):
    """Score = ± the output (scalar) or ± the sum of its coordinates (vector).

    The sign is chosen on the pilot so that larger scores point to z: the side whose pilot
    mean is larger. Regions are then upper sets of the score for z and lower sets for z'.
    """

    name: ClassVar[str] = "threshold"
    #: its scores are output values or linear projections: the engines count them
    engine_counted: ClassVar[bool] = True

    def fit(self, pilot: Pilot) -> Score:
        w = np.ones(pilot.dim)
        a, b = np.asarray(pilot.p, float), np.asarray(pilot.q, float)
        # means over the finite outputs: a NaN or ±inf release must not decide the sign
        ma, mb = (_finite_mean(x) for x in (a, b))
        sign = 1.0 if ma >= mb else -1.0
        if pilot.is_scalar:
            return Score(self.name, OutputValue(), lambda v: sign * v)
        return Score(self.name, LinearProjection(sign * w, 0.0))
