"""dpmm in its own environment: the declaration and the refusals before any work (fast), and,
marked ``isolated`` (the environment is built from the package registry), what a NaN does by
the library's source (the module docstring) on the installed version: the NaN indicator
column that exists only when the input has a NaN, and the one-valued column copied exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.adapters import dpmm as dm
from audit.adapters import make_implementation, seedable
from audit.adapters.isolation import environments
from audit.adapters.relations import Relation
from tests.adapters.isolation_cases import handed_to_worker

TARGETS = ("dpmm:mst", "dpmm:privbayes")
#: the NaN table's pair: one record at the bound against NA, the nine others 0
WITH_VALUE = np.array([[1.0]] + [[0.0]] * 9)
WITH_NAN = np.array([[np.nan]] + [[0.0]] * 9)


def test_it_declares_its_own_environment_and_relation():
    assert dm.ADAPTER.isolated and dm.ADAPTER.environment is dm.ENVIRONMENT
    assert dm.ENVIRONMENT.python == "3.11"
    for pin in ("dpmm==0.1.9", "numpy==1.26.4", "opendp==0.12.1", "pandas==2.1.0",
                "scikit-learn==1.5.0"):
        assert pin in dm.ENVIRONMENT.requirements
    assert all("==" in r for r in dm.ENVIRONMENT.requirements)  # every package pinned
    assert dm.ADAPTER.relation is Relation.ADD_REMOVE
    assert not any(seedable(t) for t in TARGETS)  # OpenDP's Gaussian noise: its own CSPRNG
    assert dm.SIDE.is_file() and "import audit" not in dm.SIDE.read_text()
    for t in dm.ADAPTER.targets:
        assert "dpmm/processing/table_binner.py:212-228" in t.source
        assert t.example("default").delta > 0.0


@pytest.mark.parametrize(("params", "delta", "needle"), [
    ({"bounds": [1.0, -1.0]}, 1e-6, "parameter 'bounds'"),
    ({}, 1e-6, "parameter 'bounds' is required"),
    ({"bounds": [-1.0, 1.0], "column": None}, 1e-6, "parameter 'column' must be an integer"),
    ({"bounds": [-1.0, 1.0], "column": -1}, 1e-6, "parameter 'column' must be None or"),
    ({"bounds": [-1.0, 1.0], "companion": 0}, 1e-6, "parameter 'companion' must differ"),
    ({"bounds": [-1.0, 1.0], "companion": -1}, 1e-6, "parameter 'column' must be None or"),
    ({"bounds": [-1.0, 1.0], "rows": 0}, 1e-6, r"parameter 'rows' must be an integer in "
                                                r"\[1, 100000\], got rows=0"),
    ({"bounds": [-1.0, 1.0], "rows": 2.5}, 1e-6, "parameter 'rows' must be an integer"),
    ({"bounds": [-1.0, 1.0], "rows": True}, 1e-6, "parameter 'rows' must be an integer"),
    ({"bounds": [-1.0, 1.0], "n_bins": 1}, 1e-6, r"parameter 'n_bins' must be an integer in "
                                                 r"\[2, 1000\], got n_bins=1"),
    ({"bounds": [-1.0, 1.0], "n_iters": 0}, 1e-6, "parameter 'n_iters' must be an integer"),
    ({"bounds": [-1.0, 1.0], "epsilon": 1.0}, 1e-6, "unknown parameter 'epsilon'"),
    ({"bounds": [-1.0, 1.0]}, 0.0, r"delta must be in \(0, 1\), got delta=0.0"),
])
def test_bad_parameters_are_refused_before_the_environment(monkeypatch, params, delta, needle):
    def no_build(environment):
        raise AssertionError("the environment must not be built for bad parameters")

    monkeypatch.setattr(environments, "ensure", no_build)
    for target in TARGETS:
        with pytest.raises(ValueError, match=needle):
            make_implementation(target, epsilon=1.0, delta=delta, params=params)


def test_the_budget_is_that_of_one_row_added_or_removed(monkeypatch):
    """A substitution is two rows' changes: dpmm gets (ε/2, δ/(1 + e^(ε/2))), the defaults
    otherwise."""
    handed = handed_to_worker(monkeypatch, dm, "dpmm:privbayes", delta=1e-6,
                              params={"bounds": [-2, 3], "column": 1})
    assert handed == {"function": "privbayes", "bounds": [-2.0, 3.0], "column": 1,
                      "companion": None, "rows": dm.ROWS, "n_bins": dm.N_BINS,
                      "n_iters": dm.N_ITERS,
                      "epsilon": 0.5, "delta": pytest.approx(1e-6 / (1 + math.exp(0.5)))}


@pytest.mark.isolated
@pytest.mark.parametrize("target", TARGETS)
def test_a_synthetic_nan_only_when_the_input_has_one(isolated_cache, target):
    """The finding (module docstring): on the NaN table's pair, (1, 0, ..., 0) never yields a
    NaN in the synthetic column and its non-NaN rows are drawn from the binned marginal (never
    exactly 0), while (NA, 0, ..., 0) yields NaN rows in most releases and its non-NaN rows
    are the static value 0, copied exactly. A library that kept its (1, 1e-6)-DP claim would
    give the first side a NaN with probability at least e^(−1)·P(second) − δ ≈ 0.25; 300
    releases without one then have probability below 10⁻³⁰."""
    impl = make_implementation(target, epsilon=1.0, delta=1e-6, params={"bounds": [-1.0, 1.0]})
    try:
        rng = np.random.default_rng(0)
        a = impl.batch(np.stack([WITH_VALUE] * 300), rng)
        b = impl.batch(np.stack([WITH_NAN] * 300), rng)
    finally:
        impl.close()
    assert a.shape == b.shape == (300, 2) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    assert np.all((0.0 <= b[:, 0]) & (b[:, 0] <= 1.0))
    assert np.all(a[:, 0] == 0.0) and np.all(np.abs(a[:, 1]) <= 1.0)
    assert np.mean(b[:, 0] > 0.0) > 0.4  # 0.70 (MST) and 0.75 (PrivBayes) on 200 releases
    assert np.all(b[:, 1] == 0.0) and np.all(a[:, 1] != 0.0)
    assert impl.info["dpmm"] == "0.1.9" and impl.info["binner"] == "uniform"
