"""A third-party adapter in miniature, for the registry tests (found only when a test
registers ``fakelib = "tests.adapters.fake_adapter:ADAPTER"`` by monkeypatching
``importlib.metadata.entry_points``).

``fakelib:sum``: the sum of every entry, NaN read as 0, each entry clipped to ``bounds``, plus
Laplace noise from the audit's ``rng``. Its "library" guarantees ε for adding or removing one
record, so the adapter asks it for the budget ``to_substitution(ADD_REMOVE, ε)`` = ε/2 with
sensitivity max(|lo|, |hi|)·d.
"""

from __future__ import annotations

import numpy as np

from audit.adapters import (
    REQUIRED,
    Adapter,
    Example,
    NanSemantics,
    Parameter,
    Relation,
    Target,
    to_substitution,
)
from audit.model.implementation import CallableImplementation, Claim


def make(function: str, *, epsilon: float, delta: float, params: dict | None):
    lo, hi = (params or {})["bounds"]
    budget = to_substitution(ADAPTER.relation, epsilon, delta)

    def release(data, rng):
        x = np.clip(np.nan_to_num(np.asarray(data, dtype=np.float64)), lo, hi)
        scale = max(abs(lo), abs(hi)) * x.shape[1] / budget.epsilon
        return float(x.sum() + rng.laplace(scale=scale))

    return CallableImplementation(func=release, claim=Claim(epsilon, delta, "fakelib sum"),
                                  name=f"fakelib:{function}", params=dict(params or {}))


ADAPTER = Adapter(
    library="fakelib", distribution="fakelib", import_name="numpy", seedable=True,
    relation=Relation.ADD_REMOVE, make=make, summary="a test double",
    targets=(Target("sum", (Parameter("bounds", REQUIRED, "(lo, hi)"),),
                    nan=NanSemantics.READ_AS_ZERO, source="numpy/_core/fromnumeric.py:1",
                    examples=(Example("default", {"bounds": [-1.0, 1.0]}),)),),
)

#: not an Adapter, for the error test
NOT_AN_ADAPTER = 3
