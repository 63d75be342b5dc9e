"""The pytest plugin, run as a user's pytest run: the marker, the budget split, the witness in a
refuted test's message, the summary and JUnit XML."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from audit import pytest_plugin

USER_TESTS = '''
import numpy as np
import pytest

def noisy_sum(data, rng):           # a Laplace sum claimed at epsilon = 1: keeps its claim
    x = np.clip(np.nan_to_num(data), -1, 1)
    return x.sum() + rng.laplace(scale=2.0)

def leaky_sum(data, rng):           # the same at a tenth of the noise: true epsilon = 10
    x = np.clip(np.nan_to_num(data), -1, 1)
    return x.sum() + rng.laplace(scale=0.2)

PAIR = ([[1.0]] + [[0.0]] * 4, [[-1.0]] + [[0.0]] * 4)

@pytest.mark.audit_claim(epsilon=1.0, pair=PAIR, trials=4000)
def test_keeps(audit_claim):
    audit_claim(noisy_sum)

@pytest.mark.audit_claim(epsilon=1.0, pair=PAIR, trials=4000)
def test_leaks(audit_claim):
    audit_claim(leaky_sum)

@pytest.mark.audit_claim(epsilon=1.0, pair=PAIR, confidence=0.9)
def test_sets_its_own_confidence(audit_claim):
    audit_claim(noisy_sum)

def test_unmarked():
    assert True
'''


def _pytest(tmp_path, *args):
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "audit.pytest_plugin",
                           "-p", "no:cacheprovider", "-q", "test_user.py", *args],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("user")
    out = _pytest(tmp, "--audit-alpha", "0.03", "--junitxml", "junit.xml")
    return out, ET.parse(tmp / "junit.xml").getroot()


def _case(root, name):
    (case,) = [c for c in root.iter("testcase") if c.get("name") == name]
    return case, {p.get("name"): p.get("value") for p in case.iter("property")}


def test_the_budget_is_split_over_the_marked_tests_and_stated(run):
    out, root = run
    assert out.returncode == 1, out.stdout + out.stderr
    summary = out.stdout
    assert ("3 test(s) marked audit_claim share a false-failure budget of 0.03 (each audited at "
            "confidence 1 - 0.03/3 = 0.99)") in summary
    assert "2 audited, 1 claim(s) refuted" in summary
    assert "refuted: test_user.py::test_leaks" in summary
    _, props = _case(root, "test_keeps")
    assert float(props["confidence"]) == pytest.approx(0.99)
    assert float(props["eps_lower"]) <= 1.0 and float(props["eps_claim"]) == 1.0


def test_a_refuted_claim_fails_with_its_witness(run):
    out, root = run
    case, props = _case(root, "test_leaks")
    failure = case.find("failure")
    text = failure.get("message") + (failure.text or "")
    assert "is not (1, 0)-DP" in text and "eps_lower" in text.replace("ε_lower", "eps_lower")
    assert float(props["confidence"]) == pytest.approx(0.99)


def test_confidence_is_the_runs_not_the_tests(run):
    out, root = run
    case, _ = _case(root, "test_sets_its_own_confidence")
    assert case.find("failure") is not None
    assert "confidence is set by the run's false-failure budget" in out.stdout


def test_a_bad_budget_is_one_usage_error(tmp_path):
    out = _pytest(tmp_path, "--audit-alpha", "1.5")
    assert out.returncode == 4 and "--audit-alpha must be in (0, 1), got '1.5'" in out.stderr


def test_the_plugin_is_registered_for_pytest():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="pytest11") if e.name == "missingness_audit"]
    assert ep.value == pytest_plugin.__name__
