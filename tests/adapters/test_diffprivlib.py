"""diffprivlib (``audit/adapters/diffprivlib.py``): ``count_nonzero`` and ``histogramdd``, what a
NaN does to them and the calibration the adapter hands the library, checked through seeded
draws (diffprivlib is seedable: the same seed gives the same noise draws in the same order,
so two datasets released with one seed differ exactly by their true counts, away from the
truncation bounds). The histogram findings (add/remove calibration) are in
``tests/adapters/test_findings.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.adapters import make_implementation

N = 40


@pytest.fixture(autouse=True)
def _library():
    pytest.importorskip("diffprivlib")


def _half_zero(d: int) -> np.ndarray:
    """(N, d): every other record 0, the others 0.5: N·d/2 non-zero entries, N/2 per column,
    far from the truncation bounds 0 and N·d (N per column)."""
    x = np.full((N, d), 0.5)
    x[::2] = 0.0
    return x


class TestCountNonzero:
    def impl(self, **params):
        return make_implementation("diffprivlib:count_nonzero", epsilon=1.0, params=params)

    def test_a_nan_counts_as_one_non_zero_entry(self):
        base = _half_zero(3)
        zero_to_nan, value_to_nan = base.copy(), base.copy()
        zero_to_nan[0, 1] = np.nan  # a 0 becomes NaN: one more non-zero entry
        value_to_nan[1, 1] = np.nan  # a 0.5 becomes NaN: still non-zero
        impl = self.impl()
        for seed in range(5):
            b = impl(base, np.random.default_rng(seed))
            assert impl(zero_to_nan, np.random.default_rng(seed)) - b == 1.0
            assert impl(value_to_nan, np.random.default_rng(seed)) == b
        per_column = self.impl(axis=0)
        np.testing.assert_array_equal(
            per_column(zero_to_nan, np.random.default_rng(0))
            - per_column(base, np.random.default_rng(0)), [0.0, 1.0, 0.0])

    def test_all_missing_counts_every_entry(self):
        out = self.impl()(np.full((N, 3), np.nan), np.random.default_rng(0))
        assert 0.0 <= out <= 3 * N and out > 3 * N - 15  # N·d, at the upper truncation bound

    @pytest.mark.parametrize("axis", [None, 0])
    def test_noise_is_geometric_at_epsilon_over_d_per_entry(self, axis):
        """Three entries per record: the count's noise Z is two-sided geometric with
        q = e^(−ε/3) (with axis=0 too: ε split over the three columns), so P(Z = 0) =
        (1 − q)/(1 + q) = 0.165; a calibration at ε per entry would give 0.462, at ε/6 0.083.
        Binomial test at α = 1e-6 on 3,000 seeded draws."""
        x = _half_zero(3)
        impl = self.impl(axis=axis)
        rng = np.random.default_rng(21)
        true = np.count_nonzero(x) if axis is None else np.count_nonzero(x, axis=0)
        noise = np.array([impl(x, rng) - true for _ in range(3000)]).reshape(-1)
        q = math.exp(-1.0 / 3.0)
        assert stats.binomtest(int(np.sum(noise == 0)), noise.size, (1 - q) / (1 + q)) \
            .pvalue > 1e-6
        assert np.all(noise == np.round(noise))  # integer noise
        assert abs(noise.mean()) < 6 * math.sqrt(2 * q / (1 - q) ** 2 / noise.size)


class TestHistogramdd:
    def impl(self, bins: int = 2):
        return make_implementation("diffprivlib:histogramdd", epsilon=1.0,
                                   params={"bounds": (0.0, 1.0), "bins": bins})

    @staticmethod
    def grid() -> np.ndarray:
        """(N, 2): ten records in each of the four cells of a 2×2 histogram over [0, 1]²."""
        cells = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
        return np.repeat(cells, 10, axis=0)

    def test_a_record_with_any_nan_coordinate_falls_in_no_cell(self):
        data = self.grid()
        one_nan, both_nan = data.copy(), data.copy()
        one_nan[0, 1] = np.nan  # (0.25, NaN): its observed 0.25 is dropped too
        both_nan[0] = np.nan
        impl = self.impl()
        for seed in range(3):
            base = impl(data, np.random.default_rng(seed))
            for other in (one_nan, both_nan):
                np.testing.assert_array_equal(base - impl(other, np.random.default_rng(seed)),
                                              [1.0, 0.0, 0.0, 0.0])  # cell (0, 0), C order

    def test_the_release_is_the_flattened_cells_and_never_nan(self):
        impl = self.impl(bins=3)
        for data in (self.grid(), np.full((N, 2), np.nan)):
            out = impl(data, np.random.default_rng(0))
            assert out.shape == (9,) and out.dtype == np.float64 and np.all(out >= 0)

    def test_noise_is_geometric_at_epsilon_per_record(self):
        """One record is one sample: each cell's noise is two-sided geometric with q = e^(−ε)
        whatever d (P(Z = 0) = 0.462; ε/d with d = 2 would give 0.245). Binomial test at
        α = 1e-6 on 4 cells × 1,000 seeded draws (counts of 10, truncation at 0 ignored:
        P(Z ≤ −10) = q^10/(1 + q) < 4e-5)."""
        impl = self.impl()
        rng = np.random.default_rng(22)
        noise = np.array([impl(self.grid(), rng) - 10.0 for _ in range(1000)]).reshape(-1)
        q = math.exp(-1.0)
        assert stats.binomtest(int(np.sum(noise == 0)), noise.size, (1 - q) / (1 + q)) \
            .pvalue > 1e-6
