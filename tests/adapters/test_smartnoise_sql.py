"""SmartNoise SQL in its own environment: the declaration and the refusals before any work
(fast), what a NULL does by the library's source (the module docstring) on the installed
version, and one audit through ``python -m audit run`` (marked ``isolated``: the environment
is built from the package registry)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from audit.adapters import make_implementation, seedable
from audit.adapters import smartnoise_sql as sn
from audit.adapters.isolation import environments
from audit.adapters.relations import Relation
from tests.adapters.isolation_cases import handed_to_worker

ROOT = Path(__file__).resolve().parents[2]


def test_it_declares_its_own_environment_and_relation():
    assert sn.ADAPTER.isolated and sn.ADAPTER.environment is sn.ENVIRONMENT
    assert sn.ENVIRONMENT.python == "3.11"
    assert "smartnoise-sql==1.0.10" in sn.ENVIRONMENT.requirements
    assert any(r.startswith("opendp==0.14.") for r in sn.ENVIRONMENT.requirements)
    assert sn.ADAPTER.relation is Relation.ADD_REMOVE and not seedable("smartnoise-sql:sum")
    assert sn.SIDE.is_file() and "import audit" not in sn.SIDE.read_text()


@pytest.mark.parametrize(("params", "delta", "needle"), [
    ({"bounds": [1.0, -1.0]}, 0.0, "parameter 'bounds'"),
    ({"bounds": [-1.0, 1.0], "column": None}, 0.0, "parameter 'column' must be an integer"),
    ({"bounds": [-1.0, 1.0], "rows": 3}, 0.0, "unknown parameter 'rows'"),
    ({}, 0.0, "parameter 'bounds' is required"),
    ({"bounds": [-1.0, 1.0]}, 1e-6, "delta must be 0"),
    ({"bounds": [-1.0, 1.0], "groups": 0}, 0.0, "parameter 'groups' must be an integer"),
    ({"bounds": [-1.0, 1.0], "groups": 2.5}, 0.0, "parameter 'groups' must be an integer"),
])
def test_bad_parameters_are_refused_before_the_environment(monkeypatch, params, delta, needle):
    def no_build(environment):
        raise AssertionError("the environment must not be built for bad parameters")

    monkeypatch.setattr(environments, "ensure", no_build)
    with pytest.raises(ValueError, match=needle):
        make_implementation("smartnoise-sql:sum", epsilon=1.0, delta=delta, params=params)


@pytest.mark.parametrize(("function", "per_statistic"), [("sum", 0.5), ("avg", 0.25),
                                                         ("count", 0.5)])
def test_the_budget_is_halved_then_split_over_the_statistics(monkeypatch, function,
                                                             per_statistic):
    handed = handed_to_worker(monkeypatch, sn, f"smartnoise-sql:{function}",
                              params={"bounds": [-1.0, 1.0]})
    assert handed == {"function": function, "bounds": [-1.0, 1.0], "column": 0,
                      "epsilon": per_statistic, "groups": sn.GROUPS}


def _mean(impl, data: np.ndarray, calls: int = 150) -> float:
    return float(impl.batch(np.stack([data] * calls), np.random.default_rng(0)).mean())


@pytest.mark.isolated
def test_null_semantics_on_the_installed_version(isolated_cache):
    """By the module docstring: SUM skips NULL (all NULL: 0 + noise; bounds (2, 3) do not
    clamp a NULL up to 2), COUNT counts the non-NULL rows, AVG is never NULL; the claim's note
    carries the library's own cost, ε/2 per row added or removed."""
    column = np.array([[3.0], [np.nan], [2.5], [np.nan]])
    total = make_implementation("smartnoise-sql:sum", epsilon=1.0,
                                params={"bounds": [2.0, 3.0]})
    assert "(ε, δ) = (0.5," in total.claim.note and total.info["privacy_cost"][0] == 0.5
    assert "CASE WHEN x < 2.0 THEN 2.0" in total.info["runs"]
    # Laplace scale 3/(1/2) = 6: the mean of 150 draws is within 4 standard errors (2.0)
    assert abs(_mean(total, column) - 5.5) < 2.0
    assert abs(_mean(total, np.full((4, 1), np.nan))) < 2.0
    count = make_implementation("smartnoise-sql:count", epsilon=1.0,
                                params={"bounds": [-1.0, 1.0]})
    assert abs(_mean(count, column) - 2.0) < 1.0  # two non-NULL rows (truncation: -0.5 or so)
    avg = make_implementation("smartnoise-sql:avg", epsilon=1.0, params={"bounds": [-1.0, 1.0]})
    out = avg.batch(np.stack([np.full((4, 1), np.nan)] * 50), np.random.default_rng(0))
    assert np.all(np.isfinite(out))
    a = total(column, np.random.default_rng(7))
    assert a != total(column, np.random.default_rng(7))  # not seedable: the seed is ignored
    for impl in (total, count, avg):
        impl.close()


@pytest.mark.isolated
def test_grouped_queries_release_independent_keys_with_the_single_querys_law(isolated_cache):
    """``groups`` > 1 (GROUP BY a public key per dataset): within one query, neighbouring
    keys' releases are uncorrelated, and a key's release has the law of one query on its
    dataset (two-sample Kolmogorov–Smirnov); each test at α = 10⁻⁶, so a shared or
    mis-scaled noise fails them and a correct library fails them with probability ≤ 2·10⁻⁶."""
    from scipy import stats

    data = np.array([[1.0], [np.nan], [0.5], [-1.0]])
    grouped = make_implementation("smartnoise-sql:sum", epsilon=1.0,
                                  params={"bounds": [-1.0, 1.0], "groups": 500})
    single = make_implementation("smartnoise-sql:sum", epsilon=1.0,
                                 params={"bounds": [-1.0, 1.0], "groups": 1})
    rng = np.random.default_rng(0)
    g = grouped.batch(np.stack([data] * 4000), rng).reshape(8, 500)  # 8 queries of 500 keys
    one = single.batch(np.stack([data] * 200), rng)
    pairs = np.concatenate([np.c_[q[:-1], q[1:]] for q in g])
    r = stats.pearsonr(pairs[:, 0], pairs[:, 1])
    assert r.pvalue > 1e-6, r
    assert stats.ks_2samp(g.ravel(), one).pvalue > 1e-6
    # the law itself: sum 0.5, Laplace scale 2 (sensitivity 1 at ε/2), SD 2·√2
    assert abs(g.mean() - 0.5) < 5 * 2.83 / np.sqrt(g.size)
    assert 2.5 < g.std() < 3.2
    assert "GROUP BY" in grouped.info["runs"] and grouped.info["privacy_cost"][0] == 0.5
    for impl in (grouped, single):
        impl.close()


@pytest.mark.isolated
def test_an_audit_of_the_sum_through_the_command_line(isolated_cache, tmp_path):
    """``python -m audit env build smartnoise-sql`` then ``python -m audit run`` on
    ``experiments/configs/smartnoise_sum.toml`` (fewer trials): the claim holds."""
    env = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    run = [sys.executable, "-m", "audit"]
    built = subprocess.run([*run, "env", "build", "smartnoise-sql"], capture_output=True,
                           text=True, timeout=900, env={**_environ(), **env})
    assert built.returncode == 0 and "built at" in built.stdout, built.stderr
    out = tmp_path / "sum.json"
    start = time.monotonic()
    done = subprocess.run([*run, "run", str(ROOT / "experiments/configs/smartnoise_sum.toml"),
                           "--trials", "300", "--no-progress", "--json", str(out)],
                          capture_output=True, text=True, timeout=900,
                          env={**_environ(), **env})
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    assert doc["trials"] == 300 and doc["eps_lower"] <= 1.0
    print(f"smartnoise-sql:sum, 300 calls per side: eps_lower {doc['eps_lower']:.3f} "
          f"in {seconds:.0f} s")


def _environ() -> dict:
    import os

    return dict(os.environ)
