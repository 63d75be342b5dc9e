"""``python -m audit bound --config FILE.toml``: the theorem rows of a config's setting and its
exact worst case (docs/THEORY.md §10), and the refusals of options that would be dropped."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli_bound import _main_json

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "experiments" / "configs" / "accountant_sum.toml"


def _write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "setting.toml"
    path.write_text(body)
    return str(path)


_BASE = """
[scenario]
noise = "{noise}"
epsilon = 1.0
{delta}
query = "{query}"
d = {d}
n = 10
bound = 1.0
{extra}

[missingness]
kind = "{kind}"
{miss}
"""


def _setting(tmp_path, *, noise="laplace", delta="", query="sum", d=1, extra="",
             kind="mcar-row", miss="p_star = 0.3", releases=""):
    return _write(tmp_path, _BASE.format(noise=noise, delta=delta, query=query, d=d,
                                         extra=extra, kind=kind, miss=miss) + releases)


def test_check_setting_gives_the_exact_worst_case_beside_the_theorem_rows(capsys):
    data = _main_json(capsys, "--config", str(CHECK))
    worst = [r for r in data["bounds"] if r["reference"] == "exact worst case"]
    assert len(worst) == 1
    row = worst[0]
    assert row["exact"] is True and row["pair"] == ["hi", "lo"]
    assert 1.9117 <= row["epsilon"] <= 1.9117 * 1.01 and row["error"] < 1e-6
    theorem = next(r for r in data["bounds"]
                   if r["name"] == "f-DP of the composition under missingness")
    assert theorem["epsilon"] == pytest.approx(6.937, abs=1e-3)
    assert data["parameters"]["releases"] == 100 and data["parameters"]["target_delta"] == 1e-5


def test_final_delta_moves_the_worst_case(capsys):
    tight = _main_json(capsys, "--config", str(CHECK), "--target-delta", "1e-3")
    loose = _main_json(capsys, "--config", str(CHECK), "--target-delta", "1e-10")
    eps = [next(r for r in d["bounds"] if r["reference"] == "exact worst case")["epsilon"]
           for d in (tight, loose)]
    assert eps[0] < 1.9117 < eps[1]


def test_count_like_domain_with_fresh_masks(capsys, tmp_path):
    path = _setting(tmp_path, extra="domain = [0.0, 1.0]\nna_value = 0.0",
                    miss="p_star = 0.1",
                    releases='\n[releases]\ncount = 10\nmasks = "fresh"\n')
    data = _main_json(capsys, "--config", path, "--target-delta", "1e-5")
    row = next(r for r in data["bounds"] if r["reference"] == "exact worst case")
    assert row["exact"] is True and row["lower"] == pytest.approx(1.1742, abs=1e-3)
    assert row["lower"] <= row["epsilon"] <= 1.005 * row["lower"]  # the boxes close it
    assert "branch and bound" in row["method"]
    assert data["parameters"]["scale"] == 1.0  # b = sensitivity 1 / epsilon 1


def test_table_output_prints_the_worst_case_line(tmp_path):
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", str(CHECK)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "worst case of this setting (exact worst case): epsilon = 1.91174" in res.stdout


@pytest.mark.parametrize("kwargs,match", [
    ({"query": "vector-sum"}, "scenario.query must be 'sum' or 'histogram'"),
    ({"extra": "count = 'private'", "d": 2}, "scenario.d = 1"),
    ({"extra": "count = 'private'\nna_value = 1.0"}, "na_value and scenario.query_params"),
    ({"extra": "count = 'total'"}, "scenario.count must be 'private' or 'public'"),
    ({"extra": "na_category = true"}, "na_category applies to query = 'histogram'"),
    ({"query": "histogram", "d": 3, "extra": "domain = [0.0, 1.0]"},
     "scenario.domain and scenario.na_value are not read"),
    ({"query": "histogram", "d": 1}, "at least 2 categories"),
    ({"kind": "mcar-iid", "miss": "rate = 0.3", "d": 3}, "missingness.kind must be 'mcar-row'"),
    ({"extra": "domain = [1.0, -1.0]"}, "scenario.domain must be"),
    ({"extra": "na_value = 'x'"}, "scenario.na_value must be a finite number"),
    ({"noise": "gaussian", "delta": "delta = 1e-5\ncalibration = 'analytic'"},
     "calibration='analytic'"),
])
def test_unsupported_settings_are_refused_with_one_line(tmp_path, kwargs, match):
    path = _setting(tmp_path, **kwargs)
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", path],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and match in lines[0], res.stderr


@pytest.mark.parametrize("args,match", [
    (["--config", "CHECK", "--epsilon", "1"], "--epsilon cannot be given with it"),
    (["--mechanism", "laplace", "--epsilon", "1", "--p-star", "0.5", "--masks", "fresh"],
     "give --releases K"),
    (["--mechanism", "laplace", "--p-star", "0.5"], "--epsilon is required"),
])
def test_flags_that_would_be_dropped_are_refused(args, match):
    args = [str(CHECK) if a == "CHECK" else a for a in args]
    res = subprocess.run([sys.executable, "-m", "audit", "bound", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and match in res.stderr and res.stderr.count("\n") == 1


def test_an_audit_refuses_the_accountant_only_keys(tmp_path):
    from audit.pipeline.config import load_config
    from audit.pipeline.parts import check_parts

    path = _setting(tmp_path, extra="domain = [0.0, 1.0]")
    with pytest.raises(ValueError, match="describe the setting of `bound --config`"):
        load_config(path)
    cfg = load_config(path, for_audit=False)
    with pytest.raises(ValueError, match="describe the setting of `bound --config`"):
        check_parts(cfg, black_box=True)
    assert cfg.to_dict()["scenario"]["domain"] == [0.0, 1.0]
    plain = load_config(_setting(tmp_path))
    assert "domain" not in plain.to_dict()["scenario"]  # defaults stay out of results
    check_parts(plain, black_box=False)



@pytest.mark.parametrize("args,match", [
    (["--epsilon", "1e300", "--releases", "3"], "epsilon must be at most 700"),
    (["--epsilon", "800", "--releases", "10", "--masks", "fresh"], "epsilon must be at most 700"),
])
def test_extremes_are_refused_by_the_key_the_user_wrote(args, match):
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--mechanism", "laplace",
                          "--p-star", "0.5", *args, "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and match in res.stderr and "Traceback" not in res.stderr
    assert "Warning" not in res.stderr


_ISSUE_44 = dict(extra="domain = [-1.0, 1.0]\nna_value = 0.0", miss="p_star = 0.05",
                 releases='\n[releases]\ncount = 10\nmasks = "shared"\n')


def test_laplace_shared_with_na_inside_is_exact_at_delta_zero(capsys, tmp_path):
    """Issue 44's setting (b = 1, [−1, 1], NA 0, q = 0.05, k = 10): the bracket
    [7.005, 17.004] is now the exact 7.056 (every release at hi against lo)."""
    path = _setting(tmp_path, **_ISSUE_44)
    Path(path).write_text(Path(path).read_text().replace("epsilon = 1.0", "epsilon = 2.0"))
    data = _main_json(capsys, "--config", path, "--target-delta", "0")
    row = next(r for r in data["bounds"] if r["reference"] == "exact worst case")
    exact = math.log((0.95 + 0.05 * math.exp(10)) / (0.95 + 0.05 * math.exp(-10)))
    assert row["pair"] == ["hi", "lo"] and row["epsilon"] == pytest.approx(exact, abs=1e-9)


def test_an_open_bracket_prints_each_ends_pair(tmp_path):
    """Issue 44's setting closes at δ > 0 (every pair bounded on boxes, THEORY §10.3) and
    names one pair; past the boxes' 128 releases the bracket stays open and names the upper
    end's pair (the domain's move hi vs lo, here the δ = 0 worst pair) and the lower end's (a
    record against the missing record)."""
    path = _setting(tmp_path, **_ISSUE_44)
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", path,
                          "--target-delta", "1e-5"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("worst case"))
    assert "(exact worst case)" in line and "worst pair: hi vs lo;" in line
    assert "bounded on boxes" in line
    wide = tmp_path / "k129.toml"
    wide.write_text(Path(path).read_text().replace("count = 10\n", "count = 129\n"))
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", str(wide),
                          "--target-delta", "1e-5", "--json"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    row = next(r for r in json.loads(res.stdout)["bounds"]
               if r["reference"] == "worst case (bracket)")
    assert row["upper_pair"] == ["hi", "lo"] and "NA" in row["pair"]
    assert row["lower"] < row["epsilon"]


def test_mean_over_the_observed_entries_with_a_private_count(capsys, tmp_path):
    """``scenario.count = 'private'``: the noisy sum and noisy count of the observed entries,
    the worst case the exact pair (hi, NA) of audit.theory.observed_mean (THEORY §10.8)."""
    from audit.theory.observed_mean import ObservedMeanSetting, observed_mean_worst_case

    path = _setting(tmp_path, noise="gaussian", delta="delta = 1e-5",
                    extra="domain = [-1.0, 1.0]\ncount = 'private'", miss="p_star = 0.1",
                    releases='\n[releases]\ncount = 100\nmasks = "shared"\n')
    data = _main_json(capsys, "--config", path, "--target-delta", "1e-5")
    row = next(r for r in data["bounds"] if r["reference"] == "exact worst case")
    want = observed_mean_worst_case(
        ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1.0, 1.0), 0.1, 100), 1e-5)
    assert row["epsilon"] == pytest.approx(want.epsilon, rel=1e-9) and row["pair"] == ["hi", "NA"]
    assert row["epsilon"] == pytest.approx(2.16661, abs=1e-4)
    assert data["parameters"]["count"] == "private" and data["parameters"]["split"] == 0.5


def test_mean_with_fresh_masks_at_delta_above_zero(capsys, tmp_path):
    """Fresh masks for a Gaussian mean (THEORY §10.8): the row is the candidate pairs'
    envelope composed, above, and the worst pair with NA, below; no refusal."""
    path = _setting(tmp_path, noise="gaussian", delta="delta = 1e-5",
                    extra="domain = [-1.0, 1.0]\ncount = 'private'", miss="p_star = 0.3",
                    releases='\n[releases]\ncount = 3\nmasks = "fresh"\n')
    data = _main_json(capsys, "--config", path, "--target-delta", "1e-5")
    row = next(r for r in data["bounds"] if r["name"].startswith("worst case of this setting"))
    assert row["pair"] == ["hi", "NA"] and row["exact"] and "fresh masks" in row["method"]
    assert 0.0 < row["lower"] <= row["epsilon"] <= row["lower"] + 2e-3


def test_mean_with_a_public_count_has_no_finite_epsilon_below_q(tmp_path):
    """``scenario.count = 'public'``: the count reveals whether the record was observed, so a
    record against a record missing in the data is told apart with probability q: ε = ∞ at
    every δ < q, and no theorem row (the release is not differentially private)."""
    path = _setting(tmp_path, extra="count = 'public'", miss="p_star = 0.1")
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", path,
                          "--target-delta", "1e-5"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert "no theorem-level row: a public count is not differentially private" in res.stdout
    assert "epsilon = inf at delta = 1e-05" in res.stdout and "hi vs NA" in res.stdout
    high = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", path,
                           "--target-delta", "0.2"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert high.returncode == 2 and high.stderr.startswith("error: delta must be below 0.1")
    run = subprocess.run([sys.executable, "-m", "audit", "run", path], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "scenario.count" in run.stderr


@pytest.mark.parametrize("releases", ["", '\n[releases]\ncount = 2\nmasks = "shared"\n'])
def test_a_laplace_loss_beyond_the_float_range_is_refused_before_any_work(tmp_path, releases):
    # ε = 1,500 on [−1, 1]: one release's loss 1,500. k = 1 raised the pair integrator's
    # "eps must be in [0, 700.0]" mid-work, k = 2 dp_accounting's "deltas are not in
    # non-increasing order"; neither named anything the user wrote
    path = _setting(tmp_path, extra="domain = [-1.0, 1.0]\nna_value = 0.0", releases=releases)
    Path(path).write_text(Path(path).read_text().replace("epsilon = 1.0", "epsilon = 1500.0"))
    res = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", path,
                          "--target-delta", "1e-6"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("error: scale must be at least 0.00285714") \
        and "scenario.epsilon sets the scale" in lines[0]
