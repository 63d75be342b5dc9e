"""End-to-end audits through the runner: ceilings, JSON, reproducibility, refusals."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from attacks import DensityRatio, ExactLikelihoodRatio
from audit.estimation.regions import model_bin_probabilities, select_region_by_model
from audit.pipeline.config import config_from_dict
from audit.pipeline.plan import plan_audit
from audit.pipeline.runner import run_audit, run_tradeoff_audit
from audit.protocols import Laws, Pilot
from audit.simulation import engine
from tests.conftest import audit_doc


def _doc(**over):
    return audit_doc(audit={"trials": 200_000, "seed": 11}, **over)


REQUIRED = {"eps_lower", "eps_pair", "eps_theory", "eps_fdp", "delta", "trials", "seconds",
            "confidence", "seed", "witness", "config", "versions"}


def test_laplace_audit_respects_every_ceiling_and_serialises():
    res = run_audit(config_from_dict(_doc()))
    assert 0.0 < res.eps_lower <= res.eps_pair <= res.eps_theory
    assert res.eps_pair == pytest.approx(0.15, abs=1e-9)  # shift 6 / b = 20, half of it
    assert res.eps_theory == pytest.approx(math.log1p(0.5 * math.expm1(0.3)), rel=1e-12)
    assert res.ceiling_violations() == []
    d = res.to_dict()
    assert REQUIRED <= set(d)
    json.dumps(d, allow_nan=False)
    w = d["witness"]
    assert 0 <= w["k_p"] <= w["n_p"] == 200_000 and 0 <= w["k_q"] <= w["n_q"]
    assert d["eps_point"] >= d["eps_lower"]  # the plug-in estimate is not a bound


def test_same_seed_same_result_and_new_seed_new_draws():
    cfg = config_from_dict(_doc())
    st = plan_audit(cfg)
    a, b = run_audit(cfg, plan=st), run_audit(cfg, plan=st)
    assert a.witness == b.witness and a.eps_lower == b.eps_lower
    c = run_audit(cfg.with_overrides(seed=12), plan=st)
    assert (c.witness["k_p"], c.witness["k_q"]) != (a.witness["k_p"], a.witness["k_q"])


def test_gaussian_audit_uses_amplified_delta():
    doc = _doc(**{"scenario.mechanism": "gaussian", "scenario.delta": 1e-5})
    res = run_audit(config_from_dict(doc))
    assert res.delta == pytest.approx(0.5e-5)
    assert res.theory == "RPS Theorem 4.7"
    assert res.eps_lower <= res.eps_pair <= res.eps_fdp <= res.eps_theory
    assert res.eps_base == pytest.approx(0.7861, abs=1e-3)  # G_μ at δ = 5e-6, μ = 1/4.845


def test_analytic_calibration_falls_back_to_theorem_3_2():
    doc = _doc(**{"scenario.mechanism": "gaussian", "scenario.delta": 1e-5,
                  "scenario.calibration": "analytic", "scenario.epsilon": 2.0,
                  "audit.trials": 50_000})
    res = run_audit(config_from_dict(doc))
    assert res.theory == "RPS Theorem 3.2"
    assert res.eps_theory == pytest.approx(math.log1p(0.5 * math.expm1(2.0)))


def test_vector_output_audit_has_no_exact_pair():
    doc = _doc(**{"scenario.query": "vector-sum", "scenario.d": 3,
                  "audit.trials": 100_000})
    doc["missingness"] = {"kind": "mcar-iid", "rate": 0.5}
    res = run_audit(config_from_dict(doc))
    assert res.eps_pair is None
    assert 0.0 <= res.eps_lower <= res.eps_fdp <= res.eps_theory
    assert res.selection == "pilot"


def test_mnar_has_no_theory_but_reports_the_mar_formula():
    doc = _doc(**{"audit.trials": 50_000})
    doc["missingness"] = {"kind": "mnar-value"}
    res = run_audit(config_from_dict(doc))
    assert res.missing_class == "MNAR"
    assert res.eps_theory is None and res.eps_fdp is None
    assert res.eps_mar_formula is not None and "MNAR" in res.theory


@pytest.mark.parametrize("attack", ["density-ratio", "logistic", "threshold"])
def test_black_box_attacks_refuse_model_selection_when_the_config_is_read(attack):
    with pytest.raises(ValueError, match="selection='model' needs a white-box attack"):
        config_from_dict(_doc(**{"audit.attack": attack, "audit.selection": "model"}))


def test_model_selection_refuses_vector_outputs_when_the_config_is_read():
    doc = _doc(**{"audit.selection": "model", "scenario.query": "vector-sum",
                  "scenario.d": 3, "missingness.observed": 1})
    with pytest.raises(ValueError, match="selection='model' needs a scalar output"):
        config_from_dict(doc)


def test_model_selection_draws_no_pilot():
    res = run_audit(config_from_dict(_doc(**{"audit.selection": "model"})))
    assert res.selection == "model" and res.pilot_trials == 0
    assert set(res.timings) == {"plan", "pilot", "fit", "main run", "selection and bound"}
    assert res.seconds == pytest.approx(sum(res.timings.values()))


@pytest.mark.parametrize("selection", ["pilot", "grid"])
def test_other_selections_give_valid_bounds(selection):
    res = run_audit(config_from_dict(_doc(**{"audit.selection": selection})))
    assert res.selection == selection
    assert 0.0 < res.eps_lower <= res.eps_pair
    if selection == "grid":
        assert res.witness["method"] == "bonferroni-grid" and res.witness["n_regions"] > 2


def test_model_selection_sums_tail_masses_without_rounding():
    # Regression: rounding each bin's expected count to an integer made far tails look
    # empty under Q (k_q = 0) and the selection picked a region with a few dozen counts.
    doc = _doc(**{"scenario.mechanism": "gaussian", "scenario.delta": 1e-5,
                  "missingness.observed": 10, "audit.trials": 1_000_000})
    st = plan_audit(config_from_dict(doc))

    edges = engine.default_edges(st.P, st.Q, 4000)
    score = ExactLikelihoodRatio().fit(Pilot(np.zeros(2), np.zeros(2)), Laws(st.P, st.Q))
    scores = score.per_bin(edges)
    region = select_region_by_model(st.P, st.Q, edges, scores, 1_000_000, st.audit_delta, 0.05)
    p_mass = model_bin_probabilities(st.P, edges)[region.mask(scores)].sum()
    assert p_mass * 1_000_000 > 1_000


def test_tradeoff_audit_points_lie_above_the_fdp_curve():
    doc = _doc(**{"scenario.mechanism": "gaussian", "scenario.delta": 1e-5})
    ta = run_tradeoff_audit(config_from_dict(doc), n_thresholds=8)
    assert ta.points.alpha_hi.shape == ta.points.beta_hi.shape == (16,)  # 8 × 2 orders
    assert ta.points.n_intervals == 32  # two error bounds per point, Bonferroni over all
    assert ta.fdp_violation <= 0.0
    # estimates sit below their upper corners
    assert np.all(ta.points.alpha_hat <= ta.points.alpha_hi)
    assert np.all(ta.points.beta_hat <= ta.points.beta_hi)


def test_worst_pair_search_finds_sign_flipped_corner_for_linear_weights():
    # Regression: with weights (1, -0.5) the records ±B·sign(w) = ±(1, -1) are the worst
    # pair; the search once lacked (-1, 1) and reported 0.635 instead of the exact value.
    doc = _doc(**{"scenario.query": "linear", "scenario.d": 2})
    doc["scenario"]["query_params"] = {"weights": [1.0, -0.5]}
    doc["missingness"] = {"kind": "mcar-row", "p_star": 0.75}
    st = plan_audit(config_from_dict(doc))
    # shifts ±1.5 at b = C_1/ε = 3, the record kept w.p. 0.75: the tail ratio is exact
    expect = math.log((0.75 * math.exp(0.5) + 0.25) / (0.75 * math.exp(-0.5) + 0.25))
    assert st.eps_pair == pytest.approx(expect, rel=1e-9)  # 0.7462 (0.635 before the fix)


def test_clipped_mean_constants_use_the_smaller_of_clip_and_bound():
    # Regression: clip 2 > B = 1 used B = 2 for the constants, halving the audited pair's ε
    # relative to the calibration. With min(B, c) the complete-data pair attains ε.
    doc = _doc(**{"scenario.query": "clipped-mean", "scenario.d": 1, "scenario.epsilon": 2.0})
    doc["scenario"]["query_params"] = {"clip": 2.0}
    doc["missingness"] = {"kind": "mcar-row", "p_star": 1.0}
    st = plan_audit(config_from_dict(doc))
    assert st.eps_pair == pytest.approx(2.0, rel=1e-9)


def test_tradeoff_audit_refuses_vector_outputs():
    doc = _doc(**{"scenario.query": "vector-sum", "scenario.d": 2, "audit.trials": 1000,
                  "missingness.observed": 1})
    with pytest.raises(ValueError, match="scalar output"):
        run_tradeoff_audit(config_from_dict(doc))


def test_checkpointed_audit_resumes_with_identical_counts(tmp_path):
    cfg = config_from_dict(_doc(**{"audit.checkpoint": str(tmp_path / "ck")}))
    st = plan_audit(cfg)
    first = run_audit(cfg, plan=st)
    chunks = sorted((tmp_path / "ck").glob("*.npz"))
    assert chunks, "the main run saved no chunk"
    stamp = [c.stat().st_mtime_ns for c in chunks]
    again = run_audit(cfg, plan=st)  # loads every finished chunk instead of redoing it
    assert again.witness == first.witness
    assert [c.stat().st_mtime_ns for c in chunks] == stamp
    plain = run_audit(dataclasses.replace(cfg, audit=dataclasses.replace(cfg.audit,
                                                                         checkpoint=None)),
                      plan=st)
    assert plain.witness == first.witness


def test_pilot_is_histogrammed_on_the_kernels_scale_for_transformed_scores():
    # Regression: for the density-ratio attack on vector outputs the kernel histograms the
    # projection x·w while the score is f(x·w); the pilot was histogrammed as f(x·w), on
    # other bins than the main run (78 % of main draws fell in under/overflow).

    doc = _doc(**{"scenario.query": "vector-sum", "scenario.d": 3, "audit.trials": 200_000,
                  "audit.attack": "density-ratio"})
    doc["missingness"] = {"kind": "mcar-iid", "rate": 0.3}
    cfg = config_from_dict(doc)
    st = plan_audit(cfg)
    rng = np.random.default_rng(0)
    xp, xq = st.P.sample(20_000, rng), st.Q.sample(20_000, rng)
    score = DensityRatio().fit(Pilot(xp, xq))
    w, c = score.projection.weights, score.projection.offset
    np.testing.assert_allclose(score.projection.evaluate(xp), xp @ w + c)
    assert not np.allclose(score.projection.evaluate(xp), score(xp))
    res = run_audit(cfg, plan=st)
    assert res.eps_lower > 0.3  # 0.44 at 10^6 trials; ≈ 0.18 with the misaligned bins


def test_run_audit_takes_a_document_or_a_path_and_refuses_anything_else(tmp_path):
    doc = _doc(**{"audit.trials": 20_000})
    a = run_audit(doc)
    b = run_audit(config_from_dict(doc))
    assert a.eps_lower == b.eps_lower
    path = tmp_path / "c.toml"
    path.write_text('[scenario]\nnoise = "laplace"\nepsilon = 1.0\nquery = "sum"\nd = 1\n'
                    '[missingness]\nkind = "mcar-iid"\nrate = 0.1\n[audit]\ntrials = 20000\n')
    assert run_audit(str(path)).trials == 20_000
    with pytest.raises(TypeError, match="cfg must be an AuditConfig, a config document"):
        run_audit(42)


_MODEL_DOC = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1,
                           "n": 3},
              "missingness": {"kind": "mcar-iid", "rate": 0.2}, "audit": {"trials": 2_000}}


@pytest.mark.parametrize(("param", "value", "kind", "needle"), [
    ("cfg", 3, TypeError, r"cfg must be an AuditConfig"),
    ("subject", "x", TypeError, r"subject must be an audit subject .*got subject=str"),
    ("implementation", "x", TypeError, r"implementation must be an implementation"),
    ("plan", "x", ValueError, r"plan must be an AuditPlan"),
    ("progress", "yes", ValueError, r"progress must be a bool"),
    ("policy", "x", TypeError, r"policy must be an audit.policy.AuditPolicy"),
])
def test_run_audit_refuses_a_wrong_argument_naming_it(param, value, kind, needle):
    from unittest import mock

    kwargs = {"cfg": _MODEL_DOC, param: value}
    # before any work: no plan is built
    with mock.patch("audit.pipeline.factory.build_plan", side_effect=AssertionError("work")), \
            pytest.raises(kind, match=needle):
        run_audit(**kwargs)
