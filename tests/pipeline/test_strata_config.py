"""The [strata] table (audit.pipeline.strata_config): one ValueError per bad key or value."""

from __future__ import annotations

import math

import pytest

from audit.enums import StrataSides
from audit.pipeline.config import config_from_dict

BASE = {"implementation": {"target": "diffprivlib:mean", "epsilon": 1.0,
                           "params": {"bounds": [-1.0, 1.0]}},
        "scenario": {"query": "bounded-mean", "d": 1, "n": 20, "bound": 1.0},
        "missingness": {"kind": "mcar-iid", "rate": 0.3},
        "strata": {"rates": [0.0, 0.3, 0.5]}}


def _doc(strata=None, **tables):
    doc = {k: dict(v) for k, v in BASE.items()}
    if strata is not None:
        doc["strata"] = strata
    doc.update(tables)
    return doc


def test_a_valid_table_and_its_defaults_round_trip():
    cfg = config_from_dict(_doc({"rates": [0.3, 0.0], "floor": 5.0, "sides": "Q"}))
    assert cfg.strata.rates == (0.3, 0.0) and cfg.strata.floor == 5
    assert cfg.strata.sides is StrataSides.Q
    out = cfg.to_dict()["strata"]
    assert out == {"by": "missing-count", "rates": [0.3, 0.0], "floor": 5, "sides": "q",
                   "scores": "per-rate"}
    assert config_from_dict({**_doc(), "strata": out}).strata == cfg.strata
    default = config_from_dict(_doc()).strata
    assert default.sides is StrataSides.AUTO and default.own_scores
    assert not config_from_dict(_doc({"rates": [0.3], "scores": "pooled"})).strata.own_scores


@pytest.mark.parametrize("strata, needle", [
    ({"rates": [0.3], "bins": 3}, "unknown key strata.bins"),
    ({"floor": 3}, "strata.rates"),
    ({"rates": []}, "strata.rates"),
    ({"rates": [0.3, 1.5]}, "strata.rates"),
    ({"rates": [0.3, 0.3]}, "strata.rates"),
    ({"rates": 0.3}, "strata.rates"),
    ({"rates": [0.3], "by": "observed-count"}, "strata.by"),
    ({"rates": [0.3], "floor": 0}, "strata.floor"),
    ({"rates": [0.3], "floor": 2.5}, "strata.floor"),
    ({"rates": [0.3], "sides": "left"}, "strata.sides"),
    ({"rates": [0.3], "scores": "per rate"}, "strata.scores"),
    ({"rates": [0.0, 0.5]}, "missingness.rate=0.3"),
    ("missing-count", r"\[strata\] must be a table"),
])
def test_each_bad_key_or_value_is_named(strata, needle):
    with pytest.raises(ValueError, match=needle):
        config_from_dict(_doc(strata))


@pytest.mark.parametrize("change, needle", [
    ({"missingness": {"kind": "mcar-row", "p_star": 0.7}}, "missingness.kind='mcar-iid'"),
    ({"scenario": {"query": "bounded-mean", "d": 3, "n": 70, "bound": 1.0}},
     "at most 200 entries"),
    ({"releases": {"count": 2, "masks": "fresh"}}, r"releases.masks='shared'"),
])
def test_settings_a_stratified_audit_cannot_run(change, needle):
    with pytest.raises(ValueError, match=needle):
        config_from_dict(_doc(**change))


def test_strata_needs_an_implementation():
    doc = _doc()
    doc.pop("implementation")
    doc["scenario"] = {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1,
                       "n": 20}
    # a config without [implementation] may yet be handed a black box: the factory refuses
    # it for the model, before any work (the stratified design's answer)
    from audit.pipeline.factory import make_subject

    cfg = config_from_dict(doc)
    with pytest.raises(ValueError, match=r"needs an \[implementation\]"):
        make_subject(cfg)


@pytest.mark.parametrize("looks, mode, needle", [
    (4, "fixed", "strata.looks sets the looks of a sequential run"),
    (1, "sequential", r"strata.looks must be an integer in \[2, 16\], got strata.looks=1"),
    (17, "sequential", "got strata.looks=17"),
    (2.5, "sequential", "got strata.looks=2.5"),
    (True, "sequential", "got strata.looks=True"),
])
def test_looks_are_refused_outside_their_range_or_in_fixed_mode(looks, mode, needle):
    doc = _doc(strata={"rates": [0.0, 0.3], "looks": looks})
    doc["audit"] = {"mode": mode}
    with pytest.raises(ValueError, match=needle):
        config_from_dict(doc)


def test_looks_default_to_four_in_sequential_mode_and_one_in_fixed_mode():
    from audit.pipeline.strata_config import DEFAULT_LOOKS, StrataConfig

    assert StrataConfig((0.3,)).n_looks(True) == DEFAULT_LOOKS == 4
    assert StrataConfig((0.3,)).n_looks(False) == 1
    assert StrataConfig((0.3,), looks=6.0).n_looks(True) == 6
    assert StrataConfig((0.3,), looks=6).to_dict()["looks"] == 6
    assert "looks" not in StrataConfig((0.3,)).to_dict()


@pytest.mark.parametrize("audit, needle", [
    ({"selection": "grid"}, "audit.selection must be 'pilot' or 'auto'"),
])
def test_one_region_only_refused_before_any_call(audit, needle, monkeypatch):
    from audit.pipeline import implementation as impl_module
    from audit.pipeline.factory import make_subject

    def no_plan(*args, **kwargs):  # the refusal comes before the plan's work
        raise AssertionError("planned")

    monkeypatch.setattr(impl_module, "plan_implementation_audit", no_plan)
    doc = _doc(pair={"z": [[math.nan]] + [[0.0]] * 19, "z_prime": [[1.0]] + [[0.0]] * 19})
    doc["audit"] = audit
    with pytest.raises(ValueError, match=needle):
        make_subject(config_from_dict(doc))
