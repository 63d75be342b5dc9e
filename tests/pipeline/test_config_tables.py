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
