"""Anytime-valid sequential test of a claimed (ε, δ) on one declared region.

For a region S fixed before the main run, the pair satisfies the claim on S only if
P(S) ≤ e^ε Q(S) + δ (numerator law P, denominator law Q; swapped for the ``zprime_vs_z``
direction). Trial t draws X_t ~ P and Y_t ~ Q and observes a_t = 1[X_t ∈ S], b_t = 1[Y_t ∈ S];
under the claim Z_t(ε) = a_t − e^ε b_t − δ has conditional mean ≤ 0.

The test bets against the claim (Waudby-Smith & Ramdas 2024; Shafer & Vovk): the wealth

    K_t(ε) = Π_{i ≤ t} (1 + λ_i Z_i(ε)),   0 ≤ λ_i ≤ λ_max,

with λ_i chosen from the past only, is a non-negative supermartingale under the claim, so by
Ville's inequality P[sup_t K_t(ε) ≥ 1/α] ≤ α: stopping the first time the wealth reaches 1/α
refutes the claim at level α whatever the stopping rule, and running to the budget otherwise.

Graded lower bound. The same bets λ_i are used for every ε on a grid ``epsilons`` (λ sized
for the largest), so K_t(ε) is non-increasing in ε on every path. Then ε_lower = the largest
grid ε whose wealth ever reached 1/α is anytime-valid without a multiplicity correction: if
ε_lower exceeded ε_S = ln((P(S) − δ)/Q(S)), the wealth at the smallest grid point ≥ ε_S (a
true claim) would have reached 1/α, which happens with probability ≤ α.

Observations arrive in chunks of paired trials (the t-th draw of each side in a chunk form a
pair): a chunk is summarised by the counts of the four (a, b) types, and λ is constant within
it (chosen before the chunk from the earlier ones).

References
----------
Waudby-Smith, I. and Ramdas, A. (2024). Estimating means of bounded random variables by
betting. JRSS-B 86(1). Ville, J. (1939). Étude critique de la notion de collectif.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from audit._validate import check_delta, check_in_range
from audit.enums import Direction, StopRule
from audit.estimation.binomial import check_alpha, eps_from_counts
from audit.estimation.witness import field_values, register_bound
from audit.policy import DEFAULT_POLICY

__all__ = ["BettingTest", "BettingWitness", "EstimatingTest", "PairCounts", "SequentialBound",
           "SequentialMonitor", "estimation_grid"]

@dataclass(frozen=True)
class PairCounts:
    """Counts of the four kinds of paired trials in a chunk: (a, b) = (numerator draw in S,
    denominator draw in S)."""

    both: int  # a = 1, b = 1
    num_only: int  # a = 1, b = 0
    den_only: int  # a = 0, b = 1
    neither: int  # a = 0, b = 0

    @property
    def n(self) -> int:
        return self.both + self.num_only + self.den_only + self.neither

    @classmethod
    def from_indicators(cls, a: np.ndarray, b: np.ndarray) -> PairCounts:
        """Pair the t-th numerator draw with the t-th denominator draw."""
        a = np.asarray(a, dtype=bool)
        b = np.asarray(b, dtype=bool)
        if a.shape != b.shape or a.ndim != 1:
            raise ValueError(f"a and b must be 1-D of the same length, got {a.shape}, {b.shape}")
        return cls(int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)),
                   int(np.sum(~a & ~b)))


@dataclass
class BettingTest:
    """Sequential test of the claims "(ε, δ) holds on S" for every ε in ``epsilons``.

    Parameters
    ----------
    epsilons : array_like
        Claimed ε values to test (≥ 0, finite); sorted internally.
    delta : float
        δ of the claims, in [0, 1).
    alpha : float
        Level, in (0, 1): each claim that holds is refuted with probability ≤ alpha.
    cap : float
        λ_max = cap / (e^{max ε} + δ), in (0, 1): keeps every factor ≥ 1 − cap > 0.
    """

    epsilons: np.ndarray
    delta: float
    alpha: float
    cap: float = 0.5
    trials: int = 0
    log_wealth: np.ndarray = field(init=False)
    max_log_wealth: np.ndarray = field(init=False)
    stopped_at: np.ndarray = field(init=False)
    _sum: float = field(default=0.0, init=False)
    _sum_sq: float = field(default=0.0, init=False)

    def __post_init__(self) -> None:
        eps = np.sort(np.asarray(self.epsilons, dtype=np.float64).reshape(-1))
        if eps.size == 0 or not np.all(np.isfinite(eps)) or np.any(eps < 0):
            raise ValueError(f"epsilons must be finite values >= 0, got epsilons={eps!r}")
        self.epsilons = eps
        self.delta = check_delta(self.delta)
        if self.delta >= 1.0:
            raise ValueError(f"delta must be in [0, 1), got delta={self.delta!r}")
        self.alpha = check_alpha(self.alpha)
        self.cap = check_in_range("cap", self.cap, 0.0, 1.0, lo_closed=False, hi_closed=False)
        self.log_wealth = np.zeros(eps.size)
        self.max_log_wealth = np.zeros(eps.size)
        self.stopped_at = np.full(eps.size, -1, dtype=np.int64)

    @property
    def lambda_max(self) -> float:
        return self.cap / (math.exp(self.epsilons[-1]) + self.delta)

    @property
    def threshold(self) -> float:
        """ln(1/α): the log-wealth at which a claim is refuted."""
        return -math.log(self.alpha)

    def _bet(self) -> float:
        """λ for the next chunk from the earlier ones only (predictable): the aGRAPA plug-in
        μ/(σ² + μ²) of Z at the largest claimed ε, clipped to [0, λ_max]; 0 before any data."""
        if self.trials == 0:
            return 0.0
        mean = self._sum / self.trials
        var = max(self._sum_sq / self.trials - mean * mean, 0.0)
        if mean <= 0.0:
            return 0.0
        return float(min(self.lambda_max, mean / (var + mean * mean)))

    def _kinds(self, counts: PairCounts) -> tuple[tuple[int, np.ndarray], ...]:
        """Z = a − e^ε b − δ of the four kinds of pairs, for every ε on the grid, with their
        counts in this chunk."""
        e = np.exp(self.epsilons)
        d = self.delta
        return ((counts.both, 1.0 - e - d), (counts.num_only, 1.0 - d + 0 * e),
                (counts.den_only, -e - d), (counts.neither, -d + 0 * e))

    def update(self, counts: PairCounts) -> None:
        """Bet on one chunk of paired trials."""
        if counts.n == 0:
            return
        lam = self._bet()
        kinds = self._kinds(counts)
        step = np.zeros_like(self.epsilons)
        for k, z in kinds:
            if k:
                step += k * np.log1p(lam * z)
        self.log_wealth += step
        newly = (self.log_wealth >= self.threshold) & (self.stopped_at < 0)
        self.stopped_at[newly] = self.trials + counts.n
        self.max_log_wealth = np.maximum(self.max_log_wealth, self.log_wealth)
        self._track(kinds)
        self.trials += counts.n

    def _track(self, kinds) -> None:
        """Running moments of Z the next bet is sized from: at the largest claimed ε."""
        z_top = [(k, float(np.atleast_1d(z)[-1])) for k, z in kinds]
        self._sum += sum(k * z for k, z in z_top)
        self._sum_sq += sum(k * z * z for k, z in z_top)

    def refuted(self, epsilon: float | None = None) -> bool:
        """Whether the claim at ``epsilon`` (default: the largest on the grid) is refuted."""
        i = self.epsilons.size - 1 if epsilon is None else int(np.searchsorted(
            self.epsilons, epsilon, side="left"))
        if i >= self.epsilons.size or (epsilon is not None and self.epsilons[i] != epsilon):
            raise ValueError(f"epsilon must be on the grid {self.epsilons.tolist()}, "
                             f"got epsilon={epsilon!r}")
        return bool(self.stopped_at[i] >= 0)

    @property
    def eps_lower(self) -> float:
        """The largest refuted grid ε (0 when none): an anytime-valid lower bound on
        ln((P(S) − δ)/Q(S)), valid with probability ≥ 1 − alpha."""
        hit = self.stopped_at >= 0
        return float(self.epsilons[hit].max()) if hit.any() else 0.0

    def summary(self) -> dict:
        return {
            "epsilons": self.epsilons.tolist(), "delta": self.delta, "alpha": self.alpha,
            "trials": self.trials, "log_wealth": self.log_wealth.tolist(),
            "max_log_wealth": self.max_log_wealth.tolist(),
            "stopped_at": self.stopped_at.tolist(), "eps_lower": self.eps_lower,
        }


@dataclass
class EstimatingTest(BettingTest):
    """The claims "(ε, δ) holds on S" for every ε of a grid, each with bets of its own.

    :class:`BettingTest` sizes every bet for the largest ε on its grid, so one threshold
    covers the whole grid but nothing above a true claim is ever refuted. Here each ε_i bets
    with its own predictable aGRAPA fraction λ_i ≤ cap/(e^{ε_i} + δ), so a grid reaching far
    above the claim can estimate ε; the wealths are no longer ordered in ε, so each claim is
    tested at level alpha/m (Bonferroni over the m grid points): the largest refuted ε is an
    anytime-valid lower bound on ln((P(S) − δ)/Q(S)) with probability ≥ 1 − alpha.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self._sum = np.zeros(self.epsilons.size)
        self._sum_sq = np.zeros(self.epsilons.size)

    @property
    def lambda_max(self) -> np.ndarray:
        return self.cap / (np.exp(self.epsilons) + self.delta)

    @property
    def threshold(self) -> float:
        """ln(m/α): Bonferroni over the m claims of the grid."""
        return math.log(self.epsilons.size) - math.log(self.alpha)

    def _bet(self) -> np.ndarray:
        if self.trials == 0:
            return np.zeros(self.epsilons.size)
        mean = self._sum / self.trials
        var = np.maximum(self._sum_sq / self.trials - mean * mean, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = np.where(mean > 0.0, mean / (var + mean * mean), 0.0)
        return np.minimum(self.lambda_max, lam)

    def _track(self, kinds) -> None:
        """Running moments of Z at every ε on the grid: each bets on its own."""
        for k, z in kinds:
            if k:
                self._sum += k * z
                self._sum_sq += k * z * z


def estimation_grid(claim: float, above: int = 32, below: int = 12,
                    ratio: float = 2.0**0.25, eps_max: float = 40.0) -> np.ndarray:
    """ε values an estimating sequential audit tests: claim·ratio^k for k = −below..above
    (the claim itself excluded: the claims' own test covers it), those up to ``eps_max``."""
    if not (math.isfinite(claim) and claim > 0):
        raise ValueError(f"claim must be finite and > 0, got claim={claim!r}")
    k = np.concatenate([np.arange(-below, 0), np.arange(1, above + 1)])
    grid = claim * ratio ** k.astype(np.float64)
    kept = grid[grid <= eps_max]
    return kept if kept.size else grid[:1]


class BettingWitness:
    """What the witnesses of the betting tests share (:class:`SequentialBound`,
    :class:`audit.estimation.online.OnlineBound`: frozen dataclasses with ``claims_tested``
    and ``stopped_at``, their tuples written to JSON as lists): no point estimate, a claim
    refuted where its wealth crossed the threshold, and the inverse of ``to_dict``."""

    def plug_in(self) -> None:
        """No point estimate: a fixed-n estimate is not valid after a data-dependent stop."""
        return None

    def refutes(self, epsilon: float) -> bool:
        """Whether the test refuted the claim ``epsilon`` (False off its grid of claims)."""
        for eps, stop in zip(self.claims_tested, self.stopped_at, strict=True):
            if eps == epsilon:
                return stop >= 0
        return False

    @classmethod
    def from_dict(cls, doc: dict):
        """The bound a ``to_dict`` document describes.

        Raises
        ------
        ValueError
            If a required field is missing.
        """
        return cls(**{k: tuple(v) if isinstance(v, list) else v
                      for k, v in field_values(cls, doc).items()})

    def result_keys(self) -> dict:
        return {}


@register_bound
@dataclass(frozen=True)
class SequentialBound(BettingWitness):
    """The typed witness of a sequential audit: the anytime-valid bound of a
    :class:`BettingTest` on one declared region, when the run stopped.

    ``eps_lower`` is the largest ε refuted, on the grid of claims ``claims_tested`` or on the
    estimation grid ``estimated`` above it (0 when none): valid with probability ≥ 1 − alpha
    after any data-dependent stop. ``stopped_at[i]`` (``estimated_stopped_at[i]``) is the
    number of paired calls after which that claim was refuted (−1: never); ``stop`` the rule
    the run followed.
    """

    kind: ClassVar[str] = "sequential"
    eps_lower: float
    direction: Direction
    threshold: float
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
    #: ``stop = "budget"``: the fixed-sample bound of the whole run, ln((P_lo − δ)/Q_hi) at
    #: ``at_budget_alpha`` (None: no such bound; the run stopped early or stops on refutation)
    at_budget: float | None = None
    at_budget_alpha: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "direction", Direction.parse(self.direction, "direction"))

    def refuted(self, epsilon: float) -> bool:
        """Whether the claim ``epsilon`` (a grid value) was refuted."""
        for eps, stop in zip(self.claims_tested, self.stopped_at, strict=True):
            if eps == epsilon:
                return stop >= 0
        raise ValueError(f"epsilon must be on the grid {list(self.claims_tested)}, "
                         f"got epsilon={epsilon!r}")

    def describe(self) -> str:
        """The one sentence the command line, ``assert_private`` and reports print."""
        op = ">=" if self.direction is Direction.Z_VS_ZPRIME else "<="
        stop = "stopped early" if self.stopped_early else "ran its budget"
        above = [e for e, t in zip(self.estimated, self.estimated_stopped_at, strict=True)
                 if t >= 0]
        if above:
            stop += f", estimating above the claim up to {max(above):.4g}"
        if self.at_budget is not None:
            stop += (f", the whole run's fixed-sample bound {self.at_budget:.4g} at "
                     f"{1 - self.at_budget_alpha:.6g}")
        return (f"eps >= {self.eps_lower:.4g} at {1 - self.alpha:.6g} confidence "
                f"(anytime-valid betting test, {stop} after {self.calls_per_side:,} calls per "
                f"side): region {{score {op} {self.threshold:.6g}}} ({self.direction.value})")

    def to_dict(self) -> dict:
        """The witness as JSON (the keys the README documents for sequential audits)."""
        return {"eps_lower": self.eps_lower, "direction": self.direction.value,
                "threshold": self.threshold, "method": self.method, "alpha": self.alpha,
                "delta": self.delta, "calls_per_side": self.calls_per_side,
                "stopped_early": self.stopped_early,
                "claims_tested": list(self.claims_tested), "stopped_at": list(self.stopped_at),
                "max_log_wealth": list(self.max_log_wealth), "estimated": list(self.estimated),
                "estimated_stopped_at": list(self.estimated_stopped_at), "stop": self.stop,
                "at_budget": self.at_budget, "at_budget_alpha": self.at_budget_alpha,
                "kind": self.kind}

class SequentialMonitor:
    """Anytime-valid tests on one declared region, fed with the main run's bin indices.

    ``stop = "refuted"``: the claims (a grid of fractions of the implementation's claim, and
    its amplified claim) are tested by a :class:`BettingTest` at alpha/2, so the claim is
    refuted about as fast as by one test; a geometric grid from an eighth of the claim to 256
    times it (:func:`estimation_grid`) by an :class:`EstimatingTest` at alpha/2, each ε with
    bets of its own, so the bound estimates ε below the claim and can exceed it. ε_lower is
    the larger of the two bounds: with probability ≥ 1 − alpha neither family refutes a true
    claim (union bound).

    ``stop = "budget"`` (the estimator): the run's stopping time is its budget, fixed before
    it starts, so at the budget the whole run's counts are a fixed-size sample on a region
    declared before them, and the fixed mode's bound (:func:`audit.estimation.binomial.
    eps_from_counts`) is valid on them. The claims are tested at ``budget_share`` × alpha
    (the betting test, anytime-valid: when the claim would have been refuted), the
    estimation grid at the same share, and the fixed-sample bound takes the rest; ε_lower is
    the largest of the three (union bound: probability ≥ 1 − alpha). It is not capped by the
    estimation grid's spacing (2^{1/4}: a grid point is at best 0.841 of the truth).

    Parameters
    ----------
    in_region : ndarray of bool
        For every bin of the statistic, whether it lies in the region.
    direction : Direction
        Which side is the numerator (``z_vs_zprime``: draws of P = A_D(z)).
    claims : array_like
        The grid of claimed ε tested simultaneously (its largest is the claim).
    delta, alpha : float
        δ of the claims; level of the whole monitor.
    stop : StopRule
        ``refuted``: :meth:`update` says stop once the claim is refuted; ``budget``: never.
    budget_share : float, optional
        ``stop = "budget"``: the share of alpha each anytime-valid family (the claims, the
        estimation grid) gets, in (0, 0.5); default the policy's
        (:attr:`audit.policy.AuditPolicy.budget_test_share` of :data:`DEFAULT_POLICY`).
    """

    METHOD = "sequential betting e-process"

    def __init__(self, in_region: np.ndarray, direction: Direction, threshold: float,
                 claims, delta: float, alpha: float, stop: StopRule | str = "refuted",
                 budget_share: float | None = None) -> None:
        self.in_region = np.asarray(in_region, dtype=bool)
        self.direction = Direction.parse(direction, "direction")
        self.threshold = float(threshold)
        self.stop = StopRule.parse(stop, "stop")
        claims = np.asarray(claims, dtype=np.float64)
        alpha = check_alpha(alpha)
        if budget_share is None:
            budget_share = DEFAULT_POLICY.budget_test_share
        check_in_range("budget_share", budget_share, 0.0, 0.5, lo_closed=False,
                       hi_closed=False)
        share = 0.5 if self.stop is StopRule.REFUTED else float(budget_share)
        self.test = BettingTest(claims, delta, alpha * share)
        self.estimate = EstimatingTest(estimation_grid(float(np.max(claims))), delta,
                                       alpha * share)
        self.alpha = alpha
        #: the fixed-sample bound's level (budget mode), and its counts (numerator, denominator,
        #: calls per side)
        self.fixed_alpha = None if self.stop is StopRule.REFUTED else alpha * (1 - 2 * share)
        self._counts = np.zeros(3, dtype=np.int64)

    def update(self, bins_p: np.ndarray, bins_q: np.ndarray) -> bool:
        """Bet on one chunk of paired calls (their bin indices); True when the run may stop
        (``stop = "refuted"`` and the claim, the largest on the grid, is refuted)."""
        a, b = self.in_region[bins_p], self.in_region[bins_q]
        if self.direction is not Direction.Z_VS_ZPRIME:
            a, b = b, a
        pairs = PairCounts.from_indicators(a, b)
        self._counts += (int(np.count_nonzero(a)), int(np.count_nonzero(b)), a.size)
        self.test.update(pairs)
        self.estimate.update(pairs)
        return self.stop is StopRule.REFUTED and self.test.refuted()

    def bound(self, calls_per_side: int, budget: int) -> SequentialBound:
        """The bound after ``calls_per_side`` calls of a run whose budget was ``budget``."""
        s = self.test.summary()
        e = self.estimate.summary()
        fixed = None
        if self.fixed_alpha is not None and calls_per_side >= budget:
            k_num, k_den, n = (int(c) for c in self._counts)
            fixed = float(eps_from_counts(k_num, n, k_den, n, self.test.delta,
                                          self.fixed_alpha))
        return SequentialBound(
            eps_lower=max(s["eps_lower"], e["eps_lower"], fixed or 0.0), direction=self.direction,
            threshold=self.threshold, method=self.METHOD, alpha=self.alpha,
            delta=self.test.delta, calls_per_side=int(calls_per_side),
            stopped_early=calls_per_side < budget, claims_tested=tuple(s["epsilons"]),
            stopped_at=tuple(s["stopped_at"]), max_log_wealth=tuple(s["max_log_wealth"]),
            estimated=tuple(e["epsilons"]), estimated_stopped_at=tuple(e["stopped_at"]),
            stop=self.stop.value, at_budget=fixed,
            at_budget_alpha=None if fixed is None else self.fixed_alpha)
