"""SmartNoise SQL's library-side module, run in its worker (marked ``isolated``: the
environment is built from the package registry): what it runs and hands back."""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import smartnoise_sql as sn
from audit.adapters.isolation.client import launch

pytestmark = pytest.mark.isolated


def test_it_runs_the_rewritten_query_and_ignores_the_seed(isolated_cache):
    params = {"function": "sum", "bounds": [-1.0, 1.0], "column": 1, "epsilon": 0.5}
    worker, info = launch(sn.ENVIRONMENT, sn.SIDE, params, name="smartnoise-sql:sum")
    try:
        assert info["snsql"] == "1.0.10" and info["opendp"].startswith("0.14.")
        assert info["query"] == "SELECT SUM(x) FROM t" and info["privacy_cost"][0] == 0.5
        assert "ELSE  x END AS x FROM t" in info["runs"]
        data = np.stack([np.array([[9.0, 0.25], [9.0, np.nan], [9.0, 5.0]])] * 3)
        a, b = worker.call(data, 1), worker.call(data, 1)
        assert a.shape == (3,) and np.all(np.isfinite(a)) and not np.array_equal(a, b)
        with pytest.raises(RuntimeError, match="parameter 'column' is 1 but the data has 1"):
            worker.call(data[:, :, :1], 1)
    finally:
        worker.close()
