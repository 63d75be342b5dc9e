"""The joint bound against the two intervals (issue 30 item 1): expected ε_lower at a few
(P(S), Q(S), n), and the tester benchmark's ReportNoisyMax3 at the default size, old and new.

Expected bounds by simulation (fixed seed, ``REPS`` repetitions; the standard error of each
mean is printed): the two intervals on K_P ~ Bin(n, P(S)) and K_Q ~ Bin(n, Q(S)) at α/2 each;
the joint bound on the region counts of a Poissonised run, K_P ~ Poisson(n·P(S)) and
K_Q ~ Poisson(n·Q(S)), at α. ReportNoisyMax3's event is {max ≤ t} on "all below" (x = 0
against x − 1: P(S) = F(t + 1)⁵, Q(S) = F(t)⁵, F the Laplace(20) CDF), t the best of a grid
for each rule at the expected counts.

    NUMBA_NUM_THREADS=1 python3 benchmarks/bench_joint.py [--no-audit]
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from audit.estimation.binomial import eps_from_counts, eps_joint_from_counts
from audit.policy import DEFAULT_POLICY

REPS = 20_000
CASES = [  # (P(S), Q(S), n per side, alpha)
    (0.1, 0.01, 10_000, 0.05),
    (0.3, 0.1, 100_000, 0.05),
    (0.05, 0.04, 1_000_000, 0.05),
    (0.01, 0.002, 100_000, 0.05),
    (0.9, 0.4, 10_000, 0.05),
]


def expected_bounds(p: float, q: float, n: int, alpha: float, seed: int = 1):
    """(mean, standard error) of the two-interval and of the joint bound."""
    rng = np.random.default_rng(seed)
    two = eps_from_counts(rng.binomial(n, p, REPS), n, rng.binomial(n, q, REPS), n, 0.0,
                          alpha)
    joint = eps_joint_from_counts(rng.poisson(n * p, REPS), rng.poisson(n * q, REPS), alpha)
    return [(float(v.mean()), float(v.std(ddof=1) / np.sqrt(REPS))) for v in (two, joint)]


def rnm3_masses(n: float, alpha: float):
    """(P(S), Q(S)) of the best {max ≤ t} for each rule at the expected counts of n calls."""
    from scipy import stats

    ts = np.linspace(-60.0, 20.0, 1601)
    cdf = stats.laplace(scale=20.0).cdf
    p, q = cdf(ts + 1.0) ** 5, cdf(ts) ** 5
    two = eps_from_counts(p * n, n, q * n, n, 0.0, alpha)
    joint = eps_joint_from_counts(p * n, q * n, alpha)
    return (p[np.argmax(two)], q[np.argmax(two)]), (p[np.argmax(joint)], q[np.argmax(joint)])


def _rnm3_audit(joint: bool, seed: int, given: bool) -> dict:
    from experiments import tester_benchmark as tb

    pol = dataclasses.replace(DEFAULT_POLICY, black_box_joint_bound=joint)
    bench = tb.benchmark("ReportNoisyMax3")
    if not given:
        return tb._audit(bench, "default", seed, 1, False, policy=pol).to_dict()
    from audit.pipeline.runner import run_audit
    from experiments.common import config

    doc = {"scenario": {"mechanism": "laplace", "epsilon": tb.EPSILON, "query": "sum",
                        "n": 1, "d": bench.d, "bound": 1.0},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "pair": {"z": [[0.0] * 5], "z_prime": [[-1.0] * 5]},
           "audit": {"trials": tb.TRIALS["default"], "seed": seed,
                     "confidence": tb.CONFIDENCE, "attack": tb.ATTACKS[bench.discrete],
                     "mode": "fixed", "jobs": 1}}
    return run_audit(config(doc, "rnm3[all below]"), implementation=tb.implementation(bench),
                     policy=pol).to_dict()


def main(audit: bool = True) -> None:
    print("expected eps_lower (mean ± se over", REPS, "repetitions)")
    print(f"{'P(S)':>6} {'Q(S)':>6} {'n':>9} {'ln P/Q':>7} {'two intervals':>18} "
          f"{'joint':>18} {'gain':>7}")
    for p, q, n, alpha in CASES:
        (two, s2), (joint, sj) = expected_bounds(p, q, n, alpha)
        print(f"{p:6.3g} {q:6.3g} {n:9d} {np.log(p / q):7.4f} {two:11.5f} ± {s2:.5f} "
              f"{joint:11.5f} ± {sj:.5f} {joint - two:+7.4f}")
    for n in (4e5, 2e8):
        (p2, q2), (pj, qj) = rnm3_masses(n, 0.1)
        (two, s2), _ = expected_bounds(p2, q2, int(n), 0.1)
        _, (joint, sj) = expected_bounds(pj, qj, int(n), 0.1)
        print(f"ReportNoisyMax3 'all below' at {n:.0e} calls, confidence 0.90: two intervals "
              f"{two:.5f} ± {s2:.5f} (Q(S) {q2:.3g}), joint {joint:.5f} ± {sj:.5f} "
              f"(Q(S) {qj:.3g}); DP-Sniper 0.24881, true 0.25")
    if not audit:
        return
    for given in (False, True):
        for seed in (16, 17, 18, 19):
            row = []
            for joint in (False, True):
                t = time.perf_counter()
                r = _rnm3_audit(joint, seed, given)
                w = r["witness"]
                row.append(f"{'new' if joint else 'old'} {r['eps_lower']:.5f} "
                           f"({w.get('rule')}, k {w['k_p']}/{w['n_p']} vs {w['k_q']}/{w['n_q']}"
                           f", {time.perf_counter() - t:.1f} s)")
            what = "pair 'all below' given" if given else "pair searched (the benchmark)"
            print(f"ReportNoisyMax3, default size, seed {seed}, {what}: " + "; ".join(row))


if __name__ == "__main__":
    main(audit="--no-audit" not in sys.argv)
