"""The suite (python -m audit suite): refusals before any work, a smoke run, then the report
drawn from what the run saved."""

from __future__ import annotations

import json

import pytest

from audit.cli import main
from experiments.report import write_report
from experiments.suite import run_suite


def test_suite_rejects_unknown_experiment_before_work(tmp_path, capsys):
    assert main(["suite", "--only", "nonsense", "--results", str(tmp_path)]) == 2
    assert "nonsense" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_suite_refuses_unknown_size_before_work(tmp_path):
    with pytest.raises(ValueError, match="size must be one of"):
        run_suite(tmp_path, size="huge", log=lambda *_: None)
    assert list(tmp_path.iterdir()) == []


def test_report_needs_results(tmp_path, capsys):
    assert main(["report", "--results", str(tmp_path / "missing")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["report", "--results", str(tmp_path)]) == 2
    assert "no experiment results" in capsys.readouterr().err


def test_smoke_suite_then_report_redraws_from_saved_results(tmp_path):
    written: list = []
    docs = run_suite(tmp_path, size="smoke", only=["amplification_vs_pstar", "mar_mnar"],
                     progress=False, log=lambda *_: None, finished=written)
    assert [p.name for p in written] == ["amplification_vs_pstar.json", "mar_mnar.json"]
    assert [d["experiment"] for d in docs] == ["amplification_vs_pstar", "mar_mnar"]
    doc = json.loads(written[0].read_text())
    assert doc["size"] == "smoke" and "versions" in doc and "seed" in doc
    report = write_report(tmp_path)
    figures = tmp_path / "figures"
    assert sorted(p.name for p in figures.iterdir()) == [
        "amplification_vs_pstar.pdf", "amplification_vs_pstar.png", "mar_mnar.pdf",
        "mar_mnar.png"]
    png = figures / "amplification_vs_pstar.png"
    assert png.stat().st_size > 10_000
    first = report.read_text()
    assert "## Amplification against p*" in first and "| all |" in first
    for f in figures.iterdir():
        f.unlink()
    write_report(tmp_path)  # from the JSON alone
    assert png.is_file() and (figures / "mar_mnar.pdf").is_file()
    assert report.read_text() == first
    # --resume keeps finished experiments
    kept: list = []
    again = run_suite(tmp_path, size="smoke", only=["amplification_vs_pstar"], resume=True,
                      progress=False, log=lambda *_: None, finished=kept)
    assert kept == [] and again[0]["size"] == "smoke"  # read back, not rerun


def test_suite_exit_status_counts_model_violations_not_library_findings():
    from experiments.cli_suite import violations

    ok = {"rows": [{"name": "a", "violations": [], "eps_claim": None}]}
    bad = {"rows": [{"name": "b", "violations": ["eps_lower=1 > eps_pair=0.5"],
                     "eps_claim": None}]}
    library = {"rows": [{"name": "c", "violations": ["claim refuted"], "eps_claim": 1.0}]}
    assert violations(ok) == [] and violations(library) == []
    assert violations(bad) == ["b: eps_lower=1 > eps_pair=0.5"]


@pytest.mark.parametrize("bad", ["file", "readonly"])
def test_suite_refuses_an_unwritable_results_folder_before_work(tmp_path, capsys, bad):
    import os

    from audit.cli import main

    if bad == "file":
        target = tmp_path / "results"
        target.write_text("not a folder")
    else:
        if os.geteuid() == 0:
            target = "/proc/results"  # root writes anywhere but /proc
        else:  # pragma: no cover - CI runs as root
            target = tmp_path / "ro"
            target.mkdir()
            target.chmod(0o500)
    assert main(["suite", "--results", str(target), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --results")
