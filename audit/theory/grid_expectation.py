"""Certified expectations of a monotone integrand over independent loss variables on grids,
and the ε where such a δ bound crosses a target (docs/THEORY.md §10.3, §10.9).

Each variable's law is given on grid points, moved up (a law stochastically above the true
one) or down (below): the integrand (A e^s + B e^t − C e^r)_+ rises with t (B ≥ 0), falls with
r (C ≥ 0) and moves with s as the sign of A, so with every variable moved the way that raises
it the expectation is an upper bound, the other way a lower bound (a coupling moves every value
one way). :func:`expectation` computes it with suffix sums over t (or, for t ~ N(−v/2, v), in
closed form), :func:`coarsen` moves a law further onto a coarse grid, :func:`power` convolves
a law on an integer grid k times, and :func:`solve_epsilon` finds the ε where a δ bound
crosses a target on the side its direction needs.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import signal, special

from audit._numeric import brentq

__all__ = ["expectation", "coarsen", "power", "solve_epsilon"]

#: relative precision of the ε root finding
XTOL = 1e-6


def power(m: np.ndarray, k: int) -> np.ndarray:
    """The k-fold convolution of masses on an integer grid (FFT by squaring; rounding
    negatives clipped to 0)."""
    result = None
    base = m
    while k:
        if k & 1:
            result = base if result is None else np.clip(signal.fftconvolve(result, base),
                                                         0.0, None)
        k >>= 1
        if k:
            base = np.clip(signal.fftconvolve(base, base), 0.0, None)
    assert result is not None
    return result


def coarsen(pts: np.ndarray, m: np.ndarray, up: bool, step: float,
            tail: float) -> tuple[np.ndarray, np.ndarray]:
    """The law moved further onto a uniform grid of ``step`` over the window that holds all
    but ``tail`` of its mass and of its tilt by e^x on each side. ``up``: values moved up,
    the lower tail to the window's first point, the upper tail dropped (this law serves
    lower bounds of an integrand falling in x); else down, the lower tail to −∞, the upper
    tail to the window's last point."""
    finite = np.isfinite(pts)
    f, fm = pts[finite], m[finite]
    c = np.cumsum(fm)
    w = fm * np.exp(f - f[-1])
    ct = np.cumsum(w) / w.sum()
    i = int(min(np.searchsorted(c, tail), np.searchsorted(ct, tail)))
    j = int(max(np.searchsorted(c, c[-1] - tail), np.searchsorted(ct, 1 - tail)))
    i, j = min(i, f.size - 1), min(j, f.size - 1)
    n = max(int(math.ceil((f[j] - f[i]) / step)), 1)
    edges = f[i] + step * np.arange(n + 1)
    inside = slice(i, j + 1)
    if up:
        idx = np.ceil((f[inside] - f[i]) / step - 1e-9).astype(np.int64)
        cm = np.bincount(np.clip(idx, 0, n), weights=fm[inside], minlength=n + 1)
        cm[0] += fm[:i].sum() + m[~finite].sum()
        out_pts, out_m = edges, cm
    else:
        idx = np.floor((f[inside] - f[i]) / step + 1e-9).astype(np.int64)
        cm = np.bincount(np.clip(idx, 0, n), weights=fm[inside], minlength=n + 1)
        cm[min(int(idx[-1]), n)] += fm[j + 1:].sum()
        out_pts = np.concatenate([[-np.inf], edges])
        out_m = np.concatenate([[fm[:i].sum() + m[~finite].sum()], cm])
    keep = out_m > 0
    return out_pts[keep], out_m[keep]


def expectation(A: float, B: float, C: float, s, t, r,
                 variance: float | None = None) -> tuple[float, float]:
    """(E, rounding error) of E[(A e^s + B e^t − C e^r)_+] over independent discrete s, t, r
    given as (points, masses), t ascending; with ``variance`` v, t ~ N(−v/2, v) exactly
    instead (the inner expectation in closed form: B Φ((v/2 − d)/√v) − K Φ((−v/2 − d)/√v),
    d = ln(K/B), for K = C e^r − A e^s > 0; B − K for K ≤ 0)."""
    sp, sm = s
    rp, rm = r
    es = np.exp(sp)
    er = np.exp(rp)
    if B == 0.0:  # (A e^s − C e^r)_+: r below ln(A e^s / C), by prefix sums over r
        if A <= 0.0:
            return 0.0, 0.0
        cer = C * er
        p0 = np.concatenate([[0.0], np.cumsum(rm)])  # mass of the first j points of r
        p1 = np.concatenate([[0.0], np.cumsum(rm * cer)])
        j = np.searchsorted(cer, A * es, side="left")  # r points with C e^r < A e^s
        val = A * es * p0[j] - p1[j]
        total = float(sm @ val)
        return max(total, 0.0), 8e-16 * float(sm @ (A * es * p0[j] + p1[j]))
    if variance is None:
        tp, tm = t
        bet = B * np.exp(tp)
        s0 = np.concatenate([np.cumsum(tm[::-1])[::-1], [0.0]])  # suffix sums from index j
        s1 = np.concatenate([np.cumsum((tm * bet)[::-1])[::-1], [0.0]])
    total = err = 0.0
    rows = max(1, 2_000_000 // max(rp.size, 1))
    for lo in range(0, sp.size, rows):
        K = C * er[None, :] - A * es[lo:lo + rows, None]  # the threshold B e^t must pass
        if variance is None:
            j = np.searchsorted(bet, K, side="right")
            j[K <= 0] = 0
            above, tilted = s0[j], s1[j]
        else:
            sd = math.sqrt(variance)
            with np.errstate(divide="ignore"):
                d = np.log(np.maximum(K, 0.0) / B)
            above = special.ndtr((-variance / 2 - d) / sd)
            tilted = B * special.ndtr((variance / 2 - d) / sd)
        val = tilted - K * above
        total += float(sm[lo:lo + rows] @ val @ rm)
        err += 8e-16 * float(sm[lo:lo + rows] @ (tilted + np.abs(K) * above) @ rm)
    return total, err


def solve_epsilon(bound, target: float, top: float, *, upper: bool) -> float:
    """The ε where ``bound(ε)`` (a δ bound, non-increasing in ε) crosses ``target`` on
    [0, ``top``], by Brent's method on ln δ, returned on the side a bound needs: for an
    ``upper`` δ bound an ε with bound ≤ target (so it holds; ``top`` must hold), for a lower
    one an ε with bound > target (so the true ε exceeds it), or 0."""
    if bound(0.0) <= target:
        return 0.0
    if bound(top) > target:
        return top

    def gap(e):
        b = bound(e)
        return (math.log(b) if b > 0 else -800.0) - math.log(target)

    step = XTOL * max(top, 1e-3)
    root = brentq(gap, 0.0, top, xtol=step)
    for i in range(1, 64):  # the root's side, checked (a bound need not be monotone)
        e = min(root + i * step, top) if upper else max(root - i * step, 0.0)
        if (bound(e) <= target) == upper or e in (0.0, top):
            return e if (bound(e) <= target) == upper else (top if upper else 0.0)
    return top if upper else 0.0
