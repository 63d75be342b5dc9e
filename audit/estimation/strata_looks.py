"""The looks of a sequential mask-stratified audit (docs/THEORY.md §8.5, "Sequential runs").

A sequential stratified run declares its looks before the main run: after
⌊n · 2^(j − looks + 1)⌋ calls of every run (stratum or plain rate) at look j
(:func:`look_calls`), it bounds every rate at ``alpha / looks``; its bound is the largest over
the looks it made (:func:`over_looks`), valid after any rule that stops at a look.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from audit._validate import check_positive_int
from audit.estimation.binomial import check_alpha
from audit.ties import quantise_scores

__all__ = ["MAX_LOOKS", "look_calls", "over_looks"]

#: Most looks of a sequential stratified audit.
MAX_LOOKS = 16


def look_calls(calls, looks: int) -> np.ndarray:
    """Cumulative calls per run at each look of a sequential run: ⌊n · 2^(j − looks + 1)⌋ at
    look j = 0..looks − 1 (the budget halved back from the last look, which makes all of
    ``calls``), shape (looks, runs)."""
    looks = check_positive_int(looks, "looks")
    if looks > MAX_LOOKS:
        raise ValueError(f"looks must be in [1, {MAX_LOOKS}], got looks={looks}")
    n = np.asarray(calls, dtype=np.int64)
    frac = 2.0 ** (np.arange(looks) - looks + 1)
    out = np.floor(n[None, :] * frac[:, None]).astype(np.int64)
    out[-1] = n
    return out


def over_looks(bounds: Sequence, planned: int, alpha: float, stop: str | None):
    """The bound of a sequential stratified run from the bounds at the looks it made, each at
    ``alpha / planned``: at each rate the largest ε_lower over the looks (with its masses
    and region), the plug-in value and calls of the last look. Every look's one-sided
    intervals hold at once with probability ≥ 1 − alpha (Bonferroni over the ``planned``
    looks, declared before the run), so the maximum is valid after any rule that stops at a
    look (docs/THEORY.md §8.5).

    Raises
    ------
    ValueError
        No bound, more bounds than ``planned``, or a bound not at ``alpha / planned``.
    """
    alpha = check_alpha(alpha)
    planned = check_positive_int(planned, "planned")
    if not bounds or len(bounds) > planned:
        raise ValueError(f"over_looks needs 1 to planned={planned} bounds, got {len(bounds)}")
    if any(not math.isclose(b.alpha * planned, alpha, rel_tol=1e-9) for b in bounds):
        raise ValueError(f"each look's bound must hold at alpha / planned = {alpha / planned:g}"
                         f", got {[b.alpha for b in bounds]}")
    last = bounds[-1]
    eps = np.array([b.eps for b in bounds])
    # per rate, the look whose bound is largest (first on ties, quantised: CPU-independent)
    best = np.argmax(quantise_scores(eps), axis=0)

    def pick(name: str) -> tuple:
        return tuple(getattr(bounds[j], name)[g] for g, j in enumerate(best))

    return dataclasses.replace(
        last, eps=pick("eps"), p_lower=pick("p_lower"), q_upper=pick("q_upper"),
        directions=pick("directions"), thresholds=pick("thresholds"), alpha=alpha,
        looks=planned, looks_run=len(bounds), stop=stop)
