"""Curve-claim audits against the two-interval ε lower bound at the same 10⁵ calls (issue 43).

Mechanisms (vectorised numpy, not the runner): the μ-GDP Gaussian, N(μ, 1) on z against
N(0, 1) on z′, μ ∈ {0.5, 1, 2} (family G_μ over μ), and the hidden-mask Gaussian sum,
p*·N(μ, 1) + (1 − p*)·N(0, 1) against N(0, 1) (its exact curve C_{p*}(G_μ); family C_{p*}(G_μ)
over μ), p* ∈ {0.1, 0.3}, μ ∈ {1, 2}. Each audit draws 5·10⁴ outputs per side (10⁵ calls in
all); 5 % of each side is the pilot (256 pooled-quantile thresholds), the rest the main run.
Per setting, over seeds 0 … ``--seeds``−1: the mean of eps_family / true ε at δ = 10⁻⁵
(:func:`audit.estimation.curve_claims.audit_curve_claim`, 95 % confidence) and, on the same
pilot, bins and main run, the mean of the two-Clopper–Pearson ε_lower / true ε
(:func:`audit.estimation.regions.select_region_on_pilot` then ``region_bound``). The null
study (``--null N``): N audits per setting, each of a mechanism inside the family (its exact
member μ), counting eps_family > true ε; the count must stay ≤ the 0.999 quantile of
Binomial(N, 0.05).

    python benchmarks/bench_curve_claims.py [--seeds 20] [--null 1000]

Output (this machine, 2026-12-06, one core, ``--seeds 20 --null 1000``):

    setting            true eps  eps_family/true  two-CP/true  null > true (limit)     s
    gaussian mu=0.5      1.9931           0.9450       0.5061       2/1000      73    13
    gaussian mu=1        4.3772           0.9712       0.5273       2/1000      73    21
    gaussian mu=2        9.9973           0.9824       0.4636       5/1000      73    16
    C_0.1(G_1)           1.6845           0.6170       0.1898       7/1000      73    29
    C_0.1(G_2)           6.5755           0.9071       0.3202       1/1000      73    24
    C_0.3(G_1)           2.9215           0.8973       0.3631       4/1000      73    18
    C_0.3(G_2)           8.2254           0.9522       0.4103       5/1000      73    21
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy import stats

from audit.estimation.curve_claims import audit_curve_claim
from audit.estimation.regions import region_bound, select_region_on_pilot
from audit.theory.tradeoff.families import GaussianFamily, SubsampledGaussianFamily

DELTA = 1e-5
CONFIDENCE = 0.95
PER_SIDE = 50_000
PILOT_FRACTION = 0.05
THRESHOLDS = 256
#: (label, p* or None for the Gaussian, μ)
SETTINGS = [("gaussian mu=0.5", None, 0.5), ("gaussian mu=1", None, 1.0),
            ("gaussian mu=2", None, 2.0), ("C_0.1(G_1)", 0.1, 1.0), ("C_0.1(G_2)", 0.1, 2.0),
            ("C_0.3(G_1)", 0.3, 1.0), ("C_0.3(G_2)", 0.3, 2.0)]


def draw(p_star, mu: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One audit's outputs: z's (shifted by μ, with probability p* for the mixture), z′'s."""
    shift = mu if p_star is None else mu * (rng.random(PER_SIDE) < p_star)
    return rng.standard_normal(PER_SIDE) + shift, rng.standard_normal(PER_SIDE)


def two_intervals(z: np.ndarray, zp: np.ndarray) -> float:
    """The current ε_lower on the same pilot/main split and bins as the curve claim."""
    k = int(PILOT_FRACTION * PER_SIDE)
    edges = np.unique(np.quantile(np.concatenate([z[:k], zp[:k]]),
                                  (np.arange(THRESHOLDS) + 0.5) / THRESHOLDS))
    score = np.arange(edges.size + 1, dtype=np.float64)

    def hist(x):
        return np.bincount(np.searchsorted(edges, x, side="right"), minlength=edges.size + 1)

    alpha = 1.0 - CONFIDENCE
    region = select_region_on_pilot(hist(z[:k]), hist(zp[:k]), score, DELTA,
                                    trials=PER_SIDE - k, alpha=alpha)
    return region_bound(hist(z[k:]), hist(zp[k:]), score, region, DELTA, alpha).eps_lower


def setting(p_star, mu: float, seeds: int, null: int) -> tuple[float, float, int, float]:
    """(mean eps_family/true, mean ε_lower/true over ``seeds``; null exceedances, seconds)."""
    family = GaussianFamily() if p_star is None else SubsampledGaussianFamily(p_star)
    true = family.epsilon(mu, DELTA)
    t0 = time.time()
    fam, cp = [], []
    exceed = 0
    for s in range(max(seeds, null)):
        z, zp = draw(p_star, mu, np.random.default_rng(s))
        r = audit_curve_claim(z, zp, family, DELTA, confidence=CONFIDENCE,
                              pilot_fraction=PILOT_FRACTION, n_thresholds=THRESHOLDS)
        if s < null:
            exceed += r.eps_family > true
        if s < seeds:
            fam.append(r.eps_family / true)
            cp.append(two_intervals(z, zp) / true)
    return float(np.mean(fam)), float(np.mean(cp)), exceed, time.time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--null", type=int, default=1000)
    args = ap.parse_args()
    if args.seeds < 1 or args.null < 0:
        print(f"error: --seeds must be >= 1 and --null >= 0, got --seeds={args.seeds} "
              f"--null={args.null}", file=sys.stderr)
        raise SystemExit(2)
    limit = int(stats.binom.ppf(0.999, args.null, 1.0 - CONFIDENCE)) if args.null else 0
    print(f"{'setting':<18}{'true eps':>9}{'eps_family/true':>17}{'two-CP/true':>13}"
          f"{'null > true':>13}{'(limit)':>8}{'s':>6}")
    for label, p_star, mu in SETTINGS:
        family = GaussianFamily() if p_star is None else SubsampledGaussianFamily(p_star)
        f, c, e, sec = setting(p_star, mu, args.seeds, args.null)
        print(f"{label:<18}{family.epsilon(mu, DELTA):>9.4f}{f:>17.4f}{c:>13.4f}"
              f"{e:>8}/{args.null:<4}{limit:>8}{sec:>6.0f}", flush=True)


if __name__ == "__main__":
    main()
