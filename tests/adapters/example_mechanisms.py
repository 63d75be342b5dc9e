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
