"""PipelineDP's batched form: one ``DPEngine.aggregate`` over T public partitions, dataset t
of the stack in partition t (``audit.adapters.pipelinedp``).

Shapes, per-partition NaN semantics, the independence check at α = 10⁻⁶ (passes for
PipelineDP, fails for a fake that shares one PipelineDP noise draw across a call) and the law
of a partition's release against an unbatched call. Statistical tests: PipelineDP draws from
its own CSPRNG (no seed), so each can fail by chance with the probability stated beside it.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import make_implementation
from audit.model.batch_check import check_batch
from tests.adapters.batch_cases import (
    assert_bad_stacks_are_refused,
    assert_shared_noise_is_refused,
)

pytest.importorskip("pipeline_dp")

from audit.adapters.pipelinedp import partitions_per_call  # noqa: E402

BOUNDS = {"bounds": (-1.0, 1.0)}
FUNCTIONS = {"sum": BOUNDS, "mean": BOUNDS, "count": {}, "variance": BOUNDS,
             "percentile": {**BOUNDS, "percentile": 50.0}, "privacy_id_count": {}}
DATA = np.array([[1.0], [0.0], [0.5], [-0.5], [0.0]])


def _impl(function: str, **extra):
    return make_implementation(f"pipelinedp:{function}", epsilon=1.0,
                               params={**FUNCTIONS[function], **extra})


def test_states_its_batched_form():
    impl = _impl("sum")
    assert impl.batch is not None and impl.batch_in_one_call


@pytest.mark.parametrize("m, partitions", [(0, None), (1, None), (45, None), (45, 7),
                                           (3, 1)])
def test_shapes(m, partitions):
    impl = _impl("sum")
    stack = np.zeros((m, 5, 2))
    out = impl.batch(stack, np.random.default_rng(0), partitions=partitions)
    assert out.shape == (m,) and np.isfinite(out).all()


def test_one_engine_call_per_block_of_partitions(monkeypatch):
    import pipeline_dp

    seen = []
    original = pipeline_dp.DPEngine.aggregate

    def spy(self, col, params, extractors, public_partitions=None, **kw):
        rows = list(col)
        seen.append((len(rows), len(public_partitions), params.max_partitions_contributed,
                     params.max_contributions_per_partition,
                     len({r[0] for r in rows}), len({(r[0], r[1]) for r in rows})))
        return original(self, rows, params, extractors, public_partitions, **kw)

    monkeypatch.setattr(pipeline_dp.DPEngine, "aggregate", spy)
    _impl("sum").batch(np.zeros((10, 4, 3)), None, partitions=4)
    # blocks of 4, 4, 2 datasets; 4 records × 3 values each; one id per (dataset, record),
    # each in one partition only
    assert seen == [(48, 4, 1, 3, 16, 16), (48, 4, 1, 3, 16, 16), (24, 2, 1, 3, 8, 8)]


def test_default_partitions_follow_the_rows():
    assert partitions_per_call(10) == 20
    assert partitions_per_call(100) == 2
    assert partitions_per_call(300) == 1
    assert partitions_per_call(1) == 50  # at most MAX_PARTITIONS


@pytest.mark.parametrize("function", ["sum", "mean", "variance"])
def test_nan_propagates_in_its_own_partition_only(function):
    stack = np.zeros((6, 5, 1))
    stack[2, 0, 0] = np.nan
    out = _impl(function).batch(stack, None, partitions=6)
    assert np.isnan(out[2]) and np.isfinite(np.delete(out, 2)).all()


@pytest.mark.parametrize("function", ["sum", "mean", "count", "variance", "privacy_id_count"])
def test_nan_dropped_per_partition(function):
    stack = np.zeros((5, 5, 1))
    stack[1, 0, 0] = np.nan
    stack[3] = np.nan  # a partition left with no value: the release of no data
    out = _impl(function, nan="drop").batch(stack, None, partitions=5)
    assert np.isfinite(out).all()


def test_all_missing_stack_with_drop_releases_no_data():
    out = _impl("sum", nan="drop").batch(np.full((4, 3, 1), np.nan), None)
    assert out.shape == (4,) and np.isfinite(out).all()


@pytest.mark.statistical
def test_privacy_id_count_counts_each_partitions_own_units():
    """Partition t holds dataset t's records only (ids t·n + i): 8 datasets of 2, 4, …, 16
    records (the rest NaN and dropped), 300 batched calls; each partition's mean release
    within 0.9 of its own count (Laplace scale 2: 5.5 standard errors, false failure below
    1e-6 over the 8; units counted in another partition would move a mean by 2 or more)."""
    stack = np.full((8, 16, 1), np.nan)
    for t in range(8):
        stack[t, :2 * (t + 1)] = 0.5
    impl = _impl("privacy_id_count", nan="drop")
    out = np.array([impl.batch(stack, None, partitions=8) for _ in range(300)])
    np.testing.assert_allclose(out.mean(axis=0), 2.0 * np.arange(1, 9), atol=0.9)


def test_percentile_drops_nan_per_partition():
    stack = np.full((4, 60, 1), 0.9)
    stack[1, :30, 0] = np.nan  # dropped by PyDP's quantile tree: never a NaN release
    stack[3] = np.nan
    out = _impl("percentile").batch(stack, None, partitions=4)
    assert np.isfinite(out).all() and np.all(np.abs(out) <= 1.0)


def test_bad_stack_is_refused():
    assert_bad_stacks_are_refused(_impl)


@pytest.mark.statistical
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_independence_check_passes(function):
    """False failure probability ≤ 10⁻⁶ per function (the check's α)."""
    result = check_batch(_impl(function), DATA)
    assert result.passed, result.describe()


@pytest.mark.statistical
def test_independence_check_fails_for_shared_pipelinedp_noise():
    """A fake batch that makes one PipelineDP release and shifts it by each dataset's exact
    sum: every partition shares the library's noise draw. Fails with p < 10⁻¹⁰."""
    assert_shared_noise_is_refused(_impl("sum"), np.nansum, DATA)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_partition_law_matches_an_unbatched_call(function):
    """4,000 batched releases (one partition per dataset of the stack) against 2,000
    unbatched calls, two-sample Kolmogorov–Smirnov at α = 10⁻⁶ (false failure ≤ 10⁻⁶);
    detects a Kolmogorov distance above about 0.14."""
    from scipy import stats

    impl = _impl(function)
    x = np.array([[0.5], [0.0], [1.0], [-0.5]] * 3)
    batched = impl.batch(np.broadcast_to(x, (4000, *x.shape)).copy(), None)
    unbatched = np.array([impl(x, None) for _ in range(2000)])
    assert stats.ks_2samp(batched, unbatched).pvalue > 1e-6
