"""``python -m audit report``, the real command: a results file of the wrong shape and a full
disk each give one ``error:`` line and leave no partial file."""

from __future__ import annotations

import json
import shutil

import pytest

from experiments.report import write_report
from tests.experiments.commands import FULL_DISK_ON_PDF, ROOT, audit, audit_patched, digests

RESULTS = ROOT / "results"

def _counterexample() -> dict:
    return json.loads((RESULTS / "counterexample.json").read_text())


def _bad(case: str):
    doc = _counterexample()
    if case == "list":
        return [doc]
    if case == "no rows":
        del doc["rows"]
    elif case == "row missing eps_pair":
        del doc["rows"][1]["eps_pair"]
    elif case == "eps_lower a word":
        doc["rows"][0]["eps_lower"] = "large"
    elif case == "seed a string":
        doc["seed"] = "four"
    elif case == "rows an object":
        doc["rows"] = {"a": 1}
    elif case == "another experiment":
        doc["experiment"] = "mar_mnar"
    return doc


@pytest.mark.parametrize(("case", "what"), [
    ("list", "expected a JSON object (one experiment's results), got a list"),
    ("no rows", "missing key 'rows'"),
    ("row missing eps_pair", "rows[1] is missing key 'eps_pair'"),
    ("eps_lower a word", "rows[0]['eps_lower'] must be a number, got 'large'"),
    ("seed a string", "key 'seed' must be an integer, got 'four'"),
    ("rows an object", "rows must be a list of objects (one per audit), got dict"),
    ("another experiment", "it holds the results of 'mar_mnar', not 'counterexample'"),
])
def test_a_result_of_the_wrong_shape_is_one_error_line_and_writes_nothing(tmp_path, case,
                                                                          what):
    path = tmp_path / "counterexample.json"
    path.write_text(json.dumps(_bad(case)))
    out = audit("report", "--results", str(tmp_path))
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr == f"error: result file {path} has the wrong shape: {what}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counterexample.json"]


def test_a_full_disk_leaves_the_previous_figures_and_no_partial_file(tmp_path):
    for name in ("counterexample", "mar_mnar"):
        shutil.copy(RESULTS / f"{name}.json", tmp_path)
    write_report(tmp_path)  # a previous, complete report
    before = digests(tmp_path)
    out = audit_patched(FULL_DISK_ON_PDF, "report", "--results", str(tmp_path))
    assert out.returncode == 3, out.stderr
    pdf = tmp_path / "figures" / "counterexample.pdf"
    assert out.stderr == (f"error: could not write {pdf}: No space left on device; the "
                          f"results JSON files are kept\n")
    # the PDF that failed keeps its previous bytes; no temporary file is left behind
    assert digests(tmp_path) == before


def test_a_full_disk_on_the_first_report_leaves_no_pdf(tmp_path):
    shutil.copy(RESULTS / "counterexample.json", tmp_path)
    out = audit_patched(FULL_DISK_ON_PDF, "report", "--results", str(tmp_path))
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: could not write ")
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["counterexample.json", "figures/counterexample.png"]  # complete, renamed
