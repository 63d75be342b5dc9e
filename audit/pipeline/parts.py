"""An audit's parts and what each supports: the Target, the PairSource and the Designs.

An audit is built from three kinds of part, each from its own config table into a frozen
object, and handed to the one runner:

- the **Target**, what is called: the model (``[scenario]`` + ``[missingness]``: exact laws,
  the engine) or an implementation run as a black box (``[implementation]``, or an
  implementation object handed to the runner);
- the **PairSource**, where the neighbours come from: given (``[pair]``), the worst case for
  the query (the default), or searched by calling a black box (``[search]``);
- the **Designs**, how calls are spent: the plain fixed run (always), the sequential test
  (``audit.mode = "sequential"``), the online test with no pilot (``audit.mode = "online"``),
  k releases from one table (``[releases]``), mask strata
  (``[strata]``), and any design a package registers under the ``audit.designs`` entry-point
  group (:func:`available_designs`: a class with a config ``table``, ``from_table``,
  ``supports``, ``wrap`` and ``to_dict``; :class:`Design`).

Which combinations exist is decided in one place: every part answers ``supports(parts)`` with
None or the reason it cannot run with the others (the one-line error), and
:func:`check_parts` raises the first reason before any work — for a config (the config's
loader, with the target kind its tables name) and again for a subject (the factory and the
runner, once the target is known). No other module refuses a combination.

A plug-in design is applied by :func:`audit.pipeline.factory.make_subject` to the subject the
target, the pair and the built-in designs give (``design.wrap(subject)``, in the order of the
config's tables), so adding one edits neither the runner, nor the factory, nor the command
line: ``tests/pipeline/test_parts.py`` registers a test-only design through a temporary
distribution's entry point and runs it through ``run_audit`` and ``python -m audit run``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audit._plugins import entry_points_of
from audit.enums import AuditMode, MaskRegime, PairFamily, Selection
from audit.interfaces import Design, Part

#: an ``audit.pipeline.config.AuditConfig`` (not imported: the config imports this module)
AuditConfig = Any

__all__ = ["DESIGN_ENTRY_POINT_GROUP", "Design", "AuditParts", "Part", "available_designs",
           "design_class", "parts_of", "check_parts", "check_config", "refusals", "target_part",
           "pair_source", "built_in_designs", "ModelTarget", "ImplementationTarget",
           "GivenPair", "WorstCasePair", "SearchedPair", "PlainDesign", "SequentialDesign",
           "RepeatedDesign", "StratifiedDesign", "CurveClaimDesign"]

#: the entry-point group designs are registered under (``name = "package.module:Class"``, the
#: name being the design's config table)
DESIGN_ENTRY_POINT_GROUP = "audit.designs"


@dataclass(frozen=True, eq=False)
class AuditParts:
    """The parts of one audit, as their ``supports`` answers see them: the config, the target,
    the pair source and every design (built-in and plug-in, in order)."""

    config: AuditConfig
    target: Part
    pairs: Part
    designs: tuple

    @property
    def black_box(self) -> bool:
        return isinstance(self.target, ImplementationTarget)

    def has(self, kind: type) -> bool:
        """Whether one of the designs is of ``kind``."""
        return any(isinstance(d, kind) for d in self.designs)


# --------------------------------------------------------------------------- targets
_CUDA_NEEDS_LAWS = ("audit.backend = 'cuda' applies to white-box audits; an implementation "
                    "audit calls the implementation on the CPU")


@dataclass(frozen=True)
class ModelTarget:
    """The model's release: exact laws, the engine on any backend, an attack whose scores the
    engine counts (``engine_counted``: the white-box ones, the density ratio, logistic
    regression, the output threshold)."""

    def supports(self, parts: AuditParts) -> str | None:
        from audit.protocols import engine_attacks, load_attack

        cfg = parts.config
        reason = reading_reason(parts)
        if reason is not None:
            return reason
        name = cfg.audit.attack_for(black_box=False)
        attack = load_attack(name)
        if not attack.engine_counted:
            return (f"a model audit counts its runs with the engine, which counts the scores of "
                    f"{', '.join(engine_attacks())} only; audit.attack={name!r} scores with "
                    "projections an implementation audit counts: choose one of those, or "
                    "audit the release as an implementation")
        if cfg.audit.selection is not Selection.MODEL:
            return None
        if not attack.white_box:
            return (f"audit.selection='model' needs a white-box attack (the region is chosen "
                    f"from the exact laws), got audit.attack={name!r}; use 'pilot' or 'grid'")
        _, query = cfg.components()
        dim = query.output_dim(cfg.scenario.d)
        if dim != 1:
            return (f"audit.selection='model' needs a scalar output, got query "
                    f"{cfg.scenario.query!r} with output dimension {dim}; use 'pilot' or "
                    "'grid'")
        return None


@dataclass(frozen=True)
class ImplementationTarget:
    """An implementation called as a black box: black-box attacks only, on the CPU."""

    def supports(self, parts: AuditParts) -> str | None:
        from audit.protocols import black_box_attacks, load_attack

        au = parts.config.audit
        reason = reading_reason(parts)
        if reason is not None:
            return reason
        if au.backend == "cuda":
            return _CUDA_NEEDS_LAWS
        name = au.attack_for(black_box=True)
        if load_attack(name).white_box:
            return (f"an implementation is a black box: audit.attack must be a black-box "
                    f"attack ({', '.join(black_box_attacks())}), got audit.attack={name!r}")
        if au.selection is Selection.MODEL:
            return (f"audit.selection='model' needs a white-box attack (the region is chosen "
                    f"from the exact laws), got audit.attack={name!r}; use 'pilot' or 'grid'")
        if au.delta is not None:
            return (f"audit.delta sets the δ of the model's audited claim; an implementation is "
                    f"audited at the δ of its own claim (implementation.delta, or the "
                    f"adapter's), got audit.delta={au.delta!r}: remove it")
        return None


def reading_reason(parts: AuditParts) -> str | None:
    """Why an audit refuses ``scenario.domain``/``na_value``/``na_category``/``count`` (the
    setting of ``bound --config``): audits simulate entries in [−bound, bound] with NA read as
    0."""
    sc = parts.config.scenario
    if sc.default_reading:
        return None
    return ("scenario.domain, scenario.na_value, scenario.na_category and scenario.count "
            "describe the setting of `bound --config` (the accountant); an audit reads entries "
            f"in [-bound, bound] with a missing entry as 0, got scenario.domain={sc.domain!r}, "
            f"scenario.na_value={sc.na_value!r}, scenario.na_category={sc.na_category!r}, "
            f"scenario.count={sc.count!r}: remove them to audit")


def target_part(black_box: bool) -> Part:
    """The target of an audit: a black box, or the model."""
    return ImplementationTarget() if black_box else ModelTarget()


# --------------------------------------------------------------------------- pair sources
#: Why an audit of the model refuses ``[search]`` (its own worst-case search is exact).
NEEDS_IMPLEMENTATION = ("[search] searches the pair of a black box: it needs an implementation "
                        "(a model audit's pair search is exact)")
_SEQUENTIAL_NEEDS = ("audit.mode='sequential' tests an implementation's claim: it needs an "
                     "[implementation] table")
_STRATA_NEEDS = ("[strata] stratifies the masks of an implementation audit: it needs an "
                 "[implementation] table")
_ONLINE_NEEDS = ("audit.mode='online' tests an implementation's claim: it needs an "
                 "[implementation] table")
#: The answers of parts that only a black box can run (a config without ``[implementation]``
#: may still be handed one: :func:`audit.pipeline.parts.check_config`).
NEEDS_BLACK_BOX = frozenset({NEEDS_IMPLEMENTATION, _SEQUENTIAL_NEEDS, _STRATA_NEEDS,
                             _ONLINE_NEEDS})


@dataclass(frozen=True)
class GivenPair:
    """The pair of ``[pair]``: the neighbours a black box is called on (the model's pair is
    the exact worst case of its setting, so a model audit refuses one)."""

    def supports(self, parts: AuditParts) -> str | None:
        if parts.config.search is not None:
            return "[search] and [pair] are exclusive: a given pair skips the search"
        if not parts.black_box:
            return ("[pair] gives the neighbours of an implementation audit; a model audit "
                    "searches its exact worst-case pair (remove [pair], or audit the release "
                    "as an implementation)")
        return None


@dataclass(frozen=True)
class WorstCasePair:
    """The worst-case search for the query (exact laws for the model; the ``[scenario]``
    release as the model that ranks candidates for a black box)."""

    def supports(self, parts: AuditParts) -> str | None:
        return None


@dataclass(frozen=True)
class SearchedPair:
    """The pair found by calling a black box (``[search]``, :mod:`audit.pipeline.search`)."""

    def supports(self, parts: AuditParts) -> str | None:
        cfg = parts.config
        if not parts.black_box:
            return NEEDS_IMPLEMENTATION
        if parts.has(StratifiedDesign):
            return ("[search] with [strata] is not supported: search the pair first, then "
                    "stratify its audit with [pair]")
        if PairFamily.TESTER in cfg.search.families and cfg.scenario.n != 1:
            return (f"search.families 'tester' needs a one-record dataset (its record is the "
                    f"query vector): scenario.n must be 1, got n={cfg.scenario.n}")
        if cfg.search.data is not None:
            from audit.model.pair_families import user_table_reason

            sc = cfg.scenario
            return user_table_reason(cfg.search.data, sc.n, sc.d, sc.bound)
        return None


def pair_source(cfg: AuditConfig) -> Part:
    """Where the config's neighbours come from."""
    if cfg.pair is not None:
        return GivenPair()
    return SearchedPair() if cfg.search is not None else WorstCasePair()


# --------------------------------------------------------------------------- designs
@dataclass(frozen=True)
class PlainDesign:
    """One pilot, one fixed main run, one bound: every audit's design unless another one
    changes how its calls are spent."""

    def supports(self, parts: AuditParts) -> str | None:
        return None


@dataclass(frozen=True)
class SequentialDesign:
    """``audit.mode = "sequential"``: the main run feeds an anytime-valid test of the claim
    chunk by chunk (a stratified audit tests at looks instead)."""

    def supports(self, parts: AuditParts) -> str | None:
        if not parts.black_box:
            return _SEQUENTIAL_NEEDS
        if parts.config.audit.selection is Selection.GRID:
            return ("audit.mode='sequential' tests one region declared from the pilot: "
                    "audit.selection must be 'pilot' or 'auto', got audit.selection='grid'")
        return None


@dataclass(frozen=True)
class OnlineDesign:
    """``audit.mode = "online"``: no pilot; every chunk of calls is bet on a threshold region
    of the output chosen from the calls before it (:mod:`audit.estimation.online`)."""

    #: the attacks whose score is the output itself (what the online regions threshold)
    ATTACKS = ("auto", "threshold")

    def supports(self, parts: AuditParts) -> str | None:
        au = parts.config.audit
        if not parts.black_box:
            return _ONLINE_NEEDS
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


@dataclass(frozen=True)
class RepeatedDesign:
    """``[releases]``: k releases per trial from one masked table (shared masks) or each from
    a table masked anew (fresh masks); what it computes is
    :mod:`audit.pipeline.repeated`'s. It nests in ``[strata]`` with shared masks (the
    strata are those of the one mask the k releases share)."""

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
    """Persistent masks (docs/THEORY.md §10.7): a model audit of a Gaussian scalar release
    under record-level MCAR, k ≤ 12 (where its bracket exists)."""
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
class StratifiedDesign:
    """``[strata]``: the masks drawn by stratum, one run bounding every rate of a grid."""

    def supports(self, parts: AuditParts) -> str | None:
        from audit.estimation.strata import MAX_ENTRIES

        cfg = parts.config
        strata, sc = cfg.strata, cfg.scenario
        if not parts.black_box:
            return _STRATA_NEEDS
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
class CurveClaimDesign:
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


def built_in_designs(cfg: AuditConfig) -> tuple:
    """The built-in designs the config's settings and tables name (the plain design first)."""
    out: list = [PlainDesign()]
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
    return tuple(out)


#: the config tables of the built-in parts (no registered design may take one of them)
RESERVED_TABLES = frozenset({"name", "scenario", "missingness", "audit", "implementation",
                             "pair", "releases", "strata", "search", "claim"})


def available_designs() -> dict[str, Callable]:
    """The plug-in designs registered under ``audit.designs``, by config table (entry points
    loaded lazily: a broken plug-in fails only the configs that name its table)."""
    return {name: ep for name, ep in entry_points_of(DESIGN_ENTRY_POINT_GROUP).items()
            if name not in RESERVED_TABLES}


def design_class(table: str, registered: dict | None = None) -> type:
    """The design class registered for config table ``table`` (among ``registered``, the
    :func:`available_designs` a caller already read; default: read them now).

    Raises
    ------
    ValueError
        If none is, or the registered object has no ``from_table``/``supports``/``wrap``.
    """
    eps = available_designs() if registered is None else registered
    if table not in eps:
        raise ValueError(f"no design is registered for the table [{table}] (registered: "
                         f"{', '.join(sorted(eps)) or 'none'})")
    try:
        cls = eps[table].load()
    except Exception as exc:  # noqa: BLE001 - a plug-in's import error, as one line
        raise ValueError(f"the design registered for [{table}] cannot be loaded: {exc}") \
            from None
    missing = [m for m in ("from_table", "supports", "wrap", "to_dict")
               if not callable(getattr(cls, m, None))]
    if missing:
        raise ValueError(f"the design registered for [{table}] ({cls!r}) lacks "
                         f"{', '.join(missing)}")
    return cls


def parts_of(cfg: AuditConfig, *, black_box: bool) -> AuditParts:
    """The parts of an audit of ``cfg`` on a target of that kind."""
    return AuditParts(cfg, target_part(black_box), pair_source(cfg),
                      built_in_designs(cfg) + tuple(cfg.designs))


def refusals(parts: AuditParts) -> list[str]:
    """Every part's reason not to run with the others (empty: the combination runs): the
    target's, the pair source's, then each design's, in order."""
    answers = [parts.target.supports(parts), parts.pairs.supports(parts)]
    answers += [d.supports(parts) for d in parts.designs]
    return [a for a in answers if a]


def check_config(cfg: AuditConfig) -> None:
    """Refuse, before any work, the combination of parts no target of this config can run: a
    config with ``[implementation]`` audits a black box; one without may audit the model, or
    a black box handed to the runner (the factory then asks the parts again, with the target
    known), so it is refused only when both refuse, with the model's own reason if it has
    one."""
    black = refusals(parts_of(cfg, black_box=True))
    if names_black_box(cfg):
        if black:
            raise ValueError(black[0])
        return
    model = refusals(parts_of(cfg, black_box=False))
    if model and black:
        raise ValueError(next((a for a in model if a not in NEEDS_BLACK_BOX), black[0]))


def names_black_box(cfg: AuditConfig) -> bool:
    """Whether ``cfg`` names the black box it audits (an ``[implementation]`` table): what
    the search's check asks before calling one (a config without may still be handed one)."""
    return cfg.implementation is not None


def check_parts(cfg: AuditConfig, *, black_box: bool) -> AuditParts:
    """The parts of ``cfg``'s audit, refused with the first reason before any work.

    Raises
    ------
    ValueError
        The first part's answer (one line naming the keys).
    """
    parts = parts_of(cfg, black_box=black_box)
    reasons = refusals(parts)
    if reasons:
        raise ValueError(reasons[0])
    return parts
