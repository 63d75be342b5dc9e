"""ε(δ) of a pair: sup |log p/q| at δ = 0, verified root finding on δ_pair(ε) for δ > 0."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from audit._numeric import brentq
from audit._validate import check_delta
from audit.mixture import Mixture, NoiseKind
from audit.theory.pair.hockey import EPS_MAX, PairValue, pair_delta
from audit.theory.pair.masses import U, check_pair, logratio

__all__ = ["pair_epsilon"]


def max_abs_logratio(P: Mixture, Q: Mixture) -> PairValue:
    """sup_x |log p(x)/q(x)| (ε at δ = 0)."""
    if P.noise is NoiseKind.LAPLACE:
        # On each breakpoint interval p/q is a Möbius function of e^{2x/b}: monotone, so the
        # supremum is at a breakpoint or one of the limits x → ±∞.
        b = P.scale
        bps = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
        Lb, _ = logratio(P, Q, 0.0, bps)
        sP, sQ = P.scalar_shifts, Q.scalar_shifts
        right = special.logsumexp(sP / b, b=P.weights) - special.logsumexp(sQ / b, b=Q.weights)
        left = special.logsumexp(-sP / b, b=P.weights) - special.logsumexp(-sQ / b, b=Q.weights)
        v = float(max(np.abs(Lb).max(), abs(right), abs(left)))
        return PairValue(v, 1e-12 * (1 + v))
    Pm, Qm = P.merged(15), Q.merged(15)
    sP, sQ = Pm.scalar_shifts, Qm.scalar_shifts
    if sP.min() != sQ.min() or sP.max() != sQ.max():
        return PairValue(math.inf, 0.0)
    if sP.size == sQ.size and np.array_equal(sP, sQ) and np.array_equal(Pm.weights, Qm.weights):
        return PairValue(0.0, 0.0)
    if sP.size == 1:
        return PairValue(abs(math.log(Pm.weights[0] / Qm.weights[0])), 0.0)
    # Bounded ratio: branch and bound with the Lipschitz constant of L, over a range outside
    # which L is within 1e-15 of its limits at ±∞.
    sig = P.scale
    gap = float(np.diff(np.unique(np.concatenate([sP, sQ]))).min())
    span = sig**2 / gap * 40.0
    xs = np.linspace(sP.min() - span - sig, sP.max() + span + sig, 4097)
    lip = max(abs(sP.max() - sQ.min()), abs(sQ.max() - sP.min())) / sig**2
    lims = [
        abs(math.log(Pm.weights[-1] / Qm.weights[-1])),
        abs(math.log(Pm.weights[0] / Qm.weights[0])),
    ]
    best = max(lims)
    lo, hi = xs[:-1], xs[1:]
    tol = 1e-7 * (1.0 + best)
    gap = 0.0
    for _ in range(60):
        La, _ = logratio(P, Q, 0.0, lo)
        Lb, _ = logratio(P, Q, 0.0, hi)
        best = max(best, float(np.abs(La).max()), float(np.abs(Lb).max()))
        ub = np.maximum(np.abs(La), np.abs(Lb)) + lip * (hi - lo) / 2
        keep = ub > best + tol
        gap = float(max(ub.max() - best, 0.0))
        if not keep.any() or 2 * keep.sum() > 200_000:
            break
        lo, hi = lo[keep], hi[keep]
        mid = 0.5 * (lo + hi)
        lo, hi = np.concatenate([lo, mid]), np.concatenate([mid, hi])
    # The supremum lies in [best, best + gap] (Lipschitz bound on the remaining intervals).
    return PairValue(best + gap / 2, gap / 2 + 1e-12 * (1.0 + best))


def pair_epsilon(P: Mixture, Q: Mixture, delta: float) -> PairValue:
    """ε_pair(δ): the smallest ε ≥ 0 with δ_pair(ε) ≤ δ (both orders).

    Parameters
    ----------
    P, Q : Mixture
        Scalar mixtures with the same noise kind and scale.
    delta : float
        δ ∈ [0, 1].

    Returns
    -------
    PairValue
        ``value`` and ``error``: the exact ε_pair(δ) lies in value ± error. For δ = 0 this is
        sup |log p/q| (exact at breakpoints for Laplace; ``inf`` for Gaussian mixtures whose
        smallest or largest shifts differ). For δ > 0 the bracket is verified with the
        δ-errors: at value − error the lower bound on δ_pair exceeds δ, and at value + error
        the upper bound on δ_pair is ≤ δ.
    """
    P, Q = check_pair(P, Q)
    delta = check_delta(delta)
    if delta == 0.0:
        return max_abs_logratio(P, Q)
    d0 = pair_delta(P, Q, 0.0)
    if d0.value + d0.error <= delta:
        return PairValue(0.0, 0.0)

    def g(e: float) -> float:
        return pair_delta(P, Q, e).value - delta

    if P.noise is NoiseKind.LAPLACE:
        hi = max_abs_logratio(P, Q).value + 1e-9
    else:
        hi = 1.0
        while g(hi) > 0:
            hi *= 2
            if hi > EPS_MAX:
                raise ValueError(f"delta={delta!r} needs eps > {EPS_MAX}; too small to resolve")
    if g(hi) > 0:
        return PairValue(hi, 0.0)
    if g(0.0) <= 0:
        lo_val = 0.0
    else:
        lo_val = brentq(g, 0.0, hi, xtol=1e-12, rtol=8 * U, maxiter=200)
    tau = 1e-11 * (1 + lo_val)
    for _ in range(40):
        a, b = max(0.0, lo_val - tau), lo_val + tau
        da = pair_delta(P, Q, a) if a > 0 else d0
        db = pair_delta(P, Q, b)
        ok_lo = a == 0.0 or da.value - da.error > delta
        if ok_lo and db.value + db.error <= delta:
            return PairValue(lo_val, tau)
        tau *= 4
    # The bracket never verified: say so rather than return a number that may not hold.
    raise RuntimeError(
        f"pair_epsilon could not verify a bracket around eps={lo_val!r} (delta={delta!r})"
    )
