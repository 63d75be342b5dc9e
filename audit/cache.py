"""The auditor's cache on disk: where it lives, and the atomic JSON files written into it.

Two things are cached there: the isolated targets' environments
(:mod:`audit.adapters.isolation.environments`, ``envs/<key>``) and the results of the batch
check of a batched form (:mod:`audit.model.batch_check`: ``batch-checks/<key>.json``, or an
isolated target's own ``envs/<key>/batch-checks/``, removed with its environment). Standard
library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_root", "read_json", "write_json_atomic"]

#: the environment variable that moves the cache (tests point it at a temporary folder)
CACHE_ENV = "MISSINGNESS_AUDIT_CACHE"


def cache_root() -> Path:
    """Where the cache lives: ``$MISSINGNESS_AUDIT_CACHE``, else
    ``$XDG_CACHE_HOME/missingness-audit``, else ``~/.cache/missingness-audit``."""
    own = os.environ.get(CACHE_ENV)
    if own:
        return Path(own).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "missingness-audit"


def read_json(path: Path) -> dict | None:
    """The JSON object in ``path``; None when it is missing, unreadable, not JSON or not an
    object (a corrupt cache file is a miss, and is written again)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write_json_atomic(path: Path, doc: dict) -> None:
    """Write ``doc`` to ``path`` so that a reader finds the whole file or none: a temporary
    file in the same folder, flushed to disk, then ``os.replace``. The folder is made if
    missing. Raises ``OSError`` (nothing partial is left behind)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
