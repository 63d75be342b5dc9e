"""Calls per second of every library adapter target (single process).

Dataset: n = 100 records × d = 3, uniform on [−1, 1], complete and with 20 % of the entries
missing (MCAR); ε = 1 (δ = 1e-6 for Gaussian); bounds (−1, 1). Each target is called once
before timing (OpenDP builds and calibrates its chain on the first call for a shape; that
first-call time is reported separately).

    python benchmarks/bench_adapters.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

N, D = 100, 3
CASES = [
    ("diffprivlib:nanmean", {"bounds": (-1, 1)}, 0.0),
    ("diffprivlib:nansum", {"bounds": (-1, 1)}, 0.0),
    ("diffprivlib:nanvar", {"bounds": (-1, 1)}, 0.0),
    ("diffprivlib:nanstd", {"bounds": (-1, 1)}, 0.0),
    ("diffprivlib:mean", {"bounds": (-1, 1)}, 0.0),
    ("diffprivlib:sum", {"bounds": (-1, 1)}, 0.0),
    ("diffprivlib:nanmean", {"bounds": (-1, 1), "axis": 0}, 0.0),
    ("opendp:sum", {"bounds": (-1, 1)}, 0.0),
    ("opendp:sum", {"bounds": (-1, 1), "nan": "drop"}, 0.0),
    ("opendp:mean", {"bounds": (-1, 1)}, 0.0),
    ("opendp:mean", {"bounds": (-1, 1), "nan": "drop"}, 0.0),
    ("opendp:sum", {"bounds": (-1, 1), "noise": "gaussian"}, 1e-6),
    ("pipelinedp:sum", {"bounds": (-1, 1)}, 0.0),
    ("pipelinedp:mean", {"bounds": (-1, 1)}, 0.0),
    ("pipelinedp:count", {}, 0.0),
    ("pipelinedp:sum", {"bounds": (-1, 1), "nan": "drop"}, 0.0),
]


def rate(impl, data, rng, seconds: float) -> float:
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(20):
            impl(data, rng)
        calls += 20
    return calls / elapsed


def main() -> None:
    from audit.adapters import make_implementation

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    complete = rng.uniform(-1, 1, size=(N, D))
    missing = complete.copy()
    missing[rng.random((N, D)) < 0.2] = np.nan
    rows = []
    for target, params, delta in CASES:
        impl = make_implementation(target, epsilon=1.0, delta=delta, params=params)
        t0 = time.perf_counter()
        impl(complete, rng)
        first = time.perf_counter() - t0
        row = {"target": target, "params": {k: v for k, v in params.items() if k != "bounds"},
               "first_call_s": round(first, 4),
               "calls_per_s_complete": round(rate(impl, complete, rng, args.seconds)),
               "calls_per_s_20pct_nan": round(rate(impl, missing, rng, args.seconds))}
        rows.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
