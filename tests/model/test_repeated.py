"""audit.model.repeated: k releases from one dataset, with shared or fresh masks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.model.implementation import CallableImplementation, Claim
from audit.model.missingness import make_missingness
from audit.model.repeated import MAX_RELEASES, RepeatedReleases

MECH = make_missingness("mcar-iid", rate=0.5)
DATA = np.arange(1.0, 7.0).reshape(3, 2)


def _count_observed(data, rng):
    return float(np.count_nonzero(~np.isnan(data)))


INNER = CallableImplementation(_count_observed, Claim(0.5, 1e-6, "t"), "observed",
                               batch_func=lambda ds, rng: (~np.isnan(ds)).sum(axis=(1, 2)) * 1.0)


def test_shared_masks_are_the_samplers_one_mask():
    rep = RepeatedReleases(INNER, 4, "shared", MECH)
    masked = np.where(MECH.sample_masks(DATA, np.random.default_rng(0)), np.nan, DATA)
    out = rep(masked, np.random.default_rng(1))
    assert out.shape == (4,) and np.all(out == out[0])  # the k calls read one masked table


def test_fresh_masks_redraw_the_missingness_for_every_release():
    rep = RepeatedReleases(INNER, 200, "fresh", MECH)
    out = rep(DATA, np.random.default_rng(1))
    # 6 entries each missing w.p. 1/2, independently per release: Binomial(6, 1/2) counts
    assert out.min() < out.max() and abs(out.mean() - 3.0) < 0.5
    batched = rep.batch(np.stack([DATA] * 5), np.random.default_rng(2))
    assert batched.shape == (5, 200) and len(np.unique(batched)) > 1


def test_the_k_release_claim_and_its_amplification():
    shared = RepeatedReleases(INNER, 10, "shared", MECH)
    fresh = RepeatedReleases(INNER, 10, "fresh", MECH)
    assert shared.claim.epsilon == 5.0 and shared.claim.delta == pytest.approx(1e-5)
    p = 0.75
    eps_s, delta_s = shared.amplified(p)
    assert eps_s == pytest.approx(math.log1p(p * math.expm1(5.0)))
    assert delta_s == pytest.approx(p * 1e-5)
    eps_f, delta_f = fresh.amplified(p)
    assert eps_f == pytest.approx(10 * math.log1p(p * math.expm1(0.5)))
    assert delta_f == pytest.approx(10 * p * 1e-6)
    assert eps_f < eps_s  # fresh masks compound the amplification, shared masks do not


@pytest.mark.parametrize("count, needle", [(0, "releases.count must be an integer"),
                                           (MAX_RELEASES + 1, "releases.count must be in"),
                                           (10**6, "releases.count must be in")])
def test_bad_counts_are_refused(count, needle):
    with pytest.raises(ValueError, match=needle):
        RepeatedReleases(INNER, count, "shared", MECH)


def test_an_unknown_mask_regime_is_refused():
    with pytest.raises(ValueError, match="releases.masks must be one of"):
        RepeatedReleases(INNER, 2, "sometimes", MECH)
