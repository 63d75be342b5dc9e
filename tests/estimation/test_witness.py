"""The Bound protocol and its registry: every witness kind round-trips through JSON, and the
result, the ceilings and the readers use the protocol, not isinstance."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from audit.enums import Direction
from audit.estimation import regions, sequential, strata  # noqa: F401 - registers the kinds
from audit.estimation.regions import RegionBound
from audit.estimation.sequential import SequentialBound
from audit.estimation.witness import Bound, bound_kind, bound_kinds, register_bound

ROOT = Path(__file__).resolve().parents[2]


def _region() -> RegionBound:
    return RegionBound(0.5, Direction.Z_VS_ZPRIME, 1.0, 900, 1000, 100, 1000, 0.87, 0.12, 0.05,
                       0.0, "pilot", 1)


def _sequential() -> SequentialBound:
    return SequentialBound(0.75, Direction.ZPRIME_VS_Z, -0.5, "pilot", 0.05, 0.0, 4000, True,
                           (0.5, 1.0), (1200, -1), (3.1, 0.4))


def test_the_built_in_kinds_are_registered():
    assert set(bound_kinds()) >= {"region", "sequential", "strata"}
    assert bound_kind("region") is RegionBound and bound_kind("sequential") is SequentialBound
    with pytest.raises(ValueError, match="witness kind must be one of"):
        bound_kind("bayesian")


@pytest.mark.parametrize("make", [_region, _sequential])
def test_each_kind_round_trips_and_answers_the_protocol(make):
    from audit.pipeline.results import bound_from_witness, to_jsonable

    bound = make()
    assert isinstance(bound, Bound)
    doc = to_jsonable(bound.to_dict())
    assert doc["kind"] == bound.kind
    assert bound_from_witness(doc) == bound
    assert bound.result_keys() == {}


def test_only_a_sequential_test_refutes_by_itself():
    assert _sequential().refutes(0.5) and not _sequential().refutes(1.0)
    assert not _sequential().refutes(0.7)  # off its grid: not tested, not refuted
    assert not _region().refutes(0.1)


def test_a_witness_without_kind_is_read_by_its_fields():
    from audit.pipeline.results import bound_from_witness

    doc = _sequential().to_dict()
    doc.pop("kind")
    assert bound_from_witness(doc) == _sequential()
    with pytest.raises(ValueError, match="missing"):
        bound_from_witness({"eps_lower": 0.1})


def test_a_new_kind_is_one_class_and_one_decorator():
    class Bad:
        kind = "region"

    with pytest.raises(ValueError, match="lacks"):
        register_bound(Bad)

    class Clash(RegionBound):
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_bound(Clash)


def test_no_pipeline_module_dispatches_on_a_bound_class():
    offenders = []
    names = {"RegionBound", "SequentialBound", "StratifiedBound", "EpsLowerResult"}
    for path in sorted((ROOT / "audit" / "pipeline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                used = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if used & names:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
