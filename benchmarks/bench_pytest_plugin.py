"""The pytest plugin in a user's test run: time to a verdict, and false failures of a run.

``--verdict``: one pytest run (a fresh process, as a user's CI starts one) of a generated test
file with two marked tests, OpenDP's ``sum`` (bounds [−1, 1], NaN imputed as 0) held to its
ε = 1 claim and a broken Laplace sum claiming ε = 1 with the noise of ε = 4, on the search's
query (``query="sum"``, n = 20, MCAR rate 0.3); reports the wall time of the run, each test's
outcome and the summary's budget line.

``--null R``: R pytest runs (in one process, each on its own generated file) of ``--tests``
marked tests each, every one a Laplace sum that keeps its ε = 1 claim exactly (the pair
given, one record 1 against −1, MCAR rate 0.3, ``--trials`` calls per side), every test with
its own seed; counts the runs with a failed test against the budget (``--audit-alpha``
0.05: the count must stay within the 0.999 quantile of Binomial(R, 0.05)).

    python benchmarks/bench_pytest_plugin.py --verdict
    python benchmarks/bench_pytest_plugin.py --null 1000 --tests 10   # about 0.6 s per audit
    python benchmarks/bench_pytest_plugin.py --null 300 --first 700   # runs 700-999 only
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

VERDICT_TESTS = '''
import numpy as np
import pytest

from audit.adapters import make_implementation

MISSING = {"kind": "mcar-iid", "rate": 0.3}


@pytest.mark.audit_claim(epsilon=1.0, query="sum", d=1, n=20, missingness=MISSING,
                         trials=20_000, seed=1)
def test_opendp_sum_keeps_its_claim(audit_claim):
    audit_claim(make_implementation("opendp:sum", epsilon=1.0,
                                    params={"bounds": [-1.0, 1.0], "nan": "impute"}))


def broken_sum(data, rng):  # claims epsilon = 1, adds the noise of epsilon = 4
    return float(np.nansum(np.clip(data, -1.0, 1.0))) + rng.laplace(0.0, 2.0 / 4.0)


@pytest.mark.audit_claim(epsilon=1.0, query="sum", d=1, n=20, missingness=MISSING,
                         trials=20_000, seed=2)
def test_a_broken_sum_is_caught(audit_claim):
    audit_claim(broken_sum)
'''

NULL_TEST = '''
@pytest.mark.audit_claim(epsilon=1.0, pair=(Z, Z_PRIME), missingness=MISSING,
                         trials={trials}, seed={seed})
def test_keeps_its_claim_{i}(audit_claim):
    audit_claim(exact_sum)
'''

NULL_HEAD = '''
import numpy as np
import pytest

MISSING = {"kind": "mcar-iid", "rate": 0.3}
Z = np.array([[1.0], [0.0], [0.0]])
Z_PRIME = np.array([[-1.0], [0.0], [0.0]])


def exact_sum(data, rng):  # sensitivity 2, Laplace scale 2: exactly 1-DP
    return float(np.nansum(np.clip(data, -1.0, 1.0))) + rng.laplace(0.0, 2.0)
'''


def verdict() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "test_claims.py"
        path.write_text(textwrap.dedent(VERDICT_TESTS))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-rA", str(path)], cwd=tmp, env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines()
             if ln.startswith(("PASSED", "FAILED", "refuted", "2 test(s)"))
             or " passed" in ln or " failed" in ln]
    print(f"pytest run of 2 marked tests: {wall:.1f} s wall, exit {proc.returncode}")
    for ln in lines:
        print("  " + ln)
    return 0


def null(runs: int, tests: int, trials: int, alpha: float, first: int = 0) -> int:
    import pytest
    from scipy import stats

    failed_runs = 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(first, first + runs):
            body = NULL_HEAD + "".join(NULL_TEST.format(trials=trials, seed=r * tests + i, i=i)
                                       for i in range(tests))
            path = Path(tmp) / f"test_null_{r}.py"
            path.write_text(body)
            code = pytest.main(["-q", "-p", "no:cacheprovider", "--audit-alpha", str(alpha),
                                "--no-header", "--tb=no", str(path)])
            failed_runs += code != 0
            print(f"[null] run {r + 1 - first}/{runs}: {failed_runs} with a failed test "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    limit = int(stats.binom.ppf(0.999, runs, alpha))
    print(f"{runs} pytest runs of {tests} marked tests ({trials} calls per side, budget "
          f"{alpha:g}): {failed_runs} with a failed test (limit {limit}); "
          f"{time.perf_counter() - t0:.0f} s")
    return 0 if failed_runs <= limit else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdict", action="store_true")
    ap.add_argument("--null", type=int, default=0, metavar="R")
    ap.add_argument("--tests", type=int, default=10)
    ap.add_argument("--first", type=int, default=0,
                    help="index of the first null run (its tests' seeds follow from it), so "
                         "that processes can share a study")
    ap.add_argument("--trials", type=int, default=2_000)
    ap.add_argument("--audit-alpha", type=float, default=0.05)
    args = ap.parse_args(argv)
    if not args.verdict and args.null < 1:
        print("error: give --verdict or --null R with R >= 1", file=sys.stderr)
        return 2
    if args.tests < 1 or args.trials < 100 or args.first < 0 or not 0 < args.audit_alpha < 1:
        print(f"error: --tests must be >= 1, --trials >= 100, --first >= 0 and --audit-alpha "
              f"in (0, 1), got {args.tests}, {args.trials}, {args.first}, {args.audit_alpha}",
              file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    code = verdict() if args.verdict else 0
    if args.null:
        code = max(code, null(args.null, args.tests, args.trials, args.audit_alpha,
                              args.first))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
