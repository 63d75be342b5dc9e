"""The pair that hurts an imputer (audit.model.imputation_pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from audit.model.imputation_pairs import imputation_pair, mar_mask_params
from audit.model.missingness import make_missingness


@pytest.mark.parametrize("others", ["zero", "split"])
@pytest.mark.parametrize("m", [1, 4, 16, 19])
def test_the_pair_differs_in_record_0_only_and_has_m_incomplete_records(m, others):
    z, zp = imputation_pair(20, m, 2.0, others=others)
    assert z.shape == zp.shape == (20, 2)
    same = (z == zp) | (np.isnan(z) & np.isnan(zp))
    assert same[1:].all() and not same[0, 0] and same[0, 1]
    assert (z[0, 0], zp[0, 0]) == (2.0, -2.0)
    assert np.isnan(z[:, 0]).sum() == m and not np.isnan(z[:, 1]).any()
    obs = z[m + 1:, 0]
    assert (np.abs(obs) <= 2.0).all()
    if others == "split":  # as many at -B as at +B, at most one 0
        assert (obs == 2.0).sum() == (obs == -2.0).sum() and (obs == 0).sum() <= 1


def test_the_mar_mask_hands_the_imputer_the_mcar_table():
    z_mar, _ = imputation_pair(20, 4, mask="mar")
    z_mcar, _ = imputation_pair(20, 4, mask="mcar")
    assert not np.isnan(z_mar).any()
    params = mar_mask_params()
    mech = make_missingness(params.pop("kind"), **params)
    for seed in range(5):
        masks = mech.sample_masks(z_mar, np.random.default_rng(seed))
        masked = np.where(masks, np.nan, z_mar)
        np.testing.assert_array_equal(np.isnan(masked), np.isnan(z_mcar))


@pytest.mark.parametrize("kwargs,message", [
    ({"n": 1, "m": 1}, "n must be"),
    ({"n": 20, "m": 0}, "m must be"),
    ({"n": 20, "m": 20}, r"m must be in \[1, n - 1\]"),
    ({"n": 20, "m": 4, "bound": 0.0}, "bound must be"),
    ({"n": 20, "m": 4, "others": "ends"}, "others must be one of"),
    ({"n": 20, "m": 4, "mask": "mnar"}, "mask must be one of"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        imputation_pair(**kwargs)


@pytest.mark.parametrize("rate,message", [(-0.1, r"rate must be in \[0.0, 1.0\]"),
                                          (1.5, r"rate must be in \[0.0, 1.0\]"),
                                          (float("nan"), "rate must be a finite real number")])
def test_the_mar_mask_refuses_a_rate_outside_0_1(rate, message):
    with pytest.raises(ValueError, match=message):
        mar_mask_params(rate)
    assert mar_mask_params(0.5)["rate_high"] == 0.5
