"""A fake isolated adapter for the tests: ``fake-isolated:sum`` runs ``numpy_side.py`` in a
worker started with this interpreter (no environment to build, so the lifecycle tests are
fast); ``fake-isolated:missing-python`` declares an environment on Python 3.99, which no
machine has. Registered only by the tests (through a patched entry-point group)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from audit.adapters.isolation.client import IsolatedImplementation, Worker, launch
from audit.adapters.isolation.environments import Environment
from audit.adapters.protocol import Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import Claim

SIDE = Path(__file__).resolve().parent / "numpy_side.py"
#: the environment the host process stands for (never built by these fast tests)
HOST = Environment("fake-host", (f"numpy=={np.__version__}",),
                   f"{sys.version_info[0]}.{sys.version_info[1]}")
MISSING = Environment("fake-missing", ("numpy==1.26.4",), "3.99")


def host_worker(params: dict, *, name: str = "fake-isolated:sum", call_timeout: float = 60.0,
                startup_timeout: float = 60.0) -> tuple[Worker, dict]:
    """A worker of ``numpy_side.py`` on this interpreter, initialised with ``params``."""
    worker = Worker(sys.executable, SIDE, name, call_timeout=call_timeout,
                    startup_timeout=startup_timeout)
    return worker, worker.init(params)


def make(function: str, *, epsilon: float, delta: float, params: dict | None):
    params = dict(params or {})
    name = f"fake-isolated:{function}"
    if function == "missing-python":
        launch(MISSING, SIDE, params, name=name)  # raises: no Python 3.99
    timeout = float(params.pop("timeout", 60.0))
    worker, info = host_worker(params, name=name, call_timeout=timeout)
    impl = IsolatedImplementation(HOST, str(SIDE), params, Claim(epsilon, delta, "fake"),
                                  name, info, call_timeout=timeout)
    impl.adopt(worker)
    return impl


_PARAMS = tuple(Parameter(p, None) for p in
                ("scale", "crash_on", "hang_on", "raise_on", "noisy", "bad_shape", "timeout"))
#: the fake's side module stands in for a library's source
_SOURCE = "numpy_side.py:1"
ADAPTER = Adapter(
    library="fake-isolated", distribution="numpy", import_name="numpy", seedable=True,
    relation=Relation.SUBSTITUTION, make=make, environment=HOST,
    targets=(Target("sum", _PARAMS, nan=NanSemantics.READ_AS_ZERO, source=_SOURCE,
                    examples=(Example("default", {"scale": 2.0}),)),
             Target("missing-python", (), nan=NanSemantics.READ_AS_ZERO, source=_SOURCE,
                    examples=(Example("default", {}),))))
