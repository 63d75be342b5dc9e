"""What an isolated adapter's ``make`` hands its worker, without starting one: its ``launch``
replaced by a fake that records the parameters and stops (shared by the isolated adapters'
tests: SmartNoise SQL, Tumult, dpmm)."""

from __future__ import annotations

import pytest

from audit.adapters import make_implementation


def handed_to_worker(monkeypatch, module, target: str, *, epsilon: float = 1.0,
                     delta: float = 0.0, params: dict | None = None) -> dict:
    """The parameters ``module.make`` (an isolated adapter's module) hands ``launch`` for
    ``make_implementation(target, ...)``."""
    handed = {}

    def fake_launch(environment, side, lib, *, name, **kw):
        handed.update(lib)
        raise ValueError("stop")

    monkeypatch.setattr(module, "launch", fake_launch)
    with pytest.raises(ValueError, match="stop"):
        make_implementation(target, epsilon=epsilon, delta=delta, params=params)
    return handed
