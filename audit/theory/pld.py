"""Privacy loss distributions (PLDs) on a grid, composed by dp_accounting (docs/THEORY.md §9).

A pair (P, Q) is described by its privacy loss L = ln(dP/dQ) under P (the "remove" order)
and ln(dQ/dP) under Q (the "add" order). Rounding every loss **up** to a multiple of the
grid step h, masses kept, gives a PLD that dominates the true one: δ(ε) = E_P[(1 − e^{ε−L})_+]
is non-decreasing in L and a composition adds the losses, so every composed δ(ε), and hence
every ε(δ), is an upper bound (the *pessimistic* estimate of dp_accounting). Rounding
**down** gives the optimistic estimate, a lower bound; the two bracket the exact value.

Two builders, both exact up to rounding direction (no interpolation):

- :func:`subsampled_pmf`: the **symmetric** PLD of C_p(f) ([DRS] Definition 4.1) for a base
  curve f with an explicit pair (:class:`BaseLoss`: Gaussian G_μ, Laplace Lap_μ, f_{ε,0}).
  For ε ≥ 0, δ_{C_p(f)}(ε) is the hockey stick of the pair (p P0 + (1 − p) Q0, Q0) whose loss
  is L = ln(1 − p + p e^{L0}), increasing in L0 = ln(dP0/dQ0); so the PLD of C_p(f) is that
  pair's PLD on (0, ∞], its mirror image e^{−l}·mass on (−∞, 0) (a symmetric curve has the
  same PLD in both orders), and the remaining mass at 0.
- :func:`pair_pmfs`: both orders of a pair of scalar mixtures, on cells of the output axis
  with the loss bounded on each cell through a Lipschitz constant of ln p − ln q.

:func:`compose_epsilon` composes k copies with dp_accounting's FFT self-composition.
dp_accounting is imported on first use (it takes about a second to import), so importing the
accountant stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from audit._validate import check_delta, check_positive, check_positive_int, check_probability
from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.theory.pair.masses import check_pair, interval_masses

__all__ = [
    "BaseLoss",
    "gaussian_loss",
    "laplace_loss",
    "pure_dp_loss",
    "subsampled_pmf",
    "pair_pmfs",
    "compose_epsilon",
    "epsilon_for_delta",
    "tradeoff_from_profile",
    "profile_pmf",
    "profile_grid",
    "curve_pmf",
    "amplified_profile",
    "amplified_pld",
    "refine_bracket",
    "MAX_GRID",
    "MAX_PLD_RELEASES",
    "DISCRETIZATION",
    "LOSS_STEP_SHARE",
    "loss_step",
    "envelope_pld",
    "laplace_profile",
    "base_loss_of",
]

#: most releases a PLD composition is run for (beyond: closed forms, or refused)
MAX_PLD_RELEASES = 10_000
#: default loss grid step of the PLD compositions
DISCRETIZATION = 1e-4
#: largest number of grid points of one (uncomposed) PMF, and of output-axis cells
MAX_GRID = 4_000_000

#: A loss grid's step is at least this share of the largest loss it holds
#: (:func:`loss_step`).
LOSS_STEP_SHARE = 1e-5
#: tail mass of a Gaussian loss beyond which it goes to the infinite loss (pessimistic)
_TAIL_Z = 9.0
#: Gaussian output cells reach this many σ beyond every shift (tail mass < 1e-50)
_CUT_Z = 15.0
#: largest argument of math.exp that does not overflow (about ln of the largest float)
_EXP_MAX = 709.0
#: relative margin that keeps a rounded-up atom at or above its exact loss
_ULP_MARGIN = 1e-12


@dataclass(frozen=True)
class BaseLoss:
    """The loss L0 = ln(dP0/dQ0) of a pair (P0, Q0) whose trade-off is the base curve f.

    ``cdf_p(t)``/``cdf_q(t)``: the continuous part of P0(L0 ≤ t), Q0(L0 ≤ t) (vectorised);
    ``atoms``: (t, P0-mass, Q0-mass) of the point masses; ``t_max``: a loss above which the
    continuous parts hold at most ~1e-19 of mass (that mass goes to the infinite loss).
    """

    name: str
    cdf_p: object
    cdf_q: object
    atoms: tuple[tuple[float, float, float], ...]
    t_max: float
    chi2: float  # χ²(P0‖Q0) = E_P0[e^{L0}] − 1, for the CLT of [DRS] §5


def gaussian_loss(mu: float) -> BaseLoss:
    """G_μ: L0 ~ N(μ²/2, μ²) under P0 = N(μ, 1), N(−μ²/2, μ²) under Q0 = N(0, 1)."""
    m = check_positive(mu, "mu")
    half = m * m / 2

    def cdf_p(t):
        return special.ndtr((np.asarray(t) - half) / m)

    def cdf_q(t):
        return special.ndtr((np.asarray(t) + half) / m)

    chi2 = math.expm1(m * m) if m * m < _EXP_MAX else math.inf
    return BaseLoss(f"G_{m:.6g}", cdf_p, cdf_q, (), half + _TAIL_Z * m, chi2)


def laplace_loss(mu: float) -> BaseLoss:
    """Lap_μ (b = 1): L0 = |x| − |x − μ| ∈ [−μ, μ], atoms at ±μ (docs/THEORY.md §9.3)."""
    m = check_positive(mu, "mu")

    def cdf_p(t):  # continuous part of P0(L0 ≤ t) on (−μ, μ): (e^{(t−μ)/2} − e^{−μ})/2
        t = np.clip(np.asarray(t, dtype=np.float64), -m, m)
        return 0.5 * (np.exp((t - m) / 2) - math.exp(-m))

    def cdf_q(t):  # continuous part of Q0(L0 ≤ t): (1 − e^{−(t+μ)/2})/2
        t = np.clip(np.asarray(t, dtype=np.float64), -m, m)
        return -0.5 * np.expm1(-(t + m) / 2)

    atoms = ((-m, 0.5 * math.exp(-m), 0.5), (m, 0.5, 0.5 * math.exp(-m)))
    chi2 = (2 / 3) * math.exp(m) + math.exp(-2 * m) / 3 - 1 if m < _EXP_MAX else math.inf
    return BaseLoss(f"Lap_{m:.6g}", cdf_p, cdf_q, atoms, m, chi2)


def pure_dp_loss(epsilon: float) -> BaseLoss:
    """f_{ε,0}: the two-point pair with L0 = ±ε ([DRS] Proposition 2.5)."""
    e = check_positive(epsilon, "epsilon")
    hi, lo = 1 / (1 + math.exp(-e)), 1 / (1 + math.exp(e))
    atoms = ((-e, lo, hi), (e, hi, lo))

    def zero(t):
        return np.zeros_like(np.asarray(t, dtype=np.float64))

    # E_P0[e^{L0}] − 1 (∞ where e^{2ε} overflows)
    chi2 = (math.exp(2 * e) + math.exp(-e)) * lo - 1 if 2 * e < _EXP_MAX else math.inf
    return BaseLoss(f"f_({e:.6g},0)", zero, zero, atoms, e, chi2)


def _subsampled_loss(t: np.ndarray, p: float) -> np.ndarray:
    """ln(1 − p + p e^t), vectorised (p ∈ (0, 1])."""
    if p == 1.0:
        return np.asarray(t, dtype=np.float64)
    return np.logaddexp(math.log1p(-p), math.log(p) + np.asarray(t, dtype=np.float64))


def base_loss_of(l: np.ndarray, p: float) -> np.ndarray:
    """ln((e^l − 1 + p)/p), the inverse of l0 ↦ ln(1 − p + p e^{l0}) on l ≥ 0, vectorised: the
    base loss behind a subsampled loss l, and ln α = ln(1 + (e^ε − 1)/p) of advanced joint
    convexity."""
    if p == 1.0:
        return l
    with np.errstate(divide="ignore"):
        log_expm1 = np.where(l > 0, l + np.log(-np.expm1(-np.maximum(l, 1e-300))), -np.inf)
    return np.logaddexp(math.log(p), log_expm1) - math.log(p)


def _dp():
    """dp_accounting's PMF module and PLD class, imported on first use."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return pld_pmf, PrivacyLossDistribution


def loss_step(discretization: float, top: float) -> float:
    """The step of a loss grid that holds losses up to ``top``: ``discretization``, or
    ``LOSS_STEP_SHARE`` of ``top`` if larger (at most 2·10⁵ steps: a Laplace PLD of loss 700
    at 10⁻⁴ took 99 s and 3.2 GB to compose twice; its error, which every caller certifies
    from the two rounded PLDs, stays the same share of the loss)."""
    return max(discretization, LOSS_STEP_SHARE * top)


def _up(x: float, h: float) -> int:
    return int(math.ceil(x / h * (1 + _ULP_MARGIN) + _ULP_MARGIN))


def _down(x: float, h: float) -> int:
    return int(math.floor(x / h * (1 - _ULP_MARGIN) - _ULP_MARGIN)) if x > 0 else \
        int(math.floor(x / h * (1 + _ULP_MARGIN) - _ULP_MARGIN))


def subsampled_pmf(base: BaseLoss, p: float, discretization: float, *,
                   pessimistic: bool = True):
    """The pessimistic (or optimistic), symmetric PLD of C_p(f) on a grid of step
    ``discretization``.

    Parameters
    ----------
    base : BaseLoss
        The base curve's pair (:func:`gaussian_loss`, :func:`laplace_loss`,
        :func:`pure_dp_loss`).
    p : float
        p ∈ (0, 1] (p = 1: the PLD of f itself).
    discretization : float
        Grid step h > 0 of the losses; at most ``MAX_GRID`` grid points.
    pessimistic : bool
        True: losses rounded up; False: rounded down, and the tail beyond ``t_max`` put at
        the top grid loss instead of the infinite loss.

    Returns
    -------
    dp_accounting.pld.pld_pmf.DensePLDPmf
        Pessimistic: every δ(ε) it gives, after any number of compositions, is an upper bound
        on the exact one; optimistic: a lower bound (the two bracket the exact value).

    Raises
    ------
    ValueError
        If p ∉ (0, 1], h ≤ 0, or the grid would exceed ``MAX_GRID`` points.

    References
    ----------
    [DRS] Definition 4.1 and Theorem 4.2; docs/THEORY.md §7 and §9.3.
    """
    pp = check_probability(p, "p")
    if pp == 0.0:
        raise ValueError(f"p must be in (0, 1], got p={p!r}")
    h = check_positive(discretization, "discretization")
    top = float(_subsampled_loss(np.array(base.t_max), pp))
    n = _up(top, h)
    if 2 * n + 1 > MAX_GRID:
        raise ValueError(f"discretization must give at most {MAX_GRID} grid points, got "
                         f"discretization={discretization!r} ({2 * n + 1} points)")
    edges = base_loss_of(np.arange(n + 1) * h, pp)  # L0 at the loss grid l_i = i h
    cp, cq = base.cdf_p(edges), base.cdf_q(edges)
    mass_q = np.diff(cq)
    mass_p = pp * np.diff(cp) + (1 - pp) * mass_q
    probs = np.zeros(2 * n + 1)  # index j ↔ loss (j − n) h
    if pessimistic:
        probs[n + 1:] += mass_p  # bin (l_{i−1}, l_i] → l_i
        probs[n::-1][: n] += mass_q  # mirror: −l ∈ [−l_i, −l_{i−1}) → −l_{i−1}
    else:
        probs[n:-1] += mass_p  # bin (l_{i−1}, l_i] → l_{i−1}
        probs[n - 1::-1][: n] += mass_q  # mirror: −l ∈ [−l_i, −l_{i−1}) → −l_i
    infinity = pp * (1 - base.cdf_p(np.array(base.t_max)) - sum(a[1] for a in base.atoms)) + \
        (1 - pp) * (1 - base.cdf_q(np.array(base.t_max)) - sum(a[2] for a in base.atoms))
    infinity = float(max(infinity, 0.0))
    for t0, m_p, m_q in base.atoms:
        if t0 <= 0:
            continue  # its loss is ≤ 0: part of the remainder at 0 in the symmetric PLD
        loss = float(_subsampled_loss(np.array(t0), pp))
        if pessimistic:
            probs[n + min(_up(loss, h), n)] += pp * m_p + (1 - pp) * m_q
            probs[n - max(_down(loss, h), 0)] += m_q
        else:
            probs[n + min(max(_down(loss, h), 0), n)] += pp * m_p + (1 - pp) * m_q
            probs[n - min(_up(loss, h), n)] += m_q
    if not pessimistic:  # the tail beyond t_max has losses ≥ the top grid loss
        probs[-1] += infinity
        infinity = 0.0
    probs[n] += max(0.0, 1.0 - probs.sum() - infinity)
    return _dp()[0].DensePLDPmf(h, -n, probs, infinity, pessimistic)


def _cells(P: Mixture, Q: Mixture, h: float) -> tuple[np.ndarray, float, bool]:
    """Cell edges of the output axis, the Lipschitz pad of the loss per cell, and whether
    the loss is constant on the two unbounded tail cells (Laplace: beyond every shift)."""
    shifts = np.concatenate([P.scalar_shifts, Q.scalar_shifts])
    s_lo, s_hi = float(shifts.min()), float(shifts.max())
    if P.noise is NoiseKind.GAUSSIAN:
        lip = max(abs(P.scalar_shifts.max() - Q.scalar_shifts.min()),
                  abs(Q.scalar_shifts.max() - P.scalar_shifts.min())) / P.scale ** 2
        lo, hi, flat = s_lo - _CUT_Z * P.scale, s_hi + _CUT_Z * P.scale, False
    else:
        lip, lo, hi, flat = 2.0 / P.scale, s_lo, s_hi, True
    lip = max(lip, 1e-300)
    n = int(min(MAX_GRID, max(2, math.ceil((hi - lo) * lip / h))))
    edges = np.linspace(lo, hi, n + 1) if hi > lo else np.array([lo, lo])
    return edges, lip * (edges[1] - edges[0]) / 2, flat


def _loss_masses(P: Mixture, Q: Mixture, h: float):
    """Per cell: P- and Q-masses, the loss's upper and lower bounds (ln p − ln q)."""
    edges, pad, flat = _cells(P, Q, h)
    lo, hi = edges[:-1], edges[1:]
    mp, _ = interval_masses(P, lo, hi)
    mq, _ = interval_masses(Q, lo, hi)
    ends = P.logpdf(edges) - Q.logpdf(edges)
    upper = np.maximum(ends[:-1], ends[1:]) + pad
    lower = np.minimum(ends[:-1], ends[1:]) - pad
    tails_p = interval_masses(P, np.array([-np.inf, edges[-1]]), np.array([edges[0], np.inf]))[0]
    tails_q = interval_masses(Q, np.array([-np.inf, edges[-1]]), np.array([edges[0], np.inf]))[0]
    if flat:  # Laplace: the loss is constant beyond every shift, exactly the end values
        upper = np.concatenate([[ends[0]], upper, [ends[-1]]])
        lower = np.concatenate([[ends[0]], lower, [ends[-1]]])
        mp, mq = np.concatenate([[tails_p[0]], mp, [tails_p[1]]]), \
            np.concatenate([[tails_q[0]], mq, [tails_q[1]]])
        return mp, mq, upper, lower, 0.0, 0.0
    return mp, mq, upper, lower, float(tails_p.sum()), float(tails_q.sum())


def _dense(h: float, losses: np.ndarray, masses: np.ndarray, infinity: float,
           pessimistic: bool):
    idx = np.ceil(losses / h).astype(np.int64) if pessimistic else \
        np.floor(losses / h).astype(np.int64)
    lo = int(idx.min())
    probs = np.bincount(idx - lo, weights=masses)
    return _dp()[0].DensePLDPmf(h, lo, probs, infinity if pessimistic else 0.0, pessimistic)


def pair_pmfs(P: Mixture, Q: Mixture, discretization: float, *, pessimistic: bool = True):
    """Both orders of the PLD of a pair of scalar mixtures, rounded up (or down).

    The output axis is cut into cells on which ln p − ln q moves by at most about h (its
    Lipschitz constant: Gaussian max(|s^P_max − s^Q_min|, |s^Q_max − s^P_min|)/σ², Laplace
    2/b); each cell's P-mass (Q-mass for the order (Q, P)) is placed at the largest (smallest)
    loss the cell can have, rounded up (down) to the grid. Gaussian tails beyond 15σ of every
    shift (mass < 1e-50) go to the infinite loss in the pessimistic estimate and are dropped
    in the optimistic one; Laplace tails have their exact constant loss.

    Parameters
    ----------
    P, Q : Mixture
        Scalar mixtures of the same noise kind and scale (``audit.theory.pair``).
    discretization : float
        Loss grid step h > 0.
    pessimistic : bool
        True: losses rounded up (upper bounds); False: rounded down (lower bounds).

    Returns
    -------
    PrivacyLossDistribution
        ``pmf_remove`` the order (P, Q), ``pmf_add`` the order (Q, P).
    """
    P, Q = check_pair(P, Q)
    h = check_positive(discretization, "discretization")
    mp, mq, upper, lower, tp, tq = _loss_masses(P, Q, h)
    PrivacyLossDistribution = _dp()[1]
    if pessimistic:
        return PrivacyLossDistribution(_dense(h, upper, mp, tp, True),
                                       _dense(h, -lower, mq, tq, True))
    return PrivacyLossDistribution(_dense(h, lower, mp, 0.0, False),
                                   _dense(h, -upper, mq, 0.0, False))


def compose_epsilon(pld, releases: int, delta: float) -> float:
    """ε(δ) of the ``releases``-fold composition of a PLD (the larger of its two orders).

    Parameters
    ----------
    pld : PrivacyLossDistribution or DensePLDPmf
        A PLD (a bare PMF is taken as symmetric).
    releases : int
        k ≥ 1.
    delta : float
        δ ∈ [0, 1]. After a composition (k > 1) dp_accounting holds the truncated tails
        (≤ 1e-15) at the infinite loss, so δ = 0 gives ∞: use a closed form there.

    Returns
    -------
    float
        ε ≥ 0 (``inf`` when no finite ε holds), an upper bound for a pessimistic PLD.
    """
    k = check_positive_int(releases, "releases")
    d = check_delta(delta)
    pld_pmf, PrivacyLossDistribution = _dp()
    if isinstance(pld, pld_pmf.PLDPmf):
        pld = PrivacyLossDistribution(pld)
    return epsilon_for_delta(pld if k == 1 else pld.self_compose(k), d)


#: above this ε dp_accounting's ε search is not used: it sums mass·e^{−loss}, which underflows
#: past a loss of 745, and then answers too large an ε (docs/THEORY.md §9.3, Numerics)
_SEARCH_MAX = 500.0


def epsilon_for_delta(pld, delta: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` of a dp_accounting PLD: its search below
    ``_SEARCH_MAX``, above a root of its scalar δ(ε) (no underflow), to 10⁻¹⁰ relative."""
    from scipy.optimize import brentq

    delta = check_delta(delta)
    e = float(pld.get_epsilon_for_delta(delta))
    if not _SEARCH_MAX < e < math.inf:
        return e

    def excess(x: float) -> float:
        return float(pld.get_delta_for_epsilon(x)) - delta

    hi = e
    while excess(hi) > 0:  # the search's answer is not below the root; doubled if it were
        if (hi := 2 * hi) > 1e9:
            return math.inf
    lo = _SEARCH_MAX if excess(_SEARCH_MAX) > 0 else 0.0
    if lo == 0.0 and excess(0.0) <= 0:
        return 0.0
    return float(brentq(excess, lo, hi, xtol=1e-10 * hi, rtol=1e-12))


def tradeoff_from_profile(epsilons, deltas):
    """The symmetric trade-off curve sup_i f_{ε_i, δ_i}: the upper envelope of the lines
    1 − δ_i − e^{ε_i} α and e^{−ε_i}(1 − δ_i − α), and 0 ([DRS] Proposition 2.12).

    If a mechanism is (ε_i, δ_i)-DP for every i it is f-DP for this curve; with δ_i upper
    bounds on a symmetric curve's profile, the result lies below that curve.

    Parameters
    ----------
    epsilons : array_like
        ε_i ≥ 0 (at least one).
    deltas : array_like
        δ_i ∈ [0, 1], same shape.

    Returns
    -------
    PiecewiseLinearTradeoff
        Its vertices, so the curve is the envelope exactly (no interpolation).
    """
    from audit.theory.tradeoff import PiecewiseLinearTradeoff

    e = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
    d = np.atleast_1d(np.asarray(deltas, dtype=np.float64))
    if e.shape != d.shape or e.ndim != 1 or e.size == 0 or np.any(~(e >= 0)) or \
            np.any(~((d >= 0) & (d <= 1))):
        raise ValueError("epsilons (>= 0) and deltas (in [0, 1]) must be non-empty 1-D arrays of "
                         f"one shape, got shapes {e.shape} and {d.shape}")
    slopes = np.concatenate([-np.exp(e), -np.exp(-e), [0.0]])
    icepts = np.concatenate([1 - d, np.exp(-e) * (1 - d), [0.0]])
    alphas = np.concatenate([[0.0], _envelope_breaks(slopes, icepts), [1.0]])
    betas = np.max(icepts[None, :] + slopes[None, :] * alphas[:, None], axis=1)
    hull = _hull_vertices(alphas, betas)
    return PiecewiseLinearTradeoff(alphas[hull], np.clip(betas[hull], 0.0, 1.0), symmetric=True)


def _envelope_breaks(slopes: np.ndarray, icepts: np.ndarray) -> np.ndarray:
    """Break points in (0, 1) of the upper envelope of lines y = icept + slope·α (the
    convex-hull trick: lines by increasing slope, a line dropped when its neighbours cross
    before it becomes the maximum)."""
    order = np.lexsort((icepts, slopes))
    stack: list[int] = []
    for i in order:
        if stack and slopes[stack[-1]] == slopes[i]:
            stack.pop()  # same slope: the later one (larger intercept) wins
        while len(stack) >= 2:
            a, b = stack[-2], stack[-1]
            x_ab = (icepts[a] - icepts[b]) / (slopes[b] - slopes[a])
            x_ai = (icepts[a] - icepts[i]) / (slopes[i] - slopes[a])
            if x_ai <= x_ab:
                stack.pop()
            else:
                break
        stack.append(int(i))
    s, c = slopes[stack], icepts[stack]
    x = (c[:-1] - c[1:]) / (s[1:] - s[:-1])
    return np.unique(x[(x > 0) & (x < 1)])


def _hull_vertices(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of points on a convex envelope (drops collinear ones)."""
    from audit._numeric import lower_convex_hull

    return lower_convex_hull(a, b)


#: ε grid points of a profile turned into a curve by :func:`profile_pmf`
PROFILE_GRID = 600


def profile_pmf(profile, top: float, discretization: float):
    """The pessimistic PLD (a symmetric PMF) of a pair that dominates every mechanism whose
    privacy profile for ε ≥ 0 is at most ``profile`` (both orders).

    The upper envelope of the lines 1 − δ(ε_i) − e^{ε_i}α and e^{−ε_i}(1 − δ(ε_i) − α) over
    an ε grid on [0, ``top``] is a symmetric lower bound on the trade-off curve
    (:func:`tradeoff_from_profile`); a piecewise-linear trade-off curve is exactly the
    trade-off of a discrete pair (a segment of slope −q/p is an atom with masses (p, q)), of
    which the mechanism is a post-processing (Blackwell), so every composition of the PMF
    returned bounds the mechanism's. Losses are rounded up to the grid.

    Parameters
    ----------
    profile : callable
        δ(ε) upper bounds, vectorised over an array of ε ≥ 0, values in [0, 1].
    top : float
        > 0: the largest ε of the grid (beyond it the envelope is flat at δ(top)).
    discretization : float
        Loss grid step h > 0.

    References
    ----------
    [DRS] Proposition 2.12 (f-DP from a family of (ε, δ(ε))); docs/THEORY.md §10.4, §10.6.
    """
    h = check_positive(discretization, "discretization")
    t = check_positive(top, "top")
    eps = profile_grid(t)
    curve = tradeoff_from_profile(eps, np.clip(np.asarray(profile(eps), dtype=np.float64),
                                               0.0, 1.0))
    return curve_pmf(curve, h)


def profile_grid(top: float) -> np.ndarray:
    """The ε grid on [0, ``top``] that :func:`profile_pmf` reads a profile on."""
    return np.unique(np.concatenate([np.linspace(0.0, top, PROFILE_GRID),
                                     np.geomspace(min(1e-4, top / 2), top, PROFILE_GRID // 4)]))


def curve_pmf(curve, discretization: float, *, pessimistic: bool = True):
    """The PLD (a PMF) of the discrete pair whose trade-off function is the piecewise-linear
    ``curve`` (a segment of slope −q/p is an atom with masses (p, q); a jump at α = 0 is the
    infinite loss), losses rounded up (``pessimistic``: every composition bounds the pair's
    from above) or down (from below)."""
    pld_pmf = _dp()[0]
    h = check_positive(discretization, "discretization")
    dp_, dq = np.diff(curve.alphas), -np.diff(curve.betas)
    keep = dp_ > 0
    dp_, dq = dp_[keep], dq[keep]
    infinite = float(dp_[dq <= 0].sum())  # an atom of the pair itself: kept either way
    finite = dq > 0
    losses = np.log(dp_[finite]) - np.log(dq[finite])
    idx = (np.ceil if pessimistic else np.floor)(losses / h).astype(np.int64)
    lo = int(idx.min())
    probs = np.bincount(idx - lo, weights=dp_[finite])
    return pld_pmf.DensePLDPmf(h, lo, probs, infinite, pessimistic)


def amplified_profile(pld, p: float):
    """δ(ε), ε ≥ 0, of C_p applied to the curve of ``pld``: p·δ_f(ln(1 + (e^ε − 1)/p))
    ([DRS] Theorem 4.2; docs/THEORY.md §7, §9.1), vectorised over ε."""
    from audit._numeric import log1p_expm1_div

    def profile(eps):
        inner = np.array([log1p_expm1_div(float(e), p) for e in np.atleast_1d(eps)])
        return p * np.asarray(pld.get_delta_for_epsilon(inner))

    return profile


def amplified_pld(pld, p: float, discretization: float):
    """A pessimistic PLD of C_p applied to the curve of ``pld`` (a pair dominating
    :func:`amplified_profile`, :func:`profile_pmf`)."""
    from audit._numeric import log1p_c_expm1

    top = log1p_c_expm1(float(pld.get_epsilon_for_delta(1e-15)), p)
    return _dp()[1](profile_pmf(amplified_profile(pld, p), max(top, 1e-3), discretization))


def refine_bracket(bracket_at, h: float, *, good, can_refine, step_seconds: float):
    """A numerical bracket refined on finer loss grids: ``bracket_at(h)`` → (low, high) at
    h, h/4, h/16, … until ``good(low, high)``, ``can_refine(h/4)`` is false (a grid floor or
    size limit), or a step took more than ``step_seconds`` (the next costs about 4–5 times
    more). Returns (low, high, h) of the last step."""
    import time

    while True:
        start = time.perf_counter()
        low, high = bracket_at(h)
        if good(low, high) or not can_refine(h / 4) or \
                time.perf_counter() - start > step_seconds:
            return low, high, h
        h /= 4


def envelope_pld(plds: list, discretization: float):
    """A pessimistic PLD dominating every PLD of ``plds`` in both orders:
    :func:`profile_pmf` on the envelope of their profiles (docs/THEORY.md §10.4)."""
    PrivacyLossDistribution = _dp()[1]

    def envelope(eps):  # each PLD's δ is already the larger of its two orders
        return np.max([np.asarray(p.get_delta_for_epsilon(eps)) for p in plds], axis=0)

    top = max(float(p.get_epsilon_for_delta(1e-15)) for p in plds)
    return PrivacyLossDistribution(profile_pmf(envelope, max(top, 1e-3), discretization))


def laplace_profile(mu: float, k: int, h: float):
    """δ(ε) of Lap(0, 1) against Lap(μ, 1) composed k times, an upper bound (dp_accounting's
    pessimistic connect-the-dots PLD at the loss step :func:`loss_step` of h), vectorised:
    a float for a float ε, an array for an array."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    one = dpl.from_laplace_mechanism(1.0, sensitivity=mu, pessimistic_estimate=True,
                                     value_discretization_interval=loss_step(h, k * mu),
                                     use_connect_dots=True)
    pld = one if k == 1 else one.self_compose(k)

    def profile(eps):
        if np.ndim(eps) == 0:
            return float(pld.get_delta_for_epsilon(float(eps)))
        return np.asarray(pld.get_delta_for_epsilon(np.asarray(eps, dtype=np.float64)))

    return profile
