"""The certified δ of a mean's pair of two observed records at one Gaussian release
(audit.theory.mean_pair; its agreement with nested quadrature is in test_observed_mean.py):
the absolute width at which the cell halving stops."""

from __future__ import annotations

import pytest

from audit.theory.mean_pair import gaussian_pair_delta_bounds


@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_an_absolute_width_stops_the_halving_and_keeps_the_bracket(eps):
    """With ``atol`` the bracket stops once it is that wide, and it still holds the tighter
    one: at ε = 1 the pair of this setting (a mean at q = 0.05, split 0.9) has δ near 10⁻³⁰⁰,
    whose relative width of 10⁻⁶ the halving never reached (over 100 s before)."""
    a, tau, q = 0.0902559090586809, 0.020056868679706862, 0.05
    fine = gaussian_pair_delta_bounds(a, -a, tau, q, eps, max_cells=5_000)
    lo, up = gaussian_pair_delta_bounds(a, -a, tau, q, eps, atol=1e-12)
    assert lo <= fine[1] and fine[0] <= up
    assert up - lo <= 1e-6 * up + 1e-12


def test_no_absolute_width_is_the_relative_one():
    lo, up = gaussian_pair_delta_bounds(1.3, -0.8, 0.9, 0.3, 0.7)
    assert lo == gaussian_pair_delta_bounds(1.3, -0.8, 0.9, 0.3, 0.7, atol=0.0)[0]
    assert up - lo <= 1e-6 * up


@pytest.mark.parametrize("atol", [-1e-9, float("nan"), float("inf")])
def test_a_bad_absolute_width_is_refused_by_name(atol):
    with pytest.raises(ValueError, match="atol"):
        gaussian_pair_delta_bounds(1.3, -0.8, 0.9, 0.3, 0.7, atol=atol)
