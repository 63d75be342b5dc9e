"""Shared helpers for experiment definitions: base configs, sizes, result records."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from audit.pipeline.config import AuditConfig
    from audit.pipeline.results import AuditResult

# The runner (and through it scipy and the simulation engine) is imported inside the functions
# that run audits: ``import experiments`` happens whenever ``python -m audit`` builds its
# parser, and drawing a report from saved results needs none of it.

CONFIG_DIR = Path(__file__).parent / "configs"

SIZES = ("smoke", "default", "full")  # smoke: tiny runs for the tests only


def check_size(size: str) -> str:
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(map(repr, SIZES))}, got size={size!r}")
    return size


def base(name: str) -> dict:
    """A base config (parsed TOML document) from ``experiments/configs/<name>.toml``."""
    with open(CONFIG_DIR / f"{name}.toml", "rb") as fh:
        return tomllib.load(fh)


def variant(doc: dict, **changes) -> dict:
    """A deep copy of ``doc`` with dotted keys replaced: ``variant(d, **{"audit.seed": 3})``.

    A value of ``None`` removes the key.
    """
    out = copy.deepcopy(doc)
    for dotted, value in changes.items():
        *path, key = dotted.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(key, None)
        else:
            node[key] = value
    return out


# Settings the suite applies to every audit (e.g. a checkpoint directory), see configure().
_AUDIT_DEFAULTS: dict = {}
# Who is told of every audit an experiment starts (the suite's log), see configure().
_ANNOUNCE: list = []


def configure(*, checkpoint: str | None = None, announce=None) -> None:
    """Suite-wide audit settings: ``checkpoint`` is a directory for the engine's chunks;
    ``announce(name)`` is called with the name of every audit an experiment is about to run
    (each one's config goes through :func:`config`), so a long experiment says where it is."""
    _AUDIT_DEFAULTS.clear()
    if checkpoint is not None:
        _AUDIT_DEFAULTS["checkpoint"] = str(checkpoint)
    _ANNOUNCE[:] = [] if announce is None else [announce]


def config(doc: dict, name: str) -> AuditConfig:
    """Validate a config document, with the suite-wide settings applied, and announce the
    audit it is for (:func:`configure`)."""
    from audit.pipeline.config import config_from_dict

    cfg = config_from_dict(doc, name=name).with_overrides(**_AUDIT_DEFAULTS)
    for announce in _ANNOUNCE:
        announce(name)
    return cfg


def audit(doc: dict, name: str, *, progress: bool = False) -> AuditResult:
    """Validate a config document and run the audit."""
    from audit.pipeline.runner import run_audit

    return run_audit(config(doc, name), progress=progress)


def audit_with_setting(doc: dict, name: str, *, progress: bool = False):
    """Like :func:`audit`, also returning the :class:`audit.pipeline.plan.AuditPlan` (the pair)."""
    from audit.pipeline.plan import plan_audit
    from audit.pipeline.runner import run_audit

    cfg = config(doc, name)
    st = plan_audit(cfg)
    return st, run_audit(cfg, progress=progress, plan=st)


def provenance() -> dict:
    """Which code produced a result: the last commit that changed the checkout's tracked
    files outside ``results/`` (``"unknown"`` outside a git checkout), whether those files had
    uncommitted changes, and the date of that commit (today's UTC date when they had).

    Committing the results themselves changes none of it, so rerunning the seeded suite on an
    unchanged tree writes the same provenance, and REPORT.md stays byte-identical."""
    import datetime
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    code = ("--", ".", ":!results")  # the code's changes, not the results the suite writes
    last = (git("log", "-1", "--format=%h %cs", "--abbrev=12", *code) or "").split()
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", *code))
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    commit, date = (last[0], last[1]) if len(last) == 2 else ("unknown", today)
    return {"commit": commit, "dirty": dirty, "date": today if dirty else date}


def record(name: str, title: str, size: str, seed: int, **payload) -> dict:
    """The JSON document of one experiment (with its :func:`provenance`)."""
    from audit.pipeline.results import package_versions

    return {
        "experiment": name,
        "title": title,
        "size": size,
        "seed": seed,
        "versions": package_versions(),
        "produced": provenance(),
        **payload,
    }
