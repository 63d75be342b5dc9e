"""ε(δ) of a pair: sup |log p/q| at δ = 0, verified root finding on δ_pair(ε) for δ > 0."""

from __future__ import annotations

from audit._numeric import brentq
from audit._validate import check_delta
from audit.mixture import Mixture
from audit.theory.pair.hockey import PairValue, pair_delta
from audit.theory.pair.masses import U, check_pair
from audit.theory.pair.methods import pair_method

__all__ = ["pair_epsilon"]


def max_abs_logratio(P: Mixture, Q: Mixture) -> PairValue:
    """sup_x |log p(x)/q(x)| (ε at δ = 0), by the noise's own method."""
    return pair_method(P.noise).sup_log_ratio(P, Q)


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

    hi = pair_method(P.noise).epsilon_bracket(P, Q, g, delta)
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
