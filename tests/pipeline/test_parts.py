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


@pytest.mark.parametrize(("doc", "black_box", "part", "needle"), [
    (_model(audit={"mode": "sequential"}), False, pt.SequentialDesign,
     "audit.mode='sequential' tests an implementation's claim"),
    (_implementation(audit={"mode": "sequential", "selection": "grid"}), True,
     pt.SequentialDesign, "audit.selection must be 'pilot' or 'auto'"),
    (_model(search={"families": ["corners"], "calls": 200}), False, pt.SearchedPair,
     "[search] searches the pair of a black box"),
    (_model(strata={"rates": [0.0, 0.2]}), False, pt.StratifiedDesign,
     "[strata] stratifies the masks of an implementation audit"),
    (_implementation(strata={"rates": [0.0, 0.5]}), True, pt.StratifiedDesign,
     "strata.rates must hold the config's missingness.rate=0.2"),
    (_implementation(strata={"rates": [0.0, 0.2]}, releases={"count": 2, "masks": "fresh"}),
     True, pt.StratifiedDesign, "with [releases] it needs releases.masks='shared'"),
    (_implementation(audit={"backend": "cuda"}), True, pt.ImplementationTarget,
     "audit.backend = 'cuda' applies to white-box audits"),
    (_implementation(audit={"attack": "exact-lr"}), True, pt.ImplementationTarget,
     "audit.attack must be a black-box attack (additive, auto"),
    (_model(audit={"attack": "density-ratio", "selection": "model"}), False, pt.ModelTarget,
     "audit.selection='model' needs a white-box attack"),
    (_model(releases={"count": 20_000, "masks": "fresh"}), False, pt.RepeatedDesign,
     "releases.count must be at most"),
    (_model(pair={"z": [[1.0], [0.0], [0.0]], "z_prime": [[-1.0], [0.0], [0.0]]}), False,
     pt.GivenPair, "[pair] gives the neighbours of an implementation audit"),
    (_implementation(audit={"delta": 1e-6}), True, pt.ImplementationTarget,
     "audit.delta sets the δ of the model's audited claim"),
])
def test_every_refusal_of_a_combination_is_a_supports_answer(doc, black_box, part, needle):
    # build the config's parts without the loader's check, then ask each part
    merged = {**doc, "audit": {**_model()["audit"], **doc.get("audit", {})}}
    if "implementation" in doc:
        merged["audit"]["trials"] = 2_000
    cfg = _unchecked(merged)
    parts = pt.parts_of(cfg, black_box=black_box)
    answers = {type(p).__name__: p.supports(parts)
               for p in (parts.target, parts.pairs, *parts.designs)}
    assert needle in (answers[part.__name__] or ""), answers
    # and the loader or the factory refuses with exactly that answer, before any work
    with pytest.raises(ValueError) as err:
        _load_and_build(merged, black_box)
    assert needle in str(err.value)


def _unchecked(doc: dict):
    """A config built with the parts' check disabled (the answers are asked directly)."""
    from unittest import mock

    with mock.patch("audit.pipeline.parts.check_config"):
        return config_from_dict(doc)


def _load_and_build(doc: dict, black_box: bool):
    from audit.pipeline.factory import make_subject

    cfg = config_from_dict(doc)
    return make_subject(cfg, implementation=_impl() if black_box and
                        "implementation" not in doc else None)


def _impl():
    from audit.model.implementation import CallableImplementation, Claim

    return CallableImplementation(lambda data, rng: noisy_sum(data, rng, bound=1.0, scale=2.0),
                                  Claim(1.0, 0.0, "noisy sum"), name="noisy sum")


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
