"""Plan files for ``python -m audit bound --plan PLAN.toml``: a TOML document of tables (p*,
shared or fresh masks) and their releases, read into an :class:`audit.theory.plans.Plan`
(which :func:`audit.theory.plans.account_plan` accounts; see ``docs/guide/cli.md``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from audit._validate import check_table
from audit.theory.plans import Plan, PlannedRelease, Table

__all__ = ["plan_from_dict", "load_plan"]

_PLAN_KEYS, _TABLE_KEYS = {"target_delta", "tables"}, {"name", "p_star", "masks", "releases"}
_RELEASE_KEYS = {"name", "noise", "epsilon", "delta", "count", "statistic"}


def plan_from_dict(data: dict) -> Plan:
    """A :class:`Plan` from a parsed TOML document (see ``docs/guide/cli.md``)."""
    check_table("plan", data, _PLAN_KEYS)
    tables = data.get("tables")
    if not isinstance(tables, list) or not tables:
        raise ValueError("a plan must hold at least one [[tables]] entry")
    out = []
    for i, t in enumerate(tables):
        check_table(f"tables[{i}]", t, _TABLE_KEYS)
        name = str(t.get("name", f"table {i + 1}"))
        rels = t.get("releases")
        if not isinstance(rels, list) or not rels:
            raise ValueError(f"table {name!r} must hold at least one [[tables.releases]] entry")
        releases = []
        for j, r in enumerate(rels):
            check_table(f"tables[{i}].releases[{j}]", r, _RELEASE_KEYS)
            if "noise" not in r or "epsilon" not in r:
                raise ValueError(f"tables[{i}].releases[{j}] needs noise and epsilon")
            releases.append(PlannedRelease(str(r.get("name", f"release {j + 1}")), r["noise"],
                                           r["epsilon"], r.get("delta", 0.0),
                                           r.get("count", 1), r.get("statistic", "sum")))
        if "p_star" not in t:
            raise ValueError(f"table {name!r} needs p_star")
        out.append(Table(name, t["p_star"], t.get("masks", "shared"), tuple(releases)))
    if "target_delta" not in data:
        raise ValueError("a plan needs target_delta (the final delta of everything it releases)")
    return Plan(tuple(out), data["target_delta"])


def load_plan(path: str | Path) -> Plan:
    """Read a plan file (TOML); a ``ValueError`` names what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"plan file not found: {p}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"plan file {p} is not valid TOML: {exc}") from None
    return plan_from_dict(data)
