"""Curve claims through the config and the runner (``[claim]``): the table's refusals, the
parts' refusals, a model audit and a black-box audit whose results carry ``eps_family`` and
``curve_claim`` beside an unchanged ε_lower, and the command line's one ``error:`` line.

Oracles: the family's own ε(δ) (``audit.theory.tradeoff.families``), the JSON schema, a
second run without the table (same seeds, same ε_lower).
"""

from __future__ import annotations

import os
import subprocess
import sys

import jsonschema
import numpy as np
import pytest

from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from audit.pipeline.schema import config_schema, result_schema
from audit.theory.tradeoff.families import GaussianFamily
from tests.conftest import ROOT, audit_doc, to_toml

#: the Gaussian sum of one feature, the record observed with p* = 0.3 (a model audit)
MODEL = {"scenario": {"noise": "gaussian", "epsilon": 4.0, "delta": 1e-5,
                      "calibration": "analytic", "query": "sum", "d": 1, "n": 1},
         "missingness": {"kind": "mcar-iid", "rate": 0.7},
         "audit": {"trials": 10_000, "seed": 1},
         "claim": {"curve": "subsampled-gaussian", "p_star": 0.3}}


def gaussian_sum(data, rng, *, scale):
    """The sum of one table plus N(0, scale²): on the pair [[1]] / [[-1]] exactly G_μ with
    μ = 2/scale (a user's mechanism for the black-box test)."""
    return float(np.nansum(data) + rng.normal(0.0, scale))


gaussian_sum.batch = lambda datasets, rng, *, scale: (
    np.nansum(np.asarray(datasets, dtype=np.float64), axis=(1, 2))
    + rng.normal(0.0, scale, size=len(datasets)))

#: the black box: μ = 1 on its pair (true ε = 4.377 at δ = 1e-5), its claim ε = 5 at δ = 1e-5
BLACK_BOX = {"scenario": {"query": "sum", "d": 1, "n": 1},
             "missingness": {"kind": "mcar-iid", "rate": 0.0},
             "implementation": {"target": f"{__name__}:gaussian_sum", "epsilon": 5.0,
                                "delta": 1e-5, "params": {"scale": 2.0}},
             "pair": {"z": [[1.0]], "z_prime": [[-1.0]]},
             "audit": {"trials": 20_000, "seed": 2},
             "claim": {"curve": "gaussian"}}


@pytest.mark.parametrize(("claim", "message"), [
    ({"curve": "laplace"}, r"claim\.curve must be one of 'gaussian', 'subsampled-gaussian', "
                           r"'points', got claim\.curve='laplace'"),
    ({"curve": "subsampled-gaussian", "p_star": 0.0},
     r"claim\.p_star must be in \(0, 1\], got claim\.p_star=0\.0"),
    ({"curve": "subsampled-gaussian", "p_star": 1.5}, r"claim\.p_star=1\.5"),
    ({"curve": "subsampled-gaussian"}, r"needs claim\.p_star"),
    ({"curve": "points", "points": [[0.0, 1.0], [0.5, 0.1], [0.8, 0.09], [1.0, 0.0]]},
     r"claim\.points must be a decreasing convex trade-off function"),
    ({"curve": "points", "points": [[0.0, 1.0], [0.5, 0.7], [1.0, 0.0]]},
     r"claim\.points must lie on or below beta = 1 - alpha"),
    ({"curve": "gaussian", "mu": 1.0}, r"unknown key claim\.mu"),
    ({"p_star": 0.5}, r"config is missing the key claim\.curve"),
    ("gaussian", r"\[claim\] must be a table"),
])
def test_a_bad_claim_names_its_key(claim, message):
    with pytest.raises(ValueError, match=message):
        config_from_dict({**MODEL, "claim": claim})


def test_the_claim_is_written_back_and_the_schema_knows_it():
    cfg = config_from_dict(MODEL)
    assert cfg.to_dict()["claim"] == {"curve": "subsampled-gaussian", "p_star": 0.3}
    assert config_from_dict(cfg.to_dict()).claim.to_dict() == cfg.claim.to_dict()
    jsonschema.validate(MODEL, config_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**MODEL, "claim": {"curve": "laplace"}}, config_schema())


@pytest.mark.parametrize(("extra", "message"), [
    ({"audit": {"trials": 20_000, "mode": "sequential"}},
     r"\[claim\] is tested on a main run of fixed size"),
    ({"strata": {"rates": [0.0]}}, r"\[claim\] is tested on one histogram per side"),
])
def test_the_parts_refuse_what_a_claim_cannot_run_with(extra, message):
    with pytest.raises(ValueError, match=message):
        config_from_dict({**BLACK_BOX, **extra})


def test_a_model_audit_reports_eps_family_beside_an_unchanged_eps_lower():
    res = run_audit(config_from_dict(MODEL))
    plain = run_audit(config_from_dict({k: v for k, v in MODEL.items() if k != "claim"}))
    assert res.eps_lower == plain.eps_lower and plain.eps_family is None
    cc = res.curve_claim
    assert cc.refuted and res.eps_family > 0.0 and cc.delta == res.delta
    # the release is C_0.3(G_mu)-DP at the §7 member (eps_fdp); its pair is a two-sided
    # mixture, not a member, so eps_family may exceed eps_pair but not the member's ε
    assert res.eps_family < res.eps_fdp
    doc = res.to_dict()
    assert doc["eps_family"] == res.eps_family and doc["curve_claim"]["theta"] == cc.theta
    assert doc["eps_lower"] == plain.eps_lower
    jsonschema.validate(doc, result_schema())


def test_a_black_box_in_the_family_is_bounded_below_its_true_epsilon():
    from audit.cli.run import format_result

    res = run_audit(config_from_dict(BLACK_BOX))
    true = GaussianFamily().epsilon(1.0, 1e-5)
    # 2·10⁴ calls per side: μ* within 0.2 of μ = 1 (sd ≈ 0.015) and below it w.p. ≥ 0.95
    assert 0.8 < res.curve_claim.theta < 1.0
    assert 0.8 * true < res.eps_family < true
    assert res.eps_family > res.eps_lower  # the family statement is the stronger one
    jsonschema.validate(res.to_dict(), result_schema())
    text = format_result(res)  # what `python -m audit run` prints
    assert f"eps_family {res.eps_family:.4f}" in text and "only if it is in the family" in text
    points = {**BLACK_BOX, "claim": {"curve": "points",
                                     "points": [[0.0, 1.0], [0.3, 0.3], [1.0, 0.0]]}}
    res = run_audit(config_from_dict(points))  # a curve above G_1 at α = 0.3: refuted
    assert res.curve_claim.refuted and res.eps_family is None
    assert "claim      points curve REFUTED at confidence 0.95" in format_result(res)


def test_the_command_line_refuses_a_bad_claim_before_any_work(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bad = tmp_path / "bad.toml"
    bad.write_text(to_toml(audit_doc(**{"audit.trials": 20_000, "claim.curve": "points",
                                        "claim.points": [[0.0, 1.0], [0.5, 0.7], [1.0, 0.0]]})))
    out = subprocess.run([sys.executable, "-m", "audit", "run", str(bad), "--json",
                          str(tmp_path / "r.json")], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: claim.points")
    assert not (tmp_path / "r.json").exists()


def test_a_searched_pair_is_claimed_once_on_the_chosen_pair(monkeypatch):
    from audit.pipeline import search

    seen = []
    original = search._candidate_config

    def spy(*args, **kwargs):
        candidate = original(*args, **kwargs)
        seen.append(candidate.claim)
        return candidate

    monkeypatch.setattr(search, "_candidate_config", spy)
    doc = {k: v for k, v in BLACK_BOX.items() if k != "pair"}
    doc |= {"search": {"families": ["corners"], "calls": 500}, "audit": {"trials": 5000,
                                                                        "seed": 3}}
    res = run_audit(config_from_dict(doc))
    assert seen and set(seen) == {None}  # the candidates' short audits test no claim
    assert res.search is not None and res.curve_claim.refuted
    assert res.to_dict()["config"]["claim"] == {"curve": "gaussian"}
