"""Every documented limit of a config key, walked from the JSON Schema and the config's own
constants: the nearest value inside is accepted, the nearest outside refused with a message
naming the key the user wrote (issue: never silently drop an option, every range enforced)."""

from __future__ import annotations

import copy

import pytest

from audit.pipeline import config as cfgmod
from audit.pipeline.config import config_from_dict
from audit.pipeline.schema import config_schema

BASE = {"scenario": {"noise": "laplace", "epsilon": 1.0, "query": "sum", "d": 2, "n": 10},
        "missingness": {"kind": "mcar-iid", "rate": 0.3},
        "audit": {"trials": 1000, "seed": 1}}
IMPL = {**copy.deepcopy(BASE), "implementation": {"target": "diffprivlib:sum", "epsilon": 1.0,
                                                  "params": {"bounds": [-1.0, 1.0]}}}


def _with(doc: dict, table: str, key: str, value) -> dict:
    out = copy.deepcopy(doc)
    out.setdefault(table, {})[key] = value
    return out


def _schema_limits():
    """(table, key, minimum) of every integer key the schema gives a minimum, and (table, key,
    allowed) of every enumerated one, for the tables a model or implementation config holds."""
    props = config_schema()["properties"]
    for table in ("scenario", "audit", "implementation", "releases"):
        for key, spec in props[table]["properties"].items():
            if "minimum" in spec:
                yield table, key, ("minimum", spec["minimum"])
            elif "enum" in spec:
                yield table, key, ("enum", spec["enum"])


def _base_for(table: str, key: str | None = None) -> dict:
    doc = IMPL if table == "implementation" else BASE
    if table == "releases":
        rel = {"count": 2}
        if key == "persistence":  # a key of persistent masks only
            rel.update(masks="persistent", persistence=0.5)
        doc = {**copy.deepcopy(BASE), "releases": rel}
    return doc


@pytest.mark.parametrize("table,key,limit", list(_schema_limits()),
                         ids=lambda v: v if isinstance(v, str) else str(v[0]))
def test_every_schema_limit_is_enforced_by_its_key(table, key, limit):
    kind, value = limit
    doc = _base_for(table, key)
    if key == "mechanism":  # the former name of noise: one of the two may be given
        doc = copy.deepcopy(doc)
        doc["scenario"].pop("noise")
    if kind == "minimum":
        inside, outside = value, value - 1
        if key == "pilot_trials":
            inside = max(inside, 2 * 1000)  # and at least the pilot the run needs
        config_from_dict(_with(doc, table, key, inside), for_audit=False)
    else:
        config_from_dict(_with(doc, table, key, value[0]), for_audit=False)
        outside = "not-a-" + key
    with pytest.raises(ValueError) as info:
        config_from_dict(_with(doc, table, key, outside), for_audit=False)
    assert f"{table}.{key}" in str(info.value), str(info.value)


@pytest.mark.parametrize("table,key,limit", [
    ("audit", "trials", cfgmod.MAX_TRIALS),
    ("audit", "bins", cfgmod.MAX_BINS),
    ("implementation", "chunk", cfgmod.MAX_CHUNK_CALLS),
])
def test_every_upper_limit_is_enforced_by_its_key(table, key, limit):
    doc = _base_for(table)
    config_from_dict(_with(doc, table, key, limit), for_audit=False)
    with pytest.raises(ValueError, match=rf"{table}\.{key}"):
        config_from_dict(_with(doc, table, key, limit + 1), for_audit=False)


def test_the_cell_limit_names_both_keys():
    n = cfgmod.MAX_CELLS // 2
    config_from_dict(_with(BASE, "scenario", "n", n), for_audit=False)
    with pytest.raises(ValueError, match=r"scenario\.n \* scenario\.d"):
        config_from_dict(_with(BASE, "scenario", "n", n + 1), for_audit=False)


@pytest.mark.parametrize("key,inside,outside", [
    ("epsilon", 1e-12, 0.0), ("bound", 1e-12, 0.0), ("confidence", 0.5, 1.0)])
def test_real_valued_limits(key, inside, outside):
    table = "audit" if key == "confidence" else "scenario"
    config_from_dict(_with(BASE, table, key, inside), for_audit=False)
    with pytest.raises(ValueError, match=rf"{table}\.{key}"):
        config_from_dict(_with(BASE, table, key, outside), for_audit=False)


def test_persistence_is_at_most_one():
    doc = _base_for("releases", "persistence")
    config_from_dict(_with(doc, "releases", "persistence", 1.0), for_audit=False)
    with pytest.raises(ValueError, match=r"releases\.persistence must be a number in \[0, 1\]"):
        config_from_dict(_with(doc, "releases", "persistence", 1.5), for_audit=False)
