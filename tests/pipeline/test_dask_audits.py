"""Whole audits of both subjects on joblib's dask backend give the local run's result, with the
same seeds, on a LocalCluster on loopback (audit.backend = "dask")."""

from __future__ import annotations

import numpy as np
import pytest

from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from tests.conftest import audit_doc

pytestmark = pytest.mark.dask


def _sum(data, rng):
    return np.clip(np.nan_to_num(data), -1, 1).sum() + rng.laplace(scale=6.0)


IMPL = CallableImplementation(_sum, Claim(1.0, 0.0, "test"), "laplace-sum")


def test_model_and_implementation_audits_are_identical_on_dask():
    distributed = pytest.importorskip("distributed")
    model = audit_doc(**{"audit.trials": 300_000, "audit.jobs": 2,
                         "audit.selection": "pilot", "audit.pilot_trials": 100_000})
    black = audit_doc(**{"audit.trials": 3_000, "audit.jobs": 2, "audit.attack": "density-ratio",
                         "scenario.d": 3, "scenario.n": 5})
    local = [run_audit(config_from_dict(model)),
             run_audit(config_from_dict(black), implementation=IMPL)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0") as cluster, distributed.Client(cluster):
        remote = [run_audit(config_from_dict(audit_doc(model, **{"audit.backend": "dask"}))),
                  run_audit(config_from_dict(audit_doc(black, **{"audit.backend": "dask"})),
                            implementation=IMPL)]
    for a, b in zip(local, remote, strict=True):
        assert a.witness == b.witness and a.eps_lower == b.eps_lower
        assert b.config["audit"]["backend"] == "dask"
