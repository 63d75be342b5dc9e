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
    if function != "len":
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
