"""What an audit returns, and how results are written and read.

- :class:`AuditResult` puts the empirical lower bound beside every ceiling and checks itself
  (:meth:`AuditResult.ceiling_violations`);
- :func:`to_jsonable` is the one JSON encoding of the project (non-finite floats become the
  strings ``"inf"``, ``"-inf"``, ``"nan"``; arrays lists; enums their values);
- :func:`save_json` writes atomically (temporary file, then rename), so a reader never sees a
  half-written file; :func:`load_json` reads one back with a clear error.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import os
import platform
import tempfile
from dataclasses import asdict, dataclass, field, is_dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from audit.enums import CeilingKind

# (imported for their registration under their witness kind)
from audit.estimation import online, regions, sequential, strata  # noqa: F401
from audit.estimation.curve_claims import CurveClaimResult
from audit.estimation.witness import Bound, bound_kind
from audit.pipeline.ceilings import Ceiling, ClaimReport, Comparison, Violation
from audit.pipeline.ceilings import violations as find_violations
from audit.pipeline.schema import SCHEMA_VERSION
from audit.pipeline.search import SearchReport
from audit.pipeline.subject import Setting

__all__ = [
    "AuditResult",
    "to_jsonable",
    "save_json",
    "write_text_atomic",
    "atomic_write",
    "load_json",
    "bound_from_witness",
    "check_output_file",
    "check_output_dir",
    "package_versions",
    "DEFAULT_RESULTS_DIR",
]

DEFAULT_RESULTS_DIR = Path("results")
_PACKAGES = ("numpy", "scipy", "numba", "statsmodels", "joblib")


def package_versions() -> dict[str, str]:
    """Versions of Python and the numerical packages, recorded in every result (read once a
    process: each read parses a distribution's metadata, 7 ms an audit)."""
    return dict(_package_versions())


@functools.lru_cache(maxsize=1)
def _package_versions() -> tuple:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover - core dependencies are installed
            out[name] = "not installed"
    return tuple(out.items())


def to_jsonable(obj):
    """``obj`` with every value JSON can hold: dicts, lists, str, int, finite float, None."""
    if is_dataclass(obj) and not isinstance(obj, type):
        obj = asdict(obj)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        v = float(obj)
        return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
    return obj


def _probe_directory(directory: Path, name: str, value: str) -> None:
    """Create and remove a file in ``directory``: the only reliable writability test (root
    passes ``os.access`` everywhere, /proc and read-only mounts refuse the write)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".write-test.", dir=directory)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ValueError(f"{name} must be writable, got {name}={value!r} "
                         f"({exc.strerror or exc})") from None


def check_output_file(path: str | Path, name: str) -> Path:
    """Check, before any work, that a result file can be written at ``path``.

    The path must not be a directory. An existing non-regular file (``/dev/null``, a pipe, a
    device) is written through in place, so it must be writable; otherwise the folder must
    exist (or be creatable) and accept a new file. Raises ``ValueError`` naming the option.
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{name} must name a file, got a directory: {name}={str(p)!r}")
    if p.exists() and not p.is_file():
        if not os.access(p, os.W_OK):
            raise ValueError(f"{name} must be writable, got {name}={str(p)!r}")
        return p
    check_output_dir(p.parent if str(p.parent) else Path("."), name, shown=str(p))
    return p


def check_output_dir(path: str | Path, name: str, *, shown: str | None = None) -> Path:
    """Check, before any work, that ``path`` is (or can be created as) a writable folder."""
    p = Path(path)
    shown = str(p) if shown is None else shown
    existing = p
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{name} must be a folder (or inside one), got {name}={shown!r}: "
                         f"{str(existing)!r} is a file")
    _probe_directory(existing, name, shown)
    return p


def save_json(obj: dict, path: str | Path) -> Path:
    """Write ``obj`` (made JSON-able by :func:`to_jsonable`) to ``path`` atomically.

    The file gets the permissions the user's umask gives a new file (not the 0600 of the
    temporary file it is written through).
    """
    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n"
    return write_text_atomic(text, path)


def write_text_atomic(text: str, path: str | Path) -> Path:
    """Write ``text`` (UTF-8) to ``path`` with :func:`atomic_write`."""
    return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def atomic_write(path: str | Path, write) -> Path:
    """Write ``path`` so that a reader never sees a half-written file; ``write(fh)`` writes
    the content to a binary file object.

    A regular file (or a new one) is written to a temporary file in the same folder and then
    renamed over ``path`` (a symbolic link is followed: its target is replaced, not the link).
    A non-regular target (``/dev/null``, a pipe, a device) is written through in place and
    never replaced. The file gets the permissions the user's umask gives a new file. On
    failure (a full disk) nothing partial is left behind, ``path`` keeps its old content, and
    the ``OSError`` is raised again with ``filename`` set to ``path``.
    """
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    try:
        if path.exists() and not path.is_file():
            with open(path, "wb") as fh:
                write(fh)
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def bound_from_witness(witness: dict) -> Bound:
    """The typed bound a result's JSON ``witness`` describes: the class registered for its
    ``kind`` (:mod:`audit.estimation.witness`; results written before the ``kind`` key
    existed are told apart here, in one place, by their fields).

    Raises ``ValueError`` when ``witness`` is not an object, names no registered kind, or
    lacks a field of its kind.
    """
    if not isinstance(witness, dict):
        raise ValueError(f"witness must be a JSON object, got {type(witness).__name__}")
    kind = witness.get("kind", "sequential" if "claims_tested" in witness else "region")
    return bound_kind(kind).from_dict(witness)


def load_json(path: str | Path) -> dict:
    """Read a result file; ``ValueError`` with the path if it is missing or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"result file not found: {path}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"result file {path} is not valid JSON: {exc}") from None


@dataclass(frozen=True, eq=False)
class AuditResult:
    """What one audit found, with every ceiling beside it (JSON via :meth:`to_dict`).

    ``bound`` is the typed witness: an :class:`audit.estimation.regions.RegionBound`
    (Clopper–Pearson on one region, or the Bonferroni maximum over a declared grid) or an
    :class:`audit.estimation.sequential.SequentialBound` (an anytime-valid betting test) or
    an :class:`audit.estimation.strata.StratifiedBound` (ε_lower at every missing rate of a
    ``[strata]`` grid from one run; the JSON's ``strata`` entry);
    ``ceilings`` are the subject's (:class:`audit.pipeline.ceilings.Ceiling`); ``setting``
    the missingness setting. ``timings`` holds the seconds spent in each phase (plan, pilot,
    fit, main run, selection and bound); ``seconds`` is their total. ``claim`` is an
    implementation's claim (None for the model); ``attack_note`` what the attack fell back on
    (degenerate, separable or non-finite pilot data; empty when none).

    The JSON document keeps the flat keys the README documents (``eps_pair``,
    ``eps_theory``, ``eps_fdp``, ``eps_claim``, ``witness``, ``violations``, ...), read
    from the typed fields by the properties of the same names.
    """

    name: str
    eps_lower: float
    eps_point: float | None
    bound: Bound
    ceilings: tuple[Ceiling, ...]
    delta: float
    setting: Setting
    attack: str
    selection: str
    trials: int
    pilot_trials: int
    confidence: float
    seed: int
    config: dict
    timings: dict = field(default_factory=dict)
    claim: ClaimReport | None = None
    attack_note: str = ""
    #: a value beside the ceilings that is NOT a bound (JSON ``comparisons``), or None
    comparison: Comparison | None = None
    #: how a black-box pair search chose the pair (``[search]``); None for a given pair
    search: SearchReport | None = None
    #: the verdict of the config's curve claim (``[claim]``); None without one
    curve_claim: CurveClaimResult | None = None
    versions: dict = field(default_factory=package_versions)

    @classmethod
    def from_run(cls, subject, bound, *, attack: str, selection: str, trials: int,
                 pilot_trials: int, timings: dict, attack_note: str = "",
                 search: SearchReport | None = None,
                 curve_claim: CurveClaimResult | None = None) -> AuditResult:
        """The result of an audit of ``subject`` whose main run gave ``bound``."""
        cfg = subject.config
        return cls(name=cfg.name, eps_lower=float(bound.eps_lower), eps_point=bound.plug_in(),
                   bound=bound, ceilings=tuple(subject.ceilings), delta=subject.delta,
                   setting=subject.setting, attack=attack, selection=selection,
                   trials=int(trials), pilot_trials=int(pilot_trials),
                   confidence=cfg.audit.level, seed=cfg.audit.seed,
                   config=cfg.with_overrides(attack=attack).to_dict(),  # the attack that ran
                   timings=dict(timings), claim=subject.claim,
                   attack_note=attack_note, comparison=subject.comparison,
                   search=search, curve_claim=curve_claim)

    # -- the flat view the JSON document and earlier callers use
    def _ceiling(self, *kinds: CeilingKind) -> Ceiling | None:
        for c in self.ceilings:
            if c.kind in kinds:
                return c
        return None

    def _value(self, *kinds: CeilingKind) -> float | None:
        c = self._ceiling(*kinds)
        return None if c is None else c.value

    @property
    def comparisons(self) -> dict:
        """The comparison as the JSON's ``comparisons`` (empty when there is none)."""
        return {} if self.comparison is None else self.comparison.to_dict()

    @property
    def seconds(self) -> float:
        return float(sum(self.timings.values()))

    @property
    def eps_pair(self) -> float | None:
        return self._value(CeilingKind.PAIR)

    @property
    def eps_pair_error(self) -> float | None:
        c = self._ceiling(CeilingKind.PAIR)
        return None if c is None or c.value is None else c.error

    @property
    def eps_theory(self) -> float | None:
        return self._value(CeilingKind.THEORY, CeilingKind.AMPLIFIED_CLAIM)

    @property
    def theory(self) -> str:
        c = self._ceiling(CeilingKind.THEORY, CeilingKind.AMPLIFIED_CLAIM)
        return "" if c is None else c.label

    @property
    def eps_fdp(self) -> float | None:
        return self._value(CeilingKind.FDP)

    @property
    def eps_family(self) -> float | None:
        """The ε at the audited δ of the boundary member of the ``[claim]`` family the data
        refute (:mod:`audit.estimation.curve_claims`): a statement about the family, a bound
        on the mechanism's ε only if the mechanism is in it; None without a family claim."""
        return None if self.curve_claim is None else self.curve_claim.eps_family

    @property
    def eps_claim(self) -> float | None:
        return self._value(CeilingKind.CLAIM)

    @property
    def p_star(self) -> float:
        return self.setting.p_star

    @property
    def rho(self) -> float:
        return self.setting.rho

    @property
    def missing_class(self) -> str:
        return self.setting.missing_class

    @property
    def noise_scale(self) -> float | None:
        return self.setting.noise_scale

    @property
    def eps_base(self) -> float:
        return self.setting.eps_base

    @property
    def eps_mar_formula(self) -> float | None:
        return self.setting.eps_mar_formula

    @property
    def witness(self) -> dict:
        return to_jsonable(self.bound.to_dict())

    @property
    def violations(self) -> tuple[Violation, ...]:
        """Every ceiling ε_lower exceeds, and every claim a sequential test refuted."""
        return find_violations(self.eps_lower, self.ceilings, self.bound,
                               confidence=self.confidence)

    @property
    def refutations(self) -> list[str]:
        """The claims a sequential test refuted, as lines."""
        return [v.describe() for v in self.violations if v.sequential]

    def ceiling_violations(self) -> list[str]:
        """Every ceiling that ε_lower exceeds: empty for a correct implementation w.p. ≥ 1 − α.

        ε_pair is compared with its stated numerical error added; the theory bounds as they
        are. A non-empty list from a valid estimator is evidence of a bug, in the code or in
        the theory it implements (docs/THEORY.md §8).
        """
        return [v.describe() for v in self.violations]

    def describe(self) -> str:
        """The one sentence summing up the bound (the witness's own)."""
        return self.bound.describe()

    def to_dict(self) -> dict:
        """The JSON document (docs/guide/cli.md, "What an audit reports"): the keys of
        :func:`audit.pipeline.schema.result_schema`, ``schema_version``
        :data:`audit.pipeline.schema.SCHEMA_VERSION`."""
        st = self.setting
        doc = {
            "schema_version": SCHEMA_VERSION,
            "name": self.name, "eps_lower": self.eps_lower, "eps_point": self.eps_point,
            "eps_pair": self.eps_pair, "eps_pair_error": self.eps_pair_error,
            "eps_theory": self.eps_theory, "theory": self.theory, "eps_fdp": self.eps_fdp,
            "eps_base": st.eps_base, "eps_mar_formula": st.eps_mar_formula,
            "delta": self.delta, "p_star": st.p_star, "rho": st.rho,
            "missing_class": st.missing_class, "noise_scale": st.noise_scale,
            "attack": self.attack, "attack_note": self.attack_note,
            "selection": self.selection, "trials": self.trials,
            "pilot_trials": self.pilot_trials, "seconds": self.seconds,
            "confidence": self.confidence, "seed": self.seed, "witness": self.witness,
            "config": self.config, "timings": self.timings, "eps_claim": self.eps_claim,
            "claim": None if self.claim is None else self.claim.to_dict(),
            "refutations": self.refutations, "versions": self.versions,
            "ceilings": [c.to_dict() for c in self.ceilings],
            "comparisons": self.comparisons,
            "violations": self.ceiling_violations(),
        }
        doc.update(self.bound.result_keys())  # a stratified bound: ε_lower at every rate
        if self.search is not None:  # how a black-box pair search found the pair
            doc["search"] = self.search.to_dict()
        if self.curve_claim is not None:  # a [claim]: its own fields, never eps_lower
            doc["eps_family"] = self.eps_family
            doc["curve_claim"] = self.curve_claim.to_dict()
        return to_jsonable(doc)
