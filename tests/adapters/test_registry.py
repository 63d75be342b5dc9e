"""The registry: targets, errors, a user's own callable, libraries that are missing."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from audit.adapters import LIBRARIES, available_targets, make_implementation, seedable
from audit.model.implementation import Implementation

USER = "tests.adapters.example_mechanisms:noisy_sum"
X = np.arange(12, dtype=float).reshape(4, 3) / 20
X[1, 2] = np.nan


def test_available_targets_lists_every_library_and_function():
    targets = available_targets()
    assert set(targets) == {"diffprivlib", "opendp", "pipelinedp"} == set(LIBRARIES)
    assert set(targets["diffprivlib"]) >= {"nanmean", "nansum", "nanvar", "nanstd", "mean",
                                           "sum"}
    assert targets["opendp"] == ["sum", "mean"]
    assert targets["pipelinedp"] == ["sum", "mean", "count"]


@pytest.mark.parametrize(("target", "needles"), [
    ("nosuchlib:sum", ["unknown library 'nosuchlib'", "diffprivlib", "opendp", "pipelinedp"]),
    ("opendp:median", ["unknown function 'median'", "opendp:sum", "opendp:mean"]),
    ("diffprivlib:histogram", ["unknown function 'histogram'", "diffprivlib:nanmean"]),
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
])
def test_data_must_be_two_dimensional(target, params):
    impl = make_implementation(target, epsilon=1.0, params=params)
    with pytest.raises(ValueError, match=r"data must have shape \(n, d\)"):
        impl(np.zeros(5), np.random.default_rng(0))


@pytest.mark.parametrize("target", ["opendp:sum", "pipelinedp:sum"])
def test_column_beyond_the_data_is_named(target):
    impl = make_implementation(target, epsilon=1.0, params={"bounds": (-1, 1), "column": 5})
    with pytest.raises(ValueError, match="parameter 'column' is 5"):
        impl(X, np.random.default_rng(0))


@pytest.mark.parametrize(("module", "target", "params"), [
    ("diffprivlib.tools", "diffprivlib:nanmean", {"bounds": (-1, 1)}),
    ("opendp.prelude", "opendp:sum", {"bounds": (-1, 1)}),
    ("pipeline_dp", "pipelinedp:sum", {"bounds": (-1, 1)}),
])
def test_a_missing_library_names_the_extra(monkeypatch, module, target, params):
    monkeypatch.setitem(sys.modules, module, None)  # import of it raises ImportError
    with pytest.raises(ValueError) as info:
        make_implementation(target, epsilon=1.0, params=params)
    assert "pip install -e \".[libraries]\"" in str(info.value)
    assert target in str(info.value)


def test_adapters_import_without_their_libraries():
    code = ("import sys\n"
            "for m in ('diffprivlib', 'opendp', 'pipeline_dp', 'pydp', 'sklearn'):\n"
            "    sys.modules[m] = None\n"
            "import audit.adapters as a, audit.adapters.diffprivlib, audit.adapters.opendp, "
            "audit.adapters.pipelinedp\n"
            "print(sorted(a.available_targets()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=None)
    assert out.stdout.strip() == "['diffprivlib', 'opendp', 'pipelinedp']"


def test_seedable():
    assert seedable("diffprivlib:nansum") is True
    assert seedable("opendp:sum") is False
    assert seedable("pipelinedp:count") is False
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
