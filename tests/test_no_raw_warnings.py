"""Issue 31, "No raw warning ever reaches the user": extreme but well-formed inputs to
``python -m audit run`` and ``bound``, each through the real command. Each exits 0 or 1 (a
value that can be computed is computed) or 2 with one ``error:`` line naming the key the
user wrote; no traceback and no raw Python warning (``...Warning:`` with a file path) ever
reaches stderr. A warning raised inside a user's mechanism or a library target during an
audit is printed once, as ``warning: <target>: <message>``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, to_toml

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _audit(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "audit", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env or ENV)


def _check(out: subprocess.CompletedProcess, statuses: tuple[int, ...],
           key: str | None = None) -> None:
    """The exit status is one of ``statuses``; no traceback, no raw warning; an exit 2 is
    one ``error:`` line naming ``key``."""
    err = out.stderr
    assert out.returncode in statuses, (out.returncode, err)
    assert "Traceback" not in err, err
    assert "Warning:" not in err, err
    if out.returncode == 2:
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, err
        assert key is not None and key in errors[0], err


def _model(**scenario) -> dict:
    """A small Laplace sum audit (one feature, 20 records), ``scenario`` keys replaced."""
    sc = {"noise": "laplace", "epsilon": 1.0, "query": "sum", "d": 1, "n": 20, "bound": 1.0}
    sc.update(scenario)
    return {"scenario": sc, "missingness": {"kind": "mcar-iid", "rate": 0.5},
            "audit": {"trials": 2000, "seed": 1, "attack": "exact-lr"}}


def _library(target: str, epsilon: float, **params) -> dict:
    """A small black-box audit of a library target (library_audit.toml's shape)."""
    return {"implementation": {"target": target, "epsilon": epsilon, "delta": 0.0,
                               "chunk": 100, "params": params or {"bounds": [-1.0, 1.0]}},
            "scenario": {"query": "sum", "d": 1, "n": 20, "bound": 1.0},
            "missingness": {"kind": "mcar-iid", "rate": 0.2},
            "audit": {"trials": 500, "pilot_trials": 500, "seed": 1,
                      "attack": "density-ratio", "mode": "fixed"}}


def _gaussian(**scenario) -> dict:
    return _model(**{"noise": "gaussian", "delta": 1e-5, **scenario})


def _with(doc: dict, table: str, **values) -> dict:
    doc[table] = {**doc[table], **values}
    return doc


RUN_CASES = {
    # name: (config document, allowed statuses, the key an exit 2 names)
    "bound-1e300": (_model(bound=1e300), (0, 1, 2), "scenario.bound"),
    "bound-1e308-d10": (_model(bound=1e308, d=10), (2,), "scenario.bound"),
    "linear-weights-1e308": (_model(query="linear", query_params={"weights": [1e308]}),
                             (2,), "scenario.query_params.weights"),
    "epsilon-1e-300": (_model(epsilon=1e-300), (0, 1, 2), "scenario.epsilon"),
    "epsilon-1e300": (_model(epsilon=1e300), (0, 1, 2), "scenario.epsilon"),
    "gaussian-delta-1e-300": (_gaussian(delta=1e-300), (0, 1, 2), "scenario.delta"),
    "gaussian-epsilon-1e-300": (_gaussian(epsilon=1e-300), (0, 1, 2), "scenario.epsilon"),
    "audit-delta-1e-300": (_with(_model(), "audit", delta=1e-300), (0, 1, 2), "audit.delta"),
    "rate-1e-300": (_with(_model(), "missingness", rate=1e-300), (0, 1, 2),
                    "missingness.rate"),
    "rate-near-1": (_with(_model(), "missingness", rate=1 - 1e-16), (0, 1, 2),
                    "missingness.rate"),
    "trials-1": (_with(_model(), "audit", trials=1), (0, 1, 2), "audit.trials"),
    "pydp-epsilon-1e-300": (_library("pydp:sum", 1e-300), (2,),
                            "[implementation] pydp:sum: epsilon"),
    "pydp-epsilon-1e300": (_library("pydp:sum", 1e300), (0, 1, 2),
                           "[implementation] pydp:sum: epsilon"),
    "diffprivlib-epsilon-1e-300": (_library("diffprivlib:nansum", 1e-300), (0, 1, 2),
                                   "[implementation] diffprivlib:nansum: epsilon"),
    "diffprivlib-epsilon-1e300": (_library("diffprivlib:nansum", 1e300), (0, 1, 2),
                                  "[implementation] diffprivlib:nansum: epsilon"),
    # (OpenDP's own calibration fails on the first call: one line with the value)
    "opendp-epsilon-1e-300": (_library("opendp:sum", 1e-300), (0, 1, 2),
                              "calibrate the noise to epsilon=1e-300"),
    "opendp-epsilon-1e300": (_library("opendp:sum", 1e300), (0, 1, 2),
                             "[implementation] opendp:sum: epsilon"),
    "pipelinedp-epsilon-1e-300": (_library("pipelinedp:sum", 1e-300), (0, 1, 2),
                                  "[implementation] pipelinedp:sum: epsilon"),
    "pipelinedp-epsilon-1e300": (_library("pipelinedp:sum", 1e300), (0, 1, 2),
                                 "[implementation] pipelinedp:sum: epsilon"),
}


@pytest.mark.parametrize("name", list(RUN_CASES))
def test_run_with_an_extreme_value_prints_no_raw_warning(tmp_path, name):
    doc, statuses, key = RUN_CASES[name]
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(to_toml(doc))
    _check(_audit("run", cfg, "--no-progress"), statuses, key)


@pytest.mark.parametrize("name", ["bound-1e300", "epsilon-1e-300", "epsilon-1e300",
                                  "gaussian-delta-1e-300", "gaussian-epsilon-1e-300"])
def test_bound_config_with_an_extreme_value_prints_no_raw_warning(tmp_path, name):
    doc, _statuses, key = RUN_CASES[name]
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(to_toml(doc))
    _check(_audit("bound", "--config", cfg), (0, 2), key)


_BOUND = ("--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--p-star", "0.5",
          "--rho", "0.3", "--d", "10")


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("option, value, key", [
    ("--epsilon", "1e-300", "epsilon"), ("--epsilon", "1e300", "epsilon"),
    ("--p-star", "1e-300", "p-star"), ("--delta", "1e-300", "delta"),
    ("--rho", "1e-300", "rho"), ("--ratio", "1e-300", "ratio"),
])
def test_bound_with_an_extreme_value_prints_no_raw_warning(mechanism, option, value, key):
    args = [*_BOUND, option, value]
    args[1] = mechanism
    _check(_audit("bound", *args), (0, 2), key)
    _check(_audit("bound", *args, "--releases", "1e9"), (0, 2), key)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_warning_inside_a_mechanism_is_printed_once_with_its_name(tmp_path, jobs):
    (tmp_path / "warns.py").write_text(
        "import warnings\n"
        "import numpy as np\n"
        "def f(data, rng):\n"
        "    warnings.warn('clipping the inputs', UserWarning)\n"
        "    np.log(np.zeros(1))  # a numpy RuntimeWarning too\n"
        "    x = np.clip(np.nan_to_num(data), -1.0, 1.0)\n"
        "    return float(x.sum() + rng.laplace(scale=4.0))\n")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(to_toml({
        "implementation": {"target": "warns:f", "epsilon": 1.0, "batch": False,
                           "chunk": 100},
        "scenario": {"query": "sum", "d": 2, "n": 4},
        "missingness": {"kind": "mcar-iid", "rate": 0.2},
        "audit": {"trials": 1000, "pilot_trials": 1000, "seed": 1, "jobs": jobs}}))
    env = {**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = _audit("run", cfg, "--no-progress", env=env)
    _check(out, (0, 1))
    lines = out.stderr.splitlines()
    assert lines.count("warning: warns:f: clipping the inputs") == 1, out.stderr
    assert sum(line.startswith("warning: warns:f: divide by zero") for line in lines) == 1, \
        out.stderr

