"""The pair (hi, lo) of one Gaussian release of a mean over the observed entries, two observed
records in the whitened (sum, count) plane: certified bounds on one order's δ (docs/THEORY.md
§10.8, **derived in this project**), for :mod:`audit.theory.observed_mean` (shared masks) and
:mod:`audit.theory.observed_mean_fresh` (fresh masks)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

__all__ = ["COVERS", "gaussian_pair_delta_bounds"]

#: what a mean's worst case covers
COVERS = "every pair of the domain and the NA record, both orders"
#: relative slack on every floating-point sum of the certified δ bounds
_SLACK = 1e-10


def _log_mass(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """ln(Φ(x2) − Φ(x1)), x1 < x2, accurate in both tails."""
    up = x1 >= 0  # upper tail: Φ̄(x1) − Φ̄(x2)
    a = np.where(up, log_ndtr(-x1), log_ndtr(x2))
    b = np.where(up, log_ndtr(-x2), log_ndtr(x1))
    with np.errstate(divide="ignore"):
        return a + np.log1p(-np.exp(b - a))


def _tilt_mean(x: np.ndarray) -> np.ndarray:
    """M(x) = E[U] of the density ∝ e^{xu} on [0, 1]: 1/(1 − e^{−x}) − 1/x, increasing."""
    small = np.abs(x) < 1e-3
    xs = np.where(small, 1.0, x)
    big = -1.0 / np.expm1(-xs) - 1.0 / xs
    return np.where(small, 0.5 + x / 12 - x ** 3 / 720, big)


def _g_scaled(log_bm: np.ndarray, log_b: np.ndarray, log_m: np.ndarray, k0: float,
              tau: float) -> tuple[np.ndarray, np.ndarray]:
    """m·E_t[(B e^{τt − τ²/2} − K)_+] = m(BΦ(d1) − KΦ(d2)) as (value, rounding allowance)."""
    if k0 == 0.0:
        v = np.exp(log_bm)
        return v, v * _SLACK
    d1 = (log_b - math.log(k0) + tau * tau / 2) / tau
    t1 = np.exp(log_bm) * ndtr(d1)
    t2 = k0 * np.exp(log_m) * ndtr(d1 - tau)
    return np.maximum(t1 - t2, 0.0), t1 * _SLACK


def gaussian_pair_delta_bounds(a: float, a2: float, tau: float, q: float, eps: float, *,
                               rtol: float = 1e-6, max_cells: int = 2_000_000,
                               atol: float = 0.0) -> tuple[float, float]:
    """Certified (lower, upper) on D_{e^ε}(P‖Q), P = (1 − q)N_0 + qN_(a,τ), Q the same with
    (a2, τ), N the standard 2-D normal (whitened: a = c/σ_S′, τ = 1/σ_N′), a ≠ a2, ε ≥ 0.

    With K = (1 − q)(e^ε − 1) and B(s) = q(e^{as − a²/2} − e^ε e^{a2·s − a2²/2}), the t-integral
    is m·(BΦ(d1) − KΦ(d2)); B > 0 exactly on a half-line of s. **Lower**: P(S) − e^ε Q(S) of the
    set S = ∪ cells × [t_i, ∞) with each t_i optimal for its cell's masses (exact closed forms).
    **Upper**: on each cell e^{as} lies below its chord and e^{a2 s} above its tangent at the
    midpoint; the integrand is jointly convex in the two, so the cell's integral is at most the
    chord weights' combination of its end values, with the weights bounded by exponential tilts
    (second order in the step); the tail beyond the grid is at most qΦ̄(s_max − a). Cells are
    halved where the two ends differ most until they are within ``rtol`` of the upper end,
    or ``atol``, or there are ``max_cells``.
    """
    if not (math.isfinite(atol) and atol >= 0.0):
        raise ValueError(f"atol must be a finite number >= 0, got atol={atol!r}")
    if a < a2:  # mirror s → −s
        a, a2 = -a, -a2
    gam, dd = math.exp(eps), a - a2
    k0 = (1 - q) * (gam - 1)
    s0 = (eps + (a * a - a2 * a2) / 2) / dd  # B(s) > 0 ⟺ s > s0
    s_max = max(s0, a, 0.0) + 39.0
    tail = q * float(ndtr(-(s_max - a)))
    edges = np.linspace(s0, s_max, 4097)
    lq = math.log(q)
    while True:
        s1, s2 = edges[:-1], edges[1:]
        h = s2 - s1
        lm = _log_mass(s1, s2)
        # lower: cell masses under the three components, t_i optimal
        la, la2 = _log_mass(s1 - a, s2 - a), _log_mass(s1 - a2, s2 - a2) + eps
        with np.errstate(divide="ignore", invalid="ignore"):
            ldm = la + np.log1p(-np.exp(la2 - la))  # ln(m_a − γ m_a2)
            ldm = np.where(la2 < la, ldm, -np.inf)
            if k0 == 0.0:
                low_i = q * np.exp(ldm)
            else:
                t = (math.log(k0) + lm - lq - ldm + tau * tau / 2) / tau
                t1 = np.exp(lq + ldm) * ndtr(-(t - tau))
                t2 = k0 * np.exp(lm) * ndtr(-t)
                low_i = np.where(np.isfinite(ldm), t1 - t2 - t1 * _SLACK, 0.0)
        low_i = np.maximum(np.nan_to_num(low_i, nan=0.0), 0.0)
        # upper: chord of e^{as}, tangent of e^{a2 s} at the midpoint, per cell end
        sm = 0.5 * (s1 + s2)
        vals = []
        for sv in (s1, s2):
            r = np.exp(dd * s0 + a2 * sm - a * sv) * (1 + a2 * (sv - sm))
            with np.errstate(divide="ignore", invalid="ignore"):
                lb = lq + a * sv - a * a / 2 + np.log1p(-np.minimum(r, 1.0))
            vals.append(lb)
        w2 = (_tilt_mean(-s2 * h), _tilt_mean(-s1 * h))  # share of the right end, bounds
        hv = []
        for lb in vals:
            v, err = _g_scaled(lb + lm, lb, lm, k0, tau)
            hv.append(np.where(np.isfinite(lb), v + err, 0.0))
        w = np.where(hv[1] > hv[0], w2[1], w2[0])
        up_i = (1 - w) * hv[0] + w * hv[1]
        gap = up_i - low_i
        lower = float(np.sum(low_i)) * (1 - _SLACK)
        upper = float(np.sum(up_i)) * (1 + _SLACK) + tail + 1e-300
        if upper - lower <= rtol * upper + atol or len(h) >= max_cells:
            return max(lower, 0.0), min(upper, 1.0)
        order = np.argsort(gap)[::-1]
        cum = np.cumsum(gap[order])
        n = int(np.searchsorted(cum, 0.8 * cum[-1])) + 1
        split = np.zeros(len(h), dtype=bool)
        split[order[:n]] = True
        edges = np.sort(np.concatenate([edges, sm[split]]))
