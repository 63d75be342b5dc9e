"""The contract every library adapter meets, run on every example of every registered target.

The cases are the examples the adapters declare (``Target.examples``: the same parameters the
benchmark and ``experiments/library_audit.py`` use). What each release must do is written here,
independently of the adapters: on data with missing values, the finite-or-NaN behaviour of the
NaN semantics the adapter declares (``NAN_BEHAVIOUR``, the behaviour the adapter modules'
docstrings explain from the libraries' sources), and the standard deviation the release must
have on a fixed complete dataset (``EXPECTED``), derived from the sensitivity that library
uses (not from its own calibration). A registered example without an entry in ``EXPECTED``
fails ``test_every_registered_target_has_a_contract_case``.

Spread check: m releases on one dataset; the sample variance s² (of a vector release, the
components' sample variances averaged) must lie in
[σ_lo²(1 − t), σ_hi²(1 + t)] with t = 6·√((κ − 1)/m), κ the noise's kurtosis (6 Laplace, 3
Gaussian): s² has relative standard deviation √((κ − 1)/m), so a correct library fails with
probability ≈ 2·Φ(−6) ≈ 2e-9 (normal approximation). Seedable targets draw from a fixed seed
and are deterministic; the others are marked ``statistical``.
"""

from __future__ import annotations

import math
from importlib import metadata
from typing import NamedTuple

import numpy as np
import pytest
from scipy.optimize import brentq

from audit.adapters import (
    ENTRY_POINT_GROUP,
    Adapter,
    Example,
    NanSemantics,
    available_targets,
    examples,
    get_adapter,
    make_implementation,
    seedable,
)
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


class Expect(NamedTuple):
    """What one example's release must look like (derived from its library's source, not from
    the adapter): ``spread`` (σ_lo, σ_hi) on ``SPREAD_DATA`` at ε = 1 (None: no closed form),
    ``vector`` a vector release of shape (``length``,) (per column: D), ``trials`` for the
    spread check (1,200 calls: the variance within ±6 standard errors, ±39 % for Laplace
    noise, still four times off for a scale twice or half the claimed one)."""

    spread: tuple[float, float] | None
    vector: bool = False
    trials: int = 2000
    length: int = D


def laplace_std(sensitivity: float, epsilon: float = 1.0) -> tuple[float, float]:
    """σ of Laplace noise calibrated to ``sensitivity`` at ε: √2·Δ/ε (both ends)."""
    s = SQRT2 * sensitivity / epsilon
    return s, s


def tumult_rho(epsilon: float = 1.0, delta: float = 1e-5) -> float:
    """The ρ whose zCDP → (ε, δ) conversion in Tumult Core (``RhoZCDPToApproxDP``: ρ +
    2√(ρ ln(1/δ)) = ε) gives (ε/2, δ/(1 + e^{ε/2})), the budget per row (or ID) added or
    removed for (ε, δ) per substitution; solved by bisection, not by the adapter's formula."""
    eps, dlt = epsilon / 2, delta / (1 + math.exp(epsilon / 2))
    return brentq(lambda r: r + 2 * math.sqrt(r * math.log(1 / dlt)) - eps, 0.0, eps,
                  xtol=1e-18, rtol=1e-15)


def tumult_gaussian_std(sensitivity: float) -> float:
    """σ of Tumult's Gaussian noise at ``tumult_rho()``: variance Δ²/(2ρ)."""
    return sensitivity / math.sqrt(2 * tumult_rho())


#: what each library does on the three NaN datasets (entries, one record, all), by the NaN
#: semantics its adapter declares: the contract tests hold the declaration to the behaviour
NAN_BEHAVIOUR = {
    NanSemantics.PROPAGATES: ("nan", "nan", "nan"),
    NanSemantics.SKIPS: ("finite", "finite", "nan"),  # nothing observed: NaN
    NanSemantics.READ_AS_ZERO: ("finite", "finite", "finite"),
    NanSemantics.IMPUTES_CONSTANT: ("finite", "finite", "finite"),
    NanSemantics.DROPS: ("finite", "finite", "finite"),
    NanSemantics.COUNTED: ("finite", "finite", "finite"),
    # outside the library's guarantee: what it does is per library; the one such target,
    # OpenDP's sum on a declared NaN-free domain, reads the NaN sum as 0 (#2935)
    NanSemantics.UNCHECKED: ("finite", "finite", "finite"),
    # dpmm: statistics of a synthetic table (its all-NaN table is dpmm's crash, NAN_CRASHES)
    NanSemantics.SETS_DOMAIN: ("finite", "finite", "finite"),
    # imputers: every NaN filled from the other records; nothing observed: a constant
    NanSemantics.IMPUTES_FROM_DATA: ("finite", "finite", "finite"),
}

# diffprivlib (seedable). Sensitivities diffprivlib uses (tools/utils.py): sum hi − lo = 2;
# mean (hi − lo)/N = 2/40.
# OpenDP. Substitution of a one-entry record is symmetric distance 2. Sized sum (impute):
# 2/2·(hi − lo) = 2; unsized sum (drop): 2·max(hi − lo, |lo|, |hi|) = 4; sized mean: 2/N;
# resize doubles the distance, so the dropped-then-resized mean: 4/N. Gaussian: at least the
# analytic-Gaussian σ for Δ = 2 (no smaller σ is (1, 1e-6)-DP), at most the classical
# 2·√(2 ln(1.25/δ))/ε (OpenDP converts zCDP to (ε, δ), between the two).
# PipelineDP is run with ε/2 (add/remove → substitution); add/remove sensitivity of a
# one-value record: sum max(|lo|, |hi|) = 1, count 1, so Laplace scale 1/(ε/2) = 2. Gaussian:
# PyDP's σ for (ε/2, δ/(1 + e^(ε/2))) at l2 sensitivity 1, between the analytic and the
# classical σ of those parameters. NaN values are counted: the count is n·k whatever the data.
# python-dp (pydp) is run with ε/2 too, one record a user of linf = 1 value: Laplace scale
# linf·max(|lo|, |hi|)/(ε/2) for the sum (bounds (2, 3): 3/(1/2)), linf/(ε/2) for the count.
# diffprivlib's nansum with bounds (2, 3) truncates at lo·N = the clipped sum of SPREAD_DATA:
# no closed form; histogram (4 bins), quantiles, variance, percentile: none either.
_PDP_DELTA = 1e-6 / (1 + math.exp(0.5))
EXPECTED: dict[str, Expect] = {
    "diffprivlib:nanmean[default]": Expect(laplace_std(2 / N)),
    "diffprivlib:nanmean[per-column]": Expect(None, vector=True),  # d = 1: the scalar case
    "diffprivlib:nansum[default]": Expect(laplace_std(2.0)),
    "diffprivlib:nanvar[default]": Expect(None),
    "diffprivlib:nanstd[default]": Expect(None),
    "diffprivlib:mean[default]": Expect(laplace_std(2 / N)),
    "diffprivlib:sum[default]": Expect(laplace_std(2.0)),
    "diffprivlib:var[default]": Expect(None),
    "diffprivlib:std[default]": Expect(None),
    "diffprivlib:nansum[bounds-exclude-zero]": Expect(None),
    "diffprivlib:quantile[default]": Expect(None),
    "diffprivlib:median[default]": Expect(None),
    "diffprivlib:percentile[default]": Expect(None),
    "diffprivlib:histogram[default]": Expect(None, vector=True, length=4),
    # histogramdd: 2 bins per column, D = 3 columns: 8 cells (geometric noise truncated at 0)
    "diffprivlib:histogramdd[default]": Expect(None, vector=True, length=8),
    # count_nonzero counts every entry of SPREAD_DATA: the release sits at its truncation
    # bound N, a clamped geometric whose kurtosis (13 at ε = 1) is outside the spread check's
    # Laplace tolerance; its law away from the bounds is checked in test_diffprivlib.py
    "diffprivlib:count_nonzero[default]": Expect(None),
    "diffprivlib:count_nonzero[per-column]": Expect(None, vector=True),
    "opendp:sum[impute]": Expect(laplace_std(2.0)),
    "opendp:sum[drop]": Expect(laplace_std(4.0)),
    "opendp:sum[unchecked]": Expect(laplace_std(2.0)),  # the sized sum, as impute
    "opendp:sum[gaussian]": Expect((gaussian_sigma_analytic(2.0, 1.0, 1e-6),
                                    2.0 * math.sqrt(2 * math.log(1.25 / 1e-6)))),
    "opendp:mean[impute]": Expect(laplace_std(2 / N)),
    "opendp:mean[drop]": Expect(laplace_std(4 / N)),
    # count of non-null entries (drop_null, count: stability 1 each), integer Laplace noise of
    # scale 2/ε; its σ is √(2q)/(1 − q), q = e^(−1/2) (discrete Laplace, not √2·2)
    "opendp:count[cast]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2),
    "opendp:count[drop]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2),
    # the exponential mechanism's choice among candidates: no closed-form spread
    "opendp:quantile[median-impute]": Expect(None),
    "opendp:quantile[q90-drop]": Expect(None),
    # count by categories: a substitution moves one unit between two counts (L1 distance 2 at
    # d_in = 2), integer Laplace of scale 2/ε on each count, σ as the count's; 4 counts (3
    # edges: 4 bins; 3 categories and the outside count)
    "opendp:count_by_categories[find-bin]": Expect(
        (math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2, vector=True, length=4),
    "opendp:count_by_categories[cast]": Expect(
        (math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2, vector=True, length=4),
    "opendp:count_by_categories[drop]": Expect(
        (math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2, vector=True, length=4),
    # OpenDP's Polars API: no public length, so the float sum's sensitivity at d_in = 2 is
    # 2·max(|lo|, |hi|) = 2 whatever the handling; the mean is a ratio of two noisy values;
    # len is an integer count (stability d_in = 2) with integer Laplace noise of scale 2/ε
    "opendp-polars:sum[fill-null]": Expect(laplace_std(2.0), trials=1200),
    "opendp-polars:sum[fill-nan]": Expect(laplace_std(2.0), trials=1200),
    "opendp-polars:sum[keep]": Expect(laplace_std(2.0), trials=1200),
    "opendp-polars:sum[drop]": Expect(laplace_std(2.0), trials=1200),
    "opendp-polars:mean[fill-null]": Expect(None),
    "opendp-polars:mean[keep-nan]": Expect(None),
    "opendp-polars:len[keep]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2,
                                      trials=1200),
    "opendp-polars:len[drop]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2,
                                      trials=1200),
    # the exponential mechanism's choice among candidates: no closed-form spread
    "opendp-polars:quantile[fill-null]": Expect(None),
    "opendp-polars:quantile[keep-nan]": Expect(None),
    "opendp-polars:median[keep]": Expect(None),
    # one sum per key (d keys; SPREAD_DATA has d = 1): contributions 2d, each sum's Laplace
    # scale 2d·max(|lo|, |hi|)/ε, 2 for d = 1
    "opendp-polars:group_by_sum[fill-null]": Expect(laplace_std(2.0), vector=True,
                                                    trials=1200),
    "opendp-polars:group_by_sum[keep-nan]": Expect(laplace_std(2.0), vector=True, trials=1200),
    "pipelinedp:sum[propagate]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pipelinedp:sum[drop]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pipelinedp:sum[gaussian]": Expect((gaussian_sigma_analytic(1.0, 0.5, _PDP_DELTA),
                                        math.sqrt(2 * math.log(1.25 / _PDP_DELTA)) / 0.5),
                                       trials=1200),
    "pipelinedp:mean[propagate]": Expect(None),  # a ratio of two noisy values: no closed form
    "pipelinedp:mean[drop]": Expect(None),
    "pipelinedp:count[propagate]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pipelinedp:count[drop]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pipelinedp:variance[propagate]": Expect(None),
    "pipelinedp:variance[drop]": Expect(None),
    "pipelinedp:percentile[median]": Expect(None),
    # one per privacy unit (record) whatever its values: linf 1, l0 1, Laplace scale 1/(ε/2)
    "pipelinedp:privacy_id_count[propagate]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pipelinedp:privacy_id_count[drop]": Expect(laplace_std(1.0, 0.5), trials=1200),
    # the number of partitions kept: no closed form (a sum of Bernoulli draws)
    "pipelinedp:select_partitions[propagate]": Expect(None),
    "pipelinedp:select_partitions[shared]": Expect(None),
    # a declared defect (Target.defect): every call raises LibraryDefect (DEFECT_CASES below)
    "pipelinedp:vector_sum[linf]": Expect(None, vector=True),
    "pydp:sum[default]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pydp:sum[bounds-exclude-zero]": Expect(laplace_std(3.0, 0.5), trials=1200),
    "pydp:mean[default]": Expect(None),  # noisy sum over noisy count, clamped
    "pydp:variance[default]": Expect(None),
    "pydp:std[default]": Expect(None),
    "pydp:count[default]": Expect(laplace_std(1.0, 0.5), trials=1200),  # rounded: +1/12
    # the order statistics are noisy Bayesian searches: no closed-form spread (their law is
    # checked against the library called directly in test_pydp.py)
    "pydp:median[default]": Expect(None),
    "pydp:percentile[default]": Expect(None),
    "pydp:max[default]": Expect(None),
    "pydp:min[default]": Expect(None),
    # SmartNoise SQL (isolated) is run with ε/2 per row added or removed, one row per record;
    # its SUM's sensitivity is max(|lo|, |hi|): Laplace scale 1/(ε/2), bounds (2, 3): 3/(ε/2)
    # (SPREAD_DATA is clamped up to 2: the sum is 2n, the spread the noise's); AVG is a
    # ratio of two noisy values, COUNT truncated toward 0: no closed form
    "smartnoise-sql:sum[default]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "smartnoise-sql:sum[bounds-exclude-zero]": Expect(laplace_std(3.0, 0.5), trials=1200),
    "smartnoise-sql:avg[default]": Expect(None),
    "smartnoise-sql:count[default]": Expect(None),
    # Tumult Analytics (isolated) is run with PureDPBudget(ε/2) under AddOneRow, one row per
    # record: its sum's sensitivity is max(|lo|, |hi|) (SumGrouped), Laplace scale 1/(ε/2),
    # bounds (2, 3): 3/(ε/2); the count is a row count with two-sided geometric noise of scale
    # 1/(ε/2) = 2 (the same σ as OpenDP's integer Laplace); the average is a ratio of two noisy
    # values and the quantile an exponential mechanism: no closed form
    "tumult:sum[default]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "tumult:sum[bounds-exclude-zero]": Expect(laplace_std(3.0, 0.5), trials=1200),
    "tumult:sum[missing-as-nan]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "tumult:sum[replace]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "tumult:count[default]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2,
                                    trials=1200),
    "tumult:count[drop]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2,
                                 trials=1200),
    "tumult:average[default]": Expect(None),
    "tumult:quantile[median]": Expect(None),
    # with IDs (AddRowsWithID, MaxRowsPerID(k), k records per ID): the sensitivity times k;
    # Gaussian: RhoZCDPBudget(ρ) with ρ Tumult Core's zCDP → (ε/2, δ/(1 + e^{ε/2})) inverse
    # (tumult_rho), variance Δ²/(2ρ) (a discrete Gaussian's for the count: the same σ to
    # 1e-40 at σ² ≈ 100); the average: a ratio of two noisy values
    "tumult:sum[gaussian]": Expect((tumult_gaussian_std(1.0),) * 2, trials=1200),
    "tumult:sum[by-id]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "tumult:sum[by-id-2-rows]": Expect(laplace_std(2.0, 0.5), trials=1200),
    "tumult:count[gaussian]": Expect((tumult_gaussian_std(1.0),) * 2, trials=1200),
    "tumult:count[by-id]": Expect((math.sqrt(2 * math.exp(-0.5)) / (1 - math.exp(-0.5)),) * 2,
                                  trials=1200),
    "tumult:average[gaussian]": Expect(None),
    # dpmm (isolated) releases two statistics of a synthetic table (the NaN fraction, the mean
    # of the other rows): no closed-form spread
    "dpmm:mst[default]": Expect(None, vector=True, length=2),
    "dpmm:privbayes[default]": Expect(None, vector=True, length=2),
    # imputation (audit.adapters.imputation): complete data leave nothing to impute, so the
    # release is the sum plus Laplace noise of scale (hi − lo)/ε = 2, the private imputer's at
    # the half ε/2 its release keeps; diffprivlib's sum truncates at ±40, far from the
    # sum of SPREAD_DATA (≈ 0)
    **{f"imputation:{f}[{e}]": Expect(laplace_std(2.0, 0.5 if f == "private_mean" else 1.0))
       for f in ("mean", "median", "most_frequent", "knn", "iterative", "hot_deck",
                 "private_mean") for e in ("default", "diffprivlib")},
    "imputation:private_mean[public-count]": Expect(laplace_std(2.0, 0.5)),
    "imputation:private_mean[diffprivlib-mean]": Expect(laplace_std(2.0, 0.5)),
}
#: a library that fails on one of the NaN datasets (a crash, not a release), by library and
#: dataset, with its error: dpmm drops a one-valued column (all NaN is one value) from its
#: model, and a table with no other column leaves its binner nothing to encode
#: (processing/table_binner.py:327, ``pd.concat`` of no column)
NAN_CRASHES = {("dpmm", "all-nan-dataset"): "No objects to concatenate"}
#: the record-level calibration with d = 3 entries per record (``SPREAD_DATA_D3``): diffprivlib
#: gets ε/3 per entry, scale 2/(1/3) = 6; OpenDP's record is symmetric distance 6, the sized
#: sum's sensitivity 6/2·2 = 6 (the Polars sum's, without a public length, 6·max(|lo|, |hi|)
#: = 6, each of the group_by's 3 sums too); PipelineDP has three contributions per privacy
#: unit, add/remove sensitivity 3, scale 3/(ε/2); python-dp the same with linf_sensitivity = 3
EXPECTED_D3: dict[str, Expect] = {
    "diffprivlib:nansum[default]": Expect(laplace_std(6.0)),
    "opendp:sum[impute]": Expect(laplace_std(6.0)),
    "opendp-polars:sum[fill-null]": Expect(laplace_std(6.0), trials=1200),
    "opendp-polars:group_by_sum[fill-null]": Expect(laplace_std(6.0), vector=True, trials=1200),
    "pipelinedp:sum[propagate]": Expect(laplace_std(3.0, 0.5), trials=1200),
    # a privacy unit is counted once, not once per value: still linf 1 with three values
    "pipelinedp:privacy_id_count[propagate]": Expect(laplace_std(1.0, 0.5), trials=1200),
    "pydp:sum[default]": Expect(laplace_std(3.0, 0.5), trials=1200),
}


class Case(NamedTuple):
    """One registered example: the target, its adapter and the example."""

    target: str
    adapter: Adapter
    example: Example

    @property
    def id(self) -> str:
        return f"{self.target}[{self.example.name}]"

    @property
    def defect(self) -> str:
        """The library defect the target declares ('' for none)."""
        return self.adapter.target(self.target.partition(":")[2]).defect

    @property
    def nan(self) -> NanSemantics:
        return self.adapter.target(self.target.partition(":")[2]).nan_semantics(
            self.example.params)

    def make(self):
        """The example's implementation; an isolated one is kept until another isolated case
        is made (its worker's start-up, Spark's for Tumult, takes seconds, and its releases
        keep no state; the ``case`` fixture's module scope runs a case's tests together)."""
        if self.adapter.isolated and self.id in _MADE:
            return _MADE[self.id]
        impl = make_implementation(self.target, epsilon=self.example.epsilon,
                                   delta=self.example.delta, params=self.example.kwargs())
        if self.adapter.isolated:
            for old in _MADE.values():
                old.close()
            _MADE.clear()
            _MADE[self.id] = impl
        return impl


#: the isolated implementation of the last isolated case made (see ``Case.make``)
_MADE: dict[str, object] = {}


def registered_cases() -> list[Case]:
    """Every example of every registered adapter (the parametrisation below)."""
    return [Case(target, get_adapter(target.partition(":")[0]), ex) for target, ex in examples()]


def _params(cases: list[Case]) -> list:
    """The cases as parameters: an unseedable library's are ``statistical``, an isolated
    library's ``isolated`` (their environment is built from the package registry)."""
    return [pytest.param(c, id=c.id,
                         marks=(() if c.adapter.seedable else (pytest.mark.statistical,))
                         + ((pytest.mark.isolated,) if c.adapter.isolated else ()))
            for c in cases]


#: a target that declares a library defect (``Target.defect``) cannot release: its cases
#: are held to the defect instead (``test_a_declared_defect_is_raised_on_every_call``), and
#: a library release that fixes it fails that test, which says to remove the declaration
CASES = [c for c in registered_cases() if not c.defect]
DEFECT_CASES = [c for c in registered_cases() if c.defect]


def _available(case: Case, request) -> Case:
    """The case, its library importable here or its isolated environment's cache set up."""
    if case.adapter.isolated:
        request.getfixturevalue("isolated_cache")
    else:
        pytest.importorskip(case.adapter.import_name)
    return case


@pytest.fixture(params=_params(CASES), scope="module")
def case(request) -> Case:
    return _available(request.param, request)


def check_output(case: Case, out, expected: str) -> None:
    if EXPECTED[case.id].vector:
        assert isinstance(out, np.ndarray) and out.shape == (EXPECTED[case.id].length,)
        assert out.dtype == np.float64
    else:
        assert isinstance(out, float), type(out)
    if expected == "finite":
        assert np.all(np.isfinite(out)), out
    else:
        assert np.all(np.isnan(out)), out


def test_every_registered_target_has_a_contract_case():
    """Each registered example is a case below, and has its expectations written here."""
    registered = {c.id for c in registered_cases()}
    assert registered == set(EXPECTED), (sorted(registered - set(EXPECTED)),
                                         sorted(set(EXPECTED) - registered))
    targets = {c.target for c in CASES + DEFECT_CASES}
    assert targets == {f"{lib}:{f}" for lib, fs in available_targets().items() for f in fs}
    assert set(EXPECTED_D3) <= registered


def test_a_target_without_contract_expectations_is_caught(monkeypatch):
    """A new adapter registered through its entry point shows up in the cases, without an
    expectation, so the completeness test above would fail for it."""
    import tests.adapters.fake_adapter as fake

    real = metadata.entry_points

    def entry_points(**kw):
        if kw.get("group") == ENTRY_POINT_GROUP:
            return metadata.EntryPoints([metadata.EntryPoint(
                "fakelib", "tests.adapters.fake_adapter:ADAPTER", ENTRY_POINT_GROUP)])
        return real(**kw)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    missing = {c.id for c in registered_cases()} - set(EXPECTED)
    assert missing == {f"fakelib:{t.function}[{e.name}]" for t in fake.ADAPTER.targets
                       for e in t.examples}


@pytest.mark.parametrize("defect_case", _params(DEFECT_CASES))
def test_a_declared_defect_is_raised_on_every_call(defect_case, request):
    """The library still fails as its target declares: on complete data, NaN entries and an
    all-NaN dataset alike, a ``LibraryDefect`` naming the library's version (not a traceback
    of the library's own error, not a release)."""
    from audit.adapters import LibraryDefect

    case = _available(defect_case, request)
    impl = case.make()
    assert (impl.claim.epsilon, impl.claim.delta) == (case.example.epsilon, case.example.delta)
    version = metadata.version(case.adapter.distribution)
    for data in (COMPLETE, NAN_ENTRIES, ALL_NAN):
        with pytest.raises(LibraryDefect, match=f"{case.target}: .*{version}") as caught:
            impl(data.copy(), np.random.default_rng(0))
        assert caught.value.__cause__ is not None  # the library's own exception, kept


def test_finite_output_on_complete_data(case):
    check_output(case, case.make()(COMPLETE, np.random.default_rng(1)), "finite")


NAN_DATASETS = ("nan-entries", "all-nan-record", "all-nan-dataset")


@pytest.mark.parametrize(("data", "which"), [(NAN_ENTRIES, 0), (NAN_RECORD, 1), (ALL_NAN, 2)],
                         ids=NAN_DATASETS)
def test_data_with_nan_behaves_as_declared(case, data, which):
    crash = NAN_CRASHES.get((case.adapter.library, NAN_DATASETS[which]))
    if crash is not None:
        with pytest.raises(RuntimeError, match=crash):
            case.make()(data.copy(), np.random.default_rng(2))
        return
    out = case.make()(data.copy(), np.random.default_rng(2))
    check_output(case, out, NAN_BEHAVIOUR[case.nan][which])


def test_does_not_modify_the_data(case):
    data = NAN_ENTRIES.copy()
    case.make()(data, np.random.default_rng(3))
    np.testing.assert_array_equal(data, NAN_ENTRIES)


def test_can_be_sent_to_worker_processes(case):
    # the process pool pickles the implementation with cloudpickle (as joblib's loky does)
    import cloudpickle

    impl = case.make()
    impl(COMPLETE, np.random.default_rng(4))  # builds any per-shape cache first
    copy = cloudpickle.loads(cloudpickle.dumps(impl))
    assert copy.claim == impl.claim and copy.name == impl.name
    check_output(case, copy(COMPLETE, np.random.default_rng(5)), "finite")


def test_claim_is_what_was_asked(case):
    impl = case.make()
    assert (impl.claim.epsilon, impl.claim.delta) == (case.example.epsilon, case.example.delta)
    assert impl.name == case.target and impl.claim.note


def test_seeding(case):
    impl = case.make()
    a = impl(COMPLETE, np.random.default_rng(7))
    b = impl(COMPLETE, np.random.default_rng(7))
    assert seedable(case.target) is case.adapter.seedable
    if case.adapter.seedable:
        np.testing.assert_array_equal(a, b)
        # another seed, another draw: a count may repeat (a histogram's cell, or
        # count_nonzero clamped at its bound N·d with probability 1/(1 + e^(−ε/d)) ≈ 0.58
        # on COMPLETE), so eight other seeds, not all equal to the first
        others = [impl(COMPLETE, np.random.default_rng(s)) for s in range(8, 16)]
        assert not all(np.array_equal(a, c) for c in others)
    else:  # the library draws from its own CSPRNG: the seed does not reproduce (ten draws:
        # a rounded release, python-dp's count, repeats a value with probability ≈ 1/4)
        outs = [a, b, *(impl(COMPLETE, np.random.default_rng(7)) for _ in range(8))]
        assert len({np.asarray(o).tobytes() for o in outs}) > 1, outs


def _check_spread(case: Case, expect: Expect, data: np.ndarray) -> None:
    if expect.spread is None:
        pytest.skip("no closed-form spread for this target")
    assert case.example.epsilon == 1.0  # the expectations are for ε = 1
    impl = case.make()
    rng = np.random.default_rng(11)
    m = expect.trials
    if case.adapter.isolated:  # one worker call of m copies (a Spark job per call for Tumult)
        out = np.asarray(impl.batch(np.stack([data] * m), rng)).reshape(m, -1)
    else:
        out = np.array([impl(data, rng) for _ in range(m)]).reshape(m, -1)
    # a vector release: each component's variance about its own mean, averaged (independent
    # components: the average varies less than one component's, so t stays conservative)
    s2 = out.var(axis=0, ddof=1).mean()
    gaussian = case.example.params.get("noise") == "gaussian"
    t = 6.0 * math.sqrt(((GAUSSIAN_KURTOSIS if gaussian else LAPLACE_KURTOSIS) - 1.0) / m)
    lo, hi = expect.spread
    assert lo**2 * (1 - t) <= s2 <= hi**2 * (1 + t), (math.sqrt(s2), expect.spread)


def test_spread_matches_the_claimed_noise(case):
    _check_spread(case, EXPECTED[case.id], SPREAD_DATA)


@pytest.mark.parametrize("case_d3", _params([c for c in CASES if c.id in EXPECTED_D3]))
def test_spread_with_three_entries_per_record(case_d3, request):
    _available(case_d3, request)
    _check_spread(case_d3, EXPECTED_D3[case_d3.id], SPREAD_DATA_D3)
