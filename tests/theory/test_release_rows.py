"""The k-release rows of the bound table (audit.theory.release_rows, docs/THEORY.md §9)."""

from __future__ import annotations

import math

import pytest

from audit.enums import MaskRegime
from audit.theory import releases as rel
from audit.theory.bounds import BoundRow, _point, bound_table
from audit.theory.release_rows import release_rows
from audit.theory.tradeoff import GaussianTradeoff, epsilon_for_delta


def test_bound_table_laplace_releases_pure_closed_forms():

    k, p, eps = 5, 0.4, 0.8
    shared = bound_table(eps, None, p, "laplace", rho=0.5, d=10, releases=k, masks="shared")
    by = {r.name: r for r in shared.bounds}
    assert by["f-DP of the composition under missingness"].epsilon == pytest.approx(
        math.log1p(p * math.expm1(k * 0.5 * eps)))
    assert by["generic amplification of the composition"].epsilon == pytest.approx(
        math.log1p(p * math.expm1(k * eps)))
    fresh = bound_table(eps, None, p, "laplace", rho=0.5, d=10, releases=k, masks="fresh")
    by = {r.name: r for r in fresh.bounds}
    per = math.log1p(p * math.expm1(0.5 * eps))
    assert by["f-DP composition under fresh masks"].epsilon == pytest.approx(k * per)
    assert by["basic composition of the per-release f-DP bound"].epsilon == pytest.approx(
        k * per, rel=1e-9)
    assert by["advanced composition of the per-release f-DP bound"].epsilon is None
    # the composed per-release guarantee is smaller than the shared-mask bound: not a bound
    comp = shared.comparisons[0]
    assert comp.epsilon < shared.bounds[-1].epsilon


def test_release_rows_gaussian_rules_and_regimes():
    pt = _point(1.0, 1e-5, 0.1, "gaussian", None, None, None, True, "mar")
    mu = 1 / math.sqrt(2 * math.log(1.25e5))
    rows, comps = release_rows(pt, BoundRow, 30, MaskRegime.SHARED, 1e-5)
    assert [r.masks for r in rows + comps] == ["shared"] * (len(rows) + len(comps))
    base = rows[0]
    assert base.epsilon == pytest.approx(
        epsilon_for_delta(GaussianTradeoff(math.sqrt(30) * mu), 1e-5), rel=1e-12)
    assert "G_(sqrt(k) mu)" in base.rule
    assert rows[-1].epsilon == pytest.approx(
        rel.shared_masks_epsilon(GaussianTradeoff(math.sqrt(30) * mu), 0.1, 1e-5), rel=1e-12)
    assert comps[0].epsilon < rows[-1].epsilon  # the invalid composition understates it
    rows, comps = release_rows(pt, BoundRow, 30, MaskRegime.FRESH, 1e-5)
    pld = next(r for r in rows if r.name == "f-DP composition under fresh masks")
    upper, error, _ = rel.fresh_masks_bracket(GaussianTradeoff(mu), 0.1, 30, 1e-5)
    assert (pld.epsilon, pld.error) == (upper, error)
    # the refined grid is never above the default one, and its error is within tolerance
    assert upper <= rel.fresh_masks_epsilon(GaussianTradeoff(mu), 0.1, 30, 1e-5) + 1e-12
    assert 0 < error <= 0.005 * upper
    direction = next(r for r in rows if r.name.startswith("fresh masks, direction by"))
    assert direction.epsilon < pld.epsilon and "covers pairs where one record" in direction.rule
    assert all(r.epsilon >= pld.epsilon for r in rows[1:] if r is not direction)
    assert "CLT" in comps[0].name


@pytest.mark.parametrize("masks,k,extra", [
    ("shared", 10, {}), ("fresh", 10, {}), ("shared", 3, {"rho": 0.5, "d": 10}),
    ("fresh", 4, {"scalar_output": False})])
def test_every_laplace_row_is_non_increasing_in_delta(masks, k, extra):
    """Issue 44: `bound --mechanism laplace --epsilon 1 --p-star 0.2 --releases 10 --masks
    shared --target-delta 1e-9` printed 10.001 and 8.39174, above the δ = 0 values 10 and
    8.39074 (a PLD rounds up). An (ε, 0)-DP mechanism is (ε, δ)-DP: every row capped."""
    deltas = [0.0, 1e-12, 1e-9, 1e-5, 1e-2]
    tables = [bound_table(1.0, None, 0.2, "laplace", releases=k, masks=masks,
                          target_delta=d, **extra) for d in deltas]
    names = {r.name for t in tables for r in t.bounds}
    assert len(names) >= 3
    for name in names:  # a row present at δ = 0 and δ > 0 (the direction row: δ > 0 only)
        values = [r.epsilon for t in tables for r in t.bounds if r.name == name]
        finite = [v for v in values if v is not None]
        assert all(a >= b for a, b in zip(finite[:-1], finite[1:], strict=True)), (name, values)
    if masks == "shared" and k == 10 and not extra:
        by = {r.name: r.epsilon for r in tables[2].bounds}
        assert by["base mechanism, k releases (no missingness)"] == pytest.approx(10.0)
        assert by["f-DP of the composition under missingness"] == pytest.approx(
            math.log1p(0.2 * math.expm1(10.0)))
        assert "capped at the delta = 0 value" in tables[2].bounds[0].rule


def test_the_cap_leaves_a_row_below_its_delta_zero_value_alone():
    # a large δ puts the PLD rows far below the pure value: no cap, no note
    t = bound_table(1.0, None, 0.2, "laplace", releases=10, masks="shared", target_delta=0.1)
    for r in t.bounds:
        assert r.epsilon < 10.0 and "capped" not in r.rule
