"""Throughput of black-box implementation audits: one process against a pool of processes.

The sampler of ``audit.simulation.callables`` calls the implementation once per trial on a
dataset whose records were all masked (mcar-iid, rate 0.3), in chunks of ``--chunk`` calls.
For each implementation below it reports calls per second (both sides) with 1 and with 2 loky
processes, and the speed-up, with the time of one bare call beside it:

- ``busy-0.1ms``: a synthetic release that computes for about 0.1 ms per call;
- the library targets of ``audit.adapters`` that are installed (diffprivlib, OpenDP,
  PipelineDP).

Then, for batched releases (the DP-tester benchmark's SVT6, a 10-vector of bits, and
ReportNoisyMax3, a scalar; one-record datasets, no missing values), the rate at which an
audit's main run counts calls into its histogram (``iter_chunks`` with the statistic's bin
indices as its ``reduce``, the workers binning their own chunks) with 1 and 2 processes,
beside a plain-numpy baseline in this process (the release on stacks of 10^5 query vectors,
then the same bin indices and ``numpy.bincount``), and the peak memory of this process.

    python benchmarks/bench_callables.py [--calls 20000] [--chunk 1000]
        [--batched-calls 4000000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

N, D = 100, 3


def busy(data, rng):
    """About 0.1 ms of numpy work, then a noisy mean of the observed entries."""
    x = np.nan_to_num(data)
    acc = 0.0
    for _ in range(12):
        acc += float(np.sort(x, axis=None)[::7].sum())
    return float(np.nanmean(data)) + rng.laplace() + 0.0 * acc if np.isfinite(data).any() \
        else float("nan")


def implementations():
    from audit.model.implementation import CallableImplementation, Claim

    out = [("busy-0.1ms", CallableImplementation(busy, Claim(1.0), "busy-0.1ms"))]
    from audit.adapters import make_implementation

    for target in ("diffprivlib:nanmean", "opendp:sum", "pipelinedp:sum"):
        try:
            out.append((target, make_implementation(target, epsilon=1.0,
                                                    params={"bounds": (-1.0, 1.0)})))
        except ValueError as exc:  # not installed
            print(f"{target}: skipped ({exc})")
    return out


def rate(impl, calls: int, chunk: int, jobs: int) -> float:
    from audit.model.missingness import make_missingness
    from audit.simulation.callables import CallableRun, iter_chunks, probe

    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, (N, D))
    zp = z.copy()
    zp[0] = -zp[0]
    mech = make_missingness("mcar-iid", rate=0.3)
    dim = probe(impl, z, mech, 0)
    if jobs > 1:  # start the workers (and their imports) before timing, as a long run would
        warm = CallableRun(impl, z, zp, mech, 4, 4 * jobs, 2, dim, use_batch=False)
        for _ in iter_chunks(warm, n_jobs=jobs):
            pass
    run = CallableRun(impl, z, zp, mech, chunk, calls, 1, dim, use_batch=False)
    t = time.perf_counter()
    for _ in iter_chunks(run, n_jobs=jobs):
        pass
    return 2 * calls / (time.perf_counter() - t)


def bare(impl, reps: int = 200) -> float:
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (N, D))
    impl(data, rng)
    t = time.perf_counter()
    for _ in range(reps):
        impl(data, rng)
    return (time.perf_counter() - t) / reps


def batched_rates(key: str, calls: int, chunk: int) -> tuple[float, float, float]:
    """(1 process, 2 processes, plain numpy) calls per second (both sides) of counting the
    tester benchmark's ``key`` into a histogram of 50 bins."""
    from audit.model.missingness import make_missingness
    from audit.simulation.callables import CallableRun, iter_chunks, probe
    from audit.statistics import Statistic
    from experiments import tester_benchmark as tb

    bench = tb.benchmark(key)
    impl = tb.implementation(bench)
    z, zp = np.zeros((1, bench.d)), np.ones((1, bench.d))
    mech = make_missingness("mcar-iid", rate=0.0)
    dim = probe(impl, z, mech, 0)
    edges = np.linspace(-3.0, 3.0, 51)
    stat = (Statistic.output(edges) if dim == 0
            else Statistic.linear(np.ones(dim), 0.0, edges))
    rates = []
    for jobs in (1, 2):
        if jobs > 1:  # workers started (and their imports done) before timing
            for _ in iter_chunks(CallableRun(impl, z, zp, mech, 4, 8, 2, dim), n_jobs=jobs):
                pass
        run = CallableRun(impl, z, zp, mech, chunk, calls, 1, dim)
        counts = np.zeros(stat.n_bins, dtype=np.int64)
        t = time.perf_counter()
        for _, ip, iq in iter_chunks(run, n_jobs=jobs, reduce=stat.indices):
            counts += np.bincount(ip, minlength=stat.n_bins)
            counts += np.bincount(iq, minlength=stat.n_bins)
        rates.append(2 * calls / (time.perf_counter() - t))
    rng = np.random.default_rng(0)
    x = np.zeros((min(100_000, calls), bench.d))
    stacks = max(1, 2 * calls // x.shape[0])
    t = time.perf_counter()
    for _ in range(stacks):
        counts += np.bincount(stat.indices(tb.release(bench, x, rng)), minlength=stat.n_bins)
    rates.append(stacks * x.shape[0] / (time.perf_counter() - t))
    return tuple(rates)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20_000, help="calls per side")
    ap.add_argument("--chunk", type=int, default=1000, help="calls per side per chunk")
    ap.add_argument("--batched-calls", type=int, default=4_000_000,
                    help="calls per side of each batched release")
    args = ap.parse_args(argv)
    from audit.pipeline.config import MAX_CHUNK_CALLS

    if min(args.calls, args.chunk, args.batched_calls) < 1 or args.chunk > MAX_CHUNK_CALLS:
        print(f"error: --calls and --batched-calls must be >= 1 and --chunk in [1, "
              f"{MAX_CHUNK_CALLS}], got --calls={args.calls} --chunk={args.chunk} "
              f"--batched-calls={args.batched_calls}", file=sys.stderr)
        raise SystemExit(2)
    print(f"cpus={len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.2f}; "
          f"dataset n={N}, d={D}, mcar-iid rate 0.3, {args.calls} calls per side")
    for name, impl in implementations():
        one = rate(impl, args.calls, args.chunk, 1)
        two = rate(impl, args.calls, args.chunk, 2)
        print(f"{name:22s} bare call {bare(impl) * 1e3:6.3f} ms | 1 process {one:8.0f} "
              f"calls/s | 2 processes {two:8.0f} calls/s | speed-up {two / one:.2f}x")
    print(f"batched releases counted into a histogram, {args.batched_calls} calls per side, "
          f"chunks of {args.chunk}:")
    for key in ("SVT6", "ReportNoisyMax3"):
        one, two, plain = batched_rates(key, args.batched_calls, args.chunk)
        print(f"{key:22s} 1 process {one:10.3e} calls/s | 2 processes {two:10.3e} calls/s "
              f"| plain numpy {plain:10.3e} calls/s (2 processes / plain numpy "
              f"{two / plain:.2f})")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
