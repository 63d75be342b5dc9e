"""One mask-stratified run per target against separate audits per missing rate, same calls.

For the seeded library_audit targets (diffprivlib nanmean and nansum), runs both designs on
``--seeds`` seeds at the experiment's default size and prints, per rate, the mean ε_lower of
each and the mean difference (stratified − separate) with its standard error. Both use the
same calls per side: six implementation-audit pilots and 6 × trials main calls.

    python benchmarks/bench_strata_power.py --seeds 4
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from experiments import library_audit as la
from experiments.common import base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--targets", nargs="+", default=["diffprivlib:nanmean",
                                                     "diffprivlib:nansum"])
    args = ap.parse_args()
    known = [s["target"] for s in la.TARGETS]
    unknown = [t for t in args.targets if t not in known]
    if args.seeds < 2 or unknown:  # before any call: one line, exit 2
        print(f"error: --seeds must be an integer >= 2 (a standard error needs two) and "
              f"--targets among {', '.join(known)}, got --seeds={args.seeds} --targets="
              f"{' '.join(args.targets)}", file=sys.stderr)
        raise SystemExit(2)
    doc = base(la.NAME)
    specs = [s for s in la.TARGETS if s["target"] in args.targets]
    for spec in specs:
        one, sep = [], []
        t0 = time.time()
        for seed in range(100, 100 + args.seeds):
            v = la._config(spec, doc, "default", seed, 2, la.RATES[0])
            res = run_audit(config_from_dict(v))
            one.append([r["eps_lower"] for r in res.to_dict()["strata"]["rates"]])
            row = []
            for i, rate in enumerate(la.RATES):
                w = la._config(spec, doc, "default", seed * 10 + i, 2, rate)
                del w["strata"]
                row.append(run_audit(config_from_dict(w)).eps_lower)
            sep.append(row)
        one, sep = np.array(one), np.array(sep)
        d = one - sep
        print(f"{spec['target']} ({args.seeds} seeds, {time.time() - t0:.0f} s)")
        print("  rate  one-run  separate  diff  se")
        for g, rate in enumerate(la.RATES):
            se = d[:, g].std(ddof=1) / np.sqrt(len(d))
            print(f"  {rate:.1f}  {one[:, g].mean():.3f}  {sep[:, g].mean():.3f}  "
                  f"{d[:, g].mean():+.3f}  {se:.3f}")


if __name__ == "__main__":
    main()
