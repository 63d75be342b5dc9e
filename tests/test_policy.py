"""The audit policy: every statistical default in one place, read by every entry point."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from audit.policy import BLACK_BOX_PILOT, DEFAULT_POLICY, MODEL_PILOT, AuditPolicy, PilotRule

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_attack_per_target_kind():
    assert DEFAULT_POLICY.default_attack(black_box=False) == "exact-lr"
    assert DEFAULT_POLICY.default_attack(black_box=True) == "auto"


@pytest.mark.parametrize(("trials", "black_box", "expected"), [
    # a black box: twice the main run up to 2·10^4, 2·10^4 up to 10^5, a fifth beyond, >= 10^3
    (300, True, 1_000), (5_000, True, 10_000), (20_000, True, 20_000), (10**5, True, 20_000),
    (10**6, True, 200_000),
    # the model: a tenth in [10^5, 10^7]
    (10**4, False, 100_000), (10**7, False, 1_000_000), (10**9, False, 10_000_000),
])
def test_the_one_pilot_rule(trials, black_box, expected):
    assert DEFAULT_POLICY.pilot_size(trials, black_box=black_box) == expected


def test_the_pilot_rule_scales_with_the_settings_bounded_and_stops_at_a_memory_cap():
    # a stratified grid of 6 rates: the pilots of 6 audits
    assert DEFAULT_POLICY.pilot_size(5_000, black_box=True, settings=6) == 60_000
    assert DEFAULT_POLICY.pilot_size(5_000, black_box=True, settings=6, most=12_000) == 12_000
    assert DEFAULT_POLICY.pilot_size(10**9, black_box=False, most=2_000_000) == 2_000_000


def test_the_rules_are_the_ones_the_subjects_use():
    from audit.pipeline import implementation, model_subject

    assert model_subject.PILOT_RULE is MODEL_PILOT
    assert implementation.PILOT_RULE is BLACK_BOX_PILOT
    assert isinstance(MODEL_PILOT, PilotRule) and MODEL_PILOT.counted_selection


def test_a_search_candidate_follows_the_black_box_rule():
    from audit.pipeline.search import pilot_calls

    for calls in (200, 2_000, 40_000, 10**6):
        assert pilot_calls(calls) == DEFAULT_POLICY.pilot_size(calls, black_box=True)


def test_the_config_and_assert_private_read_the_policy():
    import inspect

    from audit.pipeline.config import AuditSettings, config_from_dict
    from audit.testing import assert_private

    assert AuditSettings().confidence == DEFAULT_POLICY.confidence
    params = inspect.signature(assert_private).parameters
    assert params["confidence"].default == DEFAULT_POLICY.confidence
    assert params["attack"].default is None  # resolved to the policy's black-box attack
    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 3},
           "missingness": {"kind": "mcar-iid", "rate": 0.0}}
    model = config_from_dict(doc)
    assert model.audit.attack is None  # the target kind's default, resolved by the factory
    assert model.audit.attack_for(black_box=False) == "exact-lr"
    assert model.audit.attack_for(black_box=True) == "auto"
    impl = {**doc, "implementation": {"target": "tests.adapters.example_mechanisms:noisy_sum",
                                      "epsilon": 1.0,
                                      "params": {"bound": 1.0, "scale": 2.0}}}
    cfg = config_from_dict(impl)
    assert cfg.audit.attack is None and cfg.audit.attack_for(black_box=True) == "auto"


def test_no_other_module_writes_a_default_attack_or_a_pilot_rule():
    """The literal defaults live in audit/policy.py only (grep-able): no ``PilotRule(`` and no
    ``attack = "density-ratio"`` default elsewhere in the core."""
    offenders = []
    for path in sorted((ROOT / "audit").rglob("*.py")):
        if path.name == "policy.py" and path.parent.name == "audit":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "PilotRule":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} PilotRule(...)")
            if isinstance(node, ast.Constant) and node.value == "density-ratio" \
                    and path.name != "fitted.py":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} 'density-ratio'")
    assert offenders == []


def test_a_policy_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.confidence = 0.5  # type: ignore[misc]
    assert AuditPolicy(black_box_attack="knn").default_attack(black_box=True) == "knn"


@pytest.mark.parametrize(("field", "value"), [
    ("confidence", 1.5), ("confidence", 0.0), ("search_confidence", -0.1),
    ("guard_alpha", 1.0), ("held_out_alpha", 0.0), ("pessimism_sd", -1.0),
    ("grid_quantiles", 1), ("held_out_levels", 0), ("claim_fractions", (0.5, 1.5)),
    ("claim_fractions", ()), ("black_box_attack", ""),
])
def test_a_policy_refuses_values_outside_its_ranges(field, value):
    with pytest.raises(ValueError, match=field):
        AuditPolicy(**{field: value})


@pytest.mark.parametrize("trials", [0, -5, 2.5])
def test_the_pilot_size_of_no_trials_is_refused(trials):
    with pytest.raises(ValueError, match="trials"):
        DEFAULT_POLICY.pilot_size(trials, black_box=True)


def test_the_amplified_claim_binds_by_default_and_the_policy_says_where():
    from types import SimpleNamespace

    from audit.enums import CeilingKind

    own = SimpleNamespace(kind=CeilingKind.CLAIM)
    amp = SimpleNamespace(kind=CeilingKind.AMPLIFIED_CLAIM)
    assert DEFAULT_POLICY.amplified_binds
    assert DEFAULT_POLICY.failing([own, amp]) == [own, amp]
    assert DEFAULT_POLICY.failing([amp], amplified=False) == []
    assert AuditPolicy(amplified_binds=False).failing([own, amp]) == [own]
    assert AuditPolicy(amplified_binds=False).failing([amp], amplified=True) == [amp]
