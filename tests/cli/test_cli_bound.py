"""CLI tests: ``python -m audit bound ...`` run as a subprocess."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "audit", "bound", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_table_output():
    res = _run("--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5", "--rho", "0.5")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for ref in ("[RPS] Thm 3.2", "[RPS] Thm 4.5", "[RPS] Cor 4.6", "docs/THEORY.md §7"):
        assert ref in out
    assert f"{math.log1p(0.5 * math.expm1(1.0)):.6g}" in out  # Thm 3.2 ε'
    assert res.stderr == ""


def test_json_output_parses_and_matches_library():
    from audit.theory import accountant as acc

    res = _run(
        "--mechanism", "gaussian", "--epsilon", "0.5", "--delta", "1e-5", "--p-star", "0.3",
        "--rho", "0.4", "--d", "10", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["parameters"]["mechanism"] == "gaussian"
    by = {b["reference"]: b for b in data["bounds"] if b["epsilon"] is not None}
    e47, d47 = acc.gaussian_fwl_bound(0.5, 1e-5, 0.3, 0.4)
    assert by["[RPS] Thm 4.7"]["epsilon"] == pytest.approx(e47, rel=1e-12)
    assert by["[RPS] Thm 4.7"]["delta"] == pytest.approx(d47, rel=1e-12)
    assert by["docs/THEORY.md §7 (derived here)"]["epsilon"] <= e47


def test_not_applicable_row_in_table():
    res = _run("--mechanism", "laplace", "--epsilon", "4", "--p-star", "0.5", "--rho", "0.5")
    assert res.returncode == 0
    assert "not applicable: rho*epsilon > 1" in res.stdout


@pytest.mark.parametrize(
    "args,word",
    [
        (["--mechanism", "laplace", "--epsilon", "-1", "--p-star", "0.5"], "epsilon"),
        (["--mechanism", "laplace", "--epsilon", "1", "--p-star", "1.5"], "p_star"),
        (["--mechanism", "gaussian", "--epsilon", "2", "--delta", "1e-5", "--p-star", "0.5"],
         "epsilon"),
        (["--mechanism", "gaussian", "--epsilon", "1", "--p-star", "0.5"], "delta"),
        (["--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5", "--rho", "0"], "rho"),
        (["--mechanism", "poisson", "--epsilon", "1", "--p-star", "0.5"], "mechanism"),
        (["--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5",
          "--missingness-class", "mnar"], "missingness_class"),
        (["--mechanism", "laplace", "--epsilon", "abc", "--p-star", "0.5"], "epsilon"),
        (["--mechanism", "laplace", "--p-star", "0.5"], "epsilon"),
    ],
)  # fmt: skip
def test_bad_input_exit_2_one_line(args, word):
    res = _run(*args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error:")
    assert word in lines[0]
    assert "Traceback" not in res.stderr
    assert res.stdout == ""


@pytest.mark.parametrize("eps", ["709.8", "720", "744", "1000"])
def test_large_epsilon_section7_row_equals_theorem_3_2(eps):
    """Issue 11: at ε = 1000 the §7 row read 59.76 (Theorem 3.2: 999.31), with a RuntimeWarning;
    for 709.8 ≤ ε ≤ 744 the command died with OverflowError."""
    res = _run("--mechanism", "laplace", "--epsilon", eps, "--p-star", "0.5", "--json")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    rows = json.loads(res.stdout)["bounds"]
    e32 = next(r["epsilon"] for r in rows if r["reference"] == "[RPS] Thm 3.2")
    s7 = [r["epsilon"] for r in rows
          if r["reference"].startswith("docs/THEORY.md §7") and r["epsilon"] is not None]
    assert e32 == pytest.approx(float(eps) + math.log(0.5), rel=1e-15)
    assert s7 == [e32]
