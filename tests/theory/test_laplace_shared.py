"""The exact ε at δ = 0 of k Laplace releases from one table (audit.theory.laplace_shared,
docs/THEORY.md §10.3), against computations that use none of its reductions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from audit.theory.laplace_shared import laplace_shared_pure
from audit.theory.worst_case import Setting, worst_case


def _log_density(x: np.ndarray, c: float | None, na: float, q: float, b: float) -> np.ndarray:
    """ln of the k releases' density (up to (2b)^−k) at the rows of x: the record at c, or
    missing (c None), directly from the mixture (1 − q) Lap^k(na) + q Lap^k(c)."""
    lm = -np.abs(x - na).sum(axis=-1) / b
    if c is None:
        return lm
    lc = -np.abs(x - c).sum(axis=-1) / b
    return lc if q == 1.0 else np.logaddexp(math.log1p(-q) + lm, math.log(q) + lc)


# (lo, hi, na, q, b): NA inside, at an end, outside; q small, large and 1
SETTINGS = [(-1.0, 1.0, 0.0, 0.05, 1.0), (0.0, 1.0, 0.3, 0.5, 0.5), (0.0, 1.0, 0.0, 0.2, 1.0),
            (0.0, 1.0, 1.5, 0.7, 0.5), (-1.0, 1.0, 0.5, 1.0, 2.0), (0.0, 1.0, 0.85, 0.01, 0.2)]


@pytest.mark.parametrize("lo,hi,na,q,b", SETTINGS)
def test_two_releases_against_a_dense_grid_of_outputs_and_records(lo, hi, na, q, b):
    """k = 2: the largest log ratio over a 0.05 grid of outputs in R² and every pair of
    records on a 0.05 grid of the domain (and the missing record), both orders: never above the
    certified upper end, and within 1 % of it (the grid holds the maximiser's points)."""
    r = laplace_shared_pure(lo, hi, na, q, b, 2)
    step = 0.05
    pts = np.arange(min(lo, na) - 1.0, max(hi, na) + 1.0 + step / 2, step)
    x = np.stack(np.meshgrid(pts, pts), axis=-1).reshape(-1, 2)
    records = [None, *np.arange(lo, hi + step / 2, step)]
    dens = np.array([_log_density(x, c, na, q, b) for c in records])
    grid = max(float(np.max(dens[i] - dens[j])) for i in range(len(records))
               for j in range(len(records)))
    assert grid <= r.epsilon + 1e-9
    assert r.epsilon <= 1.01 * grid + 1e-9 and r.lower <= r.epsilon


@pytest.mark.parametrize("k", [3, 8])
def test_every_output_count_and_inner_record_stays_below_the_upper_end(k):
    """Every count of releases at (na, c, c′) (not only the two-count edges) and records c on a
    fine grid of the domain: the brute force never exceeds the certified upper end, and its
    largest value is the upper end within 1 %."""
    lo, hi, na, q, b = 0.0, 1.0, 0.3, 0.2, 0.7
    r = laplace_shared_pure(lo, hi, na, q, b, k)
    best = -math.inf
    for c in [na, *np.linspace(lo, hi, 201)]:
        for cp in (lo, hi, na):
            for a in range(k + 1):
                for nc in range(k + 1 - a):
                    x = np.array([na] * a + [c] * nc + [cp] * (k - a - nc))
                    v = float(_log_density(x, c, na, q, b) - _log_density(x, cp, na, q, b))
                    best = max(best, v)
    assert best <= r.epsilon + 1e-9 and r.epsilon <= 1.01 * best


@pytest.mark.parametrize("lo,hi,na,q,b,k", [
    (-1.0, 1.0, 0.0, 0.3, 1.0, 4),
    pytest.param(0.0, 1.0, 0.6, 0.1, 0.3, 6, marks=pytest.mark.slow)])
def test_an_optimiser_over_outputs_and_both_records_never_beats_the_upper_end(lo, hi, na, q, b,
                                                                             k):
    """Nelder–Mead from 200 seeded random starts over (x ∈ R^k, c, c′ ∈ [lo, hi]): no point
    above the certified end, and the best within 1 % of it."""
    r = laplace_shared_pure(lo, hi, na, q, b, k)
    rng = np.random.default_rng(44)

    def neg(z):
        c, cp = np.clip(z[-2:], lo, hi)
        x = z[:-2]
        return -float(_log_density(x, c, na, q, b) - _log_density(x, cp, na, q, b))

    best = -math.inf
    for _ in range(200):
        z0 = np.concatenate([rng.uniform(lo - 1, hi + 1, k), rng.uniform(lo, hi, 2)])
        res = optimize.minimize(neg, z0, method="Nelder-Mead",
                                options={"maxiter": 4000, "xatol": 1e-9, "fatol": 1e-12})
        best = max(best, -res.fun)
    assert best <= r.epsilon + 1e-9
    assert r.epsilon <= 1.01 * best


def test_the_issue_setting_and_the_count_like_closed_form():
    # issue 44: [7.005, 17.004] around an exact 7.056 (domain [−1, 1], NA 0, b = 1, q = 0.05,
    # k = 10): every release at hi against lo
    w = worst_case(Setting("laplace", 1.0, (-1.0, 1.0), 0.0, 0.05, 10), 0.0)
    exact = math.log((0.95 + 0.05 * math.exp(10)) / (0.95 + 0.05 * math.exp(-10)))
    assert w.exact and w.pair == ("hi", "lo") and w.upper_pair is None
    assert exact - 1e-12 <= w.epsilon <= exact + 1e-9 and round(exact, 3) == 7.056
    # the count-like domain (NA read as 0 = lo): the remove pair, ln(1 + q(e^{k/b} − 1)) (§9.5)
    r = laplace_shared_pure(0.0, 1.0, 0.0, 0.3, 0.5, 7)
    assert r.epsilon == pytest.approx(math.log1p(0.3 * math.expm1(14.0)), rel=1e-12)


def test_many_releases_need_no_k_vector():
    r = laplace_shared_pure(0.0, 1.0, 0.4, 0.1, 1.0, 10**12)
    assert r.epsilon - r.lower <= 1e-4 * r.lower and r.counts[1] == 10**12


@pytest.mark.parametrize("kwargs,match", [
    ({"lo": 1.0}, "domain"), ({"hi": math.inf}, "domain"), ({"na": math.nan}, "na"),
    ({"q": 0.0}, "q must be in"), ({"q": 1.5}, "q"), ({"b": 0.0}, "b"), ({"k": 0}, "k"),
    ({"rel_tol": 0.0}, "rel_tol")])
def test_bad_parameters_are_refused_by_name(kwargs, match):
    base = {"lo": 0.0, "hi": 1.0, "na": 0.5, "q": 0.5, "b": 1.0, "k": 3}
    with pytest.raises(ValueError, match=match):
        laplace_shared_pure(**{**base, **kwargs})


def test_opposite_pair_of_one_release_is_the_scalar_mixture_pair():
    """k = 1: the pair (hi, lo) is a pair of scalar mixtures, whose exact ε the pair
    integrator gives independently (audit.theory.pair)."""
    from audit.mixture import Mixture
    from audit.theory.laplace_shared import opposite_pair_epsilon
    from audit.theory.pair.epsilon import pair_epsilon

    lo, hi, m, q, b = -1.0, 2.0, 0.5, 0.3, 0.8
    P = Mixture([1 - q, q], [m, hi], "laplace", b)
    Q = Mixture([1 - q, q], [m, lo], "laplace", b)
    for delta in (1e-3, 1e-6):
        exact = pair_epsilon(P, Q, delta)
        low, high = opposite_pair_epsilon(lo, hi, m, q, b, 1, delta, step=0.002)
        assert low - exact.error <= exact.value <= high + exact.error
        assert high - low <= 0.005 * exact.value


def test_opposite_pair_of_two_releases_against_an_output_grid():
    """k = 2: D_γ integrated over R² on a midpoint grid of step 0.01 (each density a mixture
    of two product Laplace laws); ε from it lies in the certified bracket, up to the grid's
    error."""
    from audit.theory.laplace_shared import opposite_pair_epsilon

    lo, hi, m, q, b, delta = -1.0, 1.0, 0.0, 0.2, 1.0, 1e-3
    x = np.arange(-14.0, 14.0, 0.01) + 0.005
    lap = lambda c: np.exp(-np.abs(x - c) / b) / (2 * b)  # noqa: E731
    def dens(c):
        return (1 - q) * np.outer(lap(m), lap(m)) + q * np.outer(lap(c), lap(c))
    p, r = dens(hi), dens(lo)

    def excess(e):
        return float(np.maximum(p - np.exp(e) * r, 0.0).sum() * 1e-4) - delta

    from scipy.optimize import brentq
    ref = brentq(excess, 0.0, 4.0, xtol=1e-9)
    low, high = opposite_pair_epsilon(lo, hi, m, q, b, 2, delta, step=0.002)
    assert low - 2e-3 <= ref <= high + 2e-3
    assert high - low <= 2e-3


def test_opposite_pair_raises_the_lower_end_of_the_na_inside_bracket():
    """The setting of docs/THEORY.md §10.3 at δ = 1e-5: the pair (hi, lo) across the missing
    reading is worse than every record against the missing record."""
    from audit.theory.worst_case import Setting, _missing_record_lower, worst_case

    s = Setting("laplace", 1.0, (-1.0, 1.0), 0.0, 0.05, 10)
    w = worst_case(s, 1e-5)
    assert w.pair == ("hi", "lo") and w.lower > _missing_record_lower(s, 1e-5)[0] + 0.04
    assert w.lower == pytest.approx(6.902, abs=2e-3) and w.epsilon >= w.lower


@pytest.mark.parametrize("kwargs,match", [
    ({"na": 2.0}, "strictly inside"), ({"k": 129}, "at most 128"), ({"delta": 0.0}, "delta"),
])
def test_opposite_pair_refusals(kwargs, match):
    from audit.theory.laplace_shared import opposite_pair_epsilon

    args = {"lo": -1.0, "hi": 1.0, "na": 0.0, "q": 0.5, "b": 1.0, "k": 2, "delta": 1e-5,
            **kwargs}
    with pytest.raises(ValueError, match=match):
        opposite_pair_epsilon(**args)


def test_opposite_pair_without_missingness_is_the_composed_laplace_shift():
    """q = 1: the pair is k Laplace releases at hi against k at lo, whose ε dp_accounting's
    composed PLD brackets (pessimistic above, optimistic below); k = 20 puts the hockey stick
    deep in the tail of the k-fold laws."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    from audit.theory.laplace_shared import opposite_pair_epsilon

    lo, hi, m, b, k, delta = -1.0, 1.0, 0.25, 1.5, 20, 1e-6
    low, high = opposite_pair_epsilon(lo, hi, m, 1.0, b, k, delta, step=0.005)
    refs = [float(dpl.from_laplace_mechanism(b, sensitivity=hi - lo, pessimistic_estimate=est,
                                             value_discretization_interval=1e-4)
                  .self_compose(k).get_epsilon_for_delta(delta)) for est in (True, False)]
    assert low <= refs[0] + 1e-9 and refs[1] <= high + 1e-9
    assert high - low <= 0.01 * high


def test_past_the_kept_laws_the_pair_still_brackets_the_composed_shift():
    """k = 100 keeps more partial-sum points than ``_MAX_KEPT`` (each law is moved onto a
    coarser grid, the direction its bound needs): at q = 1 the bracket still holds
    dp_accounting's composed Laplace shift, within 1 %."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    from audit.theory import laplace_shared as ls

    lo, hi, m, b, k, delta = -1.0, 1.0, 0.25, 1.5, 100, 1e-6
    n = math.ceil(2 * (hi - m) * k / (b * 0.01))
    assert k * (k + 1) // 2 * n > ls._MAX_KEPT
    low, high = ls.opposite_pair_epsilon(lo, hi, m, 1.0, b, k, delta)
    refs = [float(dpl.from_laplace_mechanism(b, sensitivity=hi - lo, pessimistic_estimate=est,
                                             value_discretization_interval=1e-4)
                  .self_compose(k).get_epsilon_for_delta(delta)) for est in (True, False)]
    assert low <= refs[0] + 1e-9 and refs[1] <= high + 1e-9
    assert high - low <= 0.01 * high


def test_coarsened_partial_sums_bracket_the_same_pair(monkeypatch):
    """With every partial sum moved onto the coarse grid (``_MAX_KEPT`` 0) the bracket of a
    pair across the missing reading meets the full-resolution one and is wider by at most the
    extra move: a quarter of the sums' rounding (0.01, the default step) each way."""
    from audit.theory import laplace_shared as ls

    args = (-1.0, 2.0, 0.5, 0.3, 0.8, 12, 1e-5)
    fine = ls.opposite_pair_epsilon(*args)
    monkeypatch.setattr(ls, "_MAX_KEPT", 0)
    coarse = ls.opposite_pair_epsilon(*args)
    assert coarse[0] <= fine[1] and fine[0] <= coarse[1]
    assert fine[1] - fine[0] < coarse[1] - coarse[0] <= fine[1] - fine[0] + 0.005


def test_the_missing_reading_outside_the_domain_can_be_left_out_of_the_records():
    """na_is_record=False: the supremum over the domain's records only (what a mean over the
    observed entries needs, docs/THEORY.md §10.8): no pair names NA, it is at most the value
    with the NA record, and the domain's own corner pair (hi, lo) attains it here."""
    full = laplace_shared_pure(0.5, 1.5, 0.0, 0.3, 1.0, 4)
    domain = laplace_shared_pure(0.5, 1.5, 0.0, 0.3, 1.0, 4, na_is_record=False)
    assert "NA" in full.pair and "NA" not in domain.pair
    assert domain.epsilon < full.lower
    # every release at hi = 1.5 against lo = 0.5: u = L_0 − L_hi = 4·1.5, w = L_0 − L_lo = 4·0.5
    at_hi = math.log((0.7 + 0.3 * math.exp(6.0)) / (0.7 + 0.3 * math.exp(2.0)))
    assert domain.lower >= at_hi - 1e-9 and domain.pair == ("hi", "lo")


def _grid_densities(lo, hi, m, q, b, records, step=0.02, reach=12.0):
    """Each record's density of two releases from one table on a midpoint grid of R²
    (``None``: the missing record), from the mixture directly."""
    x = np.arange(m - reach * b, m + reach * b, step) + step / 2
    lap = lambda c: np.exp(-np.abs(x - c) / b) / (2 * b)  # noqa: E731
    base = np.outer(lap(m), lap(m))
    return {c: base if c is None else (1 - q) * base + q * np.outer(lap(c), lap(c))
            for c in records}, step * step


def _grid_epsilon(p, r, cell, delta):
    from scipy.optimize import brentq

    def excess(e):
        return float(np.maximum(p - np.exp(e) * r, 0.0).sum() * cell) - delta

    return 0.0 if excess(0.0) <= 0 else brentq(excess, 0.0, 30.0, xtol=1e-9)


@pytest.mark.parametrize("lo,hi,m,q,b,delta", [
    (-1.0, 1.0, 0.0, 0.3, 1.0, 1e-2), (-1.0, 2.0, 0.5, 0.5, 1.0, 1e-3),
    (-0.5, 1.0, 0.0, 0.2, 0.5, 1e-2)])
def test_the_shared_upper_end_holds_every_pair_of_a_grid_of_records_at_two_releases(
        lo, hi, m, q, b, delta):
    """k = 2: the worst ε(δ) over 13 records of the domain and the missing record, each pair
    integrated over R² on a grid, is below the certified upper end (up to the grid's error)
    and attained within 0.5 % by the lower end's pair."""
    from audit.theory.laplace_shared import opposite_pair_epsilon, shared_upper

    records = [None, *np.linspace(lo, hi, 12)]
    dens, cell = _grid_densities(lo, hi, m, q, b, records)
    worst = max(_grid_epsilon(dens[c], dens[cp], cell, delta)
                for c in records for cp in records if c is not cp)
    low = max(opposite_pair_epsilon(lo, hi, m, q, b, 2, delta)[0],
              opposite_pair_epsilon(2 * m - hi, 2 * m - lo, m, q, b, 2, delta)[0])
    upper = shared_upper(lo, hi, m, q, b, 2, delta, low)
    assert upper is not None and upper <= 1.005 * low
    assert worst <= upper + 2e-3 and worst >= low - 2e-3


@pytest.mark.parametrize("d0,d1", [(0.0, 1.0), (0.3, 0.7), (0.9, 1.0), (0.5, 0.5)])
@pytest.mark.parametrize("across", [True, False])
def test_a_box_bound_holds_each_record_of_its_box(d0, d1, across):
    """The bound on a box of numerators c ∈ [m + d0, m + d1] against lo (across m) or hi (the
    same side) is at least each record's own D_γ at two releases, integrated on a grid;
    across m, at a point box it is that record's (within the grid's error)."""
    from audit.theory.laplace_shared import _Boxes

    lo, hi, m, q, b, delta = -1.0, 1.0, 0.0, 0.4, 1.0, 1e-3
    gamma = math.exp(0.8 if across else 0.3)
    boxes = _Boxes(lo, hi, m, q, b, 2, delta, step=0.002)
    bound = boxes.delta(d0, d1, gamma, None if across else hi - m - d0)
    den = lo if across else hi
    records = list(np.linspace(m + d0, m + d1, 5))
    dens, cell = _grid_densities(lo, hi, m, q, b, [*records, den], step=0.01)
    each = [float(np.maximum(dens[c] - gamma * dens[den], 0.0).sum() * cell)
            for c in records]
    assert max(each) <= bound + 2e-4
    if d0 == d1 and across:
        assert bound <= max(each) + 2e-3


def test_the_shared_upper_end_refuses_a_target_below_the_pair_itself():
    """A target 0.5 % under the exact (hi, lo) pair cannot be certified: the box holding hi
    contains the pair."""
    from audit.theory.laplace_shared import opposite_pair_epsilon, shared_upper

    low, _ = opposite_pair_epsilon(-1.0, 1.0, 0.0, 0.05, 1.0, 10, 1e-5)
    assert shared_upper(-1.0, 1.0, 0.0, 0.05, 1.0, 10, 1e-5, 0.995 * low,
                        targets=(0.0,)) is None
    assert shared_upper(-1.0, 1.0, 0.0, 0.05, 1.0, 10, 1e-5, low) <= 1.001 * low


def test_the_na_inside_setting_of_the_theory_section_closes_at_delta_above_zero():
    """docs/THEORY.md §10.3's setting (b = 1, [−1, 1], m = 0, q = 0.05, k = 10) at δ = 1e-5:
    the bracket was [6.902, 7.056] (2.2 %); now within 0.1 %, exact, the upper end's pair the
    lower end's."""
    w = worst_case(Setting("laplace", 1.0, (-1.0, 1.0), 0.0, 0.05, 10), 1e-5)
    assert w.exact and w.pair == w.upper_pair == ("hi", "lo")
    assert 6.9019 <= w.lower <= 6.9021 and w.epsilon <= 1.001 * w.lower


@pytest.mark.parametrize("kwargs,match", [
    ({"na": 1.0}, "strictly inside"), ({"k": 129}, "at most 128"), ({"delta": 1.0}, "delta"),
])
def test_shared_upper_refusals(kwargs, match):
    from audit.theory.laplace_shared import shared_upper

    args = {"lo": -1.0, "hi": 1.0, "na": 0.0, "q": 0.5, "b": 1.0, "k": 2, "delta": 1e-5,
            "floor": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        shared_upper(**args)
