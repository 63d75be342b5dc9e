"""A user's own mechanism, for the ``"package.module:function"`` target form.

``noisy_sum(data, rng, *, bound, scale)``: the sum of every entry, NaN read as 0 and each
entry clipped to [−bound, bound], plus Laplace(scale) noise — ε-DP per substituted record
for scale ≥ 2·bound·d/ε. ``noisy_sum.batch`` is its batched form over (m, n, d).
"""

from __future__ import annotations

import numpy as np


def noisy_sum(data, rng, *, bound, scale):
    x = np.clip(np.nan_to_num(np.asarray(data, dtype=np.float64), nan=0.0), -bound, bound)
    return float(x.sum() + rng.laplace(scale=scale))


def _noisy_sum_batch(datasets, rng, *, bound, scale):
    x = np.clip(np.nan_to_num(np.asarray(datasets, dtype=np.float64), nan=0.0), -bound, bound)
    return x.sum(axis=(1, 2)) + rng.laplace(scale=scale, size=x.shape[0])


noisy_sum.batch = _noisy_sum_batch

#: not callable, for the error test
NOT_A_FUNCTION = 3


def explode(data, rng):
    """A mechanism that always raises (for the bad-input tests)."""
    raise RuntimeError("this mechanism always fails")


_CALLS = {"n": 0}


def fails_mid_run(data, rng):
    """Keeps its claim (ε = 1 for d = 2 in [-1, 1]) for 300 calls in a process, then raises:
    a mechanism that fails once the audit's work has started (exit status 3)."""
    _CALLS["n"] += 1
    if _CALLS["n"] > 300:
        raise RuntimeError("out of budget after 300 calls")
    x = np.clip(np.nan_to_num(np.asarray(data, dtype=np.float64)), -1.0, 1.0)
    return float(x.sum() + rng.laplace(scale=4.0))
