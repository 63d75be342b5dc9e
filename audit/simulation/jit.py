"""The one decorator holding every jit option of the numba kernels and their helpers.

Every numba function of the simulation layer (``rng``, ``densities``, ``kernels``,
``gpu_kernel``) is compiled through :func:`_jit`, so the options that decide the compiled code
live here once (as in numba-stats' ``_util._jit``):

- ``cache=True``: compiled code is cached next to the sources, so workers and later runs load
  it instead of compiling;
- ``nogil=True``: kernels release the GIL (the ``threading`` backend runs them in threads);
- ``fastmath=False``: IEEE semantics, no reassociation, so the counts do not depend on the
  compiler's choices;
- ``error_model="numpy"``: division by zero gives inf/NaN as in numpy, with no checks inside
  the loops.

A caller adds only what is its own: ``inline="always"`` for a scalar helper, ``parallel=True``
for the ``prange`` kernel. This module's source is part of the checkpoint code tag
(``audit.simulation.checkpoints``). It imports numba: load it only from the numba modules.
"""

from __future__ import annotations

from types import MappingProxyType

import numba

__all__: list[str] = []  # private to the simulation layer's numba modules

#: The options of every jit-compiled function (a caller may add, not override, through _jit).
_OPTIONS = MappingProxyType({"cache": True, "nogil": True, "fastmath": False,
                             "error_model": "numpy"})


def _jit(**extra):
    """``numba.njit`` with the shared options and the caller's ``extra`` options."""
    clash = set(extra) & set(_OPTIONS)
    if clash:
        raise ValueError(f"extra must not override the shared jit options, got "
                         f"{sorted(clash)}")
    return numba.njit(**_OPTIONS, **extra)
