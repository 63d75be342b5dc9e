"""An audit's parts and what each supports: the Target, the PairSource and the Designs.

An audit is built from three kinds of part, each from its own config table into a frozen
object, and handed to the one runner:

- the **Target**, what is called: the model (``[scenario]`` + ``[missingness]``: exact laws,
  the engine) or an implementation run as a black box (``[implementation]``, or an
  implementation object handed to the runner);
- the **PairSource**, where the neighbours come from: given (``[pair]``), the worst case for
  the query (the default), or searched by calling a black box (``[search]``);
- the **Designs** (:mod:`audit.pipeline.designs`), how calls are spent: the plain fixed run
  (always), the sequential test (``audit.mode = "sequential"``), the online test with no
  pilot (``audit.mode = "online"``), k releases from one table (``[releases]``), mask strata
  (``[strata]``), a curve claim (``[claim]``), and any design a package registers under the
  ``audit.designs`` entry-point group (:func:`available_designs`: a class with a config
  ``table``, ``from_table``, ``supports``, ``wrap`` and ``to_dict``; :class:`Design`).

Which combinations exist is decided in one place: every part answers ``supports(parts)`` with
None or the reason it cannot run with the others (the one-line error), and
:func:`check_parts` raises the first reason before any work — for a config (the config's
loader, with the target kind its tables name) and again for a subject (the factory and the
runner, once the target is known). No other module refuses a combination.

What a part does is asked of the part too: the factory (:mod:`audit.pipeline.factory`) has
the target build its subject and every design wrap it, and the runner calls every design at
the points where a design acts (its own run, a monitor of the main run, a claim's region and
verdict; :class:`audit.pipeline.designs.DesignPart`), so adding a design edits neither the
runner, nor the factory, nor the command line: ``tests/pipeline/test_parts.py`` registers a
test-only design through a temporary distribution's entry point and runs it through
``run_audit`` and ``python -m audit run``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from audit._plugins import entry_points_of
from audit.enums import PairFamily, Selection
from audit.interfaces import ConfigLike, Design, Part
from audit.pipeline.designs import (
    ONLINE_NEEDS,
    SEQUENTIAL_NEEDS,
    STRATA_NEEDS,
    CurveClaimDesign,
    DesignPart,
    OnlineDesign,
    PlainDesign,
    RegisteredDesign,
    RepeatedDesign,
    SequentialDesign,
    StratifiedDesign,
    designs_of,
)

#: an ``audit.pipeline.config.AuditConfig`` (not imported: the config imports this module),
#: as the parts read it
AuditConfig = ConfigLike

__all__ = ["DESIGN_ENTRY_POINT_GROUP", "Design", "AuditParts", "Part", "available_designs",
           "design_class", "parts_of", "check_parts", "check_config", "refusals", "target_part",
           "pair_source", "designs_of", "ModelTarget", "ImplementationTarget",
           "GivenPair", "WorstCasePair", "SearchedPair", "DesignPart", "PlainDesign",
           "SequentialDesign", "OnlineDesign", "RepeatedDesign", "StratifiedDesign",
           "CurveClaimDesign", "RegisteredDesign"]

#: the entry-point group designs are registered under (``name = "package.module:Class"``, the
#: name being the design's config table)
DESIGN_ENTRY_POINT_GROUP = "audit.designs"


@dataclass(frozen=True, eq=False)
class AuditParts:
    """The parts of one audit: the config, the target, the pair source and every design
    (built-in, then registered, in order; each a
    :class:`~audit.pipeline.designs.DesignPart`)."""

    config: AuditConfig
    target: Part
    pairs: Part
    designs: tuple[DesignPart, ...]

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
#: The answers of parts that only a black box can run (a config without ``[implementation]``
#: may still be handed one: :func:`audit.pipeline.parts.check_config`).
NEEDS_BLACK_BOX = frozenset({NEEDS_IMPLEMENTATION, SEQUENTIAL_NEEDS, STRATA_NEEDS,
                             ONLINE_NEEDS})


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
    return AuditParts(cfg, target_part(black_box), pair_source(cfg), designs_of(cfg))


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
