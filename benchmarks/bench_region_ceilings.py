"""What a curve claim read off region counts can reach at 10⁵ calls, whatever the pilot.

For the settings of ``bench_curve_claims.py`` (family G_μ, or C_{p*}(G_μ), at the true μ),
each test is given the exact error rates of the threshold regions {x > t} of the output
and the expected counts of the 47,500-call main run per side (no pilot noise, no winner's
curse), and the table reports the member it refutes at 95 % as eps_family / true ε:

- ``joint``: the rule the audit uses (docs/THEORY.md §8.2: the two errors' joint region,
  Fisher's product of their p-values), exact corners at the best threshold;
- ``tangent``: one region and one slope s, the claim refuted where an upper bound on
  FNR + s·FPR lies below the member's tangent offset min_x f(x) + s·x (every f-DP point
  lies above it), the bound at the normal approximation (z₀.₉₅ standard errors);
- ``all thresholds``: Σ_j w_j (FNR_j + s_j·FPR_j) over 57 thresholds t ∈ [−1, 6], s_j the
  member's own tangent slope at FPR_j, the weights w ≥ 0 that maximise the
  signal-to-noise ratio (the covariances of the nested regions exact), normal
  approximation: the most any test that is linear in the region counts can read;
- ``information``: the Fisher-information ceiling of ``bench_curve_claims.py`` (every output
  read, z′'s law known: a parametric bound no region test reaches).

The normal approximation is not a bound; these are ceilings for comparison, not audits.

    python benchmarks/bench_region_ceilings.py

Output (this machine, 2026-12-07, one core, 4 s):

    setting            true eps    joint  tangent  all thresholds  information
    gaussian mu=0.5      1.9931   0.9654   0.9699          0.9733       0.9836
    gaussian mu=1        4.3772   0.9814   0.9838          0.9856       0.9915
    gaussian mu=2        9.9973   0.9886   0.9901          0.9910       0.9955
    C_0.1(G_1)           1.6845   0.7866   0.8145          0.8504       0.9003
    C_0.1(G_2)           6.5755   0.9386   0.9473          0.9535       0.9717
    C_0.3(G_1)           2.9215   0.9338   0.9425          0.9518       0.9686
    C_0.3(G_2)           8.2254   0.9703   0.9744          0.9770       0.9874

The audits themselves (``bench_curve_claims.py``, pilot-chosen joint regions) read 0.9577,
0.9772, 0.9786, 0.7345, 0.9341, 0.9246, 0.9625: within 0.004–0.010 of the ``joint`` column
but at C_0.1(G_1).
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_curve_claims import (
    CONFIDENCE,
    DELTA,
    PER_SIDE,
    PILOT_FRACTION,
    SETTINGS,
    information_ceiling,
)
from scipy.optimize import nnls
from scipy.special import log_ndtr, ndtr, ndtri

from audit.estimation.curve_claims import joint_region_corners
from audit.theory.tradeoff.families import GaussianFamily, SubsampledGaussianFamily

N = round(PER_SIDE * (1.0 - PILOT_FRACTION))  # the main run's calls per side
Z = float(ndtri(CONFIDENCE))
MU_TOP = 20.0


def delta_gaussian(eps, mu):
    """δ(ε) of G_μ: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (ε ≥ 0, μ > 0)."""
    return ndtr(-eps / mu + mu / 2) - np.exp(eps + log_ndtr(-eps / mu - mu / 2))


def offset(p, mu, s):
    """min_x f(x) + s·x for f = C_p(G_μ) (p = 1: G_μ) and s ≥ 1: 1 − p·δ_{G_μ}(ln(1 + (s − 1)/p))
    (the minimiser lies where f = p·G_μ + (1 − p)·Id, docs/THEORY.md §7)."""
    return 1.0 - p * delta_gaussian(np.log1p((s - 1.0) / p), mu)


def slope(p, mu, x):
    """The member's tangent slope −f′(x) at FPR x on its f_p piece (at least 1)."""
    return np.maximum(p * np.exp(mu * ndtri(1.0 - x) - mu * mu / 2) + (1.0 - p), 1.0)


def rates(p, mu, t):
    """FPR = Q(x > t), FNR = P(x ≤ t) of the threshold regions, and the mixture's CDF."""
    return 1.0 - ndtr(t), p * ndtr(t - mu) + (1.0 - p) * ndtr(t)


def largest_refuted(p, refutes) -> float:
    """The largest μ with ``refutes(μ)`` (monotone: every smaller member is refuted too)."""
    lo, hi = 0.0, MU_TOP
    if not refutes(1e-9):
        return 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if refutes(mid) else (lo, mid)
    return lo


def joint(p, mu, family) -> float:
    best = 0.0
    for t in np.linspace(-1.0, 7.0, 161):
        a, b = rates(p, mu, t)
        if a * N >= 0.5:
            corners = joint_region_corners(a * N, N, b * N, N, 1.0 - CONFIDENCE)
            best = max(best, float(np.min(family.boundary(*corners))))
    return best


def tangent(p, mu) -> float:
    t = np.linspace(-1.0, 7.0, 161)[:, None]
    s = np.exp(np.linspace(0.0, 12.0, 121))[None, :]
    a, b = rates(p, mu, t)
    stat = b + s * a + Z * np.sqrt((b * (1 - b) + s * s * a * (1 - a)) / N)
    ok = a * N >= 0.5
    return largest_refuted(p, lambda m: bool(np.any(ok & (offset(p, m, s) > stat))))


def all_thresholds(p, mu) -> float:
    t = np.linspace(-1.0, 6.0, 57)
    a, b = rates(p, mu, t)
    lo, hi = np.minimum.outer(t, t), np.maximum.outer(t, t)
    cov_b = (rates(p, mu, lo)[1] - np.outer(b, b)) / N
    cov_a = (rates(p, mu, hi)[0] - np.outer(a, a)) / N

    def refutes(m):
        s = slope(p, m, a)
        d = offset(p, m, s) - (b + s * a)  # each threshold's signal under member m
        if d.max() <= 0.0:
            return False
        cov = cov_b + np.outer(s, s) * cov_a
        scale = 1.0 / np.sqrt(np.diag(cov))
        chol = np.linalg.cholesky(cov * np.outer(scale, scale) + 1e-12 * np.eye(t.size))
        lam = 1e4  # min w'Cw subject to d·w = 1, w ≥ 0, as one least-squares problem
        w, _ = nnls(np.vstack([chol.T, lam * (d * scale)[None, :]]),
                    np.concatenate([np.zeros(t.size), [lam]]), maxiter=10_000)
        w = w * scale
        return bool(w.any() and d @ w >= Z * np.sqrt(w @ cov @ w))

    return largest_refuted(p, refutes)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # takes none
    print(f"{'setting':<18}{'true eps':>9}{'joint':>9}{'tangent':>9}{'all thresholds':>16}"
          f"{'information':>13}")
    for label, p_star, mu in SETTINGS:
        family = GaussianFamily() if p_star is None else SubsampledGaussianFamily(p_star)
        p = 1.0 if p_star is None else p_star
        true = family.epsilon(mu, DELTA)
        cols = [family.epsilon(m, DELTA) / true for m in
                (joint(p, mu, family), tangent(p, mu), all_thresholds(p, mu))]
        print(f"{label:<18}{true:>9.4f}" + "".join(f"{c:>{w}.4f}" for c, w in
                                                   zip(cols, (9, 9, 16), strict=True))
              + f"{information_ceiling(p_star, mu):>13.4f}", flush=True)


if __name__ == "__main__":
    main()
