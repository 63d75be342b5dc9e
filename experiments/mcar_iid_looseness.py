"""Experiment 7: how loose Theorem 3.2 is for `mcar-iid`, where ρ = 1.

Each feature is missing independently with rate r, so p* = 1 − r^d and the number of observed
features is random: Theorems 3.2 and 4.5 coincide (ρ = 1), while the pair's exact ε is much
smaller because most draws observe only part of the record.
"""

from __future__ import annotations

from experiments.common import audit, base, check_size, record, variant

NAME = "mcar_iid_looseness"
TITLE = "Looseness of Theorem 3.2 under mcar-iid (Laplace, sum query, d = 10)"
RATES = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9)
TRIALS = {"smoke": 20_000, "default": 10_000_000, "full": 200_000_000}


def run(size: str = "default", seed: int = 7, jobs: int = 1, progress: bool = False) -> dict:
    check_size(size)
    doc = base("power_laplace")
    doc["missingness"] = {"kind": "mcar-iid", "rate": 0.3}
    rows = []
    for i, r in enumerate(RATES):
        v = variant(doc, **{"missingness.rate": r, "audit.trials": TRIALS[size],
                            "audit.seed": seed + i, "audit.jobs": jobs})
        res = audit(v, f"{NAME}[r={r}]", progress=progress)
        rows.append({"rate": r, **res.to_dict()})
    return record(NAME, TITLE, size, seed, rows=rows)
