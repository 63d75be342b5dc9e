"""Connect-the-Dots PLDs of a pair of scalar mixtures, pessimistic and optimistic
(docs/THEORY.md §10.5).

Rounding every loss up to a grid of step h shifts each release's loss up by about h/2, so a
k-fold composition is off by about k·h/2. Here both ends are built so that their error is of
second order in h instead:

- **pessimistic** (an upper bound after any number of compositions): Connect-the-Dots
  ([DGKKM22] Algorithm 1) from upper bounds d_i ≥ δ(ε_i) of one order's privacy profile on
  the grid ε_i = i h: the PLD whose δ, as a function of γ = e^ε, is the lower convex hull of
  the points (0, 1) and (γ_i, d_i), flat beyond the last. The exact δ is convex in γ, equals
  1 at γ = 0 and lies below every point, hence below the hull: the PLD dominates the pair
  (Blackwell), and so do its compositions.
- **optimistic** (a lower bound): the output axis cut at the optimal sets {L > ε_i} (a
  post-processing: a coarser pair), its cells merged greedily, from the largest loss down,
  into groups whose aggregate loss is exactly a grid value (merging is a post-processing too);
  a group's loss is rounded down to the grid where float rounding leaves it off.

Both need the pair's loss L = ln p − ln q to be monotone on known pieces of the output axis:
Laplace between consecutive shifts (constant beyond them, :mod:`audit.theory.pair.methods`);
Gaussian everywhere when every shift of one side is ≥ every shift of the other (L′(x) =
(E_P[s | x] − E_Q[s | x])/σ², a difference of posterior means that then has one sign).
:func:`supports` says whether a pair qualifies; :func:`ctd_pair_plds` returns ``None`` otherwise.

References
----------
[DGKKM22] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi, *Connect the Dots:
Tighter discrete approximations of privacy loss distributions*, PETS 2022, Algorithm 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit._numeric import lower_convex_hull
from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.theory.pair.masses import U, check_pair, interval_masses, logratio

__all__ = ["OrderProfile", "supports", "order_profile", "ctd_pair_plds", "envelope_pmf",
           "MAX_CTD_GRID"]

#: most safeguarded Newton steps per level (a bisection step where Newton leaves the bracket)
_NEWTON = 80
#: most widenings (×4, from a few ulps) of a crossing's certified bracket
_WIDEN = 60
#: Gaussian output cut this many σ beyond every shift (tail mass < 1e-299, paid as error)
_CUT_Z = 37.0
#: a one-order δ below this at the top of the grid goes to the infinite loss
_TAIL_DELTA = 1e-18
#: ε grid points of the coarse profile that locates a Gaussian pair's loss range
_COARSE = 1201
#: relative float margin of a loss evaluation (audit.theory.pair.masses.logratio's bound)
_ETA_T = 1e-13
#: largest ε grid of one order
MAX_CTD_GRID = 2_000_000


@dataclass(frozen=True)
class OrderProfile:
    """One order's profile δ(ε) = D_{e^ε}(P‖Q) on a grid of ε (any real ε).

    ``upper[i]`` ≥ the exact δ(ε_i) (value plus its error bound, clipped to [0, 1]);
    ``p_bins``/``q_bins`` (length n + 1): lower bounds on the P-masses and upper bounds on the
    Q-masses of the cells of a partition of the output axis: cell 0 is outside the optimal set
    at ε_0, cell j (1 ≤ j < n) inside it at ε_{j−1} and outside at ε_j, cell n inside at ε_{n−1}.
    """

    epsilons: np.ndarray
    upper: np.ndarray
    p_bins: np.ndarray
    q_bins: np.ndarray


def _pieces(P: Mixture, Q: Mixture):
    """(monotone pieces [a, b], constant pieces (a, b, x_rep, exact)), or None."""
    shifts = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    if P.noise is NoiseKind.LAPLACE:
        mono = [(float(a), float(b)) for a, b in zip(shifts[:-1], shifts[1:], strict=True)]
        const = [(-math.inf, float(shifts[0]), float(shifts[0]), True),
                 (float(shifts[-1]), math.inf, float(shifts[-1]), True)]
        return mono, const
    sp, sq = P.scalar_shifts, Q.scalar_shifts
    if not (sp.min() >= sq.max() or sp.max() <= sq.min()):
        return None
    a = float(shifts[0] - _CUT_Z * P.scale)
    b = float(shifts[-1] + _CUT_Z * P.scale)
    return [(a, b)], [(-math.inf, a, a, False), (b, math.inf, b, False)]


def supports(P: Mixture, Q: Mixture) -> bool:
    """Whether the pair's loss is monotone on known pieces (module docstring)."""
    P, Q = check_pair(P, Q)
    return _pieces(P, Q) is not None


def _dlog(M: Mixture, x: np.ndarray) -> np.ndarray:
    """d/dx ln m(x) of a scalar mixture: Σ_k r_k(x) g(x − s_k), r the component
    responsibilities, g the noise's score (Gaussian −z/σ², Laplace −sign(z)/b)."""
    from audit.noise import noise_of

    diff = x[:, None] - M.scalar_shifts[None, :]
    comp = noise_of(M.noise).logpdf(diff, M.scale) + np.log(M.weights)[None, :]
    r = np.exp(comp - comp.max(axis=1, keepdims=True))
    r /= r.sum(axis=1, keepdims=True)
    score = -diff / M.scale**2 if M.noise is NoiseKind.GAUSSIAN else -np.sign(diff) / M.scale
    return (r * score).sum(axis=1)


def _f(P, Q, x, t, sgn):
    """sgn·(L(x) − t) and a bound on its evaluation error."""
    v, eta = logratio(P, Q, 0.0, x)
    return sgn * (v - t), eta + _ETA_T * np.abs(t)


def _newton(P, Q, a, b, sgn, t):
    """Per level: the crossing of sgn·(L − t) from ≤ 0 to > 0 on [a, b] (a when it is > 0
    throughout, b when ≤ 0 throughout), by Newton steps kept inside a shrinking bracket."""
    fa, _ = _f(P, Q, np.full(t.shape, a), t, sgn)
    fb, _ = _f(P, Q, np.full(t.shape, b), t, sgn)
    x = np.where(fa > 0, a, b)
    act = np.flatnonzero((fa <= 0) & (fb > 0))
    lo, hi = np.full(act.size, a), np.full(act.size, b)
    xa = np.where(fb[act] > fa[act], a - fa[act] * (b - a) / (fb[act] - fa[act]), 0.5 * (a + b))
    for _ in range(_NEWTON):
        if act.size == 0:
            break
        fx, _ = _f(P, Q, xa, t[act], sgn)
        dfx = sgn * (_dlog(P, xa) - _dlog(Q, xa))
        past = fx > 0
        hi, lo = np.where(past, xa, hi), np.where(past, lo, xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = xa - fx / dfx
        bad = ~((step > lo) & (step < hi))
        nxt = np.where(bad, 0.5 * (lo + hi), step)
        done = np.abs(nxt - xa) <= 4 * U * (np.abs(xa) + P.scale)
        x[act] = nxt
        keep = ~done
        act, lo, hi, xa = act[keep], lo[keep], hi[keep], nxt[keep]
    return x


def _certify(P, Q, a, b, sgn, t, x):
    """[left, right] ⊂ [a, b] that certainly holds the crossing of sgn·(L − t) (the sign of
    the function at each end exceeds its evaluation error, or the end is a or b)."""
    # from a few ulps up (×4): a crossing at an end of the piece, where L may be flat, gets
    # the narrowest bracket whose ends are certain
    tau = 8 * U * (np.abs(x) + P.scale)
    left, right = x.copy(), x.copy()
    todo = np.arange(t.size)
    for _ in range(_WIDEN):
        if todo.size == 0:
            break
        lft = np.maximum(a, x[todo] - tau[todo])
        rgt = np.minimum(b, x[todo] + tau[todo])
        fl, el = _f(P, Q, lft, t[todo], sgn)
        fr, er = _f(P, Q, rgt, t[todo], sgn)
        ok = ((fl < -el) | (lft <= a)) & ((fr > er) | (rgt >= b))
        left[todo], right[todo] = lft, rgt
        tau[todo] *= 4.0
        todo = todo[~ok]
    left[todo], right[todo] = a, b  # never certified: the whole piece is the bracket
    return left, right


def _masses(M: Mixture, lo, hi):
    m, e = interval_masses(M, np.atleast_1d(lo), np.atleast_1d(hi))
    return m, e


def _density_bounds(P: Mixture, Q: Mixture) -> tuple[float, float]:
    """(sup of p, a Lipschitz constant of L = ln p − ln q): a mixture's density is at most
    its kernel's peak; |L′| ≤ 2/b (Laplace), max(|s^P_max − s^Q_min|, |s^Q_max −
    s^P_min|)/σ² (Gaussian: a difference of posterior means over σ²)."""
    if P.noise is NoiseKind.LAPLACE:
        return 0.5 / P.scale, 2.0 / P.scale
    sp, sq = P.scalar_shifts, Q.scalar_shifts
    lip = max(abs(sp.max() - sq.min()), abs(sq.max() - sp.min())) / P.scale**2
    return 1.0 / (P.scale * math.sqrt(2 * math.pi)), lip


def _mono_piece(P, Q, a, b, t, et, acc):
    """Adds one monotone piece's part of S(t) = {L > t} to the accumulators."""
    ends, _ = logratio(P, Q, 0.0, np.array([a, b]))
    inc = bool(ends[1] >= ends[0])
    sgn = 1.0 if inc else -1.0
    x = _newton(P, Q, a, b, sgn, t)
    lo_a, hi_b = _certify(P, Q, a, b, sgn, t, x)
    x = np.maximum.accumulate(x) if inc else np.minimum.accumulate(x)
    s_lo, s_hi = (x, np.full(t.shape, b)) if inc else (np.full(t.shape, a), x)
    mp, ep = _masses(P, s_lo, s_hi)
    mq, eq = _masses(Q, s_lo, s_hi)
    acc["value"] += mp - et * mq
    acc["error"] += 4 * U * (mp + et * mq)  # the sums' rounding
    # the exact optimal set differs from S(t) on B = [min(lo_a, x), max(hi_b, x)] at most,
    # where |p − e^t q| = p |1 − e^{t − L}| ≤ p_max (e^{Lip |B|} − 1): second order in |B|
    b_lo, b_hi = np.minimum(lo_a, x), np.maximum(hi_b, x)
    bp, ebp = _masses(P, b_lo, b_hi)
    bq, ebq = _masses(Q, b_lo, b_hi)
    w = b_hi - b_lo
    pmax, lip = _density_bounds(P, Q)
    with np.errstate(over="ignore"):
        second = w * pmax * np.expm1(np.minimum(lip * w, 700.0))
    acc["error"] += np.minimum(bp + et * bq + ebp + et * ebq, second) + ep + et * eq
    # cells of the partition: between consecutive cuts (cut n − 1 to the far end: the top)
    cuts = np.concatenate([[a], x, [b]]) if inc else np.concatenate([[b], x, [a]])
    c_lo, c_hi = (cuts[:-1], cuts[1:]) if inc else (cuts[1:], cuts[:-1])
    cp, cep = _masses(P, c_lo, c_hi)
    cq, ceq = _masses(Q, c_lo, c_hi)
    acc["p_bins"] += np.maximum(cp - cep, 0.0)
    acc["q_bins"] += cq + ceq


def _const_piece(P, Q, a, b, rep, exact, t, et, acc):
    """Adds a piece on which L is constant (or, inexact, a negligible tail) to S(t)."""
    v, eta = logratio(P, Q, 0.0, np.array([rep]))
    mp, ep = _masses(P, a, b)
    mq, eq = _masses(Q, a, b)
    inside = v[0] - t > 0
    acc["value"] += np.where(inside, mp[0] - et * mq[0], 0.0)
    acc["error"] += 4 * U * (mp[0] + et * mq[0])
    unsure = np.abs(v[0] - t) <= eta[0] + _ETA_T * np.abs(t)
    acc["error"] += ep[0] + et * eq[0] + np.where(unsure | (not exact),
                                                  mp[0] + et * mq[0], 0.0)
    cell = int(np.count_nonzero(inside))  # inside for the first `cell` levels (t ascending)
    acc["p_bins"][cell] += max(mp[0] - ep[0], 0.0)
    acc["q_bins"][cell] += mq[0] + eq[0]


def order_profile(P: Mixture, Q: Mixture, epsilons) -> OrderProfile:
    """D_{e^ε}(P‖Q) for every ε of an ascending grid, with upper bounds, vectorised.

    On each monotone piece the crossing of L = ε is bracketed by bisection with the loss
    evaluation error (:func:`audit.theory.pair.masses.logratio`) taken against the crossing:
    the bracket certainly holds it. The set S(ε) cut inside the bracket gives P(S) − e^ε Q(S)
    ≤ δ(ε); the exact value exceeds it by at most P(B) + e^ε Q(B) on the bracket B, plus the
    masses' rounding errors (``interval_masses``) and, Gaussian, the tails beyond 37σ.

    Raises
    ------
    ValueError
        If the pair is not supported (:func:`supports`) or the grid is not ascending.
    """
    P, Q = check_pair(P, Q)
    t = np.asarray(epsilons, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or np.any(np.diff(t) <= 0) or not np.all(np.isfinite(t)):
        raise ValueError(f"epsilons must be a non-empty, strictly ascending, finite 1-D grid, "
                         f"got shape {t.shape}")
    pieces = _pieces(P, Q)
    if pieces is None:
        raise ValueError("P and Q must have a loss monotone on known pieces (Laplace, or "
                         "Gaussian with the shifts of one side all >= the other's), got "
                         f"P.shifts={P.scalar_shifts!r}, Q.shifts={Q.scalar_shifts!r}")
    n = t.size
    et = np.exp(np.minimum(t, 700.0))
    acc = {"value": np.zeros(n), "error": np.zeros(n), "p_bins": np.zeros(n + 1),
           "q_bins": np.zeros(n + 1)}
    mono, const = pieces
    for a, b in mono:
        _mono_piece(P, Q, a, b, t, et, acc)
    for a, b, rep, exact in const:
        _const_piece(P, Q, a, b, rep, exact, t, et, acc)
    value = np.clip(acc["value"], 0.0, 1.0)
    upper = np.clip(value + acc["error"], 0.0, 1.0)
    return OrderProfile(t, upper, acc["p_bins"], acc["q_bins"])


def ctd_pessimistic_pmf(indices: np.ndarray, upper: np.ndarray, h: float):
    """The Connect-the-Dots PMF of upper bounds ``upper`` ≥ δ(i h), i ∈ ``indices``
    (ascending, contiguous): the lower convex hull in γ = e^ε of (0, 1) and the points.

    Vertex k of the hull carries P-mass γ_k (s_{k+1} − s_k) (s the hull's slopes in γ, 0
    beyond the last vertex), the last vertex's δ goes to the infinite loss. Float rounding:
    the PMF's δ at vertex k is inf + Σ_{j>k} (γ_j − γ_k)(s_{j+1} − s_j) = d_k, by Abel
    summation −Σ_{j>k} s_j Δγ_j with s_j Δγ_j = Δd_j, so relative errors of a few u in the
    slopes and masses move it by a few u Σ |Δd_j| ≤ a few u: 16u is added to the infinite
    loss (more mass only raises δ); masses rounded below 0 are raised to 0 (same)."""
    from dp_accounting.pld import pld_pmf

    d = np.minimum.accumulate(np.clip(upper, 0.0, 1.0))  # δ is non-increasing: still bounds
    eps = indices * h
    gam = np.concatenate([[0.0], np.exp(eps)])
    hull = lower_convex_hull(gam, np.concatenate([[1.0], d]))
    hull = hull[hull > 0] - 1  # vertices among the grid points
    g, y, e = np.exp(eps[hull]), d[hull], eps[hull]
    dx = np.concatenate([[g[0]], g[:-1] * np.expm1(np.diff(e))])
    dy = np.diff(np.concatenate([[1.0], y]))
    s = np.concatenate([dy / dx, [0.0]])
    mass = g * (s[1:] - s[:-1])
    margin = 16 * U
    probs = np.zeros(indices.size)
    probs[hull] = np.maximum(mass, 0.0)
    return pld_pmf.DensePLDPmf(h, int(indices[0]), probs, min(1.0, float(y[-1]) + margin),
                               True)


def _open(p: float, q: float, h: float, i_lo: int, i_hi: int, down: bool) -> int | None:
    """The grid index a group opened by a cell (p, q) aims at: the largest at or below its
    loss (``down``), or the smallest at or above it; None outside [i_lo, i_hi]."""
    loss = math.log(p / q) if q > 0.0 else math.inf
    if down:
        tau = i_hi if loss >= i_hi * h else math.floor(loss / h)
        while tau >= i_lo and p - math.exp(tau * h) * q < 0.0:
            tau -= 1
        return tau if tau >= i_lo else None
    if loss > i_hi * h:
        return None
    tau = max(i_lo, math.ceil(loss / h))
    while tau <= i_hi and p - math.exp(tau * h) * q > 0.0:
        tau += 1
    return tau if tau <= i_hi else None


def _merge(ps, qs, h: float, i_lo: int, i_hi: int, probs: np.ndarray, down: bool):
    """Greedy grouping of the cells (p, q), in the order given, into groups whose aggregate
    loss is a grid value: from the top down (``down``) a group opens at or below its first
    cell's loss and takes the next cells until the aggregate reaches that value; from the
    bottom up, at or above it. A group's P-mass goes to ``probs``; the fractions λ are cut
    on the safe side (the aggregate stays at or above its grid value). Returns the P- and
    Q-mass of the group left open."""
    tau, gp, gq, g, c = None, 0.0, 0.0, 0.0, 0.0
    for p, q in zip(ps, qs, strict=True):
        while p > 0.0:
            if tau is None:
                tau = _open(p, q, h, i_lo, i_hi, down)
                if tau is None:  # off the grid: dropped (lowers δ)
                    break
                c = math.exp(tau * h)
                gp, gq, g, p, q = p, q, p - c * q, 0.0, 0.0
                if not down and g >= 0.0:
                    probs[tau - i_lo] += gp
                    tau = None
                continue
            dg = p - c * q
            if (g + dg >= 0.0) == down:  # the group is not full yet: take the whole cell
                gp, gq, g, p, q = gp + p, gq + q, g + dg, 0.0, 0.0
                continue
            lam = g / -dg * (1.0 - 1e-12) if down else min(1.0, -g / dg * (1.0 + 1e-12))
            gp, gq = gp + lam * p, gq + lam * q
            probs[tau - i_lo] += gp
            p, q, tau = p * (1.0 - lam), q * (1.0 - lam), None
    return (gp, gq) if tau is not None else (0.0, 0.0)


def merged_optimistic_pmf(indices: np.ndarray, p_bins, q_bins, h: float):
    """A PMF dominated by the cells (``p_bins``, ``q_bins``) of :class:`OrderProfile`: cells
    (or parts of one) merged into groups whose aggregate loss is a grid value i h, from the
    top cell down to a light cell in the middle and from the bottom up to it (:func:`_merge`);
    the two groups left open are merged and put at the grid value below their aggregate loss.
    Cell 0 (losses below the grid) is dropped. Merging cells is a post-processing and
    putting a group below its loss lowers δ, so every composition bounds the pair's from
    below."""
    from dp_accounting.pld import pld_pmf

    i_lo, i_hi = int(indices[0]), int(indices[-1])
    probs = np.zeros(indices.size)
    p, q = np.asarray(p_bins, dtype=np.float64), np.asarray(q_bins, dtype=np.float64)
    n = p.size - 1
    quarter = max(1, n // 4)
    mid = quarter + int(np.argmin(p[quarter:max(quarter + 1, n - quarter)]))
    top = _merge(p[n:mid:-1], q[n:mid:-1], h, i_lo, i_hi, probs, True)
    bottom = _merge(p[1:mid + 1], q[1:mid + 1], h, i_lo, i_hi, probs, False)
    gp, gq = top[0] + bottom[0], top[1] + bottom[1]
    if gp > 0.0:
        tau = _open(gp, gq, h, i_lo, i_hi, True)
        if tau is not None:
            probs[tau - i_lo] += gp
    return pld_pmf.DensePLDPmf(h, i_lo, probs, 0.0, False)


def _laplace_loss_range(P: Mixture, Q: Mixture) -> tuple[float, float]:
    """Certified ends of a Laplace pair's loss ln p/q over every output: it is monotone
    between the shifts and constant beyond, so its extremes are at the shifts (each value
    widened by its rounding bound)."""
    shifts = np.unique(np.concatenate([P.scalar_shifts, Q.scalar_shifts]))
    ends, eta = logratio(P, Q, 0.0, shifts)
    return float(np.min(ends - eta)), float(np.max(ends + eta))


def _beyond_the_loss(P: Mixture, Q: Mixture, eps: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Upper bounds ``upper`` on δ(ε) of the order (P, Q) at ``eps``, set to 0 from a Laplace
    pair's largest loss on (δ(ε) = E_P[(1 − e^{ε − L})_+] vanishes there), where the
    profile's cancellation bound, about e^ε ulps, would otherwise put mass at the infinite
    loss (6.5·10⁻⁸ at a loss of 18.8: composed 10 times, 0.16 on ε)."""
    if P.noise is NoiseKind.LAPLACE:
        return np.where(eps >= _laplace_loss_range(P, Q)[1], 0.0, upper)
    return upper


def _order_range(P: Mixture, Q: Mixture, h: float) -> tuple[int, int]:
    """Grid indices [i_lo, i_hi] covering the loss of the order (P, Q): Laplace its exact
    range (L is monotone between shifts, constant beyond); Gaussian from a coarse profile,
    up to where δ(ε) < 1e-18 in this order and down to where the other order's does."""
    if P.noise is NoiseKind.LAPLACE:
        lo, hi = _laplace_loss_range(P, Q)
        return math.floor(lo / h) - 1, math.ceil(hi / h) + 1
    from audit.theory.pair.methods import pair_method

    top = pair_method(P.noise).t_range(P, Q)
    coarse = np.linspace(-top, top, _COARSE)

    def reach(A, B):
        small = order_profile(A, B, coarse).upper <= _TAIL_DELTA
        return float(coarse[np.argmax(small)]) if small.any() else top

    return math.floor(-reach(Q, P) / h) - 1, math.ceil(reach(P, Q) / h) + 1


def _order_pmfs(P: Mixture, Q: Mixture, h: float):
    i_lo, i_hi = _order_range(P, Q, h)
    if i_hi - i_lo + 1 > MAX_CTD_GRID:
        raise ValueError(f"discretization must give at most {MAX_CTD_GRID} grid points per "
                         f"order, got discretization={h!r} ({i_hi - i_lo + 1} points)")
    idx = np.arange(i_lo, i_hi + 1)
    prof = order_profile(P, Q, idx * h)
    return (ctd_pessimistic_pmf(idx, _beyond_the_loss(P, Q, idx * h, prof.upper), h),
            merged_optimistic_pmf(idx, prof.p_bins, prof.q_bins, h))


def ctd_pair_plds(P: Mixture, Q: Mixture, discretization: float):
    """(pessimistic, optimistic) PLDs of the pair in both orders (``pmf_remove`` the order
    (P, Q), ``pmf_add`` (Q, P)), or ``None`` when the pair is not supported (:func:`supports`).

    Every composition of the pessimistic PLD bounds the pair's from above; of the
    optimistic one, from below (apart from dp_accounting's own tail truncation, ≤ 1e-15 per
    composition, which the caller pays in δ).

    Raises
    ------
    ValueError
        On a bad pair, h ≤ 0, or more than ``MAX_CTD_GRID`` grid points in one order.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    from audit._validate import check_positive

    P, Q = check_pair(P, Q)
    h = check_positive(discretization, "discretization")
    if _pieces(P, Q) is None:
        return None
    rem_hi, rem_lo = _order_pmfs(P, Q, h)
    add_hi, add_lo = _order_pmfs(Q, P, h)
    return (PrivacyLossDistribution(rem_hi, add_hi), PrivacyLossDistribution(rem_lo, add_lo))


def envelope_pmf(pairs, discretization: float, *, more=None):
    """A symmetric pessimistic PMF that dominates every pair of ``pairs`` in both orders,
    or ``None`` when one of them is not supported (:func:`supports`).

    The largest upper bound d_i over the pairs and both orders, at every grid point of the
    union of their loss ranges, is an upper bound on each ordered pair's profile there, so
    the Connect-the-Dots PMF of these d_i (:func:`ctd_pessimistic_pmf`) dominates each of
    them (docs/THEORY.md §10.4–10.5). ``more``: one more pair, given by its profile bounds
    instead: an object whose ``upper(eps)`` bounds both its orders' δ at every real ε of an
    array and whose ``top`` is an ε beyond which both are below 10⁻¹⁸.

    Raises
    ------
    ValueError
        On a bad pair, h ≤ 0, or more than ``MAX_CTD_GRID`` grid points.
    """
    from audit._validate import check_positive

    h = check_positive(discretization, "discretization")
    ordered = []
    for P, Q in pairs:
        P, Q = check_pair(P, Q)
        ordered += [(P, Q), (Q, P)]
    if not ordered or any(_pieces(A, B) is None for A, B in ordered):
        return None
    if more is not None and not (math.isfinite(more.top) and more.top >= 0.0):
        raise ValueError(f"more.top must be a finite epsilon >= 0, got more.top={more.top!r}")
    ranges = [_order_range(A, B, h) for A, B in ordered]
    if more is not None:
        ranges.append((math.floor(-more.top / h) - 1, math.ceil(more.top / h) + 1))
    i_lo, i_hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    if i_hi - i_lo + 1 > MAX_CTD_GRID:
        raise ValueError(f"discretization must give at most {MAX_CTD_GRID} grid points, got "
                         f"discretization={h!r} ({i_hi - i_lo + 1} points)")
    idx = np.arange(i_lo, i_hi + 1)
    d = np.max([_beyond_the_loss(A, B, idx * h, order_profile(A, B, idx * h).upper)
                for A, B in ordered], axis=0)
    if more is not None:
        d = np.maximum(d, more.upper(idx * h))
    return ctd_pessimistic_pmf(idx, d, h)
