"""Experiment 6: ε_lower against the number of trials for each attack.

Issue 4's power scenario (Laplace, ε = 1, sum query, mcar-fixed k = 3, p* = 0.5). Each attack
gives its own valid bound (no maximum is taken across attacks).
"""

from __future__ import annotations

from experiments.common import audit, base, check_size, record, variant

NAME = "attack_comparison"
TITLE = "ε_lower against trials, per attack (Laplace, mcar-fixed k = 3, p* = 0.5)"
ATTACKS = ("exact-lr", "density-ratio", "logistic", "threshold")
TRIALS = {"smoke": (10_000, 20_000),
          "default": (10_000, 100_000, 1_000_000, 10_000_000),
          "full": (10_000, 100_000, 1_000_000, 10_000_000, 100_000_000)}


def run(size: str = "default", seed: int = 6, jobs: int = 1, progress: bool = False) -> dict:
    check_size(size)
    doc = base("power_laplace")
    rows = []
    for a, attack in enumerate(ATTACKS):
        for t, n in enumerate(TRIALS[size]):
            v = variant(doc, **{"audit.attack": attack, "audit.trials": n,
                                "audit.pilot_trials": max(10_000, min(n, 1_000_000)),
                                "audit.seed": seed + 10 * a + t, "audit.jobs": jobs})
            res = audit(v, f"{NAME}[{attack},{n}]", progress=progress)
            rows.append({"attack_name": attack, **res.to_dict()})
    return record(NAME, TITLE, size, seed, rows=rows)
