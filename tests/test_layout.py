"""Project layout rules that code review alone would let slip.

The layers of ``audit`` (docs/DESIGN.md) and what each may import. Every import counts,
including those inside functions: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: layer -> the layers it may import (itself always allowed). "shared" is the small
#: vocabulary at the top of the package: enums, protocols, the Mixture law, statistics,
#: validation and numerical helpers.
LAYERS: dict[str, set[str]] = {
    "shared": set(),
    "theory": {"shared"},
    "model": {"shared", "theory"},
    "simulation": {"shared", "model"},
    "estimation": {"shared"},
    "pipeline": {"shared", "theory", "model", "simulation", "estimation", "adapters"},
    "cli": {"shared", "theory", "model", "simulation", "estimation", "adapters", "pipeline"},
    "adapters": {"shared", "model"},
}
#: modules at the top of ``audit`` that are entry points for users, over every layer: the lazy
#: exports, ``python -m audit`` and ``assert_private`` for users' test suites
FACADE = {"__main__", "testing"}
#: third-party packages only one layer may import (None: no layer of the core)
EXCLUSIVE = {"numba": "simulation", "matplotlib": None}
#: third-party packages a layer is limited to (layers not listed may use any dependency)
THIRD_PARTY = {"shared": {"numpy", "scipy"}, "theory": {"numpy", "scipy"}}
MAX_FUNCTION_LINES, MAX_MODULE_LINES = 80, 600
#: first-party packages the core never imports (they import it)
FORBIDDEN_TOP = {"attacks", "experiments", "benchmarks", "tests"}


def layer_of(module: str) -> str | None:
    """The layer of a dotted ``audit`` module name, None outside ``audit``."""
    parts = module.split(".")
    if parts[0] != "audit":
        return None
    if len(parts) == 1 or parts[1] in FACADE:
        return "facade"  # the package's entry points
    return parts[1] if parts[1] in LAYERS else "shared"


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``path``, relative ones resolved."""
    me = _module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            # ``from audit import theory`` imports the subpackage audit.theory
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names
                    if mod == "audit" and layer_of(f"audit.{a.name}") != "shared"]
    return out


def layer_violations(root: Path) -> list[str]:
    """Every import under ``root/audit`` that breaks the layer table."""
    bad = []
    for path in sorted((root / "audit").rglob("*.py")):
        me = _module_name(path, root)
        mine = layer_of(me)
        for line, mod in imports_of(path, root):
            where = f"{path.relative_to(root)}:{line} imports {mod}"
            top = mod.split(".")[0]
            if top in FORBIDDEN_TOP:
                bad.append(f"{where} (the core never imports {top})")
            elif top in EXCLUSIVE and mine != EXCLUSIVE[top]:
                owner = EXCLUSIVE[top]
                bad.append(f"{where} (only the {owner} layer may import {top})" if owner
                           else f"{where} (the core never imports {top})")
            elif (mine in THIRD_PARTY and top not in ("audit", "__future__")
                  and top not in sys.stdlib_module_names and top not in THIRD_PARTY[mine]):
                bad.append(f"{where} (the {mine} layer uses only "
                           f"{', '.join(sorted(THIRD_PARTY[mine]))} beyond the standard library)")
            theirs = layer_of(mod)
            if theirs is None or mine == "facade" or theirs == mine:
                continue
            if theirs == "facade":
                bad.append(f"{where} (import from the layer, not the package facade)")
            elif theirs not in LAYERS[mine]:
                bad.append(f"{where} ({mine} may not import {theirs})")
    return bad


def test_every_layer_imports_only_what_the_table_allows():
    assert layer_violations(ROOT) == []


def _long_units(root: Path) -> list[str]:
    out = []
    for path in sorted((root / "audit").rglob("*.py")):
        src = path.read_text()
        name = str(path.relative_to(root))
        if src.count("\n") > MAX_MODULE_LINES:
            out.append(f"{name}: {src.count(chr(10))} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return out


def test_no_function_over_80_lines_no_module_over_600():
    assert _long_units(ROOT) == []


def test_the_size_rule_catches_a_long_function(tmp_path):
    (tmp_path / "audit").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(85))
    (tmp_path / "audit" / "big.py").write_text(f"def f():\n{body}")
    assert _long_units(tmp_path) == ["audit/big.py:1 f: 86 lines"]


def test_every_subpackage_of_audit_is_in_the_table():
    subpackages = {p.parent.name for p in (ROOT / "audit").glob("*/__init__.py")}
    assert subpackages == set(LAYERS) - {"shared"}


@pytest.mark.parametrize(("path", "source", "needle"), [
    ("audit/theory/bad.py", "from audit.simulation import engine\n",
     "theory may not import simulation"),
    ("audit/estimation/bad.py", "def f():\n    from audit.pipeline import runner\n",
     "estimation may not import pipeline"),
    ("audit/model/bad.py", "import numba\n", "only the simulation layer may import numba"),
    ("audit/pipeline/bad.py", "from experiments import EXPERIMENTS\n",
     "the core never imports experiments"),
    ("audit/bad.py", "from audit.theory import accountant\n",
     "shared may not import theory"),
    ("audit/model/bad.py", "from ..pipeline import plan\n", "model may not import pipeline"),
    ("audit/theory/bad.py", "import statsmodels\n", "the theory layer uses only numpy, scipy"),
    ("audit/pipeline/bad.py", "import matplotlib.pyplot\n", "the core never imports matplotlib"),
])
def test_a_deliberate_violation_is_caught(tmp_path, path, source, needle):
    for sub in LAYERS:
        if sub != "shared":
            (tmp_path / "audit" / sub).mkdir(parents=True, exist_ok=True)
            (tmp_path / "audit" / sub / "__init__.py").write_text("")
    (tmp_path / "audit" / "__init__.py").write_text("")
    (tmp_path / path).write_text(source)
    found = layer_violations(tmp_path)
    assert len(found) == 1 and needle in found[0], found


def test_allowed_imports_pass(tmp_path):
    (tmp_path / "audit" / "pipeline").mkdir(parents=True)
    (tmp_path / "audit" / "pipeline" / "ok.py").write_text(
        "from audit.simulation import engine\nfrom audit.enums import NoiseKind\nimport numpy\n")
    assert layer_violations(tmp_path) == []


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_cmd = 'python3 -m pip install -e ".[test]" && python3 -m pytest'
    assert test_cmd in readme
    assert ci.strip().splitlines()[-1].strip() == test_cmd
