"""Experiment 2: amplification against ρ for Laplace and Gaussian releases.

`mcar-fixed` with p* = 0.5 and k = 1..d observed features (ρ = k/d). Laplace at ε = 2 (so
Corollary 4.6's domain ρε ≤ 1 ends at ρ = 0.5) against Theorem 4.5; Gaussian at ε = 1,
δ = 1e-5 (classical calibration) against Theorem 4.7, both beside ε_pair, ε_lower and §7.
"""

from __future__ import annotations

from audit.theory import accountant as acc
from experiments.common import audit, base, check_size, record, variant

NAME = "amplification_vs_rho"
TITLE = "Amplification against ρ (mcar-fixed, p* = 0.5, d = 10)"
OBSERVED = (1, 2, 3, 5, 7, 10)
TRIALS = {"smoke": 20_000, "default": 30_000_000, "full": 300_000_000}


def run(size: str = "default", seed: int = 2, jobs: int = 1, progress: bool = False) -> dict:
    check_size(size)
    series = {}
    for mech, cfg_name, eps in (("laplace", "power_laplace", 2.0),
                                ("gaussian", "gaussian_fixed", 1.0)):
        doc = base(cfg_name)
        d = doc["scenario"]["d"]
        p_star = doc["missingness"]["p_star"]
        rows = []
        for i, k in enumerate(OBSERVED):
            v = variant(doc, **{"scenario.epsilon": eps, "missingness.observed": k,
                                "audit.trials": TRIALS[size], "audit.seed": seed + 100 * i,
                                "audit.jobs": jobs})
            r = audit(v, f"{NAME}[{mech},k={k}]", progress=progress)
            rho = k / d
            cor46 = None
            if mech == "laplace" and rho * eps <= 1.0:
                cor46 = acc.corollary_4_6(eps, p_star, rho)
            rows.append({"observed": k, "rho_value": rho, "cor_4_6": cor46, **r.to_dict()})
        series[mech] = {"epsilon": eps, "p_star": p_star, "rows": rows}
    return record(NAME, TITLE, size, seed, series=series)
