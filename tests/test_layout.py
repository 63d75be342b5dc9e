"""Project layout rules that code review alone would let slip."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module.split(".")[0])
    return mods


def test_audit_never_imports_attacks():
    offenders = [p.name for p in (ROOT / "audit").glob("*.py") if "attacks" in _imports(p)]
    assert offenders == []


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_cmd = 'python3 -m pip install -e ".[test]" && python3 -m pytest'
    assert test_cmd in readme
    assert ci.strip().splitlines()[-1].strip() == test_cmd
