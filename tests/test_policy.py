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
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.factory import make_subject

    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 3},
           "missingness": {"kind": "mcar-iid", "rate": 0.0}}
    cfg = config_from_dict(doc)
    impl = config_from_dict({**doc, "implementation": {
        "target": "tests.adapters.example_mechanisms:noisy_sum", "epsilon": 1.0,
        "params": {"bound": 1.0, "scale": 2.0}}})
    assert make_subject(cfg).pilot_rule is MODEL_PILOT
    black = make_subject(impl).pilot_rule
    assert dataclasses.replace(black, hi=None) == BLACK_BOX_PILOT  # (capped by memory)
    assert isinstance(MODEL_PILOT, PilotRule) and MODEL_PILOT.counted_selection
    # a config under another policy: its subjects read that policy's rules
    other = dataclasses.replace(MODEL_PILOT, divisor=20)
    pol = AuditPolicy(model_pilot=other, black_box_pilot=dataclasses.replace(
        BLACK_BOX_PILOT, multiple=1))
    assert make_subject(cfg.with_policy(pol)).pilot_rule is other
    assert make_subject(impl.with_policy(pol)).pilot_rule.multiple == 1


def test_a_search_candidate_follows_the_black_box_rule():
    from audit.pipeline.search import pilot_calls

    for calls in (200, 2_000, 40_000, 10**6):
        assert pilot_calls(calls) == DEFAULT_POLICY.pilot_size(calls, black_box=True)


def test_the_config_and_assert_private_read_the_policy():
    import inspect

    from audit.pipeline.config import AuditSettings, config_from_dict
    from audit.testing import assert_private

    assert AuditSettings().confidence is None  # the policy's, read when the audit runs
    assert AuditSettings().level == DEFAULT_POLICY.confidence
    assert AuditSettings(policy=AuditPolicy(confidence=0.9)).level == 0.9
    assert AuditSettings(confidence=0.99, policy=AuditPolicy(confidence=0.9)).level == 0.99
    params = inspect.signature(assert_private).parameters
    assert params["confidence"].default is None and params["policy"].default is None
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


def _policy_reads_outside_calls(tree: ast.AST) -> list[int]:
    """Lines where ``DEFAULT_POLICY.<x>`` is read at import time: at module level, in a class
    body (a dataclass field's default) or in a function's default arguments."""
    lines: list[int] = []

    def visit(node, in_body: bool) -> None:
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "DEFAULT_POLICY" and not in_body):
            lines.append(node.lineno)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for default in node.args.defaults + node.args.kw_defaults:
                if default is not None:
                    visit(default, in_body)
            for stmt in (node.body if isinstance(node.body, list) else [node.body]):
                visit(stmt, True)
            for deco in getattr(node, "decorator_list", []):
                visit(deco, in_body)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, in_body)

    visit(tree, False)
    return lines


@pytest.mark.parametrize("folder", ["audit", "attacks", "experiments", "benchmarks"])
def test_no_module_level_copy_of_a_policy_default(folder):
    """A default of the policy is read where it is used, from the policy the caller passes
    (or DEFAULT_POLICY at that call), never copied into a module constant, a dataclass
    field's default or a function's default argument at import."""
    offenders = [f"{path.relative_to(ROOT)}:{line}"
                 for path in sorted((ROOT / folder).rglob("*.py"))
                 for line in _policy_reads_outside_calls(ast.parse(path.read_text()))]
    assert offenders == []


def test_the_copy_scan_can_fail():
    src = ("X = DEFAULT_POLICY.confidence\n"
           "class C:\n    a: float = DEFAULT_POLICY.guard_alpha\n"
           "def f(a=DEFAULT_POLICY.held_out_alpha):\n    return DEFAULT_POLICY.confidence\n")
    assert _policy_reads_outside_calls(ast.parse(src)) == [1, 3, 4]


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


def _noisy_sum_doc(**audit) -> dict:
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1,
                         "n": 3},
            "missingness": {"kind": "mcar-iid", "rate": 0.2},
            "implementation": {"target": "tests.adapters.example_mechanisms:noisy_sum",
                               "epsilon": 1.0, "params": {"bound": 1.0, "scale": 2.0}},
            "audit": {"trials": 2_000, "seed": 5, "bins": 100, **audit}}


def test_one_audit_under_two_policies_honours_each():
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit

    cfg = config_from_dict(_noisy_sum_doc())
    other = AuditPolicy(confidence=0.8, black_box_joint_bound=False,
                        black_box_pilot=dataclasses.replace(BLACK_BOX_PILOT, multiple=1))
    a, b = run_audit(cfg), run_audit(cfg, policy=other)
    # the confidence: the policy's where the config sets none
    assert (a.confidence, b.confidence) == (0.95, 0.8)
    assert a.witness["alpha"] == pytest.approx(0.05) and b.witness["alpha"] == pytest.approx(0.2)
    assert a.to_dict()["config"]["audit"]["confidence"] == 0.95
    assert b.to_dict()["config"]["audit"]["confidence"] == 0.8
    # the pilot rule: twice the main run up to 2·10⁴ by default, once under the other
    assert (a.pilot_trials, b.pilot_trials) == (4_000, 2_000)
    # the joint bound: offered by default (this region takes it), not under the other
    assert a.witness["rule"] == "joint" and b.witness["rule"] == "two-intervals"
    # a confidence the config sets wins over the policy's
    c = run_audit(config_from_dict(_noisy_sum_doc(confidence=0.9)), policy=other)
    assert c.confidence == 0.9 and c.pilot_trials == 2_000


def test_an_online_audit_reads_its_chunks_from_the_policy():
    """The online rule is the policy's: its first chunk and growth decide how many calls a
    run that stops early has drawn (10, 12, 15, ... by default; 100 each under the other)."""
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit
    from audit.policy import OnlineRule

    doc = _noisy_sum_doc(mode="online", trials=20_000)
    doc["implementation"]["params"]["scale"] = 0.5  # true ε 4, claimed 1: stops early
    cfg = config_from_dict(doc)
    steady = AuditPolicy(online=OnlineRule(first=100, growth=1.0))
    a, b = run_audit(cfg), run_audit(cfg, policy=steady)
    assert a.trials < 20_000 and b.trials < 20_000  # both refuted before the budget
    assert b.trials % 100 == 0 and b.trials >= 100
    sizes, size, total = [], 10.0, 0
    while total < a.trials:
        sizes.append(int(size))
        total += int(size)
        size = min(size * 1.25, 1000)
    assert total == a.trials  # a sum of the default chunks


def test_assert_private_reads_its_policy():
    from audit.testing import assert_private
    from tests.adapters.example_mechanisms import noisy_sum

    def mech(data, rng):
        return noisy_sum(data, rng, bound=1.0, scale=4.0)  # true eps 0.5 < the claim

    pair = ([[1.0], [0.0]], [[-1.0], [0.0]])
    other = AuditPolicy(confidence=0.8, black_box_attack="density-ratio")
    a = assert_private(mech, pair, epsilon=1.0, trials=1_000)
    b = assert_private(mech, pair, epsilon=1.0, trials=1_000, policy=other)
    assert (a.confidence, b.confidence) == (0.95, 0.8)
    assert (a.attack, b.attack) == ("auto", "density-ratio")
    with pytest.raises(TypeError, match="policy must be an audit.policy.AuditPolicy"):
        assert_private(mech, pair, epsilon=1.0, policy={"confidence": 0.8})


def test_run_audit_refuses_a_policy_it_cannot_apply():
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.factory import make_subject
    from audit.pipeline.runner import run_audit

    cfg = config_from_dict(_noisy_sum_doc())
    with pytest.raises(TypeError, match="policy must be an audit.policy.AuditPolicy"):
        run_audit(cfg, policy=0.8)
    with pytest.raises(ValueError, match="policy applies to a config"):
        run_audit(subject=make_subject(cfg), policy=AuditPolicy())
