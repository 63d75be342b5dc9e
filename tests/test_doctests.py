"""The examples in the public entry points' docstrings run as doctests.

Each module listed here must have at least one example, and every example must pass
(``ELLIPSIS`` for floats, ``NORMALIZE_WHITESPACE`` for arrays). The examples are small and
deterministic: the whole file runs in about a second.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

#: modules whose docstring examples are part of the documented API (docs/api/)
MODULES = [
    "audit.theory.accountant",
    "audit.theory.calibration",
    "audit.model.missingness",
    "audit.model.queries",
    "audit.policy",
    "audit.estimation.binomial",
    "audit.pipeline.schema",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False, report=True)
    assert result.attempted >= 1, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
