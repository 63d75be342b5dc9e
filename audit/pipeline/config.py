"""TOML configuration of one audit: schema, defaults and validation.

A config has three tables (README, "Config schema"):

``[scenario]``
    ``mechanism`` ("laplace" | "gaussian"), ``epsilon`` (> 0), ``delta`` (Gaussian only, in
    (0, 1)), ``calibration`` ("classical" | "analytic", Gaussian only), ``query`` (a name
    from :func:`audit.model.queries.make_query`), ``d`` (features), ``n`` (records),
    ``bound`` (B), and an optional ``[scenario.query_params]`` table.
``[missingness]``
    ``kind`` (a name from :func:`audit.model.missingness.make_missingness`) and that kind's own
    parameters (``rate`` for ``mcar-iid``; ``observed`` and ``p_star`` for ``mcar-fixed``; …).
``[audit]``
    ``trials`` (per side), ``pilot_trials``, ``seed``, ``confidence``, ``attack``, ``delta``
    (the δ of the audited (ε, δ) claim), ``bins``, ``selection``, ``jobs``, ``checkpoint``.

Unknown keys and out-of-range values raise ``ValueError`` naming the key, before any work.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from audit._validate import (
    check_in_range,
    check_positive,
    check_positive_int,
)
from audit.enums import Calibration, NoiseKind, Selection

__all__ = [
    "ScenarioConfig",
    "MissingnessConfig",
    "AuditSettings",
    "AuditConfig",
    "load_config",
    "config_from_dict",
]

def _check_keys(table: str, given: dict, allowed: set[str]) -> None:
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise ValueError(
            f"unknown key {table}.{unknown[0]} (allowed: {', '.join(sorted(allowed))})"
        )


@dataclass(frozen=True)
class ScenarioConfig:
    """The released statistic: query, data domain and DP mechanism."""

    mechanism: NoiseKind
    epsilon: float
    delta: float | None = None
    calibration: Calibration = Calibration.CLASSICAL
    query: str = "sum"
    d: int = 10
    n: int = 100
    bound: float = 1.0
    query_params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mechanism",
                           NoiseKind.parse(self.mechanism, "scenario.mechanism"))
        check_positive(self.epsilon, "scenario.epsilon")
        object.__setattr__(self, "calibration",
                           Calibration.parse(self.calibration, "scenario.calibration"))
        if self.mechanism is NoiseKind.GAUSSIAN:
            if self.delta is None:
                raise ValueError("scenario.delta is required for the gaussian mechanism")
            check_in_range("scenario.delta", self.delta, 0.0, 1.0, lo_closed=False,
                           hi_closed=False)
        elif self.delta not in (None, 0, 0.0):
            raise ValueError(
                f"scenario.delta must be 0 or absent for the laplace mechanism, "
                f"got scenario.delta={self.delta!r}"
            )
        check_positive_int(self.d, "scenario.d")
        check_positive_int(self.n, "scenario.n")
        check_positive(self.bound, "scenario.bound")
        if not isinstance(self.query, str):
            raise ValueError(f"scenario.query must be a string, got {self.query!r}")


@dataclass(frozen=True)
class MissingnessConfig:
    """The missing-feature mechanism: its kind and that kind's parameters."""

    kind: str
    params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str):
            raise ValueError(f"missingness.kind must be a string, got {self.kind!r}")


@dataclass(frozen=True)
class AuditSettings:
    """How the audit is run and what it claims.

    ``delta`` is the δ of the audited (ε, δ) statement; ``None`` means: 0 for Laplace, and the
    amplified δ' = p*·δ of Theorem 4.7 for Gaussian. ``selection`` picks the test region:
    ``"model"`` from the exact laws (white-box attacks only, uses no data), ``"pilot"`` on the
    pilot sample, ``"grid"`` a pre-declared grid of thresholds with a Bonferroni correction,
    ``"auto"`` = model for white-box attacks on scalar outputs, else pilot. ``checkpoint``
    names a directory where the main run saves finished chunks, so an interrupted run
    resumes without redoing them.
    """

    trials: int = 1_000_000
    pilot_trials: int | None = None
    seed: int = 0
    confidence: float = 0.95
    attack: str = "exact-lr"
    delta: float | None = None
    bins: int = 4000
    selection: Selection = Selection.AUTO
    jobs: int = 1
    checkpoint: str | None = None

    def __post_init__(self) -> None:
        check_positive_int(self.trials, "audit.trials")
        if self.pilot_trials is not None:
            check_positive_int(self.pilot_trials, "audit.pilot_trials", minimum=100)
        check_positive_int(self.seed, "audit.seed", minimum=0)
        check_in_range("audit.confidence", self.confidence, 0.0, 1.0, lo_closed=False,
                       hi_closed=False)
        if not isinstance(self.attack, str):
            raise ValueError(f"audit.attack must be a string, got {self.attack!r}")
        if self.delta is not None:
            check_in_range("audit.delta", self.delta, 0.0, 1.0, hi_closed=False)
        check_positive_int(self.bins, "audit.bins", minimum=10)
        object.__setattr__(self, "selection", Selection.parse(self.selection, "audit.selection"))
        check_positive_int(self.jobs, "audit.jobs")
        if self.checkpoint is not None and not isinstance(self.checkpoint, str):
            raise ValueError(f"audit.checkpoint must be a directory path, "
                             f"got audit.checkpoint={self.checkpoint!r}")

    @property
    def alpha(self) -> float:
        """Failure probability 1 − confidence of the lower bound (in (0, 1) by validation)."""
        return 1.0 - self.confidence

    @property
    def pilot_size(self) -> int:
        if self.pilot_trials is not None:
            return self.pilot_trials
        return max(100_000, min(self.trials // 10, 10_000_000))


@dataclass(frozen=True)
class AuditConfig:
    """One audit: scenario, missingness and audit settings."""

    scenario: ScenarioConfig
    missingness: MissingnessConfig
    audit: AuditSettings = field(default_factory=AuditSettings)
    name: str = "audit"

    def with_overrides(self, **audit_overrides: Any) -> AuditConfig:
        """A copy with some ``[audit]`` settings replaced (None values are ignored)."""
        kept = {k: v for k, v in audit_overrides.items() if v is not None}
        return replace(self, audit=replace(self.audit, **kept)) if kept else self

    def to_dict(self) -> dict:
        """The config as a document, every default resolved: the mechanism's and the query's
        parameters as they were built, so a result records exactly what ran."""
        mech, query = _components(self)
        sc = asdict(self.scenario)
        sc.pop("query_params")
        if sc["delta"] is None:
            sc.pop("delta")
        qp = query.params()
        if qp:
            sc["query_params"] = qp
        au = {k: v for k, v in asdict(self.audit).items() if v is not None}
        return {
            "name": self.name,
            "scenario": sc,
            "missingness": {"kind": mech.kind, **mech.params()},
            "audit": au,
        }


_SCENARIO_KEYS = {f for f in ScenarioConfig.__dataclass_fields__}
_AUDIT_KEYS = {f for f in AuditSettings.__dataclass_fields__}


def config_from_dict(data: dict, *, name: str = "audit") -> AuditConfig:
    """Build and validate an :class:`AuditConfig` from a parsed TOML document.

    The missingness kind and its parameters, the query and its parameters are checked here
    too (by constructing them), so a bad config fails before any work starts.
    """
    if not isinstance(data, dict):
        raise ValueError("config must be a table")
    _check_keys("config", data, {"name", "scenario", "missingness", "audit"})
    for table in ("scenario", "missingness"):
        if table not in data:
            raise ValueError(f"config is missing the [{table}] table")
    sc = dict(data["scenario"])
    _check_keys("scenario", sc, _SCENARIO_KEYS)
    for key in ("mechanism", "epsilon"):
        if key not in sc:
            raise ValueError(f"config is missing the key scenario.{key}")
    scenario = ScenarioConfig(**sc)
    miss = dict(data["missingness"])
    if "kind" not in miss:
        raise ValueError("config is missing the key missingness.kind")
    kind = miss.pop("kind")
    missingness = MissingnessConfig(kind, miss)
    au = dict(data.get("audit", {}))
    _check_keys("audit", au, _AUDIT_KEYS)
    audit = AuditSettings(**au)
    cfg = AuditConfig(scenario, missingness, audit, name=str(data.get("name", name)))
    validate_components(cfg)
    return cfg


def _components(cfg: AuditConfig):
    """The mechanism and query a config names, errors prefixed with their table."""
    from audit.model.missingness import make_missingness
    from audit.model.queries import make_query

    try:
        mech = make_missingness(cfg.missingness.kind, **cfg.missingness.params)
        mech.check_dimension(cfg.scenario.d)
    except ValueError as exc:
        raise ValueError(f"[missingness] {exc}") from None
    if mech.p_star(cfg.scenario.d) == 0.0 or mech.rho(cfg.scenario.d) == 0.0:
        raise ValueError(
            f"[missingness] the differing record is never observed under {mech.kind!r} with "
            f"{mech.params()} (p* = {mech.p_star(cfg.scenario.d):g}, rho = "
            f"{mech.rho(cfg.scenario.d):g}): the release does not depend on it, so every "
            "epsilon is 0 and there is nothing to audit; use p_star > 0 (or rate < 1)")
    try:
        query = make_query(cfg.scenario.query, **cfg.scenario.query_params)
        query.check_dimension(cfg.scenario.d)
    except ValueError as exc:
        raise ValueError(f"[scenario] {exc}") from None
    return mech, query


def validate_components(cfg: AuditConfig) -> None:
    """Construct the query, missingness mechanism and attack so their own checks run now,
    and check that the region selection fits the attack and the output."""
    from audit.protocols import load_attack

    _, query = _components(cfg)
    try:
        attack = load_attack(cfg.audit.attack)
    except ValueError as exc:
        raise ValueError(f"[audit] {exc}") from None
    if cfg.audit.selection is Selection.MODEL:
        if not attack.white_box:
            raise ValueError(f"audit.selection='model' needs a white-box attack (the region is "
                             f"chosen from the exact laws), got audit.attack="
                             f"{cfg.audit.attack!r}; use 'pilot' or 'grid'")
        if query.output_dim(cfg.scenario.d) != 1:
            raise ValueError("audit.selection='model' needs a scalar output, got query "
                             f"{cfg.scenario.query!r} with output dimension "
                             f"{query.output_dim(cfg.scenario.d)}; use 'pilot' or 'grid'")


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate a TOML config file.

    Raises
    ------
    ValueError
        If the file is missing, is not valid TOML, or has an unknown key or a bad value.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"config must be a TOML file, got a directory: {path}")
    if not path.is_file():
        raise ValueError(f"config file not found: {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"config file {path} is not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})") from None
    except OSError as exc:
        raise ValueError(f"config file {path} cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {path} is not valid TOML: {exc}") from None
    return config_from_dict(data, name=path.stem)


