"""The subsampling operator C_p ([DRS] Section 4.1): numerically, and in closed form.

C_p(f) is the greatest convex minorant of min{f_p, f_p⁻¹}, f_p = p f + (1 − p) Id. With p the
sampling probability it is the f-DP guarantee of a subsampled f-DP mechanism ([DRS] Theorem
4.2); with p = p* it is that of A_D under MAR missing data (docs/THEORY.md §7).

- :class:`SubsampledTradeoff` evaluates the curve *numerically* (a lower convex hull), with no
  use of the closed forms, so that those can be checked against it;
- :class:`SubsampledDPTradeoff` is [DRS] Corollary 4.3 (with the factor (1 − δ)) and
  :func:`subsampled_closed_form` is [DRS] Eq. 14.

Privacy profile. All three share one exact identity for symmetric f and ε' ≥ 0:

    δ_{C_p(f)}(ε') = p δ_f(ε),   ε' = ln(1 + p(e^ε − 1)),

so ε_{C_p(f)}(δ') = ln(1 + p(e^{ε_f(δ'/p)} − 1)) and min_α (α + C_p(f)(α)) = p·min_α (α + f(α))
+ 1 − p. It is the statement [DRS]'s proof of Theorem 4.2 uses and [RPS] Theorem 3.2 applied
to every (ε, δ_f(ε)) (docs/THEORY.md §7). Proof: δ(ε') is the Legendre transform
sup_α (1 − g(α) − e^{ε'} α), the same for a curve and its convex minorant, so it is the larger
of the sups over the points (α, f_p(α)) and (f_p(β), β). On the first,
1 − f_p(α) − e^{ε'}α = p(1 − f(α) − e^ε α), whose sup is p δ_f(ε). A point of the second with
f_p(β) ≥ β is beaten by its mirror image (β, f_p(β)) of the first as e^{ε'} ≥ 1; one with
f_p(β) < β is beaten by the point of the first at α = f(β) (so f(α) = β, f symmetric) by
p(1 − p)(e^ε − 1)(1 − β − f(β)) ≥ 0. The conversions therefore never need a curve's values at
α ≈ e^{−ε}, which underflow for the ε ≈ 10^3 that audits of weak privacy reach; the tests
check the identity against the numerical biconjugate of the hull.
"""

from __future__ import annotations

import math

import numpy as np

from audit._numeric import bisect_increasing, log1p_c_expm1, log1p_expm1_div, lower_convex_hull
from audit._validate import check_delta, check_epsilon, check_probability
from audit.theory.tradeoff.base import TradeoffFunction
from audit.theory.tradeoff.conversions import delta_for_epsilon, epsilon_for_delta, min_error_sum
from audit.theory.tradeoff.curves import DPTradeoff, IdentityTradeoff
from audit.theory.tradeoff.generic import as_symmetric

__all__ = [
    "SubsampledTradeoff",
    "SubsampledDPTradeoff",
    "subsampled_closed_form",
    "amplify_tradeoff",
]


class _Subsampled(TradeoffFunction):
    """What every representation of C_p(f) shares (f symmetric, p ∈ [0, 1]): f_p and its
    complement, the inverse f_p⁻¹ by bisection, the slope at 0 and the profile identity of
    the module docstring."""

    def __init__(self, base: TradeoffFunction, p: float) -> None:
        self.base, self.p = base, p
        self._slope_exact = base._slope_exact

    @property
    def symmetric(self) -> bool:
        return True

    # f_p and its complement 1 − f_p
    def _fp(self, a):
        return self.p * self.base._eval(a) + (1.0 - self.p) * (1.0 - a)

    def _cfp(self, a):
        return self.p * self.base._complement(a) + (1.0 - self.p) * a

    def _fp_inverse(self, t, lo, hi):
        """f_p⁻¹(t) with the root bracketed in [lo, hi]; via 1 − f_p(a) = 1 − t for t ≥ 1/2
        (exact subtraction), which keeps tiny roots accurate near t = 1. Targets t ≥ f_p(0)
        converge to ~1e-300 (f_p⁻¹ = 0 there)."""
        t = np.asarray(t, dtype=np.float64)
        big = t >= 0.5
        out = np.empty_like(t)
        if np.any(big):
            out[big] = bisect_increasing(self._cfp, 1.0 - t[big], lo[big], hi[big])
        if np.any(~big):
            out[~big] = bisect_increasing(lambda a: -self._fp(a), -t[~big], lo[~big], hi[~big])
        return out

    def _log_slope_at_zero(self):
        # C_p(f) = f_p on [0, x*] ([DRS] Eq. 14), and x* > 0 exactly when f(0) > 0; when
        # f(0) = 0, C_p(f) starts with the segment of slope −1 through x* = 0.
        ls = self.base._log_slope_at_zero()
        if self.p == 1.0:
            return ls
        if float(self.base._eval(np.asarray(0.0))) <= 0.0:
            return 0.0
        return log1p_c_expm1(ls, self.p)

    def _delta(self, epsilon):
        if self.p == 0.0:
            return 0.0
        return self.p * delta_for_epsilon(self.base, log1p_expm1_div(epsilon, self.p))

    def _epsilon(self, delta):
        if self.p == 0.0:
            return 0.0
        c0 = float(self.base._complement(np.asarray(0.0)))  # δ_f(∞) = 1 − f(0)
        if delta < self.p * c0:
            return math.inf
        # δ'/p rounded below δ_f(∞) would read as "no ε": clamp (a larger ε, the safe side)
        base_delta = max(c0, min(1.0, delta / self.p))
        return log1p_c_expm1(epsilon_for_delta(self.base, base_delta), self.p)

    def _min_error_sum(self):
        return self.p * min_error_sum(self.base) + (1.0 - self.p)


class SubsampledTradeoff(_Subsampled):
    """C_p(f), the greatest convex minorant of min{f_p, f_p⁻¹}, f_p = p f + (1 − p) Id,
    computed numerically ([DRS] Definition 4.1, Theorem 4.2).

    The graph of f_p⁻¹ is the mirror image of the graph of f_p, so C_p(f) is the lower convex
    hull of the points (a, f_p(a)) and (f_p(a), a) over a parameter grid dense near 0 and 1
    (log-spaced down to 1e-20 and to 1 − 1e-16, plus the kinks of f). Between two hull
    vertices that are consecutive samples of the same curve the curve itself is evaluated
    (f_p directly, f_p⁻¹ by bisection inside the bracket), never a chord; straight lines are used
    only on bridging segments between the two curves, whose end points are refined by local
    re-sampling (the 4 widest bridges, 5 rounds, ×16 each) until they sit within ~1e-9 of
    the tangency points.
    The result is an upper bound on the exact C_p(f) that exceeds it by at most about
    f''·(1e-9)² on bridges (smooth f) and by rounding error elsewhere. Its privacy profile,
    ε(δ) and minimum error sum are the exact identities of the module docstring.

    Parameters
    ----------
    base : TradeoffFunction or callable
        A symmetric trade-off function f (a callable is wrapped and checked numerically).
    p : float
        Sampling probability in [0, 1]. p = 1 gives f, p = 0 gives Id.

    Raises
    ------
    ValueError
        If p ∉ [0, 1] or ``base`` is not symmetric.
    """

    _ROUNDS = 5
    _REFINE = 33
    _MAX_BRIDGES = 4
    _MIN_WIDTH = 1e-12

    def __init__(self, base, p: float) -> None:
        p = check_probability(p, "p")
        super().__init__(as_symmetric(base, "base"), p)
        if 0.0 < self.p < 1.0:
            self._build()

    @property
    def name(self) -> str:
        return f"SubsampledTradeoff({self.base!r}, p={self.p!r})"

    def _build(self) -> None:
        tiny = np.logspace(-20, math.log10(0.5), 300)
        params = np.concatenate(
            [[0.0, 1.0], tiny, 1.0 - np.logspace(-16, math.log10(0.5), 200),
             np.linspace(0.0, 1.0, 257),
             [k for k in self.base._kinks() if 0.0 < k < 1.0]]
        )
        params = np.unique(params)
        for rnd in range(self._ROUNDS + 1):
            hull = self._hull(params)
            if rnd == self._ROUNDS:
                break
            hx, hc, hidx = hull[0], hull[1], hull[2]
            bridge = np.flatnonzero((hc[:-1] != hc[1:]) & (hc[:-1] != 2) & (hc[1:] != 2))
            width = hx[bridge + 1] - hx[bridge]
            # the widest bridges only: when f_p ≈ f_p⁻¹ (p near 1) round-off creates many
            # ulp-wide ones whose chords cannot overstate the curve measurably
            bridge = bridge[width > self._MIN_WIDTH]
            bridge = bridge[np.argsort(hx[bridge + 1] - hx[bridge])[::-1][: self._MAX_BRIDGES]]
            new = []
            for k in bridge:
                for i in (hidx[k], hidx[k + 1]):
                    lo, hi = params[max(i - 1, 0)], params[min(i + 1, params.size - 1)]
                    new.append(np.linspace(lo, hi, self._REFINE))
            if not new:
                break
            params = np.unique(np.concatenate([params, *new]))
        self._params = params
        self._hx, self._hy, self._hc, self._hi = hull[0], hull[3], hull[1], hull[2]
        self._hcy = hull[4]  # 1 − y at the vertices, accurate near y = 1

    def _hull(self, params: np.ndarray):
        fp, cfp = self._fp(params), self._cfp(params)
        n = params.size
        # curve 0: (a, f_p(a)); curve 1: (f_p(a), a); label 2: the corner (1, 0), needed only
        # when f_p(0) < 1 (then f_p⁻¹ = 0 on [f_p(0), 1])
        corner = [1.0] if fp[0] < 1.0 else []
        m = len(corner)
        x = np.concatenate([params, fp, corner])
        y = np.concatenate([fp, params, [0.0] * m])
        cy = np.concatenate([cfp, 1.0 - params, [1.0] * m])
        curve = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64),
                                np.full(m, 2, np.int64)])
        index = np.concatenate([np.arange(n), np.arange(n), np.zeros(m, np.int64)])
        order = np.lexsort((y, x))
        h = order[lower_convex_hull(x[order], y[order])]
        return x[h], curve[h], index[h], y[h], cy[h]

    def _evaluate(self, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(C_p(f)(α), 1 − C_p(f)(α)) for 0 < p < 1."""
        shape = alpha.shape
        a = alpha.reshape(-1)
        hx, hy, hc, hcy = self._hx, self._hy, self._hc, self._hcy
        k = np.clip(np.searchsorted(hx, a, side="right") - 1, 0, hx.size - 2)
        x0, x1, y0, y1 = hx[k], hx[k + 1], hy[k], hy[k + 1]
        w = np.where(x1 > x0, (a - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0)
        val = y0 + w * (y1 - y0)
        comp = hcy[k] + w * (hcy[k + 1] - hcy[k])
        c0, c1 = hc[k], hc[k + 1]
        # Both curves are evaluated exactly (f_p directly, f_p⁻¹ by bisection) and the value
        # is min{f_p, f_p⁻¹} on edges between samples of one curve (that curve lies below its
        # chord) and min{chord, f_p, f_p⁻¹} on bridges. Every term is ≥ the exact minorant, so
        # the minimum only removes excess: where f_p ≈ f_p⁻¹ (p near 1) round-off makes the
        # hull hop between the curves, and one curve's samples can be sparser than the other's.
        fv, cv = self._fp(a), self._cfp(a)
        inv = self._fp_inverse(a, np.zeros_like(a), 1.0 - a)  # f_p ≤ Id ⇒ f_p⁻¹(t) ≤ 1 − t
        same = (c0 == c1) & (c0 != 2)
        val = np.where(same, np.inf, val)
        comp = np.where(same, -np.inf, comp)
        # ties within round-off go to the curve whose complement is accurate there: f_p for
        # α < 1/2 (1 − f_p⁻¹(α) ≈ 1 − (a number near 1) would lose all relative precision)
        low = a < 0.5
        sel_a = fv - np.where(low, 4e-16, 0.0)
        sel_b = inv - np.where(low, 0.0, 4e-16)
        use_a = (sel_a <= val) & (sel_a <= sel_b)
        use_b = ~use_a & (sel_b <= val)
        val = np.where(use_a, fv, np.where(use_b, inv, val))
        comp = np.where(use_a, cv, np.where(use_b, 1.0 - inv, comp))
        return val.reshape(shape), comp.reshape(shape)

    def _eval(self, alpha):
        if self.p == 1.0:
            return self.base._eval(alpha)
        if self.p == 0.0:
            return 1.0 - alpha
        return self._evaluate(alpha)[0]

    def _complement(self, alpha):
        if self.p == 1.0:
            return self.base._complement(alpha)
        if self.p == 0.0:
            return np.asarray(alpha, dtype=np.float64).copy()
        return self._evaluate(alpha)[1]

    def _kinks(self):
        return self.base._kinks()


class SubsampledDPTradeoff(_Subsampled):
    """C_p(f_{ε,δ}) in closed form ([DRS] Corollary 4.3):

    max{ f_{ε',δ'}(α), 1 − pδ − p(1 − δ)(e^ε − 1)/(e^ε + 1) − α },
    ε' = ln(1 − p + p e^ε), δ' = pδ.

    The factor (1 − δ) in the middle line comes from the fixed point x* = (1 − δ)/(1 + e^ε)
    of f_{ε,δ}; a secondary summary of [DRS] omits it, which gives a valid but weaker curve
    (docs/THEORY.md §6).

    Parameters
    ----------
    epsilon : float
        ε ∈ [0, ∞).
    delta : float
        δ ∈ [0, 1].
    p : float
        Sampling probability in [0, 1].

    Raises
    ------
    ValueError
        On ε < 0, δ ∉ [0, 1] or p ∉ [0, 1].
    """

    def __init__(self, epsilon: float, delta: float, p: float) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        super().__init__(DPTradeoff(self.epsilon, self.delta), check_probability(p, "p"))
        self.epsilon_prime = log1p_c_expm1(self.epsilon, self.p)
        self.delta_prime = self.p * self.delta
        self._outer = DPTradeoff(self.epsilon_prime, self.delta_prime)
        # 1 − c, with c the intercept of the middle line: pδ + p(1 − δ)(e^ε − 1)/(e^ε + 1),
        # which is p δ_f(0), the profile identity at ε' = 0
        self._one_minus_c = self.p * self.base._delta(0.0)

    @property
    def name(self) -> str:
        return (
            f"SubsampledDPTradeoff(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"p={self.p!r})"
        )

    def _eval(self, alpha):
        return np.maximum(self._outer._eval(alpha), (1.0 - self._one_minus_c) - alpha)

    def _complement(self, alpha):
        return np.minimum(self._outer._complement(alpha), self._one_minus_c + alpha)

    def _kinks(self):
        return self._outer._kinks()

    def _fixed_point(self):
        return 0.5 * (1.0 - self._one_minus_c)


class _Eq14Tradeoff(_Subsampled):
    """C_p(f) by [DRS] Eq. 14 (f symmetric, x* = f(x*)):
    f_p on [0, x*]; x* + f_p(x*) − α on [x*, f_p(x*)]; f_p⁻¹ on [f_p(x*), 1]."""

    def __init__(self, base: TradeoffFunction, p: float) -> None:
        super().__init__(base, p)
        self.x_star = base._fixed_point()
        # f_p(x*) with f(x*) = x*: exact even where x* underflows to 0 (Laplace μ > 1490)
        self.fp_x_star = p * self.x_star + (1.0 - p) * (1.0 - self.x_star)

    @property
    def name(self) -> str:
        return f"subsampled_closed_form({self.base!r}, p={self.p!r})"

    def _both(self, alpha):
        a = np.asarray(alpha, dtype=np.float64).reshape(-1)
        xs, fx = self.x_star, self.fp_x_star
        val = np.empty_like(a)
        comp = np.empty_like(a)
        left, right = a <= xs, a >= fx
        midm = ~left & ~right
        val[left], comp[left] = self._fp(a[left]), self._cfp(a[left])
        val[midm] = xs + fx - a[midm]
        comp[midm] = (1.0 - xs - fx) + a[midm]
        if np.any(right):
            t = a[right]
            inv = self._fp_inverse(t, np.zeros_like(t), np.full_like(t, xs))
            inv = np.where(t >= float(self._fp(np.asarray(0.0))), 0.0, inv)
            val[right], comp[right] = inv, 1.0 - inv
        return val.reshape(np.shape(alpha)), comp.reshape(np.shape(alpha))

    def _eval(self, alpha):
        return self._both(alpha)[0]

    def _complement(self, alpha):
        return self._both(alpha)[1]

    def _fixed_point(self):
        return 0.5 * (self.x_star + self.fp_x_star)


def subsampled_closed_form(f, p: float) -> TradeoffFunction:
    """C_p(f) by the closed form [DRS] Eq. 14, for a symmetric trade-off function f.

    With x* the fixed point f(x*) = x* (closed form for the classical curves, else root
    finding): C_p(f)(α) = f_p(α) on [0, x*], x* + f_p(x*) − α on [x*, f_p(x*)], and
    f_p⁻¹(α) (bisection) on [f_p(x*), 1].

    Parameters
    ----------
    f : TradeoffFunction or callable
        Symmetric trade-off function.
    p : float
        Sampling probability in [0, 1].

    Returns
    -------
    TradeoffFunction

    Raises
    ------
    ValueError
        If p ∉ [0, 1] or f is not symmetric.
    """
    p = check_probability(p, "p")
    tf = as_symmetric(f, "f")
    if p == 1.0:
        return tf
    if p == 0.0:
        return IdentityTradeoff()
    return _Eq14Tradeoff(tf, p)


def amplify_tradeoff(f, p: float) -> TradeoffFunction:
    """C_p(f) computed numerically: the f-DP guarantee of a subsampled f-DP mechanism
    ([DRS] Theorem 4.2) and, with p = p*, of A_D under MAR missing data (docs/THEORY.md §7).

    Parameters
    ----------
    f : TradeoffFunction or callable
        Symmetric trade-off function of the base mechanism.
    p : float
        Sampling (observation) probability in [0, 1].

    Returns
    -------
    SubsampledTradeoff

    Raises
    ------
    ValueError
        If p ∉ [0, 1] or f is not symmetric.
    """
    p = check_probability(p, "p")
    return SubsampledTradeoff(as_symmetric(f, "f"), p)
