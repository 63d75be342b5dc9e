"""The CUDA backend against the CPU kernels on numba-cuda's simulator (run by test_cuda.py).

Run as a script in a process whose environment has ``NUMBA_ENABLE_CUDASIM=1`` (the simulator
must be chosen before numba.cuda is first imported): ``python cuda_sim_cases.py OUT.json``.
For every case it runs the CUDA kernel (:func:`audit.simulation.gpu.hist_chunks`) and the
CPU kernel (:func:`audit.simulation.kernels.hist_blocks`) on the same blocks, and writes per
case the per-chunk counts' agreement and the number of draws counted in different bins.
``ptx`` instead compiles the kernel for a real GPU (compute capability 9.0) without one, when
libNVVM and NVRTC are installed, and says SKIP otherwise.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from audit.laws import ProductMixture, SubsetMixture
from audit.simulation import engine, gpu, kernels
from audit.simulation.rng import derive_key
from audit.statistics import Statistic
from tests.simulation.sample_laws import L3, M3, P3, PG, PV, Q3, QG, QV
from tests.simulation.sample_laws import P as P1
from tests.simulation.sample_laws import Q as Q1

PP = ProductMixture([[0.7, 0.3], [0.5, 0.5], [0.2, 0.8]],
                    [[0.0, 1.0], [0.0, -1.0], [0.0, 2.0]], "gaussian", 0.9)
QP = ProductMixture([[1.0, 0.0], [0.5, 0.5], [0.6, 0.4]],
                    [[0.0, 1.0], [0.0, -1.0], [0.0, 2.0]], "gaussian", 0.9)
PS = SubsetMixture([1.0, -0.5, 2.0, 0.7], 2, 0.7, "gaussian", 0.8)
QS = SubsetMixture([1.0, -0.5, 2.0, 0.7], 2, 0.2, "gaussian", 0.8)
PL = SubsetMixture([1.5, -1.0, 0.5, 2.0, -0.3], 3, 0.6, "laplace", 1.0)
QL = SubsetMixture([1.5, -1.0, 0.5, 2.0, -0.3], 3, 0.1, "laplace", 1.0)
EV = np.linspace(-4.0, 4.0, 41)
ENU = np.array([-3.0, -1.0, -0.5, 0.0, 0.1, 0.3, 1.0, 2.5, 6.0])

#: name -> (P, Q, statistic, trials, block_trials, first block, chunk_blocks, seed): small
#: runs (the simulator runs each CUDA thread as a Python thread), several blocks, a partial
#: last block and a partial last chunk, odd and even block lengths and dimensions (the
#: Box–Muller spare normal carried across trials of a block).
CASES = {
    "laplace-scalar-output": (P1, Q1, Statistic.output(engine.default_edges(P1, Q1, 64)),
                              2500, 400, 0, 2, 7),
    "gaussian-scalar-output": (PG, QG, Statistic.output(engine.default_edges(PG, QG, 200)),
                               2500, 333, 1, 3, 3),
    "gaussian-dim2-llr": (PV, QV, Statistic.llr(PV, QV, EV), 1800, 301, 0, 2, 11),
    "gaussian-dim3-linear-nonuniform": (P3, Q3, Statistic.linear([1.0, -0.5, 0.25], 0.1, ENU),
                                        1800, 257, 0, 3, 5),
    "laplace-dim3-llr": (L3, M3, Statistic.llr(L3, M3, EV), 1500, 400, 0, 2, 2),
    "product-gaussian-dim3-llr": (PP, QP, Statistic.llr(PP, QP, EV), 1500, 256, 0, 2, 17),
    "subset-gaussian-dim4-llr": (PS, QS, Statistic.llr(PS, QS, EV), 1500, 255, 0, 3, 19),
    "subset-laplace-dim5-llr": (PL, QL, Statistic.llr(PL, QL, EV), 1200, 250, 1, 2, 23),
    # 7003 counters do not fit in 48 KiB of shared memory: global atomics
    "many-bins-global-atomics": (P1, Q1, Statistic.output(np.linspace(-30.0, 30.0, 7001)),
                                 1500, 400, 0, 2, 29),
}


def compare(name: str) -> dict:
    """Per-chunk CUDA and CPU counts of one case, and how far apart they are."""
    P, Q, stat, trials, bt, first, cb, seed = CASES[name]
    n_blocks = -(-trials // bt)
    blocks = kernels.Blocks(derive_key(seed), first, n_blocks, trials, bt)
    spec = kernels.spec_of(P, Q, stat)
    t = time.perf_counter()
    got = gpu.hist_chunks(blocks, cb, spec)
    seconds = time.perf_counter() - t
    per_block = kernels.hist_blocks(blocks, spec, parallel=False)
    starts = list(range(0, n_blocks - first, cb))
    want = np.add.reduceat(per_block, starts, axis=1).transpose(1, 0, 2)
    return {
        "shape": list(got.shape), "want_shape": list(want.shape),
        "identical": bool(np.array_equal(got, want)),
        "draws_in_other_bins": int(np.abs(got - want).sum() // 2),
        "draws": int(got.sum()), "want_draws": int(2 * (trials - first * bt)),
        "shared_memory": gpu.uses_shared_memory(stat.n_bins), "seconds": seconds,
    }


def engine_runs(tmp: str) -> dict:
    """``run_histograms(backend="cuda")`` against the CPU engine: several launches (scratch
    capped), checkpoints saved, a chunk deleted and the run resumed from the others."""
    import pathlib

    P, Q, stat = PG, QG, Statistic.output(engine.default_edges(PG, QG, 50))
    kw = dict(block_trials=200, chunk_blocks=2)
    cpu = engine.run_histograms(P, Q, stat, 2100, 31, **kw)
    gpu.SCRATCH_BYTES = 1  # scratch for one thread: one chunk per launch
    cuda = engine.run_histograms(P, Q, stat, 2100, 31, backend="cuda", checkpoint=tmp, **kw)
    files = sorted(pathlib.Path(tmp).glob("*.npz"))
    files[2].unlink()
    resumed = engine.run_histograms(P, Q, stat, 2100, 31, backend="cuda", checkpoint=tmp,
                                    n_jobs=3, **kw)
    same = [np.array_equal(a.counts_p, b.counts_p) and np.array_equal(a.counts_q, b.counts_q)
            for a, b in ((cpu, cuda), (cpu, resumed))]
    rate = engine.measure_rate(P, Q, stat, seconds=0.0, backend="cuda")
    many = engine.run_histograms(P1, Q1, CASES["many-bins-global-atomics"][2], 300, 3,
                                 backend="cuda")
    return {"identical": same, "files": len(files), "notes": list(resumed.notes),
            "workers": resumed.workers, "rate": rate, "many_bins_notes": list(many.notes)}


def ptx() -> str:
    """Compile the kernel for compute capability 9.0 without a GPU (needs libNVVM, NVRTC)."""
    import types

    from numba import cuda
    from numba.cuda import dispatcher

    try:
        from numba.cuda.cudadrv import nvrtc, nvvm

        nvvm.NVVM()
        nvrtc.get_supported_ccs()
    except Exception as exc:  # noqa: BLE001 - any missing library means: cannot check here
        return f"SKIP: no libNVVM/NVRTC here ({type(exc).__name__})"
    # Device functions take the compute capability from the current device: pretend one.
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    from audit.simulation.gpu_kernel import hist_kernel

    spec = kernels.spec_of(PS, QS, Statistic.llr(PS, QS, EV))
    text, _ = cuda.compile_ptx(hist_kernel.py_func, gpu.kernel_signature(spec), cc=(9, 0))
    atomics = sorted({w for w in text.split() if w.startswith("atom.")})
    return f"OK {len(text)} chars of PTX, atomics {' '.join(atomics)}"


def main(argv: list[str]) -> int:
    if argv[1] == "ptx":
        print(ptx())
        return 0
    from numba.cuda.core import config

    assert config.ENABLE_CUDASIM, "set NUMBA_ENABLE_CUDASIM=1 before running this script"
    assert gpu.unavailable() is None
    out = {name: compare(name) for name in CASES}
    out["engine"] = engine_runs(argv[2])
    with open(argv[1], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
