"""Distinguishers for privacy audits. Imports :mod:`audit`; :mod:`audit` never imports this.

Each attack subclasses :class:`audit.protocols.BlackBoxAttack` (``fit(pilot) -> Score``) or
:class:`audit.protocols.WhiteBoxAttack` (``fit(pilot, laws) -> Score``) and is registered by
name under the ``audit.attacks`` entry-point group in ``pyproject.toml``, the one registry:
``audit.protocols.load_attack(name)`` instantiates it.
"""

from attacks.exact import ExactLikelihoodRatio
from attacks.fitted import DensityRatio, LogisticRegression
from attacks.threshold import OutputThreshold

__all__ = ["DensityRatio", "ExactLikelihoodRatio", "LogisticRegression", "OutputThreshold"]
