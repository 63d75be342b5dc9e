"""An additive score for vector releases: the sum of one fitted 1-D density ratio per
coordinate (:class:`audit.statistics.CoordinateSum`).

It is the exact log-ratio when both output laws are products over the coordinates (noise
drawn independently per coordinate, one dataset each side), whatever the marginals: a
Laplace or Gaussian shift, a change of noise law at the same mean, a coordinate that carries
nothing. Each coordinate is fitted as :class:`attacks.fitted.DensityRatio` fits a scalar
release (smoothed histogram ratio; NaN, +inf and −inf scored as categories of their own). The
projection is black box only: implementation audits count it in numpy; the numba engine
refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from attacks.fitted import DensityRatio, _category_scores
from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import CoordinateSum

__all__ = ["AdditiveDensityRatio"]


def _coordinate(fitter: DensityRatio, a: np.ndarray, b: np.ndarray):
    """(knots, values, [nan, +inf, −inf] scores) of one coordinate's density ratio."""
    fa, fb = np.isfinite(a), np.isfinite(b)
    if fa.any() or fb.any():
        knots, values = fitter.finite_table(a[fa], b[fb], a.size, b.size)
    else:
        knots, values = np.array([0.0, 1.0]), np.zeros(2)
    if knots.size < 2:  # one bin: a constant function
        knots, values = np.array([knots[0] - 0.5, knots[0] + 0.5]), np.repeat(values, 2)
    cats = _category_scores(a, b, fitter.pseudo_count)
    return knots, values, [cats["nan"], cats["+inf"], cats["-inf"]]


@dataclass(frozen=True)
class AdditiveDensityRatio(BlackBoxAttack):
    """Score = Σ_j r_j(x_j), r_j the smoothed-histogram log-ratio of coordinate j.

    Parameters
    ----------
    n_bins, smoothing, pseudo_count, tail
        As :class:`attacks.fitted.DensityRatio`, for every coordinate.
    """

    n_bins: int = 50
    smoothing: float = 2.0
    pseudo_count: float = 0.5
    tail: float = 1e-4
    name: ClassVar[str] = "additive"

    def __post_init__(self) -> None:
        DensityRatio(self.n_bins, self.smoothing, self.pseudo_count, self.tail)  # validates

    def fit(self, pilot: Pilot) -> Score:
        fitter = DensityRatio(self.n_bins, self.smoothing, self.pseudo_count, self.tail)
        a, b = (np.asarray(x, dtype=np.float64) for x in (pilot.p, pilot.q))
        a, b = (x.reshape(-1, 1) if x.ndim == 1 else x for x in (a, b))
        parts = [_coordinate(fitter, a[:, j], b[:, j]) for j in range(a.shape[1])]
        knots, values, special = zip(*parts, strict=True)
        note = ""
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            note = "non-finite pilot coordinates: scored as categories of their own"
        return Score(self.name, CoordinateSum(knots, values, np.array(special)), note=note)
