"""Whole audits, as a user runs them, beside the kernel alone and a plain-numpy baseline.

For each scenario the benchmark measures, in one run on this machine:

- **kernel**: ``engine.run_histograms`` alone on the scenario's pair (warm, 2 numba threads),
  in draws per second (a trial draws one output from each side: 2 draws);
- **numpy**: a plain-numpy vectorised version of the same draws and statistic;
- **whole audit**: ``python -m audit run CONFIG --trials T`` as a separate process, timed from
  the shell (interpreter start, imports, plan, pilot, main run, selection, bound), with the
  result's per-phase timings and the process's peak RSS;
- **memory**: peak RSS of the whole audit at 10^6 trials per side and at ``--mem-trials``.

Scenarios: the canonical scalar audit (Laplace ε = 1, sum query, d = 10, mcar-iid r = 0.3,
exact-lr, model selection) and the vector audit (vector-sum, d = 10, mcar-iid r = 0.3: 1024
mask patterns, exact LLR computed in the kernel from the product law), and the vector audit at
d = 24 (2^24 mask patterns).

    python benchmarks/bench_audit.py [--trials 200000000] [--vector-trials 100000000]
                                     [--mem-trials 1000000000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCENARIOS = {
    "scalar": {"query": "sum", "d": 10},
    "vector": {"query": "vector-sum", "d": 10},
    "vector-d24": {"query": "vector-sum", "d": 24},
}


def config_text(query: str, d: int) -> str:
    return (f'[scenario]\nmechanism = "laplace"\nepsilon = 1.0\nquery = "{query}"\nd = {d}\n\n'
            '[missingness]\nkind = "mcar-iid"\nrate = 0.3\n\n[audit]\nseed = 1\n')


def plan_of(query: str, d: int):
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.plan import plan_audit

    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": query, "d": d},
           "missingness": {"kind": "mcar-iid", "rate": 0.3}, "audit": {"seed": 1}}
    return plan_audit(config_from_dict(doc))


def kernel_rate(plan, trials: int) -> float:
    """Draws per second of the engine alone (warm), with the audit's statistic."""
    from audit.simulation import engine
    from audit.statistics import Statistic

    P, Q = plan.P, plan.Q
    if P.is_scalar:
        stat = Statistic.output(engine.default_edges(P, Q, 4000))
    else:
        stat = Statistic.llr(P, Q, np.linspace(-3, 3, 4001))
    engine.run_histograms(P, Q, stat, 1000, 0, threads=2)
    t = time.perf_counter()
    engine.run_histograms(P, Q, stat, trials, 1, threads=2)
    return 2 * trials / (time.perf_counter() - t)


def numpy_rate(plan, trials: int, batch: int = 200_000) -> float:
    """Draws per second of plain numpy: the laws' own samplers, the statistic, a histogram."""
    P, Q = plan.P, plan.Q
    rng = np.random.default_rng(1)
    edges = np.linspace(-3, 3, 4001)
    t = time.perf_counter()
    for M in (P, Q):
        done = 0
        while done < trials:
            n = min(batch, trials - done)
            x = M.sample(n, rng)
            v = x if M.is_scalar else P.logpdf(x) - Q.logpdf(x)
            np.histogram(v, edges)
            done += n
    return 2 * trials / (time.perf_counter() - t)


def whole_audit(config: Path, trials: int) -> dict:
    """``python -m audit run`` as a child process: wall seconds, its own peak RSS (from
    ``os.wait4``, not the running maximum over all children), the result."""
    out = config.with_suffix(f".{trials}.json")
    t = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "audit", "run", str(config), "--trials",
                              str(trials), "--no-progress", "--json", str(out)], cwd=ROOT,
                             stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):  # 1: a ceiling violated (still a result)
        raise RuntimeError(f"audit run failed with exit status {child.returncode}")
    return {"wall": wall, "rss_mib": usage.ru_maxrss / 1024, "result": json.loads(out.read_text())}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200_000_000, help="scalar trials per side")
    ap.add_argument("--vector-trials", type=int, default=100_000_000)
    ap.add_argument("--mem-trials", type=int, default=1_000_000_000)
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = ap.parse_args(argv)
    if args.quick:
        args.trials, args.vector_trials, args.mem_trials = 2_000_000, 1_000_000, 2_000_000
    print(f"cpus={len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.2f}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    for name, sc in SCENARIOS.items():
        cfg = tmp / f"{name}.toml"
        cfg.write_text(config_text(sc["query"], sc["d"]))
        plan = plan_of(sc["query"], sc["d"])
        trials = args.trials if name == "scalar" else args.vector_trials
        if name == "vector-d24":
            trials = max(args.vector_trials // 10, 1_000)
        k = kernel_rate(plan, min(trials, 30_000_000))
        npy = numpy_rate(plan, min(trials, 1_000_000 if plan.is_scalar else 200_000))
        small = whole_audit(cfg, 1_000_000)
        big = whole_audit(cfg, trials)
        whole = 2 * trials / big["wall"]
        phases = ", ".join(f"{p} {s:.2f} s" for p, s in big["result"]["timings"].items())
        print(f"\n{name}: {sc['query']}, d={sc['d']}, law {type(plan.P).__name__} "
              f"({plan.P.n_components:,} mask patterns), {trials:.0e} trials/side")
        print(f"  kernel only : {k / 1e6:7.1f} M draws/s")
        print(f"  numpy       : {npy / 1e6:7.1f} M draws/s")
        print(f"  whole audit : {whole / 1e6:7.1f} M draws/s ({big['wall']:.2f} s from the "
              f"shell) = {whole / k:.2f}x kernel, {whole / npy:.1f}x numpy")
        print(f"  phases      : {phases}")
        print(f"  eps_lower   : {big['result']['eps_lower']:.4f}")
        if name != "vector-d24":
            mem = whole_audit(cfg, args.mem_trials)
            print(f"  peak RSS    : 1e6 trials {small['rss_mib']:.1f} MiB; {args.mem_trials:.0e} "
                  f"trials {mem['rss_mib']:.1f} MiB ({mem['wall']:.1f} s); difference "
                  f"{mem['rss_mib'] - small['rss_mib']:+.1f} MiB")


if __name__ == "__main__":
    main()
