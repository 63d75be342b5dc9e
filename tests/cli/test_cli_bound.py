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


# ----------------------------------------------------------------------------- k releases
# The check table of docs/THEORY.md §9: Gaussian ε = 1, δ = 1e-5 (μ = 0.2064), p* = 0.1,
# final δ = 1e-5 for the k releases together.
_KS = (1, 10, 30, 100)
_SHARED = (0.083, 0.645, 2.206, 6.937)
_FRESH_EXACT = (0.083, 0.240, 0.419, 0.786)
_FRESH_COMPOSED = (0.083, 0.243, 0.431, 0.822)
_GAUSS = ("--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--p-star", "0.1")


def _main_json(capsys, *args: str) -> dict:
    """Run ``bound ... --json`` in this process (fast) and parse its output."""
    import argparse

    from audit.cli.bound import add_parser, main

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert main(parser.parse_args(["bound", *args, "--json"])) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("i", range(len(_KS)))
def test_releases_shared_masks_reproduce_the_check_table(capsys, i):
    for k, want in [(_KS[i], _SHARED[i])]:
        data = _main_json(capsys, *_GAUSS, "--releases", str(k), "--masks", "shared",
                          "--target-delta", "1e-5")
        rows = {r["name"]: r for r in data["bounds"]}
        row = rows["f-DP of the composition under missingness"]
        assert round(row["epsilon"], 3) == want
        assert row["delta"] == 1e-5
        for r in data["bounds"] + data["comparisons"]:
            assert r["releases"] == k and r["masks"] == "shared"
            assert r["rule"]
        # the per-release composition is shown, but never as a bound
        assert not any("per-release guarantee composed" in r["name"] for r in data["bounds"])
        assert k == 1 or any("NOT a bound" in r["name"] for r in data["comparisons"])
        assert data["parameters"]["releases"] == k


@pytest.mark.parametrize("i", range(len(_KS)))
def test_releases_fresh_masks_composed_bound(capsys, i):
    for k, exact, composed in [(_KS[i], _FRESH_EXACT[i], _FRESH_COMPOSED[i])]:
        data = _main_json(capsys, *_GAUSS, "--releases", str(k), "--masks", "fresh",
                          "--target-delta", "1e-5")
        row = next(r for r in data["bounds"] if r["name"] == "f-DP composition under fresh masks")
        assert row["epsilon"] >= exact
        assert abs(row["epsilon"] - composed) <= 0.1 * composed
        for r in data["bounds"]:
            assert r["masks"] == "fresh" and r["releases"] == k
            # the PLD row is the tightest bound for every pair (up to its rounding, k·h); the
            # direction-wise row covers record-vs-missing pairs only, and is exact for them
            if r["name"].startswith("fresh masks, direction by direction"):
                assert exact - 5e-4 <= r["epsilon"] <= exact + 5e-4 + max(1e-3, r["error"])
                continue
            assert r["epsilon"] is None or r["epsilon"] >= row["epsilon"] - k * 1e-4 \
                or r["name"].startswith("base")
        assert all("CLT" not in r["name"] for r in data["bounds"])


def test_releases_default_target_delta_is_the_single_release_one(capsys):
    data = _main_json(capsys, *_GAUSS, "--releases", "3")
    assert all(r["delta"] == pytest.approx(1e-6) for r in data["bounds"])
    data = _main_json(capsys, "--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5",
                      "--releases", "4")
    row = next(r for r in data["bounds"] if r["name"].startswith("f-DP of the composition"))
    assert row["delta"] == 0.0
    assert row["epsilon"] == pytest.approx(math.log1p(0.5 * math.expm1(4.0)))


def test_single_release_table_unchanged_without_releases(capsys):
    data = _main_json(capsys, *_GAUSS)
    assert data["comparisons"] == []
    assert all(r["releases"] == 1 for r in data["bounds"])
    assert any(r["reference"] == "[RPS] Thm 4.7" for r in data["bounds"])


def test_releases_1e9_is_cheap_and_refuses_the_pld_with_a_note(capsys):
    import time

    t0 = time.perf_counter()
    data = _main_json(capsys, *_GAUSS, "--releases", "1e9", "--masks", "fresh")
    assert time.perf_counter() - t0 < 2.0
    row = next(r for r in data["bounds"] if r["name"] == "f-DP composition under fresh masks")
    assert row["epsilon"] is None and "too costly" in row["note"]
    assert any(r["epsilon"] is not None and "basic" in r["name"] for r in data["bounds"])
    assert any("CLT" in r["name"] for r in data["comparisons"])
    shared = _main_json(capsys, *_GAUSS, "--releases", "1e9", "--masks", "shared")
    assert all(r["releases"] == 10**9 for r in shared["bounds"])
    assert all(r["epsilon"] is not None for r in shared["bounds"])


def test_releases_table_names_the_rule(capsys):
    import argparse

    from audit.cli.bound import add_parser, main

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert main(parser.parse_args(["bound", *_GAUSS, "--releases", "10"])) == 0
    out = capsys.readouterr().out
    assert "rule" in out.splitlines()[0] and "G_(sqrt(k) mu)" in out
    assert "comparisons (NOT bounds):" in out


@pytest.mark.parametrize(
    "extra,word",
    [(["--releases", "0"], "releases"), (["--releases", "1.5"], "releases"),
     (["--releases", "-3"], "releases"), (["--releases", "10", "--masks", "sometimes"], "masks")],
)  # fmt: skip
def test_bad_releases_exit_2_one_line(capsys, extra, word):
    import argparse

    from audit.cli.bound import add_parser, main

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert main(parser.parse_args(["bound", *_GAUSS, *extra])) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and word in lines[0], err
    assert out == ""


def test_bad_releases_through_the_command_line():
    res = _run(*_GAUSS, "--releases", "1.5")
    assert res.returncode == 2
    assert res.stderr.strip() == "error: releases must be a positive integer, got releases='1.5'"
