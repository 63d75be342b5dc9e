"""The k-release ε of one pair with fresh masks (``audit.theory.worst_case.fresh_pair``):
bracket, width and seconds, by Connect-the-Dots (default) or with losses rounded to the grid
(``--rounded``: the construction before docs/THEORY.md §10.5, kept for pairs whose loss is
not known to be monotone on pieces).

Pairs: the record against the missing record (count-like, domain [0, 1]) and the two ends of
[−1, 1] with NA read as 0 (symmetric), Laplace b = 1 and Gaussian σ = 2, q = 0.1, δ = 1e-5.
One JSON line per (pair, k).

    OMP_NUM_THREADS=1 python benchmarks/bench_fresh_pair.py [--rounded] [--k 1,10,100,1000,10000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAIRS = {"laplace-count": ("laplace", 1.0, (0.0, 1.0)),
         "laplace-sym": ("laplace", 1.0, (-1.0, 1.0)),
         "gaussian-count": ("gaussian", 2.0, (0.0, 1.0)),
         "gaussian-sym": ("gaussian", 2.0, (-1.0, 1.0))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounded", action="store_true", help="losses rounded to the grid")
    ap.add_argument("--k", default="1,10,100,1000,10000")
    ap.add_argument("--pairs", default=",".join(PAIRS))
    args = ap.parse_args()
    from audit.theory import worst_case as wc
    from audit.theory.pair import releases as rel

    if args.rounded:  # the fallback path of fresh_pair_epsilon, for every pair
        rel.ctd_pair_plds = lambda P, Q, h: None
    for name in args.pairs.split(","):
        noise, scale, domain = PAIRS[name]
        for k in (int(x) for x in args.k.split(",")):
            setting = wc.Setting(noise, scale, domain, 0.0, 0.1, k, "fresh")
            start = time.perf_counter()
            low, high = wc.fresh_pair(setting, "hi", "lo", 1e-5)
            print(json.dumps({"rounded": args.rounded, "pair": name, "k": k, "low": low,
                              "high": high, "width": high - low,
                              "seconds": round(time.perf_counter() - start, 2)}), flush=True)


if __name__ == "__main__":
    main()
