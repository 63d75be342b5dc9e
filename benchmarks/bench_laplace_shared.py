"""k Laplace releases from one table with the missing reading inside the domain, at δ > 0
(``audit.theory.worst_case``, docs/THEORY.md §10.3): the bracket [lower, epsilon] of
``bound --config``'s row over a sweep of settings, its width and seconds. One JSON line per
setting, then a summary line (the widest bracket, the slowest row, how many are exact).

    OMP_NUM_THREADS=1 python benchmarks/bench_laplace_shared.py [--quick]
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
    from audit.theory.worst_case import Setting, worst_case

    domains = [((-1.0, 1.0), 0.0), ((-1.0, 2.0), 0.5), ((-0.1, 1.0), 0.0), ((0.0, 1.0), 0.9)]
    grid = itertools.product(domains, (0.05, 0.3, 0.9), (0.5, 1.0, 2.0), (2, 10, 32),
                             (1e-9, 1e-5, 1e-2))
    if args.quick:
        grid = itertools.islice(grid, 0, None, 17)
    rows = []
    for (domain, m), q, b, k, delta in grid:
        start = time.perf_counter()
        w = worst_case(Setting("laplace", b, domain, m, q, k), delta)
        row = {"domain": domain, "na": m, "q": q, "b": b, "k": k, "delta": delta,
               "lower": w.lower, "epsilon": w.epsilon,
               "width": (w.epsilon - w.lower) / w.epsilon if w.epsilon > 0 else 0.0,
               "exact": bool(w.exact), "boxes": "boxes" in w.method,
               "seconds": round(time.perf_counter() - start, 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"settings": len(rows), "exact": sum(r["exact"] for r in rows),
                      "by boxes": sum(r["boxes"] for r in rows),
                      "widest": max(rows, key=lambda r: r["width"]),
                      "slowest": max(rows, key=lambda r: r["seconds"])}))


if __name__ == "__main__":
    main()
