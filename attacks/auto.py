"""An attack that picks, from the pilot alone, the black-box score suited to the release.

The candidates are :class:`attacks.fitted.DensityRatio` (the baseline: for vectors a linear
projection and a 1-D density ratio), :class:`attacks.categorical.Categorical` when the pilot
takes few distinct values, :class:`attacks.kvector.LatentMixture` for continuous vectors whose
coordinates look exchangeable (:func:`attacks.kvector.looks_exchangeable`: k releases from one
table; a model of a few numbers, the noise's shape and scale and two mixing laws on a grid,
so it comes before the nonparametric per-coordinate scores), and for vector outputs
:class:`attacks.additive.AdditiveDensityRatio` (a sum of per-coordinate density ratios) and,
for continuous ones, :class:`attacks.isotonic.IsotonicSum` (a sum of monotone per-coordinate
ratios) and :class:`attacks.knn.NearestNeighbours`. Each is fitted on one half of the
pilot and judged on the other by :func:`held_out_epsilon`, both ways round (two-fold). Taken
in that order (of growing complexity), a candidate replaces the one chosen so far only when
its mean held-out bound is larger by ``margin``; the chosen attack is refitted on the whole
pilot.

The choice sees the pilot only (the fit part the runner hands to attacks), so the regions
the score induces may still be used for a bound on the main run. The default attack of every
black-box audit (``audit.policy.AuditPolicy.black_box_attack``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from attacks.additive import AdditiveDensityRatio
from attacks.categorical import Categorical, distinct_rows
from attacks.fitted import DensityRatio
from attacks.isotonic import IsotonicSum
from attacks.knn import NearestNeighbours
from attacks.kvector import LatentMixture, looks_exchangeable
from audit._validate import check_in_range, check_positive_int
from audit.estimation.binomial import eps_from_counts
from audit.policy import DEFAULT_POLICY, AuditPolicy
from audit.protocols import BlackBoxAttack, Pilot, Score

__all__ = ["Auto", "held_out_epsilon"]



def _scores(score: Score, x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        s = score(x)
    return np.where(np.isnan(s), -np.inf, s)  # as Statistic.bin_scores does


def held_out_epsilon(score: Score, held: Pilot, alpha: float | None = None, *,
                     policy: AuditPolicy | None = None) -> float:
    """The largest Clopper–Pearson lower bound on ε at ``alpha`` (δ = 0; the project's one
    evaluator, :func:`audit.estimation.binomial.eps_from_counts`: each side at alpha/2) over
    the threshold regions {s ≥ t} (for z) and {s ≤ t} (for z') of ``score`` on held-out draws,
    t at ``policy.held_out_levels`` quantiles (``alpha`` None: ``policy.held_out_alpha``;
    ``policy`` default :data:`audit.policy.DEFAULT_POLICY`); 0 when no region shows more.

    Raises
    ------
    ValueError
        If ``alpha`` is not in (0, 1) or a side of ``held`` is empty.
    """
    policy = DEFAULT_POLICY if policy is None else policy
    alpha = policy.held_out_alpha if alpha is None else alpha
    check_in_range("alpha", alpha, 0.0, 1.0, lo_closed=False, hi_closed=False)
    sp, sq = _scores(score, held.p), _scores(score, held.q)
    n_p, n_q = sp.size, sq.size
    if n_p == 0 or n_q == 0:
        raise ValueError(f"held must have draws on both sides, got {n_p} and {n_q}")
    pooled = np.concatenate([sp, sq])
    finite = pooled[np.isfinite(pooled)]
    levels = np.linspace(0.0, 1.0, policy.held_out_levels)
    ts = np.unique(np.concatenate([np.quantile(finite, levels) if finite.size else [],
                                   [-np.inf]]))
    sp, sq = np.sort(sp), np.sort(sq)
    ge_p = n_p - np.searchsorted(sp, ts, side="left")  # #{s ≥ t}
    ge_q = n_q - np.searchsorted(sq, ts, side="left")
    le_p = np.searchsorted(sp, ts, side="right")  # #{s ≤ t}
    le_q = np.searchsorted(sq, ts, side="right")
    forward = eps_from_counts(ge_p, n_p, ge_q, n_q, 0.0, alpha)
    backward = eps_from_counts(le_q, n_q, le_p, n_p, 0.0, alpha)
    return float(max(np.max(forward), np.max(backward), 0.0))


@dataclass(frozen=True)
class Auto(BlackBoxAttack):
    """Categorical counting, the density ratio, the latent-mixture, additive, isotonic or k-NN
    score, chosen on the pilot.

    Parameters
    ----------
    max_categories : int
        Most distinct pilot values for categorical counting (≥ 1).
    margin : float
        How much larger (in ε, ≥ 0) a candidate's held-out bound must be than that of the
        candidate chosen before it (the density ratio first) for it to be used.
    """

    max_categories: int = 1000
    margin: float = 0.05
    name: ClassVar[str] = "auto"

    def __post_init__(self) -> None:
        check_positive_int(self.max_categories, "max_categories")
        check_in_range("margin", self.margin, 0.0, np.inf, hi_closed=False)

    def _named(self, score: Score, note: str) -> Score:
        """``score`` under this attack's name, ``note`` before its own."""
        return Score(self.name, score.projection, score.transform,
                     note="; ".join(filter(None, [note, score.note])))

    def candidates(self, pilot: Pilot) -> tuple[BlackBoxAttack, ...]:
        """The attacks compared on ``pilot``, the density ratio (the baseline) first."""
        few = distinct_rows(pilot, self.max_categories) is not None
        out = [DensityRatio()] + ([Categorical(self.max_categories)] if few else [])
        if not few and looks_exchangeable(pilot):
            out.append(LatentMixture())
        if not pilot.is_scalar:
            out.append(AdditiveDensityRatio())
            if not few:
                out += [IsotonicSum(), NearestNeighbours()]
        return tuple(out)

    def fit(self, pilot: Pilot) -> Score:
        candidates = self.candidates(pilot)
        m = min(np.shape(pilot.p)[0], np.shape(pilot.q)[0]) // 2
        if len(candidates) == 1:
            return self._named(candidates[0].fit(pilot), "")
        if m < MIN_HELD:
            return self._named(candidates[0].fit(pilot),
                               "pilot too small to compare scores: density ratio")
        first, second = pilot.split(m)
        second = Pilot(second.p[:m], second.q[:m])
        # two-fold: each half fits, the other judges; the mean of the two held-out bounds
        eps = [0.5 * (held_out_epsilon(c.fit(first), second)
                      + held_out_epsilon(c.fit(second), first)) for c in candidates]
        chosen = 0  # candidates in order of complexity: a later one must beat by margin
        for i in range(1, len(candidates)):
            if eps[i] > eps[chosen] + self.margin:
                chosen = i
        chosen = candidates[chosen]
        note = "held-out ε: " + ", ".join(f"{c.name} {e:.3g}" for c, e in
                                          zip(candidates, eps, strict=True))
        return self._named(chosen.fit(pilot), f"{note}: {chosen.name}")


#: fewest held-out draws per side for the comparison
MIN_HELD = 50
