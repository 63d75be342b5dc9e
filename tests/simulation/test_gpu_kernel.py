"""Mirror of audit.simulation.gpu_kernel: the CUDA kernel's per-trial step on the CPU.

The kernel draws one trial at a time (``trial_bin``) where the CPU kernels draw batches of
``BATCH``; the design (audit.simulation.gpu) rests on both consuming a block's stream in the
same order. Oracle: the CPU kernel's own counts of the same block
(``kernels.hist_blocks``), which must be equal bin for bin, across a batch boundary, for
every law kind and projection. ``trial_bin`` is a CPU numba function, so this needs neither
a GPU nor the simulator, only numba-cuda to import the module.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from audit.laws import ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.simulation import gpu, kernels
from audit.simulation.packing import BATCH, Blocks, spec_of
from audit.simulation.rng import _seed_state, derive_key
from audit.statistics import Statistic

pytest.importorskip("numba_cuda", reason="numba-cuda is not installed (the [cuda] extra)")

EDGES = np.linspace(-4.0, 4.0, 17)
G = Mixture(np.array([0.3, 0.7]), np.array([0.0, 1.0]), "gaussian", 1.2)
G0 = Mixture(np.array([1.0]), np.array([0.0]), "gaussian", 1.2)
L2 = Mixture(np.array([0.5, 0.25, 0.25]), np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]),
             "laplace", 0.8)
PROD = ProductMixture(np.array([[0.5, 0.5], [0.2, 0.8]]), np.array([[0.0, 1.0], [-1.0, 1.0]]),
                      "laplace", 1.0)
SUB = SubsetMixture(np.array([1.0, -1.0, 2.0]), 2, 0.6, "gaussian", 1.0)
CASES = {
    "gaussian-llr": (G, G0, Statistic.llr(G, G0, EDGES)),
    "laplace-linear-2d": (L2, L2, Statistic.linear([1.0, -0.5], 0.25, EDGES)),
    "product-linear": (PROD, PROD, Statistic.linear([1.0, 0.0], 0.0, EDGES)),
    "subset-llr": (SUB, SUB, Statistic.llr(SUB, SubsetMixture(np.zeros(3) + 1.0, 2, 0.6,
                                                               "gaussian", 1.0), EDGES)),
}


def test_the_kernel_takes_the_arguments_its_signature_types():
    from audit.simulation import gpu_kernel

    spec = spec_of(G, G0, Statistic.output(EDGES))
    params = inspect.signature(gpu_kernel.hist_kernel.py_func).parameters
    assert len(params) == len(gpu.kernel_signature(spec))
    assert list(params)[6:12] == ["p", "q", "score", "lp", "lq", "bins"]  # HistSpec's order
    assert list(kernels.HistSpec._fields) == ["p", "q", "score", "lp", "lq", "bins"]


@pytest.mark.slow  # compiling trial_bin takes ~40 s without numba's on-disk cache
@pytest.mark.parametrize("case", list(CASES))
def test_one_trial_at_a_time_counts_what_the_cpu_batches_count(case):
    from audit.simulation.gpu_kernel import trial_bin

    P, Q, stat = CASES[case]
    spec = spec_of(P, Q, stat)
    key, block, n = derive_key(11), 2, BATCH + 44  # a block longer than one batch
    cpu = kernels.hist_blocks(Blocks(key, block, block + 1, 10 * n, n), spec, parallel=False)
    for side, law in ((0, spec.p), (1, spec.q)):
        state = np.empty(4, dtype=np.uint64)
        _seed_state(key, side, block, state)
        x = np.empty((1, law.dim))
        spare = np.zeros(2)
        perm = np.empty(law.dim, dtype=np.int64)
        buf = np.empty(gpu._scratch_floats(spec))
        v = np.empty(1)
        counts = np.zeros(EDGES.size + 2, dtype=np.int64)
        for _ in range(n):
            counts[trial_bin(state, law, spec.score, spec.lp, spec.lq, spec.bins, x, spare,
                             perm, buf, v)] += 1
        assert counts.sum() == n
        assert np.array_equal(counts, cpu[side, 0]), (case, side)
