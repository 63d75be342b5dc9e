"""What the libraries do with a NaN, checked through the adapters where the module docstrings
draw a verdict from it (expected audit verdicts, recorded, not corrected).

* diffprivlib ``nansum`` reads a NaN as 0 after clipping: with bounds that exclude 0 an entry
  becoming NaN moves the sum by more than the sensitivity hi − lo its noise is calibrated to,
  so its claim fails on data with missing values (``audit/adapters/diffprivlib.py``).
* diffprivlib ``histogram`` drops a NaN (no bin) and calibrates each count to sensitivity 1,
  the add/remove sensitivity: a substituted entry changes two counts (L1 distance 2).
  ``histogramdd`` shares it: a substituted record (one sample) changes two cells.
* PipelineDP's PERCENTILE drops a NaN (PyDP's quantile tree): its claim holds. (python-dp's
  own targets: ``tests/adapters/test_pydp.py``.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.adapters import make_implementation

N = 40


class TestDiffprivlibNansumBoundsExcludingZero:
    """Bounds (2, 3): diffprivlib's noise is for hi − lo = 1, a NaN moves the sum by the value."""

    @pytest.fixture(autouse=True)
    def _library(self):
        pytest.importorskip("diffprivlib")

    def impl(self):
        return make_implementation("diffprivlib:nansum", epsilon=1.0,
                                   params={"bounds": (2.0, 3.0)})

    def test_a_nan_is_read_as_zero_not_clipped_to_lo(self):
        data = np.full((N, 1), 2.5)
        one_nan = data.copy()
        one_nan[0] = np.nan
        impl = self.impl()
        for seed in range(5):  # the same seed: the same Laplace draw on both datasets
            shift = impl(data, np.random.default_rng(seed)) - impl(one_nan,
                                                                   np.random.default_rng(seed))
            # read as 0: the entry's 2.5 disappears (clipped up to lo = 2 it would be 0.5)
            assert shift == pytest.approx(2.5, abs=1e-9)

    def test_noise_is_calibrated_to_hi_minus_lo_so_the_claim_fails(self):
        """The Laplace scale is (hi − lo)/ε = 1, so a pair whose sums differ by 2.5 has a
        privacy loss of 2.5ε: the claimed ε does not hold (up to max(|lo|, |hi|)/(hi − lo) =
        3 for an entry at hi)."""
        data = np.full((N, 1), 2.5)  # sum 100, far inside the truncation [80, 120]
        impl = self.impl()
        rng = np.random.default_rng(13)
        out = np.array([impl(data, rng) for _ in range(3000)])
        scale = 1.0  # (hi − lo)/ε, diffprivlib tools/utils.py:739
        t = 6.0 * math.sqrt(5.0 / out.size)  # Laplace kurtosis 6, as in test_contract
        assert 2 * scale**2 * (1 - t) <= out.var(ddof=1) <= 2 * scale**2 * (1 + t)
        assert 2.5 / scale > impl.claim.epsilon  # the loss of the pair above exceeds the claim

    def test_all_missing_releases_lo_times_n_exactly(self):
        """0 lies below lo·N: the truncation returns lo·N whatever the noise (deterministic)."""
        impl = self.impl()
        outs = {impl(np.full((N, 1), np.nan), np.random.default_rng(s)) for s in range(5)}
        assert outs == {2.0 * N}


def test_diffprivlib_histogram_substitution_changes_two_counts_a_nan_one():
    pytest.importorskip("diffprivlib")
    impl = make_implementation("diffprivlib:histogram", epsilon=1.0,
                               params={"bounds": (0.0, 1.0), "bins": 4})
    data = np.repeat([0.1, 0.35, 0.6, 0.85], 10)[:, None]  # ten entries per bin
    moved = data.copy()
    moved[0] = 0.9  # from the first bin to the last
    missing = data.copy()
    missing[0] = np.nan
    for seed in range(3):  # the same seed: the same geometric draws per bin
        base = impl(data, np.random.default_rng(seed))
        np.testing.assert_array_equal(base - impl(moved, np.random.default_rng(seed)),
                                      [1.0, 0.0, 0.0, -1.0])  # L1 distance 2
        np.testing.assert_array_equal(base - impl(missing, np.random.default_rng(seed)),
                                      [1.0, 0.0, 0.0, 0.0])  # the NaN falls in no bin


def test_diffprivlib_histogramdd_substitution_changes_two_cells_a_nan_one():
    """The same finding as histogram's: the adapter passes ε per record (one sample), each cell
    is calibrated to sensitivity 1, and a substituted record moves between two cells."""
    pytest.importorskip("diffprivlib")
    impl = make_implementation("diffprivlib:histogramdd", epsilon=1.0,
                               params={"bounds": (0.0, 1.0), "bins": 2})
    cells = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
    data = np.repeat(cells, 10, axis=0)  # ten records per cell
    moved = data.copy()
    moved[0] = (0.75, 0.75)  # from cell (0, 0) to cell (1, 1)
    missing = data.copy()
    missing[0, 0] = np.nan
    for seed in range(3):
        base = impl(data, np.random.default_rng(seed))
        np.testing.assert_array_equal(base - impl(moved, np.random.default_rng(seed)),
                                      [1.0, 0.0, 0.0, -1.0])  # L1 distance 2: 2ε
        np.testing.assert_array_equal(base - impl(missing, np.random.default_rng(seed)),
                                      [1.0, 0.0, 0.0, 0.0])  # the NaN record in no cell: ε


def test_pipelinedp_percentile_drops_a_nan():
    pytest.importorskip("pipeline_dp")
    data = np.full((N, 1), 0.9)
    data[:20] = np.nan
    impl = make_implementation("pipelinedp:percentile", epsilon=1e4,
                               params={"bounds": (-1.0, 1.0), "percentile": 50})
    # dropped: the median of twenty 0.9s; NaN read as 0 or clamped to lo would give ≤ 0.45
    assert impl(data, np.random.default_rng(0)) == pytest.approx(0.9, abs=0.01)
