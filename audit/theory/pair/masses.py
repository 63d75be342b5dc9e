"""Exact masses of intervals under a scalar mixture, and the log density ratio of a pair.

Upper tails are summed via the survival function, so tiny masses keep their relative
accuracy; every mass comes with a bound on its rounding error (u = 2^-53 per operation).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from audit.mixture import Mixture, NoiseKind

#: unit round-off of a double
U = 2.0**-53


def check_pair(P: object, Q: object) -> tuple[Mixture, Mixture]:
    for name, M in (("P", P), ("Q", Q)):
        if not isinstance(M, Mixture):
            raise ValueError(f"{name} must be an audit.mixture.Mixture, got {name}={M!r}")
        if not M.is_scalar:
            raise ValueError(f"{name} must be a scalar mixture (dim = 1), got dim={M.dim}")
    if P.noise is not Q.noise:
        raise ValueError(
            f"P and Q must have the same noise kind, got P.noise={P.noise.value!r}, "
            f"Q.noise={Q.noise.value!r}"
        )
    if P.scale != Q.scale:
        raise ValueError(
            f"P and Q must have the same noise scale, got P.scale={P.scale!r}, "
            f"Q.scale={Q.scale!r}"
        )
    return P, Q


# --------------------------------------------------------------------------- masses
def tails(noise: NoiseKind, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cdf, sf) of the standard noise at z, each accurate in its own tail."""
    if noise is NoiseKind.GAUSSIAN:
        return special.ndtr(z), special.ndtr(-z)
    with np.errstate(over="ignore"):
        lo = np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1 - 0.5 * np.exp(-np.abs(z)))
        hi = np.where(z > 0, 0.5 * np.exp(-np.maximum(z, 0.0)), 1 - 0.5 * np.exp(-np.abs(z)))
    return lo, hi


def interval_masses(
    M: Mixture, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """M([lo_i, hi_i]) per interval and a bound on each one's rounding error."""
    lo = np.asarray(lo, dtype=np.float64)[:, None]
    hi = np.asarray(hi, dtype=np.float64)[:, None]
    s = M.scalar_shifts[None, :]
    with np.errstate(invalid="ignore"):
        za = (lo - s) / M.scale
        zb = (hi - s) / M.scale
    cdf_a, sf_a = tails(M.noise, za)
    cdf_b, sf_b = tails(M.noise, zb)
    upper = za >= 0  # whole interval right of the shift: use upper tails
    lower = zb <= 0  # whole interval left of the shift: use lower tails
    comp = np.where(upper, sf_a - sf_b, np.where(lower, cdf_b - cdf_a, 1.0 - cdf_a - sf_b))
    scale_of_terms = np.where(upper, sf_a, np.where(lower, cdf_b, 1.0))
    comp = np.maximum(comp, 0.0)
    masses = comp @ M.weights
    err = 4 * U * (scale_of_terms @ M.weights) * M.n_components
    return masses, err



def logratio(P: Mixture, Q: Mixture, t: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lp = P.logpdf(np.atleast_1d(x))
    lq = Q.logpdf(np.atleast_1d(x))
    return lp - lq - t, 1e-13 * (1.0 + np.abs(lp) + np.abs(lq) + abs(t))



def logdiff(la: float, lb: float) -> tuple[float, float]:
    """sign and log|e^la − e^lb|."""
    if la == lb:
        return 0.0, -np.inf
    hi, lo = (la, lb) if la > lb else (lb, la)
    sign = 1.0 if la > lb else -1.0
    return sign, hi + math.log(-math.expm1(lo - hi)) if np.isfinite(lo) else hi

