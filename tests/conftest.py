"""Shared test fixtures: one factory for audit configs, and the cache of the isolated
environments the ``isolated`` tests build.

Every test that needs a config starts from the same small scenario — a Laplace release
(ε = 1) of the sum query over d = 10 features, ``mcar-fixed`` with 3 observed features and
p* = 0.5, whose worst-case pair has ε_pair = 0.15 exactly — and overrides what it needs with
dotted keys: ``audit_doc(**{"audit.trials": 50_000, "scenario.d": 3})`` (``None`` removes a
key), or whole tables: ``audit_doc(missingness={"kind": "mcar-iid", "rate": 0.3})``.
"""

from __future__ import annotations

import copy
import os
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "experiments" / "configs"

BASE_DOC = {
    "scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 10},
    "missingness": {"kind": "mcar-fixed", "observed": 3, "p_star": 0.5},
    "audit": {"trials": 20_000, "seed": 3},
}


def audit_doc(base: dict | None = None, *, scenario: dict | None = None,
              missingness: dict | None = None, audit: dict | None = None, **dotted) -> dict:
    """A config document: ``base`` (default :data:`BASE_DOC`), tables replaced (missingness)
    or updated (scenario, audit), then dotted ``table.key`` overrides (None removes)."""
    doc = copy.deepcopy(BASE_DOC if base is None else base)
    if scenario is not None:
        doc["scenario"].update(scenario)
    if missingness is not None:
        doc["missingness"] = dict(missingness)
    if audit is not None:
        doc.setdefault("audit", {}).update(audit)
    for key, value in dotted.items():
        table, name = key.split(".")
        if value is None:
            doc.setdefault(table, {}).pop(name, None)
        else:
            doc.setdefault(table, {})[name] = value
    return doc


def audit_config(*args, **kwargs):
    """:func:`audit_doc` validated into an :class:`audit.pipeline.config.AuditConfig`."""
    from audit.pipeline.config import config_from_dict

    return config_from_dict(audit_doc(*args, **kwargs))


def example_doc(name: str) -> dict:
    """A config document from ``experiments/configs/<name>.toml``."""
    return tomllib.loads((CONFIGS / f"{name}.toml").read_text())


def to_toml(doc: dict) -> str:
    """TOML text of a config document (tables of strings, numbers, booleans, lists and
    inline tables)."""
    lines = []
    for table, values in doc.items():
        if not isinstance(values, dict):
            lines.insert(0, f"{table} = {_toml_value(values)}")
            continue
        lines.append(f"\n[{table}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def _toml_value(v) -> str:
    if isinstance(v, dict):  # an inline table
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory):
    """The auditor's cache (isolated environments, batch checks) for the whole session: the
    one ``MISSINGNESS_AUDIT_CACHE`` names if it is set (environments reused across runs),
    else a folder of this session, so that no test writes into the user's own cache."""
    from audit.cache import CACHE_ENV, cache_root

    if os.environ.get(CACHE_ENV):
        yield cache_root()
        return
    path = tmp_path_factory.mktemp("audit-cache")
    os.environ[CACHE_ENV] = str(path)
    try:
        yield path
    finally:
        os.environ.pop(CACHE_ENV, None)


@pytest.fixture(scope="session")
def isolated_cache(session_cache):
    """The cache of isolated environments for the ``isolated`` tests (:func:`session_cache`:
    each environment built once per session, or reused from ``MISSINGNESS_AUDIT_CACHE``)."""
    return session_cache
