"""audit.pipeline.model_subject: the model's release as a subject (draws, counts, ceilings)."""

from __future__ import annotations

import numpy as np
import pytest

from attacks import ExactLikelihoodRatio
from audit.enums import CeilingKind
from audit.pipeline.config import config_from_dict
from audit.pipeline.model_subject import ModelSubject
from audit.pipeline.plan import plan_audit
from audit.simulation import engine
from tests.conftest import audit_doc

CFG = config_from_dict(audit_doc(**{"audit.trials": 5000}))


@pytest.fixture(scope="module")
def subject():
    return ModelSubject(plan_audit(CFG))


def test_ceilings_are_the_plans(subject):
    c = {x.kind: x for x in subject.ceilings}
    assert c[CeilingKind.PAIR].value == pytest.approx(0.15, abs=1e-9)
    assert c[CeilingKind.PAIR].error == subject.plan.eps_pair_error
    assert c[CeilingKind.THEORY].label == "RPS Theorem 4.5"
    assert c[CeilingKind.FDP].value == subject.plan.eps_fdp
    assert subject.delta == 0.0 and subject.setting.p_star == 0.5


def test_draws_and_counts_are_the_engines(subject):
    pilot = subject.draw(1000, 7)
    assert np.array_equal(pilot.p, engine.sample_outputs(subject.plan.P, 1000, 7, side=0))
    assert np.array_equal(pilot.q, engine.sample_outputs(subject.plan.Q, 1000, 7, side=1))
    assert subject.draw(0, 7).p.size == 0
    score = ExactLikelihoodRatio().fit(pilot, subject.laws)
    stat = subject.statistic(score, pilot, 200)
    counts = subject.count(stat, 3000, 11)
    ref = engine.run_histograms(subject.plan.P, subject.plan.Q, stat, 3000, 11)
    assert np.array_equal(counts.counts_p, ref.counts_p) and counts.trials == 3000
    with pytest.raises(ValueError, match="monitor must be None"):
        subject.count(stat, 10, 1, monitor=object())


def test_pilot_rule_and_rate(subject):
    rule = subject.pilot_rule
    assert rule.default_size(10**9) == 10**7 and rule.default_size(10) == 10**5
    assert subject.rate() > 1e5 and subject.workers(8) == 1 and subject.unit == "draws"
