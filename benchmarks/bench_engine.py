"""Throughput and memory of the Monte Carlo engine on the canonical scenario.

Scenario: d = 10 features, mcar-iid with r = 0.3, sum query, B = 1, Laplace release with
ε = 1 (b = C_1/ε = 2Bd = 20); pair: the all −B record against the all +B record, the other
records zero. Reports trials per side per second (a run of T trials draws T outputs from each
side, 2T in total) for the numba engine with 1 and 2 threads, beside a plain-numpy vectorised
baseline of the same scenario, and the peak RSS of separate subprocess runs of 10^6 and
``--mem-trials`` trials.

    python benchmarks/bench_engine.py [--trials N] [--threads 1 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

D, RATE, BOUND, EPS = 10, 0.3, 1.0, 1.0


def scenario():
    from audit.model.missingness import make_missingness
    from audit.model.neighbours import NeighbourPair, Release
    from audit.model.queries import make_query

    q = make_query("sum")
    m = make_missingness("mcar-iid", rate=RATE)
    release = Release.laplace(q.fwl_constants(1, D, BOUND).sensitivity(), EPS)
    z = np.full((1, D), -BOUND)
    pair = NeighbourPair(z, -z, 0, q, m, BOUND)
    return pair.mixtures(release), release.scale


def run_engine(trials: int, threads: int) -> float:
    from audit.simulation import engine
    from audit.statistics import Statistic

    (P, Q), _ = scenario()
    stat = Statistic.output(engine.default_edges(P, Q, 1000))
    engine.run_histograms(P, Q, stat, 1000, 0, threads=threads)  # compile / load cache
    t = time.perf_counter()
    h = engine.run_histograms(P, Q, stat, trials, 1, threads=threads)
    dt = time.perf_counter() - t
    assert h.counts_p.sum() == trials and h.counts_q.sum() == trials
    return dt


def run_numpy(trials: int, batch: int = 1_000_000) -> float:
    """Plain numpy: masks per feature, sum of observed, Laplace noise, np.histogram."""
    (P, Q), b = scenario()
    from audit.simulation import engine

    edges = engine.default_edges(P, Q, 1000)
    rng = np.random.default_rng(1)
    t = time.perf_counter()
    for value in (-BOUND, BOUND):
        done = 0
        counts = np.zeros(len(edges) - 1, dtype=np.int64)
        while done < trials:
            n = min(batch, trials - done)
            observed = rng.random((n, D)) >= RATE
            out = value * observed.sum(axis=1) + rng.laplace(scale=b, size=n)
            counts += np.histogram(out, edges)[0]
            done += n
    return time.perf_counter() - t


def child(trials: int, threads: int) -> None:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    dt = run_engine(trials, threads)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"trials": trials, "seconds": dt, "maxrss_kib": peak, "base_kib": base}))


def rss_run(trials: int, threads: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(trials), "--threads",
                          str(threads)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trials", type=int, default=50_000_000, help="trials per side")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--numpy-trials", type=int, default=5_000_000, help="baseline trials per side")
    ap.add_argument("--mem-trials", type=int, default=1_000_000_000,
                    help="trials per side of the large memory run")
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        child(a.child, a.threads[0])
        return
    if a.quick:
        a.trials, a.numpy_trials, a.mem_trials = 5_000_000, 1_000_000, 20_000_000
    from audit.simulation.engine import provenance
    from audit.simulation.planning import usable_cpus

    prov = provenance()
    print(f"scenario: d={D}, mcar-iid r={RATE}, sum query, B={BOUND}, Laplace eps={EPS}; "
          f"usable cpus={usable_cpus()}, load average {os.getloadavg()[0]:.2f}; "
          f"numba {prov['numba']}, kernel code {prov['kernel_code']}")
    dt_np = run_numpy(a.numpy_trials)
    rate_np = a.numpy_trials / dt_np
    print(f"numpy baseline : {a.numpy_trials:.3g} trials/side in {dt_np:.2f} s -> "
          f"{rate_np / 1e6:.2f} M trials/side/s ({2 * rate_np / 1e6:.2f} M total/s)")
    for th in a.threads:
        dt = run_engine(a.trials, th)
        rate = a.trials / dt
        print(f"numba {th} thread{'s' if th > 1 else ' '}: {a.trials:.3g} trials/side in "
              f"{dt:.2f} s -> {rate / 1e6:.2f} M trials/side/s ({2 * rate / 1e6:.2f} M total/s),"
              f" {rate / rate_np:.1f}x numpy")
    th = max(a.threads)
    small = rss_run(1_000_000, th)
    large = rss_run(a.mem_trials, th)
    diff_mb = (large["maxrss_kib"] - small["maxrss_kib"]) / 1024
    print(f"peak RSS (separate processes, {th} threads): 1e6 trials/side "
          f"{small['maxrss_kib'] / 1024:.1f} MiB; {a.mem_trials:.3g} trials/side "
          f"{large['maxrss_kib'] / 1024:.1f} MiB ({large['seconds']:.1f} s); "
          f"difference {diff_mb:+.1f} MiB")


if __name__ == "__main__":
    main()
