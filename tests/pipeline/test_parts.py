"""An audit's parts: a design registered through ``audit.designs`` runs end to end without an
edit to the runner, the factory or the command line, and every refusal of a combination is a
part's ``supports`` answer."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.pipeline import parts as pt
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from tests.adapters.example_mechanisms import noisy_sum

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.adapters.example_mechanisms:noisy_sum"


def _register(root: Path) -> Path:
    """A temporary distribution declaring the test-only design under ``audit.designs``."""
    info = root / "split_design_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: split-design-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[audit.designs]\nsplit = tests.pipeline.split_design:SplitMain\n")
    return root


@pytest.fixture
def registered(tmp_path, monkeypatch):
    root = _register(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    return root


def _model(**extra) -> dict:
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1,
                         "n": 3},
            "missingness": {"kind": "mcar-iid", "rate": 0.2},
            "audit": {"trials": 20_000, "seed": 3, "bins": 200}, **extra}


def _implementation(**extra) -> dict:
    doc = _model(**extra)
    doc["implementation"] = {"target": TARGET, "epsilon": 1.0,
                             "params": {"bound": 1.0, "scale": 2.0}}
    doc["audit"]["trials"] = 2_000
    return doc


def test_a_registered_design_runs_through_the_runner(registered):
    assert "split" in pt.available_designs()
    cfg = config_from_dict(_model(split={"parts": 3}))
    assert [type(d).__name__ for d in cfg.designs] == ["SplitMain"]
    res = run_audit(cfg)
    plain = run_audit(config_from_dict(_model()))
    assert res.trials == plain.trials == 20_000
    assert res.to_dict()["config"]["split"] == {"parts": 3}  # the JSON records the design
    # the same pilot and region (the design changes the main run only), other main counts
    assert res.witness["threshold"] == plain.witness["threshold"]
    assert (res.witness["k_p"], res.witness["k_q"]) != (plain.witness["k_p"],
                                                          plain.witness["k_q"])
    assert not res.violations and 0.0 <= res.eps_lower <= res.eps_pair + 1e-9


def test_a_registered_design_wraps_a_black_box_too(registered):
    res = run_audit(config_from_dict(_implementation(split={"parts": 2})))
    assert res.trials == 2_000 and res.attack == "auto"
    assert res.to_dict()["config"]["split"] == {"parts": 2}


def test_a_registered_design_refuses_through_supports(registered):
    doc = _implementation(split={"parts": 2})
    doc["audit"]["mode"] = "sequential"
    with pytest.raises(ValueError, match=r"^\[split\] runs a fixed main run"):
        config_from_dict(doc)
    with pytest.raises(ValueError, match=r"split.parts must be an integer in \[2, 16\]"):
        config_from_dict(_model(split={"parts": 1}))


def test_a_table_no_design_registers_is_refused():
    with pytest.raises(ValueError, match=r"unknown key config.splitz"):
        config_from_dict(_model(splitz={"parts": 2}))


def test_a_registered_design_runs_through_the_command_line(registered, tmp_path):
    cfg = tmp_path / "split.toml"
    cfg.write_text('[scenario]\nmechanism = "laplace"\nepsilon = 1.0\nquery = "sum"\nd = 1\n'
                   'n = 3\n[missingness]\nkind = "mcar-iid"\nrate = 0.2\n'
                   '[audit]\ntrials = 20000\nseed = 3\nbins = 200\n[split]\nparts = 4\n')
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(registered), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "audit", "run", str(cfg), "--json", str(out),
                           "--no-progress"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["config"]["split"] == {"parts": 4} and doc["trials"] == 20_000
    # refused before any work, one error line
    cfg.write_text(cfg.read_text().replace("parts = 4", "parts = 40"))
    proc = subprocess.run([sys.executable, "-m", "audit", "run", str(cfg)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith("error: split.parts")
    assert len(proc.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- refusals
#: What a refusal of a combination is, read from its message: a ``raise`` whose literal text
#: names two different parts of an audit. The parts are those ``audit.pipeline.parts``
#: combines: the target kind (the model, an implementation, a black box), each pair source
#: (``[pair]``, ``[search]``), each built-in design (``[releases]``, ``[strata]``, the
#: sequential/selection design of ``audit.mode``/``audit.selection``), the attack, the
#: backend (``audit.backend``, the engine) and the setting (``scenario.*``,
#: ``missingness.*``, its noise among them). Keys that set a size or a value only
#: (``audit.trials``, ``audit.seed``, ...) are no part: a message naming ``strata.floor`` and
#: ``audit.trials`` is a range, not a combination.
PART_WORDS = {
    "target": r"\bmodel audit|\bthe model\b|\ban implementation\b|\bimplementation audit"
              r"|\bblack[- ]box|\bwhite-box|\[implementation\]|\bimplementation\.[a-z_]+",
    "pair": r"\[pair\]|\bpair\.(z|z_prime)\b",
    "search": r"\[search\]|\bsearch\.[a-z_]+",
    "releases": r"\[releases\]|\breleases\.[a-z_]+",
    "strata": r"\[strata\]|\bstrata\.[a-z_]+",
    "design": r"\baudit\.(mode|selection)\b",
    "attack": r"\baudit\.attack\b",
    "backend": r"\baudit\.backend\b|\bthe engine\b",
    "setting": r"\bscenario\.[a-z_]+|\bmissingness\.[a-z_]+",
    "delta": r"\baudit\.delta\b",
}
#: Refusals naming two parts that are no part's answer, each with why: limits of the model's
#: plan, known only once the worst-case pair gives the laws (refused while planning, before
#: any draw). A new refusal outside the parts fails the scan until it moves into a
#: ``supports`` or is listed here with its reason.
NOT_PARTS_ANSWERS = {
    ("audit/pipeline/plan.py", "_worst_case_pair"):
        "k Gaussian releases at sigma/sqrt(k) whose pair the search cannot resolve: known "
        "once the pair search ran",
    ("audit/pipeline/repeated.py", "laws"):
        "the k-release law's size (components × k × dim) is known once the pair's laws are",
}


def _message(node) -> str:
    import ast

    return " ".join(n.value for n in ast.walk(node)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _combination_refusals(root: Path) -> dict:
    """``(module path, enclosing function) -> [(line, parts named, message)]`` of every raise
    under ``root/audit`` whose message names two parts (:data:`PART_WORDS`), outside
    ``audit/pipeline/parts.py`` (the parts' answers are returned there, or by the
    ``*_reason``/``*_refusal`` functions they call, never raised)."""
    import ast
    import re

    words = {part: re.compile(rx) for part, rx in PART_WORDS.items()}
    found: dict = {}
    for path in sorted((root / "audit").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == "audit/pipeline/parts.py":
            continue

        def visit(node, func: str, rel: str = rel) -> None:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                func = node.name  # a raise is listed under its innermost function
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                msg = _message(node.exc)
                named = tuple(sorted(p for p, rx in words.items() if rx.search(msg)))
                if len(named) >= 2:
                    found.setdefault((rel, func), []).append((node.lineno, named, msg))
            for child in ast.iter_child_nodes(node):
                visit(child, func, rel)

        visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_no_refusal_of_a_combination_outside_the_parts():
    found = _combination_refusals(ROOT)
    outside = {k: v for k, v in found.items() if k not in NOT_PARTS_ANSWERS}
    assert not outside, "refusals of a combination outside supports(): " + "; ".join(
        f"{path}:{line} in {func} names {', '.join(named)}: {msg[:80]!r}"
        for (path, func), hits in outside.items() for line, named, msg in hits)
    # every listed exception still exists (the list cannot outlive what it excuses)
    assert set(NOT_PARTS_ANSWERS) <= set(found), set(NOT_PARTS_ANSWERS) - set(found)


def test_the_scan_finds_a_refusal_of_a_combination(tmp_path):
    # the scan can fail: a refusal like those moved into the parts, written in a module
    mod = tmp_path / "audit" / "pipeline" / "somewhere.py"
    mod.parent.mkdir(parents=True)
    mod.write_text("def f(cfg):\n    if cfg.audit.mode == 'sequential':\n"
                   "        raise ValueError(f\"a model audit runs its whole budget: "
                   "audit.mode='sequential' needs {cfg}\")\n"
                   "    raise ValueError('strata.floor exceeds audit.trials')\n")
    (tmp_path / "audit" / "pipeline" / "parts.py").write_text(
        "def g():\n    raise ValueError('[strata] with [releases] needs a black box')\n")
    found = _combination_refusals(tmp_path)
    assert list(found) == [("audit/pipeline/somewhere.py", "f")]
    assert [named for _, named, _ in found["audit/pipeline/somewhere.py", "f"]] == [
        ("design", "target")]


@pytest.mark.parametrize(("doc", "black_box", "part", "needle"), [
    # each refusal moved into a part (issue 41): the answer, and the loader or the factory
    # refusing with it before any work
    (_model(audit={"attack": "knn"}), False, pt.ModelTarget,
     "a model audit counts its runs with the engine"),
    (_model(audit={"attack": "auto"}), False, pt.ModelTarget,
     "audit.attack='auto' scores with projections"),
    (_implementation(releases={"count": 10_001}), True, pt.RepeatedDesign,
     "releases.count must be at most 10000 for an implementation audit"),
    (_implementation(pair={"z": [[1.0], [0.0], [0.0]], "z_prime": [[-1.0], [0.0], [0.0]]},
                     search={"families": ["corners"]}), True, pt.GivenPair,
     "[search] and [pair] are exclusive"),
    (_implementation(search={"families": ["tester"]}), True, pt.SearchedPair,
     "scenario.n must be 1, got n=3"),
])
def test_moved_refusals_are_supports_answers(doc, black_box, part, needle):
    from unittest import mock

    merged = {**doc, "audit": {**_model()["audit"], **doc.get("audit", {})}}
    if "implementation" in doc:
        merged["audit"]["trials"] = 2_000
    with mock.patch("audit.pipeline.parts.check_config"):
        cfg = config_from_dict(merged)
    parts = pt.parts_of(cfg, black_box=black_box)
    answers = {type(p).__name__: p.supports(parts)
               for p in (parts.target, parts.pairs, *parts.designs)}
    assert needle in (answers[part.__name__] or ""), answers
    # refused with that answer, before any plan or draw
    with mock.patch("audit.pipeline.factory.build_plan", side_effect=AssertionError("work")), \
            pytest.raises(ValueError) as err:
        run_audit(config_from_dict(merged), implementation=_impl() if black_box and
                  "implementation" not in doc else None)
    assert needle in str(err.value)


def test_a_knn_model_audit_is_refused_on_the_command_line_before_any_work(tmp_path):
    cfg = tmp_path / "knn.toml"
    cfg.write_text('[scenario]\nmechanism = "laplace"\nepsilon = 1.0\nquery = "sum"\nd = 2\n'
                   'n = 3\n[missingness]\nkind = "mcar-iid"\nrate = 0.2\n'
                   '[audit]\ntrials = 20000\nseed = 3\nattack = "knn"\n')
    proc = subprocess.run([sys.executable, "-m", "audit", "run", str(cfg), "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: a model audit counts its runs with the engine")
    assert len(proc.stderr.strip().splitlines()) == 1


def _impl():
    from audit.model.implementation import CallableImplementation, Claim

    return CallableImplementation(lambda data, rng: noisy_sum(data, rng, bound=1.0, scale=2.0),
                                  Claim(1.0, 0.0, "noisy sum"), name="noisy sum")


def test_engine_counted_attacks_score_with_engine_projections():
    # what ModelTarget reads: an attack that says the engine counts its scores returns only
    # engine projections (scalar, vector, few values, non-finite outputs)
    import numpy as np

    from audit.protocols import Pilot, available_attacks, engine_attacks, load_attack
    from audit.statistics import ENGINE_PROJECTIONS

    rng = np.random.default_rng(0)
    pilots = [Pilot(rng.laplace(size=400), rng.laplace(0.5, size=400)),
              Pilot(rng.laplace(size=(400, 3)), rng.laplace(0.5, size=(400, 3))),
              Pilot(rng.integers(0, 3, 400).astype(float), rng.integers(0, 4, 400) * 1.0),
              Pilot(np.where(rng.random((400, 2)) < 0.2, np.nan, rng.normal(size=(400, 2))),
                    rng.normal(1.0, size=(400, 2)))]
    names = engine_attacks()
    assert {"density-ratio", "logistic", "threshold", "exact-lr"} <= set(names)
    assert not {"knn", "additive", "isotonic", "kvector", "categorical", "auto"} & set(names)
    for name in names:
        attack = load_attack(name)
        if attack.white_box:
            continue
        for pilot in pilots:
            assert isinstance(attack.fit(pilot).projection, ENGINE_PROJECTIONS), name
    assert set(names) < set(available_attacks())


def test_a_wrapped_stratified_subject_is_still_one_for_the_runner():
    from audit.pipeline.factory import check_subject, make_subject
    from tests.pipeline.split_design import SplitSubject

    doc = _implementation(strata={"rates": [0.0, 0.2]})
    stratified = make_subject(config_from_dict(doc))
    assert check_subject(SplitSubject(stratified, 2)) is not None  # read through the wrapper
    # a plain implementation subject under the [strata] config: refused, wrapped or not
    plain = make_subject(config_from_dict(_implementation()))
    unstratified = type(plain)(dataclasses.replace(plain.plan, config=config_from_dict(doc)))
    for subject in (unstratified, SplitSubject(unstratified, 2)):
        with pytest.raises(ValueError, match="audited by mask stratum"):
            check_subject(subject)


def test_only_the_parts_ask_whether_a_config_names_its_black_box():
    """Whether a config holds an ``[implementation]`` is asked in one module outside the
    config, :func:`audit.pipeline.parts.names_black_box`; the others read the config's
    answers (``cfg.chunk``, ``cfg.batch``) or ask the parts."""
    import re

    pattern = re.compile(r"(cfg|config)\.implementation\s+is\s+(not\s+)?None|"
                         r"=\s*\w*\.?config\.implementation\s*$")
    root = Path(__file__).resolve().parents[2] / "audit"
    offenders = [f"{path.relative_to(root)}:{i}"
                 for path in sorted(root.rglob("*.py"))
                 if path.name not in ("config.py", "parts.py")
                 for i, line in enumerate(path.read_text().splitlines(), 1)
                 if pattern.search(line)]
    assert offenders == []
    assert pattern.search("        table = plan.config.implementation")  # the scan can fail
