"""``audit.simulation.mechanism_warnings``: a warning raised inside an implementation's calls
is kept (bounded), sent back by worker processes and threads, and reported once per audit as
a ``MechanismWarning`` (``python -m audit run`` prints it as ``warning: <target>: <message>``,
tests/test_no_raw_warnings.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from audit.model.implementation import CallableImplementation, Claim
from audit.model.missingness import make_missingness
from audit.simulation.callables import CallableRun, iter_chunks
from audit.simulation.mechanism_warnings import (
    LOG,
    MAX_KEPT,
    MechanismWarning,
    WarningLog,
    caught,
)
from audit.testing import assert_private


def _warns(data, rng):
    """A mechanism (ε = 1 for d = 2 in [-1, 1]) that warns on every call."""
    warnings.warn("clipping the inputs", UserWarning, stacklevel=2)
    x = np.clip(np.nan_to_num(np.asarray(data, dtype=np.float64)), -1.0, 1.0)
    return float(x.sum() + rng.laplace(scale=4.0))


def test_assert_private_reports_a_mechanism_warning_once():
    with pytest.warns(MechanismWarning) as record:
        assert_private(_warns, query="sum", d=2, n=4, epsilon=1.0, trials=2000,
                       missingness={"kind": "mcar-iid", "rate": 0.2})
    texts = [str(w.message) for w in record]
    assert texts.count("_warns: clipping the inputs") == 1, texts


@pytest.mark.parametrize("backend, jobs", [("loky", 1), ("threading", 2), ("loky", 2)])
def test_iter_chunks_reports_each_warning_once_whatever_the_workers(backend, jobs):
    LOG.new_audit()  # (a probe starts each audit; iter_chunks alone is part of the last one)
    impl = CallableImplementation(_warns, Claim(1.0, 0.0, "test"), name="warns")
    z = np.zeros((4, 2))
    run = CallableRun(impl, z, z + 0.5, make_missingness("mcar-iid", rate=0.2), chunk=50,
                      trials=400, key=1, dim=0, use_batch=False)
    with pytest.warns(MechanismWarning) as record:
        chunks = list(iter_chunks(run, n_jobs=jobs, backend=backend))
    assert len(chunks) == 8
    assert [str(w.message) for w in record] == ["warns: clipping the inputs"]


def test_the_log_keeps_a_bounded_number_of_warnings():
    log = WarningLog()
    for i in range(3 * MAX_KEPT):
        log.add("t", "UserWarning", f"message {i}")
        log.add("t", "UserWarning", f"message {i}")
    report = log.report()
    assert len(report) == MAX_KEPT + 1
    assert report[-1] == ("t", "", f"{4 * MAX_KEPT} more warning(s) with other messages not kept")
    log.add("t", "UserWarning", "message 0")  # reported in this audit: not kept again
    assert log.report() == []
    with caught("t"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a mechanism's own filter still applies
        warnings.warn("silenced", stacklevel=2)

