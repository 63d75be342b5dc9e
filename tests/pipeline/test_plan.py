"""audit.pipeline.plan: the model's pair and every ceiling, before any sampling."""

from __future__ import annotations

import math

import pytest

from audit.pipeline.config import config_from_dict
from audit.pipeline.plan import plan_audit, ranking_release
from tests.conftest import audit_doc


def test_canonical_laplace_plan():
    plan = plan_audit(config_from_dict(audit_doc()))
    assert plan.eps_pair == pytest.approx(0.15, abs=1e-9)  # shift 6 / b = 20, half of it
    assert plan.theory == "RPS Theorem 4.5"
    assert plan.eps_theory == pytest.approx(math.log1p(0.5 * math.expm1(0.3)), rel=1e-12)
    assert plan.audit_delta == 0.0 and plan.eps_base == 1.0
    assert plan.eps_pair <= plan.eps_fdp <= plan.eps_theory + 1e-12
    assert plan.noise_scale == pytest.approx(20.0)  # 2 d B / ε


def test_mnar_has_no_theorem_but_reports_the_mar_formula():
    doc = audit_doc(missingness={"kind": "mnar-value"})
    plan = plan_audit(config_from_dict(doc))
    assert plan.eps_theory is None and "MNAR" in plan.theory
    assert plan.eps_mar_formula is not None and plan.eps_fdp is None


def test_ranking_release_is_the_scenarios_release():
    cfg = config_from_dict(audit_doc())
    mech, query = cfg.components()
    assert ranking_release(cfg, query).scale == plan_audit(cfg).noise_scale
