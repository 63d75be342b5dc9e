"""The exact ε at δ = 0 of k Laplace releases from one table (docs/THEORY.md §10.3, **derived
in this project**): a certified bracket, any k.

The record contributes c ∈ [lo, hi] when observed and m (``na``) when missing (an all-missing
record: its law is the one at c = m). With L_v(x) = Σ_i |x_i − v|/b, the k releases' density
at x ∈ R^k is, up to (2b)^{−k}, (1 − q)e^{−L_m(x)} + q e^{−L_c(x)}, so

    ln p_c(x)/p_c′(x) = φ(u) − φ(w),   u = L_m − L_c,  w = L_m − L_c′,  φ(z) = ln(1 − q + q e^z).

**Reductions** (each proved in §10.3):

1. *The denominator's record is a corner*: at fixed x, φ(w) decreases in L_c′(x), a convex
   function of c′, so the worst c′ ∈ [lo, hi] is lo or hi; with the missing record,
   c′ ∈ {lo, hi, m}. The numerator's c ranges over [lo, hi] ∪ {m}.
2. *Each release sits at a breakpoint*: along one coordinate x_i, (u, w) moves on a polyline
   whose segments have directions (±1, 0), (0, ±1), (1, 1)·s or (1, −1)·s. φ is increasing and
   convex, so along each segment φ(u) − φ(w) is monotone (the first three: φ′ is increasing,
   so φ′(u + s) − φ′(w + s) keeps the sign of u − w) or convex (the last): its largest value
   is at an end. Hence the supremum over R^k is attained with every x_i ∈ {m, c, c′}, and by
   symmetry it depends only on the counts (a, n_c, n_c′) of releases at m, c, c′ (a + n_c +
   n_c′ = k).
3. *Two counts suffice*: moving one release between two adjacent breakpoints moves (u, w)
   along one segment direction, on which the value is quasi-convex, so a maximiser has a zero
   count; the counts (t, k − t) lie on one of the three edges of the count triangle.

What is left is a supremum over c in an interval and an integer t ∈ [0, k] on each edge, for
each c′ ∈ {lo, hi, m}. On a box [c₁, c₂] × [t₁, t₂] inside one piece of c (no breakpoint m
inside), u and w are bilinear in (c, t), so they reach their extremes at the box's corners and
φ(max u) − φ(min w) bounds the value on the box. A branch and bound splits the boxes whose
bound exceeds the best point value found (an actual pair and an actual output x, so a lower
bound) by more than the target, and the largest bound of any box is the certified upper end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from audit._validate import check_count, check_interval, check_positive, check_probability

__all__ = ["SharedPure", "laplace_shared_pure", "opposite_pair_epsilon",
           "MAX_OPPOSITE_RELEASES"]

#: most rounds of box splitting (each halves every live box in both directions)
MAX_ROUNDS = 80
#: most live boxes in one round (beyond, the bracket is returned as it stands)
MAX_BOXES = 400_000


@dataclass(frozen=True)
class SharedPure:
    """ε at δ = 0 in [``lower``, ``epsilon``]: ``epsilon`` certified above every pair of the
    domain and the missing record, ``lower`` the value of the pair ``pair`` = (numerator,
    denominator) at the output with ``counts`` = (releases at m, at c, at c′)."""

    epsilon: float
    lower: float
    pair: tuple[str, str]
    counts: tuple[int, int, int]
    boxes: int


def _phi(z: np.ndarray, q: float) -> np.ndarray:
    """ln(1 − q + q e^z), overflow-free."""
    if q == 1.0:
        return z
    return np.logaddexp(math.log1p(-q), math.log(q) + z)


def _counts(t, edge, k):
    """(a, n_c, n_c′) on edge 0 (a = 0), 1 (n_c = 0) or 2 (n_c′ = 0) at parameter t."""
    a = np.where(edge == 0, 0.0, t)
    nc = np.where(edge == 0, t, np.where(edge == 1, 0.0, k - t))
    ncp = np.where(edge == 2, 0.0, k - t)
    return a, nc, ncp


def _uw(c, t, cp, edge, na, k, b):
    """(u, w) with a, n_c, n_c′ releases at m, c, c′ (module docstring)."""
    a, nc, ncp = _counts(t, edge, k)
    dcm, dcc, dpm = np.abs(c - na), np.abs(c - cp), np.abs(cp - na)
    l_m = (nc * dcm + ncp * dpm) / b
    l_c = (a * dcm + ncp * dcc) / b
    l_cp = (a * dpm + nc * dcc) / b
    return l_m - l_c, l_m - l_cp


def _initial_boxes(lo: float, hi: float, na: float, k: int) -> dict[str, np.ndarray]:
    """Every (c′, piece of c, edge) as a box covering t ∈ [0, k]."""
    pieces = [(lo, na), (na, hi)] if lo < na < hi else [(lo, hi)]
    if not lo <= na <= hi:
        pieces.append((na, na))  # the missing record read outside the domain
    rows = [(c1, c2, cp, e) for cp in sorted({lo, hi, na}) for c1, c2 in pieces
            for e in (0, 1, 2)]
    c1, c2, cp, e = (np.array(col, dtype=float) for col in zip(*rows, strict=True))
    n = len(rows)
    return {"c1": c1, "c2": c2, "t1": np.zeros(n), "t2": np.full(n, float(k)), "cp": cp,
            "edge": e.astype(int)}


def _bound(box, na, k, b, q) -> np.ndarray:
    """φ(max u) − φ(min w) over each box's four corners (u, w bilinear on a piece)."""
    us, ws = [], []
    for c in (box["c1"], box["c2"]):
        for t in (box["t1"], box["t2"]):
            u, w = _uw(c, t, box["cp"], box["edge"], na, k, b)
            us.append(u)
            ws.append(w)
    return _phi(np.max(us, axis=0), q) - _phi(np.min(ws, axis=0), q)


def _points(box, na, k, b, q):
    """Values at actual (c, x): each box's corners and its centre (t rounded both ways)."""
    cm = 0.5 * (box["c1"] + box["c2"])
    tm = 0.5 * (box["t1"] + box["t2"])
    best = (-math.inf, None)
    for c, t in ((box["c1"], box["t1"]), (box["c2"], box["t2"]), (box["c1"], box["t2"]),
                 (box["c2"], box["t1"]), (cm, np.floor(tm)), (cm, np.ceil(tm))):
        u, w = _uw(c, t, box["cp"], box["edge"], na, k, b)
        v = _phi(u, q) - _phi(w, q)
        i = int(np.argmax(v))
        if v[i] > best[0]:
            a, nc, ncp = _counts(t[i], box["edge"][i], k)
            best = (float(v[i]), (float(c[i]), float(box["cp"][i]),
                                  (int(a), int(nc), int(ncp))))
    return best


def _split(box) -> dict[str, np.ndarray]:
    """Each box halved in c (unless a point) and in its integer t range (unless one t)."""
    out = box
    cm = 0.5 * (box["c1"] + box["c2"])
    wide = box["c2"] > box["c1"]
    left = {**out, "c2": np.where(wide, cm, out["c2"])}
    right = {key: val[wide] for key, val in out.items()}
    right["c1"] = cm[wide]
    out = {key: np.concatenate([left[key], right[key]]) for key in out}
    tm = np.floor(0.5 * (out["t1"] + out["t2"]))
    wide = out["t2"] > out["t1"]
    low = {**out, "t2": np.where(wide, tm, out["t2"])}
    high = {key: val[wide] for key, val in out.items()}
    high["t1"] = tm[wide] + 1.0
    return {key: np.concatenate([low[key], high[key]]) for key in out}


def _name(v: float, lo: float, hi: float, na: float) -> str:
    if v == lo:
        return "lo"
    if v == hi:
        return "hi"
    return "NA" if v == na else f"c={v:.6g}"


def laplace_shared_pure(lo: float, hi: float, na: float, q: float, b: float, k: int, *,
                        rel_tol: float = 1e-4, abs_tol: float = 1e-6,
                        na_is_record: bool = True) -> SharedPure:
    """The ε at δ = 0 of k Laplace(b) releases of a sum from one table, the record in
    [``lo``, ``hi``] observed with probability ``q`` and read as ``na`` when missing,
    bracketed to within max(``abs_tol``, ``rel_tol``·ε) (module docstring).

    ``na_is_record`` False: a record missing in the data is not a record of the setting (the
    supremum is over the domain's records only; ``na`` outside the domain is then only the
    missing reading). Inside the domain ``na`` is a domain record either way.

    Raises
    ------
    ValueError
        On lo ≥ hi or a non-finite end, a non-finite ``na``, q ∉ (0, 1], b ≤ 0, k < 1, or a
        tolerance ≤ 0.

    Examples
    --------
    The count-like setting (domain [0, 1], NA read as 0) is the remove pair, ln(1 + q(e^{k/b}
    − 1)) in closed form:

    >>> r = laplace_shared_pure(0.0, 1.0, 0.0, 0.2, 1.0, 10)
    >>> round(r.epsilon, 4), round(math.log1p(0.2 * math.expm1(10)), 4), r.pair
    (8.3907, 8.3907, ('hi', 'lo'))
    """
    lo, hi = check_interval((lo, hi), "domain")
    if not math.isfinite(float(na)):
        raise ValueError(f"na must be finite, got na={na!r}")
    q = check_probability(q, "q")
    if q == 0.0:
        raise ValueError(f"q must be in (0, 1], got q={q!r}")
    b, k = check_positive(b, "b"), check_count(k, "k")
    rel_tol, abs_tol = check_positive(rel_tol, "rel_tol"), check_positive(abs_tol, "abs_tol")
    na = float(na)
    box = _initial_boxes(lo, hi, na, k)
    if not na_is_record and not lo <= na <= hi:
        keep = (box["cp"] != na) & ~((box["c1"] == na) & (box["c2"] == na))
        box = {key: val[keep] for key, val in box.items()}
    lower, arg = _points(box, na, k, b, q)
    done, seen = -math.inf, len(box["c1"])
    for _ in range(MAX_ROUNDS):
        up = _bound(box, na, k, b, q)
        gap = max(abs_tol, rel_tol * abs(lower))
        keep = up > lower + gap
        if np.any(~keep):
            done = max(done, float(np.max(up[~keep])))
        if not np.any(keep) or 4 * int(np.sum(keep)) > MAX_BOXES:
            break
        box = _split({key: val[keep] for key, val in box.items()})
        seen += len(box["c1"])
        value, where = _points(box, na, k, b, q)
        if value > lower:
            lower, arg = value, where
    live = _bound(box, na, k, b, q) if len(box["c1"]) else np.array([-math.inf])
    # the point values are floats: a few ulps of slack on the certified end
    upper = max(done, float(np.max(live)), lower) + 4 * np.finfo(float).eps * (1 + abs(lower))
    c, cp, counts = arg
    return SharedPure(upper, lower, (_name(c, lo, hi, na), _name(cp, lo, hi, na)), counts,
                      seen)


#: most releases the exact δ > 0 value of an opposite-side pair and the boxes are computed for
#: (k FFTs of the sum's law per box). At k = 128 on one core (benchmarks/bench_laplace_shared.py
#: --releases 128, δ = 10⁻⁵): sums 15.9–30.5 s, means 2.8–69.8 s,
#: 220–400 MB a row
MAX_OPPOSITE_RELEASES = 128
#: the largest log density ratio (and ε) the δ > 0 grid expectations run at: they multiply
#: e^ε by ratios in floats; above it a row keeps its other ends
MAX_BOX_EPSILON = 700.0
#: most grid points of the law of the sum of the k releases (per side)
_MAX_POINTS = 200_000
#: most grid points of the laws of the partial sums of k releases kept at full resolution, per
#: law (at most about 10⁵(k + 1) under ``_MAX_POINTS``: 4.9·10⁶ at k = 48): beyond, each is moved
#: onto a coarser grid (:func:`_sums`)
_MAX_KEPT = 5_000_000


def _check_boxes_input(k: int, delta: float, what: str) -> None:
    """Refuse k outside [1, ``MAX_OPPOSITE_RELEASES``] or δ outside (0, 1), naming ``what``
    (the value that needs the k partial sums' laws)."""
    check_count(k, "k")
    if k > MAX_OPPOSITE_RELEASES:
        raise ValueError(f"k must be at most {MAX_OPPOSITE_RELEASES} for {what}, got k={k}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got delta={delta!r}")


def _step_law(a: float, b: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One release's v = (2 min(y, a) − a)/b, y ~ Exp(b) (x = m + y, x above the missing
    reading): grid −a/b + 2aj/(bn), j = 0..n, masses moved up and down; atom e^{−a/b} at a/b."""
    y = a * np.arange(n + 1) / n
    cells = np.diff(-np.expm1(-y / b))
    up, down = np.zeros(n + 1), np.zeros(n + 1)
    up[1:] += cells
    down[:-1] += cells
    up[n] += math.exp(-a / b)
    down[n] += math.exp(-a / b)
    return -a / b + 2 * a / (b * n) * np.arange(n + 1), up, down


def _partial_sums(a: float, b: float, n: int, k: int):
    """(up, down) :class:`~audit.theory.grid_expectation.GridLaw` of the sum of j releases'
    v, j = 0..k (each value moved on its own grid, so the sum moves by at most 2ak/(bn));
    masses and tilted masses convolved apart, each accurate where it is read."""
    grid, up1, down1 = _step_law(a, b, n)
    return _sums(grid, (up1, down1), k, (True, False))


def _sums(grid: np.ndarray, laws, k: int, ups, *, last: bool = False):
    """For j = 0..k, the law of the sum of j i.i.d. values of each one-release law in ``laws``
    (masses on the uniform ``grid``), as a tuple of
    :class:`~audit.theory.grid_expectation.GridLaw`: one FFT of each law (and of its tilted
    masses, m·e^x, transformed apart) at the k-fold sum's length, the j-th power transformed
    back (absolute rounding about 10⁻¹⁶ of each total; negatives clipped to 0). ``last``: the
    k-th tuple alone.

    The j-th sum lies on a grid of the one-release step: kept so, the k + 1 laws take about
    k²/2 times the one-release grid's points. Beyond ``_MAX_KEPT`` each is moved further onto a
    grid of ⌊k/4⌋ one-release steps (:func:`~audit.theory.grid_expectation.blocks`), up where
    its flag in ``ups`` is set, else down: the sum moves by about a quarter of the k releases'
    rounding more."""
    from scipy import fft

    from audit.theory.grid_expectation import POINT, GridLaw, blocks

    step = grid[1] - grid[0]
    size = k * (grid.size - 1) + 1
    block = max(k // 4, 1) if not last and k * (k + 1) // 2 * (grid.size - 1) > _MAX_KEPT else 1
    n_fft = fft.next_fast_len(size, real=True)
    spectra = [(fft.rfft(m, n_fft), fft.rfft(m * np.exp(grid), n_fft)) for m in laws]
    powers = [(np.ones_like(a), np.ones_like(b)) for a, b in spectra]
    out = [tuple(POINT for _ in laws)]
    for j in range(1, k + 1):
        length = j * (grid.size - 1) + 1
        pts = j * grid[0] + step * np.arange(length)
        row = []
        for i, (a, b) in enumerate(spectra):
            pa, pb = powers[i][0] * a, powers[i][1] * b
            powers[i] = (pa, pb)
            if last and j < k:
                continue
            m = np.clip(fft.irfft(pa, n_fft)[:length], 0.0, None)
            mt = np.clip(fft.irfft(pb, n_fft)[:length], 0.0, None)
            law = GridLaw.reconciled(pts, m, mt)
            row.append(law if block == 1 else blocks(law, ups[i], block))
        out.append(tuple(row))
    return out[-1] if last else out


def _shifted(law, by: float):
    """The law of X + ``by`` (its tilted masses times e^by)."""
    from audit.theory.grid_expectation import GridLaw

    return GridLaw(law.points + by, law.masses, law.tilted * math.exp(by))


def opposite_pair_epsilon(lo: float, hi: float, na: float, q: float, b: float, k: int,
                          delta: float, *, step: float = 0.01,
                          count: CountLoss | None = None,
                          at_most: float | None = None) -> tuple[float, float]:
    """Certified (lower, upper) ε at δ > 0 of the pair (hi, lo) of k Laplace releases from one
    table with the missing reading strictly inside (lo, hi) (docs/THEORY.md §10.3).

    Relative to k releases at m = ``na`` the pair's densities are 1 − q + q e^u and
    1 − q + q e^w with u = Σ_i (|x_i − m| − |x_i − hi|)/b, w the same at lo. A release below m
    adds the constant −(hi − m)/b to u and a varying amount to w; one above m the converse. So
    given the number j of releases above m (Binomial(k, 1/2) under the reference) u and w are
    independent, each a sum of i.i.d. one-release values v = (2 min(y, a) − a)/b,
    y ~ Exp(b), a = hi − m (for u) or m − lo (for w), and

        D_γ = Σ_j C(k, j) 2^{−k} E[(1 − q + q e^{u_j} − γ(1 − q + q e^{w_j}))_+],

    bracketed by the grid expectations of :mod:`audit.theory.grid_expectation` with each
    release's value moved on a grid (the sums move by at most ``step``). The pair (lo, hi)
    is its mirror image (swap hi − m and m − lo).

    ``count``: a mean's count loss (:class:`CountLoss`, ``na`` = 0).
    ``at_most``: where the upper δ bound at ε = ``at_most`` is ≤ δ, (0, ``at_most``) unsolved.

    Raises
    ------
    ValueError
        Unless lo < na < hi, 0 < δ < 1, k ≤ ``MAX_OPPOSITE_RELEASES``.
    """
    from audit.theory.grid_expectation import POINT, coarsen, expectation, solve_epsilon

    if not lo < na < hi:
        raise ValueError(f"na must lie strictly inside (lo, hi) for an opposite-side pair, got "
                         f"lo={lo!r}, na={na!r}, hi={hi!r}")
    _check_boxes_input(k, delta, "an opposite-side pair's exact value")
    a, ap = hi - na, na - lo
    # the sum of k releases spans 2ak/b on a grid of step/k per release: coarser where that
    # would pass _MAX_POINTS points (a bracket wider in proportion to ε, still certified)
    step = max(step, 2 * max(a, ap) * k * k / (b * _MAX_POINTS))
    us = _partial_sums(a, b, max(int(math.ceil(2 * a * k / (b * step))), 1), k)
    ws = _partial_sums(ap, b, max(int(math.ceil(2 * ap * k / (b * step))), 1), k)
    weights = [math.comb(k, j) / 2.0 ** k for j in range(k + 1)]
    # u = −(k − j)a/b + U_j (t in the expectation), w = −j a′/b + W_{k−j} (r, coarsened)
    rows = []
    for j in range(k + 1):
        (u_up, u_down), (w_up, w_down) = us[j], ws[k - j]
        t_up, t_down = (_shifted(x, -(k - j) * a / b) for x in (u_up, u_down))
        r_up, r_down = (_shifted(x, -j * ap / b) for x in (w_up, w_down))
        rows.append((weights[j], t_up, t_down,
                     coarsen(r_down, False, step, 1e-4 * delta) if r_down.points.size > 1
                     else r_down,
                     coarsen(r_up, True, step, 1e-4 * delta) if r_up.points.size > 1
                     else r_up))
    # A e^s with A ≤ 0 falls with s = −Y: Y moved up (s down) serves the upper bound
    s_high, s_low = (POINT, POINT) if count is None else (count.s_down, count.s_up)
    y_top = 0.0 if count is None else count.top

    def bound(e: float, high: bool) -> float:
        """The upper (``high``) or lower δ bound at ε = e."""
        g = math.exp(e)
        A, B, C = (1 - q) * (1 - g), q, g * q
        total = 0.0
        for wt, t_up, t_down, r_down, r_up in rows:
            if high:
                v, err = expectation(A, B, C, s_high, t_up, r_down)
                total += wt * (v + err)
            else:
                v, err = expectation(A, B, C, s_low, t_down, r_up)
                total += wt * max(v - err, 0.0)
        return min(total, 1.0)

    top = float(_phi(np.array(k * a / b + y_top), q) - _phi(np.array(-k * ap / b + y_top), q))
    if at_most is not None and 0.0 <= at_most < top and bound(at_most, True) <= delta:
        return 0.0, at_most
    return (solve_epsilon(lambda e: bound(e, False), delta, top, upper=False),
            solve_epsilon(lambda e: bound(e, True), delta, top, upper=True))


@dataclass(frozen=True)
class CountLoss:
    """The count coordinate of k releases of a mean over the observed entries (docs/THEORY.md
    §10.8): relative to the missing record, an observed record multiplies the count's density
    by e^Y, Y = Σ_i (|y_i| − |y_i − 1|)/b_N ∈ [−k/b_N, k/b_N], independent of the sum's
    outputs. As s = −Y, weighted by e^Y (masses π(y)e^y, tilted masses π(y)), it enters the
    grid expectation's term A e^s: ``s_down`` has Y moved up (A ≤ 0, so it serves upper
    bounds), ``s_up`` Y moved down; ``top`` = k/b_N."""

    s_down: object
    s_up: object
    top: float

    def pure_q(self, q: float) -> float:
        """q″ = q e^top/(1 − q + q e^top): a pair of observed records at δ = 0 is the sum's
        pair at q″ (its value rises with Y)."""
        return 1.0 / (1.0 + (1 - q) / q * math.exp(-self.top))


def _box_step_law(d0: float, d1: float, b: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """One release above the missing reading (x = m + y, y ~ Exp(b)) of the largest
    (|x − m| − |x − c|)/b over c ∈ [m + d0, m + d1]: (2y − d0)/b up to y = d0, y/b up to d1,
    d1/b beyond (an atom e^{−d1/b}). Grid −d0/b + (d0 + d1)j/(bn), j = 0..n, masses moved up."""
    grid = (-d0 + (d0 + d1) * np.arange(n + 1) / n) / b
    v = grid * b
    y = np.where(v <= d0, 0.5 * (v + d0), v)
    cdf = -np.expm1(-y / b)
    cdf[0], cdf[-1] = 0.0, 1.0  # y = 0 below the grid; the atom at d1/b
    up = np.zeros(n + 1)
    up[1:] = np.diff(cdf)
    return grid, up


def _pure_box(c1: float, c2: float, cp: float, na: float, k: int, b: float,
              q: float) -> float:
    """An upper bound on the δ = 0 value of every pair (c, c′) with c ∈ [c1, c2] (a piece: m
    not inside) and c′ = ``cp`` (an end of the domain): on each edge of the count triangle and
    at each integer t, u and w are linear in c, so φ(max u) − φ(min w) over the two ends
    bounds it (module docstring, reductions 2 and 3)."""
    t = np.arange(k + 1, dtype=float)
    best = -math.inf
    for edge in (0, 1, 2):
        e = np.full(t.size, edge)
        u1, w1 = _uw(np.full(t.size, c1), t, np.full(t.size, cp), e, na, k, b)
        u2, w2 = _uw(np.full(t.size, c2), t, np.full(t.size, cp), e, na, k, b)
        v = _phi(np.maximum(u1, u2), q) - _phi(np.minimum(w1, w2), q)
        best = max(best, float(np.max(v)))
    return best + 4 * np.finfo(float).eps * (1 + abs(best))


class _Boxes:
    """Upper bounds at δ > 0 on D_γ(P_c ‖ P_c′) over boxes of numerators c ∈ [m + d0, m + d1]
    at or above the missing reading m, against an end c′ of the domain: across m (c′ ≤ m) or
    on the same side (docs/THEORY.md §10.3). The integrand rises with u = Σ_i (|x_i − m| −
    |x_i − c|)/b, so u replaced by its largest value over the box, release by release, bounds
    it: a release below m adds −d0/b and one above m a value of :func:`_box_step_law`.

    Across m, given the number j of releases above m that sum and w (at c′ = lo) are
    independent, as in :func:`opposite_pair_epsilon` (w ≡ 0 when lo = m). On the same side,
    release by release |x − c| − |x − c′| ≥ −|c − c′|, so w ≥ u − kΔ/b with Δ the box's
    largest distance to c′, and the integrand is at most ((1 − q)(1 − γ) + q e^u (1 −
    γ e^{−kΔ/b}))_+, a function of u alone (at the δ = 0 worst output, every release at c, the
    two are equal). ``count``: a mean's count loss (:class:`CountLoss`) in the term A e^s."""

    def __init__(self, lo: float, hi: float, na: float, q: float, b: float, k: int,
                 delta: float, step: float, count: CountLoss | None = None) -> None:
        from audit.theory.grid_expectation import POINT, coarsen

        ap = max(na - lo, 0.0)
        # as in opposite_pair_epsilon: coarser where a sum would pass _MAX_POINTS points
        step = max(step, 2 * max(hi - na, ap) * k * k / (b * _MAX_POINTS))
        self.q, self.b, self.k, self.step = q, b, k, step
        self.s = POINT if count is None else count.s_down
        self.weights = [math.comb(k, j) / 2.0 ** k for j in range(k + 1)]
        self.rows = [POINT] * (k + 1)  # w given j across m (a point when lo = m)
        if ap > 0.0:
            ws = _partial_sums(ap, b, max(int(math.ceil(2 * ap * k / (b * step))), 1), k)
            for j in range(k + 1):
                r_down = _shifted(ws[k - j][1], -j * ap / b)
                self.rows[j] = (coarsen(r_down, False, step, 1e-4 * delta)
                                if r_down.points.size > 1 else r_down)
        self.evaluations = 0
        self._box: tuple[float, float] | None = None
        self._laws: list = []

    def _u(self, d0: float, d1: float) -> list:
        """u's law moved up over the box, given j releases above m, j = 0..k (kept for the
        last box: both denominators read it)."""
        if self._box != (d0, d1):
            b, k = self.b, self.k
            n = max(int(math.ceil((d0 + d1) * k / (b * self.step))), 1)
            grid, up = _box_step_law(d0, d1, b, n)
            sums = _sums(grid, (up,), k, (True,))
            self._laws = [_shifted(sums[j][0], -(k - j) * d0 / b) for j in range(k + 1)]
            self._box = (d0, d1)
        return self._laws

    def delta(self, d0: float, d1: float, gamma: float, reach: float | None) -> float:
        """An upper bound on sup over c ∈ [m + d0, m + d1] of D_γ(P_c ‖ P_lo) across m
        (``reach`` None) or of D_γ(P_c ‖ P_c′) for a c′ on the same side at most ``reach``
        from every c of the box."""
        from audit.theory.grid_expectation import POINT, expectation

        self.evaluations += 1
        q, k = self.q, self.k
        laws = self._u(d0, d1)
        A = (1 - q) * (1 - gamma)
        across = reach is None
        if across:
            B, C = q, gamma * q
        else:
            B, C = q * (1 - gamma * math.exp(-k * reach / self.b)), 0.0
            if B <= 0.0:
                return 0.0
        total = 0.0
        for j in range(k + 1):
            v, err = expectation(A, B, C, self.s, laws[j], self.rows[j] if across else POINT)
            total += self.weights[j] * (v + err)
        return min(total, 1.0)


def _side_holds(lo: float, hi: float, na: float, q: float, b: float, k: int, delta: float,
                target: float, step: float, budget: int,
                count: CountLoss | None = None) -> bool:
    """Whether every pair whose numerator c lies in [max(m, lo), hi] and whose denominator is
    lo or hi has ε(δ) ≤ ``target``: a box of c passes against a denominator by the δ = 0 bound
    of :func:`_pure_box` or the δ > 0 bound of :class:`_Boxes`; a box that does not pass
    against both is halved. ``count``: the sum of a mean over the observed entries (m = 0),
    the δ = 0 bound at :meth:`CountLoss.pure_q`."""
    gamma = math.exp(target)
    boxes = _Boxes(lo, hi, na, q, b, k, delta, step, count)
    q_pure = q if count is None else count.pure_q(q)
    floor = 1e-9 * (hi - lo)
    stack = [(max(na, lo), hi)]

    def reach(c1: float, c2: float, cp: float) -> float | None:
        return None if cp <= na else max(abs(c1 - cp), abs(c2 - cp))

    while stack:
        c1, c2 = stack.pop()
        if all(_pure_box(c1, c2, cp, na, k, b, q_pure) <= target
               or boxes.delta(c1 - na, c2 - na, gamma, reach(c1, c2, cp)) <= delta
               for cp in (lo, hi)):
            continue
        if c2 - c1 <= floor or boxes.evaluations >= budget:
            return False
        mid = 0.5 * (c1 + c2)
        stack += [(c1, mid), (mid, c2)]
    return True


def shared_upper(lo: float, hi: float, na: float, q: float, b: float, k: int, delta: float,
                 floor: float, *, above: float = 0.0, targets=(1e-3, 2.5e-3, 5e-3, 1e-2),
                 step: float = 0.01, budget: int = 80) -> float | None:
    """A certified upper end at δ > 0 over every pair of the domain and the missing record for
    k Laplace releases from one table with the missing reading strictly inside (lo, hi):
    the first of floor·(1 + r), r in ``targets``, that :func:`_side_holds` certifies on both
    sides of m, or None (docs/THEORY.md §10.3). Targets below ``above`` (the upper end of a
    pair's own bracket, which no box holding that pair can pass) are skipped.

    Every pair reduces to a denominator at an end of the domain: at every output x, the
    density 1 − q + q e^{w(c′)} of a record c′ between c and an end is at least the smaller of
    its values at c and at that end (e^{−L_c′(x)} is log-concave in c′), and for γ ≥ 1 the
    term (p_c − γ p_c)_+ vanishes, so D_γ(P_c ‖ P_c′) ≤ max(D_γ(P_c ‖ P_lo), D_γ(P_c ‖ P_hi))
    (the missing record is c′ = m, inside). The pairs with the numerator on the far side of m
    from c′ are bounded at δ > 0 on boxes of c (:class:`_Boxes`), and so are those on its side,
    unless their δ = 0 value is below the target already.

    Raises
    ------
    ValueError
        Unless lo < na < hi, 0 < δ < 1 and k ≤ ``MAX_OPPOSITE_RELEASES``.
    """
    if not lo < na < hi:
        raise ValueError(f"na must lie strictly inside (lo, hi), got lo={lo!r}, na={na!r}, "
                         f"hi={hi!r}")
    _check_boxes_input(k, delta, "a shared-mask upper end at delta > 0")
    sides = [(lo, hi)] if hi - na == na - lo else [(lo, hi), (2 * na - hi, 2 * na - lo)]
    return _first_target(sides, na, q, b, k, delta, floor, above, targets, step, budget)


def _first_target(sides, na: float, q: float, b: float, k: int, delta: float, floor: float,
                  above: float, targets, step: float, budget: int,
                  count: CountLoss | None = None) -> float | None:
    """The first of floor·(1 + r), r in ``targets``, above ``above`` that :func:`_side_holds`
    certifies on every (lo, hi) of ``sides`` (each the domain, or its mirror image about m),
    or None."""
    for r in targets:
        target = floor * (1 + r)
        if target > above and all(_side_holds(a, z, na, q, b, k, delta, target, step, budget,
                                              count) for a, z in sides):
            return target
    return None
