"""The NaN regression table (experiments/nan_regression.py): the committed table covers every
registered adapter example at the installed library versions, and a rerun keeps its
verdicts (slow)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from audit.adapters import example as adapter_example
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
        each = [nr.verdict(x["eps_lower"], x["eps_estimate"], r["claim"]) for x in runs]
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
    assert nr.root_cause("sets-domain", "", "violates") == \
        "NaN sets the output's domain, before any noise"
    assert nr.root_cause("counted", "synthetic NaN only then", "violates") == "other"
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
    assert nr.verdict(0.8, None, 1.0) == "borderline"


def _region(k_p, n_p, k_q, n_q, direction="z_vs_zprime", delta=0.0):
    return {"kind": "region", "k_p": k_p, "n_p": n_p, "k_q": k_q, "n_q": n_q,
            "direction": direction, "delta": delta}


def test_the_estimate_adds_half_a_count_to_each_side():
    # a region of a few calls carries no evidence: python-dp min's 3 against 1 of 4,000 read
    # 1.088 as a plain plug-in (borderline), ln(3.5/1.5) = 0.847 with half counts (keeps)
    assert nr.estimate(_region(3, 4035, 1, 3994)) == pytest.approx(
        math.log((3.5 / 4036) / (1.5 / 3995)), rel=1e-12)
    assert nr.verdict(0.0, nr.estimate(_region(3, 4035, 1, 3994)), 1.0) == "keeps"
    # an empty denominator is finite, a region of thousands of calls is the plug-in to 1e-3
    assert nr.estimate(_region(5, 4000, 0, 4000)) == pytest.approx(math.log(11), abs=1e-3)
    big = _region(2754, 4019, 987, 4027)
    assert nr.estimate(big) == pytest.approx(math.log((2754 / 4019) / (987 / 4027)), abs=1e-3)
    # the direction names the numerator; δ comes off the numerator's frequency
    assert nr.estimate(_region(987, 4027, 2754, 4019, "zprime_vs_z")) == nr.estimate(big)
    assert nr.estimate(_region(10, 1000, 5, 1000, delta=0.1)) == 0.0
    assert nr.estimate({"kind": "sequential"}) is None and nr.estimate(None) is None


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
    # a rate where only the claim amplified by the missingness falls is listed apart
    audit.write_text(json.dumps({"rows": [
        {"target": "diffprivlib:nanmean", "rate": 0.9, "claim_refuted": False,
         "amplified_refuted": True},
        {"target": "diffprivlib:nanmean", "rate": 0.7, "claim_refuted": True,
         "amplified_refuted": True}]}))
    row = nr.cross_reference(doc)["rows"][0]
    assert (row["mcar"], row["mcar_amplified"]) == ([0.7], [0.9])
    assert "its claim amplified by MCAR refuted at π = 0.9" in nr._notes(row)
    assert list(row).index("mcar_amplified") == list(row).index("mcar") + 1


def _declared(target: str):
    library, function = target.split(":")
    return registry.get_adapter(library).target(function)


def test_every_violation_of_the_committed_table_names_its_source_line(committed):
    """Each row that violates (or breaks the caller's contract) gets its target's source from
    a refresh, printed after its root cause; a source the table already records is the
    target's (not stale); and refreshing the committed table changes nothing but adding
    the sources (its metadata is otherwise current)."""
    refreshed = nr.refresh(committed)
    violating = [r for r in refreshed["rows"] if r["verdict"] in ("violates", "contract")]
    assert violating and all(r["root_cause"] for r in violating)
    md = nr.markdown(refreshed).splitlines()
    for r in violating:
        assert r["source"] == _declared(r["target"]).source and r["source"], r["target"]
        cited = "; ".join(f"`{p}`" for p in r["source"].split("; "))
        line = next(x for x in md if x.startswith(f"| `{r['target']}` | {r['example']} |"))
        assert f"| {r['root_cause']} ({cited}) |" in line, line
    for old, new in zip(committed["rows"], refreshed["rows"], strict=True):
        assert old.get("source", new["source"]) == new["source"], old["target"]
        assert new == {**old, "source": _declared(old["target"]).source}, old["target"]


def _stale_table() -> dict:
    """Three audited rows whose adapter metadata is stale or missing, and their numbers."""
    runs = [{"eps_lower": 6.771, "eps_point": "inf", "verdict": "violates"}]
    return {"experiment": "nan_regression", "calls": 4000, "seed": 0, "confidence": 0.99,
            "margin": 0.9, "reruns": 3, "rows": [
                {"target": "diffprivlib:sum", "example": "default", "doc": "old doc",
                 "nan": "skips", "cause": "stale cause", "source": "old/pkg.py:1",
                 "claim": 1.0, "delta": 0.0, "verdict": "violates", "finding": "NaN",
                 "root_cause": None, "mcar": [0.5], "eps_lower": 6.771, "eps_point": "inf",
                 "eps_lower_range": [6.771, 6.771], "runs": runs, "pair": "(1) vs NA",
                 "witness": "P[out = NaN]", "calls": 4000, "library": "diffprivlib",
                 "version": "0.6.6", "seedable": True, "extra": {"kept": 1}},
                {"target": "opendp:sum", "example": "unchecked", "nan": "unchecked",
                 "cause": "c", "claim": 1.0, "delta": 0.0, "verdict": "contract",
                 "finding": "NaN", "root_cause": None, "mcar": [], "eps_lower": 3.959,
                 "eps_point": 4.597, "pair": "(1) vs NA, others 1", "library": "opendp",
                 "version": "0.16.0", "seedable": False},
                {"target": "tumult:sum", "example": "bounds-exclude-zero",
                 "nan": "read-as-zero", "cause": "c", "claim": 1.0, "delta": 0.0,
                 "verdict": "keeps", "finding": "NaN", "root_cause": "other", "mcar": [0.3],
                 "eps_lower": 0.123, "eps_point": 0.456, "pair": "(3) vs NA",
                 "library": "tmlt.analytics", "version": "0.21.0", "seedable": False}]}


@pytest.fixture
def no_mcar(tmp_path, monkeypatch):
    audit = tmp_path / "library_audit.json"
    audit.write_text(json.dumps({"rows": [
        {"target": "tumult:sum", "rate": 0.7, "claim_refuted": True}]}))
    monkeypatch.setattr(nr, "LIBRARY_AUDIT", audit)


def test_a_refresh_rewrites_the_metadata_and_keeps_every_audited_number(no_mcar):
    stale = _stale_table()
    doc = nr.refresh(stale)
    assert {k: v for k, v in doc.items() if k != "rows"} == \
        {k: v for k, v in stale.items() if k != "rows"}
    for old, new in zip(stale["rows"], doc["rows"], strict=True):
        kept = set(old) - set(nr.METADATA) - {"mcar"}
        assert {k: new[k] for k in kept} == {k: old[k] for k in kept}, old["target"]
        assert set(new) == set(old) | set(nr.METADATA) | {"mcar_amplified"}
        declared = _declared(old["target"])
        example = adapter_example(old["target"], old["example"])
        assert new["source"] == declared.source != "old/pkg.py:1"
        assert new["cause"] == nr.cause(declared.summary, example) and new["doc"] == example.doc
        assert new["nan"] == declared.nan_semantics(dict(example.params)).value
        assert list(new)[list(new).index("cause") + 1] == "source"  # row()'s key order
    sums, unchecked, tumult = doc["rows"]
    assert (sums["nan"], sums["root_cause"]) == ("propagates", "NaN passed through the noise")
    assert unchecked["root_cause"].endswith("(caller contract)")
    # a kept verdict that keeps has no root cause; its MCAR column is read anew, and the
    # row does not audit the example library_audit audits (default): none
    assert tumult["root_cause"] is None and tumult["mcar"] == []
    assert nr.refresh(doc) == doc  # a refresh of a fresh table changes nothing


def test_a_refresh_keeps_a_failed_rows_defect(no_mcar, committed):
    failed = next(r for r in committed["rows"] if r["verdict"] == "fails")
    stale = {**_stale_table(), "rows": [{**failed, "source": "old/pkg.py:1"}]}
    row = nr.refresh(stale)["rows"][0]
    # its finding and cause are the library's crash, not a NaN's reading of the verdict
    assert (row["finding"], row["root_cause"]) == (failed["finding"], failed["root_cause"])
    assert row["finding"] == "defect" and "crashed" in row["root_cause"]
    assert row["source"] == _declared(failed["target"]).source


def test_a_refresh_refuses_rows_no_longer_registered(no_mcar):
    stale = _stale_table()
    stale["rows"].append({**stale["rows"][0], "example": "gone"})
    stale["rows"].append({**stale["rows"][0], "target": "diffprivlib:mode"})
    with pytest.raises(ValueError, match=r"diffprivlib:sum \[gone\], diffprivlib:mode "
                                         r"\[default\]"):
        nr.refresh(stale)


def test_refresh_on_the_command_line_writes_sources_into_json_and_markdown(tmp_path, no_mcar,
                                                                            capsys):
    out = tmp_path / "nan_regression.json"
    out.write_text(json.dumps(_stale_table()))
    assert nr.main(["--refresh", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    md = out.with_suffix(".md").read_text()
    assert md == nr.markdown(doc)
    source = _declared("diffprivlib:sum").source
    cited = "; ".join(f"`{p}`" for p in source.split("; "))
    line = next(x for x in md.splitlines() if x.startswith("| `diffprivlib:sum` |"))
    assert f"NaN whenever an entry is missing ({cited}) |" in line
    assert f"| NaN passed through the noise ({cited}) |" in line and "| 6.771 |" in line
    for r in doc["rows"]:  # every row's cause cell ends with its source
        cells = next(x for x in md.splitlines() if x.startswith(f"| `{r['target']}` |"))
        assert cells.split(" | ")[3].endswith(
            "(" + "; ".join(f"`{p}`" for p in r["source"].split("; ")) + ")")
    # the old flag is the same path; a row no longer registered stops it, the table kept
    table = out.read_text()
    assert nr.main(["--cross-reference", "--out", str(out)]) == 0 and out.read_text() == table
    bad = _stale_table()
    bad["rows"][0]["example"] = "gone"
    out.write_text(json.dumps(bad))
    assert nr.main(["--refresh", "--out", str(out)]) == 2
    assert "diffprivlib:sum [gone]" in capsys.readouterr().err
    assert json.loads(out.read_text()) == bad


@pytest.mark.parametrize("flags", [["--refresh"], ["--only", "diffprivlib:sum"], []])
@pytest.mark.parametrize("text", ["not json", '{"rows": 3}', '{"rows": [{"target": 1}]}', "[]"])
def test_a_table_that_is_not_one_is_one_error_line_before_any_audit(tmp_path, capsys, flags,
                                                                     text):
    out = tmp_path / "nan_regression.json"
    out.write_text(text)
    assert nr.main([*flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and str(out) in err, err
    assert out.read_text() == text and not out.with_suffix(".md").exists()


def test_rows_kept_by_only_get_their_metadata_refreshed(committed):
    """``--only`` with no target named audits nothing here (every row is in the table) and
    keeps every row as a refresh would: numbers as audited, sources added."""
    stale = {**committed, "rows": [{**r, "source": "old/pkg.py:1", "cause": "stale"}
                                   for r in committed["rows"]]}
    kept = nr.run(committed["calls"], committed["seed"], only=[], previous=stale)
    assert kept["rows"] == nr.refresh(committed)["rows"]


def test_a_slow_librarys_rows_audit_fewer_calls_and_say_so():
    """dpmm's rows (a synthetic table per release, ~50 ms) are audited with ``SLOW_CALLS``
    calls per side, and the markdown says so where a row has fewer than the table's."""
    assert nr.SLOW_CALLS["dpmm"] < nr.CALLS
    row = {"calls": 1000, "pair": "(1) vs NA"}
    assert nr._pair_cell(row, 4000) == "(1) vs NA (1,000 calls per side)"
    assert nr._pair_cell(row, 1000) == "(1) vs NA"


def test_only_names_a_target_or_one_of_its_examples(committed, monkeypatch, tmp_path, capsys):
    """``--only TARGET`` audits all of the target's examples, ``TARGET[EXAMPLE]`` that one
    only; an unknown example is one error line before any audit."""
    audited = []
    rows = {(r["target"], r["example"]): r for r in committed["rows"]}
    monkeypatch.setattr(nr, "audit_example",
                        lambda t, e, **kw: audited.append((t, e.name)) or "run")
    monkeypatch.setattr(nr, "row", lambda t, e, runs: dict(rows[(t, e.name)]))
    nr.run(committed["calls"], committed["seed"], only=["opendp:sum[impute]"],
           previous=committed)
    assert set(audited) == {("opendp:sum", "impute")}  # its reruns (unseedable) included
    audited.clear()
    nr.run(committed["calls"], committed["seed"], only=["opendp:mean"], previous=committed)
    assert sorted(set(audited)) == sorted(k for k in rows if k[0] == "opendp:mean")
    before = len(audited)
    out = tmp_path / "table.json"
    out.write_text(json.dumps(committed))
    assert nr.main(["--only", "opendp:sum[nope]", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown ['opendp:sum[nope]']" in err
    assert len(audited) == before  # nothing audited by the refused run
