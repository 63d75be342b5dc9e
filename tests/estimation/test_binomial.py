"""audit.estimation.binomial: one home for Clopper–Pearson, integer and expected counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.estimation import binomial


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (1, 1), (57, 1000)])
def test_integer_counts_match_scipy_beta(k, n):
    a = 0.025
    lo = 0.0 if k == 0 else stats.beta.ppf(a, k, n - k + 1)
    hi = 1.0 if k == n else stats.beta.ppf(1 - a, k + 1, n - k)
    assert binomial.cp_lower_array(k, n, a) == lo
    assert binomial.cp_upper_array(k, n, a) == hi


def test_fractional_counts_are_the_beta_quantiles_of_expected_counts():
    # the model's region choice predicts expected counts such as 0.4 or 999.6 of 1000
    k = np.array([0.0, 0.4, 12.5, 999.6, 1000.0])
    n = 1000.0
    lo = binomial.cp_lower_array(k, n, 0.05)
    hi = binomial.cp_upper_array(k, n, 0.05)
    for i, ki in enumerate(k):
        want_lo = 0.0 if ki <= 0 else stats.beta.ppf(0.05, ki, n - ki + 1)
        want_hi = 1.0 if ki >= n else stats.beta.ppf(0.95, ki + 1, n - ki)
        assert lo[i] == pytest.approx(want_lo, rel=1e-12, abs=0)
        assert hi[i] == pytest.approx(want_hi, rel=1e-12, abs=0)
    assert np.all(np.diff(lo) > 0) and np.all(np.diff(hi) > 0)
