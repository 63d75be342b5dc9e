"""Calls per second of every example of every registered library adapter (single process).

The cases are the adapters' own examples (``audit.adapters.examples()``: each target's
``Target.examples``, the parameters the contract tests run too; ε = 1, δ as the example says,
1e-6 for the Gaussian ones, bounds (−1, 1)). Dataset: n = 100 records × d = 3, uniform on
[−1, 1], complete and with 20 % of the entries missing (MCAR). Each case is called once
before timing (OpenDP builds and calibrates its chain on the first call for a shape; that
first-call time is reported separately). A library that is not installed is skipped, and so
is a target that declares a library defect (``Target.defect``: it makes no release).

    python benchmarks/bench_adapters.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

N, D = 100, 3


def rate(impl, data, rng, seconds: float) -> float:
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(20):
            impl(data, rng)
        calls += 20
    return calls / elapsed


def main() -> None:
    from audit.adapters import examples, get_adapter, make_implementation

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    complete = rng.uniform(-1, 1, size=(N, D))
    missing = complete.copy()
    missing[rng.random((N, D)) < 0.2] = np.nan
    rows = []
    for target, example in examples():
        library, function = target.split(":")
        module = get_adapter(library).import_name
        if get_adapter(library).target(function).defect:  # every call raises LibraryDefect
            print(f"{target}[{example.name}]: skipped (a declared library defect)",
                  file=sys.stderr)
            continue
        if importlib.util.find_spec(module) is None:
            print(f"{target}[{example.name}]: skipped ({module} is not installed)",
                  file=sys.stderr)
            continue
        params = example.kwargs()
        impl = make_implementation(target, epsilon=example.epsilon, delta=example.delta,
                                   params=params)
        t0 = time.perf_counter()
        impl(complete, rng)
        first = time.perf_counter() - t0
        row = {"target": target, "example": example.name,
               "params": {k: v for k, v in params.items() if k != "bounds"},
               "first_call_s": round(first, 4),
               "calls_per_s_complete": round(rate(impl, complete, rng, args.seconds)),
               "calls_per_s_20pct_nan": round(rate(impl, missing, rng, args.seconds))}
        rows.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
