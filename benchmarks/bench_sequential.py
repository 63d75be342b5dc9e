"""The estimating sequential mode run to its budget against the fixed mode, on the DP-tester
benchmark mechanisms whose fixed-mode bound comes near the truth (experiments/tester_benchmark).

Each mechanism is audited as the experiment audits it (its pair search, then the chosen pair
on fresh calls, 90 % confidence, the ``default`` size: 4·10⁵ calls per side), once with
``audit.mode = "fixed"`` and once with ``audit.mode = "sequential"``, ``audit.stop =
"budget"``, on seeds 11 … 10 + ``--seeds``; prints both ε_lower and the ratio of their means.

    python benchmarks/bench_sequential.py [--seeds 3] [--mechanisms LaplaceMechanism ...]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from audit.pipeline.runner import run_audit
from experiments import tester_benchmark as tb

DEFAULT = ["LaplaceMechanism", "NoisyHist1", "NoisyHist2"]


def _doc(bench, mode: str, seed: int) -> dict:
    audit = {"trials": tb.TRIALS["default"], "seed": seed, "confidence": tb.CONFIDENCE,
             "attack": tb.ATTACKS[bench.discrete], "mode": mode,
             "jobs": 1}
    if mode == "sequential":
        audit["stop"] = "budget"
    return {"scenario": {"mechanism": "laplace", "epsilon": tb.EPSILON, "query": "sum",
                         "n": 1, "d": bench.d, "bound": 1.0},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "search": tb._search_table(bench, tb.SEARCH["default"]), "audit": audit}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--mechanisms", nargs="+", default=DEFAULT)
    args = ap.parse_args()
    known = [b.key for b in tb.BENCHMARKS]
    unknown = [m for m in args.mechanisms if m not in known]
    if args.seeds < 1 or unknown:  # before any call: one line, exit 2
        print(f"error: --seeds must be >= 1 and --mechanisms among {', '.join(known)}, got "
              f"--seeds={args.seeds} --mechanisms={' '.join(args.mechanisms)}",
              file=sys.stderr)
        raise SystemExit(2)
    for key in args.mechanisms:
        bench, t0 = tb.benchmark(key), time.time()
        eps = {}
        for mode in ("fixed", "sequential"):
            eps[mode] = np.array([
                run_audit(tb.config(_doc(bench, mode, 11 + s), f"{tb.NAME}[{key}]"),
                          implementation=tb.implementation(bench)).eps_lower
                for s in range(args.seeds)])
        f, q = eps["fixed"], eps["sequential"]
        print(f"{key} (true {bench.eps_true:g}, {time.time() - t0:.0f} s): fixed "
              f"{np.round(f, 3).tolist()}, sequential {np.round(q, 3).tolist()}, ratio of "
              f"means {q.mean() / f.mean():.3f}", flush=True)


if __name__ == "__main__":
    main()
