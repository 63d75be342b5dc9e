"""JSON Schemas of an audit's config document and of its result document.

:data:`SCHEMA_VERSION` is written into every result (``schema_version``); a result without it
was written before the schema existed (version 0) and has the same keys. The schemas
(draft 2020-12) describe what :meth:`audit.pipeline.config.AuditConfig.to_dict` and
:meth:`audit.pipeline.results.AuditResult.to_dict` write and what a TOML config may hold;
the tests validate every committed result and config against them with ``jsonschema``.
Non-finite floats are the strings ``"inf"``, ``"-inf"`` and ``"nan"`` in results
(:func:`audit.pipeline.results.to_jsonable`).

Examples
--------
>>> from audit.pipeline.schema import SCHEMA_VERSION, result_schema
>>> SCHEMA_VERSION
1
>>> sorted(result_schema()["required"])[:3]
['attack', 'ceilings', 'confidence']
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "config_schema", "result_schema"]

#: The version of the result document's keys (1: the first with a schema).
SCHEMA_VERSION = 1

_NUMBER = {"oneOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]}
_MAYBE_NUMBER = {"oneOf": [_NUMBER, {"type": "null"}]}
_COUNT = {"type": "integer", "minimum": 0}
_POSITIVE = {"type": "integer", "minimum": 1}


def _table(properties: dict, *, required: tuple = (), extra: bool = False) -> dict:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": extra}


def config_schema() -> dict:
    """The schema of a config document (a TOML file read as a table, or a result's
    ``config``): the built-in tables with their keys and types; any other table is a
    registered design's (``audit.designs``; the loader checks the registration)."""
    rows = {"type": "array", "items": {"type": "array", "items": _NUMBER}}
    scenario = _table({
        "noise": {"enum": ["laplace", "gaussian"]},
        "mechanism": {"enum": ["laplace", "gaussian"]},  # the former name of noise
        "epsilon": _NUMBER,
        "delta": _MAYBE_NUMBER, "calibration": {"enum": ["classical", "analytic"]},
        "query": {"type": "string"}, "d": _POSITIVE, "n": _POSITIVE, "bound": _NUMBER,
        "query_params": {"type": "object"},
        "domain": {"type": "array", "items": _NUMBER, "minItems": 2, "maxItems": 2},
        "na_value": _NUMBER, "na_category": {"type": "boolean"},
        "count": {"enum": ["private", "public"]}})
    audit = _table({
        "trials": _POSITIVE, "pilot_trials": {"type": ["integer", "null"], "minimum": 100},
        "seed": _COUNT, "confidence": _NUMBER, "attack": {"type": ["string", "null"]},
        "delta": _MAYBE_NUMBER, "bins": {"type": "integer", "minimum": 10},
        "selection": {"enum": ["auto", "model", "pilot", "grid"]},
        "jobs": {"type": "integer"}, "checkpoint": {"type": ["string", "null"]},
        "mode": {"enum": ["fixed", "sequential"]}, "backend": {"type": "string"},
        "stop": {"enum": ["refuted", "budget"]}})
    implementation = _table({
        "target": {"type": "string"}, "epsilon": _NUMBER, "delta": _NUMBER,
        "params": {"type": "object"}, "batch": {"type": "boolean"}, "chunk": _POSITIVE},
        required=("target", "epsilon"))
    tables = {
        "name": {"type": "string"}, "scenario": scenario,
        "missingness": {"type": "object", "properties": {"kind": {"type": "string"}},
                        "required": ["kind"]},
        "audit": audit, "implementation": implementation,
        "pair": _table({"z": rows, "z_prime": rows, "eps_pair": _NUMBER},
                       required=("z", "z_prime")),
        "releases": _table({"count": _POSITIVE,
                             "masks": {"enum": ["shared", "fresh", "persistent"]},
                             "persistence": {"type": "number", "minimum": 0, "maximum": 1}},
                           required=("count",)),
        "strata": _table({"by": {"type": "string"}, "rates": {"type": "array",
                                                              "items": {"type": "number"}},
                          "floor": _POSITIVE, "sides": {"type": "string"},
                          "scores": {"enum": ["per-rate", "pooled"]},
                          "looks": {"type": "integer", "minimum": 2},
                          "simultaneous": {"type": "boolean"}},
                         required=("rates",)),
        "search": _table({"families": {"type": "array", "items": {"type": "string"}},
                          "cap": _POSITIVE, "calls": {"type": "integer", "minimum": 100},
                          "pairs": {"type": "array"}, "table": {"type": "string"}}),
        "claim": _table({"curve": {"enum": ["gaussian", "subsampled-gaussian", "points"]},
                         "p_star": _NUMBER, "points": rows}, required=("curve",)),
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "missingness-audit config", "type": "object", "properties": tables,
            "required": ["scenario", "missingness"],
            "additionalProperties": {"type": "object"}}


def result_schema(*, row: bool = False) -> dict:
    """The schema of one audit's result document (``AuditResult.to_dict``, the JSON of
    ``python -m audit run --json``); ``row``: an experiment's row, a result document with the
    experiment's own columns beside its keys."""
    ceiling = _table({"kind": {"type": "string"}, "value": _MAYBE_NUMBER,
                      "label": {"type": "string"}, "error": _NUMBER},
                     required=("kind", "value"))
    props = {
        "schema_version": {"type": "integer", "minimum": 1},
        "name": {"type": "string"}, "eps_lower": _NUMBER, "eps_point": _MAYBE_NUMBER,
        "eps_pair": _MAYBE_NUMBER, "eps_pair_error": _MAYBE_NUMBER,
        "eps_theory": _MAYBE_NUMBER, "theory": {"type": "string"},
        "eps_fdp": _MAYBE_NUMBER, "eps_base": _MAYBE_NUMBER,
        "eps_mar_formula": _MAYBE_NUMBER, "eps_claim": _MAYBE_NUMBER, "delta": _NUMBER,
        "p_star": _NUMBER, "rho": _NUMBER, "missing_class": {"type": "string"},
        "noise_scale": _MAYBE_NUMBER, "attack": {"type": "string"},
        "attack_note": {"type": "string"}, "selection": {"type": "string"},
        "trials": _COUNT, "pilot_trials": _COUNT, "seconds": _NUMBER, "confidence": _NUMBER,
        "seed": _COUNT,
        "witness": {"type": "object", "properties": {"kind": {"type": "string"},
                                                     "eps_lower": _NUMBER}},
        "config": config_schema(), "timings": {"type": "object"},
        "claim": {"type": ["object", "null"]},
        "refutations": {"type": "array", "items": {"type": "string"}},
        "versions": {"type": "object", "additionalProperties": {"type": "string"}},
        "ceilings": {"type": "array", "items": ceiling},
        "comparisons": {"type": "object"},
        "violations": {"type": "array", "items": {"type": "string"}},
        "strata": {"type": "object"}, "search": {"type": "object"},
        "eps_family": _MAYBE_NUMBER, "curve_claim": {"type": "object"},
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "missingness-audit result", "type": "object", "properties": props,
            "required": ["name", "eps_lower", "witness", "config", "trials", "confidence",
                         "seed", "attack", "ceilings", "violations"],
            "additionalProperties": row}
