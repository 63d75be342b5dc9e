"""The audit policy: the one home of every statistical default.

Every default that decides how an audit spends its draws and how it reads them lives in one
frozen :class:`AuditPolicy`, :data:`DEFAULT_POLICY`, read by the config
(:mod:`audit.pipeline.config`), ``assert_private`` (:mod:`audit.testing`), the estimators, the
attacks, the experiments and the benchmarks. The α split is not a setting: every two-sided ε
bound takes its numerator's and denominator's Clopper–Pearson bounds at α/2 each
(:data:`audit.estimation.binomial.SIDES`), except the joint bound at δ = 0, one bound at α on
the numerator's share of a Poissonised run (``black_box_joint_bound``, docs/THEORY.md
§8.1b; black boxes only by default).

**The pilot rule** (one sentence): the pilot is ``multiple`` times the main run's draws (or
calls) per side up to ``whole``, and ``trials / divisor`` beyond, clipped to [``lo``, ``hi``],
once per setting the run bounds (a stratified grid of rates bounds several) — the model
(no ``whole``, ``divisor`` 10, [10⁵, 10⁷]: the kernels draw tens of millions per second) and a
black box (twice the main run up to 2·10⁴, ``divisor`` 5, [10³, the memory cap of its raw
outputs]: on small budgets the attack's fit, not the main run's counts, limits the bound) being
the two target kinds; a pair search's candidate audits follow the black-box rule on their own
calls.

**The default attack** per target kind: the model's exact likelihood ratio (``exact-lr``, the
Neyman–Pearson optimal white-box score), and ``auto`` for a black box (it picks, on the pilot
alone, among the density ratio, categorical counting and, for vector releases, the
latent-mixture score of k releases from one table, the additive, isotonic and k-NN scores).
Measured on 20 seeds of 5,000 calls per side of a 3-coordinate Laplace release (ε = 1),
``auto`` reaches 0.72 of the true ε where ``density-ratio`` reaches
0.44, and it refutes the (Laplace, Gaussian) against (Laplace, Laplace) release at 10⁴ calls
on 20 of 20 seeds where ``density-ratio`` refutes it on 1 (``benchmarks/bench_attacks.py``,
docs/measurements.md). It costs time: it fits every candidate twice, on halves of the fit
pilot, before refitting the one it picks on the whole of it; where that is too slow or
``auto`` measured weaker, a user (or an experiment) names the attack (``audit.attack``):
``experiments/tester_benchmark.py`` does, and says why.

Examples
--------
>>> from audit.policy import DEFAULT_POLICY
>>> DEFAULT_POLICY.default_attack(black_box=True)
'auto'
>>> DEFAULT_POLICY.pilot_size(5_000, black_box=True)
10000
>>> DEFAULT_POLICY.pilot_size(10**7, black_box=False)
1000000
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from audit._validate import check_bool, check_in_range, check_positive_int

__all__ = ["AuditPolicy", "PilotRule", "BatchCheckRule", "OnlineRule", "DEFAULT_POLICY",
           "MODEL_PILOT",
           "BLACK_BOX_PILOT"]


@dataclass(frozen=True)
class PilotRule:
    """How a target kind's pilot is sized and drawn (the one rule: module docstring).

    ``divisor``, ``lo``, ``hi``, ``multiple`` and ``whole``: the default pilot is
    max(trials // divisor, min(multiple · trials, whole)), clipped to [lo, hi] (``hi`` None:
    no upper clip; the subject bounds what it holds in memory). ``raw_cap``: most raw draws
    per side held in memory (None: the whole raw part). ``counted_selection``: the selection
    part of the pilot is drawn separately and counted as drawn (cheap for kernels), instead
    of being the tail of the raw draws. ``scale``: the pilot of as many audits at once (a
    stratified grid of rates), still within ``hi``.
    """

    divisor: int
    lo: int
    hi: int | None
    raw_cap: int | None
    counted_selection: bool
    scale: int = 1
    whole: int = 0
    multiple: int = 1

    def default_size(self, trials: int) -> int:
        """The pilot size when ``audit.pilot_trials`` is not set."""
        size = max(trials // self.divisor, min(self.multiple * trials, self.whole))
        one = max(self.lo, size if self.hi is None else min(size, self.hi))
        return one * self.scale if self.hi is None else max(one, min(one * self.scale,
                                                                     self.hi))


#: The model's pilot: a tenth of the main run in [10⁵, 10⁷] draws per side, 10⁵ of them held
#: raw (the attack's fit, the statistic's range), the rest counted by the kernels as drawn.
MODEL_PILOT = PilotRule(divisor=10, lo=100_000, hi=10_000_000, raw_cap=100_000,
                        counted_selection=True)
#: A black box's pilot: twice the main run's calls up to 2·10⁴ per side, 2·10⁴ from there to
#: 10⁵, a fifth of the budget beyond, at least 10³ (a pilot capped at 5·10⁴ loses most of the
#: power of a 10⁷-call audit; at 10⁴ main calls, a pilot of 10⁴ refutes the (Laplace,
#: Gaussian) against (Laplace, Laplace) release on 17 of 20 seeds with ``auto``, one of 2·10⁴
#: on 20 of 20); held raw, its second half chooses the region, so its size is bounded by
#: memory instead.
BLACK_BOX_PILOT = PilotRule(divisor=5, lo=1_000, hi=None, raw_cap=None,
                            counted_selection=False, whole=20_000, multiple=2)


def _fractions() -> tuple[float, ...]:
    return tuple(float(f) for f in np.arange(1, 9) / 8)


@dataclass(frozen=True)
class BatchCheckRule:
    """The check of a batched form that makes several releases in one library call
    (:mod:`audit.model.batch_check`): ``calls`` calls of the batched form on ``per_call``
    copies of one dataset, ``unbatched`` unbatched calls on it, three tests at a total
    ``alpha`` (Bonferroni), the permutation test stopped after ``exceedances`` permuted
    statistics at least the observed one (Besag & Clifford, 1991)."""

    alpha: float = 1e-6
    calls: int = 20
    per_call: int = 20
    unbatched: int = 400
    exceedances: int = 20

    def __post_init__(self) -> None:
        check_in_range("alpha", self.alpha, 0.0, 1.0, lo_closed=False, hi_closed=False)
        check_positive_int(self.calls, "calls", minimum=2)
        check_positive_int(self.per_call, "per_call", minimum=2)
        check_positive_int(self.unbatched, "unbatched", minimum=2)
        check_positive_int(self.exceedances, "exceedances")


@dataclass(frozen=True)
class OnlineRule:
    """How an online audit (``audit.mode = "online"``) draws and ranks: chunks of ``first``
    calls per side, ×``growth`` each, up to max(``cap``, trials/200); ``rank_alpha`` the level
    at which a budget run's first half ranks the fixed-sample bound's candidate regions (far
    below α: a guard against sparse tail regions that look best by chance)."""

    first: int = 10
    growth: float = 1.25
    cap: int = 1000
    rank_alpha: float = 1e-3

    def __post_init__(self) -> None:
        check_positive_int(self.first, "first")
        check_in_range("growth", self.growth, 1.0, np.inf, hi_closed=False)
        check_positive_int(self.cap, "cap")
        check_in_range("rank_alpha", self.rank_alpha, 0.0, 1.0, lo_closed=False,
                       hi_closed=False)

    def chunk_cap(self, trials: int) -> int:
        """The largest chunk of a run of ``trials`` calls per side."""
        return max(self.cap, trials // 200)


@dataclass(frozen=True)
class AuditPolicy:
    """Every statistical default of an audit (module docstring).

    Attributes
    ----------
    confidence : float
        Of every reported lower bound, in (0, 1) (``audit.confidence``).
    search_confidence : float
        Of a pair search's candidate scores (a ranking, not a result: the audit's own bound is
        at ``confidence`` on fresh calls). Lower ranks by noise: at 0.5 a region holding 3 of
        1,000 calls on one side and none on the other scores ln 3.9.
    guard_alpha : float
        The guard of a pilot's region choice: a candidate's numerator is taken at its
        Clopper–Pearson lower bound at this level on the pilot (the winner's curse of
        thousands of candidate regions).
    pessimism_sd : float
        The model's region choice moves each candidate's expected counts this many standard
        deviations against it.
    grid_quantiles : int
        Pilot quantiles a Bonferroni grid declares (thresholds; two directions each).
    claim_fractions : tuple of float
        A sequential audit tests these fractions of the claim at once (and the amplified
        claim), so a refutation below the claim is reported too.
    held_out_alpha : float
        ``auto``'s held-out comparison of candidate scores: each candidate's bound at this α
        (split over the two sides as every bound is).
    held_out_levels : int
        Thresholds of that comparison: quantiles of the pooled held-out scores.
    model_pilot, black_box_pilot : PilotRule
        The pilot rule of each target kind.
    model_attack, black_box_attack : str
        The default attack of each target kind (names of the ``audit.attacks`` group).
    amplified_binds : bool
        Whether an implementation's claim amplified by [RPS] Theorem 3.2 (MAR only) binds: an
        ε_lower above it fails the audit as one above the claim itself does
        (``python -m audit run``'s exit 1, ``assert_private``'s AssertionError).
    budget_test_share : float
        A sequential audit run to its budget (``stop = "budget"``) tests the claims and the
        estimation grid at this share of α each (anytime-valid), and bounds the whole run at
        the budget (a fixed-size sample: its stopping time is the budget) at the rest, in
        (0, 0.5).
    model_joint_bound, black_box_joint_bound : bool
        Offer the joint bound at δ = 0 (docs/THEORY.md §8.1b) to audits of that target kind:
        where a fixed audit's region choice predicts it at least as strong as the two
        intervals, the main run's numbers of calls per side are drawn Poisson(trials) and the
        region is bounded jointly. False: the two intervals always, with exactly ``trials``
        calls per side. Black boxes: on (the power of a claim's refutation). The model: off.
        Its audits are checked against exact ceilings, and a suite fails on any violation;
        the joint bound spends all of α, so on a region whose ratio is exactly e^ε (a Laplace
        tail) it exceeds ε_pair in about 5 % of audits (1,000 ``power_laplace`` audits: 4.9 %),
        where the two intervals' union bound leaves 0.2 %: a suite of model audits would
        print a chance violation in about one row in twenty.
    batch_check : BatchCheckRule
        The independence check an implementation audit runs, once per target, before it uses
        a batched form that makes several releases in one library call.
    online : OnlineRule
        The chunks and the ranking level of an online audit.
    """

    confidence: float = 0.95
    search_confidence: float = 0.95
    guard_alpha: float = 1e-3
    pessimism_sd: float = 1.0
    grid_quantiles: int = 41
    claim_fractions: tuple = field(default_factory=_fractions)
    held_out_alpha: float = 0.1
    held_out_levels: int = 64
    model_pilot: PilotRule = MODEL_PILOT
    black_box_pilot: PilotRule = BLACK_BOX_PILOT
    model_attack: str = "exact-lr"
    black_box_attack: str = "auto"
    amplified_binds: bool = True
    budget_test_share: float = 0.05
    model_joint_bound: bool = False
    black_box_joint_bound: bool = True
    batch_check: BatchCheckRule = field(default_factory=BatchCheckRule)
    online: OnlineRule = field(default_factory=OnlineRule)

    def __post_init__(self) -> None:
        for name in ("confidence", "search_confidence", "guard_alpha", "held_out_alpha"):
            check_in_range(name, getattr(self, name), 0.0, 1.0, lo_closed=False,
                           hi_closed=False)
        check_in_range("pessimism_sd", self.pessimism_sd, 0.0, np.inf, hi_closed=False)
        check_in_range("budget_test_share", self.budget_test_share, 0.0, 0.5,
                       lo_closed=False, hi_closed=False)
        check_positive_int(self.grid_quantiles, "grid_quantiles", minimum=2)
        check_positive_int(self.held_out_levels, "held_out_levels", minimum=2)
        check_bool(self.model_joint_bound, "model_joint_bound")
        check_bool(self.black_box_joint_bound, "black_box_joint_bound")
        fractions = np.asarray(self.claim_fractions, dtype=np.float64)
        if fractions.ndim != 1 or not fractions.size or np.any(fractions <= 0) \
                or np.any(fractions > 1):
            raise ValueError(f"claim_fractions must be fractions in (0, 1], got "
                             f"claim_fractions={self.claim_fractions!r}")
        for name in ("model_attack", "black_box_attack"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be an attack's name, got "
                                 f"{name}={getattr(self, name)!r}")

    def failing(self, violations, *, amplified: bool | None = None) -> list:
        """The violations (each with a ``kind``, a ``CeilingKind``) that fail an audit: every
        one, except one of the amplified claim where it does not bind (``amplified``, default
        :attr:`amplified_binds`)."""
        from audit.enums import CeilingKind

        binds = self.amplified_binds if amplified is None else bool(amplified)
        return [v for v in violations
                if binds or v.kind is not CeilingKind.AMPLIFIED_CLAIM]

    def joint_bound(self, *, black_box: bool) -> bool:
        """Whether the joint bound is offered to audits of this target kind."""
        return self.black_box_joint_bound if black_box else self.model_joint_bound

    def default_attack(self, *, black_box: bool) -> str:
        """The attack an audit of this target kind runs when none is named."""
        return self.black_box_attack if black_box else self.model_attack

    def pilot_rule(self, *, black_box: bool, settings: int = 1,
                   most: int | None = None) -> PilotRule:
        """The pilot rule of a target kind, for a run that bounds ``settings`` settings at once,
        clipped at ``most`` draws per side (a memory bound) when given."""
        rule = self.black_box_pilot if black_box else self.model_pilot
        if settings != 1:
            rule = dataclasses.replace(rule, scale=int(settings))
        if most is not None:
            rule = dataclasses.replace(rule, hi=int(most) if rule.hi is None
                                       else min(rule.hi, int(most)))
        return rule

    def pilot_size(self, trials: int, *, black_box: bool, settings: int = 1,
                   most: int | None = None) -> int:
        """Pilot draws (or calls) per side of a main run of ``trials`` (the one rule).

        Raises
        ------
        ValueError
            If ``trials`` or ``settings`` is not a positive integer.
        """
        check_positive_int(trials, "trials")
        check_positive_int(settings, "settings")
        return self.pilot_rule(black_box=black_box, settings=settings,
                               most=most).default_size(int(trials))


#: The policy every audit reads unless a caller passes its own.
DEFAULT_POLICY = AuditPolicy()
