"""PipelineDP's select_partitions and VECTOR_SUM (``audit.adapters.pipelinedp_extra``) and
PRIVACY_ID_COUNT (``audit.adapters.pipelinedp``): what a NaN does to each, the parameters they
refuse, and the VECTOR_SUM defect of PipelineDP 0.3.1 pinned on the library itself (a release
that fixes it fails
``test_pipelinedp_vector_sum_with_public_partitions_still_crashes``, which says what to
change). Statistical tests: PipelineDP draws from its own CSPRNG (no seed); each states its
false failure probability.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import LibraryDefect, get_adapter, make_implementation

pipeline_dp = pytest.importorskip("pipeline_dp")

DELTA = 3e-2  # the select_partitions examples' δ


def _select(**params):
    return make_implementation("pipelinedp:select_partitions", epsilon=1.0, delta=DELTA,
                               params=params)


def _engine(epsilon=1.0, delta=1e-6):
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)
    return accountant, pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())


EXTRACTORS = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                        partition_extractor=lambda r: r[1],
                                        value_extractor=lambda r: r[2])


# ---------------------------------------------------------------- the VECTOR_SUM defect

def test_pipelinedp_vector_sum_with_public_partitions_still_crashes():
    """The library itself, without the adapter: VECTOR_SUM with public partitions raises in
    ``VectorSumCombiner._clip_vector`` on complete data (no NaN anywhere). When a PipelineDP
    release fixes it, this fails: remove ``defect`` from the ``vector_sum`` target, give it
    a contract case and rerun the NaN regression table."""
    from pipeline_dp.aggregate_params import NormKind

    rows = [(i, 0, np.array([0.1, 0.2])) for i in range(10)]
    for norm, error in ((NormKind.Linf, TypeError), (NormKind.L1, ValueError)):
        accountant, engine = _engine(delta=0.0)
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.VECTOR_SUM],
            max_partitions_contributed=1, max_contributions_per_partition=1, vector_size=2,
            vector_max_norm=1.0, vector_norm_kind=norm)
        result = engine.aggregate(rows, params, EXTRACTORS, public_partitions=[0])
        accountant.compute_budgets()
        with pytest.raises(error) as caught:
            list(result)
        names = []
        tb = caught.value.__traceback__
        while tb is not None:
            names.append(tb.tb_frame.f_code.co_name)
            tb = tb.tb_next
        assert "_clip_vector" in names and "_add_empty_public_partitions" not in names[-1:]
    # the empty accumulator of a public partition is the trigger: create_accumulator([])
    from pipeline_dp import combiners

    accountant, _ = _engine(delta=0.0)
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.VECTOR_SUM],
        max_partitions_contributed=1, max_contributions_per_partition=1, vector_size=2,
        vector_max_norm=1.0, vector_norm_kind=NormKind.Linf)
    combiner = combiners.create_compound_combiner(params, accountant)
    with pytest.raises(TypeError, match="NoneType"):
        combiner.create_accumulator([])


def test_vector_sum_target_raises_a_library_defect_not_the_librarys_traceback():
    impl = make_implementation("pipelinedp:vector_sum", epsilon=1.0, params={"max_norm": 1.0})
    with pytest.raises(LibraryDefect, match=r"_clip_vector.*combiners\.py:909") as caught:
        impl(np.zeros((5, 2)), None)
    assert isinstance(caught.value.__cause__, TypeError)
    assert get_adapter("pipelinedp").target("vector_sum").defect.startswith("PipelineDP 0.3.1")


def test_an_audit_of_vector_sum_ends_in_one_error_line(tmp_path, capsys):
    """The command line: exit 2 (the first call fails) with one ``error:`` line that names
    the defect, no traceback."""
    from audit.cli import main

    config = tmp_path / "vector_sum.toml"
    config.write_text(
        '[scenario]\nmechanism = "laplace"\nepsilon = 1.0\nn = 5\nd = 1\nbound = 1.0\n'
        'query = "sum"\n[missingness]\nkind = "mcar-iid"\nrate = 0.0\n'
        '[implementation]\ntarget = "pipelinedp:vector_sum"\nepsilon = 1.0\n'
        '[implementation.params]\nmax_norm = 1.0\n[audit]\ntrials = 200\nseed = 0\n')
    code = main(["run", str(config), "--json", str(tmp_path / "out.json")])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert any(ln.startswith("error:") and "LibraryDefect" in ln and "_clip_vector" in ln
               for ln in lines), err
    assert "Traceback" not in err


@pytest.mark.parametrize(("params", "delta", "match"), [
    ({}, 0.0, "'max_norm' is required"),
    ({"max_norm": 0.0}, 0.0, r"'max_norm' must be a finite number > 0, got max_norm=0\.0"),
    ({"max_norm": 1.0, "norm": "l3"}, 0.0, "'norm' must be one of 'linf', 'l1', 'l2'"),
    ({"max_norm": 1.0, "norm": "l2"}, 0.0, "'norm' must be 'linf' or 'l1' with laplace noise"),
    ({"max_norm": 1.0, "norm": "l1", "noise": "gaussian"}, 1e-6,
     r"'norm' must be 'linf' or 'l2' with gaussian noise .*got norm='l1'"),
    ({"max_norm": 1.0, "noise": "gaussian"}, 0.0, "delta in \\(0, 1\\), got delta=0.0"),
])
def test_vector_sum_refuses_bad_parameters(params, delta, match):
    with pytest.raises(ValueError, match=match):
        make_implementation("pipelinedp:vector_sum", epsilon=1.0, delta=delta, params=params)


# ---------------------------------------------------------------- PRIVACY_ID_COUNT

@pytest.mark.statistical
def test_privacy_id_count_counts_a_unit_once_whatever_its_values():
    """Three values per record, some NaN, one record all NaN: PipelineDP counts each of the
    40 units once (``create_accumulator``: 1 if the unit has a row, combiners.py:315). The
    mean of 400 releases (Laplace scale 2, σ 2.83) within 0.6 of 40 (4.2 standard errors:
    false failure ≈ 3e-5); a count of values (120) or of observed values would be far off."""
    x = np.random.default_rng(5).uniform(-1, 1, (40, 3))
    x[np.random.default_rng(6).random((40, 3)) < 0.3] = np.nan
    x[7] = np.nan
    impl = make_implementation("pipelinedp:privacy_id_count", epsilon=1.0, params={})
    out = np.array([impl(x, None) for _ in range(400)])
    assert np.isfinite(out).all() and abs(out.mean() - 40) < 0.6


@pytest.mark.statistical
def test_privacy_id_count_with_drop_counts_records_with_an_observed_value():
    """``nan = "drop"``: ten records left with no value are not units any more: mean near 30
    (400 releases, within 0.6: false failure ≈ 3e-5)."""
    x = np.zeros((40, 2))
    x[:10] = np.nan
    x[10:20, 0] = np.nan  # one value left: still counted
    impl = make_implementation("pipelinedp:privacy_id_count", epsilon=1.0,
                               params={"nan": "drop"})
    out = np.array([impl(x, None) for _ in range(400)])
    assert abs(out.mean() - 30) < 0.6


def test_privacy_id_count_refuses_bounds_and_batches():
    with pytest.raises(ValueError, match="'bounds' does not apply to a count"):
        make_implementation("pipelinedp:privacy_id_count", epsilon=1.0,
                            params={"bounds": (0, 1)})
    impl = make_implementation("pipelinedp:privacy_id_count", epsilon=1.0, params={})
    assert impl.batch_in_one_call
    stack = np.zeros((7, 4, 2))
    stack[3] = np.nan
    out = impl.batch(stack, None, partitions=7)
    assert out.shape == (7,) and np.isfinite(out).all()


# ---------------------------------------------------------------- select_partitions

def test_pipelinedp_groups_nan_keys_by_object_identity():
    """What the adapter's NaN semantics rest on, measured on the library: 30 privacy units
    with a NaN key each. With 30 distinct NaN objects (``tolist``) every one is a partition of
    one unit, never kept at (ε, δ) = (1, 1e-6) (keep probability < 1e-5 each); with the one
    object ``np.nan`` they are one partition of 30 units, always kept (the threshold is near
    15 units). Five runs each: a wrong grouping fails with certainty."""
    params = pipeline_dp.SelectPartitionsParams(max_partitions_contributed=1)
    distinct = np.full(30, np.nan).tolist()
    assert len({id(k) for k in distinct}) == 30
    for keys, kept in ((distinct, []), ([np.nan] * 30, [1])):
        for _ in range(5):
            accountant, engine = _engine()
            out = engine.select_partitions([(i, keys[i], 0.0) for i in range(30)], params,
                                           EXTRACTORS)
            accountant.compute_budgets()
            got = list(out)
            assert [1] * len(got) == kept and all(np.isnan(k) for k in got)


@pytest.mark.statistical
def test_nan_keys_propagate_as_singletons_and_shared_as_one_partition():
    """All 40 keys NaN. ``shared``: one partition of 40 units, kept (probability > 0.9999 at
    the examples' δ) in each of 20 calls. ``propagate``: 40 partitions of one unit, each
    kept with a probability near the library's δ ≈ 0.011 (measured: a count of 1 in about
    3 calls in 10): the count is 1 in fewer than 60 of 100 calls (a grouping into one
    partition would give 100; false failure < 1e-9, binomial tail)."""
    x = np.full((40, 3), np.nan)
    shared = _select(column=0, nan="shared")
    assert [shared(x, None) for _ in range(20)] == [1.0] * 20
    propagate = _select(column=0)
    out = np.array([propagate(x, None) for _ in range(100)])
    assert np.sum(out == 1.0) < 60
    assert _select(column=0, nan="drop")(x, None) == 0.0  # no row: no partition


@pytest.mark.statistical
def test_a_nan_key_is_a_key_like_a_fresh_value():
    """The NaN regression pair: (1, 0 × 9) against (NaN, 0 × 9). Either way a singleton and a
    partition of 9 units: the same law (600 calls each, a count's standard deviation about
    0.34: the means within 0.12, 6 standard errors of the difference, false failure below
    1e-8)."""
    impl = _select()
    z = np.array([[1.0]] + [[0.0]] * 9)
    zp = np.array([[np.nan]] + [[0.0]] * 9)
    a = np.mean([impl(z, None) for _ in range(600)])
    b = np.mean([impl(zp, None) for _ in range(600)])
    assert 0.6 < a < 1.2 and abs(a - b) < 0.12


@pytest.mark.statistical
def test_decimals_groups_keys_and_a_unit_may_contribute_to_k_partitions():
    """Rounded to 0 decimals, 60 records × 2 columns in [0.6, 1.4) are 60 units in the one
    partition 1.0 (a unit's two keys one), kept in each of 10 calls; unrounded, 120 singleton
    keys, each kept with a probability near the library's δ/k (measured: 0.63 kept per call):
    fewer than 3 per call over 20 calls (a Poisson(13) total above 60: false failure below
    1e-15)."""
    x = np.random.default_rng(9).uniform(0.6, 1.4, (60, 2))
    rounded = _select(decimals=0)
    assert [rounded(x, None) for _ in range(10)] == [1.0] * 10
    assert np.mean([_select()(x, None) for _ in range(20)]) < 3.0


@pytest.mark.parametrize(("params", "delta", "match"), [
    ({}, 0.0, r"partition selection needs delta in \(0, 1\), got delta=0.0"),
    ({"decimals": -1}, DELTA, r"'decimals' must be None or an integer in \[0, 15\], got "
                              r"decimals=-1"),
    ({"decimals": 1.5}, DELTA, "decimals=1.5"),
    ({"nan": "zero"}, DELTA, "'nan' must be one of 'propagate', 'shared', 'drop'"),
    ({"column": -2}, DELTA, "'column' must be None or an integer >= 0"),
])
def test_select_partitions_refuses_bad_parameters(params, delta, match):
    with pytest.raises(ValueError, match=match):
        make_implementation("pipelinedp:select_partitions", epsilon=1.0, delta=delta,
                            params=params)


def test_select_partitions_column_out_of_range():
    with pytest.raises(ValueError, match="'column' is 4 but the data has 2 columns"):
        _select(column=4)(np.zeros((3, 2)), None)
