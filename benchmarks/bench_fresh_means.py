"""Fresh masks for a Gaussian mean over the observed entries at δ > 0: the bracket
[lower, epsilon] of ``bound --config``'s row (``audit.theory.observed_mean_fresh``,
docs/THEORY.md §10.8) over a sweep of settings, its width and seconds. One JSON line per
setting, then a summary line (how many closed, the widest, the slowest).

    OMP_NUM_THREADS=1 python benchmarks/bench_fresh_means.py [--releases K ...]
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
    ap.add_argument("--releases", type=int, nargs="+", default=[5, 100],
                    help="the numbers of releases k (default: 5 100)")
    args = ap.parse_args()
    if any(k < 1 for k in args.releases):
        ap.error(f"--releases must be at least 1, got {args.releases}")
    from audit.theory.observed_mean import ObservedMeanSetting, observed_mean_worst_case

    rows = []
    grid = itertools.product([(-1.0, 1.0), (0.0, 1.0)], (0.05, 0.3, 0.9), (0.5, 0.9),
                             args.releases)
    for domain, q, split, k in grid:
        setting = ObservedMeanSetting("gaussian", 1.0, 1e-5, domain, q, releases=k,
                                      masks="fresh", split=split)
        start = time.perf_counter()
        w = observed_mean_worst_case(setting, 1e-5)
        row = {"domain": domain, "q": q, "split": split, "k": k, "lower": w.lower,
               "epsilon": w.epsilon, "width": (w.epsilon - w.lower) / w.epsilon,
               "exact": bool(w.exact), "pair": w.pair,
               "seconds": round(time.perf_counter() - start, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"settings": len(rows), "exact": sum(r["exact"] for r in rows),
                      "widest": max(rows, key=lambda r: r["width"]),
                      "slowest": max(rows, key=lambda r: r["seconds"])}))


if __name__ == "__main__":
    main()
