"""Fresh masks for a mean over the observed entries with Gaussian noise at δ > 0 (docs/THEORY.md
§10.8, **derived in this project**).

Each of k releases draws the record's mask anew, so the k releases are the k-fold product of one
release's pair. At one release the corner lemma (§10.8) puts the worst pair of [lo, hi] ∪ {NA}
at every γ ≥ 1 among (hi, NA), (lo, NA) and (hi, lo), both orders (γ < 1 follows by conjugacy,
D_γ(P‖Q) = 1 − γ + γ D_{1/γ}(Q‖P)). A PMF that dominates these three pairs in both orders
therefore dominates every pair of the domain, and its k-fold product every k-fold product
(Blackwell): that is the **upper end**.

- The pairs with NA are scalar, (1 − q)N(0, 1) + qN(μ_c, 1) against N(0, 1) with
  μ_c = √((c/σ_S)² + (1/σ_N)²), and their profiles on the loss grid are certified by
  :func:`audit.theory.pair.ctd.order_profile`; the end with the larger |c| dominates the
  other in both orders (scaling about 0 and adding noise maps it there), so it alone enters.
- The pair (hi, lo) is two-dimensional. Its certified profile
  (:func:`audit.theory.mean_pair.gaussian_pair_delta_bounds`) is computed at fewer ε ≥ 0,
  and, δ being convex in γ = e^ε, the chord in γ between two of them bounds it in between. A
  midpoint is added where the chord there is above both the computed value (by more than
  10⁻³ of it and 10⁻³δ/k) and the pairs with NA. Beyond the last point, q·δ_{G(|a − a′|)}
  (joint convexity) is below 10⁻¹⁸.

The Connect-the-Dots PMF of the largest bound at each grid point
(:func:`audit.theory.pair.ctd.envelope_pmf`) is composed k times. The **lower end** is the
larger of the worst pair with NA over the k releases, exact (:func:`audit.theory.pair.releases.
fresh_pair_bounds`), and the pair (hi, lo) read on the sum's coordinate alone, (1 − q)N(0, 1) +
qN(a, 1) against the same at a′, exact over the k releases: dropping the count is a
post-processing, so that is below the pair's own ε. Both are pairs of the setting.
"""

from __future__ import annotations

import math

import numpy as np

from audit._validate import check_in_range
from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.theory.mean_pair import COVERS, gaussian_pair_delta_bounds
from audit.theory.pair.ctd import envelope_pmf, order_profile
from audit.theory.pair.releases import fresh_pair_bounds
from audit.theory.pld import DISCRETIZATION, MAX_PLD_RELEASES
from audit.theory.profiles import gaussian_epsilon
from audit.theory.worst_case import WorstCase

__all__ = ["gaussian_fresh_worst_case"]

#: first ε points of each order of the pair (hi, lo), before the midpoints
_START = 33
#: a chord interval is halved at most this many times
_DEPTH = 12
#: the chord's excess over the computed value at a midpoint that stops the halving
_RTOL = 1e-3
#: the δ beyond the pair's last ε point (joint convexity bounds it there)
_TAIL = 1e-18


class _ChordProfile:
    """Upper bounds on D_{e^ε} of the pair (hi, lo) in both orders at every real ε, from its
    certified values at points ε ≥ 0 joined by chords in γ (see the module docstring).
    ``env(ε)`` is the pairs with NA's largest bound at ε ≥ 0: no midpoint is added where the
    chord is below it, nor where it is within ``atol`` of the computed value."""

    def __init__(self, a: float, a2: float, tau: float, q: float, env, atol: float) -> None:
        self.top = gaussian_epsilon(min(_TAIL / q, 1.0), abs(a - a2))
        self.calls = 0
        self.orders = []
        for x, y in ((a, a2), (a2, a)):
            def upper(e, x=x, y=y):
                self.calls += 1
                return gaussian_pair_delta_bounds(x, y, tau, q, e, atol=atol)[1]

            pts = list(np.linspace(0.0, self.top, _START))
            vals = [upper(e) for e in pts]
            points = [(pts[0], vals[0])]
            for j in range(_START - 1):
                points += self._refine(upper, env, atol, pts[j], vals[j], pts[j + 1],
                                       vals[j + 1], _DEPTH)
            self.orders.append((np.array([p for p, _ in points]),
                                np.array([v for _, v in points])))

    @staticmethod
    def _chord(e0, u0, e1, u1, e):
        w = math.expm1(e - e0) / math.expm1(e1 - e0)  # (γ − γ0)/(γ1 − γ0)
        return u0 + w * (u1 - u0)

    def _refine(self, upper, env, atol, e0, u0, e1, u1, depth):
        """The points after e0 up to e1 (inclusive), with midpoints where the chord is loose
        and above the pairs with NA."""
        m = 0.5 * (e0 + e1)
        um = upper(m)
        chord = self._chord(e0, u0, e1, u1, m)
        if depth == 0 or chord - um <= _RTOL * um + atol or chord <= env(m):
            return [(m, um), (e1, u1)]
        return (self._refine(upper, env, atol, e0, u0, m, um, depth - 1)
                + self._refine(upper, env, atol, m, um, e1, u1, depth - 1))

    @staticmethod
    def _order(points, eps):
        """One order's chord bound at ε ≥ 0 (the last value beyond the last point)."""
        pts, vals = points
        j = np.clip(np.searchsorted(pts, eps, side="right") - 1, 0, pts.size - 2)
        with np.errstate(over="ignore", invalid="ignore"):
            w = np.expm1(eps - pts[j]) / np.expm1(pts[j + 1] - pts[j])
        u = vals[j] + np.clip(w, 0.0, 1.0) * (vals[j + 1] - vals[j])
        return np.where(eps >= pts[-1], vals[-1], u) * (1 + 1e-12)

    def upper(self, eps: np.ndarray) -> np.ndarray:
        """The larger of the two orders' bounds at every ε (below 0 by conjugacy)."""
        eps = np.asarray(eps, dtype=np.float64)
        gam = np.exp(eps)
        out = np.zeros(eps.size)
        for i in (0, 1):
            mine, other = self.orders[i], self.orders[1 - i]
            pos = self._order(mine, np.maximum(eps, 0.0))
            neg = 1.0 - gam + gam * self._order(other, np.maximum(-eps, 0.0))
            out = np.maximum(out, np.where(eps >= 0.0, pos, neg))
        return np.clip(out, 0.0, 1.0)


def _side(mu: float, q: float) -> Mixture:
    """(1 − q)N(0, 1) + qN(μ, 1): an observed record's one-release law along one axis."""
    return (Mixture([1.0], [mu], "gaussian", 1.0) if q == 1.0 else
            Mixture([1 - q, q], [0.0, mu], "gaussian", 1.0))


def gaussian_fresh_worst_case(setting, delta: float):
    """The worst case of a Gaussian mean over the observed entries, k releases with fresh
    masks, at the final δ > 0 (module docstring): a
    :class:`~audit.theory.worst_case.WorstCase` whose ``epsilon`` bounds every pair of the
    domain and NA and whose ``lower`` is the ε of a pair of the setting: the worst pair with
    NA, or (hi, lo) read on the sum alone.

    Raises
    ------
    ValueError
        Unless ``setting`` is a Gaussian :class:`~audit.theory.observed_mean.
        ObservedMeanSetting`; on δ outside (0, 1), or k above ``MAX_PLD_RELEASES``.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    # an ObservedMeanSetting, read by its fields (audit.theory.observed_mean imports this module)
    fields = ("domain", "observation", "releases", "sum_scale", "count_scale")
    if not (getattr(setting, "noise", None) is NoiseKind.GAUSSIAN
            and all(hasattr(setting, f) for f in fields)):
        raise ValueError(f"setting must be a Gaussian ObservedMeanSetting, got "
                         f"setting={setting!r}")
    d = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    lo, hi = setting.domain
    q, k = setting.observation, setting.releases
    if k > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a PLD composition, "
                         f"got releases={k}")
    sig_s, tau = setting.sum_scale, 1.0 / setting.count_scale
    null = Mixture([1.0], [0.0], "gaussian", 1.0)
    # (c, NA) is one scalar pair of shift μ_c along (c/σ_S, τ), dominated in both orders by
    # the end with the larger |c| (scaling about 0 and adding noise maps it there, §10.8)
    far, c = ("hi", hi) if abs(hi) >= abs(lo) else ("lo", lo)
    P = _side(math.hypot(c / sig_s, tau), q)
    found = {(far, "NA"): fresh_pair_bounds(P, null, k, d)}
    a, a2 = hi / sig_s, lo / sig_s
    # (hi, lo) read on the sum's coordinate alone: a post-processing, so its ε is below
    found[("hi", "lo")] = fresh_pair_bounds(_side(a, q), _side(a2, q), k, d)

    def env(e: float) -> float:
        return max(float(order_profile(A, B, np.array([e])).upper[0])
                   for A, B in ((P, null), (null, P)))

    # a one-release δ off by x moves the k-fold δ by at most k·x: 10⁻³ of δ in all
    chords = _ChordProfile(a, a2, tau, q, env, 1e-3 * d / k)
    pmf = envelope_pmf([(P, null)], DISCRETIZATION, more=chords)
    upper = float(PrivacyLossDistribution(pmf).self_compose(k).get_epsilon_for_delta(d))
    pair = max(found, key=lambda p: found[p][0])
    lower = found[pair][0]
    return WorstCase(max(upper, lower), lower, pair,
                     "Gaussian, fresh masks: above, the k-fold composition of the envelope of "
                     f"({far}, NA) and (hi, lo) at one release (corner lemma, THEORY "
                     f"§10.8; (hi, lo) at {chords.calls} certified 2-D values joined by chords "
                     "in gamma); below, the worst pair with NA or (hi, lo) on the sum's "
                     "coordinate alone, exact", COVERS)
