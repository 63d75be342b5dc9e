"""The experiment registry and its layering: what every experiment module provides, and who
may import whom."""

from __future__ import annotations

import ast
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import experiments
from experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[2]
#: modules of ``experiments`` that are not suite experiments (``opendp_issues``: a stand-alone
#: script writing ``results/opendp_issues.md``, deliberately outside the suite;
#: ``releases_persistent``: the ``releases`` experiment's persistence curve; ``nan_findings``,
#: ``nan_verdicts``, ``opendp_issues_more``: the NaN table's findings, verdict rule, releases)
HELPERS = {"common", "plotting", "report", "suite", "cli_report", "cli_suite", "opendp_issues",
           "nan_regression", "releases_persistent", "library_targets", "releases_setup",
           "nan_findings", "nan_verdicts", "opendp_issues_more"}


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_module_provides_name_title_caption_run_draw(name):
    module = EXPERIMENTS[name]
    assert module.NAME == name == module.__name__.rsplit(".", 1)[1]
    assert isinstance(module.TITLE, str) and module.TITLE.strip()
    assert isinstance(module.CAPTION, str) and len(module.CAPTION.split()) >= 20
    run = inspect.signature(module.run).parameters
    assert list(run) == ["size", "seed", "jobs", "progress"]
    assert run["size"].default == "default" and isinstance(run["seed"].default, int)
    assert list(inspect.signature(module.draw).parameters) == ["doc", "fig"]


def test_registry_is_the_one_list_of_experiments():
    modules = {m.name for m in pkgutil.iter_modules(experiments.__path__)}
    assert set(EXPERIMENTS) == modules - HELPERS
    for helper in HELPERS:
        assert helper in modules  # a renamed helper must be renamed here too


def test_seeds_differ_between_experiments():
    seeds = [inspect.signature(m.run).parameters["seed"].default for m in EXPERIMENTS.values()]
    assert len(set(seeds)) == len(seeds)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_titles_and_captions_capitalise_mechanism_names(name):
    module = EXPERIMENTS[name]
    for text in (module.TITLE, module.CAPTION):
        assert not re.search(r"\b(laplace|gaussian)\b", text), text


def test_importing_experiments_loads_no_audit_machinery_or_plotting():
    # python -m audit imports the experiments' command modules (and with them every
    # experiment) to build its parser, for every command including `bound`.
    code = ("import json, sys, experiments, experiments.cli_report, experiments.cli_suite; "
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(), cwd=ROOT, check=True).stdout
    loaded = set(json.loads(out))
    assert "experiments.mar_mnar" in loaded
    heavy = {"scipy", "numba", "matplotlib", "audit.simulation", "audit.pipeline.runner"}
    assert heavy & loaded == set()


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_audit_never_imports_experiments():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "audit").rglob("*.py")
                 if any(m.split(".")[0] == "experiments" for m in _imported_modules(p))]
    assert offenders == []


def test_experiments_never_use_pyplot_or_select_a_backend():
    for path in (ROOT / "experiments").rglob("*.py"):
        assert "matplotlib.pyplot" not in _imported_modules(path), path
        calls = [n for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "use" and isinstance(n.func.value, ast.Name)
                 and n.func.value.id == "matplotlib"]
        assert calls == [], path
