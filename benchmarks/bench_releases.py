"""Model audits of k releases from one incomplete table ([releases]), beside a plain-numpy
baseline run in the same process.

Scenarios (docs/THEORY.md §9; README "Many releases from one table"):

- **gaussian-k1 / gaussian-k1000**: the Gaussian sum (d = 1, classical calibration at ε = 1,
  δ = 10⁻⁵) under mcar-row p* = 0.1, shared masks: k Gaussian releases of one query are one
  release at σ/√k, so k = 1000 should run at the single-release rate;
- **laplace-shared-k100 / laplace-fresh-k100**: the Laplace sum (d = 10, ε = 1) under mcar-iid
  r = 0.9, k = 100 releases, audited by the exact likelihood ratio of the mixture over the
  record's 11 distinct shifts of 100-fold products (shared) or of the 100-fold product of
  the scalar mixture (fresh, a tenth of the trials: :data:`FRACTION`).

For each: the kernel alone (warm, 2 numba threads), plain numpy (the laws' own samplers and
log densities, a histogram), and ``python -m audit run`` as a child process (wall time from
the shell, peak RSS, ε_lower).

    python benchmarks/bench_releases.py [--trials 10000000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from bench_audit import kernel_rate, numpy_rate, whole_audit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GAUSS = {"mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-5, "query": "sum", "d": 1,
         "n": 5, "bound": 1.0}
LAPLACE = {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 10, "n": 5,
           "bound": 1.0}
SCENARIOS = {
    "gaussian-k1": (GAUSS, {"kind": "mcar-row", "p_star": 0.1}, 1, "shared"),
    "gaussian-k1000": (GAUSS, {"kind": "mcar-row", "p_star": 0.1}, 1000, "shared"),
    "laplace-shared-k100": (LAPLACE, {"kind": "mcar-iid", "rate": 0.9}, 100, "shared"),
    "laplace-fresh-k100": (LAPLACE, {"kind": "mcar-iid", "rate": 0.9}, 100, "fresh"),
}
#: the fresh-mask Laplace law is a product of 100 scalar mixtures of 11 components (about 10×
#: the cost per draw of the shared law): it runs a tenth of the trials
FRACTION = {"laplace-fresh-k100": 10}


def _toml(table: dict) -> str:
    return "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in table.items())


def config_text(scenario: dict, missingness: dict, k: int, masks: str) -> str:
    return (f"[scenario]\n{_toml(scenario)}\n\n[missingness]\n{_toml(missingness)}\n\n"
            f'[releases]\ncount = {k}\nmasks = "{masks}"\n\n[audit]\nseed = 1\njobs = 2\n')


def plan_of(scenario: dict, missingness: dict, k: int, masks: str):
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.plan import plan_audit

    doc = {"scenario": scenario, "missingness": missingness,
           "releases": {"count": k, "masks": masks}, "audit": {"seed": 1}}
    return plan_audit(config_from_dict(doc))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10_000_000, help="trials per side")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = ap.parse_args(argv)
    base = 200_000 if args.quick else args.trials
    print(f"cpus={len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.2f}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-releases-"))
    for name, (scenario, missingness, k, masks) in SCENARIOS.items():
        trials = base // FRACTION.get(name, 1)
        cfg = tmp / f"{name}.toml"
        cfg.write_text(config_text(scenario, missingness, k, masks))
        plan = plan_of(scenario, missingness, k, masks)
        kern = kernel_rate(plan, min(trials, 2_000_000))
        npy = numpy_rate(plan, min(trials, 200_000 if plan.is_scalar else 20_000),
                         batch=20_000)
        run = whole_audit(cfg, trials)
        res = run["result"]
        print(f"\n{name}: k = {k} ({masks} masks), law {type(plan.P).__name__} of dim "
              f"{plan.P.dim}, {trials:.0e} trials/side")
        print(f"  kernel only : {kern / 1e6:8.2f} M draws/s")
        print(f"  numpy       : {npy / 1e6:8.2f} M draws/s")
        print(f"  whole audit : {run['wall']:.1f} s from the shell "
              f"({2 * trials / run['wall'] / 1e6:.2f} M draws/s), peak RSS "
              f"{run['rss_mib']:.0f} MiB")
        print(f"  eps_lower {res['eps_lower']:.4f}, eps_pair {res['eps_pair']}, "
              f"eps_theory {res['eps_theory']:.4f}")


if __name__ == "__main__":
    main()
