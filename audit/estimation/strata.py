"""Mask-stratified bounds: stratum weights, call allocation and the combined bounds
(docs/THEORY.md §8.5).

Under MCAR iid with rate π over the N maskable (non-NaN) entries of one side's dataset, the
number M of masked entries is Binomial(N, π) and, given M = m, the masked set is a uniformly
random m-subset, a law free of π. So the probability of any output region S is

    P_π(S) = Σ_m w_m(π) P_m(S),    w_m(π) = C(N, m) π^m (1 − π)^(N − m),

and one run that samples every stratum m gives bounds at every π of a grid. A side is either
**stratified** (its calls allocated over the strata; simultaneous one-sided Clopper–Pearson
bounds per stratum, Bonferroni over the strata that got calls; lower = Σ w_m lo_m, upper =
Σ w_m hi_m + the weight of the strata that got none) or **plain** (one run per π, one
Clopper–Pearson bound each, as separate audits). Each side's bounds hold at ``alpha / 2``,
so ε_lower(π) = ln((P_lo(S) − δ)/Q_hi(S)) holds at 1 − α at every π; when both sides are
stratified the intervals do not depend on π and the bounds hold at every π of the grid at
once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_delta, check_positive_int
from audit.enums import Direction, SideDesign
from audit.estimation.binomial import (
    SIDES,
    check_alpha,
    cp_lower_array,
    cp_upper_array,
    eps_from_bounds,
    eps_plug_in,
)
from audit.estimation.prediction import expected_count
from audit.estimation.strata_looks import over_looks
from audit.estimation.witness import register_bound

__all__ = [
    "MAX_ENTRIES",
    "MAX_RATES",
    "MIN_WEIGHT",
    "check_rates",
    "stratum_weights",
    "sampled_strata",
    "allocate",
    "round_calls",
    "side_bounds",
    "predicted_side_bounds",
    "SideCounts",
    "StratifiedCounts",
    "StratifiedBound",
]

#: Most maskable entries of one side (MAX_ENTRIES + 1 strata).
MAX_ENTRIES = 200
#: Most missing rates of one grid.
MAX_RATES = 64
#: A stratum whose weight is below this at every rate of the grid gets no calls (it then
#: adds its weight to the upper bound and nothing to the lower).
MIN_WEIGHT = 1e-9


def check_rates(rates: object, name: str = "rates") -> np.ndarray:
    """A non-empty sequence of at most :data:`MAX_RATES` distinct probabilities in [0, 1]."""
    if isinstance(rates, str | bytes) or not isinstance(rates, Sequence | np.ndarray):
        raise ValueError(f"{name} must be a list of missing rates in [0, 1], got "
                         f"{name}={rates!r}")
    values = list(rates)
    if not values or len(values) > MAX_RATES:
        raise ValueError(f"{name} must hold 1 to {MAX_RATES} missing rates, got "
                         f"{len(values)} ({name}={rates!r})")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float | np.floating | np.integer) \
                or not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{name} must hold missing rates in [0, 1], got {v!r} in "
                             f"{name}={rates!r}")
    arr = np.asarray(values, dtype=np.float64)
    if np.unique(arr).size != arr.size:
        raise ValueError(f"{name} must hold distinct missing rates, got {name}={rates!r}")
    return arr


def stratum_weights(n_entries: int, rates) -> np.ndarray:
    """w[g, m] = P[M = m] for M ~ Binomial(n_entries, rates[g]): shape (len(rates), N + 1).

    Computed in log space (lgamma), exact 0/1 rows at π ∈ {0, 1}; each row sums to 1 up
    to rounding.

    Raises
    ------
    ValueError
        ``n_entries`` not in [0, MAX_ENTRIES], or a bad rate (:func:`check_rates`).
    """
    if isinstance(n_entries, bool) or not isinstance(n_entries, int | np.integer) \
            or not 0 <= int(n_entries) <= MAX_ENTRIES:
        raise ValueError(f"n_entries must be an integer in [0, {MAX_ENTRIES}], got "
                         f"n_entries={n_entries!r}")
    n = int(n_entries)
    pis = check_rates(rates)
    m = np.arange(n + 1, dtype=np.float64)
    log_comb = np.array([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                         for k in range(n + 1)])
    out = np.zeros((pis.size, n + 1))
    for g, pi in enumerate(pis):
        if pi == 0.0:
            out[g, 0] = 1.0
        elif pi == 1.0:
            out[g, n] = 1.0
        else:
            out[g] = np.exp(log_comb + m * math.log(pi) + (n - m) * math.log1p(-pi))
    return out


def sampled_strata(weights: np.ndarray, min_weight: float = MIN_WEIGHT) -> np.ndarray:
    """The strata that get calls: weight ≥ ``min_weight`` at some rate of the grid."""
    return np.asarray(weights).max(axis=0) >= min_weight


def _calls_at(lam: float, A, B, z: float, L: float, lo: float, hi: float) -> np.ndarray:
    """Per stratum, the n in [lo, hi] where the marginal slack z·A/(2n^1.5) + L·B/n² equals
    ``lam`` (bisection in log n; decreasing in n)."""
    a, b = np.full(A.shape, math.log(lo)), np.full(A.shape, math.log(hi))
    for _ in range(32):  # log n within 2^-32 of its root
        mid = (a + b) / 2
        n = np.exp(mid)
        high = z * A / (2 * n**1.5) + B * L / n**2 > lam
        a, b = np.where(high, mid, a), np.where(high, b, mid)
    return np.exp((a + b) / 2)


def _per_rate(p_hat, weights: np.ndarray, name: str = "p_hat") -> np.ndarray:
    """``p_hat`` as (G, N + 1): one region's stratum probabilities (length N + 1), the same at
    every rate, or one row per rate (each rate's own region)."""
    w = np.asarray(weights, dtype=np.float64)
    p = np.asarray(p_hat, dtype=np.float64)
    if p.shape not in ((w.shape[1],), w.shape) or np.any(~(p >= 0) | (p > 1)):
        raise ValueError(f"{name} must hold {w.shape[1]} probabilities (or one row of them "
                         f"per rate, shape {w.shape}), got {name}={p!r}")
    return np.broadcast_to(p, w.shape)


def _per_rate_flags(flags, g: int, name: str) -> np.ndarray:
    """A bool per rate: one value for every rate, or ``g`` of them."""
    f = np.asarray(flags)
    if f.dtype != bool or f.shape not in ((), (g,)):
        raise ValueError(f"{name} must be a bool or {g} bools (one per rate), got "
                         f"{name}={flags!r}")
    return np.broadcast_to(f, (g,))


def allocate(total: int, weights: np.ndarray, p_hat, floor: int, *, lower=True,
             alpha_side: float = 0.025) -> np.ndarray:
    """Calls per stratum: at least ``floor`` for every sampled stratum (:func:`sampled_strata`),
    0 for the others, summing to ``total``. Deterministic.

    ``p_hat`` holds the region's probability in every stratum (length N + 1), or one row per
    rate when each rate has its own region (shape (G, N + 1)); ``lower`` says whether the
    side's bound is a lower one (the numerator of ε), one bool or one per rate.

    The calls minimise the predicted slack of the combined bounds summed over the grid,
    relative to each rate's region probability: Σ_π Σ_m W_πm (z·sqrt(v_πm/n_m) + c_πm L/n_m),
    with v_πm = p̂_πm(1 − p̂_πm) (the Clopper–Pearson half-width, its Gaussian part),
    L = ln(K/α) and c_πm = p̂_πm for a lower bound, 1 − p̂_πm for an upper one (its part at the
    edge: k = n gives lo = (α/K)^(1/n) ≈ 1 − L/n, k = 0 gives hi ≈ L/n; k = 0 gives lo = 0, no
    slack), z = sqrt(2L), W_πm = w_m(π)/max(P̂_π, 1/total) over the rates with
    P̂_π = Σ_m w_m(π) p̂_πm ≥ 1/total (every rate if none: the region cannot be measured where
    it has no expected hit). A rare stratum that holds the event thus gets calls as sqrt(W),
    not W; a stratum with p̂ = 0 only its floor for a lower bound. Rounded by largest
    remainders (ties: lower m).

    Raises
    ------
    ValueError
        ``total`` or ``floor`` not a positive integer, ``total`` below ``floor`` times the
        number of sampled strata, ``p_hat`` not of shape (N + 1,) or (G, N + 1) in [0, 1], or
        ``lower`` not one bool or G of them.
    """
    total = check_positive_int(total, "total")
    floor = check_positive_int(floor, "floor")
    alpha_side = check_alpha(alpha_side)
    w = np.asarray(weights, dtype=np.float64)
    p = _per_rate(p_hat, w)
    low = _per_rate_flags(lower, w.shape[0], "lower")
    on = sampled_strata(w)
    k = int(on.sum())
    if total < floor * k:
        raise ValueError(f"floor={floor} calls for each of {k} strata exceeds total={total} "
                         "calls: lower strata.floor or raise audit.trials")
    ideal = np.zeros(w.shape[1])
    if total > floor * k:
        big_l = math.log(k / alpha_side)
        mass = (w * p).sum(axis=1)
        useful = mass >= 1.0 / total  # rates where the region can be measured at all
        if not useful.any():
            useful[:] = True
        W = w[useful] / np.maximum(mass[useful], 1.0 / total)[:, None]
        pu = p[useful]
        A = (W * np.sqrt(pu * (1 - pu))).sum(axis=0)[on]
        B = (W * np.where(low[useful][:, None], pu, 1 - pu)).sum(axis=0)[on]
        lo, hi = float(floor), float(total)
        z = math.sqrt(2 * big_l)
        log_lo, log_hi = -690.0, 690.0  # ln λ; Σ n(λ) decreases in λ
        for _ in range(56):  # ln λ within 1380 · 2^-56 of the root
            mid = (log_lo + log_hi) / 2
            n = _calls_at(math.exp(mid), A, B, z, big_l, lo, hi)
            log_lo, log_hi = (mid, log_hi) if n.sum() > total else (log_lo, mid)
        n = _calls_at(math.exp(log_hi), A, B, z, big_l, lo, hi)
        ideal[on] = floor + (total - floor * k) * (n - floor) / max((n - floor).sum(), 1e-300)
    else:
        ideal[on] = floor
    return round_calls(ideal, total, on)


def round_calls(ideal: np.ndarray, total: int, on: np.ndarray) -> np.ndarray:
    """``ideal`` (fractional calls per stratum, summing to ``total``) as integers summing to
    ``total``: each floored, the left-over calls to the largest remainders among the strata
    ``on`` (ties: lower m)."""
    out = np.floor(ideal).astype(np.int64)
    rest = np.where(on, ideal - out, -1.0)
    order = np.lexsort((np.arange(out.size), -rest))
    out[order[: total - int(out.sum())]] += 1
    return out


def _stratum_bounds(k, n, alpha_side: float) -> tuple[np.ndarray, np.ndarray]:
    """Per stratum (last axis), one-sided Clopper–Pearson bounds at ``alpha_side`` / (strata
    with calls): (0, 1) for a stratum without calls."""
    on = n > 0
    a = alpha_side / max(int(np.count_nonzero(on)), 1)
    safe = np.where(on, n, 1)
    lo = np.where(on, cp_lower_array(np.minimum(k, safe), safe, a), 0.0)
    hi = np.where(on, cp_upper_array(np.minimum(k, safe), safe, a), 1.0)
    return lo, hi


def _stratified(k, n, weights, alpha_side: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _stratum_bounds(k, n, alpha_side)
    if lo.ndim == 1:
        return weights @ lo, np.minimum(weights @ hi, 1.0)
    return (weights * lo).sum(axis=1), np.minimum((weights * hi).sum(axis=1), 1.0)


def side_bounds(design: SideDesign, k, n, weights, alpha_side: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds on P_π(S) at every rate, each one-sided at ``alpha_side``.

    ``STRATIFIED``: ``k``, ``n`` per stratum (length N + 1; n = 0: unsampled; ``k`` of shape
    (G, N + 1) when each rate has its own region), Clopper–Pearson at ``alpha_side`` /
    (sampled strata) per stratum, combined with ``weights`` (G, N + 1): simultaneous over the
    rates when the region is one. ``PLAIN``: ``k``, ``n`` per rate (length G), one bound each.
    Counts may be fractional (expected counts, as the design rule predicts them).
    """
    alpha_side = check_alpha(alpha_side)
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    if design is SideDesign.STRATIFIED:
        return _stratified(k, n, np.asarray(weights, dtype=np.float64), alpha_side)
    return cp_lower_array(k, n, alpha_side), cp_upper_array(k, n, alpha_side)


def predicted_side_bounds(design: SideDesign, p_hat, weights, calls, alpha_side: float, *,
                          pessimism_sd: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The (lower, upper) bounds :func:`side_bounds` is predicted to give when stratum m's
    region probability is ``p_hat[m]`` (or ``p_hat[g, m]`` at rate g, each rate's own
    region), with ``calls`` per stratum (stratified) or per rate (plain): each expected count
    moved ``pessimism_sd`` standard deviations against the bound (default
    ``DEFAULT_POLICY``'s): step 2 of the one rule of :mod:`audit.estimation.prediction`
    (``p_hat`` a candidate region's masses as step 1 reads them,
    :func:`audit.estimation.strata_regions.region_masses`, or a fixed region's frequencies
    for the choice of designs)."""
    w = np.asarray(weights, dtype=np.float64)
    p = _per_rate(p_hat, w)
    n = np.asarray(calls, dtype=np.float64)
    mass = p if design is SideDesign.STRATIFIED else (w * p).sum(axis=1)
    lo, _ = side_bounds(design, expected_count(mass, n, pessimism_sd, large=True), n, w,
                        alpha_side)
    _, hi = side_bounds(design, expected_count(mass, n, pessimism_sd, large=False), n, w,
                        alpha_side)
    return lo, hi


@dataclass(frozen=True, eq=False)
class SideCounts:
    """One side's histograms: ``counts[r]`` of ``calls[r]`` calls of run r, a stratum
    (stratified: r = m, rows N + 1) or a rate (plain: r = g, rows G); ``weights`` (G, N + 1).
    ``by_rate``: when each rate has a score of its own, rate g's histograms of every run under
    its own statistic (G arrays of shape (runs, bins_g)); ``counts`` is then rate ``main``'s."""

    design: SideDesign
    counts: np.ndarray
    calls: np.ndarray
    weights: np.ndarray
    by_rate: tuple | None = None

    def _hits(self, in_region) -> np.ndarray:
        """Counts in the region: per run (one mask over the bins), or per rate and stratum
        (stratified, one mask per rate: (G, N + 1)) or per rate (plain, one mask per rate);
        with ``by_rate``, ``in_region`` holds one mask per rate over that rate's bins."""
        if self.by_rate is not None:
            k = np.stack([c[:, np.asarray(m, dtype=bool)].sum(axis=1)
                          for c, m in zip(self.by_rate, in_region, strict=True)])
            return k if self.design is SideDesign.STRATIFIED else np.diagonal(k).copy()
        m = np.asarray(in_region, dtype=bool)
        if m.ndim == 1:
            return self.counts[:, m].sum(axis=1)
        if self.design is SideDesign.STRATIFIED:
            return m.astype(np.int64) @ self.counts.T
        return (self.counts * m).sum(axis=1)

    def bounds(self, in_region: np.ndarray, alpha_side: float):
        """(lower, upper) at every rate on one region (a mask over the bins) or one region
        per rate (a (G, bins) mask)."""
        return side_bounds(self.design, self._hits(in_region), self.calls, self.weights,
                           alpha_side)

    def plug_in(self, in_region: np.ndarray) -> np.ndarray:
        """Point estimates of P_π(S) at every rate (not bounds)."""
        k = self._hits(in_region)
        freq = np.divide(k, self.calls, out=np.zeros(k.shape), where=self.calls > 0)
        if self.design is not SideDesign.STRATIFIED:
            return freq
        return self.weights @ freq if freq.ndim == 1 else (self.weights * freq).sum(axis=1)


@dataclass(frozen=True, eq=False)
class StratifiedCounts:
    """The main run of a stratified audit: both sides' :class:`SideCounts` over the grid
    ``rates``; ``main`` indexes the audited config's own rate; ``trials`` the calls per side;
    ``amplified`` the amplified claim at each rate (None: no theorem); ``regions`` the region
    of each rate its pilot chose (None: the region :meth:`bound` is given, at every rate);
    ``masks`` those regions over each rate's own bins when each rate has its own score (the
    sides' ``by_rate`` histograms)."""

    p: SideCounts
    q: SideCounts
    rates: np.ndarray
    main: int
    trials: int
    amplified: tuple | None = None
    regions: tuple | None = None
    masks: tuple | None = None
    #: a sequential run: the bound at each look it made (each at alpha / planned), the looks
    #: it planned and the rule it stopped by
    looks: tuple = ()
    planned_looks: int = 1
    stop: str | None = None

    @property
    def counts_p(self) -> np.ndarray:
        return self.p.counts.sum(axis=0)

    @property
    def counts_q(self) -> np.ndarray:
        return self.q.counts.sum(axis=0)

    def bound(self, region, bin_scores, delta: float, alpha: float) -> StratifiedBound:
        """ε_lower at every rate, α/2 per side, on ``region`` (one region for every rate, or
        a sequence of one per rate; :attr:`regions` when set), chosen without these
        counts."""
        delta, alpha = check_delta(delta), check_alpha(alpha)
        if self.looks:
            return over_looks(self.looks, self.planned_looks, alpha, self.stop)
        g = len(self.rates)
        regions = self.regions if self.regions is not None else region
        regions = tuple(regions) if isinstance(regions, Sequence) else (regions,) * g
        if len(regions) != g:
            raise ValueError(f"regions must hold one region per rate ({g}), got "
                             f"{len(regions)}")
        if self.masks is not None:  # each rate's region over its own score's bins
            masks = self.masks
        else:
            scores = np.asarray(bin_scores, dtype=np.float64)
            masks = np.stack([r.mask(scores) for r in regions])
        forward = np.array([r.direction is Direction.Z_VS_ZPRIME for r in regions])
        p_lo, p_hi = self.p.bounds(masks, alpha / SIDES)
        q_lo, q_hi = self.q.bounds(masks, alpha / SIDES)
        num_lo, den_hi = np.where(forward, p_lo, q_lo), np.where(forward, q_hi, p_hi)
        eps = eps_from_bounds(num_lo, den_hi, delta)
        p_pt, q_pt = self.p.plug_in(masks), self.q.plug_in(masks)
        point = eps_plug_in(np.where(forward, p_pt, q_pt), 1.0, np.where(forward, q_pt, p_pt),
                            1.0, delta)
        return StratifiedBound(
            rates=tuple(float(r) for r in self.rates), main=self.main,
            eps=tuple(float(v) for v in eps), p_lower=tuple(float(v) for v in num_lo),
            q_upper=tuple(float(v) for v in den_hi), point=tuple(float(v) for v in point),
            directions=tuple(r.direction for r in regions),
            thresholds=tuple(float(r.threshold) for r in regions),
            design_p=self.p.design, design_q=self.q.design,
            calls_p=tuple(int(c) for c in self.p.calls),
            calls_q=tuple(int(c) for c in self.q.calls),
            alpha=alpha, delta=delta, amplified=self.amplified,
            own_scores=self.masks is not None)


@register_bound
@dataclass(frozen=True)
class StratifiedBound:
    """ε_lower at every rate of the grid from one stratified run (docs/THEORY.md §8.5).

    ``eps[g]`` = ln((``p_lower[g]`` − δ)/``q_upper[g]``) on rate g's region
    (``directions[g]``, ``thresholds[g]``), ``p_lower`` the lower bound on the NUMERATOR mass
    and ``q_upper`` the upper bound on the DENOMINATOR mass of the region (P = A(z) over
    Q = A(z') for ``z_vs_zprime``, swapped for ``zprime_vs_z``); ``point`` the plug-in
    values. ``calls_p``/``calls_q``: calls per stratum (stratified) or per rate (plain);
    ``own_scores``: each rate's threshold is on a score fitted for that rate. The bound the
    result reports is the one at ``rates[main]``.
    """

    kind: ClassVar[str] = "strata"
    rates: tuple
    main: int
    eps: tuple
    p_lower: tuple
    q_upper: tuple
    point: tuple
    directions: tuple
    thresholds: tuple
    design_p: SideDesign
    design_q: SideDesign
    calls_p: tuple
    calls_q: tuple
    alpha: float
    delta: float
    amplified: tuple | None = None
    own_scores: bool = False
    #: a sequential run (``stop`` not None): the looks it planned and made
    looks: int = 1
    looks_run: int = 1
    stop: str | None = None

    @property
    def eps_lower(self) -> float:
        return self.eps[self.main]

    @property
    def sequential(self) -> bool:
        """Whether the bound comes from a sequential run (:func:`over_looks`)."""
        return self.stop is not None

    @property
    def stopped_early(self) -> bool:
        return self.looks_run < self.looks

    @property
    def direction(self) -> Direction:
        """The main rate's region's direction."""
        return self.directions[self.main]

    @property
    def threshold(self) -> float:
        """The main rate's region's threshold."""
        return self.thresholds[self.main]

    @property
    def one_region(self) -> bool:
        """Whether every rate's region is the same (on one score)."""
        return not self.own_scores and len(set(zip(self.directions, self.thresholds,
                                                   strict=True))) == 1

    @property
    def simultaneous(self) -> bool:
        """Whether the bounds hold at every rate at once: both sides stratified and one
        region for the grid (the per-stratum intervals are then the same events at every
        rate)."""
        return self.design_p is self.design_q is SideDesign.STRATIFIED and self.one_region

    def plug_in(self) -> float:
        """The plug-in estimate at the main rate (not a bound)."""
        return self.point[self.main]

    def per_rate(self) -> list[dict]:
        """One entry per rate: the bound, its region, its two masses and the plug-in value."""
        out = []
        for g, rate in enumerate(self.rates):
            entry = {"rate": rate, "eps_lower": self.eps[g],
                     "direction": self.directions[g].value, "threshold": self.thresholds[g],
                     "p_lower": self.p_lower[g], "q_upper": self.q_upper[g],
                     "eps_point": self.point[g]}
            if self.amplified is not None:
                entry["eps_amplified"] = self.amplified[g]
            out.append(entry)
        return out

    def describe(self) -> str:
        """The one sentence the command line and reports print."""
        op = ">=" if self.direction is Direction.Z_VS_ZPRIME else "<="
        how = ("simultaneously at every rate" if self.simultaneous else "at each rate")
        if self.sequential:
            how += (f"; sequential, {self.looks} looks, "
                    + (f"stopped at look {self.looks_run}" if self.stopped_early
                       else "ran its budget"))
        grid = ", ".join(f"{r:g}: {e:.3g}" for r, e in zip(self.rates, self.eps, strict=True))
        own = (" (each rate its own region, on its own or the pooled score)" if self.own_scores else
               "" if self.one_region else " (each rate its own region)")
        return (f"eps >= {self.eps_lower:.4g} at {1 - self.alpha:.6g} confidence at missing "
                f"rate {self.rates[self.main]:g} (mask-stratified one-sided Clopper-Pearson, "
                f"z {self.design_p.value}, z' {self.design_q.value}, valid {how}): region "
                f"{{score {op} {self.threshold:.6g}}} ({self.direction.value}){own}; "
                f"eps_lower by rate {{{grid}}}, {sum(self.calls_p):,} and "
                f"{sum(self.calls_q):,} calls")

    def refutes(self, epsilon: float) -> bool:
        """The per-rate bounds refute nothing by themselves (the ceilings compare them)."""
        return False

    def result_keys(self) -> dict:
        """ε_lower at every rate of the grid, as the result's ``strata`` entry."""
        return {"strata": self.to_dict()}

    def to_dict(self) -> dict:
        """The witness as JSON (``kind`` = ``"strata"``)."""
        return {"kind": self.kind, "eps_lower": self.eps_lower, "rate": self.rates[self.main],
                "direction":
                self.direction.value, "threshold": self.threshold, "alpha": self.alpha,
                "delta": self.delta, "design": {"p": self.design_p.value,
                                                "q": self.design_q.value},
                "simultaneous": self.simultaneous, "own_scores": self.own_scores,
                "calls_p": list(self.calls_p),
                "calls_q": list(self.calls_q), "rates": self.per_rate(),
                "looks": self.looks, "looks_run": self.looks_run, "stop": self.stop}

    @classmethod
    def from_dict(cls, doc: dict) -> StratifiedBound:
        """The bound a :meth:`to_dict` document describes (non-finite values written as
        ``"inf"`` read back as floats)."""
        try:
            rows = doc["rates"]
            rates = tuple(float(r["rate"]) for r in rows)
            col = {k: tuple(float(r[k]) for r in rows)
                   for k in ("eps_lower", "p_lower", "q_upper", "eps_point")}
            amplified = (tuple(float(r["eps_amplified"]) for r in rows)
                         if rows and "eps_amplified" in rows[0] else None)
            # each rate's region (a witness from before per-rate regions: the top one)
            directions = tuple(Direction.parse(r.get("direction", doc["direction"]))
                               for r in rows)
            thresholds = tuple(float(r.get("threshold", doc["threshold"])) for r in rows)
            return cls(rates=rates, main=rates.index(float(doc["rate"])),
                       eps=col["eps_lower"], p_lower=col["p_lower"], q_upper=col["q_upper"],
                       point=col["eps_point"], directions=directions, thresholds=thresholds,
                       design_p=SideDesign.parse(doc["design"]["p"]),
                       design_q=SideDesign.parse(doc["design"]["q"]),
                       calls_p=tuple(doc["calls_p"]), calls_q=tuple(doc["calls_q"]),
                       alpha=float(doc["alpha"]), delta=float(doc["delta"]),
                       amplified=amplified, own_scores=bool(doc.get("own_scores", False)),
                       looks=int(doc.get("looks", 1)), looks_run=int(doc.get("looks_run", 1)),
                       stop=doc.get("stop"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"witness is not a strata bound ({type(exc).__name__}: "
                             f"{exc})") from None
