"""k Laplace releases of a mean over the observed entries from one table at δ > 0
(``audit.theory.observed_mean``, docs/THEORY.md §10.8): the bracket [lower, epsilon] of
``bound --config``'s row (``count = "private"``) over a sweep of settings, its width and
seconds. One JSON line per setting, then a summary line (the widest bracket, the slowest row,
how many are exact).

    OMP_NUM_THREADS=1 python benchmarks/bench_observed_mean.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few settings only")
    args = ap.parse_args()
    from audit.theory.observed_mean import ObservedMeanSetting, observed_mean_worst_case

    domains = [(-1.0, 1.0), (-0.5, 1.0), (0.0, 1.0), (0.5, 1.5)]
    grid = itertools.product(domains, (0.05, 0.3), (0.5, 0.9), (2, 10, 32), (1e-9, 1e-5, 1e-2))
    if args.quick:
        grid = itertools.islice(grid, 0, None, 13)
    rows = []
    for domain, q, split, k, delta in grid:
        start = time.perf_counter()
        setting = ObservedMeanSetting("laplace", 1.0, 0.0, domain, q, releases=k, split=split)
        w = observed_mean_worst_case(setting, delta)
        row = {"domain": domain, "q": q, "split": split, "k": k, "delta": delta,
               "lower": w.lower, "epsilon": w.epsilon,
               "width": (w.epsilon - w.lower) / w.epsilon if w.epsilon > 0 else 0.0,
               "exact": bool(w.exact), "pair": w.pair, "boxes": "boxes" in w.method,
               "seconds": round(time.perf_counter() - start, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"settings": len(rows), "exact": sum(r["exact"] for r in rows),
                      "by boxes": sum(r["boxes"] for r in rows),
                      "widest": max(rows, key=lambda r: r["width"]),
                      "slowest": max(rows, key=lambda r: r["seconds"])}))


if __name__ == "__main__":
    main()
