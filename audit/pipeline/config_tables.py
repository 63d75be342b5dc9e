"""The small tables of a config document and their readers (the helpers of
:func:`audit.pipeline.config.config_from_dict`, which re-exports the dataclasses): each refuses
a missing key, an unknown one or a value of the wrong type with one line naming it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from audit._validate import check_in_range, check_positive, check_positive_int
from audit.enums import MaskRegime

__all__ = ["ImplementationConfig", "ReleasesConfig", "PairConfig", "ClaimConfig",
           "check_chunk", "MAX_CHUNK_CALLS", "DEFAULT_CHUNK"]

#: Largest number of implementation calls per side in one chunk.
MAX_CHUNK_CALLS = 1_000_000
#: Calls per side in one chunk of a black box's main run, unless ``implementation.chunk``.
DEFAULT_CHUNK = 1000


def _check_keys(table: str, given: dict, allowed: set[str]) -> None:
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise ValueError(
            f"unknown key {table}.{unknown[0]} (allowed: {', '.join(sorted(allowed))})"
        )



@dataclass(frozen=True)
class ImplementationConfig:
    """The implementation under audit, instead of the built-in Laplace/Gaussian release.

    ``target`` is ``"<library>:<function>"`` (``audit.adapters``) or
    ``"package.module:function"`` (a user's own ``f(data, rng, **params)``); ``epsilon`` and
    ``delta`` are its claim (passed to the library too); ``params`` the function's own
    parameters (e.g. ``bounds``); ``batch`` uses the batched form when the implementation has
    one; ``chunk`` is the number of calls per side in one chunk of the main run (the unit of
    reproducibility, checkpoints and the sequential test's bets).
    """

    target: str
    epsilon: float
    delta: float = 0.0
    params: dict = field(default_factory=dict)
    batch: bool = True
    chunk: int = DEFAULT_CHUNK

    def __post_init__(self) -> None:
        if not isinstance(self.target, str) or ":" not in self.target:
            raise ValueError(f"implementation.target must look like '<library>:<function>' or "
                             f"'package.module:function', got implementation.target="
                             f"{self.target!r}")
        check_positive(self.epsilon, "implementation.epsilon")
        check_in_range("implementation.delta", self.delta, 0.0, 1.0, hi_closed=False)
        if not isinstance(self.params, dict):
            raise ValueError(f"implementation.params must be a table, got "
                             f"implementation.params={self.params!r}")
        if not isinstance(self.batch, bool):
            raise ValueError(f"implementation.batch must be true or false, got "
                             f"implementation.batch={self.batch!r}")
        check_chunk(self.chunk, "implementation.chunk")

    def build(self):
        """The :class:`audit.model.implementation.Implementation` this names."""
        from audit.adapters import make_implementation

        return make_implementation(self.target, epsilon=self.epsilon, delta=self.delta,
                                   params=self.params)


def check_chunk(value: object, name: str) -> int:
    """Calls per side in one chunk: an integer in [1, :data:`MAX_CHUNK_CALLS`] (the config's
    ``implementation.chunk`` and ``assert_private``'s ``chunk``)."""
    check_positive_int(value, name)
    if value > MAX_CHUNK_CALLS:
        raise ValueError(f"{name} must be in [1, {MAX_CHUNK_CALLS}], got {name}={value}")
    return int(value)


@dataclass(frozen=True)
class ReleasesConfig:
    """k releases from one incomplete dataset (docs/THEORY.md §9): ``count`` = k ≥ 1 and
    ``masks`` = ``"shared"`` (one table: the k releases read one masked dataset),
    ``"fresh"`` (the missingness redrawn for every release) or ``"persistent"`` (each
    re-collection keeps a record's previous mask with probability ``persistence`` = r ∈
    [0, 1], else redraws it: §10.7); ``persistence`` is given with persistent masks only."""

    count: int
    masks: MaskRegime = MaskRegime.SHARED
    persistence: float | None = None

    def __post_init__(self) -> None:
        check_positive_int(self.count, "releases.count")
        masks = MaskRegime.parse(self.masks, "releases.masks")
        object.__setattr__(self, "masks", masks)
        r = self.persistence
        if masks is not MaskRegime.PERSISTENT:
            if r is not None:
                raise ValueError(f"releases.persistence applies to releases.masks = "
                                 f"'persistent', got releases.persistence={r!r} with "
                                 f"releases.masks={masks.value!r}")
            return
        if r is None:
            raise ValueError("releases.masks = 'persistent' needs releases.persistence = r "
                             "(the probability that a record keeps its mask between "
                             "collections, in [0, 1])")
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0.0 <= r <= 1.0:
            raise ValueError(f"releases.persistence must be a number in [0, 1], got "
                             f"releases.persistence={r!r}")
        object.__setattr__(self, "persistence", float(r))


@dataclass(frozen=True, eq=False)
class PairConfig:
    """Explicit neighbouring datasets (instead of the worst-case search): ``z`` and
    ``z_prime`` of shape (n, d), NaN (TOML ``nan``) marking a value already missing (a pair
    the ``[search]`` chose too: its report is the result's, not the config's).

    ``eps_pair`` (implementation audits only) is the exact ε of this pair for the audited
    implementation when a theory gives it (docs/THEORY.md §11 for imputation): the audit
    reports it as ``eps_pair`` and checks ε_lower against it like a model audit's exact pair
    ε; None: no such ceiling."""

    z: list
    z_prime: list
    eps_pair: float | None = None


@dataclass(frozen=True, eq=False)
class ClaimConfig:
    """A curve claim (``[claim]``), tested beside the audit's ε_lower
    (:mod:`audit.estimation.curve_claims`): ``curve`` = ``"gaussian"`` (G_μ over μ),
    ``"subsampled-gaussian"`` (C_{p*}(G_μ) over μ, with ``p_star`` ∈ (0, 1]) or ``"points"``
    (one curve through ``points`` = [[α, β], ...], α from 0 to 1, β non-increasing, convex
    and ≤ 1 − α). The result reports the boundary of the refuted members and its ε at the
    audited δ, ``eps_family`` (a bound on the mechanism's ε only if the mechanism is in the
    family), or, for points, whether the curve is refuted."""

    curve: str
    p_star: float | None = None
    points: list | None = None

    def __post_init__(self) -> None:
        fam = self.family()  # refuses a bad claim naming its key
        object.__setattr__(self, "curve", fam.curve.value)
        if self.p_star is not None:
            object.__setattr__(self, "p_star", fam.p_star)
        if self.points is not None:
            object.__setattr__(self, "points", [list(p) for p in fam.points])

    def family(self):
        """The claimed family or curve (:func:`audit.theory.tradeoff.families.curve_family`)."""
        from audit.theory.tradeoff.families import curve_family

        return curve_family(self.curve, p_star=self.p_star, points=self.points)

    def to_dict(self) -> dict:
        return {k: v for k, v in (("curve", self.curve), ("p_star", self.p_star),
                                  ("points", self.points)) if v is not None}


def _claim(table) -> ClaimConfig | None:
    """The ``[claim]`` table, or None when absent."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValueError(f"[claim] must be a table, got claim={table!r}")
    _check_keys("claim", table, {"curve", "p_star", "points"})
    if "curve" not in table:
        raise ValueError("config is missing the key claim.curve")
    return ClaimConfig(**table)


_IMPLEMENTATION_KEYS = {f for f in ImplementationConfig.__dataclass_fields__}


def _noise_key(sc: dict) -> str:
    """Read the former key ``scenario.mechanism`` as ``scenario.noise`` (in place); the key
    the user wrote."""
    if "mechanism" not in sc:
        return "noise"
    if "noise" in sc:
        raise ValueError(f"scenario.noise and scenario.mechanism (its former name) are the same "
                         f"setting: give one, got scenario.noise={sc['noise']!r} and "
                         f"scenario.mechanism={sc['mechanism']!r}")
    sc["noise"] = sc.pop("mechanism")
    return "mechanism"


#: Keys whose values are integers: an integral float (``trials = 1e6``) is accepted for them.
_INT_KEYS = {"d", "n", "trials", "pilot_trials", "seed", "bins", "jobs", "chunk"}


def _table(data: dict, key: str, *, required: bool = True) -> dict:
    """A copy of the table ``data[key]``, refused with one line when missing or not a table."""
    if key not in data:
        if required:
            raise ValueError(f"config is missing the [{key}] table")
        return {}
    table = data[key]
    if not isinstance(table, dict):
        hint = (f' (write [{key}] with kind = {table!r})' if key == "missingness"
                and isinstance(table, str) else "")
        raise ValueError(f"[{key}] must be a table, got {key}={table!r}{hint}")
    return dict(table)


def _integral(table: dict, prefix: str, keys: set[str]) -> dict:
    """``table`` with integral floats (``1e6``) of integer keys as ints; other values as they
    are (the dataclasses refuse a non-integral or non-numeric value with its key)."""
    out = dict(table)
    for key in keys & set(out):
        v = out[key]
        if isinstance(v, float) and v.is_integer() and abs(v) < 2.0**63:
            out[key] = int(v)
    return out


def _releases(data: dict) -> ReleasesConfig | None:
    if "releases" not in data:
        return None
    table = _integral(_table(data, "releases"), "releases", {"count"})
    _check_keys("releases", table, {"count", "masks", "persistence"})
    if "count" not in table:
        raise ValueError("config is missing the key releases.count")
    return ReleasesConfig(**table)


def _implementation(table) -> ImplementationConfig | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValueError(f"[implementation] must be a table, got implementation={table!r}")
    table = _integral(table, "implementation", _INT_KEYS)
    _check_keys("implementation", table, _IMPLEMENTATION_KEYS)
    for key in ("target", "epsilon"):
        if key not in table:
            raise ValueError(f"config is missing the key implementation.{key}")
    return ImplementationConfig(**table)


def _pair(table, scenario: dict) -> PairConfig | None:
    """An explicit pair; sets scenario.n and scenario.d from its shape (they must agree)."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ValueError(f"[pair] must be a table, got pair={table!r}")
    _check_keys("pair", table, {"z", "z_prime", "eps_pair"})
    arrays = {}
    for key in ("z", "z_prime"):
        if key not in table:
            raise ValueError(f"config is missing the key pair.{key}")
        try:
            a = np.asarray(table[key], dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"pair.{key} must be an array of numbers (n rows of d values, "
                             f"nan for a missing value)") from None
        if a.ndim != 2 or 0 in a.shape:
            raise ValueError(f"pair.{key} must have shape (n, d), got shape {a.shape}")
        arrays[key] = a
    if arrays["z"].shape != arrays["z_prime"].shape:
        raise ValueError(f"pair.z and pair.z_prime must have the same shape, got "
                         f"{arrays['z'].shape} and {arrays['z_prime'].shape}")
    n, d = arrays["z"].shape
    for key, value in (("n", n), ("d", d)):
        if scenario.setdefault(key, value) != value:
            raise ValueError(f"scenario.{key} must match the pair's shape ({n}, {d}), got "
                             f"scenario.{key}={scenario[key]}")
    return PairConfig(arrays["z"].tolist(), arrays["z_prime"].tolist(),
                      _declared_eps(table.get("eps_pair")))


def _declared_eps(value: object) -> float | None:
    """``pair.eps_pair`` as a float ≥ 0 (``inf`` allowed), or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0.0:
        raise ValueError(f"pair.eps_pair must be a number in [0, inf], got "
                         f"pair.eps_pair={value!r}")
    return float(value)
