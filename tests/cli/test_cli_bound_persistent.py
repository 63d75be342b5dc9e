"""``python -m audit bound --config FILE`` with ``[releases] masks = "persistent"``: the
persistent non-response bracket (docs/THEORY.md §10.7) as the config's worst-case row, equal to
the shared and fresh rows at r = 1 and r = 0 to their stated errors, and refused with one line
where it does not apply."""

from __future__ import annotations

import argparse
import json

import pytest

from tests.cli.test_cli_bound_config import _setting

#: a count-like Gaussian sum (one candidate pair: fast) at q = 0.3, 3 releases
_COUNT = {"noise": "gaussian", "delta": "delta = 1e-5", "miss": "p_star = 0.3",
          "extra": "domain = [0.0, 1.0]\nna_value = 0.0"}


def _releases(masks: str, extra: str = "", count: int = 3) -> str:
    return f'\n[releases]\ncount = {count}\nmasks = "{masks}"\n{extra}\n'


def _run(capsys, path: str, *more: str) -> tuple[int, str, str]:
    from audit.cli.bound import add_parser, main

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    code = main(parser.parse_args(["bound", "--config", path, *more]))
    out = capsys.readouterr()
    return code, out.out, out.err


def _row(capsys, tmp_path, releases: str, setting=_COUNT) -> dict:
    code, out, err = _run(capsys, _setting(tmp_path, **setting, releases=releases), "--json")
    assert code == 0, err
    rows = json.loads(out)["bounds"]
    row = next(r for r in rows if r["name"].startswith("worst case of this setting"))
    # the label says whether the bracket closed (docs/THEORY.md §10.7)
    assert row["reference"] == ("exact worst case" if row["exact"] else "worst case (bracket)")
    return row


def _same(a: dict, b: dict) -> None:
    """Two rows agree to their stated errors: each epsilon inside the other's bracket widened
    by the other's error (they certify the same number from two sides)."""
    slack = a["error"] + b["error"]
    assert abs(a["epsilon"] - b["epsilon"]) <= slack
    assert a["lower"] <= b["epsilon"] + 1e-12 and b["lower"] <= a["epsilon"] + 1e-12


def test_persistence_one_and_zero_are_the_shared_and_fresh_rows(capsys, tmp_path):
    ends = {}
    for r, masks in ((1.0, "shared"), (0.0, "fresh")):
        row = _row(capsys, tmp_path, _releases("persistent", f"persistence = {r}"))
        assert row["masks"] == "persistent" and row["persistence"] == r
        assert row["error"] == pytest.approx(row["epsilon"] - row["lower"])
        ref = _row(capsys, tmp_path, _releases(masks))
        _same(row, ref)
        assert row["error"] < 2e-3  # at the ends the bracket closes: exact for the pair
        ends[r] = row
    # fresh masks lose less than one shared mask; persistence 0.5 lies between them
    assert ends[0.0]["epsilon"] < ends[1.0]["lower"]
    mid = _row(capsys, tmp_path, _releases("persistent", "persistence = 0.5"))
    assert ends[0.0]["lower"] < mid["lower"] <= mid["epsilon"] < ends[1.0]["epsilon"]
    assert mid["error"] > 0.0 and mid["pair"] == ["hi", "lo"]
    # measured (σ = 4.845): the pair's box bracket [0.48537, 0.48690] gives the lower end
    # (the sum alone: 0.48515; the pair's ε is 0.4858 to 1e-4); the upper end stays the
    # epochs' envelope 0.50720, which covers every pair of the domain: a bracket, so labelled
    assert mid["exact"] is False and mid["reference"] == "worst case (bracket)"
    assert 0.48516 <= mid["lower"] <= 0.48582
    assert mid["epsilon"] == pytest.approx(0.50720, abs=1e-4)
    assert set(mid) >= {"reference", "epsilon", "error", "pair", "lower", "exact"}


def test_symmetric_domain_uses_the_envelope_of_three_pairs(capsys, tmp_path):
    sym = {**_COUNT, "extra": "domain = [-1.0, 1.0]\nna_value = 0.0"}
    for r, masks in ((1.0, "shared"), (0.0, "fresh")):
        row = _row(capsys, tmp_path, _releases("persistent", f"persistence = {r}"), sym)
        _same(row, _row(capsys, tmp_path, _releases(masks), sym))


def test_table_output_prints_the_persistent_row(capsys, tmp_path):
    path = _setting(tmp_path, **_COUNT, releases=_releases("persistent", "persistence = 0.5"))
    code, out, _ = _run(capsys, path)
    assert code == 0
    assert "no theorem-level row covers persistent masks" in out
    assert "worst case of this setting (persistent masks, r = 0.5)" in out


#: a Laplace sum over [-1, 1], NA read as 0 (inside the domain), q = 0.3, 3 releases
_LAPLACE = {"noise": "laplace", "miss": "p_star = 0.3",
            "extra": "domain = [-1.0, 1.0]\nna_value = 0.0"}


def test_laplace_rows_meet_shared_and_fresh_at_the_ends_and_bracket_between(capsys, tmp_path):
    mid = _row(capsys, tmp_path, _releases("persistent", "persistence = 0.5"), _LAPLACE)
    assert mid["reference"] == "worst case (bracket)" and mid["pair"] == ["hi", "lo"]
    assert 0 < mid["lower"] < mid["epsilon"] and "redraw epochs" in mid["method"]
    for r, masks in ((1.0, "shared"), (0.0, "fresh")):
        row = _row(capsys, tmp_path, _releases("persistent", f"persistence = {r}"), _LAPLACE)
        ref = _row(capsys, tmp_path, _releases(masks), _LAPLACE)
        assert (row["epsilon"], row["lower"]) == (ref["epsilon"], ref["lower"])
        assert row["method"].startswith(f"persistence {r:g} is {masks} masks")


@pytest.mark.parametrize("setting,releases,match", [
    (_COUNT, _releases("persistent", "persistence = 0.5", count=13),
     "releases.count must be an integer in [1, 12] for persistent masks"),
    (_COUNT, _releases("persistent", "persistence = 1.5"),
     "releases.persistence must be a number in [0, 1]"),
    (_COUNT, _releases("persistent", "persistence = -0.1"),
     "releases.persistence must be a number in [0, 1]"),
    (_COUNT, _releases("persistent"), "needs releases.persistence"),
    (_COUNT, _releases("shared", "persistence = 0.5"),
     "releases.persistence applies to releases.masks = 'persistent'"),
])
def test_persistent_settings_out_of_scope_are_refused_with_one_line(
        capsys, tmp_path, setting, releases, match):
    code, out, err = _run(capsys, _setting(tmp_path, **setting, releases=releases))
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and lines[0].startswith("error:") and match in lines[0], err


def test_the_flags_refuse_persistent_masks(capsys):
    from audit.cli.bound import add_parser, main

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["bound", "--mechanism", "gaussian", "--epsilon", "1", "--delta",
                              "1e-5", "--p-star", "0.3", "--releases", "3", "--masks",
                              "persistent"])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "masks must be one of 'shared', 'fresh'" in err
    assert "[releases] masks = 'persistent'" in err
