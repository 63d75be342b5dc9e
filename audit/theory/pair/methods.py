"""The per-noise steps of the exact-pair integrator: one :class:`PairMethod` per noise class.

Everything else in :mod:`audit.theory.pair` is written once for every noise; what depends on
the shape of the density is collected here, keyed by the noise class of :mod:`audit.noise`:

* Laplace: log p − log q is, between consecutive shifts, the log of a Möbius function of
  e^{2x/b}, so it is monotone there: its supremum is at a shift or a limit x → ±∞ (finite
  for every pair), and each breakpoint interval holds at most one closed-form root of
  p − e^t q (:func:`audit.theory.pair.split.laplace_split`).
* Gaussian: the kernel is totally positive, which bounds the sign changes of p − e^t q; they
  are found by certified grid refinement (:func:`audit.theory.pair.split.gaussian_split`);
  sup |log p/q| is infinite unless the extreme shifts agree, and otherwise found by branch
  and bound with the Lipschitz constant of the log ratio.

A new continuous noise adds one :class:`PairMethod` to :data:`PAIR_METHODS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.noise import AdditiveNoise, GaussianNoise, LaplaceNoise, noise_of
from audit.theory.pair.masses import EPS_MAX, PairValue, logratio
from audit.theory.pair.split import Split, gaussian_split, laplace_split

__all__ = ["PairMethod", "PAIR_METHODS", "pair_method"]


@dataclass(frozen=True)
class PairMethod:
    """How the exact-pair integrator handles one noise (P, Q scalar, same noise and scale).

    ``split(P, Q, t)``: the optimal set {p > e^t q} as a :class:`Split`;
    ``sup_log_ratio(P, Q)``: sup_x |log p(x)/q(x)| as a :class:`PairValue`;
    ``t_range(P, Q)``: T > 0 such that the trade-off lines with |t| ≤ T suffice;
    ``epsilon_bracket(P, Q, g, delta)``: an ε with g(ε) = δ_pair(ε) − δ ≤ 0 (or the search
    limit), g decreasing; ``closed_form_split``: whether the split costs no root finding.
    """

    split: Callable[[Mixture, Mixture, float], Split]
    sup_log_ratio: Callable[[Mixture, Mixture], PairValue]
    t_range: Callable[[Mixture, Mixture], float]
    epsilon_bracket: Callable[[Mixture, Mixture, Callable[[float], float], float], float]
    closed_form_split: bool


# ------------------------------------------------------------------------------ Laplace
def _laplace_sup_log_ratio(P: Mixture, Q: Mixture) -> PairValue:
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


def _laplace_sup_bound(P: Mixture, Q: Mixture, *_) -> float:
    """sup |log p/q| (plus a margin) bounds both ε_pair(δ) for every δ and the useful t."""
    return _laplace_sup_log_ratio(P, Q).value + 1e-9


# ----------------------------------------------------------------------------- Gaussian
def _gaussian_sup_log_ratio(P: Mixture, Q: Mixture) -> PairValue:
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


def _gaussian_t_range(P: Mixture, Q: Mixture) -> float:
    sP, sQ = P.scalar_shifts, Q.scalar_shifts
    D = max(abs(sP.max() - sQ.min()), abs(sQ.max() - sP.min())) / P.scale
    return min(D * (D / 2 + 9.0) + 1.0, 60.0)


def _gaussian_epsilon_bracket(P: Mixture, Q: Mixture, g: Callable[[float], float],
                              delta: float) -> float:
    """Doubling from ε = 1 (sup |log p/q| may be infinite)."""
    hi = 1.0
    while g(hi) > 0:
        hi *= 2
        if hi > EPS_MAX:
            raise ValueError(f"delta={delta!r} needs eps > {EPS_MAX}; too small to resolve")
    return hi


#: the integrator's steps per noise class
PAIR_METHODS: dict[type[AdditiveNoise], PairMethod] = {
    LaplaceNoise: PairMethod(laplace_split, _laplace_sup_log_ratio, _laplace_sup_bound,
                             _laplace_sup_bound, closed_form_split=True),
    GaussianNoise: PairMethod(gaussian_split, _gaussian_sup_log_ratio, _gaussian_t_range,
                              _gaussian_epsilon_bracket, closed_form_split=False),
}


def pair_method(noise: NoiseKind | str | AdditiveNoise) -> PairMethod:
    """The exact-pair integrator's steps for this noise.

    Raises
    ------
    ValueError
        For an unknown noise, or one the integrator does not handle.
    """
    law = noise_of(noise)
    method = PAIR_METHODS.get(type(law))
    if method is None:  # pragma: no cover - every noise class of audit.noise is listed
        raise ValueError(f"the exact-pair integrator has no method for noise {law.kind.value!r}")
    return method
