"""How an audit spends its calls: the designs, each what it refuses and what it does.

Every design is a part (:mod:`audit.pipeline.parts`): it answers ``supports(parts)`` with
None or the one-line reason it cannot run with the other parts, and it is what the runner
calls at the points where the design changes the audit. The runner calls every design of an
audit at each of these points (a design that does not act there returns None), so a design
never needs a branch in the runner:

- :meth:`DesignPart.wrap`: the subject the target built, wrapped (a plug-in design's hook);
- :meth:`DesignPart.run`: the whole audit, for a design that spends its calls its own way (the
  online test, which draws no pilot); None lets the plain run go on;
- :meth:`DesignPart.monitor`: the test that watches the main run chunk by chunk (the sequential
  test of a claim);
- :meth:`DesignPart.claim_region` and :meth:`DesignPart.verdict`: the region a claim is tested on,
  chosen on the pilot, and the claim's verdict on the main run's counts (``[claim]``).

The built-in designs: :class:`PlainDesign` (always), :class:`SequentialDesign`,
:class:`OnlineDesign`, :class:`RepeatedDesign` (``[releases]``, whose k releases the subjects
draw), :class:`StratifiedDesign` (``[strata]``, whose subject the target builds) and
:class:`CurveClaimDesign`. A design a package registers under the ``audit.designs`` entry
point group (:class:`audit.interfaces.Design`: ``from_table``, ``supports``, ``wrap``,
``to_dict``) takes part as it is when it subclasses :class:`DesignPart` (then it may act at
every point above), else through :class:`RegisteredDesign` (it wraps the subject).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from audit.enums import AuditMode, CeilingKind, MaskRegime, Selection
from audit.estimation import policy as estimation_policy
from audit.estimation.curve_claims import (
    CurveClaimResult,
    choose_claim_region,
    choose_claim_region_by_model,
    curve_claim_bound,
)
from audit.estimation.online import OnlineMonitor
from audit.estimation.regions import Region
from audit.estimation.sequential import SequentialMonitor
from audit.interfaces import Subject
from audit.pipeline.progress import progress_bar
from audit.statistics import SampleCounts

if TYPE_CHECKING:
    from audit.interfaces import Bound, Design, Monitor
    from audit.interfaces import PartsLike as AuditParts
    from audit.protocols import Pilot, Score
    from audit.statistics import Statistic

__all__ = ["DesignPart", "OwnRun", "Scored", "RegisteredDesign", "PlainDesign", "SequentialDesign",
           "OnlineDesign", "RepeatedDesign", "StratifiedDesign", "CurveClaimDesign", "designs_of",
           "SEQUENTIAL_NEEDS", "STRATA_NEEDS", "ONLINE_NEEDS"]

SEQUENTIAL_NEEDS = ("audit.mode='sequential' tests an implementation's claim: it needs an "
                    "[implementation] table")
STRATA_NEEDS = ("[strata] stratifies the masks of an implementation audit: it needs an "
                "[implementation] table")
ONLINE_NEEDS = ("audit.mode='online' tests an implementation's claim: it needs an "
                "[implementation] table")


@dataclass(frozen=True, eq=False)
class Scored:
    """The attack's ``score`` and the ``statistic`` fitted on the pilot, as the designs read
    them: each bin's score (:attr:`bin_scores`) is computed on first use, so a run whose
    designs read none computes none."""

    statistic: Statistic
    score: Score

    @cached_property
    def bin_scores(self) -> np.ndarray:
        return self.statistic.bin_scores(self.score)


@dataclass(frozen=True, eq=False)
class OwnRun:
    """What a design that spends its calls its own way (:meth:`DesignPart.run`) hands the
    runner for the result: the bound, the calls per side made, and how the attack and the
    selection are reported."""

    bound: Bound
    trials: int
    attack: str
    selection: str
    attack_note: str
    pilot_trials: int = 0


class DesignPart:
    """What the runner asks every design of an audit; each member's default is "nothing to
    do here", so a design overrides only the points where it acts."""

    #: whether :meth:`monitor` may watch the main run (then the runner counts it in the
    #: chunks a monitor sees, never as a Poissonised run of a random size)
    watches_main_run = False

    def supports(self, parts: AuditParts) -> str | None:
        """None, or why this design cannot run with the other ``parts`` (one line naming
        the config keys), answered before any work."""
        return None

    def wrap(self, subject: Subject) -> Subject:
        """The subject the audit runs, given the one the target built (and the designs
        before this one wrapped)."""
        return subject

    def run(self, subject: Subject, seed: int, progress: bool) -> OwnRun | None:
        """The audit's calls and bound, from the main run's ``seed``, for a design that
        spends its calls its own way; None: the plain run (pilot, main run, bound)."""
        return None

    def monitor(self, subject: Subject, region: Region, scored: Scored) -> Monitor | None:
        """The test that watches the main run, on the pilot's ``region`` of the ``scored``
        statistic's bins; None: no test watches."""
        return None

    def claim_region(self, subject: Subject, scored: Scored,
                     selection: SampleCounts | None, fitted: Pilot) -> Region | None:
        """The region a claim of this design is tested on, chosen on the pilot (the counted
        ``selection`` part, else the ``fitted`` part, else the exact laws); None: no claim."""
        return None

    def verdict(self, subject: Subject, scored: Scored, region: Region,
                counts: SampleCounts) -> CurveClaimResult | None:
        """The claim's verdict on the main run's counts in ``region``; None: no claim."""
        return None


@dataclass(frozen=True, eq=False)
class RegisteredDesign(DesignPart):
    """A design a package registers (``audit.designs``), as a part: its own ``supports``
    and ``wrap``; it acts nowhere else."""

    design: Design

    def supports(self, parts: AuditParts) -> str | None:
        return self.design.supports(parts)

    def wrap(self, subject: Subject) -> Subject:
        return self.design.wrap(subject)


@dataclass(frozen=True)
class PlainDesign(DesignPart):
    """One pilot, one fixed main run, one bound: every audit's design unless another one
    changes how its calls are spent (the runner's own run)."""


@dataclass(frozen=True)
class SequentialDesign(DesignPart):
    """``audit.mode = "sequential"``: the main run feeds an anytime-valid test of the claim
    chunk by chunk (a stratified audit tests at looks instead)."""

    watches_main_run = True

    def supports(self, parts: AuditParts) -> str | None:
        if not parts.black_box:
            return SEQUENTIAL_NEEDS
        if parts.config.audit.selection is Selection.GRID:
            return ("audit.mode='sequential' tests one region declared from the pilot: "
                    "audit.selection must be 'pilot' or 'auto', got audit.selection='grid'")
        return None

    def monitor(self, subject: Subject, region: Region, scored: Scored) -> Monitor | None:
        if subject.tests_at_looks:
            return None
        au = subject.config.audit
        return SequentialMonitor(region.mask(scored.bin_scores), region.direction, region.threshold,
                                 _claim_grid(subject), subject.delta, au.alpha, stop=au.stop,
                                 budget_share=au.policy.budget_test_share)


def _claim_grid(subject: Subject) -> np.ndarray:
    """The claims a sequential or online test bets against: the subject's claim and its
    amplified claim, spread by the policy."""
    claims = {c.kind: c.value for c in subject.ceilings}
    return estimation_policy.sequential_claims(claims[CeilingKind.CLAIM],
                                               claims.get(CeilingKind.AMPLIFIED_CLAIM),
                                               policy=subject.config.audit.policy)


@dataclass(frozen=True)
class OnlineDesign(DesignPart):
    """``audit.mode = "online"``: no pilot; every chunk of calls is bet on a threshold region
    of the output chosen from the calls before it (:mod:`audit.estimation.online`)."""

    #: the attacks whose score is the output itself (what the online regions threshold)
    ATTACKS = ("auto", "threshold")

    def supports(self, parts: AuditParts) -> str | None:
        au = parts.config.audit
        if not parts.black_box:
            return ONLINE_NEEDS
        if au.attack is not None and au.attack not in self.ATTACKS:
            return (f"audit.mode='online' chooses threshold regions of the output from the "
                    f"run's own past calls (no pilot to fit an attack on): audit.attack must "
                    f"be 'threshold' or 'auto' (or unset), got audit.attack={au.attack!r}")
        if au.selection is not Selection.AUTO:
            return (f"audit.mode='online' chooses its regions from past calls, with no pilot: "
                    f"audit.selection must be 'auto' (unset), got "
                    f"audit.selection={au.selection.value!r}")
        if parts.config.releases is not None:
            return ("audit.mode='online' thresholds one scalar output per call: [releases] "
                    "(k outputs per trial) is not supported")
        if parts.config.strata is not None:
            return ("audit.mode='online' and [strata] are exclusive: a stratified audit "
                    "tests at looks of its own (audit.mode='sequential' with strata.looks)")
        if au.checkpoint is not None:
            return ("audit.mode='online' keeps no checkpoint (its regions depend on every "
                    "earlier call): remove audit.checkpoint")
        return None

    def run(self, subject: Subject, seed: int, progress: bool) -> OwnRun:
        """No pilot; chunks of calls of growing size (the policy's
        :class:`audit.policy.OnlineRule`: 10 per side first, ×1.25 each, up to max(1,000,
        trials/200)), each bet on regions chosen from the calls before it
        (:class:`audit.estimation.online.OnlineMonitor`), each drawn from its own child of
        the main run's seed."""
        au = subject.config.audit
        if not subject.is_scalar:
            raise ValueError("audit.mode='online' thresholds a scalar output: the "
                             "implementation returns a vector (use audit.mode='sequential')")
        rule = au.policy.online
        monitor = OnlineMonitor(_claim_grid(subject), subject.delta, au.alpha, stop=au.stop,
                                budget=au.trials, budget_share=au.policy.budget_test_share,
                                rank_alpha=rule.rank_alpha)
        streams = np.random.SeedSequence(seed)
        cap = rule.chunk_cap(au.trials)
        size, done = float(rule.first), 0
        bar = progress_bar(au.trials, f"{subject.config.name}: online", progress)
        try:
            while done < au.trials:
                k = min(int(size), au.trials - done)
                child = streams.spawn(1)[0]
                draws = subject.draw(k, int(child.generate_state(1, np.uint64)[0] >> 1))
                done += k
                if bar is not None:
                    bar.update(k)
                if monitor.update(draws.p, draws.q):
                    break
                size = min(size * rule.growth, cap)
        finally:
            if bar is not None:
                bar.close()
        return OwnRun(monitor.bound(), done, attack="threshold", selection="online",
                      attack_note="thresholds the output, its regions chosen from the run's "
                                  "own past calls (no pilot)")


@dataclass(frozen=True)
class RepeatedDesign(DesignPart):
    """``[releases]``: k releases per trial from one masked table (shared masks) or each from
    a table masked anew (fresh masks); the subjects draw them (what is computed is
    :mod:`audit.pipeline.repeated`'s). It nests in ``[strata]`` with shared masks (the strata
    are those of the one mask the k releases share)."""

    def supports(self, parts: AuditParts) -> str | None:
        from audit.model.repeated import MAX_RELEASES
        from audit.theory.pld import MAX_PLD_RELEASES

        rel = parts.config.releases
        if parts.black_box and rel.count > MAX_RELEASES:
            return (f"releases.count must be at most {MAX_RELEASES} for an implementation "
                    f"audit (each trial calls it k times), got releases.count={rel.count}")
        if (not parts.black_box and rel.masks is MaskRegime.FRESH
                and rel.count > MAX_PLD_RELEASES):
            return (f"releases.count must be at most {MAX_PLD_RELEASES} for a model audit "
                    f"with fresh masks (its bound is a PLD composition), got {rel.count}")
        if rel.masks is MaskRegime.PERSISTENT:
            return _persistent_refusal(parts)
        return None


def _persistent_refusal(parts: AuditParts) -> str | None:
    """Persistent masks (docs/THEORY.md §10.7): a model audit of a Gaussian or Laplace scalar
    release under record-level MCAR, k ≤ 12 (where its bracket exists)."""
    from audit.theory.persistent import persistent_refusal

    cfg = parts.config
    sc, kind = cfg.scenario, cfg.missingness.kind
    if parts.black_box:
        return ("releases.masks='persistent' is audited on the model only (an implementation "
                "audit re-masks per call: shared or fresh), got it with [implementation]")
    if not (kind == "mcar-row" or (kind == "mcar-iid" and sc.d == 1)):
        return ("releases.masks='persistent' needs record-level missingness (the record's "
                "mask kept or redrawn as a whole): missingness.kind must be 'mcar-row' (or "
                f"'mcar-iid' with scenario.d = 1), got missingness.kind={kind!r} with "
                f"scenario.d={sc.d}")
    dim = cfg.components()[1].output_dim(sc.d)
    if dim != 1:
        return (f"releases.masks='persistent' needs a scalar release, got scenario.query="
                f"{sc.query!r} with output dimension {dim}")
    return persistent_refusal(sc.noise, cfg.releases.count, noise_name="scenario.noise",
                              releases_name="releases.count")


@dataclass(frozen=True)
class StratifiedDesign(DesignPart):
    """``[strata]``: the masks drawn by stratum, one run bounding every rate of a grid (the
    implementation target builds the stratified subject)."""

    def supports(self, parts: AuditParts) -> str | None:
        from audit.estimation.strata import MAX_ENTRIES

        cfg = parts.config
        strata, sc = cfg.strata, cfg.scenario
        if not parts.black_box:
            return STRATA_NEEDS
        mech = cfg.components()[0]
        if mech.kind != "mcar-iid":
            return (f"strata.by='missing-count' with a grid of rates needs "
                    f"missingness.kind='mcar-iid' (its strata do not depend on the rate; other "
                    f"mechanisms need one audit per parameter), got missingness.kind="
                    f"{mech.kind!r}")
        rate = mech.params().get("rate")
        if rate not in strata.rates:
            return (f"strata.rates must hold the config's missingness.rate={rate!r} (the rate "
                    f"the result reports), got strata.rates={list(strata.rates)}")
        if sc.n * sc.d > MAX_ENTRIES:
            return (f"strata.by='missing-count' needs at most {MAX_ENTRIES} entries per "
                    f"dataset ({MAX_ENTRIES + 1} strata), got scenario.n * scenario.d = "
                    f"{sc.n * sc.d}")
        if parts.has(RepeatedDesign) and cfg.releases.masks is not MaskRegime.SHARED:
            return ("[strata] stratifies the one mask a table's k releases share: with "
                    "[releases] it needs releases.masks='shared', got releases.masks="
                    f"{cfg.releases.masks.value!r} (fresh masks are drawn per release)")
        if strata.looks is not None and cfg.audit.mode is not AuditMode.SEQUENTIAL:
            return (f"strata.looks sets the looks of a sequential run: it needs "
                    f"audit.mode='sequential', got strata.looks={strata.looks} in fixed mode")
        if cfg.audit.selection is Selection.GRID:
            return ("[strata] bounds one region chosen on the pilot: audit.selection must be "
                    "'pilot' or 'auto', got audit.selection='grid'")
        return None


@dataclass(frozen=True)
class CurveClaimDesign(DesignPart):
    """``[claim]``: a curve claim tested on the plain main run's counts, on a region chosen
    on the pilot (:mod:`audit.estimation.curve_claims`); it spends no calls of its own. Its
    bounds need a main run of a size fixed in advance, counted as one histogram per side."""

    def supports(self, parts: AuditParts) -> str | None:
        cfg = parts.config
        if cfg.audit.mode is not AuditMode.FIXED:
            return (f"[claim] is tested on a main run of fixed size: it needs "
                    f"audit.mode='fixed', got audit.mode={cfg.audit.mode.value!r}")
        if cfg.strata is not None:
            return ("[claim] is tested on one histogram per side: it cannot run with "
                    "[strata] (counts by stratum), got both")
        return None

    def claim_region(self, subject: Subject, scored: Scored,
                     selection: SampleCounts | None, fitted: Pilot) -> Region:
        """Chosen on the pilot's counted part, else on the part the attack was fitted on,
        else (a model audit that draws no pilot: model selection) from the exact laws: each
        independent of the main run."""
        cfg, statistic, scores = subject.config, scored.statistic, scored.bin_scores
        family, au = cfg.claim.family(), cfg.audit
        counts = selection
        if counts is None and len(fitted.p):
            counts = statistic.pilot_counts(fitted)
        if counts is None:
            laws = subject.laws  # (a model audit: model selection needs them)
            return choose_claim_region_by_model(laws.P, laws.Q, statistic.edges, scores,
                                                family, trials=au.trials, alpha=au.alpha,
                                                policy=au.policy)
        return choose_claim_region(counts.counts_p, counts.counts_q, scores, family,
                                   trials=au.trials, alpha=au.alpha, policy=au.policy)

    def verdict(self, subject: Subject, scored: Scored, region: Region,
                counts: SampleCounts) -> CurveClaimResult:
        cfg = subject.config
        return curve_claim_bound(counts.counts_p, counts.counts_q, scored.bin_scores, region,
                                 cfg.claim.family(), subject.delta, cfg.audit.alpha)


def designs_of(cfg) -> tuple[DesignPart, ...]:
    """The built-in designs the config's settings and tables name (the plain design first),
    then its registered designs, in the order of its tables: one that subclasses
    :class:`DesignPart` as it is (it may act at any point of the run), any other through
    :class:`RegisteredDesign` (it wraps the subject)."""
    out: list[DesignPart] = [PlainDesign()]
    if cfg.audit.mode is AuditMode.SEQUENTIAL:
        out.append(SequentialDesign())
    if cfg.audit.mode is AuditMode.ONLINE:
        out.append(OnlineDesign())
    if cfg.releases is not None:
        out.append(RepeatedDesign())
    if cfg.strata is not None:
        out.append(StratifiedDesign())
    if cfg.claim is not None:
        out.append(CurveClaimDesign())
    return tuple(out) + tuple(d if isinstance(d, DesignPart) else RegisteredDesign(d)
                              for d in cfg.designs)
