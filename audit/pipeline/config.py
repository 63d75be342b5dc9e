"""TOML configuration of one audit: schema, defaults and validation.

A config has three tables (README, "Config schema"):

``[scenario]``
    ``noise`` ("laplace" | "gaussian"; ``mechanism``, its former name, is accepted),
    ``epsilon`` (> 0), ``delta`` (Gaussian only, in
    (0, 1)), ``calibration`` ("classical" | "analytic", Gaussian only), ``query`` (a name
    from :func:`audit.model.queries.make_query`), ``d`` (features), ``n`` (records),
    ``bound`` (B), and an optional ``[scenario.query_params]`` table.
``[missingness]``
    ``kind`` (a name from :func:`audit.model.missingness.make_missingness`) and that kind's own
    parameters (``rate`` for ``mcar-iid``; ``observed`` and ``p_star`` for ``mcar-fixed``; …).
``[audit]``
    ``trials`` (per side), ``pilot_trials``, ``seed``, ``confidence``, ``attack``, ``delta``
    (the δ of the audited (ε, δ) claim), ``bins``, ``selection``, ``jobs``, ``checkpoint``,
    ``backend`` ("cpu" | "cuda" | "dask" | a registered joblib backend: where the work runs).

Unknown keys and out-of-range values raise ``ValueError`` naming the key, before any work.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from audit._validate import (
    check_in_range,
    check_interval,
    check_jobs,
    check_positive,
    check_positive_int,
)
from audit.enums import (
    AuditMode,
    Backend,
    Calibration,
    NoiseKind,
    Selection,
    StopRule,
)
from audit.noise import noise_of
from audit.pipeline.config_tables import (  # the tables' dataclasses, re-exported
    _INT_KEYS,
    DEFAULT_CHUNK,
    MAX_CHUNK_CALLS,
    ClaimConfig,
    ImplementationConfig,
    PairConfig,
    ReleasesConfig,
    _check_keys,
    _claim,
    _implementation,
    _integral,
    _noise_key,
    _pair,
    _releases,
    _table,
    check_chunk,
)
from audit.pipeline.search_config import SearchConfig, search_from_table
from audit.pipeline.strata_config import StrataConfig, strata_from_table
from audit.policy import DEFAULT_POLICY, AuditPolicy

if TYPE_CHECKING:  # annotations only: the config imports neither scipy nor the model
    from audit.protocols import MissingnessMechanism, Query
    from audit.simulation.processes import RegisteredBackend

#: Largest number of draws per side of one audit (the streams and int64 counts allow no more).
MAX_TRIALS = 10**18
#: Largest number of histogram bins (the kernels keep one row of counts per running block).
MAX_BINS = 100_000
#: Largest n × d of the neighbouring datasets (held in memory as n × d floats, twice).
MAX_CELLS = 10**7

__all__ = [
    "MAX_CHUNK_CALLS",
    "check_chunk",
    "ImplementationConfig",
    "PairConfig",
    "ClaimConfig",
    "ReleasesConfig",
    "MAX_TRIALS",
    "MAX_BINS",
    "ScenarioConfig",
    "MissingnessConfig",
    "AuditSettings",
    "AuditConfig",
    "load_config",
    "config_from_dict",
]

@dataclass(frozen=True)
class ScenarioConfig:
    """The released statistic: query, data domain and the noise of its release (``noise``;
    the config's former key ``mechanism`` is read as ``noise``, and ``mechanism`` remains as a
    read-only alias of the field: "mechanism" means the missingness mechanism elsewhere)."""

    noise: NoiseKind
    epsilon: float
    delta: float | None = None
    calibration: Calibration = Calibration.CLASSICAL
    query: str = "sum"
    d: int = 10
    n: int = 100
    bound: float = 1.0
    query_params: dict = field(default_factory=dict)
    #: [lo, hi] of each entry (None: [−bound, bound]); read by ``bound --config`` only
    domain: tuple[float, float] | None = None
    #: what a missing entry is read as; read by ``bound --config`` only
    na_value: float = 0.0
    #: whether a histogram has a bin counting the missing entries; read by ``bound --config``
    #: only (audits count a missing entry nowhere)
    na_category: bool = False
    #: the release is the mean over the observed entries of a sum's column (d = 1): its count
    #: released with noise at half the budget (``"private"``) or exactly (``"public"``); read
    #: by ``bound --config`` only
    count: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise, "scenario.noise"))
        check_positive(self.epsilon, "scenario.epsilon")
        object.__setattr__(self, "calibration",
                           Calibration.parse(self.calibration, "scenario.calibration"))
        kind = self.noise.value
        if not noise_of(self.noise).pure:
            if self.delta is None:
                raise ValueError(f"scenario.delta is required for the {kind} mechanism")
            check_in_range("scenario.delta", self.delta, 0.0, 1.0, lo_closed=False,
                           hi_closed=False)
        elif self.delta not in (None, 0, 0.0):
            raise ValueError(
                f"scenario.delta must be 0 or absent for the {kind} mechanism, "
                f"got scenario.delta={self.delta!r}"
            )
        check_positive_int(self.d, "scenario.d")
        check_positive_int(self.n, "scenario.n")
        if self.n * self.d > MAX_CELLS:
            raise ValueError(f"scenario.n * scenario.d must be at most {MAX_CELLS:.0e} (the "
                             f"neighbouring datasets are held in memory as n × d floats), got "
                             f"scenario.n={self.n}, scenario.d={self.d}")
        check_positive(self.bound, "scenario.bound")
        if not isinstance(self.query, str):
            raise ValueError(f"scenario.query must be a string, got {self.query!r}")
        if self.domain is not None:
            object.__setattr__(self, "domain", check_interval(self.domain, "scenario.domain"))
        na = self.na_value
        if isinstance(na, bool) or not isinstance(na, (int, float)) or not np.isfinite(na):
            raise ValueError(f"scenario.na_value must be a finite number, got "
                             f"scenario.na_value={na!r}")
        object.__setattr__(self, "na_value", float(na))
        if self.count not in (None, "private", "public"):
            raise ValueError(f"scenario.count must be 'private' or 'public', got "
                             f"scenario.count={self.count!r}")
        if not isinstance(self.na_category, bool):
            raise ValueError(f"scenario.na_category must be true or false, got "
                             f"scenario.na_category={self.na_category!r}")

    @property
    def value_domain(self) -> tuple[float, float]:
        """[lo, hi] of each entry: ``domain``, or [−bound, bound] when it is not given."""
        return self.domain if self.domain is not None else (-self.bound, self.bound)

    @property
    def default_reading(self) -> bool:
        """Whether the entries span [−bound, bound] and a missing one reads as 0 (what the
        model's audits simulate)."""
        return (self.domain is None and self.na_value == 0.0 and not self.na_category
                and self.count is None)


    @property
    def mechanism(self) -> NoiseKind:
        """The former name of :attr:`noise` (read-only)."""
        return self.noise


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
    resumes without redoing them. ``backend``: ``"cpu"`` (numba kernels, ``jobs`` processes),
    ``"cuda"`` (an NVIDIA GPU, optional extra ``[cuda]``; white-box audits only) or
    ``"dask"`` (joblib's dask backend over the current ``distributed.Client``, optional extra
    ``[dask]``; either subject, ``jobs`` tasks at a time), or any joblib backend registered by
    name (``"ray"`` after ``ray.util.joblib.register_ray()``). ``stop`` (sequential mode):
    ``"refuted"`` stops as soon as the claim is refuted, ``"budget"`` runs to the budget and
    estimates ε.

    ``policy`` is no key of the table: the :class:`audit.policy.AuditPolicy` the audit reads
    its defaults from (``run_audit(cfg, policy=...)`` replaces it; :meth:`AuditConfig.
    with_policy`). ``confidence`` None: the policy's (:attr:`level` is the one that runs).
    """

    trials: int = 1_000_000
    pilot_trials: int | None = None
    seed: int = 0
    #: None: the policy's confidence (:attr:`level`)
    confidence: float | None = None
    #: None: the target kind's default (:meth:`attack_for`; ``audit.policy``)
    attack: str | None = None
    delta: float | None = None
    bins: int = 4000
    selection: Selection = Selection.AUTO
    jobs: int = 1
    checkpoint: str | None = None
    mode: AuditMode = AuditMode.FIXED
    backend: str = "cpu"
    stop: StopRule = StopRule.REFUTED
    policy: AuditPolicy = field(default=DEFAULT_POLICY, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.policy, AuditPolicy):
            raise TypeError(f"policy must be an audit.policy.AuditPolicy, got "
                            f"policy={type(self.policy).__name__}")
        check_positive_int(self.trials, "audit.trials")
        if self.trials > MAX_TRIALS:
            raise ValueError(f"audit.trials must be at most {MAX_TRIALS:.0e} (draws per side; "
                             f"the streams and int64 counts allow no more), got "
                             f"audit.trials={self.trials}")
        if self.pilot_trials is not None:
            check_positive_int(self.pilot_trials, "audit.pilot_trials", minimum=100)
        check_positive_int(self.seed, "audit.seed", minimum=0)
        if self.confidence is not None:
            self._check_confidence()
        if self.attack is not None and not isinstance(self.attack, str):
            raise ValueError(f"audit.attack must be a string, got {self.attack!r}")
        if self.delta is not None:
            check_in_range("audit.delta", self.delta, 0.0, 1.0, hi_closed=False)
        check_positive_int(self.bins, "audit.bins", minimum=10)
        if self.bins > MAX_BINS:
            raise ValueError(f"audit.bins must be in [10, {MAX_BINS}], got audit.bins="
                             f"{self.bins}")
        object.__setattr__(self, "selection", Selection.parse(self.selection, "audit.selection"))
        check_jobs(self.jobs, "audit.jobs")
        if self.checkpoint is not None and not isinstance(self.checkpoint, str):
            raise ValueError(f"audit.checkpoint must be a directory path, "
                             f"got audit.checkpoint={self.checkpoint!r}")
        object.__setattr__(self, "mode", AuditMode.parse(self.mode, "audit.mode"))
        object.__setattr__(self, "stop", StopRule.parse(self.stop, "audit.stop"))
        from audit.simulation.processes import check_backend_setting  # (joblib, on first use)

        object.__setattr__(self, "backend", check_backend_setting(self.backend, "audit.backend"))

    def _check_confidence(self) -> None:
        check_in_range("audit.confidence", self.confidence, 0.0, 1.0, lo_closed=False,
                       hi_closed=False)
        if not 1e-15 <= self.confidence <= 1.0 - 1e-15:
            raise ValueError(f"audit.confidence must be in [1e-15, 1 - 1e-15] (1 - confidence "
                             f"is the bound's failure probability, and must be a float in "
                             f"(0, 1)), got audit.confidence={self.confidence!r}")

    def attack_for(self, *, black_box: bool) -> str:
        """The attack this audit runs on a target of that kind: ``attack`` when set, else the
        policy's default (the exact likelihood ratio for the model, ``auto`` for a black
        box)."""
        return self.attack or self.policy.default_attack(black_box=black_box)

    @property
    def level(self) -> float:
        """The confidence of the lower bound: ``confidence`` when set, else the policy's."""
        return self.policy.confidence if self.confidence is None else self.confidence

    @property
    def alpha(self) -> float:
        """Failure probability 1 − confidence of the lower bound (in (0, 1) by validation)."""
        return 1.0 - self.level


@dataclass(frozen=True)
class AuditConfig:
    """One audit: scenario, missingness and audit settings; optionally an implementation
    under audit and an explicit pair."""

    scenario: ScenarioConfig
    missingness: MissingnessConfig
    audit: AuditSettings = field(default_factory=AuditSettings)
    name: str = "audit"
    implementation: ImplementationConfig | None = None
    pair: PairConfig | None = None
    releases: ReleasesConfig | None = None
    strata: StrataConfig | None = None
    search: SearchConfig | None = None
    #: a curve claim tested beside ε_lower (``[claim]``), or None
    claim: ClaimConfig | None = None
    #: the plug-in designs of the config's tables (``audit.designs``, in document order;
    #: :mod:`audit.pipeline.parts`), each applied to the subject by the factory
    designs: tuple = ()

    @property
    def engine_backend(self) -> Backend | RegisteredBackend:
        """The backend of ``audit.backend``: loky processes (``cpu``), the GPU (``cuda``,
        white-box audits only), dask (``dask``) or the joblib backend of that name; dask and a
        registered backend run either subject with the same seeds and counts as a local run."""
        cpu = {"cpu": Backend.LOKY}.get(self.audit.backend)
        from audit.simulation.processes import parse_backend

        return cpu or parse_backend(self.audit.backend, "audit.backend")

    def components(self) -> tuple[MissingnessMechanism, Query]:
        """The missingness mechanism and the query this config names, built (and checked)
        once per config object."""
        built = self.__dict__.get("_components")
        if built is None:
            built = _components(self)
            object.__setattr__(self, "_components", built)
        return built

    @property
    def policy(self) -> AuditPolicy:
        """The policy this audit reads its defaults from (``[audit]``'s ``policy``)."""
        return self.audit.policy

    @property
    def chunk(self) -> int:
        """Calls per side in one chunk of a black box's main run (``implementation.chunk``;
        the default for a config without ``[implementation]``, handed its black box)."""
        return self.implementation.chunk if self.implementation is not None else DEFAULT_CHUNK

    @property
    def batch(self) -> bool:
        """Whether the black box may be called in its batched form (``implementation.batch``;
        True for a config without ``[implementation]``, handed its black box)."""
        return self.implementation.batch if self.implementation is not None else True

    def with_policy(self, policy: AuditPolicy) -> AuditConfig:
        """A copy audited under ``policy`` (an unset confidence or attack is then its)."""
        if policy is self.audit.policy:
            return self
        return replace(self, audit=replace(self.audit, policy=policy))

    def with_overrides(self, **audit_overrides: Any) -> AuditConfig:
        """A copy with some ``[audit]`` settings replaced (None values are ignored)."""
        kept = {k: v for k, v in audit_overrides.items() if v is not None}
        return replace(self, audit=replace(self.audit, **kept)) if kept else self

    def to_dict(self) -> dict:
        """The config as a document, every default resolved: the mechanism's and the query's
        parameters as they were built, so a result records exactly what ran."""
        mech, query = self.components()
        sc = asdict(self.scenario)
        sc.pop("query_params")
        if sc["delta"] is None:
            sc.pop("delta")
        if sc["domain"] is None:
            sc.pop("domain")
        else:
            sc["domain"] = list(sc["domain"])
        if sc["na_value"] == 0.0:
            sc.pop("na_value")
        if not sc["na_category"]:
            sc.pop("na_category")
        if sc["count"] is None:
            sc.pop("count")
        qp = query.params()
        if qp:
            sc["query_params"] = qp
        # every key that is set, the confidence that ran (set, or the policy's) among them
        resolved = {**{f.name: getattr(self.audit, f.name) for f in fields(self.audit)},
                    "confidence": self.audit.level}
        au = {k: v for k, v in resolved.items() if k != "policy" and v is not None}
        out = {
            "name": self.name,
            "scenario": sc,
            "missingness": {"kind": mech.kind, **mech.params()},
            "audit": au,
        }
        if self.implementation is not None:
            out["implementation"] = asdict(self.implementation)
        if self.pair is not None:
            out["pair"] = {"z": self.pair.z, "z_prime": self.pair.z_prime}
            if self.pair.eps_pair is not None:
                out["pair"]["eps_pair"] = self.pair.eps_pair
        if self.releases is not None:
            out["releases"] = {k: v for k, v in asdict(self.releases).items()
                               if v is not None}  # persistence: persistent masks only
        if self.strata is not None:
            out["strata"] = self.strata.to_dict()
        if self.search is not None:
            out["search"] = self.search.to_dict()
        if self.claim is not None:
            out["claim"] = self.claim.to_dict()
        for design in self.designs:
            out[design.table] = design.to_dict()
        return out


_SCENARIO_KEYS = {f for f in ScenarioConfig.__dataclass_fields__} | {"mechanism"}
_AUDIT_KEYS = {f for f in AuditSettings.__dataclass_fields__} - {"policy"}


def config_from_dict(data: dict, *, name: str = "audit", for_audit: bool = True
                     ) -> AuditConfig:
    """Build and validate an :class:`AuditConfig` from a parsed TOML document.

    The missingness kind and its parameters, the query and its parameters are checked here
    too (by constructing them), so a bad config fails before any work starts. ``for_audit=False``
    skips the audit parts' check (:func:`audit.pipeline.parts.check_config`): the accountant
    (``bound --config``) reads the setting only.
    """
    from audit.pipeline.parts import RESERVED_TABLES, available_designs, check_config, design_class

    if not isinstance(data, dict):
        raise ValueError(f"config must be a table (a dict), got {type(data).__name__}")
    registered = available_designs()
    plug_ins = [key for key in data if key in registered]
    _check_keys("config", data, set(RESERVED_TABLES) | set(plug_ins))
    designs = tuple(design_class(key, registered).from_table(data[key]) for key in plug_ins)
    implementation = _implementation(data.get("implementation"))
    sc = _integral(_table(data, "scenario"), "scenario", _INT_KEYS)
    _check_keys("scenario", sc, _SCENARIO_KEYS)
    if "query_params" in sc and not isinstance(sc["query_params"], dict):
        raise ValueError(f"[scenario.query_params] must be a table, got "
                         f"scenario.query_params={sc['query_params']!r}")
    noise_key = _noise_key(sc)
    if implementation is not None:
        # The scenario's release only ranks candidate pairs for the search; by default a
        # Laplace release at the claimed ε.
        sc.setdefault("noise", "laplace")
        sc.setdefault("epsilon", implementation.epsilon)
    for key in ("noise", "epsilon"):
        if key not in sc:
            raise ValueError(f"config is missing the key scenario.{key}")
    pair = _pair(data.get("pair"), sc)
    if pair is not None and pair.eps_pair is not None and implementation is None:
        raise ValueError("pair.eps_pair declares the exact ε of an implementation's pair; a "
                         "model audit computes its own: remove it, or audit an "
                         "[implementation]")
    try:
        scenario = ScenarioConfig(**sc)
    except ValueError as exc:  # named as the user wrote it
        raise ValueError(str(exc).replace("scenario.noise", f"scenario.{noise_key}")) from None
    miss = _table(data, "missingness")
    if "kind" not in miss:
        raise ValueError("config is missing the key missingness.kind")
    kind = miss.pop("kind")
    missingness = MissingnessConfig(kind, miss)
    au = _integral(_table(data, "audit", required=False), "audit", _INT_KEYS)
    _check_keys("audit", au, _AUDIT_KEYS)
    audit = AuditSettings(**au)
    cfg = AuditConfig(scenario, missingness, audit, name=str(data.get("name", name)),
                      implementation=implementation, pair=pair, releases=_releases(data),
                      strata=None if "strata" not in data else strata_from_table(
                          data["strata"]),
                      search=None if "search" not in data else search_from_table(
                          data["search"]), claim=_claim(data.get("claim")),
                      designs=designs)
    validate_components(cfg)
    if for_audit:
        check_config(cfg)
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
    """Construct the query, the missingness mechanism, the attack and the implementation so
    their own checks run now (whether they fit together is the parts' answer,
    :func:`audit.pipeline.parts.check_config`)."""
    from audit.protocols import load_attack

    cfg.components()
    try:
        load_attack(cfg.audit.attack_for(black_box=cfg.implementation is not None))
    except ValueError as exc:
        raise ValueError(f"[audit] {exc}") from None
    if cfg.implementation is not None:
        from audit.adapters.isolation.client import ParametersChecked, parameters_only

        try:
            with parameters_only():  # an isolated target: its parameters, no environment
                cfg.implementation.build()
        except ParametersChecked:
            pass
        except ValueError as exc:
            raise ValueError(f"[implementation] {exc}") from None


def load_config(path: str | Path, *, for_audit: bool = True) -> AuditConfig:
    """Read and validate a TOML config file (``for_audit=False``: as a setting for the accountant,
    without the audit parts' check; :func:`config_from_dict`).

    Raises
    ------
    ValueError
        If the file is missing, is not valid TOML, or has an unknown key or a bad value.
    """
    if not isinstance(path, str | Path):
        raise ValueError(f"config must be a path to a TOML file, got {type(path).__name__} "
                         f"{path!r}")
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
    table = data.get("search", {}).get("table") if isinstance(data.get("search"), dict) else None
    if isinstance(table, str) and not Path(table).is_absolute():
        # a user's table is named relative to the config file that names it
        data["search"]["table"] = str(path.parent / table)
    return config_from_dict(data, name=path.stem, for_audit=for_audit)


