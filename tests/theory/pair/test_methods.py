"""audit.theory.pair.methods: the per-noise steps of the exact-pair integrator."""

from __future__ import annotations

import numpy as np
import pytest

from audit.mixture import Mixture
from audit.theory.pair.methods import pair_method


def _pair(noise: str, scale: float) -> tuple[Mixture, Mixture]:
    return (Mixture(np.array([1.0]), np.array([1.0]), noise, scale),
            Mixture(np.array([1.0]), np.array([0.0]), noise, scale))


def test_laplace_sup_log_ratio_is_the_shift_over_the_scale():
    P, Q = _pair("laplace", 2.0)
    m = pair_method("laplace")
    assert m.closed_form_split
    assert m.sup_log_ratio(P, Q).value == pytest.approx(0.5, abs=1e-12)


def test_gaussian_split_is_the_half_line_of_the_likelihood_ratio():
    P, Q = _pair("gaussian", 1.0)
    m = pair_method("gaussian")
    assert not m.closed_form_split and m.t_range(P, Q) > 0
    t = 0.3
    split = m.split(P, Q, t)
    # {p > e^t q} for two unit Gaussians 1 apart is x > 1/2 + t: one cut, labelled 0 then +1
    inside = split.cuts[np.asarray(split.labels)[1:] == 1]
    assert inside.size >= 1 and inside[0] == pytest.approx(0.5 + t, abs=1e-9)
    assert m.sup_log_ratio(P, Q).value == np.inf  # the Gaussian log ratio is unbounded


def test_unknown_noise_is_refused():
    with pytest.raises(ValueError, match="noise"):
        pair_method("cauchy")
