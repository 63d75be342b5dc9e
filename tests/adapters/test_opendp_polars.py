"""OpenDP's Polars API (``audit/adapters/opendp_polars.py``): what a null or a NaN does to
``.dp.sum``, ``.dp.mean`` and ``.dp.len`` (the midpoint fill of ``dp_sum``), the calibration at
d_in = 2k, and OpenDP's own query summary as the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import get_adapter, make_implementation
from audit.adapters.protocol import NanSemantics
from audit.adapters.relations import Relation

pytest.importorskip("polars")
pytest.importorskip("opendp.prelude")

#: [0.5, missing, 0.25, 1.0]: observed sum 1.75; with the missing entry read as the midpoint
#: 0.5 of bounds (0, 1): 2.25; as the constant 0: 1.75
DATA = np.array([[0.5], [np.nan], [0.25], [1.0]])
BOUNDS = (0.0, 1.0)


def release(function: str, data=DATA, **params) -> float:
    """One release at ε = 10⁴ (Laplace scale ≈ 2·10⁻⁴ for the sum: the value shows)."""
    if function in ("sum", "mean", "group_by_sum"):
        params.setdefault("bounds", BOUNDS)
    impl = make_implementation(f"opendp-polars:{function}", epsilon=1e4, params=params)
    return impl(data, None)


def test_declaration():
    adapter = get_adapter("opendp-polars")
    assert adapter.relation is Relation.SYMMETRIC_DISTANCE and adapter.seedable is False
    assert adapter.distribution == "opendp" and adapter.import_name == "polars"
    sem = {t.function: {k: v.value for k, v in t.nan_options.items()} for t in adapter.targets}
    assert sem["sum"] == sem["mean"] == {"fill_null": "imputes-constant",
                                         "fill_nan": "imputes-constant",
                                         "keep": "imputes-constant", "drop": "drops"}
    assert sem["len"] == {"fill_null": "counted", "fill_nan": "counted", "keep": "counted",
                          "drop": "drops"}
    assert adapter.target("len").nan_semantics() is NanSemantics.COUNTED


@pytest.mark.parametrize("missing", ["null", "nan"])
def test_a_matching_fill_uses_the_constant_anything_else_the_midpoint(missing):
    """fill_null reaches a null, fill_nan a NaN; a missing value the query leaves (keep, or the
    other fill) is filled by .dp.sum itself with (lo + hi)/2 = 0.5 (expr_dp_sum/mod.rs)."""
    match, other = ("fill_null", "fill_nan") if missing == "null" else ("fill_nan", "fill_null")
    assert release("sum", missing=missing, nan=match) == pytest.approx(1.75, abs=0.01)
    assert release("sum", missing=missing, nan=match, constant=1.0) == pytest.approx(
        2.75, abs=0.01)
    for nan in (other, "keep"):
        assert release("sum", missing=missing, nan=nan) == pytest.approx(2.25, abs=0.01)
    assert release("sum", missing=missing, nan="drop") == pytest.approx(1.75, abs=0.01)


def test_mean_counts_a_filled_entry_and_not_a_dropped_one():
    assert release("mean") == pytest.approx(1.75 / 4, abs=0.01)
    assert release("mean", nan="keep") == pytest.approx(2.25 / 4, abs=0.01)
    assert release("mean", nan="drop") == pytest.approx(1.75 / 3, abs=0.01)


@pytest.mark.parametrize("missing", ["null", "nan"])
def test_len_counts_every_row_unless_dropped(missing):
    data = np.full((20, 3), np.nan)
    data[0] = 1.0
    assert release("len", data, missing=missing) == 60.0  # integer noise: 0 at ε = 10⁴
    assert release("len", data, missing=missing, nan="drop") == 3.0
    assert release("len", data, missing=missing, nan="drop", column=1) == 1.0


@pytest.mark.parametrize(("function", "scales"), [("sum", [2.0]), ("mean", [4.0, 4.0]),
                                                  ("len", [2.0])])
def test_opendp_calibrates_to_the_substitution_distance(function, scales):
    """One record of one entry: contributions = 2; OpenDP's own summary has the unsized sum's
    scale 2·max(|lo|, |hi|)/ε, the mean's sum and len at ε/2 each, the len's 2/ε; with d = 3
    entries per record, contributions = 6 triples them; the map at d_in is ε."""
    params = {} if function == "len" else {"bounds": (-1.0, 1.0)}
    impl = make_implementation(f"opendp-polars:{function}", epsilon=1.0, params=params)
    for d, factor in ((1, 1), (3, 3)):
        _, value, summary = impl.func.query((40, d))
        assert [row["scale"] for row in summary] == pytest.approx(
            [factor * s for s in scales], rel=1e-9)
        assert value == pytest.approx(1.0, abs=1e-9) and value <= 1.0


def test_the_calibration_is_that_of_opendps_own_resolve():
    """Context + query + resolve() (OpenDP's bisection, seconds) gives the same noise scales and
    map as the adapter's two-step calibration, for the mean (two noises, one global scale)."""
    import opendp.prelude as dp
    import polars as pl
    from opendp.accuracy import summarize_polars_measurement

    from audit.adapters.opendp_polars import build_query, expression, lazyframe

    params = {"bounds": (-1.0, 1.0), "missing": "null", "nan": "fill_null", "constant": 0.0,
              "column": None}
    ours, value, summary = build_query("mean", epsilon=1.0, params=params, n=40, d=1)
    context = dp.Context.compositor(
        data=lazyframe(pl, np.zeros(40), "null"), privacy_unit=dp.unit_of(contributions=2),
        privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1,
        margins=[dp.polars.Margin(max_length=40)])
    resolved = context.query().select(expression(pl, "mean", params)).resolve()
    theirs = summarize_polars_measurement(resolved).to_dicts()
    assert [r["scale"] for r in summary] == pytest.approx([r["scale"] for r in theirs],
                                                          rel=1e-9)
    assert value == pytest.approx(resolved.map(2), rel=1e-9) and value <= 1.0


def test_the_measurement_is_reused_per_shape():
    impl = make_implementation("opendp-polars:sum", epsilon=1.0, params={"bounds": BOUNDS})
    impl(DATA, None)
    first = impl.func.query(DATA.shape)[0]
    impl(DATA, None)
    assert impl.func.query(DATA.shape)[0] is first
    impl(np.ones((5, 1)), None)
    assert set(impl.func._queries) == {(4, 1, 0), (5, 1, 0)}  # (n, d, keys: 0 unbatched)


@pytest.mark.parametrize(("params", "needle"), [
    ({"bounds": BOUNDS, "missing": "none"}, "parameter 'missing' must be one of 'null', 'nan'"),
    ({"bounds": BOUNDS, "nan": "impute"}, "parameter 'nan' must be one of 'fill_null'"),
    ({"bounds": BOUNDS, "constant": float("nan")}, "parameter 'constant' must be a finite"),
    ({"bounds": (1.0, 0.0)}, "parameter 'bounds' must be a pair"),
])
def test_bad_parameters_are_refused(params, needle):
    with pytest.raises(ValueError, match=needle):
        make_implementation("opendp-polars:sum", epsilon=1.0, params=params)


def test_delta_must_be_zero():
    with pytest.raises(ValueError, match="delta must be 0, got delta=1e-06"):
        make_implementation("opendp-polars:len", epsilon=1.0, delta=1e-6)


CANDIDATES = [10.0, 20.0, 30.0, 40.0, 50.0]


@pytest.mark.parametrize("missing", ["null", "nan"])
def test_quantile_scores_a_left_entry_as_the_candidates_median(missing):
    """Six missing and four 10.0, candidates 10, …, 50 (the module docstring's measurement).
    OpenDP scores c by |(1 − α)·#{x < c} − α·#{x > c}| (up to a factor; the lowest wins, ties
    at random; these data leave none): filled with 0 the median is 10; dropped, 10 (every
    entry is 10); left in the column, 20, as filled with the candidates' median 30 (20 has
    four below and six above); the 0.75-quantile of the left data is 30."""
    data = np.array([[np.nan]] * 6 + [[10.0]] * 4)
    fill = "fill_null" if missing == "null" else "fill_nan"
    common = {"candidates": CANDIDATES, "missing": missing}
    assert release("quantile", data, **common, nan=fill) == 10.0
    assert release("quantile", data, **common, nan=fill, constant=30.0) == 20.0
    assert release("quantile", data, **common, nan="drop") == 10.0
    assert release("quantile", data, **common, nan="keep") == 20.0
    assert release("median", data, **common, nan="keep") == 20.0
    assert release("quantile", data, **common, nan="keep", alpha=0.75) == 30.0


def test_median_is_the_half_quantile_path():
    """The same OpenDP summary (aggregate, distribution, scale) for .dp.median and
    .dp.quantile(0.5), and the scale triples with d = 3 entries per record."""
    params = {"candidates": CANDIDATES}
    summaries = {}
    for function, extra in (("median", {}), ("quantile", {"alpha": 0.5})):
        impl = make_implementation(f"opendp-polars:{function}", epsilon=1.0,
                                   params={**params, **extra})
        summaries[function] = [impl.func.query((40, d))[2] for d in (1, 3)]
        assert impl.func.query((40, 3))[1] == pytest.approx(1.0, abs=1e-9)
    assert summaries["median"] == summaries["quantile"]
    one, three = summaries["median"]
    assert one[0]["aggregate"] == "0.5-Quantile" and three[0]["scale"] == 3 * one[0]["scale"]


@pytest.mark.parametrize("missing", ["null", "nan"])
def test_group_by_sum_releases_one_sum_per_column_in_key_order(missing):
    data = np.array([[0.5, np.nan, 0.25], [1.0, 0.5, np.nan]])
    fill = "fill_null" if missing == "null" else "fill_nan"
    out = release("group_by_sum", data, missing=missing, nan=fill)
    assert out.shape == (3,) and out.dtype == np.float64
    np.testing.assert_allclose(out, [1.5, 0.5, 0.25], atol=0.02)
    np.testing.assert_allclose(release("group_by_sum", data, missing=missing, nan="drop"),
                               [1.5, 0.5, 0.25], atol=0.02)
    # left in place: .dp.sum's midpoint fill, 0.5 for bounds (0, 1), in its own group
    np.testing.assert_allclose(release("group_by_sum", data, missing=missing, nan="keep"),
                               [1.5, 1.0, 0.75], atol=0.02)


def test_group_by_sum_is_calibrated_as_opendps_with_keys_query():
    """Context + group_by + with_keys + resolve() (OpenDP's own bisection) gives the adapter's
    scale, 2d·max(|lo|, |hi|)/ε = 6 for d = 3, and the map at d_in = 2d is ε."""
    import opendp.prelude as dp
    import polars as pl
    from opendp.accuracy import summarize_polars_measurement

    from audit.adapters.opendp_polars import KEY, build_query, expression, keyed_lazyframe

    params = {"bounds": (-1.0, 1.0), "missing": "null", "nan": "fill_null", "constant": 0.0}
    _, value, summary = build_query("group_by_sum", epsilon=1.0, params=params, n=40, d=3)
    context = dp.Context.compositor(
        data=keyed_lazyframe(pl, np.zeros((40, 3)), "null"),
        privacy_unit=dp.unit_of(contributions=6), privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=1, margins=[dp.polars.Margin(max_length=120),
                                      dp.polars.Margin(by=[KEY], max_length=40)])
    keys = pl.LazyFrame({KEY: pl.Series(KEY, [0, 1, 2], dtype=pl.Int64)})
    resolved = (context.query().group_by(KEY).agg(expression(pl, "group_by_sum", params))
                .with_keys(keys).resolve())
    theirs = summarize_polars_measurement(resolved).to_dicts()
    assert [r["scale"] for r in summary] == pytest.approx([r["scale"] for r in theirs],
                                                          rel=1e-9)
    assert summary[0]["scale"] == pytest.approx(6.0, rel=1e-9)
    assert value == pytest.approx(resolved.map(6), rel=1e-9) and value <= 1.0


@pytest.mark.parametrize(("function", "params", "needle"), [
    ("quantile", {}, "parameter 'candidates' is required"),
    ("quantile", {"candidates": [1.0, 1.0]}, "strictly increasing"),
    ("quantile", {"candidates": CANDIDATES, "alpha": -0.1}, "parameter 'alpha'"),
    ("median", {"candidates": CANDIDATES, "alpha": 0.5}, "unknown parameter 'alpha'"),
    ("group_by_sum", {"bounds": BOUNDS, "column": 0}, "unknown parameter 'column'"),
    ("group_by_sum", {"bounds": BOUNDS, "nan": "impute"}, "parameter 'nan'"),
])
def test_bad_parameters_of_the_new_targets_are_refused(function, params, needle):
    with pytest.raises(ValueError, match=needle):
        make_implementation(f"opendp-polars:{function}", epsilon=1.0, params=params)
