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
from dataclasses import dataclass

import numpy as np
from scipy import signal, special

from audit._numeric import brentq

__all__ = ["GridLaw", "POINT", "expectation", "coarsen", "blocks", "power", "window",
           "solve_epsilon"]

#: relative precision of the ε root finding
XTOL = 1e-6


@dataclass(frozen=True)
class GridLaw:
    """A discrete law on ascending ``points`` (−∞ allowed first) with its ``masses`` and its
    ``tilted`` masses m·e^x, each computed so that it is accurate where it matters: an
    expectation weighted by e^x reads ``tilted`` (an FFT's absolute rounding of 10⁻¹⁷ in a
    mass far in the upper tail, times e^x, would swamp a small δ), an unweighted one
    ``masses``."""

    points: np.ndarray
    masses: np.ndarray
    tilted: np.ndarray

    @classmethod
    def exact(cls, points, masses) -> GridLaw:
        """From masses accurate relative to themselves (tilted = m·e^x)."""
        pts, m = np.asarray(points, dtype=np.float64), np.asarray(masses, dtype=np.float64)
        with np.errstate(over="ignore"):
            return cls(pts, m, np.where(m > 0, m * np.exp(pts), 0.0))


    @classmethod
    def reconciled(cls, points, masses, tilted) -> GridLaw:
        """From masses and tilted masses each convolved by FFT (absolute rounding about 10⁻¹⁷
        of each one's total, about 1): below 0 the masses are the accurate ones, above 0 the
        tilted ones (their rounding is e^{−x} times smaller there), and each array is made the
        other's image (m = m̃·e^{−x} above 0, m̃ = m·e^x below), so that sums over a tail
        read both consistently."""
        pts = np.asarray(points, dtype=np.float64)
        right = pts > 0
        with np.errstate(over="ignore", invalid="ignore"):
            m = np.where(right, tilted * np.exp(-np.where(right, pts, 0.0)), masses)
            mt = np.where(right, tilted, masses * np.exp(np.where(right, 0.0, pts)))
        return cls(pts, m, mt)


#: a point mass at 0
POINT = GridLaw(np.zeros(1), np.ones(1), np.ones(1))


def power(m: np.ndarray, k: int) -> np.ndarray:
    """The k-fold convolution of masses on an integer grid (FFT by squaring; rounding
    negatives clipped to 0). Its absolute error is about 10⁻¹⁷ of the total mass: convolve the
    tilted masses (m·e^x, whose total is E[e^x]) apart for their own accuracy."""
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


def window(law: GridLaw, tail: float) -> tuple[int, int]:
    """Indices [i, j] of the finite points outside which at most ``tail`` of the mass lies
    below (under the law and under its tilt) and above (likewise)."""
    finite = np.isfinite(law.points)
    f0 = int(np.argmax(finite))
    m, mt = law.masses[finite], law.tilted[finite]
    c, ct = np.cumsum(m), np.cumsum(mt)
    i = int(min(np.searchsorted(c, tail * c[-1]), np.searchsorted(ct, tail * ct[-1])))
    j = int(max(np.searchsorted(c, (1 - tail) * c[-1]),
                np.searchsorted(ct, (1 - tail) * ct[-1])))
    return f0 + min(i, m.size - 1), f0 + min(j, m.size - 1)


def coarsen(law: GridLaw, up: bool, step: float, tail: float) -> GridLaw:
    """The law moved further onto a uniform grid of ``step`` over :func:`window`. ``up``:
    values moved up, the lower tail to the window's first point, the upper tail dropped (this
    law serves lower bounds of an integrand falling in x); else down, the lower tail to −∞,
    the upper tail to the window's last point. A value x moved to an edge e keeps its mass
    and has tilted mass m·e^x·e^{e − x} (a factor within e^{±step})."""
    pts, m, mt = law.points, law.masses, law.tilted
    i, j = window(law, tail)
    n = max(int(math.ceil((pts[j] - pts[i]) / step)), 1)
    edges = pts[i] + step * np.arange(n + 1)
    inside = slice(i, j + 1)
    x = pts[inside]
    idx = (np.ceil((x - pts[i]) / step - 1e-9) if up else
           np.floor((x - pts[i]) / step + 1e-9)).astype(np.int64)
    idx = np.clip(idx, 0, n)
    factor = np.exp(edges[idx] - x)
    cm = np.bincount(idx, weights=m[inside], minlength=n + 1)
    ct = np.bincount(idx, weights=mt[inside] * factor, minlength=n + 1)
    below = float(m[:i].sum())  # the lower tail (−∞ included), accurate on the left
    if up:
        cm[0] += below
        ct[0] += below * math.exp(pts[i])
        out = GridLaw(edges, cm, ct)
    else:
        last = int(idx[-1])
        cm[last] += m[j + 1:].sum()
        ct[last] += float((mt[j + 1:] * np.exp(edges[last] - pts[j + 1:])).sum())
        out = GridLaw(np.concatenate([[-np.inf], edges]),
                      np.concatenate([[below], cm]), np.concatenate([[0.0], ct]))
    keep = (out.masses > 0) | (out.tilted > 0)
    return GridLaw(out.points[keep], out.masses[keep], out.tilted[keep])


def blocks(law: GridLaw, up: bool, r: int) -> GridLaw:
    """A law on a uniform grid x₀ + ih moved onto the grid x₀ + Jrh: each point up to the
    next coarse point (``up``: the law serves upper bounds of an integrand rising in x, or
    lower bounds of one falling) or down to the one before, keeping its mass, its tilted mass
    times e^{moved distance}; nothing is dropped. ``r`` ≥ 1, and the law has at least two
    points, evenly spaced."""
    pts, m, mt = law.points, law.masses, law.tilted
    if isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 1:
        raise ValueError(f"r must be an integer >= 1, got r={r!r}")
    if pts.size < 2:
        raise ValueError(f"law must have at least two points, got {pts.size}")
    h = pts[1] - pts[0]
    lead = r - 1 if up else 0  # up: point i goes to ⌈i/r⌉, down: to ⌊i/r⌋
    size = -(-(lead + m.size) // r) * r
    offset = np.arange(r)
    factor = np.exp(((r - 1 - offset) if up else -offset) * h)
    rows = []
    for v in (m, mt):
        padded = np.zeros(size)
        padded[lead:lead + v.size] = v
        rows.append(padded.reshape(-1, r))
    coarse = pts[0] + r * h * np.arange(size // r)
    return GridLaw(coarse, rows[0].sum(axis=1), rows[1] @ factor)


def _top(bet: np.ndarray, t: GridLaw) -> float:
    """B e^t at t's largest point with mass (``bet`` = B e^t at every point), or −∞: a K at
    least that large makes (B e^t − K)_+ vanish for every t."""
    held = np.flatnonzero((t.masses > 0) | (t.tilted > 0))
    return float(bet[held[-1]]) if held.size else -math.inf


def _head(law: GridLaw, n: int) -> GridLaw:
    """The first ``n`` points of a law."""
    return law if n == law.points.size else GridLaw(law.points[:n], law.masses[:n],
                                                    law.tilted[:n])


def expectation(A: float, B: float, C: float, s: GridLaw, t: GridLaw, r: GridLaw,
                variance: float | None = None) -> tuple[float, float]:
    """(E, rounding error) of E[(A e^s + B e^t − C e^r)_+] over independent discrete s, t, r;
    with ``variance`` v, t ~ N(−v/2, v) exactly instead (the inner expectation in closed
    form: B Φ((v/2 − d)/√v) − K Φ((−v/2 − d)/√v), d = ln(K/B), for K = C e^r − A e^s > 0).

    Every term is a mass times a tilted mass (m_s m_r B E[e^t; t > t*], m_s m̃_r C P(t > t*),
    m̃_s m_r A P(t > t*)), so no e^x multiplies a mass that is only absolutely accurate."""
    with np.errstate(over="ignore"):
        es, er = np.exp(s.points), np.exp(r.points)
    if B == 0.0:  # (A e^s − C e^r)_+: r below ln(A e^s / C), by prefix sums over r
        if A <= 0.0:
            return 0.0, 0.0
        p0 = np.concatenate([[0.0], np.cumsum(r.masses)])  # mass of the first j points of r
        p1 = np.concatenate([[0.0], np.cumsum(r.tilted)])
        j = np.searchsorted(C * er, A * es, side="left")  # r points with C e^r < A e^s
        val = A * s.tilted * p0[j] - C * s.masses * p1[j]
        return (max(float(val.sum()), 0.0),
                8e-16 * float((A * s.tilted * p0[j] + C * s.masses * p1[j]).sum()))
    if variance is None:
        with np.errstate(over="ignore"):
            bet = B * np.exp(t.points)
        if A <= 0.0:  # K ≥ C e^r and K ≥ −A e^s: the pairs past B e^(largest t) add 0
            top = _top(bet, t)
            ns = int(np.searchsorted(-A * es, top, side="left"))
            nr = int(np.searchsorted(C * er, top, side="left"))
            if not (ns and nr):
                return 0.0, 0.0
            s, es, r, er = _head(s, ns), es[:ns], _head(r, nr), er[:nr]
        s0 = np.concatenate([np.cumsum(t.masses[::-1])[::-1], [0.0]])  # from index j on
        s1 = B * np.concatenate([np.cumsum(t.tilted[::-1])[::-1], [0.0]])
    total = err = 0.0
    rows = max(1, 2_000_000 // max(r.points.size, 1))
    for lo in range(0, s.points.size, rows):
        sl = slice(lo, lo + rows)
        K = C * er[None, :] - A * es[sl, None]  # the threshold B e^t must pass
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
        sm, smt = s.masses[sl], s.tilted[sl]
        total += float(sm @ tilted @ r.masses - C * (sm @ above @ r.tilted)
                       + A * (smt @ above @ r.masses))
        err += 8e-16 * float(sm @ tilted @ r.masses + C * (sm @ above @ r.tilted)
                             + abs(A) * (smt @ above @ r.masses))
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
