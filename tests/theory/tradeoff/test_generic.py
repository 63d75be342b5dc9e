"""Tests for audit.theory.tradeoff.generic: piecewise-linear and callable curves."""

from __future__ import annotations

import numpy as np
import pytest

from audit.theory.tradeoff import (
    CallableTradeoff,
    DPTradeoff,
    GaussianTradeoff,
    PiecewiseLinearTradeoff,
)


def test_generic_inverse_of_nonsymmetric_curve():
    pl = PiecewiseLinearTradeoff([0.0, 0.1, 1.0], [0.5, 0.2, 0.0])
    assert not pl.symmetric
    beta = np.array([0.0, 0.1, 0.2, 0.35, 0.5, 0.9])
    # inf{α: f(α) ≤ β}, by hand
    expected = np.array([1.0, 0.55, 0.1, 0.05, 0.0, 0.0])
    assert np.allclose(pl.inverse(beta), expected, atol=1e-12)


def test_piecewise_linear_and_callable_symmetry_detection():
    dp = DPTradeoff(1.0, 0.05)
    x = np.unique(np.concatenate([np.linspace(0, 1, 201), dp._kinks()]))  # exact interpolation
    pl = PiecewiseLinearTradeoff(x, dp(x))
    assert pl.symmetric
    assert not CallableTradeoff(lambda a: np.maximum(0.0, 0.5 - 0.5 * a)).symmetric
    assert CallableTradeoff(GaussianTradeoff(1.5)).symmetric
    noisy = PiecewiseLinearTradeoff([0.0, 0.3, 0.5, 0.6, 1.0], [1.0, 0.4, 0.45, 0.1, 0.0],
                                    symmetric=False, convexify=True)
    assert np.all(np.diff(noisy.alphas) > 0) and 0.5 not in noisy.alphas



BAD = [
    ("alphas", lambda: PiecewiseLinearTradeoff([0.0, 1.5], [1.0, 0.0])),
    ("betas", lambda: PiecewiseLinearTradeoff([0.0, 1.0], [0.0, 1.0])),
]


@pytest.mark.parametrize(("name", "call"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_bad_input_names_parameter(name, call):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
