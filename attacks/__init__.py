"""Distinguishers for privacy audits. Imports :mod:`audit`; :mod:`audit` never imports this.

Each attack implements :class:`attacks.base.Attack`: ``fit(AttackInput) -> Score``.
"""

from attacks.base import Attack, AttackInput, Score, bin_representatives
from attacks.exact import ExactLikelihoodRatio
from attacks.fitted import DensityRatio, LogisticRegression
from attacks.threshold import OutputThreshold

ATTACKS = {
    "exact-lr": ExactLikelihoodRatio,
    "density-ratio": DensityRatio,
    "logistic": LogisticRegression,
    "threshold": OutputThreshold,
}


def make_attack(name: str) -> Attack:
    """The attack registered under ``name`` (one of :data:`ATTACKS`), with default settings."""
    try:
        return ATTACKS[name]()
    except KeyError:
        allowed = ", ".join(repr(k) for k in ATTACKS)
        raise ValueError(f"attack must be one of {allowed}, got attack={name!r}") from None


__all__ = [
    "ATTACKS",
    "Attack",
    "AttackInput",
    "DensityRatio",
    "ExactLikelihoodRatio",
    "LogisticRegression",
    "OutputThreshold",
    "Score",
    "bin_representatives",
    "make_attack",
]
