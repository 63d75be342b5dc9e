"""White-box distinguisher: the exact likelihood ratio of the two mask mixtures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audit.protocols import Laws, Pilot, Score, WhiteBoxAttack
from audit.statistics import ExactLLR, OutputValue

__all__ = ["ExactLikelihoodRatio"]


@dataclass(frozen=True)
class ExactLikelihoodRatio(WhiteBoxAttack):
    """Score = log p(x) − log q(x), with p and q the exact mixtures over masks.

    By the Neyman–Pearson lemma its threshold regions are the most powerful tests, so this
    attack reaches the exact pair privacy as the number of trials grows. It uses no pilot data:
    scalar outputs are histogrammed as they are and scored per bin; vector outputs are
    reduced to the LLR inside the kernel.
    """

    name: ClassVar[str] = "exact-lr"

    def fit(self, pilot: Pilot, laws: Laws) -> Score:
        llr = ExactLLR(laws.P, laws.Q)
        if laws.P.is_scalar:
            return Score(self.name, OutputValue(), llr.evaluate)
        return Score(self.name, llr)
