"""Config schema: valid files load, every bad input fails before any work with a clear message."""

from __future__ import annotations

import pytest

from audit.pipeline.config import AuditConfig, config_from_dict, load_config
from tests.conftest import audit_doc, to_toml

VALID = to_toml(audit_doc(**{"scenario.bound": 1.0, "audit.trials": 1000, "audit.seed": 7,
                             "audit.attack": "exact-lr"}))


def _doc(**tables):
    """The shared base config with 1000 trials, no seed, and these tables merged in."""
    dotted = {"audit.trials": 1000, "audit.seed": None}
    dotted.update({f"{table}.{k}": v for table, changes in tables.items()
                   for k, v in changes.items()})
    return audit_doc(**dotted)


def test_valid_file_loads(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text(VALID)
    cfg = load_config(path)
    assert isinstance(cfg, AuditConfig)
    assert cfg.name == "ok"
    assert cfg.scenario.epsilon == 1.0 and cfg.audit.trials == 1000 and cfg.audit.seed == 7
    assert cfg.missingness.params == {"observed": 3, "p_star": 0.5}
    assert cfg.audit.alpha == pytest.approx(0.05)
    again = config_from_dict(cfg.to_dict())
    assert again.to_dict() == cfg.to_dict()


def test_overrides():
    cfg = config_from_dict(_doc()).with_overrides(trials=5, seed=None)
    assert cfg.audit.trials == 5 and cfg.audit.seed == 0


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        (_doc(scenario={"colour": 1}), "scenario.colour"),
        (_doc(audit={"trails": 10}), "audit.trails"),
        ({**_doc(), "extra": {}}, "config.extra"),
        (_doc(scenario={"mechanism": "exponential"}), "scenario.mechanism"),
        (_doc(scenario={"epsilon": -1.0}), "scenario.epsilon"),
        (_doc(scenario={"epsilon": 0.0}), "scenario.epsilon"),
        (_doc(scenario={"delta": 0.1}), "scenario.delta"),
        (_doc(scenario={"mechanism": "gaussian"}), "scenario.delta"),
        (_doc(scenario={"mechanism": "gaussian", "delta": 1.5}), "scenario.delta"),
        (_doc(scenario={"d": 0}), "scenario.d"),
        (_doc(scenario={"bound": 0.0}), "scenario.bound"),
        (_doc(scenario={"calibration": "magic"}), "scenario.calibration"),
        (_doc(audit={"trials": 0}), "audit.trials"),
        (_doc(audit={"trials": 1.5}), "audit.trials"),
        (_doc(audit={"confidence": 1.0}), "audit.confidence"),
        (_doc(audit={"delta": 1.0}), "audit.delta"),
        (_doc(audit={"seed": -1}), "audit.seed"),
        (_doc(audit={"selection": "best"}), "audit.selection"),
        (_doc(audit={"attack": "oracle"}), "attack"),
        (_doc(missingness={"kind": "mcar-magic"}), "mcar-magic"),
        (_doc(missingness={"p_star": 1.5}), "p_star"),
        (_doc(missingness={"rate": 0.3}), "rate"),
        (_doc(scenario={"query": "median"}), "median"),
    ],
)
def test_bad_config_names_the_problem(doc, needle):
    with pytest.raises(ValueError, match=needle.replace(".", r"\.")):
        config_from_dict(doc)


def test_missing_tables_and_keys():
    with pytest.raises(ValueError, match=r"\[missingness\]"):
        config_from_dict({"scenario": _doc()["scenario"]})
    with pytest.raises(ValueError, match="scenario.epsilon"):
        config_from_dict(_doc() | {"scenario": {"mechanism": "laplace"}})
    with pytest.raises(ValueError, match="missingness.kind"):
        config_from_dict(_doc() | {"missingness": {"rate": 0.3}})


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[scenario\nmechanism = 1")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_config(bad)
