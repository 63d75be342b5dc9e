"""Distinguishers for privacy audits. Imports :mod:`audit`; :mod:`audit` never imports this.

Each attack subclasses :class:`audit.protocols.BlackBoxAttack` (``fit(pilot) -> Score``) or
:class:`audit.protocols.WhiteBoxAttack` (``fit(pilot, laws) -> Score``) and is registered by
name under the ``audit.attacks`` entry-point group in ``pyproject.toml``, the one registry:
``audit.protocols.load_attack(name)`` instantiates it.

The classes are exported lazily, so loading one attack does not import the others'
dependencies (statsmodels is needed only by the logistic attack).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "AdditiveDensityRatio": "attacks.additive",
    "Auto": "attacks.auto",
    "Categorical": "attacks.categorical",
    "ExactLikelihoodRatio": "attacks.exact",
    "DensityRatio": "attacks.fitted",
    "IsotonicSum": "attacks.isotonic",
    "LatentMixture": "attacks.kvector",
    "LogisticRegression": "attacks.fitted",
    "NearestNeighbours": "attacks.knn",
    "OutputThreshold": "attacks.threshold",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attacks' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
