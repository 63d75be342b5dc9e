"""The contract every library adapter meets, one subclass per audited target and variant.

Each subclass records what its library does on data with missing values (``nan_*``: whether
the release is finite or NaN) — the behaviour the adapter modules' docstrings explain from
the libraries' sources — and the standard deviation its release must have on a fixed complete
dataset, derived from the sensitivity that library uses (not from its own calibration).

Spread check: m releases on one dataset; the sample variance s² must lie in
[σ_lo²(1 − t), σ_hi²(1 + t)] with t = 6·√((κ − 1)/m), κ the noise's kurtosis (6 Laplace, 3
Gaussian): s² has relative standard deviation √((κ − 1)/m), so a correct library fails with
probability ≈ 2·Φ(−6) ≈ 2e-9 (normal approximation). Seedable targets draw from a fixed seed
and are deterministic; the others are marked ``statistical``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.adapters import make_implementation, seedable
from audit.theory.calibration import gaussian_sigma_analytic

N, D = 40, 3
_rng = np.random.default_rng(20240601)
COMPLETE = _rng.uniform(-0.5, 0.5, size=(N, D))
NAN_ENTRIES = COMPLETE.copy()
NAN_ENTRIES[_rng.random((N, D)) < 0.2] = np.nan
NAN_ENTRIES[0] = COMPLETE[0]  # some NaN entries, no all-NaN record
NAN_RECORD = COMPLETE.copy()
NAN_RECORD[3] = np.nan
ALL_NAN = np.full((N, D), np.nan)
#: the spread dataset: one column, mean ≈ 0, far from the truncation bounds of diffprivlib
SPREAD_DATA = COMPLETE[:, :1] - COMPLETE[:, :1].mean()
#: the same with d = 3 entries per record (the record-level calibration of each adapter)
SPREAD_DATA_D3 = COMPLETE - COMPLETE.mean()

LAPLACE_KURTOSIS, GAUSSIAN_KURTOSIS = 6.0, 3.0
SQRT2 = math.sqrt(2.0)


class AdapterContract:
    """Subclasses set the target and what the library does; the tests are shared."""

    target: str
    params: dict = {}
    epsilon: float = 1.0
    delta: float = 0.0
    module: str  # the library's import name, for importorskip
    output_shape: tuple = ()  # () scalar, (D,) a per-column vector
    #: behaviour on data with some NaN entries / one all-NaN record / all NaN: "finite" or "nan"
    nan_entries = "finite"
    nan_record = "finite"
    nan_dataset = "finite"
    #: (σ_lo, σ_hi) of the release on ``spread_data`` (ε = 1), None: not checked
    spread: tuple[float, float] | None = None
    spread_data = SPREAD_DATA
    kurtosis = LAPLACE_KURTOSIS
    spread_trials = 3000

    @pytest.fixture(autouse=True)
    def _library(self):
        pytest.importorskip(self.module)

    def make(self, **params):
        return make_implementation(self.target, epsilon=self.epsilon, delta=self.delta,
                                   params={**self.params, **params})

    def check_output(self, out, expected: str):
        if self.output_shape == ():
            assert isinstance(out, float), type(out)
        else:
            assert isinstance(out, np.ndarray) and out.shape == self.output_shape
            assert out.dtype == np.float64
        if expected == "finite":
            assert np.all(np.isfinite(out)), out
        else:
            assert np.all(np.isnan(out)), out

    def test_finite_output_on_complete_data(self):
        self.check_output(self.make()(COMPLETE, np.random.default_rng(1)), "finite")

    @pytest.mark.parametrize(("data", "attr"), [(NAN_ENTRIES, "nan_entries"),
                                                (NAN_RECORD, "nan_record"),
                                                (ALL_NAN, "nan_dataset")],
                             ids=["nan-entries", "all-nan-record", "all-nan-dataset"])
    def test_data_with_nan(self, data, attr):
        impl = self.make()
        self.check_output(impl(data.copy(), np.random.default_rng(2)), getattr(self, attr))

    def test_does_not_modify_the_data(self):
        data = NAN_ENTRIES.copy()
        self.make()(data, np.random.default_rng(3))
        np.testing.assert_array_equal(data, NAN_ENTRIES)

    def test_can_be_sent_to_worker_processes(self):
        # the process pool pickles the implementation with cloudpickle (as joblib's loky does)
        import cloudpickle

        impl = self.make()
        impl(COMPLETE, np.random.default_rng(4))  # builds any per-shape cache first
        copy = cloudpickle.loads(cloudpickle.dumps(impl))
        assert copy.claim == impl.claim and copy.name == impl.name
        self.check_output(copy(COMPLETE, np.random.default_rng(5)), "finite")

    def test_claim_is_what_was_asked(self):
        impl = self.make()
        assert (impl.claim.epsilon, impl.claim.delta) == (self.epsilon, self.delta)
        assert impl.name == self.target and impl.claim.note

    def test_seeding(self):
        impl = self.make()
        a = impl(COMPLETE, np.random.default_rng(7))
        b = impl(COMPLETE, np.random.default_rng(7))
        if seedable(self.target):
            np.testing.assert_array_equal(a, b)
            c = impl(COMPLETE, np.random.default_rng(8))
            assert np.all(a != c)
        else:  # the library draws from its own CSPRNG: the seed does not reproduce
            assert np.all(a != b)

    def test_spread_matches_the_claimed_noise(self):
        if self.spread is None:
            pytest.skip("no closed-form spread for this target")
        impl = self.make()
        rng = np.random.default_rng(11)
        m = self.spread_trials
        out = np.array([impl(self.spread_data, rng) for _ in range(m)])
        s2 = out.var(ddof=1)
        t = 6.0 * math.sqrt((self.kurtosis - 1.0) / m)
        lo, hi = self.spread
        assert lo**2 * (1 - t) <= s2 <= hi**2 * (1 + t), (math.sqrt(s2), self.spread)


def laplace_std(sensitivity: float, epsilon: float = 1.0) -> tuple[float, float]:
    """σ of Laplace noise calibrated to ``sensitivity`` at ε: √2·Δ/ε (both ends)."""
    s = SQRT2 * sensitivity / epsilon
    return s, s


# ---------------------------------------------------------------- diffprivlib (seedable)
# Sensitivities diffprivlib uses (tools/utils.py): sum hi − lo = 2; mean (hi − lo)/N = 2/40.


class TestDiffprivlibNanmean(AdapterContract):
    target, module = "diffprivlib:nanmean", "diffprivlib"
    params = {"bounds": (-1, 1)}
    nan_dataset = "nan"  # np.nanmean of nothing is NaN; LaplaceTruncated passes it through
    spread = laplace_std(2 / N)


class TestDiffprivlibNanmeanPerColumn(TestDiffprivlibNanmean):
    params = {"bounds": (-1, 1), "axis": 0}
    output_shape = (D,)
    spread = None  # d = 1 in the spread data: the scalar case above


class TestDiffprivlibNansum(AdapterContract):
    target, module = "diffprivlib:nansum", "diffprivlib"
    params = {"bounds": (-1, 1)}
    spread = laplace_std(2.0)


class TestDiffprivlibNansumD3(TestDiffprivlibNansum):
    """d = 3: diffprivlib gets ε/3 per entry, so the scale is 2/(1/3) = 6."""

    spread_data = SPREAD_DATA_D3
    spread = laplace_std(6.0)


class TestDiffprivlibNanvar(AdapterContract):
    target, module = "diffprivlib:nanvar", "diffprivlib"
    params = {"bounds": (-1, 1)}
    nan_dataset = "nan"  # LaplaceBoundedDomain.randomise returns NaN for NaN


class TestDiffprivlibNanstd(TestDiffprivlibNanvar):
    target = "diffprivlib:nanstd"


class TestDiffprivlibMean(AdapterContract):
    target, module = "diffprivlib:mean", "diffprivlib"
    params = {"bounds": (-1, 1)}
    nan_entries = nan_record = nan_dataset = "nan"  # np.mean propagates NaN
    spread = laplace_std(2 / N)


class TestDiffprivlibSum(AdapterContract):
    target, module = "diffprivlib:sum", "diffprivlib"
    params = {"bounds": (-1, 1)}
    nan_entries = nan_record = nan_dataset = "nan"  # np.sum propagates NaN
    spread = laplace_std(2.0)


class TestDiffprivlibVar(TestDiffprivlibNanvar):
    target = "diffprivlib:var"
    nan_entries = nan_record = nan_dataset = "nan"


class TestDiffprivlibStd(TestDiffprivlibVar):
    target = "diffprivlib:std"


# ---------------------------------------------------------------- OpenDP (not seedable)
# Substitution of a one-entry record is symmetric distance 2. Sized sum (impute): 2/2·(hi − lo)
# = 2; unsized sum (drop): 2·max(hi − lo, |lo|, |hi|) = 4; sized mean: 2/N; resize doubles
# the distance, so the dropped-then-resized mean: 4/N.


@pytest.mark.statistical
class TestOpendpSumImpute(AdapterContract):
    target, module = "opendp:sum", "opendp"
    params = {"bounds": (-1.0, 1.0)}
    spread = laplace_std(2.0)


@pytest.mark.statistical
class TestOpendpSumDrop(TestOpendpSumImpute):
    params = {"bounds": (-1.0, 1.0), "nan": "drop"}
    spread = laplace_std(4.0)


@pytest.mark.statistical
class TestOpendpSumImputeD3(TestOpendpSumImpute):
    """d = 3: a record is symmetric distance 6, the sized sum's sensitivity 6/2·2 = 6."""

    spread_data = SPREAD_DATA_D3
    spread = laplace_std(6.0)


@pytest.mark.statistical
class TestOpendpMeanImpute(AdapterContract):
    target, module = "opendp:mean", "opendp"
    params = {"bounds": (-1.0, 1.0), "constant": 0.25}
    spread = laplace_std(2 / N)


@pytest.mark.statistical
class TestOpendpMeanDrop(TestOpendpMeanImpute):
    params = {"bounds": (-1.0, 1.0), "nan": "drop"}
    spread = laplace_std(4 / N)


@pytest.mark.statistical
class TestOpendpSumGaussian(TestOpendpSumImpute):
    params = {"bounds": (-1.0, 1.0), "noise": "gaussian", "column": 0}
    delta = 1e-6
    kurtosis = GAUSSIAN_KURTOSIS
    # at least the analytic-Gaussian σ for Δ = 2 (no smaller σ is (1, 1e-6)-DP), at most the
    # classical 2·√(2 ln(1.25/δ))/ε (OpenDP converts zCDP to (ε, δ), between the two)
    spread = (gaussian_sigma_analytic(2.0, 1.0, 1e-6),
              2.0 * math.sqrt(2 * math.log(1.25 / 1e-6)))


# ---------------------------------------------------------------- PipelineDP (not seedable)
# PipelineDP is run with ε/2 (add/remove → substitution); add/remove sensitivity of a
# one-value record: sum max(|lo|, |hi|) = 1, count 1, so Laplace scale 1/(ε/2) = 2.


@pytest.mark.statistical
class TestPipelinedpSum(AdapterContract):
    target, module = "pipelinedp:sum", "pipeline_dp"
    params = {"bounds": (-1.0, 1.0)}
    nan_entries = nan_record = nan_dataset = "nan"  # np.clip(...).sum() propagates NaN
    spread = laplace_std(1.0, 0.5)
    spread_trials = 2000


@pytest.mark.statistical
class TestPipelinedpSumDrop(TestPipelinedpSum):
    params = {"bounds": (-1.0, 1.0), "nan": "drop"}
    nan_entries = nan_record = nan_dataset = "finite"


@pytest.mark.statistical
class TestPipelinedpSumD3(TestPipelinedpSum):
    """d = 3: three contributions per privacy unit, add/remove sensitivity 3, scale 3/(ε/2)."""

    spread_data = SPREAD_DATA_D3
    spread = laplace_std(3.0, 0.5)


@pytest.mark.statistical
class TestPipelinedpSumGaussian(TestPipelinedpSum):
    params = {"bounds": (-1.0, 1.0), "noise": "gaussian"}
    delta = 1e-6
    kurtosis = GAUSSIAN_KURTOSIS
    # PyDP's σ for (ε/2, δ/(1 + e^(ε/2))) at l2 sensitivity 1: at least the analytic σ of
    # those parameters, at most the classical one
    _d = 1e-6 / (1 + math.exp(0.5))
    spread = (gaussian_sigma_analytic(1.0, 0.5, _d), math.sqrt(2 * math.log(1.25 / _d)) / 0.5)


@pytest.mark.statistical
class TestPipelinedpMean(TestPipelinedpSum):
    target = "pipelinedp:mean"
    spread = None  # a ratio of two noisy values: no closed form


@pytest.mark.statistical
class TestPipelinedpMeanDrop(TestPipelinedpMean):
    params = {"bounds": (-1.0, 1.0), "nan": "drop"}
    nan_entries = nan_record = nan_dataset = "finite"


@pytest.mark.statistical
class TestPipelinedpCount(AdapterContract):
    target, module = "pipelinedp:count", "pipeline_dp"
    params = {}
    spread = laplace_std(1.0, 0.5)  # NaN values are counted: n·k whatever the data
    spread_trials = 2000


@pytest.mark.statistical
class TestPipelinedpCountDrop(TestPipelinedpCount):
    params = {"nan": "drop"}
