"""The NaN regression table (experiments/nan_regression.py): the committed table covers every
registered adapter example at the installed library versions, and a rerun keeps its
verdicts (slow)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from audit.adapters import registry
from experiments import nan_regression as nr

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def committed():
    return json.loads((ROOT / "results" / "nan_regression.json").read_text())


def test_the_table_covers_every_registered_example(committed):
    """Every example of the libraries installed here, in the registry's order; then those of
    the isolated libraries the table has audited (``--only``), in the registry's order."""
    have = [(r["target"], r["example"]) for r in committed["rows"]]
    here = [(t, e.name) for t, e in registry.examples(isolated=False)]
    assert have[:len(here)] == here, (
        "the adapters changed: rerun PYTHONPATH=. python experiments/nan_regression.py")
    isolated = [(t, e.name) for t, e in registry.examples() if (t, e.name) not in here]
    assert have[len(here):] == [x for x in isolated if x in have[len(here):]], have


def test_an_isolated_librarys_version_is_its_environments_pin():
    from audit.adapters import tumult

    assert nr._version("tumult") == "0.21.0" == next(
        r.split("==")[1] for r in tumult.ENVIRONMENT.requirements
        if r.startswith("tmlt.analytics=="))


def test_the_table_was_made_with_the_installed_library_versions(committed):
    changed = {(r["library"], r["version"], nr._version(r["target"].split(":")[0]))
               for r in committed["rows"]
               if r["version"] != nr._version(r["target"].split(":")[0])}
    assert not changed, (f"library versions changed (library, table, installed): {changed}; "
                         "rerun PYTHONPATH=. python experiments/nan_regression.py and review "
                         "the verdicts that moved")


def test_the_markdown_is_the_json_and_the_verdicts_follow_their_rule(committed):
    md = (ROOT / "results" / "nan_regression.md").read_text()
    assert md == nr.markdown(committed)
    for r in committed["rows"]:
        if r["verdict"] == "fails":  # the library crashed: no run, no bound
            assert r["finding"] == "defect" and not r["runs"] and r["eps_lower"] is None, r
            continue
        runs = r.get("runs") or [r]
        each = [nr.verdict(x["eps_lower"], math.inf if x["eps_point"] == "inf"
                           else x["eps_point"], r["claim"]) for x in runs]
        assert r["verdict"] == nr.combined(each, r["nan"]), r
        assert len(runs) == (1 if r["seedable"] else committed.get("reruns", 1))
        target = registry.get_adapter(r["target"].split(":")[0]).target(
            r["target"].split(":")[1])
        example = next(e for t, e in registry.examples()
                       if t == r["target"] and e.name == r["example"])
        assert r["nan"] == target.nan_semantics(dict(example.params)).value
        # the cause column: the target's line on NaN, then the example's own
        assert r["cause"] == nr.cause(target.summary, example)
        assert r["cause"].startswith(target.summary) and r["cause"]


def test_the_cause_adds_a_non_default_examples_own_line():
    from audit.adapters.protocol import Example

    assert nr.cause("a NaN adds 0", Example("default", {}, doc="every entry")) == "a NaN adds 0"
    assert nr.cause("a NaN adds 0", Example("zero-out", {}, doc="0 outside")) == \
        "a NaN adds 0 (0 outside)"


def test_reruns_that_disagree_are_borderline_and_the_pair_is_fixed_by_rule():
    assert nr.combined(["keeps"] * 3) == "keeps"
    assert nr.combined(["keeps", "violates", "keeps"]) == "borderline"
    # a violation by a NaN the declared domain excludes is the caller's: its own verdict
    assert nr.combined(["violates"] * 3, "unchecked") == "contract"
    assert nr.combined(["violates"] * 3, "propagates") == "violates"
    assert nr.combined(["keeps"] * 3, "unchecked") == "keeps"
    assert nr.root_cause("unchecked", "", "contract").endswith("(caller contract)")
    assert nr.pair_value({"bounds": (-1.0, 1.0)}) == 1.0
    assert nr.pair_value({"bounds": (1.0, 3.0)}) == 3.0
    assert nr.pair_value({"bounds": (-3.0, -1.0)}) == -3.0
    assert nr.pair_value({"bounds": (0.0, 0.5)}) == 1.0 and nr.pair_value({}) == 1.0
    # a NaN outside the declared domain may void the whole statistic: others at the value
    assert nr.others_value("unchecked", {"bounds": (-1.0, 1.0)}) == 1.0
    assert nr.others_value("propagates", {"bounds": (-1.0, 1.0)}) == 0.0


def test_root_causes_and_findings():
    assert nr.root_cause("propagates", "NaN whenever an entry is missing", "violates") == \
        "NaN passed through the noise"
    assert nr.root_cause("propagates", "NaN ... (returned before any noise)", "violates") == \
        "NaN returned before any noise"
    assert nr.root_cause("read-as-zero", "a NaN adds 0", "violates") == \
        "NaN read as 0 outside the declared bounds"
    assert nr.root_cause("propagates", "x", "keeps") is None
    assert {"diffprivlib:histogram", "diffprivlib:histogramdd"} <= nr.RELATION_FINDINGS


def test_a_library_that_crashes_gets_a_fails_row_not_a_traceback():
    """PipelineDP 0.3.1's VECTOR_SUM (a declared defect): the audit ends in an
    ImplementationError whose cause is the LibraryDefect; the row says ``fails``, finding
    ``defect``, with the library's source line, and the markdown prints it without a bound."""
    pytest.importorskip("pipeline_dp")
    from audit.adapters import LibraryDefect, example
    from audit.simulation.callables import ImplementationError

    ex = example("pipelinedp:vector_sum", "linf")
    with pytest.raises(ImplementationError) as caught:
        nr.audit_example("pipelinedp:vector_sum", ex, calls=100)
    defect = nr.defect_of(caught.value)
    assert isinstance(defect, LibraryDefect) and "_clip_vector" in str(defect)
    assert nr.defect_of(ValueError("a bad parameter")) is None
    r = nr.failed_row("pipelinedp:vector_sum", ex, defect)
    assert (r["verdict"], r["finding"], r["eps_lower"], r["runs"]) == ("fails", "defect",
                                                                      None, [])
    assert "combiners.py:909" in r["root_cause"]
    md = nr.markdown({"seed": 0, "calls": 100, "confidence": 0.99, "margin": 0.9,
                      "reruns": 3, "rows": [r]})
    assert "**fails**" in md and "library defect, not NaN" in md and "`fails`:" in md
    assert "Root causes of the violations" not in md  # a crash is not a violation


def test_the_verdict_rule():
    assert nr.verdict(1.2, 3.0, 1.0) == "violates"
    assert nr.verdict(0.5, 0.85, 1.0) == "keeps"
    assert nr.verdict(0.8, 0.95, 1.0) == "borderline"
    assert nr.verdict(0.8, math.inf, 1.0) == "borderline"


@pytest.mark.slow
def test_a_rerun_keeps_every_decided_verdict(committed, tmp_path):
    """Unseedable libraries (OpenDP, PipelineDP, python-dp) move between runs: only a
    ``borderline`` row may change its verdict (module docstring of nan_regression)."""
    doc = nr.run(committed["calls"], committed["seed"] + 1)
    old = {(r["target"], r["example"]): r["verdict"] for r in committed["rows"]}
    moved = [(r["target"], r["example"], old[(r["target"], r["example"])], r["verdict"])
             for r in doc["rows"]
             if "borderline" not in (old[(r["target"], r["example"])], r["verdict"])
             and old[(r["target"], r["example"])] != r["verdict"]]
    assert not moved, moved


@pytest.mark.parametrize("argv", [["--calls", "0"], ["--seed", "-1"]])
def test_bad_arguments_are_one_error_line_before_any_call(argv, capsys):
    assert nr.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: --calls must be")


def test_the_mcar_cross_reference_matches_target_and_example(tmp_path, monkeypatch):
    doc = {"rows": [{"target": "diffprivlib:nanmean", "example": "default", "verdict": "keeps"},
                    {"target": "diffprivlib:nanmean", "example": "per-column",
                     "verdict": "keeps"},
                    {"target": "diffprivlib:nanmean", "example": "default",
                     "verdict": "violates"}]}
    audit = tmp_path / "library_audit.json"
    audit.write_text(json.dumps({"rows": [
        {"target": "diffprivlib:nanmean", "rate": 0.7, "claim_refuted": True},
        {"target": "diffprivlib:nanmean", "rate": 0.1, "claim_refuted": False}]}))
    monkeypatch.setattr(nr, "LIBRARY_AUDIT", audit)
    rows = nr.cross_reference(doc)["rows"]
    # library_audit audits nanmean's default example: only that row, and only where it keeps
    assert [r["mcar"] for r in rows] == [[0.7], [], []]
    assert "refuted under MCAR at π = 0.7" in nr._notes(rows[0])
