"""The registry: targets, errors, a user's own callable, libraries that are missing."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from audit.adapters import (
    ENTRY_POINT_GROUP,
    adapters,
    available_targets,
    example,
    get_adapter,
    library_names,
    make_implementation,
    seedable,
)
from audit.adapters.registry import package_adapters
from audit.model.implementation import Implementation

ROOT = Path(__file__).resolve().parents[2]
USER = "tests.adapters.example_mechanisms:noisy_sum"
X = np.arange(12, dtype=float).reshape(4, 3) / 20
X[1, 2] = np.nan


def test_available_targets_lists_every_library_and_function():
    targets = available_targets()
    assert set(targets) == set(library_names()) >= {"diffprivlib", "opendp", "pipelinedp",
                                                    "pydp"}
    assert set(targets["diffprivlib"]) >= {"nanmean", "nansum", "nanvar", "nanstd", "mean",
                                           "sum", "quantile", "median", "percentile",
                                           "histogram", "histogramdd", "count_nonzero"}
    assert targets["opendp"] == ["sum", "mean", "count", "quantile", "count_by_categories"]
    assert targets["pipelinedp"] == ["sum", "mean", "count", "variance", "percentile",
                                     "privacy_id_count", "select_partitions", "vector_sum"]
    assert targets["pydp"] == ["sum", "mean", "variance", "std", "count", "median",
                               "percentile", "max", "min"]


@pytest.mark.parametrize(("target", "needles"), [
    ("nosuchlib:sum", ["unknown library 'nosuchlib'", "diffprivlib", "opendp", "pipelinedp",
                       "entry-point group 'audit.adapters'"]),
    ("opendp:median", ["unknown function 'median'", "opendp:sum", "opendp:mean"]),
    ("diffprivlib:histogram2d", ["unknown function 'histogram2d'", "diffprivlib:nanmean"]),
    ("pydp:quantiles", ["unknown function 'quantiles'", "pydp:sum", "pydp:median"]),
    ("no-colon", ["target must look like", "'package.module:function'"]),
    ("tests.adapters.no_such_module:f", ["cannot import"]),
    ("tests.adapters.example_mechanisms:missing", ["has no attribute 'missing'"]),
    ("tests.adapters.example_mechanisms:NOT_A_FUNCTION", ["is not callable"]),
])
def test_unknown_targets_are_one_clear_error(target, needles):
    with pytest.raises(ValueError) as info:
        make_implementation(target, epsilon=1.0)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


@pytest.mark.parametrize(("target", "kwargs", "needle"), [
    ("opendp:sum", {"params": {"bounds": (-1, 1), "bonds": 2}}, "unknown parameter 'bonds'"),
    ("opendp:sum", {"params": {}}, "parameter 'bounds' is required"),
    ("pipelinedp:sum", {"params": {}}, "parameter 'bounds' is required"),
    ("diffprivlib:nanmean", {"params": {"bounds": (1, -1)}}, "parameter 'bounds'"),
    ("diffprivlib:nanmean", {"params": {"bounds": (0, np.inf)}}, "parameter 'bounds'"),
    ("diffprivlib:nanmean", {"params": {"bounds": 1}}, "parameter 'bounds'"),
    ("diffprivlib:nanmean", {"params": {"bounds": (-1, 1), "axis": 1}}, "parameter 'axis'"),
    ("diffprivlib:nanmean", {"params": {"bounds": (-1, 1)}, "delta": 1e-6}, "delta must be 0"),
    ("opendp:sum", {"params": {"bounds": (-1, 1), "nan": "zero"}}, "parameter 'nan'"),
    ("opendp:sum", {"params": {"bounds": (-1, 1), "noise": "cauchy"}}, "noise"),
    ("opendp:sum", {"params": {"bounds": (-1, 1), "noise": "gaussian"}}, "delta in (0, 1)"),
    ("opendp:sum", {"params": {"bounds": (-1, 1)}, "delta": 1e-6}, "delta must be 0"),
    ("opendp:sum", {"params": {"bounds": (-1, 1), "column": -1}}, "parameter 'column'"),
    ("opendp:sum", {"params": {"bounds": (-1, 1), "shape": (0, 3)}}, "parameter 'shape'"),
    ("opendp:sum", {"params": {"bounds": (-1, 1), "constant": np.nan}}, "parameter 'constant'"),
    ("opendp:mean", {"params": {"bounds": (-1, 1), "nan": "drop", "constant": 2.0}},
     "parameter 'constant'"),
    ("pipelinedp:count", {"params": {"bounds": (-1, 1)}}, "parameter 'bounds'"),
    ("pipelinedp:sum", {"params": {"bounds": (-1, 1), "nan": "impute"}}, "parameter 'nan'"),
    ("pipelinedp:percentile", {"params": {"bounds": (-1, 1)}}, "'percentile' is required"),
    ("pipelinedp:percentile", {"params": {"bounds": (-1, 1), "percentile": 101}},
     "parameter 'percentile' must be in [0, 100]"),
    ("diffprivlib:quantile", {"params": {"bounds": (-1, 1), "quant": 1.5}},
     "parameter 'quant' must be in [0, 1]"),
    ("diffprivlib:percentile", {"params": {"bounds": (-1, 1), "percent": -1}},
     "parameter 'percent' must be in [0, 100]"),
    ("diffprivlib:histogram", {"params": {"bounds": (-1, 1), "bins": 0}}, "parameter 'bins'"),
    ("diffprivlib:histogram", {"params": {"bounds": (-1, 1), "axis": 0}},
     "unknown parameter 'axis'"),
    ("diffprivlib:histogramdd", {"params": {"bounds": (-1, 1), "bins": 1.5}},
     "parameter 'bins' must be an integer >= 1, got bins=1.5"),
    ("diffprivlib:histogramdd", {"params": {"bins": 2}}, "parameter 'bounds' is required"),
    ("diffprivlib:count_nonzero", {"params": {"bounds": (-1, 1)}},
     "unknown parameter 'bounds'"),
    ("diffprivlib:count_nonzero", {"params": {"axis": 1}},
     "parameter 'axis' must be None (every entry) or 0 (per column), got axis=1"),
    ("pydp:median", {"params": {}}, "parameter 'bounds' is required"),
    ("pydp:percentile", {"params": {"bounds": (-1, 1)}}, "parameter 'percentile' is required"),
    ("pydp:percentile", {"params": {"bounds": (-1, 1), "percentile": 50}},
     "parameter 'percentile' must be in [0, 1] (python-dp's scale, not percent), got "
     "percentile=50"),
    ("pipelinedp:sum", {"params": {"bounds": (-1, 1), "noise": "gaussian"}}, "delta in (0, 1)"),
    ("pipelinedp:sum", {"params": {"bounds": (-1, 1)}, "delta": 1e-6}, "delta must be 0"),
    ("pipelinedp:vector_sum", {"params": {"max_norm": 1.0, "noise": "gaussian",
                                          "norm": "l2"}}, "delta in (0, 1)"),
    ("pipelinedp:vector_sum", {"params": {"max_norm": 1.0}, "delta": 1e-6}, "delta must be 0"),
    ("pydp:sum", {"params": {}}, "parameter 'bounds' is required"),
    ("pydp:sum", {"params": {"bounds": (-1, 1)}, "delta": 1e-6}, "delta must be 0"),
    ("pydp:count", {"params": {"bounds": (-1, 1)}}, "unknown parameter 'bounds'"),
    ("pydp:mean", {"params": {"bounds": (-1, 1), "column": 1.5}}, "parameter 'column'"),
    ("opendp:sum", {"params": {"bounds": (-1, 1)}, "epsilon": 0.0}, "epsilon"),
    ("opendp:sum", {"params": [("bounds", (-1, 1))]}, "params must be a dict"),
    (USER, {"params": {"bound": 1.0}}, "missing a required argument: 'scale'"),
    (USER, {"params": {"bound": 1.0, "scale": 1.0, "sigma": 2}}, "'sigma'"),
])
def test_bad_parameters_are_named(target, kwargs, needle):
    kwargs = {"epsilon": 1.0, **kwargs}
    with pytest.raises(ValueError) as info:
        make_implementation(target, **kwargs)
    assert needle in str(info.value), str(info.value)
    assert str(info.value).count("\n") == 0


@pytest.mark.parametrize(("target", "params"), [
    ("diffprivlib:nanmean", {"bounds": (-1, 1)}),
    ("opendp:sum", {"bounds": (-1, 1)}),
    ("pipelinedp:count", {}),
    ("pydp:count", {}),
])
def test_data_must_be_two_dimensional(target, params):
    impl = make_implementation(target, epsilon=1.0, params=params)
    with pytest.raises(ValueError, match=r"data must have shape \(n, d\)"):
        impl(np.zeros(5), np.random.default_rng(0))


@pytest.mark.parametrize("target", ["opendp:sum", "pipelinedp:sum", "pydp:sum"])
def test_column_beyond_the_data_is_named(target):
    impl = make_implementation(target, epsilon=1.0, params={"bounds": (-1, 1), "column": 5})
    with pytest.raises(ValueError, match="parameter 'column' is 5"):
        impl(X, np.random.default_rng(0))


@pytest.mark.parametrize(("module", "target", "params"), [
    ("diffprivlib.tools", "diffprivlib:nanmean", {"bounds": (-1, 1)}),
    ("opendp.prelude", "opendp:sum", {"bounds": (-1, 1)}),
    ("pipeline_dp", "pipelinedp:sum", {"bounds": (-1, 1)}),
    ("pydp.algorithms.laplacian", "pydp:sum", {"bounds": (-1, 1)}),
    ("polars", "opendp-polars:sum", {"bounds": (-1, 1)}),
])
def test_a_missing_library_names_the_extra(monkeypatch, module, target, params):
    monkeypatch.setitem(sys.modules, module, None)  # import of it raises ImportError
    with pytest.raises(ValueError) as info:
        make_implementation(target, epsilon=1.0, params=params)
    assert "pip install -e \".[libraries]\"" in str(info.value)
    assert target in str(info.value)


def test_adapters_import_without_their_libraries():
    blocked = sorted({a.import_name for a in adapters().values()} | {"pydp", "sklearn"})
    code = ("import sys\n"
            f"for m in {blocked!r}:\n"
            "    sys.modules[m] = None\n"
            "import audit.adapters as a\n"  # available_targets imports every adapter module
            "print(sorted(a.available_targets()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=None)
    assert out.stdout.strip() == repr(sorted(available_targets()))
    assert {"diffprivlib", "opendp", "pipelinedp"} <= set(available_targets())


def test_seedable():
    assert seedable("diffprivlib:nansum") is True
    assert seedable("opendp:sum") is False
    assert seedable("pipelinedp:count") is False
    assert seedable("pydp:sum") is False
    assert seedable("opendp-polars:len") is False
    assert seedable("diffprivlib:histogram") is True
    assert seedable(USER) is True
    with pytest.raises(ValueError, match="unknown function"):
        seedable("opendp:median")


class TestUserCallable:
    def make(self, **params):
        return make_implementation(USER, epsilon=0.5, delta=0.0,
                                   params={"bound": 1.0, "scale": 12.0, **params})

    def test_claim_and_protocol(self):
        impl = self.make()
        assert isinstance(impl, Implementation)
        assert (impl.claim.epsilon, impl.claim.delta) == (0.5, 0.0)
        assert impl.name == USER and impl.params == {"bound": 1.0, "scale": 12.0}

    def test_seeded_call_and_batch(self):
        impl = self.make()
        a = impl(X, np.random.default_rng(4))
        assert a == impl(X, np.random.default_rng(4))
        assert isinstance(a, float) and np.isfinite(a)
        out = impl.batch(np.stack([X, X, np.full_like(X, np.nan)]), np.random.default_rng(4))
        assert out.shape == (3,) and np.all(np.isfinite(out))

    def test_params_reach_the_callable(self):
        impl = self.make(scale=0.0)
        assert impl(X, np.random.default_rng(0)) == pytest.approx(np.nansum(X))


class TestOpendpShape:
    """With ``shape`` the chain is built at once and the claim is OpenDP's privacy map."""

    @pytest.fixture(autouse=True)
    def _library(self):
        pytest.importorskip("opendp")

    @pytest.mark.parametrize(("noise", "delta"), [("laplace", 0.0), ("gaussian", 1e-6)])
    @pytest.mark.parametrize("function", ["sum", "mean"])
    def test_claim_is_the_privacy_map(self, function, noise, delta):
        from audit.adapters.opendp import build_chain

        impl = make_implementation(f"opendp:{function}", epsilon=1.0, delta=delta,
                                   params={"bounds": (-1, 1), "noise": noise, "shape": (10, 3)})
        assert 1.0 - 1e-6 < impl.claim.epsilon <= 1.0 and impl.claim.delta == delta
        _, value = build_chain(function, epsilon=1.0, delta=delta, params=impl.params,
                               n=10, d=3)
        assert impl.claim.epsilon == (value[0] if noise == "gaussian" else value)
        assert np.isfinite(impl(np.zeros((10, 3)), np.random.default_rng(0)))
        with pytest.raises(ValueError, match=r"shape \(10, 3\)"):
            impl(np.zeros((11, 3)), np.random.default_rng(0))

    def test_record_substitution_is_symmetric_distance_2d(self):
        """d = 3 entries per record: the map is taken at d_in = 6, so the Laplace scale of
        the sized sum is 6/2·(hi − lo)/ε = 6."""
        from audit.adapters.opendp import build_chain

        impl = make_implementation("opendp:sum", epsilon=1.0, params={"bounds": (-1, 1)})
        m, value = build_chain("sum", epsilon=1.0, delta=0.0, params=impl.params, n=10, d=3)
        assert value <= 1.0
        assert m.map(6) == pytest.approx(1.0, rel=1e-6)
        assert m.map(2) == pytest.approx(1 / 3, rel=1e-6)


def test_diffprivlib_axis_none_gives_each_entry_epsilon_over_d():
    """A (n, 3) dataset: diffprivlib is called with ε/3, so the Laplace scale of the sum is
    (hi − lo)/(ε/3) = 6 — checked through the seeded noise itself."""
    pytest.importorskip("diffprivlib")
    from diffprivlib.tools import nansum

    impl = make_implementation("diffprivlib:nansum", epsilon=1.0, params={"bounds": (-1, 1)})
    x = np.zeros((50, 3))
    seed = int(np.random.default_rng(9).integers(2**32))
    direct = nansum(x, epsilon=1 / 3, bounds=(-1, 1), random_state=seed)
    assert impl(x, np.random.default_rng(9)) == direct


# ---------------------------------------------------------------- discovery (entry points)

FAKE = metadata.EntryPoint("fakelib", "tests.adapters.fake_adapter:ADAPTER", ENTRY_POINT_GROUP)


def _register(monkeypatch, *eps: metadata.EntryPoint, scan: bool = True) -> None:
    """Make ``importlib.metadata.entry_points(group="audit.adapters")`` return ``eps`` (the
    other groups untouched); ``scan=False`` also hides this package's own adapter modules."""
    real = metadata.entry_points

    def entry_points(**kw):
        if kw.get("group") == ENTRY_POINT_GROUP:
            return metadata.EntryPoints(eps)
        return real(**kw)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    if not scan:
        monkeypatch.setattr("audit.adapters.registry.package_adapters", dict)


def test_an_adapter_registered_as_an_entry_point_is_found(monkeypatch):
    _register(monkeypatch, FAKE)
    assert "fakelib" in library_names() and available_targets()["fakelib"] == ["sum"]
    impl = make_implementation("fakelib:sum", epsilon=1.0, params={"bounds": (-1, 1)})
    assert impl.name == "fakelib:sum" and seedable("fakelib:sum") is True
    x = np.zeros((5, 2))
    # ADD_REMOVE: the fake library is asked for ε/2, so its Laplace scale is 1·2/(1/2) = 4
    expected = np.random.default_rng(3).laplace(scale=4.0)
    assert impl(x, np.random.default_rng(3)) == expected
    assert example("fakelib:sum", "default").params == {"bounds": [-1.0, 1.0]}


def test_entry_points_are_the_registry(monkeypatch):
    """With this package's modules hidden, only what the group lists exists."""
    _register(monkeypatch, FAKE, scan=False)
    assert list(adapters()) == ["fakelib"]
    with pytest.raises(ValueError) as info:
        make_implementation("opendp:sum", epsilon=1.0, params={"bounds": (-1, 1)})
    assert "unknown library 'opendp'" in str(info.value)
    assert "entry-point group 'audit.adapters'" in str(info.value)


def test_an_empty_group_names_the_group(monkeypatch):
    _register(monkeypatch, scan=False)
    assert available_targets() == {}
    with pytest.raises(ValueError, match=r"group 'audit.adapters' \(registered: \(none\)\)"):
        get_adapter("opendp")


def test_an_entry_point_replaces_the_package_adapter_of_its_name(monkeypatch):
    import tests.adapters.fake_adapter as fake

    ep = metadata.EntryPoint("opendp", "tests.adapters.fake_adapter:OPENDP", ENTRY_POINT_GROUP)
    monkeypatch.setattr(fake, "OPENDP", dataclasses.replace(fake.ADAPTER, library="opendp"),
                        raising=False)
    _register(monkeypatch, ep)
    assert get_adapter("opendp") is fake.OPENDP
    assert get_adapter("diffprivlib") is package_adapters()["diffprivlib"]


@pytest.mark.parametrize(("value", "needle"), [
    ("tests.adapters.no_such_module:ADAPTER", "cannot be loaded"),
    ("tests.adapters.fake_adapter:MISSING", "cannot be loaded"),
    ("tests.adapters.fake_adapter:NOT_AN_ADAPTER", "must be an audit.adapters.Adapter, got int"),
])
def test_a_broken_entry_point_is_one_clear_error(monkeypatch, value, needle):
    _register(monkeypatch, metadata.EntryPoint("brokenlib", value, ENTRY_POINT_GROUP))
    with pytest.raises(ValueError) as info:
        make_implementation("brokenlib:sum", epsilon=1.0)
    msg = str(info.value)
    assert needle in msg and "'brokenlib'" in msg and "'audit.adapters'" in msg, msg
    # the other libraries are unaffected: entry points load only when asked for
    assert make_implementation(USER, epsilon=1.0, params={"bound": 1.0, "scale": 1.0})


def test_an_entry_point_must_carry_its_library_name(monkeypatch):
    _register(monkeypatch, metadata.EntryPoint("otherlib", FAKE.value, ENTRY_POINT_GROUP))
    with pytest.raises(ValueError, match="declares library='fakelib'"):
        get_adapter("otherlib")


def test_pyproject_registers_every_adapter_of_this_package():
    """One entry-point line per adapter module: name = library, value = module:ADAPTER."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    declared = table[ENTRY_POINT_GROUP]
    own = package_adapters()
    assert set(declared) == set(own) >= {"diffprivlib", "opendp", "pipelinedp", "pydp"}
    for name, value in declared.items():
        module, _, attr = value.partition(":")
        assert getattr(__import__(module, fromlist=[attr]), attr) is own[name]


def test_example_lookup():
    ex = example("opendp:sum", "gaussian")
    assert ex.delta == 1e-6 and ex.params["noise"] == "gaussian"
    kw = ex.kwargs()
    kw["bounds"].append(9.0)  # a copy: the declared example is untouched
    assert example("opendp:sum", "gaussian").params["bounds"] == [-1.0, 1.0]
    with pytest.raises(ValueError, match="example must be one of 'impute', 'drop', 'gaussian'"):
        example("opendp:sum", "nope")
    with pytest.raises(ValueError, match="unknown function 'median'"):
        example("opendp:median", "impute")
