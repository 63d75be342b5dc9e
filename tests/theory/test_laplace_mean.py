"""The count's loss of a mean over the observed entries and the mean's upper end on boxes
(audit.theory.laplace_mean, docs/THEORY.md §10.8); the upper end against grids of outputs is
tested with the setting's worst case in test_observed_mean.py."""

from __future__ import annotations

import math

import numpy as np
import pytest


def test_count_loss_is_a_law_under_both_weights():
    """Unmoved, the s-law's masses are e^Y times Y's law and its tilted masses Y's law, each of
    total 1 (E[e^Y] = 1 under the NA record's count). Moved (Y up for ``s_down``, down for
    ``s_up``, then onto the grid) each total leaves 1 the way the move goes, by at most
    e^{±2 step}; Y moved up puts s lower."""
    from audit.theory.laplace_mean import count_loss

    c = count_loss(0.7, 6, 1e-6)
    assert 1.0 < c.s_down.masses.sum() <= math.exp(0.02)
    assert math.exp(-0.02) <= c.s_down.tilted.sum() < 1.0
    assert math.exp(-0.02) <= c.s_up.masses.sum() < 1.0
    assert 1.0 < c.s_up.tilted.sum() <= math.exp(0.02)
    mean = lambda law: float(np.sum(np.where(np.isfinite(law.points), law.points, -60)  # noqa: E731
                                    * law.tilted))
    assert mean(c.s_down) < mean(c.s_up) and c.top == pytest.approx(6 / 0.7)


def test_the_count_law_keeps_to_its_point_cap():
    """k = 128 releases of a count at b_N = 0.2 would put 1.6·10⁷ points on the sum's grid of
    0.01/k per release (about 1.3 GB in its FFTs): the step grows instead, and the law still
    moves the stated way (its e^Y-weighted mass above 1 for s_down, below for s_up) by at most
    the larger step."""
    from audit.theory import laplace_mean as lm

    k, b_n = 128, 0.2
    step = 2 * k * k / (b_n * lm._MAX_COUNT_POINTS)
    assert step > 0.01
    c = lm.count_loss(b_n, k, 1e-5)
    assert c.s_down.points.size <= 2 * k / (b_n * step) + 2
    assert 1.0 < c.s_down.masses.sum() <= math.exp(2 * step)
    assert math.exp(-2 * step) <= c.s_up.masses.sum() < 1.0


@pytest.mark.parametrize("kwargs,match", [({"k": 129}, "k must be at most 128"),
                                          ({"delta": 0.0}, "delta must be in"),
                                          ({"lo": 1.0}, "domain")])
def test_mean_upper_refusals(kwargs, match):
    from audit.theory.laplace_mean import count_loss, mean_upper

    args = {"lo": -1.0, "hi": 1.0, "q": 0.2, "b": 4.0, "k": 5, "delta": 1e-5, "floor": 2.0,
            "count": count_loss(2.0, 5, 1e-5)} | kwargs
    with pytest.raises(ValueError, match=match):
        mean_upper(**args)


@pytest.mark.parametrize("kwargs,match", [({"b_n": 0.0}, "b_n must be"),
                                          ({"k": 0}, "k must be")])
def test_count_loss_refusals(kwargs, match):
    from audit.theory.laplace_mean import count_loss

    with pytest.raises(ValueError, match=match):
        count_loss(**({"b_n": 2.0, "k": 5, "delta": 1e-5} | kwargs))
