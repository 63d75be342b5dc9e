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
import json
import math
import os
import platform
import tempfile
from dataclasses import asdict, dataclass, field, is_dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

__all__ = [
    "AuditResult",
    "to_jsonable",
    "save_json",
    "load_json",
    "check_output_file",
    "check_output_dir",
    "package_versions",
    "DEFAULT_RESULTS_DIR",
]

DEFAULT_RESULTS_DIR = Path("results")
_PACKAGES = ("numpy", "scipy", "numba", "statsmodels", "joblib")


def package_versions() -> dict[str, str]:
    """Versions of Python and the numerical packages, recorded in every result."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover - core dependencies are installed
            out[name] = "not installed"
    return out


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

    The path must not be a directory and its folder must exist (or be creatable) and accept
    a new file. Raises ``ValueError`` naming the option otherwise.
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{name} must name a file, got a directory: {name}={str(p)!r}")
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_json(path: str | Path) -> dict:
    """Read a result file; ``ValueError`` with the path if it is missing or not JSON."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"result file not found: {path}")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"result file {path} is not valid JSON: {exc}") from None


@dataclass
class AuditResult:
    """What one audit found, with every ceiling beside it (JSON via :meth:`to_dict`).

    ``timings`` holds the seconds spent in each phase (plan, pilot, fit, selection, main run,
    bound); ``seconds`` is their total. For an implementation audited as a black box,
    ``eps_claim`` is the ε it claims (``claim`` says what and at which δ), ``eps_theory`` that
    claim amplified by [RPS] Theorem 3.2 under the audit's missingness (where MAR holds), and
    ``eps_pair``/``eps_fdp`` are None (the law of a black box is unknown). ``refutations``
    lists the claims a sequential test rejected (it proves ε > the claim, which ε_lower, a
    grid value, may only equal).
    """

    name: str
    eps_lower: float
    eps_point: float | None
    eps_pair: float | None
    eps_pair_error: float | None
    eps_theory: float | None
    theory: str
    eps_fdp: float | None
    eps_base: float
    eps_mar_formula: float | None
    delta: float
    p_star: float
    rho: float
    missing_class: str
    noise_scale: float
    attack: str
    selection: str
    trials: int
    pilot_trials: int
    seconds: float
    confidence: float
    seed: int
    witness: dict
    config: dict
    timings: dict = field(default_factory=dict)
    eps_claim: float | None = None
    claim: dict | None = None
    refutations: list = field(default_factory=list)
    versions: dict = field(default_factory=package_versions)

    def to_dict(self) -> dict:
        """JSON-able dict of every field, plus ``violations`` (:meth:`ceiling_violations`)."""
        return to_jsonable({**asdict(self), "violations": self.ceiling_violations()})

    def ceiling_violations(self) -> list[str]:
        """Every ceiling that ε_lower exceeds: empty for a correct implementation w.p. ≥ 1 − α.

        ε_pair is compared with its stated numerical error added; the theory bounds as they
        are. A non-empty list from a valid estimator is evidence of a bug, in the code or in
        the theory it implements (docs/THEORY.md §8).
        """
        out = []
        if self.eps_pair is not None and self.eps_lower > self.eps_pair + (
                self.eps_pair_error or 0.0):
            out.append(f"eps_lower={self.eps_lower:.6g} > eps_pair={self.eps_pair:.6g}")
        if self.eps_theory is not None and self.eps_lower > self.eps_theory:
            out.append(f"eps_lower={self.eps_lower:.6g} > eps_theory={self.eps_theory:.6g} "
                       f"({self.theory})")
        if self.eps_fdp is not None and self.eps_lower > self.eps_fdp:
            out.append(f"eps_lower={self.eps_lower:.6g} > eps_fdp={self.eps_fdp:.6g}")
        if self.eps_claim is not None and self.eps_lower > self.eps_claim:
            out.append(f"eps_lower={self.eps_lower:.6g} > claimed epsilon="
                       f"{self.eps_claim:.6g}: the implementation's claim is refuted")
        return out + [r for r in self.refutations if r not in out]
