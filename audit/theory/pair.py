"""Exact privacy of one audited pair (P, Q) of scalar noise mixtures.

For a neighbouring pair (z, z') the output laws P = A_D(z) and Q = A_D(z') are explicit finite
mixtures (``audit.mixture.Mixture``) with the same noise kind and scale. This module computes
their hockey-stick divergence, privacy profile, ε(δ) and trade-off curve, each with a stated
bound on its numerical error (THEORY §8: the ceiling ε_pair of every audit).

Method
------
The optimal set of D_{e^t}(P‖Q) = sup_S P(S) − e^t Q(S) is S* = {p > e^t q}. It is located as
an exact union of intervals, and its P- and Q-masses are summed from the mixtures' closed-form
CDF/SF component by component (upper tails via SF, so tiny masses keep their relative accuracy).

* Laplace (common scale b): between consecutive breakpoints (all shifts of both mixtures)
  p − e^t q = A e^{x/b} + C e^{−x/b}, which is constant-signed or strictly monotone, so each
  piece holds at most one root, found in closed form x = m + (b/2) ln(−C/A) (log space).
* Gaussian (common σ): the kernel is totally positive, so p − e^t q has at most as many sign
  changes as its signed coefficient sequence (w_k at s_k, −e^t w'_k at s'_k, sorted by shift)
  (Karlin, *Total Positivity*, 1968, Thm 3.1 of ch. 5). All roots lie in an explicit range (the
  top/bottom component dominates outside it). The log density ratio L = log p − log q − t is
  evaluated on a grid over that range; grid intervals are refined by bisection until either the
  number of sign changes found equals the bound (then every root is isolated: one brentq per
  sign-changing interval) or every interval is certified root-free by the Lipschitz bound
  |L'| ≤ max(|s^P_max − s^Q_min|, |s^Q_max − s^P_min|)/σ² or is shorter than the tolerance.
  Intervals still undecided are kept as an explicit uncertain set U whose mass enters the error.

Error statement
---------------
``PairValue(value, error)``: the exact quantity lies in [value − error, value + error]. The error
adds (i) for each root r, the mass P(B) + e^t Q(B) of a bracket B = [r − τ, r + τ] verified to
contain the root (τ ≈ 1e-13·scale), (ii) half the P-mass of the uncertain set U (zero when the
sign-change bound is met, the usual case), (iii) floating-point rounding of the mass sums
(8·u·(number of terms)·(P(S) + e^t Q(S)), u = 2^-53).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from audit._validate import check_delta, check_epsilon
from audit.mixture import Mixture, NoiseKind

try:  # built concurrently; fall back to a local class until it lands
    from audit.theory.tradeoff import PiecewiseLinearTradeoff as _PLT
except ImportError:  # pragma: no cover - depends on the tree state
    _PLT = None

__all__ = [
    "PairValue",
    "PairProfile",
    "PairTradeoffBounds",
    "hockey_stick",
    "pair_delta",
    "pair_epsilon",
    "pair_profile",
    "pair_tradeoff",
    "pair_tradeoff_bounds",
    "symmetric_pair_tradeoff",
]

_U = 2.0**-53
_GRID = 1024
_MAX_POINTS = 200_000
_EPS_MAX = 700.0


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


@dataclass(frozen=True)
class PairProfile:
    """δ(ε) of a pair on a grid: ``deltas[i]`` ± ``errors[i]`` at ``epsilons[i]``."""

    epsilons: np.ndarray
    deltas: np.ndarray
    errors: np.ndarray


# --------------------------------------------------------------------------- validation
def _check_pair(P: object, Q: object) -> tuple[Mixture, Mixture]:
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
def _tails(noise: NoiseKind, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cdf, sf) of the standard noise at z, each accurate in its own tail."""
    if noise is NoiseKind.GAUSSIAN:
        return special.ndtr(z), special.ndtr(-z)
    with np.errstate(over="ignore"):
        lo = np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1 - 0.5 * np.exp(-np.abs(z)))
        hi = np.where(z > 0, 0.5 * np.exp(-np.maximum(z, 0.0)), 1 - 0.5 * np.exp(-np.abs(z)))
    return lo, hi


def _interval_masses(
    M: Mixture, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """M([lo_i, hi_i]) per interval and a bound on each one's rounding error."""
    lo = np.asarray(lo, dtype=np.float64)[:, None]
    hi = np.asarray(hi, dtype=np.float64)[:, None]
    s = M.scalar_shifts[None, :]
    with np.errstate(invalid="ignore"):
        za = (lo - s) / M.scale
        zb = (hi - s) / M.scale
    cdf_a, sf_a = _tails(M.noise, za)
    cdf_b, sf_b = _tails(M.noise, zb)
    upper = za >= 0  # whole interval right of the shift: use upper tails
    lower = zb <= 0  # whole interval left of the shift: use lower tails
    comp = np.where(upper, sf_a - sf_b, np.where(lower, cdf_b - cdf_a, 1.0 - cdf_a - sf_b))
    scale_of_terms = np.where(upper, sf_a, np.where(lower, cdf_b, 1.0))
    comp = np.maximum(comp, 0.0)
    masses = comp @ M.weights
    err = 4 * _U * (scale_of_terms @ M.weights) * M.n_components
    return masses, err


# --------------------------------------------------------------------------- sets
@dataclass
class _Split:
    """The real line cut at ``cuts`` into segments labelled +1 (in S), 0 (not in S) or
    2 (uncertain), plus verified root brackets."""

    cuts: np.ndarray
    labels: np.ndarray
    brackets: list[tuple[float, float]]
    n_roots: int | None
    root_bound: int | None


def _logratio(P: Mixture, Q: Mixture, t: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lp = P.logpdf(np.atleast_1d(x))
    lq = Q.logpdf(np.atleast_1d(x))
    return lp - lq - t, 1e-13 * (1.0 + np.abs(lp) + np.abs(lq) + abs(t))


def _bracket_root(P, Q, t, r, a, b, s_left) -> tuple[float, float]:
    """A bracket [r − τ, r + τ] ⊂ [a, b] on which L changes sign from ``s_left``."""
    tau = 1e-13 * (P.scale + abs(r))
    for _ in range(60):
        lo, hi = max(a, r - tau), min(b, r + tau)
        Lv, _ = _logratio(P, Q, t, np.array([lo, hi]))
        if np.sign(Lv[0]) != -s_left and np.sign(Lv[1]) != s_left:
            return lo, hi
        tau *= 4
    return a, b


def _root_in(P, Q, t, a, b, La) -> tuple[float, tuple[float, float]]:
    """Root of L in [a, b] (exactly one sign change there) and a verified bracket."""

    def f(x: float) -> float:
        return float(_logratio(P, Q, t, np.array([x]))[0][0])

    r = optimize.brentq(f, a, b, xtol=1e-14 * P.scale, rtol=8 * _U, maxiter=200)
    return r, _bracket_root(P, Q, t, r, a, b, np.sign(La))


def _split_from_roots(P, Q, t, roots, brackets, x_probe_left, n_roots, bound) -> _Split:
    cuts = np.asarray(sorted(roots), dtype=np.float64)
    edges = np.concatenate([[-np.inf], cuts, [np.inf]])
    lo, hi = edges[:-1], edges[1:]
    probe = np.where(
        np.isinf(lo) & np.isinf(hi),
        x_probe_left,
        np.where(np.isinf(lo), hi - P.scale, np.where(np.isinf(hi), lo + P.scale, (lo + hi) / 2)),
    )
    Lv, _ = _logratio(P, Q, t, probe)
    labels = (Lv > 0).astype(np.int64)
    return _Split(cuts, labels, brackets, n_roots, bound)


def _laplace_split(P: Mixture, Q: Mixture, t: float) -> _Split:
    b = P.scale
    bps = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    Lb, _ = _logratio(P, Q, t, bps)
    lwP, lwQ = np.log(P.weights), np.log(Q.weights)
    roots: list[float] = []
    brackets: list[tuple[float, float]] = []
    cuts = list(bps)
    for j in range(len(bps) - 1):
        a, c = bps[j], bps[j + 1]
        sa, sc = np.sign(Lb[j]), np.sign(Lb[j + 1])
        if sa * sc >= 0:
            continue  # constant sign or strictly monotone without a crossing inside
        m = 0.5 * (a + c)

        def coef(M, lw, sel_right, m=m, a=a, c=c):
            s = M.scalar_shifts
            if sel_right:
                return special.logsumexp(lw[s >= c] - (s[s >= c] - m) / b)
            return special.logsumexp(lw[s <= a] - (m - s[s <= a]) / b)

        with np.errstate(divide="ignore"):
            sA, lA = _logdiff(coef(P, lwP, True), t + coef(Q, lwQ, True))
            sC, lC = _logdiff(coef(P, lwP, False), t + coef(Q, lwQ, False))
        r = m + 0.5 * b * (lC - lA) if (sA * sC < 0) else m
        if not (a < r < c):
            r, br = _root_in(P, Q, t, a, c, Lb[j])
        else:
            br = _bracket_root(P, Q, t, r, a, c, sa)
            if br == (a, c):  # closed form inaccurate (near-cancelling coefficients)
                r, br = _root_in(P, Q, t, a, c, Lb[j])
        roots.append(r)
        brackets.append(br)
    split = _split_from_roots(P, Q, t, cuts + roots, brackets, bps[0], len(roots), len(bps) - 1)
    return split


def _logdiff(la: float, lb: float) -> tuple[float, float]:
    """sign and log|e^la − e^lb|."""
    if la == lb:
        return 0.0, -np.inf
    hi, lo = (la, lb) if la > lb else (lb, la)
    sign = 1.0 if la > lb else -1.0
    return sign, hi + math.log(-math.expm1(lo - hi)) if np.isfinite(lo) else hi


def _gauss_coefficients(P: Mixture, Q: Mixture, t: float):
    """Sorted shifts, signs and log|coefficient| of p − e^t q as Σ c_k φ((x − s_k)/σ)."""
    shifts = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    lp = np.full(shifts.shape, -np.inf)
    lq = np.full(shifts.shape, -np.inf)
    for M, arr, off in ((P, lp, 0.0), (Q, lq, t)):
        idx = np.searchsorted(shifts, M.scalar_shifts)
        arr[:] = np.log(np.bincount(idx, weights=M.weights, minlength=len(shifts))) + off
    sign = np.zeros(shifts.shape)
    logc = np.full(shifts.shape, -np.inf)
    for k in range(len(shifts)):
        sign[k], logc[k] = _logdiff(lp[k], lq[k])
    keep = sign != 0
    return shifts[keep], sign[keep], logc[keep]


def _gaussian_split(P: Mixture, Q: Mixture, t: float) -> _Split:
    sig = P.scale
    with np.errstate(divide="ignore"):
        s, sg, lc = _gauss_coefficients(P, Q, t)
    if s.size == 0:  # p = e^t q identically
        return _Split(np.array([]), np.array([0]), [], 0, 0)
    bound = int(np.count_nonzero(sg[1:] != sg[:-1]))
    if bound == 0:
        return _Split(np.array([]), np.array([int(sg[0] > 0)]), [], 0, 0)
    # Range containing every root: beyond it the extreme component dominates the rest.
    gR, gL = s[-1] - s[-2], s[1] - s[0]
    xR = s[-1] + sig**2 / gR * max(0.0, special.logsumexp(lc[:-1]) - lc[-1]) + sig
    xL = s[0] - sig**2 / gL * max(0.0, special.logsumexp(lc[1:]) - lc[0]) - sig
    sP, sQ = P.scalar_shifts, Q.scalar_shifts
    lip = max(abs(sP.max() - sQ.min()), abs(sQ.max() - sP.min())) / sig**2
    tol = 1e-12 * sig
    pts = np.linspace(xL, xR, _GRID + 1)
    Lv, eta = _logratio(P, Q, t, pts)
    while True:
        # Only signs that exceed the evaluation error count: rounding noise near a root or
        # where p and e^t q nearly cancel must not be read as extra sign changes.
        certain = np.where(np.abs(Lv) > eta, np.sign(Lv), 0.0)
        nz = certain[certain != 0]
        found = int(np.count_nonzero(nz[1:] != nz[:-1]))
        if found > bound:
            raise RuntimeError(
                f"found {found} sign changes of p - e^t q but total positivity allows {bound}; "
                "numerical failure"
            )
        if found == bound:
            break
        h = np.diff(pts)
        cert = np.abs(Lv[:-1]) + np.abs(Lv[1:]) > lip * h + eta[:-1] + eta[1:]
        active = ~cert & (h > tol + 8 * _U * np.abs(pts[:-1]))
        if not active.any() or pts.size + active.sum() > _MAX_POINTS:
            # Sign pattern not fully resolved: non-certified intervals become uncertain.
            labels = np.where(cert, (Lv[:-1] > 0).astype(np.int64), 2)
            cuts = pts
            labels = np.concatenate([[int(sg[0] > 0)], labels, [int(sg[-1] > 0)]])
            return _Split(cuts, labels, [], found, bound)
        mids = 0.5 * (pts[:-1] + pts[1:])[active]
        Lm, em = _logratio(P, Q, t, mids)
        order = np.argsort(np.concatenate([pts, mids]), kind="stable")
        pts = np.concatenate([pts, mids])[order]
        Lv = np.concatenate([Lv, Lm])[order]
        eta = np.concatenate([eta, em])[order]
    # Exactly `bound` sign changes found: each changing gap between nonzero points holds
    # exactly one root; everything else has constant sign.
    certain = np.where(np.abs(Lv) > eta, np.sign(Lv), 0.0)
    nzi = np.flatnonzero(certain != 0)
    roots, brackets = [], []
    for i, j in zip(nzi[:-1], nzi[1:], strict=True):
        if certain[i] != certain[j]:
            r, br = _root_in(P, Q, t, pts[i], pts[j], Lv[i])
            roots.append(r)
            brackets.append(br)
    return _split_from_roots(P, Q, t, roots, brackets, 0.5 * (xL + xR), found, bound)


def _split(P: Mixture, Q: Mixture, t: float) -> _Split:
    if P.noise is NoiseKind.LAPLACE:
        return _laplace_split(P, Q, t)
    return _gaussian_split(P, Q, t)


@dataclass(frozen=True)
class _Hockey:
    value: float
    error: float
    p_in: float  # P(S)
    q_in: float  # Q(S)
    p_out: float  # P(S^c)
    q_out: float  # Q(S^c)
    n_roots: int | None
    root_bound: int | None


def _hockey(P: Mixture, Q: Mixture, t: float) -> _Hockey:
    """D_{e^t}(P‖Q) for any real t, with the masses of the optimal set and its complement."""
    sp = _split(P, Q, t)
    edges = np.concatenate([[-np.inf], sp.cuts, [np.inf]])
    lo, hi = edges[:-1], edges[1:]
    mP, eP = _interval_masses(P, lo, hi)
    mQ, eQ = _interval_masses(Q, lo, hi)
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
        + 8 * _U * nterms * (p_in + et * q_in)
    )
    if sp.brackets:
        blo, bhi = np.array(sp.brackets).T
        bP, _ = _interval_masses(P, blo, bhi)
        bQ, _ = _interval_masses(Q, blo, bhi)
        error += float(bP.sum() + et * bQ.sum())
    value = min(max(value, 0.0), 1.0)
    return _Hockey(
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
    P, Q = _check_pair(P, Q)
    eps = check_epsilon(eps, "eps")
    if eps > _EPS_MAX:
        raise ValueError(f"eps must be in [0, {_EPS_MAX}], got eps={eps!r}")
    h = _hockey(P, Q, eps)
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


def _max_abs_logratio(P: Mixture, Q: Mixture) -> PairValue:
    """sup_x |log p(x)/q(x)| (ε at δ = 0)."""
    if P.noise is NoiseKind.LAPLACE:
        # On each breakpoint interval p/q is a Möbius function of e^{2x/b}: monotone, so the
        # supremum is at a breakpoint or one of the limits x → ±∞.
        b = P.scale
        bps = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
        Lb, _ = _logratio(P, Q, 0.0, bps)
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
        La, _ = _logratio(P, Q, 0.0, lo)
        Lb, _ = _logratio(P, Q, 0.0, hi)
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
    P, Q = _check_pair(P, Q)
    delta = check_delta(delta)
    if delta == 0.0:
        return _max_abs_logratio(P, Q)
    d0 = pair_delta(P, Q, 0.0)
    if d0.value + d0.error <= delta:
        return PairValue(0.0, 0.0)

    def g(e: float) -> float:
        return pair_delta(P, Q, e).value - delta

    if P.noise is NoiseKind.LAPLACE:
        hi = _max_abs_logratio(P, Q).value + 1e-9
    else:
        hi = 1.0
        while g(hi) > 0:
            hi *= 2
            if hi > _EPS_MAX:
                raise ValueError(f"delta={delta!r} needs eps > {_EPS_MAX}; too small to resolve")
    if g(hi) > 0:
        return PairValue(hi, 0.0)
    if g(0.0) <= 0:
        lo_val = 0.0
    else:
        lo_val = optimize.brentq(g, 0.0, hi, xtol=1e-12, rtol=8 * _U, maxiter=200)
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


# --------------------------------------------------------------------------- trade-off
class _LocalPiecewiseLinear:
    """Minimal piecewise-linear trade-off function (used until audit.theory.tradeoff is available)."""

    symmetric = False

    def __init__(self, alphas, betas):
        self.alphas = np.asarray(alphas, dtype=np.float64)
        self.betas = np.asarray(betas, dtype=np.float64)

    def __call__(self, alpha):
        a = np.asarray(alpha, dtype=np.float64)
        out = np.interp(a, self.alphas, self.betas)
        return float(out) if np.ndim(alpha) == 0 else out

    def inverse(self, beta):
        b = np.asarray(beta, dtype=np.float64)
        out = np.interp(b, self.betas[::-1], self.alphas[::-1])
        return float(out) if np.ndim(beta) == 0 else out


def _piecewise(alphas, betas):
    if _PLT is not None:
        return _PLT(alphas, betas, symmetric=False, convexify=True)
    return _LocalPiecewiseLinear(alphas, betas)


@dataclass(frozen=True)
class PairTradeoffBounds:
    """Two-sided enclosure of T(P, Q): ``lower`` ≤ T ≤ ``upper`` on [0, 1].

    ``lower`` is the max of the supporting lines β = 1 − (D_{e^t}(Q‖P) + err_t) − e^t α over
    the t-grid; ``upper`` the chord interpolation through the exact Neyman–Pearson points
    (P(S_t), Q(S_t^c)) of S_t = {q > e^t p} (plus their errors). ``error`` = max(upper − lower).
    """

    lower: object
    upper: object
    error: float
    ts: np.ndarray
    alphas: np.ndarray
    betas: np.ndarray
    lower_alphas: np.ndarray
    lower_betas: np.ndarray


def _upper_hull_lines(a: np.ndarray, m: np.ndarray):
    """Breakpoints in [0, 1] of max_i (a_i + m_i α)."""
    order = np.lexsort((a, m))
    a, m = a[order], m[order]
    hull: list[int] = []
    for i in range(len(a)):
        if hull and m[hull[-1]] == m[i]:
            hull.pop()  # same slope: larger intercept (sorted) wins
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            # k irrelevant if line i overtakes j no later than k does
            if (a[i] - a[j]) * (m[k] - m[j]) >= (a[k] - a[j]) * (m[i] - m[j]):
                hull.pop()
            else:
                break
        hull.append(i)
    xs = [0.0, 1.0]
    for j, k in zip(hull[:-1], hull[1:], strict=True):
        x = (a[j] - a[k]) / (m[k] - m[j])
        if 0.0 < x < 1.0:
            xs.append(x)
    return np.unique(xs)


def _t_range(P: Mixture, Q: Mixture) -> float:
    if P.noise is NoiseKind.LAPLACE:
        return _max_abs_logratio(P, Q).value + 1e-9
    sP, sQ = P.scalar_shifts, Q.scalar_shifts
    D = max(abs(sP.max() - sQ.min()), abs(sQ.max() - sP.min())) / P.scale
    return min(D * (D / 2 + 9.0) + 1.0, 60.0)


def pair_tradeoff_bounds(P: Mixture, Q: Mixture, n_t: int = 401) -> PairTradeoffBounds:
    """Rigorous lower and upper piecewise-linear bounds on T(P, Q) (THEORY §6).

    T(P, Q)(α) = inf{1 − E_Q φ : E_P φ ≤ α}. For every t and every test φ,
    E_Q φ − e^t E_P φ ≤ D_{e^t}(Q‖P), so β ≥ 1 − D_{e^t}(Q‖P) − e^t α: each line is a valid
    lower bound and so is their maximum (``lower``, convex). Each t gives an achievable point
    (P(S_t), Q(S_t^c)); since T is convex the chords through achievable points lie above it
    (``upper``). The reported ``error`` bounds how far ``lower`` can be below T.
    """
    P, Q = _check_pair(P, Q)
    if isinstance(n_t, bool) or not isinstance(n_t, int) or n_t < 3:
        raise ValueError(f"n_t must be an integer >= 3, got n_t={n_t!r}")
    tmax = _t_range(P, Q)
    ts = np.linspace(-tmax, tmax, n_t)
    hs = [_hockey(Q, P, float(t)) for t in ts]
    D = np.array([h.value + h.error for h in hs])
    err = np.array([h.error for h in hs])
    # _hockey(Q, P, t): first argument Q, so p_in = Q(S_t), q_in = P(S_t), p_out = Q(S_t^c).
    alpha_pts = np.array([h.q_in for h in hs])
    beta_pts = np.array([h.p_out for h in hs])
    a_lines = np.concatenate([1.0 - D, [0.0]])
    m_lines = np.concatenate([-np.exp(ts), [0.0]])
    xs = _upper_hull_lines(a_lines, m_lines)
    ys = np.clip((a_lines[None, :] + m_lines[None, :] * xs[:, None]).max(axis=1), 0.0, 1.0)
    ys = np.minimum(ys, 1.0 - xs)
    lower = _piecewise(xs, ys)
    # Upper: chords through achievable points, plus the trivial tests (0, 1) and (1, 0).
    ua = np.concatenate([[0.0], alpha_pts, [1.0]])
    ub = np.concatenate([[1.0], np.minimum(beta_pts + err, 1.0), [0.0]])
    order = np.argsort(ua, kind="stable")
    ua, ub = ua[order], ub[order]
    ua, idx = np.unique(ua, return_index=True)
    ub = np.minimum.reduceat(ub, idx)
    # Lower convex hull of the achievable points (still achievable by randomisation).
    keep: list[int] = []
    for i in range(len(ua)):
        while len(keep) >= 2:
            j, k = keep[-2], keep[-1]
            if (ub[k] - ub[j]) * (ua[i] - ua[j]) >= (ub[i] - ub[j]) * (ua[k] - ua[j]):
                keep.pop()
            else:
                break
        keep.append(i)
    ua, ub = ua[keep], ub[keep]
    upper = _piecewise(ua, ub)
    grid = np.union1d(xs, ua)
    gap = float(np.max(np.interp(grid, ua, ub) - np.interp(grid, xs, ys)))
    return PairTradeoffBounds(lower, upper, max(gap, 0.0), ts, alpha_pts, beta_pts, xs, ys)


def pair_tradeoff(P: Mixture, Q: Mixture, n_t: int = 401):
    """T(P, Q) as a rigorous LOWER bound (piecewise linear, convex).

    The returned curve is ≤ T(P, Q) everywhere; it is below by at most
    ``pair_tradeoff_bounds(P, Q).error`` (typically 1e-4 with the default grid). Audits that
    check a theory curve f against the pair (f ≤ T must hold) may report spurious violations of
    at most that size, never miss one.
    """
    return pair_tradeoff_bounds(P, Q, n_t).lower


def symmetric_pair_tradeoff(P: Mixture, Q: Mixture, n_t: int = 401):
    """Greatest convex minorant of min(T(P, Q), T(Q, P)), as a rigorous lower bound.

    A symmetric f satisfies f ≤ T(P, Q) and f ≤ T(Q, P) (f-DP in both orders) iff it lies
    below this curve (f is convex). Both lower envelopes are evaluated at the union of their
    breakpoints; between them the minimum of two lines is concave, so the convex hull of the
    sampled minimum stays below it.
    """
    b1, b2 = pair_tradeoff_bounds(P, Q, n_t), pair_tradeoff_bounds(Q, P, n_t)
    xs = np.union1d(b1.lower_alphas, b2.lower_alphas)
    ys = np.minimum(
        np.interp(xs, b1.lower_alphas, b1.lower_betas),
        np.interp(xs, b2.lower_alphas, b2.lower_betas),
    )
    keep: list[int] = []
    for i in range(len(xs)):
        while len(keep) >= 2:
            j, k = keep[-2], keep[-1]
            if (ys[k] - ys[j]) * (xs[i] - xs[j]) >= (ys[i] - ys[j]) * (xs[k] - xs[j]):
                keep.pop()
            else:
                break
        keep.append(i)
    return _piecewise(xs[keep], ys[keep])
