"""Tests for audit.theory.pair.epsilon: ε_pair(δ) against the closed forms, with its bracket."""

from __future__ import annotations

import numpy as np

from audit.theory.pair import pair_epsilon

from .common import gauss_delta, single


def test_pair_epsilon_inverts_closed_forms():
    P, Q = single("gaussian", 1.0), single("gaussian", 0.0)
    r = pair_epsilon(P, Q, 1e-5)
    assert abs(gauss_delta(r.value, 1.0) - 1e-5) < 1e-12
    assert gauss_delta(r.value - r.error, 1.0) >= 1e-5 >= gauss_delta(r.value + r.error, 1.0)
    PL, QL = single("laplace", 3.0), single("laplace", 0.0)
    r = pair_epsilon(PL, QL, 0.01)
    assert abs(r.value - (3.0 + 2 * np.log(0.99))) <= r.error + 1e-12
    assert pair_epsilon(P, Q, 0.0).value == np.inf
    assert pair_epsilon(P, Q, 1.0).value == 0.0
