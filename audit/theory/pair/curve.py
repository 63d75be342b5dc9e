"""The trade-off curve T(P, Q) of a pair, enclosed between rigorous lower and upper bounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit._numeric import lower_convex_hull
from audit.mixture import Mixture
from audit.theory.pair.hockey import hockey
from audit.theory.pair.masses import check_pair
from audit.theory.pair.methods import pair_method
from audit.theory.tradeoff import PiecewiseLinearTradeoff

__all__ = [
    "PairTradeoffBounds",
    "pair_tradeoff",
    "pair_tradeoff_bounds",
    "symmetric_pair_tradeoff",
]


@dataclass(frozen=True)
class PairTradeoffBounds:
    """Two-sided enclosure of T(P, Q): ``lower`` ≤ T ≤ ``upper`` on [0, 1].

    ``lower`` is the max of the supporting lines β = 1 − (D_{e^t}(Q‖P) + err_t) − e^t α over
    the t-grid; ``upper`` the chord interpolation through the exact Neyman–Pearson points
    (P(S_t), Q(S_t^c)) of S_t = {q > e^t p} (plus their errors). ``error`` = max(upper − lower).
    """

    lower: PiecewiseLinearTradeoff
    upper: PiecewiseLinearTradeoff
    error: float
    ts: np.ndarray
    alphas: np.ndarray
    betas: np.ndarray
    lower_alphas: np.ndarray
    lower_betas: np.ndarray


def _upper_envelope_breakpoints(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """0, 1 and the breakpoints in (0, 1) of the upper envelope max_i (a_i + m_i α).

    By duality the lines on the envelope are the vertices of the lower convex hull of the
    points (m_i, −a_i) (of equal slopes, the largest intercept comes first and is kept);
    consecutive envelope lines cross at α = (a_j − a_k)/(m_k − m_j).
    """
    order = np.lexsort((-a, m))
    a, m = a[order], m[order]
    hull = lower_convex_hull(m, -a)
    xs = [0.0, 1.0]
    for j, k in zip(hull[:-1], hull[1:], strict=True):
        x = (a[j] - a[k]) / (m[k] - m[j])
        if 0.0 < x < 1.0:
            xs.append(x)
    return np.unique(xs)


def _curve(alphas: np.ndarray, betas: np.ndarray) -> PiecewiseLinearTradeoff:
    return PiecewiseLinearTradeoff(alphas, betas, symmetric=False, convexify=True)


def pair_tradeoff_bounds(P: Mixture, Q: Mixture, n_t: int = 401) -> PairTradeoffBounds:
    """Rigorous lower and upper piecewise-linear bounds on T(P, Q) (docs/THEORY.md §6).

    T(P, Q)(α) = inf{1 − E_Q φ : E_P φ ≤ α}. For every t and every test φ,
    E_Q φ − e^t E_P φ ≤ D_{e^t}(Q‖P), so β ≥ 1 − D_{e^t}(Q‖P) − e^t α: each line is a valid
    lower bound and so is their maximum (``lower``, convex). Each t gives an achievable point
    (P(S_t), Q(S_t^c)); since T is convex the chords through achievable points lie above it
    (``upper``). The reported ``error`` bounds how far ``lower`` can be below T.
    """
    P, Q = check_pair(P, Q)
    if isinstance(n_t, bool) or not isinstance(n_t, int) or n_t < 3:
        raise ValueError(f"n_t must be an integer >= 3, got n_t={n_t!r}")
    tmax = pair_method(P.noise).t_range(P, Q)
    ts = np.linspace(-tmax, tmax, n_t)
    hs = [hockey(Q, P, float(t)) for t in ts]
    D = np.array([h.value + h.error for h in hs])
    err = np.array([h.error for h in hs])
    # hockey(Q, P, t): first argument Q, so p_in = Q(S_t), q_in = P(S_t), p_out = Q(S_t^c).
    alpha_pts = np.array([h.q_in for h in hs])
    beta_pts = np.array([h.p_out for h in hs])
    a_lines = np.concatenate([1.0 - D, [0.0]])
    m_lines = np.concatenate([-np.exp(ts), [0.0]])
    xs = _upper_envelope_breakpoints(a_lines, m_lines)
    ys = np.clip((a_lines[None, :] + m_lines[None, :] * xs[:, None]).max(axis=1), 0.0, 1.0)
    ys = np.minimum(ys, 1.0 - xs)
    lower = _curve(xs, ys)
    # Upper: chords through achievable points, plus the trivial tests (0, 1) and (1, 0).
    ua = np.concatenate([[0.0], alpha_pts, [1.0]])
    ub = np.concatenate([[1.0], np.minimum(beta_pts + err, 1.0), [0.0]])
    order = np.argsort(ua, kind="stable")
    ua, ub = ua[order], ub[order]
    ua, idx = np.unique(ua, return_index=True)
    ub = np.minimum.reduceat(ub, idx)
    # Lower convex hull of the achievable points (still achievable by randomisation).
    keep = lower_convex_hull(ua, ub)
    ua, ub = ua[keep], ub[keep]
    upper = _curve(ua, ub)
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
    keep = lower_convex_hull(xs, ys)
    return _curve(xs[keep], ys[keep])
