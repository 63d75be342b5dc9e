"""Isolated targets: building an environment, reusing it, and calls per second through the
worker against the same release called in this process.

Cases (each on datasets of ``--n`` records × 1 column, 30 % NaN):

- ``numpy-side``: the test library-side module ``tests/adapters/isolation/numpy_side.py`` (a
  seeded noisy sum) in an environment with ``numpy==1.26.4``: one dataset per frame, and
  batches of ``--batch`` datasets per frame, against the same ``release`` imported and
  called in this process (numpy 2): what the frames and the pipe cost per call.
- ``smartnoise-sql:sum`` (``--smartnoise``): the adapter's worker, one dataset per frame and
  batches, against the library-side module called in the worker environment's own
  interpreter without the auditor (its throughput bare).

- ``tumult:sum`` (``--tumult``): the environment's reuse, the worker's start-up (Spark's own
  start-up apart, as the library-side module measures it), and releases per second at
  1, 100, 1,000 and ``--tumult-batch`` datasets per call (one Spark job per call).

    python benchmarks/bench_isolated.py [--calls 2000] [--batch 500] [--n 20] [--smartnoise]
        [--tumult] [--tumult-batch 5000]

The environments go to the cache (``MISSINGNESS_AUDIT_CACHE``); the first run builds them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from audit.adapters.isolation import environments  # noqa: E402
from audit.adapters.isolation.client import launch  # noqa: E402
from audit.adapters.isolation.environments import Environment  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NUMPY_SIDE = os.path.join(ROOT, "tests", "adapters", "isolation", "numpy_side.py")
OLD_NUMPY = Environment("test-old-numpy", ("numpy==1.26.4",), "3.11")


def _data(calls: int, n: int) -> np.ndarray:
    x = np.random.default_rng(0).uniform(-1, 1, size=(calls, n, 1))
    x[np.random.default_rng(1).random(x.shape) < 0.3] = np.nan
    return x


def _rate(func, data: np.ndarray, batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(data), batch):
        func(data[i:i + batch])
    return len(data) / (time.perf_counter() - start)


def _build(environment: Environment) -> None:
    start = time.perf_counter()
    built = environments.ensure(environment)
    print(f"{environment.name}: ensure {time.perf_counter() - start:.2f} s (built in "
          f"{built.description['build_seconds']} s on {built.description['built']})")


def numpy_side(calls: int, batch: int, n: int) -> None:
    _build(OLD_NUMPY)
    start = time.perf_counter()
    worker, _ = launch(OLD_NUMPY, NUMPY_SIDE, {"scale": 1.0}, name="numpy-side")
    print(f"numpy-side: worker start-up {time.perf_counter() - start:.2f} s")
    spec = importlib.util.spec_from_file_location("numpy_side", NUMPY_SIDE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    here, _ = module.make({"scale": 1.0})
    data = _data(calls, n)
    for m in (1, batch):
        through = _rate(lambda d: worker.call(d, 1), data, m)
        bare = _rate(lambda d: here(d, 1), data, m)
        print(f"numpy-side, {m} dataset(s) per call: {through:,.0f} calls/s through the worker, "
              f"{bare:,.0f} in this process")
    worker.close()


_BARE = """
import importlib.util, sys, time, numpy as np
spec = importlib.util.spec_from_file_location("side", sys.argv[1])
side = importlib.util.module_from_spec(spec); spec.loader.exec_module(side)
release, _ = side.make({"function": "sum", "bounds": [-1.0, 1.0], "column": 0, "epsilon": 0.5})
x = np.random.default_rng(0).uniform(-1, 1, size=(int(sys.argv[2]), int(sys.argv[3]), 1))
x[np.random.default_rng(1).random(x.shape) < 0.3] = np.nan
start = time.perf_counter(); release(x, 0); print(len(x) / (time.perf_counter() - start))
"""


def smartnoise(calls: int, batch: int, n: int) -> None:
    from audit.adapters import smartnoise_sql as sn

    _build(sn.ENVIRONMENT)
    params = {"function": "sum", "bounds": [-1.0, 1.0], "column": 0, "epsilon": 0.5}
    start = time.perf_counter()
    worker, _ = launch(sn.ENVIRONMENT, sn.SIDE, params, name="smartnoise-sql:sum")
    print(f"smartnoise-sql: worker start-up (imports snsql, sets up) "
          f"{time.perf_counter() - start:.2f} s")
    data = _data(calls, n)
    for m in (1, batch):
        print(f"smartnoise-sql:sum, {m} dataset(s) per call: "
              f"{_rate(lambda d: worker.call(d, 1), data, m):,.1f} calls/s through the worker")
    worker.close()
    python = environments.ensure(sn.ENVIRONMENT).python
    bare = subprocess.run([str(python), "-c", _BARE, str(sn.SIDE), str(calls), str(n)],
                          capture_output=True, text=True, check=True).stdout.strip()
    print(f"smartnoise-sql:sum bare in its environment: {float(bare):,.1f} calls/s")


def tumult(batch: int, n: int) -> None:
    from audit.adapters import tumult as tm

    _build(tm.ENVIRONMENT)
    params = {"function": "sum", "bounds": [-1.0, 1.0], "column": 0, "nan": "default",
              "missing_as": "null", "replacement": 0.0, "epsilon": 0.5}
    start = time.perf_counter()
    worker, info = launch(tm.ENVIRONMENT, tm.SIDE, params, name="tumult:sum")
    print(f"tumult: worker start-up {time.perf_counter() - start:.2f} s, of which Spark "
          f"{info['spark_startup_seconds']:.2f} s (the rest: importing tmlt.analytics, two "
          f"set-up queries for the noise Tumult states)")
    for m in (1, 100, 1000, batch):
        calls = 3 if m < batch else 2
        data = _data(m * calls, n)
        rate = _rate(lambda d: worker.call(d, 1), data, m)
        print(f"tumult:sum, {m} dataset(s) per call: {rate / m:.2f} calls/s, "
              f"{rate:,.1f} releases/s")
    worker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--smartnoise", action="store_true")
    parser.add_argument("--tumult", action="store_true")
    parser.add_argument("--tumult-batch", type=int, default=5000)
    args = parser.parse_args()
    numpy_side(args.calls, args.batch, args.n)
    if args.smartnoise:
        smartnoise(min(args.calls, 300), min(args.batch, 300), args.n)
    if args.tumult:
        tumult(args.tumult_batch, args.n)


if __name__ == "__main__":
    main()
