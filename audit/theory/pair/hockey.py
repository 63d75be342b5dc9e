"""Hockey-stick divergence and privacy profile δ(ε) of a pair, with error bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit._validate import check_epsilon
from audit.mixture import Mixture
from audit.theory.pair.masses import EPS_MAX, PairValue, U, check_pair, interval_masses
from audit.theory.pair.methods import pair_method

__all__ = ["PairValue", "PairProfile", "hockey_stick", "pair_delta", "pair_profile"]


@dataclass(frozen=True)
class PairProfile:
    """δ(ε) of a pair on a grid: ``deltas[i]`` ± ``errors[i]`` at ``epsilons[i]``."""

    epsilons: np.ndarray
    deltas: np.ndarray
    errors: np.ndarray


@dataclass(frozen=True)
class Hockey:
    value: float
    error: float
    p_in: float  # P(S)
    q_in: float  # Q(S)
    p_out: float  # P(S^c)
    q_out: float  # Q(S^c)
    n_roots: int | None
    root_bound: int | None


def hockey(P: Mixture, Q: Mixture, t: float) -> Hockey:
    """D_{e^t}(P‖Q) for any real t, with the masses of the optimal set and its complement."""
    sp = pair_method(P.noise).split(P, Q, t)
    edges = np.concatenate([[-np.inf], sp.cuts, [np.inf]])
    lo, hi = edges[:-1], edges[1:]
    mP, eP = interval_masses(P, lo, hi)
    mQ, eQ = interval_masses(Q, lo, hi)
    et = math.exp(t)
    pos, unc, neg = sp.labels == 1, sp.labels == 2, sp.labels == 0
    p_in, q_in = float(mP[pos].sum()), float(mQ[pos].sum())
    p_unc = float(mP[unc].sum())
    value = p_in - et * q_in + 0.5 * p_unc
    nterms = len(lo) * (P.n_components + Q.n_components)
    sel = pos | unc
    error = (
        0.5 * p_unc
        + float(eP[sel].sum() + et * eQ[sel].sum())
        + 8 * U * nterms * (p_in + et * q_in)
    )
    if sp.brackets:
        blo, bhi = np.array(sp.brackets).T
        bP, _ = interval_masses(P, blo, bhi)
        bQ, _ = interval_masses(Q, blo, bhi)
        error += float(bP.sum() + et * bQ.sum())
    value = min(max(value, 0.0), 1.0)
    return Hockey(
        value,
        error,
        p_in,
        q_in,
        float(mP[neg].sum()),
        float(mQ[neg].sum()),
        sp.n_roots,
        sp.root_bound,
    )


# --------------------------------------------------------------------------- public API
def hockey_stick(P: Mixture, Q: Mixture, eps: float) -> PairValue:
    """Hockey-stick divergence D_{e^ε}(P‖Q) = sup_S P(S) − e^ε Q(S) of two scalar mixtures.

    Parameters
    ----------
    P, Q : Mixture
        Scalar mixtures with the same noise kind and scale.
    eps : float
        ε ∈ [0, ∞).

    Returns
    -------
    PairValue
        ``value`` ∈ [0, 1] and ``error``: the exact divergence lies in value ± error (module
        docstring, "Error statement").

    Raises
    ------
    ValueError
        On vector mixtures, mismatched noise kind or scale, or ε outside [0, ∞).
    RuntimeError
        If more sign changes of p − e^ε q are found than total positivity allows (a bug).

    References
    ----------
    Balle & Wang (2018), "Improving the Gaussian mechanism", Thm 5 (hockey-stick form of δ(ε)).
    """
    P, Q = check_pair(P, Q)
    eps = check_epsilon(eps, "eps")
    if eps > EPS_MAX:
        raise ValueError(f"eps must be in [0, {EPS_MAX}], got eps={eps!r}")
    h = hockey(P, Q, eps)
    return PairValue(h.value, h.error, h.n_roots, h.root_bound)


def pair_delta(P: Mixture, Q: Mixture, eps: float) -> PairValue:
    """δ_pair(ε) = max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)); error = the larger of the two errors."""
    a, b = hockey_stick(P, Q, eps), hockey_stick(Q, P, eps)
    return PairValue(max(a.value, b.value), max(a.error, b.error))


def pair_profile(P: Mixture, Q: Mixture, eps_grid) -> PairProfile:
    """δ_pair(ε) (both orders) on a grid of ε ∈ [0, ∞)."""
    grid = np.atleast_1d(np.asarray(eps_grid, dtype=np.float64))
    if grid.ndim != 1 or grid.size == 0:
        raise ValueError(f"eps_grid must be a non-empty 1-D array, got shape {grid.shape}")
    vals = [pair_delta(P, Q, float(e)) for e in grid]
    return PairProfile(
        grid, np.array([v.value for v in vals]), np.array([v.error for v in vals])
    )
