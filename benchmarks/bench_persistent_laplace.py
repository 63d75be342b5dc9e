"""The Laplace persistent-mask bracket of ``bound --config`` (docs/THEORY.md §10.7): for a sum
over three domains (count-like [0, 1] with NA read as 0; [−1, 1] with NA at the midpoint;
[0, 1] with NA read as 0.3), ε = 1 per release (b = the span of the domain and the missing
reading), q ∈ {0.1, 0.5}, persistence r ∈ {0.25, 0.5, 0.75} and k releases, final δ 1e-5:
the worst case's lower and upper end, their ratio, and the wall seconds of each row, one JSON
line per setting (one core; the run's peak resident memory on the last line).

    python benchmarks/bench_persistent_laplace.py [--releases 3,12] [--persistence 0.25,0.5,0.75]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from audit.theory.persistent import MAX_PERSISTENT_RELEASES
from audit.theory.worst_case import Setting, substitution_sensitivity, worst_case

DOMAINS = (((0.0, 1.0), 0.0), ((-1.0, 1.0), 0.0), ((0.0, 1.0), 0.3))


def _numbers(text: str, kind, low, high, name: str) -> list:
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or not all(low <= v <= high for v in values):
        raise argparse.ArgumentTypeError(f"{name} must be a comma-separated list in "
                                         f"[{low}, {high}], got {text!r}")
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", default="3,12",
                        type=lambda t: _numbers(t, int, 1, MAX_PERSISTENT_RELEASES, "--releases"))
    parser.add_argument("--persistence", default="0.25,0.5,0.75",
                        type=lambda t: _numbers(t, float, 0.0, 1.0, "--persistence"))
    args = parser.parse_args(argv)
    for (lo, hi), na in DOMAINS:
        b = substitution_sensitivity(lo, hi, na)  # ε = 1 per release
        for q in (0.1, 0.5):
            for k in args.releases:
                for r in args.persistence:
                    t0 = time.perf_counter()
                    w = worst_case(Setting("laplace", b, (lo, hi), na, q, k, "persistent", r),
                                   1e-5)
                    print(json.dumps({"domain": [lo, hi], "na": na, "q": q, "k": k, "r": r,
                                      "lower": round(w.lower, 5), "upper": round(w.epsilon, 5),
                                      "ratio": round(w.epsilon / w.lower, 4),
                                      "pair": list(w.pair),
                                      "seconds": round(time.perf_counter() - t0, 2)}),
                          flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mib": round(peak, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
