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


def test_result_config_records_every_resolved_default():
    # mcar-iid without `rate` uses 0.3: the recorded config says so, under the config key
    doc = _doc(missingness={"kind": "mcar-iid"})
    doc["missingness"] = {"kind": "mcar-iid"}
    cfg = config_from_dict(doc)
    assert cfg.to_dict()["missingness"] == {"kind": "mcar-iid", "rate": 0.3}
    fixed = config_from_dict(_doc()).to_dict()["missingness"]
    assert fixed == {"kind": "mcar-fixed", "observed": 3, "p_star": 0.5}  # not p_star_value
    lin = _doc(scenario={"query": "linear", "d": 2, "query_params": {"weights": [1.0, -0.5]}},
               missingness={"observed": 1})
    assert config_from_dict(lin).to_dict()["scenario"]["query_params"] == {
        "weights": [1.0, -0.5], "norm": 1}


@pytest.mark.parametrize(("doc", "needle"), [
    (_doc(missingness={"rat": 0.3}), "[missingness] unknown parameter 'rat'"),
    (_doc(missingness={"kind": "mcar-fixed", "p_star_value": 0.5}),
     "allowed: observed, p_star"),
    (_doc(scenario={"query": "median"}), "[scenario] query must be one of"),
    (_doc(missingness={"p_star": 0.0}), "never observed under 'mcar-fixed'"),
    (_doc(missingness={"kind": "mcar-iid", "rate": 1.0, "observed": None, "p_star": None}),
     "(p* = 0, rho = 0)"),
])
def test_errors_name_the_table_and_the_documented_key(doc, needle):
    with pytest.raises(ValueError) as info:
        config_from_dict(doc)
    assert needle in str(info.value)


def test_a_directory_or_non_utf8_config_is_named(tmp_path):
    with pytest.raises(ValueError, match="got a directory"):
        load_config(tmp_path)
    bad = tmp_path / "latin1.toml"
    bad.write_bytes("name = 'caf\xe9'\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.toml is not UTF-8"):
        load_config(bad)


def test_backend_is_cpu_cuda_dask_or_a_registered_joblib_backend():
    from audit.enums import Backend
    from audit.simulation.processes import RegisteredBackend

    cfg = config_from_dict(_doc())
    assert cfg.audit.backend == "cpu" and cfg.engine_backend is Backend.LOKY
    cuda = config_from_dict(_doc(audit={"backend": "CUDA"}))
    assert cuda.audit.backend == "cuda" and cuda.engine_backend is Backend.CUDA
    assert cfg.with_overrides(backend="cuda").engine_backend is Backend.CUDA
    assert config_from_dict(cuda.to_dict()).to_dict() == cuda.to_dict()
    assert cfg.with_overrides(backend="dask").engine_backend is Backend.DASK
    # joblib's own backends by name: loky and threading are the engine's members
    assert cfg.with_overrides(backend="loky").engine_backend is Backend.LOKY
    assert cfg.with_overrides(backend="threading").engine_backend is Backend.THREADING
    seq = config_from_dict(_doc(audit={"backend": "sequential"}))
    assert seq.audit.backend == "sequential"
    assert seq.engine_backend == RegisteredBackend("sequential")
    with pytest.raises(ValueError, match=r"^audit.backend must be one of cpu, cuda, dask or a "
                                         r"joblib backend registered by name \(.*loky, "
                                         r"multiprocessing, sequential, threading\), got "
                                         r"audit.backend='spark'$"):
        config_from_dict(_doc(audit={"backend": "spark"}))
    with pytest.raises(ValueError, match=r"got audit.backend=3$"):
        config_from_dict(_doc(audit={"backend": 3}))


def test_an_implementation_audit_refuses_the_cuda_backend():
    import dataclasses

    from audit.pipeline.config import ImplementationConfig
    from audit.pipeline.factory import make_subject

    cfg = config_from_dict(_doc(audit={"backend": "cuda"}))  # the model: fine
    impl = {"target": "tests.adapters.example_mechanisms:noisy_sum", "epsilon": 1.0,
            "params": {"bound": 1.0, "scale": 2.0}}
    with pytest.raises(ValueError, match="applies to white-box audits"):
        config_from_dict(_doc(audit={"backend": "cuda"}) | {"implementation": impl})
    # the parts' answer, wherever the config was put together
    with pytest.raises(ValueError, match="applies to white-box audits"):
        make_subject(dataclasses.replace(cfg, implementation=ImplementationConfig(**impl)))


def _scenario(**keys) -> dict:
    doc = _doc()
    doc["scenario"] = {k: v for k, v in doc["scenario"].items() if k != "mechanism"} | keys
    return doc


def test_the_noise_key_and_its_former_name():
    new = config_from_dict(_scenario(noise="gaussian", delta=1e-5))
    old = config_from_dict(_scenario(mechanism="gaussian", delta=1e-5))
    assert new.scenario.noise is old.scenario.noise is old.scenario.mechanism
    assert new.to_dict()["scenario"]["noise"] == "gaussian"
    assert "mechanism" not in new.to_dict()["scenario"]
    # an error names the key the user wrote
    with pytest.raises(ValueError, match="scenario.mechanism"):
        config_from_dict(_scenario(mechanism="exponential"))
    with pytest.raises(ValueError, match="scenario.noise"):
        config_from_dict(_scenario(noise="exponential"))
    with pytest.raises(ValueError, match="are the same setting: give one"):
        config_from_dict(_scenario(noise="laplace", mechanism="laplace"))
