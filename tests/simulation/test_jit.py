"""Every numba function of the simulation layer is compiled with the one set of jit options."""

from __future__ import annotations

import pytest
from numba.core.caching import NullCache
from numba.core.dispatcher import Dispatcher

from audit.simulation import densities, jit, kernels, rng

SHARED = {"nogil": True, "fastmath": False, "error_model": "numpy"}


def _dispatchers(module):
    return {name: f for name, f in vars(module).items()
            if isinstance(f, Dispatcher) and f.__module__ == module.__name__}


@pytest.mark.parametrize("module", [rng, densities, kernels])
def test_every_jit_function_has_the_shared_options(module):
    found = _dispatchers(module)
    assert len(found) >= 3, sorted(found)
    for name, f in found.items():
        opts = f.targetoptions
        assert {k: opts.get(k) for k in SHARED} == SHARED, name
        assert not isinstance(f._cache, NullCache), name  # cache=True: an on-disk cache


def test_the_caller_adds_options_but_cannot_override_them():
    assert _dispatchers(kernels)["_hist_parallel"].targetoptions["parallel"]
    assert _dispatchers(rng)["_splitmix64"].targetoptions["inline"] == "always"
    with pytest.raises(ValueError, match=r"must not override.*\['cache'\]"):
        jit._jit(cache=False)
    with pytest.raises(ValueError, match=r"\['fastmath'\]"):
        jit._jit(fastmath=True, inline="always")
