"""Exact categorical counting for releases that take few distinct values (bit patterns, an
argmax, small counts).

When the pilot's outputs (scalars or vector rows, compared exactly, NaN equal to NaN) take at
most ``max_categories`` distinct values, each value is a category scored by its smoothed pilot
log-ratio, and every output projects to the index of its category
(:class:`audit.statistics.CategoryIndex`; a value the pilot never released goes to the
"other" index). The categories are indexed in increasing order of score, so bins that merge
neighbouring indices (fewer bins than categories) merge categories of similar score; a bin is
scored as the index nearest its centre. Past
``max_categories`` the attack falls back on :class:`attacks.fitted.DensityRatio` and says so
in the score's note.

The projection is black box only: implementation audits count it in numpy; the numba engine
refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from attacks.fitted import DensityRatio
from audit._validate import check_in_range, check_positive_int
from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import CategoryIndex, row_keys

__all__ = ["Categorical", "distinct_rows"]


def _as_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(-1, 1) if x.ndim == 1 else x


def distinct_rows(pilot: Pilot, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The distinct rows of the pooled pilot and their counts on each side, or None when
    there are more than ``limit`` or more than half as many as pooled draws (a continuous
    release whose pilot is small: its values do not repeat).

    Returns
    -------
    (rows, counts_p, counts_q) : (K, dim) float array and two (K,) int arrays, K ≤ limit,
        rows in the byte order of their keys (:func:`audit.statistics.row_keys`).
    """
    limit = check_positive_int(limit, "limit")
    a, b = _as_rows(pilot.p), _as_rows(pilot.q)
    pooled = np.concatenate([a, b])
    if pooled.shape[0] == 0:
        return None
    keys, first, inverse = np.unique(row_keys(pooled), return_index=True,
                                     return_inverse=True)
    if keys.size > limit or 2 * keys.size > pooled.shape[0]:
        return None
    inverse = inverse.reshape(-1)
    counts_p = np.bincount(inverse[:a.shape[0]], minlength=keys.size)
    counts_q = np.bincount(inverse[a.shape[0]:], minlength=keys.size)
    return pooled[first], counts_p, counts_q


def category_score(rows: np.ndarray, counts_p: np.ndarray, counts_q: np.ndarray,
                   pseudo_count: float) -> tuple[CategoryIndex, np.ndarray]:
    """The projection (categories in increasing order of score) and the score of every index
    (the "other" index last): ln of the smoothed frequency ratio, each of the K + 1 cells
    (other included) given ``pseudo_count``."""
    n_cells = counts_p.size + 1
    tot_p = counts_p.sum() + pseudo_count * n_cells
    tot_q = counts_q.sum() + pseudo_count * n_cells
    scores = np.log((counts_p + pseudo_count) / tot_p) - np.log((counts_q + pseudo_count) / tot_q)
    order = np.argsort(scores, kind="stable")
    other = float(np.log(tot_q / tot_p))  # a value the pilot never released: pseudo counts
    return CategoryIndex(rows[order]), np.append(scores[order], other)


@dataclass(frozen=True)
class Categorical(BlackBoxAttack):
    """Each distinct pilot value a category, scored by its smoothed log-ratio.

    Parameters
    ----------
    max_categories : int
        Most distinct values (both sides pooled) for exact counting, ≥ 1; beyond it the
        attack is :class:`attacks.fitted.DensityRatio`.
    pseudo_count : float
        Added to each category's count on each side (> 0).
    """

    max_categories: int = 1000
    pseudo_count: float = 0.5
    name: ClassVar[str] = "categorical"

    def __post_init__(self) -> None:
        check_positive_int(self.max_categories, "max_categories")
        check_in_range("pseudo_count", self.pseudo_count, 0.0, np.inf, lo_closed=False,
                       hi_closed=False)

    def fit(self, pilot: Pilot) -> Score:
        found = distinct_rows(pilot, self.max_categories)
        if found is None:
            fallback = DensityRatio().fit(pilot)
            why = (f"more than max_categories={self.max_categories} distinct pilot values "
                   "(or more than half the pilot): fell back to the density-ratio attack")
            return Score(self.name, fallback.projection, fallback.transform,
                         note="; ".join(filter(None, [why, fallback.note])))
        projection, scores = category_score(*found, self.pseudo_count)

        def transform(v):
            # the score of the nearest index: exact at a bin's centre while bins are narrower
            # than half an index (K ≤ 1000 categories, 4000 bins), monotone over the sorted
            # categories when bins merge them; NaN (the NaN bin, never reached) stays NaN
            v = np.asarray(v, dtype=np.float64)
            nearest = np.clip(np.rint(np.nan_to_num(v)), 0, scores.size - 1).astype(np.intp)
            return np.where(np.isnan(v), np.nan, scores[nearest])

        return Score(self.name, projection, transform)
