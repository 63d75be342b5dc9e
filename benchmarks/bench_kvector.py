"""Black-box audits of k releases from one table: the ratio of ε_lower to the exact ε.

The setting is the ``releases`` experiment's laplace-iid one (``experiments/releases.py``):
a numpy sum over d = 10 features of n = 5 records, entries clipped to [−B, B] (B = 1), NA read
as 0, Laplace noise b = 2dB/ε = 20 (ε = 1 per release), ``mcar-iid`` with rate r = 0.9, the
pair record 1 all −B against all +B (the others 0), k releases from one masked table
(``[releases] masks = "shared"``, or ``--masks fresh``: masked anew per release), audited as a
black box at δ = 0 with ``--trials`` main calls per side (the pilot by the black-box rule:
2·10⁴ per side at 10⁵), seeds 0 … ``--seeds`` − 1.

**The exact ε** (δ = 0) of the k releases. Given the record's mask, which observes C ~
Binomial(d, 1 − r) of its features, the k outputs are i.i.d. Laplace(∓C·B, b) on the two
sides. For every y ∈ R^k and c ≥ 0, Π_j L(y_j + cB)/L(y_j) ≤ e^{kcB/b} and
Π_j L(y_j − cB)/L(y_j) ≥ e^{−kcB/b}, both with equality when every y_j ≤ −dB, so the
likelihood ratio p/q is at most E[e^{kCB/b}] / E[e^{−kCB/b}], reached on that orthant (of
positive mass), and the other direction is the same by the reflection y ↦ −y:

    ε = d · ln((r + (1 − r) e^{kB/b}) / (r + (1 − r) e^{−kB/b}))      (0.5037 at k = 5).

It is also the worst case of the setting at δ = 0: for any two records with contributions
S and S′ given the mask (|S|, |S′| ≤ CB), Π_j L(y_j − S) ≤ Π_j L(y_j) e^{k|S|/b} and
Π_j L(y_j − S′) ≥ Π_j L(y_j) e^{−k|S′|/b}, so every pair's ratio is at most the one above
(the other records' masks are common to both sides, docs/THEORY.md §10.1). With fresh
masks the k releases are the k-fold product of the one-release pair, whose ratio saturates on
the same orthant: ε is k times the k = 1 value (0.5001 at k = 5). The script checks the closed
form against the model's own law of the k releases (:func:`audit.laws.shared_releases`,
:func:`audit.laws.fresh_releases`) on that orthant before any audit.

    python benchmarks/bench_kvector.py [--seeds 10] [--trials 100000] [--releases 5]
        [--masks shared]
        [--attacks default isotonic kvector oracle] [--json out.json]

``default`` names no attack: the policy's black-box attack (``auto``), as a user gets it;
``oracle`` scores by the exact log-likelihood ratio of the model's laws, as a ceiling for the
fitted scores (:func:`_oracle`).
Needs the attacks registered (``pip install -e .`` after adding their entry points).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

D, N_RECORDS, BOUND, EPSILON, RATE = 10, 5, 1.0, 1.0, 0.9
SCALE = 2 * D * BOUND / EPSILON  # b: the substitution sensitivity 2dB over ε
#: the registered attack the config names when the oracle runs (:func:`_oracle`)
ORACLE_STANDS_IN = "threshold"


def laplace_sum(datasets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The Laplace sum of the releases experiment, batched: (m, n, d) → (m,)."""
    x = np.clip(np.nan_to_num(np.asarray(datasets, np.float64), nan=0.0), -BOUND, BOUND)
    f = x.sum(axis=(1, 2))
    return f + rng.laplace(0.0, SCALE, size=f.shape[0])


def implementation():
    from audit.model.implementation import CallableImplementation, Claim

    return CallableImplementation(lambda data, rng: laplace_sum(data[None], rng)[0],
                                  Claim(EPSILON, 0.0, f"Laplace sum, b {SCALE:g}"),
                                  "laplace-sum", batch_func=laplace_sum)


def exact_epsilon(releases: int, masks: str = "shared") -> float:
    """The exact ε at δ = 0 of ``releases`` releases (module docstring)."""
    if masks == "fresh":
        return releases * exact_epsilon(1)
    t = releases * BOUND / SCALE
    return D * (math.log(RATE + (1 - RATE) * math.exp(t))
                - math.log(RATE + (1 - RATE) * math.exp(-t)))


def laws(releases: int, masks: str):
    """The model's laws (P, Q) of the k releases."""
    from audit.laws import fresh_releases, shared_releases
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.plan import plan_audit

    plan = plan_audit(config_from_dict({"scenario": scenario(), "missingness": missingness(),
                                        "audit": {"seed": 0}}))
    of = shared_releases if masks == "shared" else fresh_releases
    return of(plan.P, releases), of(plan.Q, releases)


def check_exact(releases: int, masks: str) -> float:
    """The closed form against the model's law of the k releases on the orthant where the
    ratio saturates; returns the closed form."""
    P, Q = laws(releases, masks)
    y = np.full((1, releases), -10 * D * BOUND)
    model = float(P.logpdf(y)[0] - Q.logpdf(y)[0])
    exact = exact_epsilon(releases, masks)
    if abs(abs(model) - exact) > 1e-9:
        raise SystemExit(f"error: the closed form {exact} differs from the model's {model}")
    return exact


def scenario() -> dict:
    return {"mechanism": "laplace", "epsilon": EPSILON, "query": "sum", "d": D,
            "n": N_RECORDS, "bound": BOUND}


def missingness() -> dict:
    return {"kind": "mcar-iid", "rate": RATE}


def config(attack: str, trials: int, seed: int, releases: int, masks: str) -> dict:
    """The audit's config."""
    z = [[-BOUND] * D] + [[0.0] * D] * (N_RECORDS - 1)
    zp = [[BOUND] * D] + [[0.0] * D] * (N_RECORDS - 1)
    audit = {"trials": trials, "seed": seed, "jobs": 1}
    if attack != "default":
        audit["attack"] = attack
    return {"scenario": scenario(), "missingness": missingness(),
            "pair": {"z": z, "z_prime": zp},
            "releases": {"count": releases, "masks": masks}, "audit": audit}


@contextlib.contextmanager
def _oracle(releases: int, masks: str):
    """Within the block, the runner loads, for the name :data:`ORACLE_STANDS_IN`, a black-box
    attack whose score is the exact log-likelihood ratio of the k releases (the model's laws,
    :func:`laws`): what no fitted score can beat in this pipeline (the same pilot split,
    region choice and bound). Not registered; this process only."""
    from audit.pipeline import runner
    from audit.protocols import BlackBoxAttack, Score
    from audit.statistics import ExactLLR

    llr = ExactLLR(*laws(releases, masks))

    class Oracle(BlackBoxAttack):
        name = "oracle"

        def fit(self, pilot):
            return Score(self.name, llr)

    load = runner.load_attack
    runner.load_attack = lambda name: Oracle() if name == ORACLE_STANDS_IN else load(name)
    try:
        yield ORACLE_STANDS_IN
    finally:
        runner.load_attack = load


def run(attack: str, trials: int, seeds: int, releases: int, masks: str) -> dict:
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit

    impl = implementation()
    eps, notes, t0 = [], [], time.perf_counter()
    oracle = _oracle(releases, masks) if attack == "oracle" else None
    with oracle or contextlib.nullcontext(attack) as name:
        for seed in range(seeds):
            res = run_audit(config_from_dict(config(name, trials, seed, releases, masks)),
                            implementation=impl)
            eps.append(res.eps_lower)
            notes.append(res.attack_note or "")
            print(f"    seed {seed}: ε_lower {res.eps_lower:.4f} ({attack}: {res.attack}; "
                  f"{res.attack_note})", flush=True)
    eps = np.asarray(eps)
    return {"attack": attack, "trials": trials, "seeds": seeds, "releases": releases,
            "masks": masks,
            "eps_lower": eps.tolist(), "mean": float(eps.mean()),
            "sd": float(eps.std(ddof=1)) if seeds > 1 else 0.0, "notes": notes,
            "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--releases", type=int, default=5)
    ap.add_argument("--masks", choices=["shared", "fresh"], default="shared")
    ap.add_argument("--attacks", nargs="+", default=["default", "isotonic", "kvector"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.seeds < 1 or args.trials < 1 or args.releases < 1:
        print("error: --seeds, --trials and --releases must be >= 1", file=sys.stderr)
        raise SystemExit(2)
    exact = check_exact(args.releases, args.masks)
    print(f"k = {args.releases} ({args.masks} masks), exact ε (δ = 0) {exact:.4f}; "
          f"{args.trials} calls per side, "
          f"{args.seeds} seeds; cpus {len(os.sched_getaffinity(0))}, load "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for attack in args.attacks:
        row = run(attack, args.trials, args.seeds, args.releases, args.masks)
        row["exact"] = exact
        ratios = np.asarray(row["eps_lower"]) / exact
        row["ratio_mean"] = float(ratios.mean())
        row["ratio_sd"] = float(ratios.std(ddof=1)) if args.seeds > 1 else 0.0
        rows.append(row)
        print(f"{attack:>10}: ε_lower {row['mean']:.4f} ± {row['sd']:.4f}, ratio "
              f"{row['ratio_mean']:.3f} ± {row['ratio_sd']:.3f} of {exact:.4f}, "
              f"{row['seconds']:.0f} s", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
