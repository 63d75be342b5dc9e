"""The certified grid expectations (audit.theory.grid_expectation) against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.theory.grid_expectation import (
    GridLaw,
    blocks,
    coarsen,
    expectation,
    power,
    solve_epsilon,
)


def _law(rng, n):
    pts = np.sort(rng.normal(size=n))
    m = rng.random(n)
    return GridLaw.exact(pts, m / m.sum())


@pytest.mark.parametrize("A,B,C", [(-0.5, 0.3, 1.2), (0.7, 0.0, 0.9), (0.4, 0.2, 0.0),
                                   (-1.0, 1.0, 0.5)])
def test_expectation_against_brute_force(A, B, C):
    rng = np.random.default_rng(7)
    s, t, r = _law(rng, 30), _law(rng, 40), _law(rng, 25)
    grid = np.maximum(A * np.exp(s.points)[:, None, None] + B * np.exp(t.points)[None, :, None]
                      - C * np.exp(r.points)[None, None, :], 0.0)
    brute = float(np.einsum("i,j,k,ijk->", s.masses, t.masses, r.masses, grid))
    value, err = expectation(A, B, C, s, t, r)
    assert value == pytest.approx(brute, rel=1e-12, abs=1e-15) and err < 1e-13


@pytest.mark.parametrize("shift", [-2.5, -60.0])
def test_pairs_past_the_largest_t_are_skipped_exactly(shift):
    """With A ≤ 0 the pairs (s, r) whose C e^r or −A e^s reaches B e^t at t's largest point add
    nothing and are skipped: t moved down leaves few (or no) pairs, and the value is still the
    brute-force one (0 when none is left)."""
    rng = np.random.default_rng(11)
    s, t, r = _law(rng, 30), _law(rng, 40), _law(rng, 25)
    t = GridLaw.exact(t.points + shift, t.masses)
    A, B, C = -0.4, 0.9, 0.6
    grid = np.maximum(A * np.exp(s.points)[:, None, None] + B * np.exp(t.points)[None, :, None]
                      - C * np.exp(r.points)[None, None, :], 0.0)
    brute = float(np.einsum("i,j,k,ijk->", s.masses, t.masses, r.masses, grid))
    value, _ = expectation(A, B, C, s, t, r)
    assert value == pytest.approx(brute, rel=1e-12, abs=1e-300)
    assert (brute == 0.0) == (shift == -60.0) and (value == 0.0) == (brute == 0.0)


def test_gaussian_t_in_closed_form_against_quadrature():
    v, A, B, C = 0.8, -0.3, 0.4, 0.6
    s = GridLaw.exact([-0.2, 0.1], [0.5, 0.5])
    r = GridLaw.exact([0.3], [1.0])
    value, _ = expectation(A, B, C, s, GridLaw.exact([0.0], [1.0]), r, variance=v)
    f = stats.norm(-v / 2, math.sqrt(v))
    x = np.linspace(-12, 12, 200_001)
    ref = sum(w * np.trapezoid(np.maximum(A * math.exp(si) + B * np.exp(x) - C * math.exp(0.3),
                                          0.0) * f.pdf(x), x)
              for si, w in zip(s.points, s.masses, strict=True))
    assert value == pytest.approx(ref, rel=1e-6)


def test_coarsen_moves_every_value_the_stated_way():
    rng = np.random.default_rng(3)
    law = _law(rng, 500)
    pts, m = law.points, law.masses
    for up in (True, False):
        c = coarsen(law, up, 0.1, 1e-6)
        cp, cm = c.points, c.masses
        # the tilted masses are m·e^x at the moved points
        finite = np.isfinite(cp)
        assert np.allclose(c.tilted[finite], cm[finite] * np.exp(cp[finite]), rtol=1e-12)
        # stochastic order: the coarse law's CDF is below (up) or above (down) the fine one
        grid = np.linspace(-4, 4, 801)
        fine = np.array([m[pts <= g].sum() for g in grid])
        coarse = np.array([cm[cp <= g].sum() for g in grid])
        assert np.all(coarse <= fine + 1e-12) if up else np.all(coarse >= fine - 1e-12)
        assert cm.sum() <= 1 + 1e-12


@pytest.mark.parametrize("up", [True, False])
def test_blocks_move_every_value_the_stated_way(up):
    rng = np.random.default_rng(5)
    pts = -3.0 + 0.01 * np.arange(601)
    m = rng.random(601)
    law = GridLaw.exact(pts, m / m.sum())
    c = blocks(law, up, 7)
    assert np.allclose(np.diff(c.points), 0.07) and c.points[0] == pts[0]
    assert c.masses.sum() == pytest.approx(1.0, rel=1e-14)
    assert np.allclose(c.tilted, c.masses * np.exp(c.points), rtol=1e-12)
    fine = np.cumsum(law.masses)
    coarse = np.array([c.masses[c.points <= x + 1e-12].sum() for x in pts])
    # stochastic order, and no value moves past the next coarse point
    assert np.all(coarse <= fine + 1e-12) if up else np.all(coarse >= fine - 1e-12)
    reach = np.array([c.masses[c.points <= x + (0.07 if up else -0.07) + 1e-12].sum()
                      for x in pts])
    assert np.all(reach >= fine - 1e-12) if up else np.all(reach <= fine + 1e-12)


@pytest.mark.parametrize("r,n,match", [(0, 5, "r must be"), (2.0, 5, "r must be"),
                                       (True, 5, "r must be"), (2, 1, "at least two")])
def test_blocks_refuses_bad_input_by_name(r, n, match):
    law = GridLaw.exact(0.1 * np.arange(n), np.full(n, 1.0 / n))
    with pytest.raises(ValueError, match=match):
        blocks(law, True, r)


def test_solve_epsilon_returns_the_side_each_bound_needs():
    def bound(e):  # a δ bound crossing 1e-3 at e = 1
        return 1e-3 * math.exp(-5 * (e - 1))
    hi = solve_epsilon(bound, 1e-3, 4.0, upper=True)
    lo = solve_epsilon(bound, 1e-3, 4.0, upper=False)
    assert bound(hi) <= 1e-3 < bound(lo) and 0 < hi - lo < 1e-4


def test_tilted_masses_stay_accurate_far_in_the_upper_tail():
    """The k-fold law's tilted masses convolved apart keep their relative accuracy where the
    masses themselves are below the FFT's absolute rounding: at the top of 40 releases of a
    loss in [−1, 1] (untilted mass 3.9e-30, tilted 9.1e-13)."""
    pts = np.array([-1.0, 0.0, 1.0])
    m = np.array([0.5, 0.5 - 0.5 * math.exp(-1.0), 0.5 * math.exp(-1.0)])
    mt = m * np.exp(pts)
    top_exact = (m[-1] * math.e) ** 40  # all 40 at the top, tilted
    assert power(mt, 40)[-1] == pytest.approx(top_exact, rel=1e-9)
    # the untilted route loses it: 3.9e-30 is below the FFT's rounding (0 here, or noise)
    assert abs(power(m, 40)[-1] * math.exp(40) - top_exact) > 0.5 * top_exact
