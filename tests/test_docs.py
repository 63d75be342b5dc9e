"""The documentation site (mkdocs.yml, docs/) builds in strict mode: a broken link, a missing
page, an unresolved API reference or a docstring the numpy parser warns about fails here, and
so in ``.ci/run``. The build needs the ``test`` extra's ``mkdocs`` and ``mkdocstrings[python]``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_build_strictly(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr}\n{proc.stdout}"
