"""The JSON Schemas of configs and results: every committed result and config validates, a
fresh result carries ``schema_version``, and the schemas reject what they should."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest

from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from audit.pipeline.schema import SCHEMA_VERSION, config_schema, result_schema

ROOT = Path(__file__).resolve().parents[2]
DOC = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 3},
       "missingness": {"kind": "mcar-iid", "rate": 0.2},
       "audit": {"trials": 20_000, "seed": 1, "bins": 100}}


def _validator(schema: dict):
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _audit_rows(doc):
    """Every full audit result inside a results document."""
    if isinstance(doc, dict):
        if "witness" in doc and "config" in doc and "versions" in doc:
            yield doc
        for v in doc.values():
            yield from _audit_rows(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _audit_rows(v)


def test_a_fresh_result_validates_and_carries_its_schema_version():
    res = run_audit(config_from_dict(DOC)).to_dict()
    assert res["schema_version"] == SCHEMA_VERSION
    _validator(result_schema()).validate(json.loads(json.dumps(res)))
    _validator(config_schema()).validate(res["config"])


@pytest.mark.parametrize("path", sorted((ROOT / "results").rglob("*.json")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_audit_result_validates(path):
    rows = list(_audit_rows(json.loads(path.read_text())))
    validator = _validator(result_schema(row=True))
    for row in rows:  # results written before schema_version are version 0, same keys
        errors = sorted(validator.iter_errors(row), key=lambda e: e.path)
        assert not errors, f"{path.name}: {row['name']}: {errors[0].message}"


@pytest.mark.parametrize("path", sorted((ROOT / "experiments" / "configs").glob("*.toml")),
                         ids=lambda p: p.name)
def test_every_shipped_config_validates(path):
    doc = tomllib.loads(path.read_text())
    _validator(config_schema()).validate(doc)
    # and the loader agrees (a config with the accountant's keys is a `bound --config` setting)
    accountant = {"domain", "na_value", "na_category"} & set(doc["scenario"])
    config_from_dict(doc, for_audit=not accountant)


@pytest.mark.parametrize(("doc", "where"), [
    ({**DOC, "audit": {"trials": 0}}, "trials"),
    ({**DOC, "audit": {"selection": "best"}}, "selection"),
    ({k: v for k, v in DOC.items() if k != "missingness"}, "missingness"),
    ({**DOC, "releases": {"masks": "shared"}}, "count"),
    ({**DOC, "scenario": {**DOC["scenario"], "noise_kind": "laplace"}}, "noise_kind"),
])
def test_the_config_schema_rejects_what_the_loader_rejects(doc, where):
    errors = list(_validator(config_schema()).iter_errors(doc))
    assert errors and any(where in (e.message + str(list(e.path))) for e in errors), errors
    with pytest.raises(ValueError):
        config_from_dict(doc)


def test_the_result_schema_rejects_an_unknown_key_and_a_missing_one():
    res = json.loads(json.dumps(run_audit(config_from_dict(DOC)).to_dict()))
    v = _validator(result_schema())
    assert list(v.iter_errors({**res, "eps_lowr": 0.1}))
    assert list(v.iter_errors({k: x for k, x in res.items() if k != "witness"}))


def test_a_result_is_frozen():
    import dataclasses

    res = run_audit(config_from_dict(DOC))
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.eps_lower = 9.0  # type: ignore[misc]
