"""python-dp (``audit/adapters/pydp.py``): what a NaN does, the add/remove calibration with one
record as one user of k values, and the library's own classes as the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from audit.adapters import get_adapter, make_implementation
from audit.adapters.relations import Relation

N = 40


def test_declaration():
    adapter = get_adapter("pydp")
    assert adapter.relation is Relation.ADD_REMOVE and adapter.seedable is False
    assert adapter.distribution == "python-dp" and adapter.import_name == "pydp"
    nan = {t.function: t.nan.value for t in adapter.targets}
    assert nan == {"sum": "drops", "mean": "drops", "variance": "drops", "std": "drops",
                   "count": "counted"}


class TestPydpNan:
    """At ε = 10⁶ the noise is negligible (scale ≈ 10⁻⁵): the releases show what NaN does."""

    @pytest.fixture(autouse=True)
    def _library(self):
        pytest.importorskip("pydp")

    def release(self, function: str, data: np.ndarray, **params) -> float:
        impl = make_implementation(f"pydp:{function}", epsilon=1e6, params=params)
        return impl(data, np.random.default_rng(0))

    def test_sum_drops_a_nan_before_clamping(self):
        data = np.full((N, 1), 2.5)
        data[:10] = np.nan
        # dropped: 30·2.5; read as 0 and clamped to lo = 2 it would be 75 + 20
        assert self.release("sum", data, bounds=(2.0, 3.0)) == pytest.approx(75.0, abs=1e-2)
        assert self.release("sum", np.full((N, 1), np.nan), bounds=(2.0, 3.0)) == pytest.approx(
            0.0, abs=1e-2)

    def test_mean_does_not_count_a_nan(self):
        data = np.full((N, 1), 1.0)
        data[10:] = np.nan
        # not counted: 1.0; counted as a 0 it would be 0.25
        assert self.release("mean", data, bounds=(-1.0, 1.0)) == pytest.approx(1.0, abs=1e-3)

    def test_count_counts_a_nan(self):
        data = np.full((N, 3), np.nan)
        data[0] = 1.0
        assert self.release("count", data) == pytest.approx(3 * N, abs=0.5)
        assert self.release("count", data, column=2) == pytest.approx(N, abs=0.5)

    @pytest.mark.statistical
    def test_linf_sensitivity_is_the_entries_of_a_record(self):
        """Three entries per record: the sum's noise is 3 times that of one (linf = k)."""
        impl = make_implementation("pydp:sum", epsilon=1.0, params={"bounds": (-1.0, 1.0)})
        one = np.array([impl(np.zeros((N, 1)), None) for _ in range(2000)]).var()
        three = np.array([impl(np.zeros((N, 3)), None) for _ in range(2000)]).var()
        assert 5.5 < three / one < 14.0  # 9 ± 0.64 expected; linf = 1 gives 1


@pytest.mark.statistical
def test_same_spread_as_the_library_called_directly():
    """The adapter's sum at ε is the library's BoundedSum at ε/2 with linf = 3 (d = 3)."""
    pytest.importorskip("pydp")
    from pydp.algorithms.laplacian import BoundedSum

    x = np.zeros((N, 3))
    impl = make_implementation("pydp:sum", epsilon=1.0, params={"bounds": (-1.0, 1.0)})
    ours = np.array([impl(x, None) for _ in range(2000)]).var()
    theirs = np.array([BoundedSum(epsilon=0.5, lower_bound=-1.0, upper_bound=1.0,
                                  linf_sensitivity=3, dtype="float").quick_result([0.0] * 120)
                       for _ in range(2000)]).var()
    # the ratio of two variance estimates of 2000 Laplace draws: standard error ≈ 0.07
    assert 0.6 < ours / theirs < 1.7


@pytest.mark.parametrize("target", ["pydp:sum", "pipelinedp:sum"])
def test_an_epsilon_below_the_libraries_floor_is_refused_before_any_call(target):
    # Google's C++ library refuses an ε below 2^-50 on the first call; the claim's ε is run
    # as ε/2, so a claim below 2^-49 is refused when the implementation is made, by its name
    pytest.importorskip("pydp" if target.startswith("pydp") else "pipeline_dp")
    with pytest.raises(ValueError, match=rf"^{target}: epsilon must be at least 1.776e-15 "
                                         r".* got epsilon=1e-300$"):
        make_implementation(target, epsilon=1e-300, params={"bounds": [-1.0, 1.0]})
    impl = make_implementation(target, epsilon=2.0**-49, params={"bounds": [-1.0, 1.0]})
    assert np.isfinite(impl(np.zeros((3, 1)), np.random.default_rng(0)))
