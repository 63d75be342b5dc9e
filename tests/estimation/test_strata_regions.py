"""One region per rate for stratified audits (audit.estimation.strata_regions; THEORY §8.5)."""

from __future__ import annotations

import numpy as np
import pytest

from audit.enums import Direction
from audit.estimation.regions import Region
from audit.estimation.strata import stratum_weights
from audit.estimation.strata_regions import predicted_eps, rate_regions


def test_rate_regions_follow_each_rates_strata():
    # bins scored 2, 1, 0. Stratum 0 (all of π = 0): z in bin 0, z′ mostly in bin 2; stratum 2
    # (all of π = 1): z′ in bin 2, z mostly in bin 0. So π = 0 takes {score ≥ 2} (z over z′,
    # numerator mass 1 against z′'s 0.8 the other way) and π = 1 {score ≤ 0} (z′ over z)
    scores = np.array([2.0, 1.0, 0.0])
    w = stratum_weights(2, [0.0, 1.0])
    hp = np.array([[50, 0, 0], [10, 10, 10], [40, 10, 0]])
    hq = np.array([[0, 10, 40], [10, 10, 10], [0, 0, 50]])
    r0, r1 = rate_regions(hp, hq, scores, w, w, 0.0, guard_alpha=1e-3)
    assert r0 == Region(Direction.Z_VS_ZPRIME, 2.0)
    assert r1 == Region(Direction.ZPRIME_VS_Z, 0.0)
    with pytest.raises(ValueError, match="reached no bin"):
        rate_regions(hp * 0, hq * 0, scores, w, w, 0.0, guard_alpha=1e-3)


def test_a_pooled_region_replaces_a_rate_pick_the_main_run_bounds_better():
    # z′ releases a number (bin 0) only in stratum 0 (weight 8e-4 at π = 0.3), z never
    # does; every other call releases NaN (bin 1). The rate-weighted guard sees a mass of
    # 8e-4 and prefers the near-sure NaN bin (ε ≈ 8e-4); the main run measures the number's
    # stratum well, so the pooled candidate {finite} predicts more and replaces it
    scores = np.array([0.0, 1.0])
    w_q, w_p = stratum_weights(20, [0.3]), stratum_weights(19, [0.3])
    hq = np.zeros((21, 2), dtype=int)
    hq[:, 1] = 48
    hq[0] = [48, 0]
    hp = np.zeros((20, 2), dtype=int)
    hp[:, 1] = 50
    (own,) = rate_regions(hp, hq, scores, w_p, w_q, 0.0, guard_alpha=1e-3)
    assert own == Region(Direction.Z_VS_ZPRIME, 1.0)  # the NaN bin
    finite = Region(Direction.ZPRIME_VS_Z, 0.0)
    (best,) = rate_regions(hp, hq, scores, w_p, w_q, 0.0, guard_alpha=1e-3, also=(finite,),
                           trials=20_000, alpha_side=0.025)
    assert best == finite
    assert predicted_eps(_freq(hq, 0), _freq(hp, 0), w_q, w_p, 20_000, 0.025)[0] > 1.0


def _freq(h, b):
    h = np.asarray(h, dtype=float)
    return h[:, b] / h.sum(axis=1)
