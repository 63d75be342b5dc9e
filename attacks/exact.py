"""White-box distinguisher: the exact likelihood ratio of the two mask mixtures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attacks.base import AttackInput, Score

__all__ = ["ExactLikelihoodRatio"]


@dataclass(frozen=True)
class ExactLikelihoodRatio:
    """Score = log p(x) − log q(x), with p and q the exact mixtures over masks.

    By the Neyman–Pearson lemma its threshold regions are the most powerful tests, so this
    attack reaches the exact pair privacy as the number of trials grows. It uses no pilot data.
    """

    name: str = "exact-lr"
    white_box: bool = True

    def fit(self, data: AttackInput) -> Score:
        P, Q = data.P, data.Q

        def llr(x: np.ndarray) -> np.ndarray:
            return P.logpdf(x) - Q.logpdf(x)

        return Score(self.name, llr, None if P.is_scalar else ("llr",))
