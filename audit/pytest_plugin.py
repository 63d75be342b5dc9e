"""A pytest plugin: privacy claims as marked tests, with one false-failure budget for the run.

Installed with the package (the ``pytest11`` entry point ``missingness_audit``), it adds a
marker, a fixture and an option::

    import pytest

    @pytest.mark.audit_claim(epsilon=1.0, query="sum", d=3, n=20,
                             missingness={"kind": "mcar-iid", "rate": 0.3})
    def test_noisy_sum_keeps_its_claim(audit_claim):
        audit_claim(noisy_sum)          # noisy_sum(data, rng), as for assert_private

The marker's keywords are :func:`audit.testing.assert_private`'s (the claim, a ``pair`` or
the search's ``query``/``d``/``n``/``bound``, ``missingness``, ``trials`` as the most calls
per side, ``attack``, ``seed``, ...) except ``confidence``: the run has one false-failure
budget, ``--audit-alpha`` (default 0.05), split evenly over the marked tests that were
collected (Bonferroni), so that a run of correct mechanisms fails any audited test with
probability at most that budget, however many there are. Each audit runs in the sequential
mode by default (``mode="sequential"``: a betting test that stops as soon as the claim is
refuted, anytime-valid; a claim that survives uses the whole ``trials``); a marker's
``mode="online"`` skips the pilot (scalar outputs). A refuted claim
fails its test with :func:`assert_private`'s message (ε_lower, the claim, the witness region
and its counts); every audited test records ``eps_lower``, ``eps_claim``, ``trials`` and
``confidence`` as user properties, which JUnit XML reports (``--junitxml``) carry. The
terminal summary states the budget, its split and how many claims were refuted.
"""

from __future__ import annotations

import math

import pytest

__all__ = ["MARKER", "DEFAULT_ALPHA", "pytest_addoption", "pytest_configure",
           "pytest_collection_finish", "pytest_terminal_summary", "audit_claim"]

#: the marker (and fixture) name
MARKER = "audit_claim"
#: the whole run's false-failure budget unless ``--audit-alpha`` says otherwise
DEFAULT_ALPHA = 0.05

_STATE = pytest.StashKey[dict]()


def _alpha(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"--audit-alpha must be in (0, 1), got {text!r}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("missingness-audit")
    group.addoption("--audit-alpha", type=_alpha, default=DEFAULT_ALPHA, metavar="ALPHA",
                    help="false-failure budget of the whole run, split evenly over the tests "
                         f"marked {MARKER} (default {DEFAULT_ALPHA})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**claim): audit a mechanism's (epsilon, delta) claim through the "
                   f"{MARKER} fixture (audit.testing.assert_private's keywords but confidence)")
    config.stash[_STATE] = {"alpha": config.getoption("audit_alpha"), "marked": 0,
                            "audited": 0, "refuted": []}


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash[_STATE]
    state["marked"] = sum(item.get_closest_marker(MARKER) is not None for item in session.items)


def _confidence(state: dict) -> float:
    """Each marked test's confidence: 1 − α / m over the m marked tests collected."""
    return 1.0 - state["alpha"] / max(state["marked"], 1)


@pytest.fixture
def audit_claim(request: pytest.FixtureRequest):
    """A function ``check(mechanism, **overrides)`` that audits ``mechanism`` against the
    test's ``@pytest.mark.audit_claim(...)`` claim at the run's share of the false-failure
    budget; raises AssertionError with the witness when the claim is refuted, returns the
    :class:`audit.pipeline.results.AuditResult` otherwise."""
    from audit.testing import assert_private

    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        pytest.fail(f"the {MARKER} fixture needs the test marked "
                    f"@pytest.mark.{MARKER}(epsilon=..., ...)", pytrace=False)
    if marker.args:
        pytest.fail(f"@pytest.mark.{MARKER} takes keywords only, got positional arguments "
                    f"{marker.args!r}", pytrace=False)
    state = request.config.stash[_STATE]

    def check(mechanism, **overrides):
        kwargs = {"mode": "sequential", **marker.kwargs, **overrides}
        if "confidence" in kwargs:
            pytest.fail(f"confidence is set by the run's false-failure budget (--audit-alpha="
                        f"{state['alpha']:g} over {state['marked']} marked tests), got "
                        f"confidence={kwargs['confidence']!r}", pytrace=False)
        confidence = _confidence(state)
        state["audited"] += 1
        props = request.node.user_properties
        props.append(("confidence", confidence))
        try:
            result = assert_private(mechanism, confidence=confidence, **kwargs)
        except AssertionError:
            state["refuted"].append(request.node.nodeid)
            raise
        props.extend([("eps_lower", result.eps_lower), ("eps_claim", result.eps_claim),
                      ("trials", result.trials)])
        return result

    return check


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if not state or not state["marked"]:
        return
    m, alpha = state["marked"], state["alpha"]
    terminalreporter.write_sep("-", "missingness-audit")
    terminalreporter.write_line(
        f"{m} test(s) marked {MARKER} share a false-failure budget of {alpha:g} (each audited "
        f"at confidence 1 - {alpha:g}/{m} = {_confidence(state):.6g}); {state['audited']} "
        f"audited, {len(state['refuted'])} claim(s) refuted")
    for nodeid in state["refuted"]:
        terminalreporter.write_line(f"refuted: {nodeid}")
