"""A nonlinear learned score for vector releases: the k-nearest-neighbour density ratio.

The fitted pilot's finite draws of both sides are pooled in a k-d tree
(``scipy.spatial.cKDTree``, coordinates divided by their robust spread); an output's score is
the log of the ratio of P's and Q's draws among its k nearest pooled draws, corrected for the
sides' sizes (:class:`audit.statistics.NeighbourLogRatio`). k is chosen on the pilot by the
leave-one-out log-loss of the neighbours' vote. An output with a NaN or ±inf coordinate is
scored by its pattern of non-finite coordinates: by the neighbours among the pilot's outputs
of the same pattern, on their finite coordinates, where each side released at least
:data:`MIN_PER_SIDE` of them, else by the pattern's smoothed frequency ratio
(:class:`audit.statistics.PatternNeighbourLogRatio`); a pattern the pilot never saw by the
smoothed ratio of how often each side released any non-finite output.

Degenerate pilots (too few finite draws on a side, all finite draws equal) fall back on
:class:`attacks.fitted.DensityRatio`, and the score's note says so. The projection is black
box only: implementation audits count it in numpy (in the parent process); the numba engine
refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from attacks.fitted import DensityRatio
from audit._validate import check_positive_int
from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import (
    NeighbourLogRatio,
    PatternNeighbourLogRatio,
    nonfinite_pattern,
)

__all__ = ["NearestNeighbours", "K_GRID"]

#: the k tried by leave-one-out when none is set
K_GRID = (5, 10, 20, 40, 80, 160)
#: fewest finite pilot draws per side for a neighbour estimate
MIN_PER_SIDE = 10


def _rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(-1, 1) if x.ndim == 1 else x


def robust_scale(x: np.ndarray) -> np.ndarray:
    """Per-coordinate spread of finite rows: IQR/1.349, else the standard deviation, else 1
    (a constant coordinate), so no coordinate dominates the distance by its units."""
    q1, q3 = np.quantile(x, [0.25, 0.75], axis=0)
    scale = (q3 - q1) / 1.349
    sd = np.std(x, axis=0)
    scale = np.where(scale > 0, scale, sd)
    return np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)


def loo_k(points: np.ndarray, from_p: np.ndarray, grid=K_GRID) -> int:
    """The k of ``grid`` (those below n/2) with the least leave-one-out log-loss of the
    neighbours' smoothed vote for the side of each pooled point."""
    from scipy.spatial import cKDTree

    n = points.shape[0]
    ks = [k for k in grid if k < n // 2] or [max(1, min(grid[0], n - 2))]
    _, idx = cKDTree(points).query(points, k=max(ks) + 1)
    votes = np.cumsum(from_p[idx[:, 1:]], axis=1)  # column 0 is (one copy of) the point
    losses = []
    for k in ks:
        kp = votes[:, k - 1]
        prob_p = (kp + 0.5) / (k + 1.0)
        losses.append(-np.mean(np.where(from_p, np.log(prob_p), np.log1p(-prob_p))))
    return ks[int(np.argmin(losses))]


def _special_score(fa: np.ndarray, fb: np.ndarray) -> float:
    """ln of the smoothed ratio of the sides' frequencies of a non-finite coordinate."""
    na, nb = np.count_nonzero(~fa), np.count_nonzero(~fb)
    return float(np.log((na + 0.5) / (fa.size + 1.0)) - np.log((nb + 0.5) / (fb.size + 1.0)))


def _pattern_estimates(a: np.ndarray, b: np.ndarray, n_a: int, n_b: int,
                       log_prior: float) -> tuple:
    """Per pattern of non-finite coordinates among the pilot's rows ``a`` (P) and ``b`` (Q):
    a neighbour estimate on the pattern's finite coordinates where each side has at least
    :data:`MIN_PER_SIDE` such rows, else the pattern's smoothed frequency ratio
    ln((n_p,π + ½)/(n_p + 1)) − ln((n_q,π + ½)/(n_q + 1))."""
    ca, cb = nonfinite_pattern(a), nonfinite_pattern(b)
    out = []
    for code in np.union1d(ca, cb):
        ra, rb = a[ca == code], b[cb == code]
        freq = float(np.log((ra.shape[0] + 0.5) / (n_a + 1.0))
                     - np.log((rb.shape[0] + 0.5) / (n_b + 1.0)))
        row = ra[0] if ra.shape[0] else rb[0]
        obs = np.isfinite(row)
        points = np.concatenate([ra[:, obs], rb[:, obs]])
        if (min(ra.shape[0], rb.shape[0]) < MIN_PER_SIDE or not obs.any()
                or np.all(points == points[0])):
            out.append((int(code), None, freq))
            continue
        from_p = np.concatenate([np.ones(ra.shape[0], bool), np.zeros(rb.shape[0], bool)])
        scale = robust_scale(points)
        k = min(loo_k(points / scale, from_p), points.shape[0] - 1)
        out.append((int(code), NeighbourLogRatio(points, from_p, int(k), scale, log_prior),
                    None))
    return tuple(out)


@dataclass(frozen=True)
class NearestNeighbours(BlackBoxAttack):
    """k-NN estimate of ln p/q, fitted on the pilot.

    Parameters
    ----------
    k : int or None
        Neighbours per estimate (≥ 1); None (default) chooses it in :data:`K_GRID` by
        leave-one-out log-loss on the pilot.
    """

    k: int | None = None
    name: ClassVar[str] = "knn"

    def __post_init__(self) -> None:
        if self.k is not None:
            check_positive_int(self.k, "k")

    def _fallback(self, pilot: Pilot, why: str) -> Score:
        s = DensityRatio().fit(pilot)
        note = "; ".join(filter(None, [f"{why}: fell back to the density-ratio attack",
                                       s.note]))
        return Score(self.name, s.projection, s.transform, note=note)

    def fit(self, pilot: Pilot) -> Score:
        a, b = _rows(pilot.p), _rows(pilot.q)
        fa, fb = np.isfinite(a).all(axis=1), np.isfinite(b).all(axis=1)
        A, B = a[fa], b[fb]
        if min(A.shape[0], B.shape[0]) < MIN_PER_SIDE:
            return self._fallback(pilot, f"fewer than {MIN_PER_SIDE} finite pilot outputs "
                                         "on a side")
        points = np.concatenate([A, B])
        if np.all(points == points[0]):
            return self._fallback(pilot, "the finite pilot outputs are all equal")
        scale = robust_scale(points)
        from_p = np.concatenate([np.ones(A.shape[0], bool), np.zeros(B.shape[0], bool)])
        k = self.k if self.k is not None else loo_k(points / scale, from_p)
        k = min(int(k), points.shape[0] - 1)
        log_prior = float(np.log(b.shape[0] / a.shape[0]))
        projection = NeighbourLogRatio(points, from_p, k, scale, log_prior)
        special = _special_score(fa, fb)
        note = ""
        if not (fa.all() and fb.all()):
            patterns = _pattern_estimates(a[~fa], b[~fb], a.shape[0], b.shape[0], log_prior)
            projection = PatternNeighbourLogRatio(projection, patterns)
            fitted = sum(e is not None for _, e, _ in patterns)
            note = (f"{int((~fa).sum() + (~fb).sum())} pilot outputs with a non-finite "
                    f"coordinate in {len(patterns)} pattern(s): {fitted} scored by the "
                    "neighbours on their finite coordinates, the others by their frequency "
                    "ratio")

        def transform(v):
            v = np.asarray(v, dtype=np.float64)
            return np.where(np.isnan(v), special, v)

        return Score(self.name, projection, transform, note=note)
