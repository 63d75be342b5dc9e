"""Anytime-valid tests of an (ε, δ) claim with no pilot: regions chosen from the run's own
past calls.

:mod:`audit.estimation.sequential` bets on one region declared from a pilot before the main
run. The betting argument does not need the region fixed in advance, only *predictable*: for
trial t, let the region S_t, the side that is the numerator and the bet λ_t be chosen from
the trials before t. Under an (ε, δ) claim, every such choice has

    E[a_t − e^ε b_t − δ | past] ≤ 0,    a_t = 1[X_t ∈ S_t], b_t = 1[Y_t ∈ S_t],

(X_t from the numerator's side, Y_t from the other; DP bounds both orders), so the wealth
K_t(ε) = Π (1 + λ_i Z_i(ε)), 0 ≤ λ_i ≤ cap/(e^ε + δ), is a non-negative supermartingale and
Ville's inequality makes P[sup_t K_t(ε) ≥ 1/α] ≤ α. The run therefore needs no pilot: its
first chunk bets nothing and only informs the next choice, and the calls it spends are
counted.

The regions are threshold regions of the output itself, {s·x ≥ t} with s = ±1, and either
side as the numerator: the likelihood-ratio regions of a scalar output whose likelihood
ratio is monotone (a shift of a Laplace or Gaussian law, a release with or without one
record's contribution); for other outputs they are valid and possibly weak. Before a chunk,
:func:`choose_region` takes the candidate thresholds at quantiles of the pooled past outputs
(dense in both tails) and picks the (s, t, numerator) whose plug-in Z has the largest
growth m²/(v + m²) (m the plug-in mean, v the variance); λ is the aGRAPA plug-in m/(v + m²)
of the same counts, clipped. Both read only past calls.

Two tests share the run (:class:`OnlineMonitor`), as in :class:`~audit.estimation.sequential.
SequentialMonitor`:

- the claims (a grid of fractions of the claim and the amplified claim) at α/2, every claim
  betting on the region and λ chosen for the largest, so each wealth is non-increasing in ε
  and one threshold ln(2/α) covers the grid;
- an estimation grid (:func:`~audit.estimation.sequential.estimation_grid`) at α/2, each ε
  with its own region and λ, Bonferroni over its m points (threshold ln(2m/α)).

With ``stop = "budget"`` the claims and the grid get ``budget_share`` · α each, and the rest
goes to a fixed-sample bound on the run's second half: at half the budget, the region of the
largest Clopper–Pearson bound on the first half's counts (at the policy's
``online.rank_alpha``, a guard
against sparse tails that look best by chance) is frozen, and the second half's counts
in it (calls independent of the choice) give ln((P_lo − δ)/Q_hi)
(:func:`audit.estimation.binomial.eps_from_counts`). ε_lower is the largest of the three
(union bound). The memory is bounded: each side keeps at most ``memory`` past outputs (later
calls are bet on but no longer inform the choice, which stays predictable).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_delta, check_in_range, check_positive_int
from audit.enums import StopRule
from audit.estimation.binomial import check_alpha, eps_from_counts
from audit.estimation.sequential import BettingWitness, estimation_grid
from audit.estimation.witness import register_bound
from audit.policy import DEFAULT_POLICY

__all__ = ["OnlineRegion", "choose_region", "OnlineMonitor", "OnlineBound", "OnlineCurveTest",
           "MEMORY"]

#: past outputs kept per side (float64: 32 MiB each)
MEMORY = 1 << 22
#: candidate thresholds per tail (:func:`choose_region`)
LEVELS = 24
#: the largest bet, as a share of 1/(e^ε + δ): keeps every factor ≥ 1 − CAP
CAP = 0.5


@dataclass(frozen=True)
class OnlineRegion:
    """A threshold region chosen from past calls: S = {sign·x ≥ threshold}, the side
    ``numerator`` ("z" for A(z), "z_prime" for A(z′)) in the numerator, and the plug-in mean
    ``m`` and variance ``v`` of Z on the past calls it was chosen from."""

    sign: float
    threshold: float
    numerator: str
    m: float
    v: float

    def indicators(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a, b): the numerator's and the denominator's calls in S, from A(z)'s calls ``x``
        and A(z′)'s calls ``y``."""
        num, den = (x, y) if self.numerator == "z" else (y, x)
        return self.sign * num >= self.threshold, self.sign * den >= self.threshold

    def bet(self, epsilon: float, delta: float) -> float:
        """The aGRAPA plug-in m/(v + m²), in [0, CAP/(e^ε + δ)]."""
        if self.m <= 0.0:
            return 0.0
        return float(min(CAP / (math.exp(epsilon) + delta), self.m / (self.v + self.m**2)))

    def describe(self) -> str:
        op = ">=" if self.sign > 0 else "<="
        return (f"{{output {op} {self.sign * self.threshold:.6g}}} ({self.numerator} the "
                f"numerator)")


def _ranks(n: int) -> np.ndarray:
    """Ranks geometric from both ends of n sorted values (tail regions, where a large ε
    shows, are among the candidates), distinct."""
    half = max(n / 2.0, 1.0)
    ranks = np.concatenate([np.geomspace(1, half, LEVELS), n - np.geomspace(1, half, LEVELS)])
    return np.unique(np.clip(np.round(ranks).astype(np.int64), 0, n - 1))


@dataclass(frozen=True)
class _Candidates:
    """The candidate regions of one choice: for each sign, thresholds and the past counts of
    both sides in {sign·x ≥ t}."""

    nx: int
    ny: int
    rows: tuple  # (sign, thresholds, counts of x, counts of y)

    @classmethod
    def of(cls, x_sorted: np.ndarray, y_sorted: np.ndarray) -> _Candidates | None:
        nx, ny = x_sorted.size, y_sorted.size
        if nx == 0 or ny == 0:
            return None
        rows = []
        for sign, xs, ys in ((1.0, x_sorted, y_sorted),
                             (-1.0, -x_sorted[::-1], -y_sorted[::-1])):
            ts = np.unique(np.concatenate([xs[_ranks(nx)], ys[_ranks(ny)]]))
            kx = nx - np.searchsorted(xs, ts, side="left")  # calls with sign·x ≥ t
            ky = ny - np.searchsorted(ys, ts, side="left")
            rows.append((sign, ts, kx, ky))
        return cls(nx, ny, tuple(rows))

    def best(self, epsilon: float, delta: float) -> OnlineRegion | None:
        """The region whose plug-in Z = a − e^ε b − δ grows the wealth fastest (largest
        m²/(v + m²)), or None where no candidate has a positive plug-in mean m. The plug-in
        masses carry half a pseudo-count, (k + ½)/(n + 1), so an empty denominator does not
        look infinitely good."""
        e = math.exp(epsilon)
        best, best_g = None, 0.0
        for sign, ts, kx, ky in self.rows:
            px, py = (kx + 0.5) / (self.nx + 1), (ky + 0.5) / (self.ny + 1)
            for numerator, p, q in (("z", px, py), ("z_prime", py, px)):
                m = p - e * q - delta
                v = p * (1 - p) + e * e * q * (1 - q)
                g = np.where(m > 0, m * m / (v + m * m), 0.0)
                i = int(np.argmax(g))
                if g[i] > best_g:
                    best_g = float(g[i])
                    best = OnlineRegion(sign, float(ts[i]), numerator, float(m[i]),
                                        float(v[i]))
        return best

    def best_fixed(self, delta: float, rank_alpha: float) -> OnlineRegion | None:
        """The region of the largest Clopper–Pearson bound ln((P_lo − δ)/Q_hi) at
        ``rank_alpha`` on these counts (:func:`audit.estimation.binomial.
        eps_from_counts`)."""
        best, best_eps = None, -1.0
        for sign, ts, kx, ky in self.rows:
            for numerator, kn, nn, kd, nd in (("z", kx, self.nx, ky, self.ny),
                                              ("z_prime", ky, self.ny, kx, self.nx)):
                eps = eps_from_counts(kn, nn, kd, nd, delta, rank_alpha)
                i = int(np.argmax(eps))
                if eps[i] > best_eps:
                    best_eps = float(eps[i])
                    best = OnlineRegion(sign, float(ts[i]), numerator, 0.0, 0.0)
        return best


def choose_region(x_sorted: np.ndarray, y_sorted: np.ndarray, epsilon: float,
                  delta: float) -> OnlineRegion | None:
    """The region whose plug-in Z = a − e^ε b − δ grows the wealth fastest on the past calls
    (sorted A(z) outputs ``x_sorted``, sorted A(z′) outputs ``y_sorted``), or None before
    any call or where no candidate has a positive plug-in mean (:class:`_Candidates`)."""
    cands = _Candidates.of(x_sorted, y_sorted)
    return None if cands is None else cands.best(epsilon, delta)


class _Past:
    """The past calls of both sides, sorted, at most ``memory`` per side."""

    def __init__(self, memory: int) -> None:
        self.memory = memory
        self.x = np.empty(0)
        self.y = np.empty(0)

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        room = self.memory - self.x.size
        if room > 0:
            self.x = _merged(self.x, x[:room])
            self.y = _merged(self.y, y[:room])


def _merged(past: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The sorted union of sorted ``past`` and ``new`` (one O(n) insertion, no re-sort)."""
    new = np.sort(new)
    return np.insert(past, np.searchsorted(past, new), new)


class _Wealth:
    """Log-wealths of claims ε (one bet per chunk each), and when each crossed its threshold."""

    def __init__(self, epsilons: np.ndarray, delta: float, threshold: float) -> None:
        self.epsilons = epsilons
        self.delta = delta
        self.threshold = threshold
        self.log_wealth = np.zeros(epsilons.size)
        self.max_log_wealth = np.zeros(epsilons.size)
        self.stopped_at = np.full(epsilons.size, -1, dtype=np.int64)

    def bet(self, i: np.ndarray, lam: np.ndarray, a: np.ndarray, b: np.ndarray,
            calls: int) -> None:
        """Bet λ[j] on claims i[j] with their region's indicators a[j], b[j] (arrays of the
        chunk's calls); ``calls`` the calls per side after the chunk."""
        e = np.exp(self.epsilons[i])[:, None]
        z = a - e * b - self.delta
        self.log_wealth[i] += np.log1p(lam[:, None] * z).sum(axis=1)
        newly = (self.log_wealth >= self.threshold) & (self.stopped_at < 0)
        self.stopped_at[newly] = calls
        self.max_log_wealth = np.maximum(self.max_log_wealth, self.log_wealth)

    @property
    def eps_lower(self) -> float:
        hit = self.stopped_at >= 0
        return float(self.epsilons[hit].max()) if hit.any() else 0.0


class OnlineMonitor:
    """The anytime-valid tests of a run with no pilot (module docstring), fed the scalar
    outputs of both sides chunk by chunk.

    Parameters
    ----------
    claims : array_like
        The claimed ε tested at once (≥ 0, finite; the largest is the claim the run stops on).
    delta : float
        δ of the claims, in [0, 1).
    alpha : float
        Level of the whole monitor, in (0, 1).
    stop : StopRule or str
        ``"refuted"``: :meth:`update` says stop once the largest claim is refuted; ``"budget"``:
        never (the run estimates ε to its budget).
    budget : int
        The run's calls per side (``stop = "budget"``: the second half is the fixed-sample
        bound's).
    budget_share : float
        ``stop = "budget"``: the share of α of each anytime-valid test, in (0, 0.5).
    memory : int
        Past calls kept per side to choose regions from (:data:`MEMORY`).
    """

    METHOD = "online betting e-process (regions predictable from past calls, no pilot)"

    def __init__(self, claims, delta: float, alpha: float, *, stop: StopRule | str = "refuted",
                 budget: int = 1, budget_share: float | None = None, memory: int = MEMORY,
                 rank_alpha: float | None = None) -> None:
        claims = np.unique(np.asarray(claims, dtype=np.float64).reshape(-1))
        if claims.size == 0 or not np.all(np.isfinite(claims)) or np.any(claims < 0):
            raise ValueError(f"claims must be finite values >= 0, got claims={claims!r}")
        self.delta = check_delta(delta)
        if self.delta >= 1.0:
            raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
        self.alpha = check_alpha(alpha)
        self.stop = StopRule.parse(stop, "stop")
        self.budget = check_positive_int(budget, "budget")
        if budget_share is None:
            budget_share = DEFAULT_POLICY.budget_test_share
        share = 0.5 if self.stop is StopRule.REFUTED else check_in_range(
            "budget_share", budget_share, 0.0, 0.5, lo_closed=False, hi_closed=False)
        self.memory = check_positive_int(memory, "memory")
        self.rank_alpha = (DEFAULT_POLICY.online.rank_alpha if rank_alpha is None else
                           check_in_range("rank_alpha", rank_alpha, 0.0, 1.0, lo_closed=False,
                                          hi_closed=False))
        grid = estimation_grid(float(claims.max()))
        self.claims = _Wealth(claims, self.delta, math.log(1.0 / (alpha * share)))
        self.grid = _Wealth(grid, self.delta, math.log(grid.size / (alpha * share)))
        self.fixed_alpha = None if self.stop is StopRule.REFUTED else alpha * (1 - 2 * share)
        self._past = _Past(self.memory)
        self.calls = 0
        self.region: OnlineRegion | None = None
        self.regions_chosen = 0
        self._frozen: OnlineRegion | None = None
        self._second = np.zeros(3, dtype=np.int64)  # (numerator in S, denominator in S, calls)

    def update(self, x: np.ndarray, y: np.ndarray) -> bool:
        """Bet on one chunk of paired calls (``x`` from A(z), ``y`` from A(z′), scalar
        outputs of equal number); True when the run may stop."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if x.size != y.size:
            raise ValueError(f"x and y must hold the same number of calls, got {x.size} and "
                             f"{y.size}")
        if x.size == 0:
            return False
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("audit.mode='online' needs finite scalar outputs: a call "
                             "returned NaN or inf")
        after = self.calls + x.size
        past = self._past
        top = float(self.claims.epsilons[-1])
        cands = _Candidates.of(past.x, past.y)
        region = None if cands is None else cands.best(top, self.delta)
        if region is not None:
            self.region = region
            self.regions_chosen += 1
            a, b = region.indicators(x, y)
            n = self.claims.epsilons.size
            self.claims.bet(np.arange(n), np.full(n, region.bet(top, self.delta)),
                            np.broadcast_to(a, (n, a.size)), np.broadcast_to(b, (n, b.size)),
                            after)
        if cands is not None:
            self._bet_grid(cands, x, y, after)
        self._fixed(cands, x, y)
        past.add(x, y)
        self.calls = after
        return self.stop is StopRule.REFUTED and self.claims.stopped_at[-1] >= 0

    def _bet_grid(self, cands: _Candidates, x: np.ndarray, y: np.ndarray,
                  after: int) -> None:
        """Each grid ε not yet refuted bets with its own region (up to the first ε where no
        region has a positive plug-in mean: none has one above it either)."""
        rows, lams, aa, bb = [], [], [], []
        for i, eps in enumerate(self.grid.epsilons):
            if self.grid.stopped_at[i] >= 0:
                continue
            region = cands.best(float(eps), self.delta)
            if region is None:  # no region with a positive mean: none at a higher ε either
                break
            a, b = region.indicators(x, y)
            rows.append(i)
            lams.append(region.bet(float(eps), self.delta))
            aa.append(a)
            bb.append(b)
        if rows:
            self.grid.bet(np.asarray(rows), np.asarray(lams), np.asarray(aa), np.asarray(bb),
                          after)

    def _fixed(self, cands: _Candidates | None, x: np.ndarray, y: np.ndarray) -> None:
        """``stop = "budget"``: freeze the region at half the budget, count the rest in it."""
        if self.fixed_alpha is None:
            return
        if self._frozen is None and cands is not None and self.calls >= self.budget // 2:
            self._frozen = cands.best_fixed(self.delta, self.rank_alpha)
        if self._frozen is not None:
            a, b = self._frozen.indicators(x, y)
            self._second += (int(a.sum()), int(b.sum()), a.size)

    def bound(self) -> OnlineBound:
        """The bound after the calls seen so far."""
        fixed = None
        if self._frozen is not None and self.calls >= self.budget:
            k_num, k_den, n = (int(c) for c in self._second)
            fixed = float(eps_from_counts(k_num, n, k_den, n, self.delta, self.fixed_alpha))
        last = self.region
        return OnlineBound(
            eps_lower=max(self.claims.eps_lower, self.grid.eps_lower, fixed or 0.0),
            method=self.METHOD, alpha=self.alpha, delta=self.delta,
            calls_per_side=int(self.calls), stopped_early=self.calls < self.budget,
            claims_tested=tuple(self.claims.epsilons.tolist()),
            stopped_at=tuple(self.claims.stopped_at.tolist()),
            max_log_wealth=tuple(self.claims.max_log_wealth.tolist()),
            estimated=tuple(self.grid.epsilons.tolist()),
            estimated_stopped_at=tuple(self.grid.stopped_at.tolist()),
            stop=self.stop.value, region=None if last is None else last.describe(),
            regions_chosen=self.regions_chosen, at_budget=fixed,
            at_budget_alpha=None if fixed is None else self.fixed_alpha,
            at_budget_region=None if self._frozen is None else self._frozen.describe())


class OnlineCurveTest:
    """An anytime-valid test of a trade-off curve claim with no pilot: the mechanism is
    claimed f-DP, equivalently (ε, δ_f(ε))-DP for every ε ≥ 0 (Dong, Roth & Su 2022, Prop. 2.12:
    the curve's privacy profile). Before each chunk the pair (ε_t, region) of the largest
    plug-in growth is chosen from the past calls over the grid ``epsilons``, and the one
    wealth bets Z_t = a_t − e^{ε_t} b_t − δ_f(ε_t): under the claim every predictable choice
    has conditional mean ≤ 0, so P[the wealth ever reaches 1/α] ≤ α with no multiplicity
    correction over the grid (the choice is part of the bet).

    Parameters
    ----------
    profile : callable
        δ_f(ε) of the claimed curve, in [0, 1]
        (:func:`audit.theory.tradeoff.conversions.delta_for_epsilon` of the curve).
    epsilons : array_like
        The ε the choice ranges over (≥ 0, finite).
    alpha : float
        Level, in (0, 1).
    memory : int
        Past calls kept per side (:data:`MEMORY`).
    """

    def __init__(self, profile, epsilons, alpha: float, memory: int = MEMORY) -> None:
        eps = np.unique(np.asarray(epsilons, dtype=np.float64).reshape(-1))
        if eps.size == 0 or not np.all(np.isfinite(eps)) or np.any(eps < 0):
            raise ValueError(f"epsilons must be finite values >= 0, got epsilons={eps!r}")
        deltas = np.array([float(profile(float(e))) for e in eps])
        if not np.all((deltas >= 0) & (deltas <= 1)):
            raise ValueError(f"profile must return δ in [0, 1], got {deltas.tolist()}")
        self.epsilons, self.deltas = eps, deltas
        self.alpha = check_alpha(alpha)
        self.threshold = math.log(1.0 / self.alpha)
        self._past = _Past(check_positive_int(memory, "memory"))
        self.log_wealth = 0.0
        self.calls = 0
        self.stopped_at = -1
        self.last: tuple[float, OnlineRegion] | None = None

    def update(self, x: np.ndarray, y: np.ndarray) -> bool:
        """Bet on one chunk of paired calls (``x`` from A(z), ``y`` from A(z′)); True once the
        claim is refuted."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if x.size != y.size:
            raise ValueError(f"x and y must hold the same number of calls, got {x.size} and "
                             f"{y.size}")
        cands = _Candidates.of(self._past.x, self._past.y)
        if cands is not None and self.stopped_at < 0:
            best, best_g = None, 0.0
            for eps, dlt in zip(self.epsilons, self.deltas, strict=True):
                region = cands.best(float(eps), float(dlt))
                if region is not None:
                    g = region.m**2 / (region.v + region.m**2)
                    if g > best_g:
                        best, best_g = (float(eps), float(dlt), region), g
            if best is not None:
                eps, dlt, region = best
                self.last = (eps, region)
                a, b = region.indicators(x, y)
                z = a - math.exp(eps) * b - dlt
                self.log_wealth += float(np.log1p(region.bet(eps, dlt) * z).sum())
                if self.log_wealth >= self.threshold:
                    self.stopped_at = self.calls + x.size
        self._past.add(x, y)
        self.calls += x.size
        return self.stopped_at >= 0

    @property
    def refuted(self) -> bool:
        """Whether the curve claim was refuted (at level alpha, after any stop)."""
        return self.stopped_at >= 0


@register_bound
@dataclass(frozen=True)
class OnlineBound(BettingWitness):
    """The typed witness of an online audit (:class:`OnlineMonitor`): the anytime-valid bound
    when the run stopped, with no pilot.

    ``eps_lower`` is the largest ε refuted among ``claims_tested`` and the estimation grid
    ``estimated`` (and, with ``stop = "budget"``, the second half's fixed-sample bound
    ``at_budget`` at ``at_budget_alpha`` in the region ``at_budget_region``): valid with
    probability ≥ 1 − alpha after any data-dependent stop. ``region`` is the last region bet
    on, ``regions_chosen`` how many chunks chose one.
    """

    kind: ClassVar[str] = "online"
    eps_lower: float
    method: str
    alpha: float
    delta: float
    calls_per_side: int
    stopped_early: bool
    claims_tested: tuple[float, ...]
    stopped_at: tuple[int, ...]
    max_log_wealth: tuple[float, ...]
    estimated: tuple[float, ...] = ()
    estimated_stopped_at: tuple[int, ...] = ()
    stop: str = "refuted"
    region: str | None = None
    regions_chosen: int = 0
    at_budget: float | None = None
    at_budget_alpha: float | None = None
    at_budget_region: str | None = None

    def describe(self) -> str:
        """The one sentence the command line, ``assert_private`` and reports print."""
        stop = "stopped early" if self.stopped_early else "ran its budget"
        if self.at_budget is not None:
            stop += (f", the second half's fixed-sample bound {self.at_budget:.4g} at "
                     f"{1 - self.at_budget_alpha:.6g} in {self.at_budget_region}")
        where = f": last region {self.region}" if self.region else ""
        return (f"eps >= {self.eps_lower:.4g} at {1 - self.alpha:.6g} confidence (online "
                f"betting test, no pilot, regions chosen from past calls, {stop} after "
                f"{self.calls_per_side:,} calls per side){where}")

    def to_dict(self) -> dict:
        return {"eps_lower": self.eps_lower, "method": self.method, "alpha": self.alpha,
                "delta": self.delta, "calls_per_side": self.calls_per_side,
                "stopped_early": self.stopped_early,
                "claims_tested": list(self.claims_tested), "stopped_at": list(self.stopped_at),
                "max_log_wealth": list(self.max_log_wealth), "estimated": list(self.estimated),
                "estimated_stopped_at": list(self.estimated_stopped_at), "stop": self.stop,
                "region": self.region, "regions_chosen": self.regions_chosen,
                "at_budget": self.at_budget, "at_budget_alpha": self.at_budget_alpha,
                "at_budget_region": self.at_budget_region, "kind": self.kind}
