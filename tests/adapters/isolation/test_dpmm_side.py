"""dpmm's library-side module, run in its worker (marked ``isolated``: the environment is
built from the package registry): what it releases and states, and dpmm's own failure on a
table with no column left to model."""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import dpmm as dm
from audit.adapters.isolation.client import launch

pytestmark = pytest.mark.isolated


def test_the_worker_releases_two_statistics_and_fails_on_a_static_table(isolated_cache):
    """Two statistics per dataset; the seed does not reproduce a release (OpenDP's noise);
    a table whose one column is static (all NaN, or one value) is dpmm's crash
    (table_binner.py:327), reported as one line."""
    params = {"function": "mst", "bounds": [-1.0, 1.0], "column": 1, "rows": 50, "n_bins": 4,
              "n_iters": 20, "epsilon": 0.5, "delta": 1e-6}
    worker, info = launch(dm.ENVIRONMENT, dm.SIDE, params, name="dpmm:mst")
    try:
        assert info["pipeline"] == "MSTPipeline" and info["rho"] > 0.0
        data = np.stack([np.c_[np.full(10, 9.0), np.linspace(-1, 1, 10)]] * 3)
        a, b = worker.call(data, 1), worker.call(data, 1)
        assert a.shape == (3, 2) and np.all(a[:, 0] == 0.0) and not np.array_equal(a, b)
        with pytest.raises(RuntimeError, match="parameter 'column' is 1 but the data has 1"):
            worker.call(data[:, :, :1], 1)
        for static in (np.nan, 0.5):
            with pytest.raises(RuntimeError, match="No objects to concatenate"):
                worker.call(np.full((1, 10, 2), static), 1)
    finally:
        worker.close()
