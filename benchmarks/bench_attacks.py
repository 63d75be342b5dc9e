"""Power of the black-box attacks on vector and few-valued releases (mean ε_lower over audits).

Each case is an implementation audited as a black box (``run_audit`` with a
``CallableImplementation``), ``--trials`` main calls per side (the pilot excluded: by default
the implementation audit's rule, as many calls as the main run up to 10^4 per side, or
``--pilot`` calls per side),
seeds 0 … ``--audits`` − 1, δ = 0, 95 % confidence, every other setting the default. The
differing record is the first one; the releases read it only.

* ``laplace3``: x + Laplace(3)^3 with x = (1, 1, 1) on z and (0, 0, 0) on z' (ε = 1 split
  equally over the coordinates; true ε = 1).
* ``l1-l2``: (Laplace(1), Gaussian(σ = √2)) on z and (Laplace(1), Laplace(1)) on z' (the same
  mean and variance; true ε = ∞), audited at ``--trials-l1-l2`` calls (10^4): refuted when
  ε_lower > 1 (the claim).
* ``laplace2`` / ``laplace2-nan``: x + Laplace(2)^2 with x = (1, 1) on z and (0, 0) on z'
  (true ε = 1), without and with 0.1 % of the second coordinate replaced by NaN on both
  sides.
* ``svt``: the indicator vector of which of 5 noisy counts (Laplace(2) each) exceed a noisy
  threshold (0.5 + Laplace(2)); the counts are 1 on z and 0 on z'. True ε: the largest
  |ln P(b)/Q(b)| over the 32 patterns, by quadrature over the threshold's noise.
* ``svt-first``: AboveThreshold on the same counts: the one-hot indicator of the first noisy
  count above the noisy threshold (all zeros when none is); true ε by the same quadrature.

    python benchmarks/bench_attacks.py [--audits 20] [--trials 5000] [--pilot N] [--cases ...]
        [--attacks default density-ratio categorical additive isotonic knn kvector auto]
        [--json out.json]

``default`` names no attack: the config's default, the policy's black-box attack
(``audit.policy.DEFAULT_POLICY.black_box_attack``), as a new user gets it.

Needs the attacks registered (``pip install -e .`` after adding their entry points).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
from scipy import integrate, stats

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SVT_K, SVT_THRESHOLD, SVT_SCALE = 5, 0.5, 2.0


def _first(datasets: np.ndarray) -> np.ndarray:
    return np.nan_to_num(datasets[:, 0, :])


def laplace3(datasets, rng):
    x = _first(datasets)[:, :3]
    return x + rng.laplace(0.0, 3.0, size=x.shape)


def l1_l2(datasets, rng):
    on_z = _first(datasets)[:, 0] > 0.5
    m = on_z.shape[0]
    lap = rng.laplace(0.0, 1.0, size=m)
    second = np.where(on_z, rng.normal(0.0, math.sqrt(2.0), size=m),
                      rng.laplace(0.0, 1.0, size=m))
    return np.column_stack([lap, second])


def laplace2(datasets, rng):
    x = _first(datasets)[:, :2]
    return x + rng.laplace(0.0, 2.0, size=x.shape)


def laplace2_nan(datasets, rng):
    out = laplace2(datasets, rng)
    out[rng.random(out.shape[0]) < 1e-3, 1] = np.nan
    return out


def svt(datasets, rng):
    counts = np.repeat(_first(datasets)[:, :1], SVT_K, axis=1)
    threshold = SVT_THRESHOLD + rng.laplace(0.0, SVT_SCALE, size=(counts.shape[0], 1))
    noisy = counts + rng.laplace(0.0, SVT_SCALE, size=counts.shape)
    return (noisy >= threshold).astype(np.float64)


def svt_first(datasets, rng):
    """AboveThreshold: the one-hot indicator of the first of the 5 noisy counts to exceed the
    noisy threshold (all zeros when none does)."""
    above = svt(datasets, rng).astype(bool)
    first = above & (np.cumsum(above, axis=1) == 1)
    return first.astype(np.float64)


def svt_epsilon(first: bool = False) -> float:
    """max over patterns b of |ln P(b)/Q(b)|: P(b) = ∫ ρ(t) Π_j P[c_j + ν_j ≥ t]^{b_j}
    P[c_j + ν_j < t]^{1−b_j} dt, t = threshold + Laplace, by adaptive quadrature."""
    lap = stats.laplace(scale=SVT_SCALE)

    def prob(count: float, above: int, below: int) -> float:
        def f(t):
            s = lap.sf(t - count)
            return lap.pdf(t - SVT_THRESHOLD) * s ** above * (1 - s) ** below
        return integrate.quad(f, -np.inf, np.inf, limit=400)[0]

    # all counts alike: a pattern's probability depends on its number of ones (svt), or on
    # the place of its one (svt-first: j zeros then a one; none: five zeros)
    cells = ([(j, SVT_K - j) for j in range(SVT_K + 1)] if not first
             else [(1, j) for j in range(SVT_K)] + [(0, SVT_K)])
    return max(abs(math.log(prob(1.0, a, b) / prob(0.0, a, b))) for a, b in cells)


#: name -> (batch release, record on z, claimed ε, true ε or None: by quadrature)
CASES = {
    "laplace3": (laplace3, [1.0, 1.0, 1.0], 1.0, 1.0),
    "l1-l2": (l1_l2, [1.0, 0.0], 1.0, math.inf),
    "laplace2": (laplace2, [1.0, 1.0], 1.0, 1.0),
    "laplace2-nan": (laplace2_nan, [1.0, 1.0], 1.0, 1.0),
    "svt": (svt, [1.0, 0.0], 1.0, None),
    "svt-first": (svt_first, [1.0, 0.0], 1.0, None),
}


def implementation(case: str):
    from audit.model.implementation import CallableImplementation, Claim

    batch, _, claim, _ = CASES[case]
    return CallableImplementation(lambda data, rng: batch(data[None], rng)[0],
                                  Claim(claim, 0.0, case), case, batch_func=batch)


def config(case: str, attack: str, trials: int, seed: int, pilot: int | None = None
           ) -> dict:
    record = CASES[case][1]
    zero = [0.0] * len(record)
    audit = {"trials": trials, "seed": seed}
    if attack != "default":  # else the policy's black-box attack, as a new user gets it
        audit["attack"] = attack
    if pilot is not None:
        audit["pilot_trials"] = pilot
    return {"scenario": {"mechanism": "laplace", "epsilon": CASES[case][2], "query": "sum",
                         "d": len(record)},
            "pair": {"z": [record, zero], "z_prime": [zero, zero]},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "audit": audit}


def run_case(case: str, attack: str, trials: int, audits: int, pilot: int | None = None
             ) -> dict:
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit

    impl = implementation(case)
    eps, notes, t0 = [], set(), time.perf_counter()
    for seed in range(audits):
        res = run_audit(config_from_dict(config(case, attack, trials, seed, pilot)),
                        implementation=impl)
        eps.append(res.eps_lower)
        notes.add(getattr(res, "attack_note", "") or "")
    eps = np.asarray(eps)
    return {"case": case, "attack": attack, "trials": trials, "pilot": pilot,
            "audits": audits,
            "mean": float(eps.mean()), "sd": float(eps.std(ddof=1)) if audits > 1 else 0.0,
            "refuted": float(np.mean(eps > CASES[case][2])),
            "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audits", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5000)
    ap.add_argument("--trials-l1-l2", type=int, default=10_000,
                    help="main calls per side of the l1-l2 case")
    ap.add_argument("--pilot", type=int, default=None,
                    help="pilot calls per side (default: the audit's own rule)")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--attacks", nargs="+",
                    default=["default", "density-ratio", "categorical", "additive",
                             "isotonic", "knn", "kvector", "auto"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.audits < 2 or args.trials < 1 or (args.pilot is not None and args.pilot < 2):
        print(f"error: --audits must be >= 2, --trials >= 1 and --pilot >= 2, got --audits="
              f"{args.audits} --trials={args.trials} --pilot={args.pilot}", file=sys.stderr)
        raise SystemExit(2)
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.factory import make_subject

    try:  # every config checked (and its pilot's memory bound) before any call
        for case in args.cases:
            trials = args.trials_l1_l2 if case == "l1-l2" else args.trials
            for attack in args.attacks:
                make_subject(config_from_dict(config(case, attack, trials, 0, args.pilot)),
                             implementation=implementation(case))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    rows = []
    for case in args.cases:
        truth = CASES[case][3] if not case.startswith("svt") else svt_epsilon(case != "svt")
        trials = args.trials_l1_l2 if case == "l1-l2" else args.trials
        for attack in args.attacks:
            row = run_case(case, attack, trials, args.audits, args.pilot)
            row["true_eps"] = truth
            row["fraction_of_true"] = (row["mean"] / truth if truth and math.isfinite(truth)
                                       else None)
            rows.append(row)
            frac = "" if row["fraction_of_true"] is None else \
                f" ({row['fraction_of_true']:.2f} of {truth:.3g})"
            print(f"{case:>13} {attack:>13}: ε_lower {row['mean']:.3f} ± {row['sd']:.3f}"
                  f"{frac}, refuted {row['refuted']:.2f}, {row['seconds']:.0f} s", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
