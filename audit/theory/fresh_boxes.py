"""Fresh masks: a certified branch and bound over the pairs of the domain
(docs/THEORY.md §10.4, **derived in this project**).

With a fresh mask per release, a fixed pair (c, c′) of records gives the k releases
(P_c^{⊗k}, P_c′^{⊗k}), P_c = (1 − q)·N_m + q·N_c. Whether some pair of two observed records
is worse than every candidate pair of the corner lemma ({lo, hi, NA}) is not proven
(§10.4), so this module bounds every pair instead, on boxes A × B of ordered pairs
(c ∈ A, c′ ∈ B, two intervals of the domain).

**One release, every pair of a box, at every γ ≥ 1.**

1. *The denominator at an end of B.* p_c − γ p_c′ has one positive coefficient, so its
   positive set S is an interval (§10.2, step (i)), and x ↦ N_x(S) is log-concave, so
   D_γ(P_c ‖ P_c′) ≤ max(D_γ(P_c ‖ P_b₁), D_γ(P_c ‖ P_b₂)) for c′ ∈ B = [b₁, b₂].
2. *The numerator by a chord.* For c ∈ A = [a₁, a₂] (h = a₂ − a₁) and weights w₁ = (a₂ − c)/h,
   w₂ = (c − a₁)/h, the kernel at c is at most w₁f₁ + w₂f₂ pointwise, where
   - Gaussian: f_i = e^{h²/8σ²}·N_{a_i} (the chord of the convex e^{t(y − a₀)/σ²} over
     t = c − a₀ ∈ [−h/2, h/2], a₀ the midpoint, and e^{−t²/2σ²} ≤ 1);
   - Laplace: f_i = N_{a_i} outside A and the kernel's peak 1/(2b) on A (outside A the kernel
     is an exponential in c, below its chord; on A it is below its peak).
   The integral of the positive part is convex in the numerator, so D_γ(P_c ‖ P_b) ≤
   max_i ∫((1 − q)(1 − γ)n_m + q f_i − γq n_b)_+: four integrals of explicit functions per
   γ, each exact in closed form up to its roots, with a margin for their rounding. The
   excess of f_i over a probability law is of second order in h (e^{h²/8σ²} − 1, and
   ≈ h²/4b² on A), so the bound tends to the box's worst corner as the box shrinks.

The box's profile on a grid of ε: these bounds of the order (A, B) at ε ≥ 0, and at ε < 0 the
conjugate 1 − γ + γ·(bound of the order (B, A) at 1/γ). Their Connect-the-Dots PMF
(:func:`audit.theory.pair.ctd.ctd_pessimistic_pmf`) dominates every pair of the box in this
order (Blackwell), so its k-fold composition bounds (P_c^{⊗k} ‖ P_c′^{⊗k}) for every (c, c′)
of the box. A branch and bound halves the boxes whose composed ε exceeds the target.

Pairs with the missing record are dominated by the candidate with the domain's end on the
record's side (§10.4), so they need no box; with NA inside the domain it is the record m.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from audit._validate import (
    check_count,
    check_delta,
    check_in_range,
    check_interval,
    check_positive,
    check_real,
)
from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.theory.pair.ctd import ctd_pessimistic_pmf, envelope_pmf
from audit.theory.pair.masses import interval_masses
from audit.theory.pld import DISCRETIZATION, compose_epsilon, envelope_pld, loss_step, pair_pmfs

__all__ = ["BoxResult", "box_profile", "envelope_epsilon", "fresh_boxes"]

#: relative margin per integral for the rounding of its terms (their absolute sum)
_MARGIN = 1e-13
#: a one-release δ below this at the top of a Gaussian grid goes to the infinite loss
_TAIL = 1e-18
#: bisection steps for a Gaussian root (a float bracket is exhausted well before)
_BISECT = 80
#: the loss grid step of a box's profile: Connect-the-Dots is exact at the grid points and
#: of second order between, so a step of 1e-3 moves the composed ε by ~1e-5 (measured at
#: k = 100) and costs a tenth of 1e-4
BOX_STEP = 1e-3


@dataclass(frozen=True)
class _Law:
    """The fresh-mask release of one record: noise, its scale, NA's reading m, q."""

    noise: NoiseKind
    scale: float
    m: float
    q: float


# ------------------------------------------------------------------------------ Laplace
def _laplace_integral(law: _Law, A: tuple[float, float], i: int, b: float,
                      gam: np.ndarray) -> np.ndarray:
    """Upper bound on ∫ (g)_+, g = (1 − q)(1 − γ)n_m + q f_i − γq n_b, f_i the kernel at
    a_i flattened to its peak on A (module docstring): exact on each piece between the
    breakpoints {m, b, a₁, a₂}, where g is (A e^u + B e^{−u} + C)/(2s), u = (y − z)/s."""
    s, q, m = law.scale, law.q, law.m
    a1, a2 = A
    ai = A[i]
    kern = [(m, (1 - q) * (1 - gam)), (b, -q * gam), (ai, np.full_like(gam, q))]
    z = np.unique([m, b, a1, a2])
    total = np.zeros_like(gam)
    terms = np.zeros_like(gam)
    for edge in (z[0], z[-1]):  # beyond the breakpoints g is one exponential
        c = sum(w * math.exp(-abs(edge - x) / s) for x, w in kern)
        total += 0.5 * np.maximum(c, 0.0)
        terms += np.where(c > 0, 0.5 * sum(np.abs(w) * math.exp(-abs(edge - x) / s)
                                          for x, w in kern), 0.0)
    for lo, hi in zip(z[:-1], z[1:], strict=True):
        flat = a1 <= lo and hi <= a2
        coef = [np.zeros_like(gam) for _ in range(3)]  # of e^u, e^{−u}, 1
        for x, w in kern[:2] + ([] if flat else kern[2:]):
            if x >= hi:
                coef[0] += w * math.exp((lo - x) / s)
            else:
                coef[1] += w * math.exp((x - lo) / s)
        if flat:
            coef[2] += q
        value, size = _exp_piece(*coef, (hi - lo) / s)
        total += 0.5 * value
        terms += 0.5 * size
    return total + _MARGIN * terms


def _exp_piece(A: np.ndarray, B: np.ndarray, C: np.ndarray, w: float):
    """(∫₀^w (A e^u + B e^{−u} + C)_+ du, the absolute size of the terms summed) per entry:
    the roots of A t² + C t + B = 0 (t = e^u) cut [0, w] into at most three parts of
    constant sign."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = C * C - 4 * A * B
        sq = np.sqrt(np.where(disc >= 0, disc, np.nan))
        qq = -0.5 * (C + np.copysign(sq, C))
        t1 = np.where(A != 0, qq / A, -B / C)
        t2 = np.where(A != 0, B / qq, np.nan)
        u = [np.clip(np.log(np.where(t > 0, t, np.nan)), 0.0, w) for t in (t1, t2)]
    u = [np.nan_to_num(x, nan=0.0) for x in u]
    cuts = np.sort(np.stack([np.zeros_like(A), *u, np.full_like(A, w)]), axis=0)
    out, size = np.zeros_like(A), np.zeros_like(A)
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        mid = 0.5 * (lo + hi)
        keep = (A * np.exp(mid) + B * np.exp(-mid) + C > 0) & (hi > lo)
        ea, eb, ec = np.exp(hi) - np.exp(lo), -np.expm1(lo - hi) * np.exp(-lo), hi - lo
        out += np.where(keep, np.maximum(A * ea + B * eb + C * ec, 0.0), 0.0)
        size += np.where(keep, np.abs(A) * (np.exp(hi) + np.exp(lo)) + np.abs(C) * (hi + lo)
                         + np.abs(B) * (np.exp(-lo) + np.exp(-hi)), 0.0)
    return out, size


# ----------------------------------------------------------------------------- Gaussian
def _gaussian_integral(law: _Law, A: tuple[float, float], i: int, b: float,
                       gam: np.ndarray) -> np.ndarray:
    """Upper bound on ∫ (g)_+, g = (1 − q)(1 − γ)n_m + q e^{h²/8σ²} n_{a_i} − γq n_b: one
    coefficient is positive, so the positive set is where a concave log-ratio is positive,
    an interval; its ends by bisection, the normal masses between them, and the masses of
    the root brackets added."""
    s, q = law.scale, law.q
    excess = (A[1] - A[0]) ** 2 / (8 * s * s)
    if excess > 700.0:  # no useful chord: D_γ ≤ 1
        return np.ones_like(gam)
    coef: dict[float, np.ndarray] = {}
    for x, w in ((law.m, (1 - q) * (1 - gam)), (b, -q * gam),
                 (A[i], np.full_like(gam, q * math.exp(excess)))):
        coef[x] = coef.get(x, 0.0) + w
    xs = list(coef)
    cs = np.array([np.broadcast_to(coef[x], gam.shape) for x in xs])
    total = np.zeros_like(gam)
    signs = np.sign(cs)  # group the γ whose terms vanish and whose positive one agree
    codes = ((signs + 1) * 3 ** np.arange(len(xs))[:, None]).sum(axis=0)
    for code in np.unique(codes):
        sel = codes == code
        pat = signs[:, np.argmax(sel)]
        if not np.any(pat > 0):
            continue
        j = int(np.argmax(pat))
        neg = [(xs[t], -cs[t][sel]) for t in range(len(xs)) if pat[t] < 0]
        lo, hi, gap_lo, gap_hi = _positive_interval(xs[j], cs[j][sel], neg, s)
        mass = 0.0
        for y, c in [(xs[j], cs[j][sel]), *((y, -d) for y, d in neg)]:
            mass = mass + _normal_mass(y, lo, hi, s, c)
        for end, other in ((lo - gap_lo, lo), (hi, hi + gap_hi)):  # the roots' brackets
            mass = mass + _normal_mass(xs[j], end, other, s, np.abs(cs[j][sel]))
        total[sel] += np.maximum(mass, 0.0)
    return total


def _normal_mass(x: float, lo: np.ndarray, hi: np.ndarray, s: float,
                 c: np.ndarray) -> np.ndarray:
    """c·N(x, s²)([lo, hi]) per entry, rounded up: the tail-accurate masses of
    :func:`audit.theory.pair.masses.interval_masses` and |c| times their rounding bound (none
    where the interval is empty), plus ``_MARGIN`` of the term."""
    mass, err = interval_masses(Mixture([1.0], [x], NoiseKind.GAUSSIAN, s), lo, hi)
    return c * mass + np.abs(c) * np.where(hi > lo, err + _MARGIN * mass, 0.0)


def _positive_interval(x: float, cx: np.ndarray, neg, s: float):
    """(lo, hi, gap_lo, gap_hi): {cx n_x > Σ d n_y} = {L(t) < ln cx} with L(t) = LSE_y(ln d
    + (y − x)(2t − x − y)/2s²) convex, so an interval (lo = hi where it is empty); each end's
    root lies within its gap outside [lo, hi] (their n_x-mass is paid by the caller)."""
    K = np.log(cx)
    al = [np.log(d) - (y - x) * (x + y) / (2 * s * s) for y, d in neg]
    be = [(y - x) / (s * s) for y, _ in neg]

    def L(t):
        out = np.full_like(K, -np.inf)
        for a, c in zip(al, be, strict=True):
            out = np.logaddexp(out, a + c * t)
        return out

    up = [j for j, c in enumerate(be) if c > 0]
    dn = [j for j, c in enumerate(be) if c < 0]
    if up and dn:  # L is smallest where its two slopes balance
        j, k = up[0], dn[0]
        t0 = (np.log(-be[k] / be[j]) - (al[j] - al[k])) / (be[j] - be[k])
    else:  # monotone: start where every term is below K − 1 − ln n
        t0 = np.zeros_like(K)
        for j in up + dn:
            t0 = (np.minimum if be[j] > 0 else np.maximum)(
                t0, (K - 1 - math.log(len(al)) - al[j]) / be[j])
    inside = L(t0) < K
    lo, hi = np.where(inside, -np.inf, t0), np.where(inside, np.inf, t0)
    gaps = [np.zeros_like(K), np.zeros_like(K)]
    for side, js in ((1, up), (-1, dn)):
        if not js:
            continue
        far = (np.min if side > 0 else np.max)([(K - al[j]) / be[j] for j in js], axis=0)
        a, c = np.where(inside, t0, far), far  # L(a) < K ≤ L(c)
        for _ in range(_BISECT):
            mid = 0.5 * (a + c)
            ok = L(mid) < K
            a, c = np.where(ok, mid, a), np.where(ok, c, mid)
        gaps[side > 0] = np.where(inside, np.abs(c - a) + 1e-12 * (s + np.abs(a)), 0.0)
        if side > 0:
            hi = np.where(inside, a, hi)
        else:
            lo = np.where(inside, a, lo)
    return lo, hi, gaps[0], gaps[1]


# ------------------------------------------------------------------ boxes and the search
def _order_bound(law: _Law, A, B, gam: np.ndarray) -> np.ndarray:
    """Upper bound on D_γ(P_c ‖ P_c′) over c ∈ A, c′ ∈ B at every γ ≥ 1 of ``gam``: the
    denominator at an end of B, the numerator's chord over A (module docstring)."""
    integral = _laplace_integral if law.noise is NoiseKind.LAPLACE else _gaussian_integral
    out = np.zeros_like(gam)
    for i in (0, 1):
        for b in B:
            out = np.maximum(out, integral(law, A, i, b, gam))
    return np.minimum(out, 1.0)


def box_profile(law: _Law, A, B, top: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(indices i, upper bounds d_i ≥ D_{e^{ih}}(P_c ‖ P_c′) for every c ∈ A, c′ ∈ B) on the
    grid of step ``h`` over [−top, top]: the order (A, B) at ε ≥ 0 and, at ε < 0, the
    conjugate 1 − γ + γ D_{1/γ}(P_c′ ‖ P_c) of the order (B, A). Laplace: ``top`` is a
    certified bound on one release's largest loss, beyond which the profile is 0. Gaussian:
    the bound has fallen below 1e-18 at ``top``, and Connect-the-Dots puts the last point's
    δ at the infinite loss."""
    n = math.ceil(top / h) + 1
    eps = np.arange(n) * h
    gam = np.exp(eps)
    fwd, rev = _order_bound(law, A, B, gam), _order_bound(law, B, A, gam)
    if law.noise is NoiseKind.LAPLACE:
        fwd[eps >= top] = 0.0
        rev[eps >= top] = 0.0
    neg = (1.0 - 1.0 / gam + rev / gam)[:0:-1]
    return np.arange(-n + 1, n), np.concatenate([neg, fwd])


def _gaussian_top(law: _Law, A, B) -> float | None:
    """An ε beyond which both orders' bounds on the box are below 1e-18 (growing ×1.5), or
    None where none below 700 is (e^ε must stay a float)."""
    top = 1.0
    while top < 700.0:
        g = np.array([math.exp(top)])
        if max(_order_bound(law, A, B, g)[0], _order_bound(law, B, A, g)[0]) < _TAIL:
            return top
        top *= 1.5
    return None


@dataclass(frozen=True)
class BoxResult:
    """The branch and bound's upper end: ``upper`` bounds ε at the final δ of every pair of
    the domain (each order); ``boxes`` evaluated; ``closed`` whether every box came below
    the target; ``seconds`` spent."""

    upper: float
    boxes: int
    closed: bool
    seconds: float

    def describe(self) -> str:
        """The upper end's method, for a worst case's ``method``."""
        ended = "every box below the target" if self.closed else "stopped at its time budget"
        return (f"a branch and bound over {self.boxes} boxes of pairs, each box's one-release "
                f"bound composed k times ({ended})")


def _box_epsilon(law: _Law, A, B, k: int, delta: float, top: float | None, h: float) -> float:
    t = _gaussian_top(law, A, B) if top is None else top
    if t is None:
        return math.inf
    step = loss_step(h, t)
    idx, d = box_profile(law, A, B, t, step)
    return compose_epsilon(ctd_pessimistic_pmf(idx, d, step), k, delta)


def fresh_boxes(noise, scale: float, domain: tuple[float, float], na_value: float, q: float,
                releases: int, delta: float, target: float, *, top: float | None = None,
                discretization: float = BOX_STEP, budget: float = 30.0) -> BoxResult:
    """An upper bound on ε at ``delta`` of k fresh-mask releases over every pair of the
    domain: boxes of ordered pairs halved, the worst first, until every box's composed
    bound is at most ``target`` or ``budget`` seconds pass (then the worst box's bound).
    ``top``: Laplace, a certified bound on one release's largest loss over the domain (its
    profile is 0 beyond), required; Gaussian, None (found per box).

    Raises
    ------
    ValueError
        Naming the parameter, on a scale ≤ 0, a domain that is not finite lo < hi, a
        non-finite ``na_value``, q outside (0, 1], releases < 1, δ outside (0, 1], a
        non-finite target, a discretization ≤ 0, a budget outside [0, ∞), or a ``top`` that
        is missing (Laplace), given (Gaussian) or ≤ 0.
    """
    t0 = time.perf_counter()
    kind = NoiseKind.parse(noise, "noise")
    lo, hi = check_interval(domain, "domain")
    law = _Law(kind, check_positive(scale, "scale"), check_real("na_value", na_value),
               check_in_range("q", q, 0.0, 1.0, lo_closed=False))
    releases = check_count(releases, "releases")
    if check_delta(delta) == 0.0:
        raise ValueError("delta must be in (0, 1]: at delta = 0 a product's epsilon is k times "
                         "one release's (no PLD), got delta=0.0")
    check_in_range("target", target, -math.inf, math.inf, lo_closed=False, hi_closed=False)
    check_positive(discretization, "discretization")
    check_in_range("budget", budget, 0.0, math.inf, hi_closed=False)
    if (top is None) != (kind is NoiseKind.GAUSSIAN):
        raise ValueError(f"top must be given for Laplace noise (a certified bound on one "
                         f"release's largest loss) and None for Gaussian noise, got top={top!r} "
                         f"with noise={kind.value!r}")
    if top is not None:
        check_positive(top, "top")
    cuts = [lo, na_value, hi] if lo < na_value < hi else [lo, hi]
    sides = list(zip(cuts[:-1], cuts[1:], strict=True))
    heap: list = []

    def push(A, B):
        e = _box_epsilon(law, A, B, releases, delta, top, discretization)
        heapq.heappush(heap, (-e, A, B))

    for A in sides:
        for B in sides:
            push(A, B)
    count = len(heap)
    while True:
        worst, A, B = heap[0]
        if -worst <= target or time.perf_counter() - t0 > budget:
            break
        heapq.heappop(heap)
        if A[1] - A[0] >= B[1] - B[0]:
            mid = 0.5 * (A[0] + A[1])
            push((A[0], mid), B)
            push((mid, A[1]), B)
        else:
            mid = 0.5 * (B[0] + B[1])
            push(A, (B[0], mid))
            push(A, (mid, B[1]))
        count += 2
    return BoxResult(-heap[0][0], count, -heap[0][0] <= target, time.perf_counter() - t0)


def envelope_epsilon(laws, releases: int, delta: float) -> float:
    """ε at δ of the k-fold product of a pair dominating every pair of ``laws`` (one
    release, both orders): Connect-the-Dots on the envelope of their profiles on the loss
    grid (:func:`audit.theory.pair.ctd.envelope_pmf`), or, where a pair's loss is not known
    to be monotone on pieces, :func:`audit.theory.pld.envelope_pld` on their rounded-up
    PLDs. With the corner lemma's candidate pairs, a bound for every pair of the domain."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    pmf = envelope_pmf(laws, DISCRETIZATION)
    one = (PrivacyLossDistribution(pmf) if pmf is not None else
           envelope_pld([pair_pmfs(P, Q, DISCRETIZATION) for P, Q in laws], DISCRETIZATION))
    composed = one if releases == 1 else one.self_compose(releases)
    return float(composed.get_epsilon_for_delta(delta))
