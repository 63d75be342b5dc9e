"""k Laplace releases from one table at δ > 0: the bracket [lower, epsilon] of
``bound --config``'s row over a sweep of settings, its width and seconds. One JSON line per
setting, then a summary line (the widest bracket, the slowest row, how many are exact).

- default: a sum with the missing reading inside the domain (``audit.theory.worst_case``,
  docs/THEORY.md §10.3);
- ``--means``: a mean over the observed entries, ε = 1 per release, the count private
  (``audit.theory.observed_mean``, §10.8).

    OMP_NUM_THREADS=1 python benchmarks/bench_laplace_shared.py [--means] [--quick] [--releases K]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _sums(quick: bool, releases=(2, 10, 32), deltas=(1e-9, 1e-5, 1e-2)):
    """(parameters, worst case) of each sum setting."""
    from audit.theory.worst_case import Setting, worst_case

    domains = [((-1.0, 1.0), 0.0), ((-1.0, 2.0), 0.5), ((-0.1, 1.0), 0.0), ((0.0, 1.0), 0.9)]
    grid = itertools.product(domains, (0.05, 0.3, 0.9), (0.5, 1.0, 2.0), releases, deltas)
    for (domain, m), q, b, k, delta in itertools.islice(grid, 0, None, 17 if quick else 1):
        yield ({"domain": domain, "na": m, "q": q, "b": b, "k": k, "delta": delta},
               partial(worst_case, Setting("laplace", b, domain, m, q, k), delta))


def _means(quick: bool, releases=(2, 10, 32), deltas=(1e-9, 1e-5, 1e-2)):
    """(parameters, worst case) of each mean setting."""
    from audit.theory.observed_mean import ObservedMeanSetting, observed_mean_worst_case

    domains = [(-1.0, 1.0), (-0.5, 1.0), (0.0, 1.0), (0.5, 1.5)]
    grid = itertools.product(domains, (0.05, 0.3), (0.5, 0.9), releases, deltas)
    for domain, q, split, k, delta in itertools.islice(grid, 0, None, 13 if quick else 1):
        setting = ObservedMeanSetting("laplace", 1.0, 0.0, domain, q, releases=k, split=split)
        yield ({"domain": domain, "q": q, "split": split, "k": k, "delta": delta},
               partial(observed_mean_worst_case, setting, delta))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--means", action="store_true", help="means over the observed entries")
    ap.add_argument("--quick", action="store_true", help="a few settings only")
    ap.add_argument("--releases", type=int, default=None,
                    help="this k alone, at delta = 1e-5 (default: k = 2, 10, 32 at three "
                         "deltas)")
    args = ap.parse_args()
    from audit.theory.pld import MAX_PLD_RELEASES

    if args.releases is not None and not 1 <= args.releases <= MAX_PLD_RELEASES:
        ap.error(f"--releases must be in [1, {MAX_PLD_RELEASES}] (a PLD composition beyond), "
                 f"got --releases={args.releases}")
    chosen = {} if args.releases is None else {"releases": (args.releases,), "deltas": (1e-5,)}
    settings = (_means if args.means else _sums)(args.quick, **chosen)
    rows = []
    for params, compute in settings:
        start = time.perf_counter()
        w = compute()
        row = {**params, "lower": w.lower, "epsilon": w.epsilon,
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
