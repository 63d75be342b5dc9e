"""OpenDP Polars' batched form: one ``group_by`` over T public keys, dataset t the rows of key
t (``audit.adapters.opendp_polars``).

Per-key NaN semantics (the midpoint fill, the drop) against the unbatched call at ε = 10⁴
(noise ≈ 2·10⁻⁴), each key's noise scale against the unbatched query's (OpenDP's own summary),
the independence check at α = 10⁻⁶ (passes; a fake sharing one OpenDP noise draw across a call
fails) and, slow, the law of a key's release against unbatched calls. OpenDP cannot be seeded:
each statistical test can fail by chance with the probability stated beside it.
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

pytest.importorskip("polars")
pytest.importorskip("opendp.prelude")

from audit.adapters.opendp_polars import partitions_per_call  # noqa: E402

BOUNDS = {"bounds": (0.0, 1.0)}
FUNCTIONS = {"sum": BOUNDS, "mean": BOUNDS, "len": {}}
#: [0.5, missing, 0.25, 1.0]: observed sum 1.75; the missing entry read as the midpoint: 2.25
DATA = np.array([[0.5], [np.nan], [0.25], [1.0]])


def _impl(function: str, epsilon: float = 1.0, **extra):
    return make_implementation(f"opendp-polars:{function}", epsilon=epsilon,
                               params={**FUNCTIONS[function], **extra})


def test_states_its_batched_form():
    impl = _impl("sum")
    assert impl.batch is not None and impl.batch_in_one_call


@pytest.mark.parametrize("m, partitions", [(0, None), (1, None), (7, 3), (5, 5)])
def test_shapes(m, partitions):
    out = _impl("sum").batch(np.zeros((m, 4, 2)), None, partitions=partitions)
    assert out.shape == (m,) and np.isfinite(out).all()


def test_default_partitions_follow_the_rows():
    assert partitions_per_call(10) == 1000
    assert partitions_per_call(300) == 66
    assert partitions_per_call(10**5) == 1


@pytest.mark.parametrize("params, expected", [
    ({"nan": "fill_null"}, 1.75), ({"nan": "keep"}, 2.25), ({"nan": "drop"}, 1.75),
    ({"missing": "nan", "nan": "keep"}, 2.25), ({"missing": "nan", "nan": "fill_nan"}, 1.75)])
def test_each_key_has_the_unbatched_nan_semantics(params, expected):
    impl = _impl("sum", epsilon=1e4, **params)
    stack = np.stack([DATA, np.nan_to_num(DATA), DATA, np.full_like(DATA, 0.5)])
    out = impl.batch(stack, None, partitions=3)
    assert out == pytest.approx([expected, 1.75, expected, 2.0], abs=0.01)
    assert impl(DATA, None) == pytest.approx(expected, abs=0.01)


def test_len_counts_per_key():
    stack = np.stack([DATA] * 3)
    out = _impl("len", epsilon=1e4).batch(stack, None)
    assert out == pytest.approx([4.0, 4.0, 4.0], abs=0.5)


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_each_key_has_the_unbatched_noise_scale(function):
    release = _impl(function).func
    alone = [r["scale"] for r in release.query((4, 1))[2]]
    grouped = [r["scale"] for r in release.query((4, 1), 5)[2]]
    assert grouped == pytest.approx(alone, rel=1e-9)


def test_bad_stack_is_refused():
    assert_bad_stacks_are_refused(_impl)


@pytest.mark.statistical
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_independence_check_passes(function):
    """False failure probability ≤ 10⁻⁶ per function (the check's α)."""
    result = check_batch(_impl(function), np.zeros((10, 1)))
    assert result.passed, result.describe()


@pytest.mark.statistical
def test_independence_check_fails_for_shared_opendp_noise():
    """One OpenDP release per call, its noise added to every dataset's exact clipped sum:
    every key shares the library's noise draw. Fails with p < 10⁻¹⁰."""
    def exact(data):
        return np.clip(np.nan_to_num(data), 0, 1).sum()

    assert_shared_noise_is_refused(_impl("sum"), exact, np.zeros((10, 1)))


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_key_law_matches_an_unbatched_call(function):
    """4,000 batched releases against 2,000 unbatched calls, two-sample Kolmogorov–Smirnov at
    α = 10⁻⁶ (false failure ≤ 10⁻⁶; conservative for the integer len)."""
    from scipy import stats

    impl = _impl(function)
    x = np.array([[0.5], [0.0], [1.0], [0.25]] * 3)
    batched = impl.batch(np.broadcast_to(x, (4000, *x.shape)).copy(), None)
    unbatched = np.array([impl(x, None) for _ in range(2000)])
    assert stats.ks_2samp(batched, unbatched).pvalue > 1e-6
