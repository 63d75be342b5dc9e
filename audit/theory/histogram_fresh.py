"""Fresh-mask histograms at δ > 0: each pair of records' one-release privacy loss law on a
grid, rounded up and down, composed k times (docs/THEORY.md §10.9, **derived in this
project**).

With the mask redrawn at every release, the k releases of a pair are k independent copies of
one release, so the pair's ε(δ) is the k-fold composition of its one-release PLD, each order
apart. One release of a histogram with Laplace (b) or Gaussian (σ) noise in every bin moves
at most three bins. With t the log density ratio of one unit in a bin (the base loss of
Lap_{1/b} or G_{1/σ}, law Q0 with the unit absent, P0 with it present) and
g(t) = ln(1 − q + q e^t):

- **without a bin of missing entries**, the pair (a, NA) has loss g(t), t ~ (1 − q) Q0 + q P0
  (its other order −g(t), t ~ Q0), and the pair (a, b) has loss g(t) − g(r), the two bins'
  units independent: t ~ (1 − q) Q0 + q P0, r ~ Q0. Both maps are monotone, so the law of
  each term is exact on a grid once every value is moved up (or down) to a grid point, and
  the law of a sum of independent terms is the convolution of the moved laws;
- **with the bin of missing entries**, s the NA bin's unit loss (present when the record's
  entry is missing), the pair (a, NA) has loss g(t − s) and the pair (a, b) has loss
  g(t − s) − g(r − s), every variable's law set by where the record is. Laplace: s has two
  atoms, where the law is as above, and a bounded continuous part cut into cells; on a cell
  [s₀, s₁] each term, monotone in s, is moved at its worst end (g(t − s₀) and −g(r − s₁)
  above, the other ends below), an excess of at most the cell's width per term. Gaussian:
  t − s of the pair (a, NA) is one unit of G_{√2/σ}, so that pair is the line's; the pair
  (a, b) lives in the plane of the three bins' means. With w₁ = (y_a − y_b)/√2 and
  w₂ = (y_a + y_b − 2 y_NA)/√6, independent with variance σ² under each record position,
  x = w₁/(√2 σ²) and λ = ln((1 − q)/q) − √6 w₂/(2σ²), its loss is

      L = ln(e^λ + e^x) − ln(e^λ + e^{−x}),

  increasing in x, and with |L| decreasing in λ. On a cell [λ₀, λ₁] of λ, L at λ₀ for x ≥ 0
  and at λ₁ for x < 0 is above L and still increasing in x; its law given the cell is exact
  through the inverse x(ℓ) = ℓ/2 + asinh(e^λ sinh(ℓ/2)). The other ends give a law below.
  x and λ are independent given the record's position, so the cell masses are products.
  The bound's excess is at most one cell's width in λ (|∂L/∂λ| < 1).

Every moved law bounds the pair's loss pointwise from one side, so the PLDs built from them
(dp_accounting's pessimistic and optimistic PMFs) bracket every composition's ε(δ).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
from scipy import signal, special

from audit._validate import check_bool, check_count, check_in_range, check_positive
from audit.enums import NoiseKind
from audit.theory.pld import (
    MAX_GRID,
    MAX_PLD_RELEASES,
    BaseLoss,
    _subsampled_loss,
    compose_epsilon,
    gaussian_loss,
    laplace_loss,
    loss_step,
    refine_bracket,
)
from audit.theory.worst_case import TIME_BUDGET, tolerance

__all__ = ["fresh_histogram_bracket"]

#: the first loss grid step of the one-release laws (a release's loss is moved by at most
#: the step), and the seconds a step may take for the next (4 times finer) to be tried
FIRST_STEP, _STEP_SECONDS = 1e-3, 6.0
#: the (coarser) loss steps and numbers of λ cells of the pair (a, b) with the NA bin, tried
#: in turn while its upper end is above the pair (a, NA)'s lower end and the next is
#: predicted to take at most TIME_BUDGET (its excess is of the order of one λ cell's width
#: plus one loss step per release: at σ = 4, q = 0.05, k = 100 the upper ends are 1.229,
#: 1.197, 0.829, 0.721 and 0.694 (14.5 s), the last below (a, NA)'s 0.6954)
_PLANE_GRIDS = ((1e-2, 100), (1e-2, 250), (3e-3, 500), (1e-3, 2000), (5e-4, 4000))
#: the width of a cell of the NA bin's Laplace loss, in loss steps, and the most cells times
#: loss grid points (b = 0.02, k = 3: 2,500 cells of 10⁵ points took 120 s)
_CELL_STEPS, _CELL_WORK = 40, 50_000_000
#: the largest |loss| a PMF holds (dp_accounting reads e^{−loss}, which must stay a double)
_LOSS_MAX = 600.0
#: standard deviations of x and λ kept on the plane's grids (the rest of λ is a cell of
#: its own, the rest of x moved to the grid's ends or to the infinite loss)
_Z = 12.0


def _g_inverse(ell: np.ndarray, q: float) -> np.ndarray:
    """t with g(t) = ℓ (−∞ where ℓ ≤ ln(1 − q), below g's range)."""
    ell = np.asarray(ell, dtype=np.float64)
    if q == 1.0:
        return ell
    floor = math.log1p(-q)
    with np.errstate(divide="ignore", invalid="ignore"):
        # ln(e^ℓ − (1 − q)) = ℓ + ln(1 − e^{ln(1−q) − ℓ})
        inner = ell + np.log(-np.expm1(np.minimum(floor - ell, 0.0)))
    return np.where(ell > floor, inner - math.log(q), -np.inf)


def _mixed_cdf(base: BaseLoss, present: float):
    """The distribution function of t ~ (1 − present) Q0 + present P0, atoms included."""

    def cdf(t):
        t = np.asarray(t, dtype=np.float64)
        out = (1 - present) * base.cdf_q(t) + present * base.cdf_p(t)
        for value, p_mass, q_mass in base.atoms:
            out = out + np.where(t >= value, (1 - present) * q_mass + present * p_mass, 0.0)
        return out

    return cdf


class _Moved(NamedTuple):
    """A law moved onto the grid h·j, j = lo, lo + 1, …: ``up``/``down`` the masses of the
    law moved up/down, ``infinite`` the mass the moved-up law puts at +∞."""

    lo: int
    up: np.ndarray
    down: np.ndarray
    infinite: float


def _moved_law(base: BaseLoss, present: float, q: float, sign: int, h: float,
               cell: tuple[float, float] = (0.0, 0.0)) -> _Moved:
    """The law of sign·g(t − s), t ~ (1 − present) Q0 + present P0, for s anywhere in
    ``cell``, moved up (at the cell's end that maximises it: its left end for sign = +1)
    and down (at the other end)."""
    cdf = _mixed_cdf(base, present)
    ends = sign * _subsampled_loss(np.array([-base.t_max, base.t_max]) - np.array(cell)[:, None], q)
    lo, hi = int(math.floor(ends.min() / h)) - 1, int(math.ceil(ends.max() / h)) + 1
    edges = h * np.arange(lo, hi + 1)
    def below(shift: float) -> np.ndarray:
        if sign > 0:
            # P(g(t − s) ≤ e) = F(g⁻¹(e) + s); an atom on an edge belongs to the cell it
            # closes, as F counts it
            at = cdf(_g_inverse(edges, q) + shift)
        else:
            # P(−g(t − s) ≤ e) = 1 − F((g⁻¹(−e) + s)⁻): the left limit, atoms kept above
            at = 1 - cdf(np.nextafter(_g_inverse(-edges, q) + shift, -np.inf))
        return np.clip(np.maximum.accumulate(at), 0.0, 1.0)

    shift_up, shift_down = cell if sign > 0 else cell[::-1]
    b_up = below(shift_up)
    b_down = b_up if shift_down == shift_up else below(shift_down)  # an atom: one law
    # up: each cell (e_{i−1}, e_i] at its right end, the tail below at the first point, the
    # tail above at +∞; down: each cell at its left end, the tail below dropped, the tail
    # above at the last point
    up = np.concatenate([[b_up[0]], np.diff(b_up)])
    down = np.concatenate([np.diff(b_down), [1 - b_down[-1]]])
    return _Moved(lo, up, down, float(1 - b_up[-1]))


def _pmf(law: _Moved, h: float, pessimistic: bool):
    """dp_accounting's PMF of the law moved up (``pessimistic``) or down, its losses kept
    within ±``_LOSS_MAX`` (up: the mass above goes to +∞, the mass below to −_LOSS_MAX;
    down: the mass above to +_LOSS_MAX, the mass below is dropped)."""
    from dp_accounting.pld import pld_pmf

    masses = (law.up if pessimistic else law.down).copy()
    infinite = law.infinite if pessimistic else 0.0
    lo = law.lo
    first, last = int(math.floor(-_LOSS_MAX / h)) - lo, int(math.floor(_LOSS_MAX / h)) - lo
    if last < masses.size - 1:
        above = float(masses[last + 1:].sum())
        masses = masses[:last + 1]
        if pessimistic:
            infinite += above
        else:
            masses[-1] += above
    if first > 0:
        below = float(masses[:first].sum())
        masses, lo = masses[first:], lo + first
        if pessimistic:
            masses[0] += below
    keep = np.nonzero(masses > 0)[0]
    start, stop = int(keep[0]), int(keep[-1]) + 1
    return pld_pmf.DensePLDPmf(h, lo + start, masses[start:stop], infinite, pessimistic)


def _sum_laws(a: _Moved, b: _Moved) -> _Moved:
    """The moved laws of the sum of two independent moved terms (an FFT convolution: its
    absolute rounding, about 10⁻¹⁶ of the total per point, is not certified, as in
    dp_accounting's own compositions; negatives clipped)."""
    up, down = (np.maximum(signal.fftconvolve(x, y), 0.0)
                for x, y in ((a.up, b.up), (a.down, b.down)))
    return _Moved(a.lo + b.lo, up, down, 1 - (1 - a.infinite) * (1 - b.infinite))


def _mix(parts: list[tuple[float, _Moved]]) -> _Moved:
    """The mixture Σ wᵢ lawᵢ of moved laws on one grid."""
    lo = min(law.lo for _, law in parts)
    n = max(law.lo + law.up.size for _, law in parts) - lo
    up, down = np.zeros(n), np.zeros(n)
    for w, law in parts:
        up[law.lo - lo:law.lo - lo + law.up.size] += w * law.up
        down[law.lo - lo:law.lo - lo + law.down.size] += w * law.down
    return _Moved(lo, up, down, sum(w * law.infinite for w, law in parts))


def _pieces(base: BaseLoss, present: bool, cells: int) -> list[tuple[float, float, float]]:
    """The law of the NA bin's unit loss s ~ P0 (``present``) or Q0 as (mass, s₀, s₁): its
    atoms exactly (s₀ = s₁) and its continuous part on ``cells`` equal cells of
    (−t_max, t_max) (Laplace: the loss is bounded there)."""
    out = [(p if present else q0, v, v) for v, p, q0 in base.atoms]
    edges = np.linspace(-base.t_max, base.t_max, cells + 1)
    mass = np.diff(base.cdf_p(edges) if present else base.cdf_q(edges))
    out += [(float(m), float(a), float(b)) for m, a, b in zip(mass, edges[:-1], edges[1:],
                                                                   strict=True)
            if m > 0]
    return out


def _laws(base: BaseLoss, q: float, terms, s_present: bool | None, h: float,
          cells: int) -> _Moved:
    """The moved laws of Σ signᵢ·g(tᵢ − s) over ``terms`` (presentᵢ, signᵢ), the tᵢ
    independent, tᵢ ~ (1 − presentᵢ) Q0 + presentᵢ P0, and s ≡ 0 (``s_present`` None) or
    the NA bin's unit loss (:func:`_pieces`), each piece's terms moved at its worst end."""
    pieces = [(1.0, 0.0, 0.0)] if s_present is None else _pieces(base, s_present, cells)
    parts = []
    for mass, s0, s1 in pieces:
        law = None
        for present, sign in terms:
            term = _moved_law(base, present, q, sign, h, (s0, s1))
            law = term if law is None else _sum_laws(law, term)
        parts.append((mass, law))
    return _mix(parts)


def _pair_laws(base: BaseLoss, q: float, pair: str, na_bin: bool, h: float,
               cells: int) -> tuple[_Moved, _Moved]:
    """The moved laws of ``pair`` ("move": (a, NA); "swap": (a, b)) in the remove order and
    in the other order. ``na_bin``: the NA bin's loss s is a variable of its own (Laplace);
    without it s ≡ 0 (also the Gaussian pair (a, NA) with the NA bin, whose t − s is one
    unit of G_{√2/σ})."""
    if not na_bin:
        terms = [(q, 1)] + ([(0.0, -1)] if pair == "swap" else [])
        remove = _laws(base, q, terms, None, h, cells)
        return remove, (remove if pair == "swap" else _laws(base, q, [(0.0, -1)], None, h,
                                                            cells))
    extra = [(0.0, -1)] if pair == "swap" else []
    # the record observed (in a: t present, s absent) or missing (in the NA bin)
    remove = _mix([(q, _laws(base, q, [(1.0, 1)] + extra, False, h, cells)),
                   (1 - q, _laws(base, q, [(0.0, 1)] + extra, True, h, cells))])
    if pair == "swap":  # swapping the categories maps one order onto the other
        return remove, remove
    return remove, _laws(base, q, [(0.0, -1)], True, h, cells)


def _line_pmfs(base: BaseLoss, q: float, pair: str, h: float, na_bin: bool = False,
               cells: int = 0):
    """((pessimistic remove, other), (optimistic remove, other)) PMFs of ``pair``."""
    laws = _pair_laws(base, q, pair, na_bin, h, cells)
    return tuple(tuple(_pmf(law, h, up) for law in laws) for up in (True, False))


def _plane_x(ell: np.ndarray, log_kappa: np.ndarray) -> np.ndarray:
    """x with ln(κ + e^x) − ln(κ + e^{−x}) = ℓ, for every ℓ (rows) and ln κ (columns):
    the root y = e^x of y² + κ(1 − e^ℓ)y − e^ℓ = 0 is e^{ℓ/2}(u + √(1 + u²)) with
    u = κ sinh(ℓ/2), so x = ℓ/2 + asinh(u), u read through its logarithm (asinh(u) is
    sign(u)(ln 2|u|) to double precision once |u| > 10⁸)."""
    ell = np.asarray(ell, dtype=np.float64)[:, None]
    log_kappa = np.asarray(log_kappa, dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_u = log_kappa + np.log(np.sinh(np.abs(ell) / 2))  # |ℓ| ≤ _LOSS_MAX
        big = np.sign(ell) * (log_u + math.log(2.0))
        small = np.arcsinh(np.sign(ell) * np.exp(np.minimum(log_u, 40.0)))
        x = ell / 2 + np.where(log_u > 40.0, big, small)
    x = np.where(ell == 0, 0.0, x)  # L(0) = 0 for every finite κ
    # κ = ∞: L ≡ 0, so P(L ≤ ℓ) is 1 from ℓ = 0 on and 0 below
    return np.where(np.isfinite(log_kappa) | (log_kappa < 0), x,
                    np.where(ell >= 0, np.inf, -np.inf))


def _plane_law(sigma: float, q: float, h: float, cells: int) -> _Moved:
    """Moved laws of the pair (a, b) with the NA bin, Gaussian noise σ, in the remove order
    (module docstring)."""
    s = 1 / (math.sqrt(2) * sigma)  # sd of x
    tau = math.sqrt(1.5) / sigma  # sd of λ
    lam0 = math.log1p(-q) - math.log(q)
    # (weight, mean of x, mean of λ) with the record's entry missing, and observed
    parts = ((1 - q, 0.0, lam0 + 1 / sigma ** 2), (q, 1 / (2 * sigma ** 2),
                                                   lam0 - 1 / (2 * sigma ** 2)))
    x_top = max(m for _, m, _ in parts) + _Z * s
    # the loss kept within ±_LOSS_MAX (beyond: the tails, moved to ±∞ or to the ends)
    top = min(int(math.ceil(2 * x_top / h)), int(math.floor(_LOSS_MAX / h)))
    edges = h * np.arange(-top, top + 1)
    lam = np.linspace(min(m for *_, m in parts) - _Z * tau,
                      max(m for *_, m in parts) + _Z * tau, cells + 1)
    lam = np.concatenate([[-np.inf], lam, [np.inf]])  # the tails: cells of their own
    positive = edges >= 0
    cdf = {True: np.zeros(edges.size), False: np.zeros(edges.size)}
    for weight, mx, ml in parts:
        cell = np.diff(special.ndtr((lam - ml) / tau)) * weight
        for up in (True, False):
            # above: λ₀ for ℓ ≥ 0, λ₁ below 0; below: the other way round
            lam_pos, lam_neg = (lam[:-1], lam[1:]) if up else (lam[1:], lam[:-1])
            for chunk in np.array_split(np.arange(cell.size), max(1, cell.size // 200)):
                x = np.empty((edges.size, chunk.size))
                x[positive] = _plane_x(edges[positive], lam_pos[chunk])
                x[~positive] = _plane_x(edges[~positive], lam_neg[chunk])
                cdf[up] += special.ndtr((x - mx) / s) @ cell[chunk]
    up, down = (np.clip(np.maximum.accumulate(cdf[u]), 0.0, 1.0) for u in (True, False))
    return _Moved(-top, np.concatenate([[up[0]], np.diff(up)]),
                  np.concatenate([np.diff(down), [1 - down[-1]]]), float(1 - up[-1]))


def _compose(pmfs, releases: int, delta: float) -> tuple[float, float]:
    """(lower, upper) ε at ``delta`` of the k-fold compositions of (pessimistic, optimistic)
    PMF pairs (remove order, other order)."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    up, down = (compose_epsilon(PrivacyLossDistribution(*pm), releases, delta) for pm in pmfs)
    return down, up


def _plane_bracket(sigma: float, q: float, releases: int, delta: float,
                   beaten: float) -> tuple[float, float]:
    """(lower, upper) of the pair (a, b) with the NA bin, on finer grids while its upper
    end is above ``beaten`` (another pair's lower end) and the next grid is predicted to
    take at most ``TIME_BUDGET`` seconds."""
    found = (0.0, math.inf)
    for i, (h, cells) in enumerate(_PLANE_GRIDS):
        start = time.perf_counter()
        law = _plane_law(sigma, q, h, cells)
        found = _compose(tuple((_pmf(law, h, up),) * 2 for up in (True, False)), releases,
                         delta)
        if found[1] <= beaten or i + 1 == len(_PLANE_GRIDS):
            break
        h_next, cells_next = _PLANE_GRIDS[i + 1]
        if (time.perf_counter() - start) * (h / h_next) * (cells_next / cells) > TIME_BUDGET:
            break
    return found


def fresh_histogram_bracket(noise: NoiseKind | str, scale: float, q: float,
                            na_category: bool, releases: int, delta: float):
    """(lower, upper, pair, step) of ε at ``delta`` over ``releases`` fresh-mask releases
    of a histogram: each pair's one-release PLD rounded down and up, composed (module
    docstring), the loss step refined from ``FIRST_STEP``. ``pair`` is ``("a", "b")`` or
    ``("a", "NA")``, whichever has the larger lower end."""
    gaussian = NoiseKind.parse(noise, "noise") is NoiseKind.GAUSSIAN
    scale = check_positive(scale, "scale")
    q = check_in_range("q", q, 0.0, 1.0, lo_closed=False)
    na_category = check_bool(na_category, "na_category")
    releases = check_count(releases, "releases")
    if releases > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} (a PLD composition), "
                         f"got releases={releases}")
    delta = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    if gaussian:  # with the NA bin, t − s of the pair (a, NA) is one unit of G_{√2/σ}
        base = gaussian_loss(math.sqrt(2) / scale if na_category else 1 / scale)
    else:
        base = laplace_loss(1 / scale)
    na_bin = na_category and not gaussian  # s a variable of its own
    line_pairs = ("move",) if gaussian and na_category else ("move", "swap")
    span = 2 * float(np.max(np.abs(_subsampled_loss(np.array([-base.t_max, base.t_max]), q))))
    found = {}

    def line(h: float) -> tuple[float, float]:
        # cells of s 40 steps wide, fewer where one release's loss spans many steps (each
        # cell costs a convolution of the loss grid; a wider cell is still a valid bound)
        cells = min(int(math.ceil(2 * base.t_max / (_CELL_STEPS * h))),
                    max(1, int(_CELL_WORK * h / span))) if na_bin else 0
        for pair in line_pairs:
            found[("a", "b") if pair == "swap" else ("a", "NA")] = _compose(
                _line_pmfs(base, q, pair, h, na_bin, cells), releases, delta)
        return max(v[0] for v in found.values()), max(v[1] for v in found.values())

    # each release's loss moves by at most h, so the composition's by about k·h: the step
    # is refined (÷4) until the bracket is within half the tolerance
    *_, step = refine_bracket(line, loss_step(FIRST_STEP, span),
                              good=lambda low, high: high - low <= tolerance(high) / 2,
                              can_refine=lambda h: span / h <= MAX_GRID,
                              step_seconds=_STEP_SECONDS)
    if gaussian and na_category and q < 1.0:  # q = 1: (a, b) is the shift by √2, as (a, NA)
        found[("a", "b")] = _plane_bracket(scale, q, releases, delta, found[("a", "NA")][0])
    worst = max(found, key=lambda p: found[p][0])
    return found[worst][0], max(v[1] for v in found.values()), worst, step
