"""Mirror of audit.simulation.gpu: the host-side sizing of the cuda backend (thread blocks,
launches, shared memory, scratch) and its refusal message, all without a GPU. Runs on
numba-cuda's simulator (bit-identical counts to the CPU backend) are in test_cuda.py.

Oracles: the sizes worked out by hand from the documented limits.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from audit.laws import SubsetMixture
from audit.mixture import Mixture
from audit.simulation import gpu
from audit.simulation.packing import spec_of
from audit.statistics import Statistic

EDGES = np.linspace(-3.0, 3.0, 9)
P = Mixture(np.array([0.5, 0.5]), np.array([[0.0, 1.0], [1.0, 0.0]]), "laplace", 1.0)
Q = Mixture(np.array([1.0]), np.array([[0.0, 0.0]]), "laplace", 1.0)
SUB = SubsetMixture(np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 2, 0.5, "gaussian", 1.0)


def test_shared_memory_holds_48_kib_of_int64_counters():
    assert gpu.SHARED_BYTES == 48 * 1024
    assert gpu.uses_shared_memory(6144) and not gpu.uses_shared_memory(6145)


@pytest.mark.parametrize(("blocks", "threads"), [(1, 32), (32, 32), (33, 64), (250, 256)])
def test_threads_per_block_round_up_to_a_warp(blocks, threads):
    assert gpu._threads_per_block(blocks) == threads


def test_group_blocks_caps_the_counts_a_call_returns():
    # OUT_BYTES / (16 bytes per chunk and bin: 2 sides × int64) chunks per call
    assert gpu.group_blocks(10_000, 100, 16) == 10_000
    n_bins = gpu.OUT_BYTES // (16 * 3)  # room for exactly 3 chunks
    assert gpu.group_blocks(10_000, 100, n_bins) == 300
    assert gpu.group_blocks(10_000, 100, gpu.OUT_BYTES) == 100  # always one chunk
    assert gpu.group_blocks(50, 100, 16) == 100  # never less than a chunk


def test_scratch_buffers_per_mode():
    out = spec_of(P, Q, Statistic.linear([1.0, 1.0], 0.0, EDGES))
    assert gpu._scratch_floats(out) == 1  # no log density evaluated
    llr = spec_of(SUB, SUB, Statistic.llr(SUB, SUB, EDGES))
    assert gpu._scratch_floats(llr) == 5 + 2 + 1
    x, perm, buf, v = gpu._scratch(64, llr)
    assert x.shape == (64, 1, 5) and perm.shape == (64, 5) and perm.dtype == np.int64
    assert buf.shape == (64, 8) and v.shape == (64, 1)


def test_chunks_per_launch_keeps_the_scratch_under_its_bound():
    spec = spec_of(SUB, SUB, Statistic.llr(SUB, SUB, EDGES))
    per_thread = 8 * (2 * 5 + 8 + 1)
    want = (gpu.SCRATCH_BYTES // per_thread) // (2 * 128)
    assert gpu._chunks_per_launch(100, spec) == want
    assert 2 * 128 * want * per_thread <= gpu.SCRATCH_BYTES
    assert gpu._chunks_per_launch(10**9, spec) == 1  # at least one chunk


def test_kernel_signature_types_every_argument_of_a_launch():
    numba = pytest.importorskip("numba")
    spec = spec_of(P, Q, Statistic.linear([1.0, -1.0], 0.5, EDGES))
    sig = gpu.kernel_signature(spec)
    assert len(sig) == 6 + len(spec) + 3  # ints, the spec's six tuples, scratch, out, shared
    assert sig[0] == numba.typeof(np.uint64(0)) and sig[-1] == numba.typeof(True)
    assert sig[-2] == numba.typeof(np.zeros((1, 2, EDGES.size + 2), dtype=np.int64))


def test_unavailable_names_the_missing_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba_cuda" else real(name, *a))
    assert gpu.unavailable() == ("backend='cuda' needs numba-cuda: install the [cuda] extra "
                                 "(pip install 'missingness-audit[cuda]')")


def test_unavailable_is_none_or_one_line():
    why = gpu.unavailable()
    assert why is None or (why.startswith("backend='cuda' ") and "\n" not in why)
