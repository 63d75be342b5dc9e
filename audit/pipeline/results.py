"""Reading and writing result files without ever leaving a half-written one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["save_json", "load_json", "DEFAULT_RESULTS_DIR"]

DEFAULT_RESULTS_DIR = Path("results")


def save_json(obj: dict, path: str | Path) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (temporary file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=2, sort_keys=False, allow_nan=False)
            fh.write("\n")
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
    except json.JSONDecodeError as exc:
        raise ValueError(f"result file {path} is not valid JSON: {exc}") from None
