"""The small tables of a config (audit.pipeline.config_tables): each reader refuses a missing
key, an unknown one or a bad value with one line naming it."""

from __future__ import annotations

import pytest

from audit.pipeline import config as config_module
from audit.pipeline.config_tables import (
    MAX_CHUNK_CALLS,
    ImplementationConfig,
    _noise_key,
    _pair,
    _releases,
    check_chunk,
)


def test_the_config_module_re_exports_the_tables():
    for name in ("ImplementationConfig", "ReleasesConfig", "PairConfig", "check_chunk",
                 "MAX_CHUNK_CALLS"):
        assert getattr(config_module, name) is not None and name in config_module.__all__


@pytest.mark.parametrize("data,match", [
    ({"releases": {"masks": "shared"}}, "releases.count"),
    ({"releases": {"count": 3, "colour": 1}}, "unknown key releases.colour"),
    ({"releases": "3"}, r"\[releases\] must be a table"),
])
def test_releases_table_refusals(data, match):
    with pytest.raises(ValueError, match=match):
        _releases(data)


def test_releases_take_an_integral_float():
    assert _releases({"releases": {"count": 1e3}}).count == 1000


def test_pair_sets_the_shape_and_refuses_a_mismatch():
    scenario: dict = {}
    pair = _pair({"z": [[1.0, 0.0]], "z_prime": [[-1.0, 0.0]]}, scenario)
    assert scenario == {"n": 1, "d": 2} and pair.z == [[1.0, 0.0]]
    with pytest.raises(ValueError, match="same shape"):
        _pair({"z": [[1.0, 0.0]], "z_prime": [[1.0]]}, {})
    with pytest.raises(ValueError, match="scenario.d must match"):
        _pair({"z": [[1.0, 0.0]], "z_prime": [[-1.0, 0.0]]}, {"d": 3})


def test_pair_eps_pair_is_read_and_checked():
    pair = _pair({"z": [[1.0]], "z_prime": [[-1.0]], "eps_pair": 5}, {})
    assert pair.eps_pair == 5.0 and isinstance(pair.eps_pair, float)
    assert _pair({"z": [[1.0]], "z_prime": [[-1.0]]}, {}).eps_pair is None
    for bad in (-1.0, True, "5", float("nan")):
        with pytest.raises(ValueError, match=r"pair.eps_pair must be a number in \[0, inf\]"):
            _pair({"z": [[1.0]], "z_prime": [[-1.0]], "eps_pair": bad}, {})


def _doc(**extra) -> dict:
    doc = {"scenario": {"query": "sum", "d": 1, "n": 2, "bound": 1.0},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "pair": {"z": [[1.0], [0.0]], "z_prime": [[-1.0], [0.0]], "eps_pair": 1.0},
           "audit": {"trials": 300, "seed": 1}}
    doc.update(extra)
    return doc


def test_a_declared_pair_epsilon_needs_an_implementation():
    with pytest.raises(ValueError, match="pair.eps_pair declares the exact ε of an "
                                         "implementation's pair"):
        config_module.config_from_dict(_doc(scenario={"query": "sum", "d": 1, "n": 2,
                                                      "bound": 1.0, "noise": "laplace",
                                                      "epsilon": 1.0}), name="x")


def test_a_declared_pair_epsilon_is_the_audits_pair_ceiling():
    """A Laplace sum at ε = 1 on the pair ±1 has exact ε 1: declared, it is reported as
    eps_pair and kept in the result's config; declared too low (0.2) it is violated."""
    from audit.pipeline.runner import run_audit

    impl = {"target": "tests.adapters.example_mechanisms:noisy_sum", "epsilon": 1.0,
            "params": {"bound": 1.0, "scale": 2.0}}
    res = run_audit(config_module.config_from_dict(_doc(implementation=impl), name="ok"))
    assert res.eps_pair == 1.0 and res.to_dict()["config"]["pair"]["eps_pair"] == 1.0
    low = _doc(implementation=impl)
    low["pair"]["eps_pair"] = 0.2
    low["audit"]["trials"] = 3000
    res = run_audit(config_module.config_from_dict(low, name="low"))
    assert res.eps_lower > 0.2 and any("0.2" in v for v in res.ceiling_violations())


def test_implementation_and_chunk_refusals():
    with pytest.raises(ValueError, match="implementation.target must look like"):
        ImplementationConfig("nocolon", 1.0)
    assert check_chunk(MAX_CHUNK_CALLS, "chunk") == MAX_CHUNK_CALLS
    with pytest.raises(ValueError, match=r"chunk must be in \[1, 1000000\]"):
        check_chunk(MAX_CHUNK_CALLS + 1, "chunk")


def test_the_former_noise_key_is_read_and_both_keys_refused():
    sc = {"mechanism": "laplace"}
    assert _noise_key(sc) == "mechanism" and sc == {"noise": "laplace"}
    with pytest.raises(ValueError, match="the same setting"):
        _noise_key({"mechanism": "laplace", "noise": "laplace"})
