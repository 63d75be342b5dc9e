"""Draws per second of the CPU and CUDA backends side by side, and their agreement.

Scenarios: the canonical scalar Laplace audit of ``bench_engine.py`` (d = 10, mcar-iid
r = 0.3, sum query, ε = 1; output statistic, 1000 bins), a 3-dimensional Gaussian mixture
with its exact LLR, and a subset law (5 coordinates, 2 observed) with its exact LLR. For each:
draws per second (both sides) of ``run_histograms`` on the CPU (numba, every thread, in
process) and on the GPU (``backend="cuda"``), and, on a GPU, the number of draws the two count
in different bins on a common run of ``--check-trials`` per side (0 means identical counts;
see ``audit.simulation.gpu`` on last-ulp differences). Without a usable GPU the CUDA column
says why ("no GPU"); numba-cuda's simulator is not timed.

    python benchmarks/bench_cuda.py [--cpu-trials N] [--gpu-trials N] [--check-trials N]
                                    [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def scenarios():
    from audit.laws import SubsetMixture
    from audit.mixture import Mixture
    from audit.simulation import engine
    from audit.statistics import Statistic

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_engine import scenario

    (P, Q), _ = scenario()
    P3 = Mixture([0.6, 0.3, 0.1], [[0.0, 0.0, 1.0], [1.0, -1.0, 0.0], [2.0, 0.0, 0.0]],
                 "gaussian", 1.1)
    Q3 = Mixture([1.0], [[0.0, 0.0, 0.0]], "gaussian", 1.1)
    PS = SubsetMixture([1.0, -0.5, 2.0, 0.7, 1.5], 2, 0.7, "gaussian", 0.8)
    QS = SubsetMixture([1.0, -0.5, 2.0, 0.7, 1.5], 2, 0.2, "gaussian", 0.8)
    edges = np.linspace(-6.0, 6.0, 1001)
    return {
        "laplace-scalar-output (bench_engine scenario)":
            (P, Q, Statistic.output(engine.default_edges(P, Q, 1000))),
        "gaussian-dim3-llr": (P3, Q3, Statistic.llr(P3, Q3, edges)),
        "subset-gaussian-dim5-llr": (PS, QS, Statistic.llr(PS, QS, edges)),
    }


def timed(P, Q, stat, trials: int, backend: str) -> tuple[float, object]:
    """(draws per second, counts) of one warm run (compiled first on a tiny run)."""
    from audit.simulation import engine

    engine.run_histograms(P, Q, stat, 4096, 0, backend=backend)
    t = time.perf_counter()
    h = engine.run_histograms(P, Q, stat, trials, 1, backend=backend)
    dt = time.perf_counter() - t
    assert h.counts_p.sum() == trials and h.counts_q.sum() == trials
    return 2.0 * trials / dt, h


def gpu_status() -> str | None:
    """None where the cuda backend can be timed, else why not (one line)."""
    from audit.simulation import gpu

    why = gpu.unavailable()
    if why is not None:
        return "no GPU (" + why + ")"
    if gpu.simulated():
        return "no GPU (numba-cuda's simulator is enabled: not timed)"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu-trials", type=int, default=2_000_000, help="trials per side, CPU")
    ap.add_argument("--gpu-trials", type=int, default=1 << 32, help="trials per side, GPU")
    ap.add_argument("--check-trials", type=int, default=10_000_000,
                    help="trials per side of the CPU/GPU agreement run")
    ap.add_argument("--json", dest="json_out", help="also write the results as JSON")
    args = ap.parse_args(argv)
    import numba

    status = gpu_status()
    print(f"cpus={os.cpu_count()}, numba threads={numba.get_num_threads()}; "
          f"GPU: {status or 'available'}")
    rows = {}
    for name, (P, Q, stat) in scenarios().items():
        cpu_rate, _ = timed(P, Q, stat, args.cpu_trials, "loky")
        row = {"cpu_draws_per_s": cpu_rate, "cuda_draws_per_s": None, "cuda": status}
        line = f"{name:46s} cpu {cpu_rate / 1e6:9.2f} M draws/s | cuda "
        if status is None:
            gpu_rate, _ = timed(P, Q, stat, args.gpu_trials, "cuda")
            _, a = timed(P, Q, stat, args.check_trials, "loky")
            _, b = timed(P, Q, stat, args.check_trials, "cuda")
            differ = int((np.abs(a.counts_p - b.counts_p).sum()
                          + np.abs(a.counts_q - b.counts_q).sum()) // 2)
            row.update(cuda_draws_per_s=gpu_rate, check_trials=args.check_trials,
                       draws_in_other_bins=differ)
            line += (f"{gpu_rate / 1e6:9.2f} M draws/s ({gpu_rate / cpu_rate:.0f}x); "
                     f"{differ} of {2 * args.check_trials} draws binned differently")
        else:
            line += "no GPU"
        print(line, flush=True)
        rows[name] = row
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"gpu": status or "available", "scenarios": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
