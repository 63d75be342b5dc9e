"""The optimal set S* = {p > e^t q} of a pair, located as an exact union of intervals.

Laplace: one closed-form root per breakpoint interval. Gaussian: the sign changes of
p − e^t q are bounded by total positivity of the kernel (Karlin 1968, ch. 5 Thm 3.1) and found
by certified refinement of a grid (see :mod:`audit.theory.pair`). Which applies is looked up
per noise class in :mod:`audit.theory.pair.methods`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from audit._numeric import brentq
from audit.mixture import Mixture
from audit.theory.pair.masses import U, logdiff, logratio

_GRID = 1024
_MAX_POINTS = 200_000


@dataclass
class Split:
    """The real line cut at ``cuts`` into segments labelled +1 (in S), 0 (not in S) or
    2 (uncertain), plus verified root brackets."""

    cuts: np.ndarray
    labels: np.ndarray
    brackets: list[tuple[float, float]]
    n_roots: int | None
    root_bound: int | None



def _bracket_root(P, Q, t, r, a, b, s_left) -> tuple[float, float]:
    """A bracket [r − τ, r + τ] ⊂ [a, b] on which L changes sign from ``s_left``."""
    tau = 1e-13 * (P.scale + abs(r))
    for _ in range(60):
        lo, hi = max(a, r - tau), min(b, r + tau)
        Lv, _ = logratio(P, Q, t, np.array([lo, hi]))
        if np.sign(Lv[0]) != -s_left and np.sign(Lv[1]) != s_left:
            return lo, hi
        tau *= 4
    return a, b


def root_in(P, Q, t, a, b, La) -> tuple[float, tuple[float, float]]:
    """Root of L in [a, b] (exactly one sign change there) and a verified bracket."""

    def f(x: float) -> float:
        return float(logratio(P, Q, t, np.array([x]))[0][0])

    r = brentq(f, a, b, xtol=1e-14 * P.scale, rtol=8 * U, maxiter=200)
    return r, _bracket_root(P, Q, t, r, a, b, np.sign(La))


def _split_from_roots(P, Q, t, roots, brackets, x_probe_left, n_roots, bound) -> Split:
    cuts = np.asarray(sorted(roots), dtype=np.float64)
    edges = np.concatenate([[-np.inf], cuts, [np.inf]])
    lo, hi = edges[:-1], edges[1:]
    probe = np.where(
        np.isinf(lo) & np.isinf(hi),
        x_probe_left,
        np.where(np.isinf(lo), hi - P.scale, np.where(np.isinf(hi), lo + P.scale, (lo + hi) / 2)),
    )
    Lv, _ = logratio(P, Q, t, probe)
    labels = (Lv > 0).astype(np.int64)
    return Split(cuts, labels, brackets, n_roots, bound)


def laplace_split(P: Mixture, Q: Mixture, t: float) -> Split:
    b = P.scale
    bps = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    Lb, _ = logratio(P, Q, t, bps)
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
            sA, lA = logdiff(coef(P, lwP, True), t + coef(Q, lwQ, True))
            sC, lC = logdiff(coef(P, lwP, False), t + coef(Q, lwQ, False))
        r = m + 0.5 * b * (lC - lA) if (sA * sC < 0) else m
        if not (a < r < c):
            r, br = root_in(P, Q, t, a, c, Lb[j])
        else:
            br = _bracket_root(P, Q, t, r, a, c, sa)
            if br == (a, c):  # closed form inaccurate (near-cancelling coefficients)
                r, br = root_in(P, Q, t, a, c, Lb[j])
        roots.append(r)
        brackets.append(br)
    split = _split_from_roots(P, Q, t, cuts + roots, brackets, bps[0], len(roots), len(bps) - 1)
    return split


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
        sign[k], logc[k] = logdiff(lp[k], lq[k])
    keep = sign != 0
    return shifts[keep], sign[keep], logc[keep]


def gaussian_split(P: Mixture, Q: Mixture, t: float) -> Split:
    sig = P.scale
    with np.errstate(divide="ignore"):
        s, sg, lc = _gauss_coefficients(P, Q, t)
    if s.size == 0:  # p = e^t q identically
        return Split(np.array([]), np.array([0]), [], 0, 0)
    bound = int(np.count_nonzero(sg[1:] != sg[:-1]))
    if bound == 0:
        return Split(np.array([]), np.array([int(sg[0] > 0)]), [], 0, 0)
    # Range containing every root: beyond it the extreme component dominates the rest.
    gR, gL = s[-1] - s[-2], s[1] - s[0]
    xR = s[-1] + sig**2 / gR * max(0.0, special.logsumexp(lc[:-1]) - lc[-1]) + sig
    xL = s[0] - sig**2 / gL * max(0.0, special.logsumexp(lc[1:]) - lc[0]) - sig
    sP, sQ = P.scalar_shifts, Q.scalar_shifts
    lip = max(abs(sP.max() - sQ.min()), abs(sQ.max() - sP.min())) / sig**2
    tol = 1e-12 * sig
    pts = np.linspace(xL, xR, _GRID + 1)
    Lv, eta = logratio(P, Q, t, pts)
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
        active = ~cert & (h > tol + 8 * U * np.abs(pts[:-1]))
        if not active.any() or pts.size + active.sum() > _MAX_POINTS:
            # Sign pattern not fully resolved: non-certified intervals become uncertain.
            labels = np.where(cert, (Lv[:-1] > 0).astype(np.int64), 2)
            cuts = pts
            labels = np.concatenate([[int(sg[0] > 0)], labels, [int(sg[-1] > 0)]])
            return Split(cuts, labels, [], found, bound)
        mids = 0.5 * (pts[:-1] + pts[1:])[active]
        Lm, em = logratio(P, Q, t, mids)
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
            r, br = root_in(P, Q, t, pts[i], pts[j], Lv[i])
            roots.append(r)
            brackets.append(br)
    return _split_from_roots(P, Q, t, roots, brackets, 0.5 * (xL + xR), found, bound)
