"""A certified bracket on the exact ε of a persistent-mask pair for small k: adaptive boxes
(docs/THEORY.md §10.7, **derived in this project**).

The pair of :class:`audit.theory.persistent.PersistentPair` is, with the missing reading m
subtracted (α = a − m, β = b − m),

    P = Σ_M π(M) Π_t N(y_t; α M_t, σ²)   against   Q = Σ_M π(M) Π_t N(y_t; β M_t, σ²),

a mixture over the 2^k mask paths M of the Markov chain (π exact). Its hockey-stick divergence
δ(ε) = ∫ (p − e^ε q)_+ is bracketed on a partition of the first k − 1 coordinates y′ into
axis-aligned boxes C, the last coordinate y_k integrated in closed form on each box:

**Lower bound.** For any set S, δ(ε) ≥ P(S) − e^ε Q(S). Take S the union over boxes of
C × T_C, with T_C ⊂ ℝ where the box marginals p̃_C(y_k) = Σ_j P_j(C) N(y_k; α j, σ²) and
q̃_C (the same with β) satisfy p̃_C > e^ε q̃_C. P_j(C), Q_j(C) are exact (path weights times
products of normal interval masses), T_C is a union of at most two intervals (the roots of a
sum of three exponentials, found by bisection), and P(C × T_C) − e^ε Q(C × T_C) is computed
exactly at whatever T_C the root finder returns: a lower bound for any T_C.

**Upper bound.** Factor p = Π_{t<k} φ(y_t) · Σ_j a_j(y′) N(y_k; α j, σ²) with φ the N(0, σ²)
density and a_j(y′) = Σ_{M: M_k = j} π(M) Π_{t<k} exp(M_t(α y_t − α²/2)/σ²), and q alike with
b_j. The integrand (Σ_j a_j N_j − e^ε Σ_j b_j N′_j)_+ is increasing in a, decreasing in b and
jointly convex in (a, b). On a box, a_j(y′) is at most its multilinear interpolation between
the box's corners (each factor exp(c·y_t) is convex, hence below its chord, and positive) and
b_j(y′) at least its tangent plane at the centre (b_j is convex); so with w_v(y′) the
multilinear weights of the corners v,

    ∫_C ∫ (p − e^ε q)_+ ≤ Σ_v h(W_v a(v), W_v ℓ(v)),   W_v = ∫_C Π_t φ(y_t) w_v(y′) dy′,

h(A, B) = ∫ (Σ_j A_j N_j − e^ε Σ_j B_j N′_j)_+ dy_k in closed form (normal masses between its
roots), ℓ the tangent plane. Both ends are second order in the box size, so the bracket
closes as boxes that straddle the crossing are split. P outside the outer box (10σ beyond
the means in each of the k − 1 coordinates) and the last coordinate beyond 12σ are added to
the upper end; a root's bisection bracket adds its width times the largest density; every
sum adds 64 ulps of its absolute terms to the upper end and takes them from the lower end, so
both ends are bounds up to floating-point rounding far below that margin.

ε from each δ-bound by a bisection that keeps its invariant: the lower end is an ε at which
the δ lower bound still exceeds δ (so the pair's δ(ε) > δ there), the upper end an ε at which
the δ upper bound is at most δ. Both orders (P‖Q and Q‖P) are bracketed; the pair's ε is the
larger.

Cost: 2^(k−1) closed-form 1-d integrals per box and ε; boxes grow with k − 1 dimensions, so
the method is used for k ≤ :data:`MAX_BOX_RELEASES` (measured run times in
docs/THEORY.md §10.7).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

__all__ = ["BoxBracket", "box_bracket", "path_probabilities", "MAX_BOX_RELEASES"]

#: most releases the box bracket is computed for (k − 1 dimensions of boxes)
MAX_BOX_RELEASES = 4

_ULP = 64 * np.finfo(float).eps
#: the outer box: this many σ beyond the means in each of the first k − 1 coordinates
_OUTER_Z = 10.0
#: the last coordinate's window: this many σ beyond the means
_WINDOW_Z = 12.0
_ROOT_STEPS = 64
#: the largest ε searched (e^ε stays a float)
_EPS_CAP = 600.0


@dataclass(frozen=True)
class BoxBracket:
    """The pair's ε at δ: ``lower`` ≤ ε ≤ ``upper`` (both certified); ``boxes`` the final
    partition's size, ``seconds`` the time taken, ``converged`` whether the width reached the
    tolerance asked for."""

    lower: float
    upper: float
    boxes: int
    seconds: float
    converged: bool

    @property
    def error(self) -> float:
        return self.upper - self.lower


def path_probabilities(releases: int, q: float, persistence: float):
    """The 2^k mask paths (rows of 0/1, 1 observed) and their probabilities under the chain:
    observed with probability q at the first collection, the mask kept with probability r
    and redrawn (observed with probability q) otherwise."""
    k, r = int(releases), float(persistence)
    paths = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int64)
    trans = np.array([[r + (1 - r) * (1 - q), (1 - r) * q],
                      [(1 - r) * (1 - q), r + (1 - r) * q]])
    prob = np.where(paths[:, 0] == 1, q, 1 - q).astype(float)
    for t in range(1, k):
        prob = prob * trans[paths[:, t - 1], paths[:, t]]
    return paths, prob


def _mass(lo, hi, mean: float, sigma: float):
    """N(mean, σ²)'s mass of [lo, hi] (arrays), from the tail on the interval's side."""
    a, b = (lo - mean) / sigma, (hi - mean) / sigma
    return np.where(a > 0, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))


def _phi(y, sigma: float):
    return np.exp(-0.5 * (y / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


class _Line:
    """h(A, B) = ∫ (A0 N(y; 0) + A1 N(y; α) − e^ε (B0 N(y; 0) + B1 N(y; β)))_+ dy, σ², for
    arrays of coefficients: (the integral over the set found, so ≤ h up to rounding; the
    rounding margin; what the set may miss, so h ≤ value + rounding + missed)."""

    def __init__(self, alpha: float, beta: float, sigma: float):
        self.alpha, self.beta, self.sigma = alpha, beta, sigma
        self.s1, self.s2 = alpha / sigma ** 2, beta / sigma ** 2
        self.k1 = math.exp(-0.5 * (alpha / sigma) ** 2)
        self.k2 = math.exp(-0.5 * (beta / sigma) ** 2)
        self.L = min(0.0, alpha, beta) - _WINDOW_Z * sigma
        self.R = max(0.0, alpha, beta) + _WINDOW_Z * sigma
        self.tail = 2 * float(ndtr(-_WINDOW_Z))

    def __call__(self, A: np.ndarray, B: np.ndarray, gamma: float):
        shape = A.shape[:-1]
        value, rounding, missed = self._flat(A.reshape(-1, 2), B.reshape(-1, 2), gamma)
        return value.reshape(shape), rounding.reshape(shape), missed.reshape(shape)

    def _flat(self, A: np.ndarray, B: np.ndarray, gamma: float):
        # an overflow gives inf or NaN, and NaN compares false: a lower end then stays lower
        # and an upper end higher (the bisections keep their invariants)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._integrate(A, B, gamma)

    def _integrate(self, A: np.ndarray, B: np.ndarray, gamma: float):
        sig = self.sigma
        c0 = A[..., 0] - gamma * B[..., 0]
        c1 = A[..., 1] * self.k1
        c2 = -gamma * B[..., 1] * self.k2
        s1, s2 = self.s1, self.s2

        def g(y):  # f(y) / N(y; 0, σ²): the sign of the integrand
            with np.errstate(over="ignore", invalid="ignore"):
                return c0 + c1 * np.exp(s1 * y) + c2 * np.exp(s2 * y)

        L = np.full(c0.shape, self.L)
        R = np.full(c0.shape, self.R)
        # g' = c1 s1 e^{s1 y} + c2 s2 e^{s2 y} has at most one zero: g is monotone on each side
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = -(c2 * s2) / (c1 * s1)
            yc = np.where((ratio > 0) & np.isfinite(ratio) & (s1 != s2),
                          np.log(np.where(ratio > 0, ratio, 1.0)) / (s1 - s2), L)
        yc = np.clip(np.nan_to_num(yc, nan=self.L), L, R)
        roots, widths = [], []
        for lo, hi in ((L, yc), (yc, R)):
            glo, ghi = g(lo), g(hi)
            change = (glo > 0) != (ghi > 0)
            root = hi.copy()  # no change: a zero-length segment after the piece
            width = np.zeros(c0.shape)
            idx = np.flatnonzero(change)
            if idx.size:
                a, b = lo[idx], hi[idx]
                cc0, cc1, cc2 = c0[idx], c1[idx], c2[idx]
                pos_lo = glo[idx] > 0

                def gi(y, cc0=cc0, cc1=cc1, cc2=cc2):
                    with np.errstate(over="ignore", invalid="ignore"):
                        return cc0 + cc1 * np.exp(s1 * y) + cc2 * np.exp(s2 * y)

                if s1 != 0.0 and s2 == 0.0:  # c0 + c2 + c1 e^{s1 y}: the root in closed form
                    with np.errstate(divide="ignore", invalid="ignore"):
                        guess = np.log(-(cc0 + cc2) / cc1) / s1
                    w = 1e-12 * (1.0 + np.abs(guess))
                    ga, gb = np.maximum(a, guess - w), np.minimum(b, guess + w)
                    ok = np.isfinite(guess) & ((gi(ga) > 0) == pos_lo) & ((gi(gb) > 0) != pos_lo)
                    a, b = np.where(ok, ga, a), np.where(ok, gb, b)
                for _ in range(_ROOT_STEPS):
                    if np.all(b - a <= 1e-12 * (1.0 + np.abs(a))):
                        break
                    mid = 0.5 * (a + b)
                    same = (gi(mid) > 0) == pos_lo
                    a = np.where(same, mid, a)
                    b = np.where(same, b, mid)
                root[idx] = 0.5 * (a + b)
                width[idx] = b - a
            roots.append(root)
            widths.append(width)
        cuts = [L, roots[0], yc, roots[1], R]
        value = np.zeros(c0.shape)
        absolute = np.zeros(c0.shape)
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            idx = np.flatnonzero((hi > lo) & (g(0.5 * (lo + hi)) > 0))
            if not idx.size:
                continue
            sl, sh = lo[idx], hi[idx]
            t0 = c0[idx] * _mass(sl, sh, 0.0, sig)
            t1 = A[idx, 1] * _mass(sl, sh, self.alpha, sig)
            t2 = gamma * B[idx, 1] * _mass(sl, sh, self.beta, sig)
            value[idx] += t0 + t1 - t2
            absolute[idx] += np.abs(t0) + np.abs(t1) + np.abs(t2)
        # beyond the window and inside a root's bracket, f_+ is at most its positive terms
        scale = (np.maximum(A, 0.0).sum(-1) + gamma * np.maximum(-B, 0.0).sum(-1))
        missed = scale * (self.tail + (widths[0] + widths[1]) / (sig * math.sqrt(2 * math.pi)))
        return value, _ULP * absolute, missed


class _Direction:
    """The δ bounds of P (observed at shift α) against Q (shift β) on a partition of boxes."""

    def __init__(self, alpha, beta, sigma, paths, prob):
        self.alpha, self.beta, self.sigma = alpha, beta, sigma
        self.paths, self.prob = paths, prob
        self.k = paths.shape[1]
        self.d = self.k - 1
        self.line = _Line(alpha, beta, sigma)
        self.corners = np.array(list(itertools.product((0, 1), repeat=self.d)),
                                dtype=np.int64).reshape(-1, self.d)
        lo = min(0.0, alpha, beta) - _OUTER_Z * sigma
        hi = max(0.0, alpha, beta) + _OUTER_Z * sigma
        self.outer = (lo, hi)
        # P of y′ outside the outer box: each coordinate a mixture of N(0) and N(α)
        self.outside = self.d * max(float(ndtr((lo - m) / sigma) + ndtr((m - hi) / sigma))
                                    for m in (0.0, alpha))

    def prepare(self, lo: np.ndarray, hi: np.ndarray) -> dict:
        """Everything ε does not change, for boxes [lo, hi] (n × (k − 1))."""
        sig, a, b = self.sigma, self.alpha, self.beta
        paths, prob, d = self.paths, self.prob, self.d
        last = paths[:, -1]
        n = lo.shape[0]
        # lower end: the box marginals' coefficients P_j(C), Q_j(C)
        m0 = _mass(lo, hi, 0.0, sig)
        ma, mb = _mass(lo, hi, a, sig), _mass(lo, hi, b, sig)
        Pm = np.ones((n, len(prob)))
        Qm = np.ones((n, len(prob)))
        for t in range(d):
            obs = paths[:, t] == 1
            Pm *= np.where(obs, ma[:, t:t + 1], m0[:, t:t + 1])
            Qm *= np.where(obs, mb[:, t:t + 1], m0[:, t:t + 1])
        Pm *= prob
        Qm *= prob
        low_A = np.stack([Pm[:, last == 0].sum(1), Pm[:, last == 1].sum(1)], axis=-1)
        low_B = np.stack([Qm[:, last == 0].sum(1), Qm[:, last == 1].sum(1)], axis=-1)
        # upper end: corner weights W_v, a(v) at the corners, b's tangent plane at the centre
        width = hi - lo
        c = 0.5 * (lo + hi)
        first = sig ** 2 * (_phi(lo, sig) - _phi(hi, sig)) - c * m0  # ∫ φ (y − c)
        w_hi = np.clip(0.5 * m0 + first / width, 0.0, m0)
        w_lo = m0 - w_hi
        corner_y = np.where(self.corners[None, :, :] == 1, hi[:, None, :], lo[:, None, :])
        W = np.prod(np.where(self.corners[None, :, :] == 1, w_hi[:, None, :],
                             w_lo[:, None, :]), axis=-1)  # n × 2^d
        obs = paths[:, :d].astype(float)  # paths × d
        with np.errstate(over="ignore"):
            ea = np.exp((corner_y @ obs.T * a - 0.5 * a * a * obs.sum(1)) / sig ** 2) * prob
            eb = np.exp((c @ obs.T * b - 0.5 * b * b * obs.sum(1)) / sig ** 2) * prob  # n × paths
        av = np.stack([ea[..., last == 0].sum(-1), ea[..., last == 1].sum(-1)], axis=-1)
        bc = np.stack([eb[:, last == 0].sum(-1), eb[:, last == 1].sum(-1)], axis=-1)  # n × 2
        # gradient of b_j at the centre along each coordinate: n × 2 × d
        grad = np.stack([(eb[:, last == j, None] * obs[None, last == j, :]).sum(1) * b / sig ** 2
                         for j in (0, 1)], axis=1)
        offset = (corner_y - c[:, None, :])  # n × 2^d × d
        lv = bc[:, None, :] + np.einsum("njd,nvd->nvj", grad, offset)
        # b_j's least value on the box (each term monotone, all the same way): also a lower
        # plane; taken where the tangent drops below it at a corner (a box wide for b's
        # curvature). Either choice is a lower bound on b_j, so the rule only affects the width
        y_min = lo if b >= 0 else hi
        with np.errstate(over="ignore"):
            em = np.exp((y_min @ obs.T * b - 0.5 * b * b * obs.sum(1)) / sig ** 2) * prob
        bmin = np.stack([em[:, last == 0].sum(-1), em[:, last == 1].sum(-1)], axis=-1)
        flat = (lv < bmin[:, None, :]).any(axis=1)  # n × 2
        lv = np.where(flat[:, None, :], bmin[:, None, :], lv)
        return {"low_A": low_A, "low_B": low_B, "up_A": W[..., None] * av,
                "up_B": W[..., None] * lv, "finite": bool(np.all(np.isfinite(av)))}

    def lower(self, data: dict, eps: float) -> np.ndarray:
        """Per box, a lower bound on ∫_C∫(p − e^ε q)_+ (the box marginals' set)."""
        value, rounding, _ = self.line(data["low_A"], data["low_B"], math.exp(eps))
        return np.maximum(value - rounding, 0.0)  # any set T_C: the missed parts not needed

    def upper(self, data: dict, eps: float) -> np.ndarray:
        """Per box, an upper bound on ∫_C∫(p − e^ε q)_+ (the corners' convex bound)."""
        value, rounding, missed = self.line(data["up_A"], data["up_B"], math.exp(eps))
        return np.maximum(value + rounding + missed, 0.0).sum(-1)


def _grid(lo: float, hi: float, d: int, n: int):
    edges = np.linspace(lo, hi, n + 1)
    cells = list(itertools.product(range(n), repeat=d))
    idx = np.array(cells, dtype=np.int64).reshape(-1, d)
    return edges[idx], edges[idx + 1]


def _split(lo: np.ndarray, hi: np.ndarray):
    """Each box into its 2^d halves."""
    d = lo.shape[1]
    mid = 0.5 * (lo + hi)
    halves = np.array(list(itertools.product((0, 1), repeat=d)), dtype=np.int64).reshape(-1, d)
    nlo = np.where(halves[None] == 0, lo[:, None], mid[:, None]).reshape(-1, d)
    nhi = np.where(halves[None] == 0, mid[:, None], hi[:, None]).reshape(-1, d)
    return nlo, nhi


class _Partition:
    def __init__(self, direction: _Direction, cells: int):
        self.dir = direction
        self.lo, self.hi = _grid(*direction.outer, direction.d, cells)
        self.data = direction.prepare(self.lo, self.hi)

    def total_lower(self, eps: float) -> float:
        return float(self.dir.lower(self.data, eps).sum())

    def total_upper(self, eps: float) -> float:
        return float(self.dir.upper(self.data, eps).sum() + self.dir.outside)

    def refine(self, eps: float, target: float, limit: int) -> None:
        """Split the boxes with the largest gaps at ε until those kept hold at most a quarter
        of ``target`` (the split ones shrink by about 4 each round), leaving at most
        ``limit`` boxes (the largest gaps first)."""
        gap = self.dir.upper(self.data, eps) - self.dir.lower(self.data, eps)
        order = np.argsort(gap)  # ascending: keep the smallest while their sum stays small
        keep_sum = np.cumsum(gap[order])
        n_keep = int(np.searchsorted(keep_sum, 0.25 * target, side="right"))
        n_keep = min(n_keep, len(gap) - 1)
        most = max(1, (limit - len(gap)) // (2 ** self.dir.d - 1))
        n_keep = max(n_keep, len(gap) - most)
        split = order[n_keep:]
        keep = order[:n_keep]
        nlo, nhi = _split(self.lo[split], self.hi[split])
        new = self.dir.prepare(nlo, nhi)
        self.data = {key: (np.concatenate([self.data[key][keep], new[key]])
                           if key != "finite" else self.data[key] and new[key])
                     for key in self.data}
        self.lo = np.concatenate([self.lo[keep], nlo])
        self.hi = np.concatenate([self.hi[keep], nhi])

    @property
    def size(self) -> int:
        return self.lo.shape[0]


def _kept_end(f, keep, kept: float, other: float, xtol: float) -> float:
    """Regula falsi (Illinois) on ``f`` between ``kept``, where ``keep(f)`` holds, and
    ``other``, where it does not: every new point joins the end on its side, so the
    returned end (within ``xtol`` of the crossing) still satisfies ``keep``."""
    fk, fo = f(kept), f(other)
    last = 0
    while abs(other - kept) > xtol:
        x = kept - fk * (other - kept) / (fo - fk) if math.isfinite(fo) and fo != fk \
            else 0.5 * (kept + other)
        x = min(max(x, min(kept, other) + 0.25 * xtol), max(kept, other) - 0.25 * xtol)
        fx = f(x)
        if keep(fx):
            kept, fk = x, fx
            if last == 1:
                fo *= 0.5
            last = 1
        else:
            other, fo = x, fx
            if last == -1:
                fk *= 0.5
            last = -1
    return kept


def _log_excess(bound, delta: float):
    return lambda e: math.log(max(bound(e), 1e-300)) - math.log(delta)


def _last_above(bound, delta: float, good: float, bad: float, xtol: float) -> float:
    """An ε within ``xtol`` below the crossing where the non-increasing ``bound`` meets
    ``delta``, with bound(ε) > delta kept at ``good`` (and bound ≤ delta at ``bad``)."""
    return _kept_end(_log_excess(bound, delta), lambda v: v > 0, good, bad, xtol)


def _first_below(bound, delta: float, bad: float, good: float, xtol: float) -> float:
    """An ε within ``xtol`` above the crossing, with bound(ε) ≤ delta kept at ``good`` (and
    bound > delta at ``bad`` < ``good``)."""
    return _kept_end(_log_excess(bound, delta), lambda v: v <= 0, good, bad, xtol)


def _ends(part: _Partition, lo_start: float, hi_start: float, delta: float,
          xtol: float) -> tuple[float, float]:
    """(ε_lower, ε_upper) of one order on the current partition, within [``lo_start``,
    ``hi_start``] where they are bounds."""
    d_ = delta
    cap = min(hi_start, _EPS_CAP) if math.isfinite(hi_start) else 64.0
    # lower: an ε with δ_lower(ε) > δ (0 when none: a true but empty lower end)
    lo_eps = 0.0
    if part.total_lower(0.0) > d_:
        good = lo_start if 0 < lo_start < cap and part.total_lower(lo_start) > d_ else 0.0
        bad = cap
        while part.total_lower(bad) > d_ and bad < _EPS_CAP:
            good, bad = bad, min(2.0 * bad, _EPS_CAP)
        if part.total_lower(bad) <= d_:
            lo_eps = _last_above(part.total_lower, d_, good, bad, xtol)
        else:
            lo_eps = good
    # upper: an ε with δ_upper(ε) ≤ δ (∞ when none at or below the known upper end)
    if part.total_upper(cap) > d_:
        return lo_eps, math.inf
    if part.total_upper(lo_eps) <= d_:
        return lo_eps, lo_eps
    return lo_eps, _first_below(part.total_upper, d_, lo_eps, cap, xtol)


def box_bracket(pair, delta: float, *, lower: float = 0.0, upper: float = math.inf,
                tolerance: float | None = None, max_boxes: int = 200_000,
                time_budget: float = 20.0, xtol: float = 1e-5) -> BoxBracket:
    """A certified bracket on the ε at ``delta`` (> 0) of ``pair`` (a
    :class:`audit.theory.persistent.PersistentPair` with 2 ≤ k ≤ ``MAX_BOX_RELEASES``), by
    adaptive boxes (module docstring), started from a known bracket [``lower``, ``upper``]
    (each a bound; the result never leaves it).

    Refines until the width is at most ``tolerance`` (default: 0.5 % of ε, or 1e-3 if larger),
    the partition reaches ``max_boxes`` boxes or ``time_budget`` seconds pass; the result is
    a bracket whatever stops it (``converged`` says which).

    Raises
    ------
    ValueError
        On δ outside (0, 1), or k outside [2, ``MAX_BOX_RELEASES``].
    """
    start = time.perf_counter()
    d_ = float(delta)
    if not 0.0 < d_ < 1.0:
        raise ValueError(f"delta must be in (0, 1) for the box bracket, got delta={delta!r}")
    k = pair.releases
    if not 2 <= k <= MAX_BOX_RELEASES:
        raise ValueError(f"releases must be an integer in [2, {MAX_BOX_RELEASES}] for the box "
                         f"bracket, got releases={k!r}")
    paths, prob = path_probabilities(k, pair.q, pair.persistence)
    keep = prob > 0
    paths, prob = paths[keep], prob[keep]
    alpha, beta = pair.a - pair.na, pair.b - pair.na

    def tol(eps: float) -> float:
        if tolerance is not None:
            return tolerance
        return max(1e-3, 0.005 * eps)

    parts = [_Partition(_Direction(x, y, pair.sigma, paths, prob), 8)
             for x, y in ((alpha, beta), (beta, alpha))]
    if not all(p.data["finite"] for p in parts):
        return BoxBracket(lower, upper, 0, time.perf_counter() - start, False)

    lows, ups = [0.0, 0.0], [upper, upper]
    active = [0, 1]
    converged = False
    target_scale = 0.05
    while True:
        began = time.perf_counter()
        found = [_ends(parts[i], lower, upper, d_, xtol) for i in active]
        for i, (lo_i, up_i) in zip(active, found, strict=True):
            lows[i], ups[i] = lo_i, up_i
        took = time.perf_counter() - began
        lo_all = max(lower, *lows)
        up_all = min(upper, max(ups))
        if up_all - lo_all <= tol(up_all):
            converged = True
            break
        # an order whose upper end is below the pair's lower end no longer matters
        active = [i for i in (0, 1) if ups[i] > lo_all]
        if not active or any(parts[i].size >= max_boxes for i in active):
            break
        mid = 0.5 * (lo_all + min(up_all, lo_all + 1.0))
        old = sum(parts[i].size for i in active)
        for i in active:
            parts[i].refine(mid, target_scale * d_, max_boxes)
        target_scale /= 4.0
        # the next round's search costs about as much per box as this one's
        grown = sum(parts[i].size for i in active) / max(old, 1)
        if time.perf_counter() - start + took * grown > time_budget:
            break
    return BoxBracket(lo_all, max(up_all, lo_all), sum(p.size for p in parts),
                      time.perf_counter() - start, converged)
