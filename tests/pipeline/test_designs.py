"""The designs: what each refuses, where each acts, and that the runner asks them instead of
branching on the config."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from audit.pipeline import designs as ds
from audit.pipeline import runner
from audit.pipeline.config import config_from_dict
from audit.pipeline.factory import assemble
from audit.pipeline.runner import run_audit
from tests.adapters.example_mechanisms import noisy_sum  # noqa: F401 - the target's module

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.adapters.example_mechanisms:noisy_sum"


def _doc(**extra) -> dict:
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1,
                         "n": 3},
            "missingness": {"kind": "mcar-iid", "rate": 0.2},
            "implementation": {"target": TARGET, "epsilon": 1.0, "chunk": 500,
                               "params": {"bound": 1.0, "scale": 2.0}},
            "audit": {"trials": 6_000, "seed": 3, "bins": 200}, **extra}


@pytest.fixture
def registered(tmp_path, monkeypatch):
    """A temporary distribution declaring the test-only ``[first_chunk]`` design."""
    info = tmp_path / "first_chunk_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: first-chunk-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[audit.designs]\nfirst_chunk = tests.pipeline.first_chunk_design:FirstChunk\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_design_acts_nowhere_unless_it_says_so():
    plain = ds.PlainDesign()
    assert plain.supports(None) is None
    assert plain.wrap("subject") == "subject"
    assert plain.run(None, 0, False) is None
    assert plain.monitor(None, None, None) is None
    assert plain.claim_region(None, None, None, None) is None
    assert plain.verdict(None, None, None, None) is None
    assert not plain.watches_main_run and ds.SequentialDesign.watches_main_run
    # each built-in design overrides exactly the points where it acts
    acts = {cls.__name__: sorted(name for name in ("run", "monitor", "claim_region", "verdict",
                                                     "wrap")
                                 if getattr(cls, name) is not getattr(ds.DesignPart, name))
            for cls in (ds.PlainDesign, ds.SequentialDesign, ds.OnlineDesign,
                        ds.RepeatedDesign, ds.StratifiedDesign, ds.CurveClaimDesign)}
    assert acts == {"PlainDesign": [], "SequentialDesign": ["monitor"],
                    "OnlineDesign": ["run"], "RepeatedDesign": [], "StratifiedDesign": [],
                    "CurveClaimDesign": ["claim_region", "verdict"]}


def test_the_config_names_its_designs_in_order():
    doc = _doc(releases={"count": 2, "masks": "shared"})
    doc["audit"]["mode"] = "sequential"
    parts, _ = assemble(config_from_dict(doc))
    assert [type(d).__name__ for d in parts.designs] == [
        "PlainDesign", "SequentialDesign", "RepeatedDesign"]
    claim = config_from_dict(_doc(claim={"curve": "gaussian"}))
    assert [type(d).__name__ for d in ds.designs_of(claim)] == ["PlainDesign",
                                                                 "CurveClaimDesign"]


def test_a_stratified_subject_that_tests_at_looks_gets_no_monitor():
    class Looks:
        tests_at_looks = True

    assert ds.SequentialDesign().monitor(Looks(), None, None) is None


def _branched_on(function) -> set[str]:
    """The attribute names read in the conditions of ``function``'s branches."""
    tree = ast.parse(inspect.getsource(function).lstrip())
    tests = [n.test for n in ast.walk(tree) if isinstance(n, ast.If | ast.IfExp | ast.While)]
    tests += [c for n in ast.walk(tree) if isinstance(n, ast.comprehension) for c in n.ifs]
    return {node.attr for t in tests for node in ast.walk(t) if isinstance(node, ast.Attribute)}


def test_the_runner_asks_the_designs_instead_of_branching_on_the_config():
    # the audit's run branches on no mode, claim, strata or releases of the config: the
    # designs answer (a new kind of design edits no line of the runner)
    source = Path(runner.__file__).read_text()
    assert "AuditMode" not in source
    config_keys = {"mode", "claim", "strata", "releases", "search", "pair", "designs"}
    for function in (runner._audit, runner._prepare):
        assert not _branched_on(function) & config_keys, function.__name__
    # the check can fail: a branch on the mode is seen
    def branches(subject):
        if subject.config.audit.mode is not None:
            return 1
    assert _branched_on(branches) & config_keys == {"mode"}


def test_a_registered_design_acts_at_a_point_of_the_run(registered):
    cfg = config_from_dict(_doc(first_chunk={"chunks": 2}))
    parts, _ = assemble(cfg)
    assert [type(d).__name__ for d in parts.designs] == ["PlainDesign", "FirstChunk"]
    res = run_audit(cfg)
    # stopped by the plug-in's monitor after two chunks of 500 calls, its bound sequential
    assert res.trials == 1_000
    assert res.witness["kind"] == "sequential"
    assert res.to_dict()["config"]["first_chunk"] == {"chunks": 2}
    plain = run_audit(config_from_dict(_doc()))
    assert plain.trials == 6_000 and plain.witness["kind"] != "sequential"
    # what the design refuses is refused before any work, with its own reason
    doc = _doc(first_chunk={"chunks": 2})
    doc["audit"]["mode"] = "sequential"
    with pytest.raises(ValueError, match=r"^\[first_chunk\] runs its own sequential test"):
        config_from_dict(doc)


def test_a_registered_design_that_only_wraps_is_wrapped():
    class Wraps:
        table = "wraps"

        def supports(self, parts):
            return "no"

        def wrap(self, subject):
            return ("wrapped", subject)

    part = ds.RegisteredDesign(Wraps())
    assert part.supports(None) == "no" and part.wrap(1) == ("wrapped", 1)
    assert part.monitor(None, None, None) is None and part.run(None, 0,
                                                                        False) is None


def test_the_bin_scores_are_computed_once_and_only_when_a_design_reads_them():
    calls = []

    class Counting:
        def bin_scores(self, score):
            calls.append(score)
            return [1.0, 2.0]

    scored = ds.Scored(Counting(), "score")
    assert calls == []  # a run whose designs read no scores computes none
    assert scored.bin_scores == [1.0, 2.0] and scored.bin_scores == [1.0, 2.0]
    assert calls == ["score"]
