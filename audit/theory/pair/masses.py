"""Exact masses of intervals under a scalar mixture, the log density ratio of a pair, and the
value type every exact-pair quantity is returned in.

Upper tails are summed via the survival function, so tiny masses keep their relative
accuracy; every mass comes with a bound on its rounding error (u = 2^-53 per operation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit.mixture import Mixture
from audit.noise import noise_of

#: unit round-off of a double
U = 2.0**-53
#: Largest ε at which a divergence is evaluated (e^ε stays a finite double).
EPS_MAX = 700.0


@dataclass(frozen=True)
class PairValue:
    """An exact-pair quantity with a bound on its absolute numerical error.

    The true value lies in ``[value - error, value + error]``. ``n_roots`` is the number of
    sign changes of p − e^t q located and ``root_bound`` the a-priori bound on it (Gaussian:
    total positivity; Laplace: one per breakpoint interval); ``None`` where not applicable.
    """

    value: float
    error: float
    n_roots: int | None = None
    root_bound: int | None = None


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
def tails(noise, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cdf, sf) of the standard noise at z, each accurate in its own tail."""
    law = noise_of(noise)
    return law.cdf(z), law.sf(z)


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

