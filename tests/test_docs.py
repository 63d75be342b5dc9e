"""The documentation site (mkdocs.yml, docs/) builds in strict mode: a broken link, a missing
page, an unresolved API reference or a docstring the numpy parser warns about fails here, and
so in ``.ci/run``. The build needs the ``test`` extra's ``mkdocs`` and ``mkdocstrings[python]``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_build_strictly(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr}\n{proc.stdout}"
    # a superscript star or a subscript underscore (p*, x*, C̃_1) must not open an emphasis
    # that a later one closes: what that renders is a formula in italics with its marks gone
    stray = {}
    for page in (tmp_path / "site").rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        found = [m for m in re.findall(r"<em>(.{0,80}?)</em>", html, re.S)
                 if "=" in m or m.startswith((")", "}"))]
        if "\\_" in html or "\\*" in html:
            found.append("a backslash escape shown as text")
        if found:
            stray[str(page.relative_to(tmp_path))] = found[:3]
    assert not stray, stray
