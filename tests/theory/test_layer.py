"""Rules of the theory layer that review alone would let slip: what it may import, how big its
units may grow."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THEORY = ROOT / "audit" / "theory"
NUMERIC = ROOT / "audit" / "_numeric.py"
THIRD_PARTY = {"numpy", "scipy"}
# audit.enums will hold the shared vocabulary (NoiseKind, MissingnessClass)
AUDIT_ALLOWED = {"audit._validate", "audit._numeric", "audit.mixture", "audit.enums"}
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 80, 600


def _modules(path: Path) -> list[Path]:
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _imports(path: Path) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module)
    return mods


def _is_stdlib(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


@pytest.mark.parametrize("path", _modules(THEORY), ids=lambda p: str(p.relative_to(ROOT)))
def test_theory_imports_only_its_allowed_dependencies(path):
    bad = [
        m for m in _imports(path)
        if not (_is_stdlib(m) or m.split(".")[0] in THIRD_PARTY or m in AUDIT_ALLOWED
                or m == "audit.theory" or m.startswith("audit.theory."))
    ]
    assert bad == []


def test_numeric_imports_only_numpy_scipy_math():
    bad = [m for m in _imports(NUMERIC)
           if not (_is_stdlib(m) or m.split(".")[0] in THIRD_PARTY)]
    assert bad == []


@pytest.mark.parametrize("path", _modules(THEORY) + [NUMERIC],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_unit_sizes(path):
    src = path.read_text()
    assert src.count("\n") <= MAX_MODULE_LINES
    long = [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(src))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []
