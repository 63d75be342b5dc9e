"""audit.pipeline.subject: both kinds of subject satisfy the protocol, the factory picks by
config or by plan, and the runner gives the same result from a config, a plan or a subject."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from audit.enums import CeilingKind
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.factory import make_subject
from audit.pipeline.implementation import ImplementationSubject, plan_implementation_audit
from audit.pipeline.model_subject import ModelSubject
from audit.pipeline.plan import plan_audit
from audit.pipeline.runner import run_audit
from audit.pipeline.subject import Subject
from tests.conftest import ROOT, audit_doc


def _laplace(data, rng):
    return np.clip(np.nan_to_num(data), -1, 1).sum() + rng.laplace(scale=6.0)


IMPL = CallableImplementation(_laplace, Claim(1.0, 0.0, "test"), "laplace-sum")
DOC = audit_doc(**{"audit.trials": 4000, "scenario.d": 3, "scenario.n": 5})


def test_model_subject_from_config_and_plan():
    cfg = config_from_dict(DOC)
    s = make_subject(cfg)
    assert isinstance(s, ModelSubject) and isinstance(s, Subject)
    assert [c.kind for c in s.ceilings] == [CeilingKind.PAIR, CeilingKind.THEORY,
                                            CeilingKind.FDP]
    assert s.laws is not None and s.claim is None and s.unit == "draws"
    plan = plan_audit(cfg)
    assert make_subject(plan=plan).plan is plan
    other = make_subject(cfg.with_overrides(seed=99), plan=plan)  # the config's settings win
    assert other.config.audit.seed == 99 and other.plan.pair is plan.pair


def test_implementation_subject_from_an_object_and_its_ceilings():
    cfg = config_from_dict(DOC).with_overrides(attack="density-ratio")
    s = make_subject(cfg, implementation=IMPL)
    assert isinstance(s, ImplementationSubject) and isinstance(s, Subject)
    assert s.laws is None and s.unit == "calls" and s.supports_sequential
    kinds = {c.kind: c.value for c in s.ceilings}
    assert kinds[CeilingKind.CLAIM] == 1.0 and 0 < kinds[CeilingKind.AMPLIFIED_CLAIM] < 1.0
    assert s.claim.implementation == "laplace-sum"
    assert s.claim.to_dict()["implementation"] == "laplace-sum"
    plan = plan_implementation_audit(cfg, IMPL)
    assert make_subject(plan=plan).plan is plan


def test_runner_gives_one_result_from_config_plan_or_subject():
    cfg = config_from_dict(DOC)
    a = run_audit(cfg)
    b = run_audit(subject=make_subject(plan=plan_audit(cfg)))
    assert a.witness == b.witness and a.eps_lower == b.eps_lower
    with pytest.raises(ValueError, match="audit.attack must be a black-box attack"):
        run_audit(cfg.with_overrides(attack="exact-lr"), implementation=IMPL)
    # no attack named: each target kind's default (audit.policy), recorded in the result
    assert a.attack == "exact-lr" and a.config["audit"]["attack"] == "exact-lr"
    black = run_audit(cfg.with_overrides(trials=2_000), implementation=IMPL)
    assert black.attack == "auto" and black.config["audit"]["attack"] == "auto"
    cfg = cfg.with_overrides(attack="density-ratio")
    c = run_audit(cfg, implementation=IMPL)
    d = run_audit(subject=ImplementationSubject.from_config(cfg, IMPL))
    assert c.witness == d.witness and c.selection == "pilot (fixed)"
    assert c.to_dict()["eps_pair"] is None and c.to_dict()["eps_claim"] == 1.0


def test_bad_factory_input():
    with pytest.raises(ValueError, match="needs a config"):
        make_subject()
    with pytest.raises(ValueError, match="plan must be"):
        make_subject(plan=object())


def test_no_import_cycle_between_runner_subjects_and_factory():
    # importing the runner alone must not need the factory's modules to import it back
    code = ("import audit.pipeline.runner, sys; "
            "print(sorted(m for m in sys.modules if m.startswith('audit.pipeline')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "audit.pipeline.factory" in out and "audit.pipeline.implementation" in out


def test_the_implementation_pilot_has_no_fixed_cap_but_a_memory_bound():
    cfg = config_from_dict(audit_doc(**{"audit.trials": 10**7, "scenario.d": 3,
                                        "scenario.n": 5, "audit.attack": "density-ratio"}))
    s = make_subject(cfg, implementation=IMPL)
    assert s.pilot_rule.default_size(10**7) == 2 * 10**6  # a fifth, not 5·10^4
    assert s.pilot_rule.default_size(10**12) == 2**31 // 16  # 2 GiB of scalar outputs
    # small budgets: twice the main run up to 2·10^4 calls, then at least 2·10^4
    assert [s.pilot_rule.default_size(t) for t in (500, 5_000, 20_000, 60_000)] == \
        [1_000, 10_000, 20_000, 20_000]
    with pytest.raises(ValueError, match="audit.pilot_trials must be at most"):
        make_subject(cfg.with_overrides(pilot_trials=10**9), implementation=IMPL)


def test_what_a_subject_cannot_run_is_refused_before_any_work():
    cfg = config_from_dict(audit_doc(**{"audit.attack": "density-ratio", "scenario.d": 3,
                                        "scenario.n": 5}))
    with pytest.raises(ValueError, match="needs an \\[implementation\\] table"):
        make_subject(cfg.with_overrides(mode="sequential"))
    with pytest.raises(ValueError, match="audit.selection must be 'pilot' or 'auto'"):
        make_subject(cfg.with_overrides(mode="sequential", selection="grid"),
                     implementation=IMPL)
