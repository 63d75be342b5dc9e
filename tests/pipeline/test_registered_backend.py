"""Any joblib backend by name: a backend registered in this process
(``joblib.register_parallel_backend``, as ``ray.util.joblib.register_ray()`` does) runs the
engine, a model audit and an implementation audit, with the local run's counts and result;
a name joblib does not know is refused before any work, naming the known ones.

(``python -m audit run --backend NAME`` runs in a process of its own, which cannot see a
backend registered here: tests/cli/test_run.py checks its refusal of an unknown name.)
"""

from __future__ import annotations

import dataclasses

import joblib
import joblib.parallel
import numpy as np
import pytest
from joblib._parallel_backends import SequentialBackend, ThreadingBackend

from audit.mixture import Mixture
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import ImplementationConfig, config_from_dict
from audit.pipeline.runner import run_audit
from audit.simulation.engine import run_histograms
from audit.simulation.processes import RegisteredBackend, parse_backend
from audit.statistics import Statistic
from tests.conftest import audit_doc

#: the joblib runs each dummy backend was configured for (one per ``joblib.Parallel``)
RUNS: list[str] = []


class DummyThreads(ThreadingBackend):
    """joblib's threading backend, counting its runs."""

    def configure(self, *args, **kwargs):
        RUNS.append("dummy")
        return super().configure(*args, **kwargs)


class DummySequential(SequentialBackend):
    """joblib's sequential backend, counting its runs."""

    def configure(self, *args, **kwargs):
        RUNS.append("dummy-sequential")
        return super().configure(*args, **kwargs)


@pytest.fixture
def dummy():
    """Register the dummy backends for one test, then remove them."""
    joblib.register_parallel_backend("dummy", DummyThreads)
    joblib.register_parallel_backend("dummy-sequential", DummySequential)
    RUNS.clear()
    try:
        yield RUNS
    finally:
        for name in ("dummy", "dummy-sequential"):
            joblib.parallel.BACKENDS.pop(name, None)


def test_a_registered_name_parses_and_an_unknown_one_names_the_known(dummy):
    assert parse_backend("dummy") == RegisteredBackend("dummy")
    assert RegisteredBackend("dummy").uses_threads and RegisteredBackend("dummy").value == "dummy"
    with pytest.raises(ValueError, match=r"^backend must be one of 'loky', 'threading', "
                                         r"'dask', 'cuda' or a joblib backend registered by "
                                         r"name \('dummy', 'dummy-sequential', .*\), got "
                                         r"backend='nope'$"):
        parse_backend("nope")
    with pytest.raises(ValueError, match="got backend='DUMMY'"):  # registered names are exact
        parse_backend("DUMMY")


@pytest.mark.parametrize("name", ["dummy", "dummy-sequential"])
def test_the_engine_runs_on_a_registered_backend_with_the_local_counts(dummy, name):
    P = Mixture([1.0], [0.0], "laplace", 1.0)
    Q = Mixture([0.5, 0.5], [0.0, 1.0], "laplace", 1.0)
    stat = Statistic.output(np.linspace(-3.0, 4.0, 15))
    kw = {"block_trials": 1024, "chunk_blocks": 2}
    local = run_histograms(P, Q, stat, 20_000, 7, **kw)
    remote = run_histograms(P, Q, stat, 20_000, 7, n_jobs=2, backend=name, **kw)
    assert dummy == [name]  # one joblib run, on that backend
    assert np.array_equal(local.counts_p, remote.counts_p)
    assert np.array_equal(local.counts_q, remote.counts_q)


def test_a_model_audit_runs_on_a_registered_backend_with_the_local_result(dummy):
    doc = audit_doc(**{"audit.trials": 20_000})
    local = run_audit(config_from_dict(doc))
    cfg = config_from_dict(audit_doc(doc, **{"audit.backend": "dummy", "audit.jobs": 2}))
    remote = run_audit(cfg)
    assert "dummy" in dummy
    assert remote.config["audit"]["backend"] == "dummy"
    assert remote.eps_lower == local.eps_lower and remote.trials == local.trials


def _release(data, rng):
    return float(np.clip(np.nan_to_num(data[0, 0]), -1.0, 1.0) + rng.laplace(scale=2.0))


def test_an_implementation_audit_runs_on_a_registered_backend_with_the_local_result(dummy):
    impl = CallableImplementation(_release, Claim(1.0, 0.0, "Laplace"), "laplace-first")
    z = np.zeros((3, 1))
    zp = z.copy()
    z[0, 0], zp[0, 0] = -1.0, 1.0
    doc = {"scenario": {"query": "sum", "mechanism": "laplace", "epsilon": 1.0},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "pair": {"z": z.tolist(), "z_prime": zp.tolist()},
           "audit": {"trials": 4000, "seed": 2, "attack": "density-ratio",
                     "pilot_trials": 1000, "bins": 100}}
    results = []
    for audit in ({}, {"backend": "dummy", "jobs": 2}):
        cfg = config_from_dict({**doc, "audit": {**doc["audit"], **audit}})
        cfg = dataclasses.replace(cfg, implementation=ImplementationConfig(
            "python:test", 1.0, 0.0, chunk=500))
        results.append(run_audit(cfg, implementation=impl))
    assert "dummy" in dummy
    assert results[0].eps_lower == results[1].eps_lower


def test_an_unknown_backend_is_refused_before_any_work(dummy):
    with pytest.raises(ValueError, match=r"^audit.backend must be one of cpu, cuda, dask or a "
                                         r"joblib backend registered by name \(dummy, "
                                         r"dummy-sequential, .*\), got audit.backend='ray'$"):
        run_audit(audit_doc(**{"audit.backend": "ray"}))
    assert dummy == []
