"""An additive score of monotone coordinates: Σ_j r_j(x_j), each r_j a step function fitted by
isotonic regression (pool-adjacent-violators), increasing or decreasing as the pilot says
(:class:`audit.statistics.CoordinateSum`).

Where both output laws are products over the coordinates and each coordinate's log-ratio is
monotone (a Laplace or Gaussian shift, any one-parameter exponential family), the sum of the
coordinates' true log-ratios is the exact log-likelihood ratio. A Laplace shift's log-ratio is
flat beyond both centres, and so, up to a few steps of sampling noise, is its isotonic fit:
the score is nearly constant on the orthant where every coordinate lies beyond its larger
centre, the region that carries the whole ratio e^ε (3-coordinate Laplace, b = 3: mass 1/8
under z). A smoothed histogram ratio (:class:`attacks.additive.AdditiveDensityRatio`) rounds
that corner off. Where a coordinate's log-ratio is not monotone (a change of scale, Laplace
against Gaussian at one mean) the fit is its best monotone approximation and the additive or
k-NN score is the one to use (``auto`` compares them on the pilot).

Each coordinate: the finite pilot values of both sides pooled and sorted, labelled 1 (z) or 0
(z'), fitted by :func:`scipy.optimize.isotonic_regression` in both directions; the direction
with the larger Bernoulli log-likelihood is kept (ties: increasing), and blocks holding fewer
than a share ``min_block`` of the values are merged into a neighbour. A block of the fit with
k_p and k_q pilot values from each side scores ln((k_p + c)/n_p) − ln((k_q + c)/n_q) (c the
pseudo-count, n_p and n_q the sides' pilot sizes), joined to the next block linearly and
constant beyond the end blocks; NaN, +inf and −inf are categories of their own, as in the
additive score. Black box only: implementation audits count it in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import isotonic_regression

from attacks.fitted import _category_scores
from audit._validate import check_in_range
from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import CoordinateSum

__all__ = ["IsotonicSum", "monotone_log_ratio", "MIN_BLOCK_VALUES"]

#: Fewest pilot values in a block of a coordinate's fit.
MIN_BLOCK_VALUES = 10


def _log_likelihood(labels: np.ndarray, eta: np.ndarray) -> float:
    eta = np.clip(eta, 1e-12, 1.0 - 1e-12)
    return float(np.sum(labels * np.log(eta) + (1.0 - labels) * np.log1p(-eta)))


def _merged(starts, labels: np.ndarray, min_block: int) -> list[tuple[int, int]]:
    """The blocks [s, e) of an isotonic fit (``starts``: their first indices, then the end),
    each block of fewer than ``min_block`` values merged into the neighbour whose mean is
    nearer, smallest first (adjacent blocks of a monotone fit merge into a monotone fit)."""
    blocks = [[int(s), int(e)] for s, e in zip(starts[:-1], starts[1:], strict=True)]
    csum = np.concatenate([[0.0], np.cumsum(labels)])

    def mean(blk):
        return (csum[blk[1]] - csum[blk[0]]) / (blk[1] - blk[0])

    while len(blocks) > 1:
        sizes = [e - s for s, e in blocks]
        i = int(np.argmin(sizes))
        if sizes[i] >= min_block:
            break
        left = i - 1 if i > 0 else None
        right = i + 1 if i + 1 < len(blocks) else None
        if left is None or (right is not None and abs(mean(blocks[right]) - mean(blocks[i]))
                            < abs(mean(blocks[left]) - mean(blocks[i]))):
            j = right
        else:
            j = left
        lo, hi = min(i, j), max(i, j)
        blocks[lo:hi + 1] = [[blocks[lo][0], blocks[hi][1]]]
    return [(s, e) for s, e in blocks]


def monotone_log_ratio(a: np.ndarray, b: np.ndarray, pseudo_count: float = 0.5,
                       min_block: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(knots, values) of the isotonic log-ratio of the finite values of ``a`` (z) against
    those of ``b`` (z') of one coordinate, each block scored against ``a.size`` and
    ``b.size`` pilot values per side (module docstring), every block of at least
    ``min_block`` values (:func:`_merged`). At least two knots; no finite value: the
    constant 0. (A fit monotone in |x − m| instead, for a change of scale, was
    tried: on Gaussian against Laplace at one variance it fits the Laplace peak and loses the
    tails, where the evidence is.)"""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    fa, fb = a[np.isfinite(a)], b[np.isfinite(b)]
    if fa.size + fb.size == 0:
        return np.array([0.0, 1.0]), np.zeros(2)
    y = np.concatenate([fa, fb])
    labels = np.concatenate([np.ones(fa.size), np.zeros(fb.size)])
    order = np.argsort(y, kind="stable")
    y, labels = y[order], labels[order]
    fits = [isotonic_regression(labels, increasing=inc) for inc in (True, False)]
    fit = max(fits, key=lambda r: _log_likelihood(labels, r.x))  # ties: increasing (first)
    knots, values = [], []
    for s, e in _merged(fit.blocks, labels, max(min_block, 1)):
        k_p = float(labels[s:e].sum())
        k_q = float(e - s) - k_p
        v = float(np.log((k_p + pseudo_count) / max(a.size, 1))
                  - np.log((k_q + pseudo_count) / max(b.size, 1)))
        for t in (y[s], y[e - 1]):  # the block's ends (one knot when they coincide)
            if not knots or t > knots[-1]:
                knots.append(float(t))
                values.append(v)
    if len(knots) < 2:  # one distinct value: a constant function
        knots, values = [knots[0] - 0.5, knots[0] + 0.5], [values[0]] * 2
    return np.asarray(knots), np.asarray(values)


@dataclass(frozen=True)
class IsotonicSum(BlackBoxAttack):
    """Score = Σ_j r_j(x_j), r_j the isotonic log-ratio of coordinate j (module docstring).

    Parameters
    ----------
    pseudo_count : float
        Added to each side's count in a block (> 0): keeps a block seen on one side only
        finite.
    min_block : float
        Least share of a coordinate's finite pilot values in a block (at least
        :data:`MIN_BLOCK_VALUES`), in [0, 0.5]: the fit's small blocks at the extremes, a few
        values all from one side by chance, are merged into their neighbours (3-coordinate
        Laplace, b = 3, 5,000 calls, 20 audits: ε_lower 0.757 with 10 values at least, 0.768
        with 3 %, 0.747 with 10 %).
    """

    pseudo_count: float = 0.5
    min_block: float = 0.03
    name: ClassVar[str] = "isotonic"

    def __post_init__(self) -> None:
        check_in_range("pseudo_count", self.pseudo_count, 0.0, np.inf, lo_closed=False,
                       hi_closed=False)
        check_in_range("min_block", self.min_block, 0.0, 0.5)

    def fit(self, pilot: Pilot) -> Score:
        a, b = (np.asarray(x, dtype=np.float64) for x in (pilot.p, pilot.q))
        a, b = (x.reshape(-1, 1) if x.ndim == 1 else x for x in (a, b))
        knots, values, special = [], [], []
        for j in range(a.shape[1]):
            finite = int(np.isfinite(a[:, j]).sum() + np.isfinite(b[:, j]).sum())
            least = max(MIN_BLOCK_VALUES, int(self.min_block * finite))
            k, v = monotone_log_ratio(a[:, j], b[:, j], self.pseudo_count, least)
            cats = _category_scores(a[:, j], b[:, j], self.pseudo_count)
            knots.append(k)
            values.append(v)
            special.append([cats["nan"], cats["+inf"], cats["-inf"]])
        note = ""
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            note = "non-finite pilot coordinates: scored as categories of their own"
        return Score(self.name, CoordinateSum(knots, values, np.array(special)), note=note)
