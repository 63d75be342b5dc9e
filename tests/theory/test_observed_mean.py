"""The worst case of a mean over the observed entries, count private (audit.theory.observed_mean,
docs/THEORY.md §10.8), against computations that share none of its reductions: scipy's 2-D
quadrature of the hockey-stick integrand, and brute-force maxima over grids of outputs and
records of the log density ratio written from the model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from audit.theory.observed_mean import (
    ObservedMeanSetting,
    gaussian_pair_delta_bounds,
    observed_mean_worst_case,
)


def _width_ok(w) -> bool:
    return w.epsilon - w.lower <= 0.01 * w.epsilon + 1e-9


# ------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("kwargs,name", [
    ({"noise": "cauchy"}, "noise"), ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1}, "epsilon"),
    ({"delta": 1e-5}, "delta"), ({"domain": (1.0, 1.0)}, "domain"),
    ({"domain": (0, math.inf)}, "domain"), ({"observation": 0.0}, "observation"),
    ({"observation": 1.5}, "observation"), ({"releases": 0}, "releases"),
    ({"releases": 2.5}, "releases"), ({"masks": "persistent"}, "masks"),
    ({"masks": "sometimes"}, "masks"), ({"split": 0.0}, "split"), ({"split": 1.0}, "split"),
])
def test_bad_laplace_settings_are_refused_naming_the_parameter(kwargs, name):
    base = {"noise": "laplace", "epsilon": 1.0, "delta": 0.0, "domain": (-1.0, 1.0),
            "observation": 0.5}
    with pytest.raises(ValueError, match=name):
        ObservedMeanSetting(**{**base, **kwargs})


@pytest.mark.parametrize("kwargs,name", [
    ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"), ({"epsilon": 3.0}, "epsilon"),
    ({"epsilon": 1.5, "split": 0.8}, "epsilon"),
])
def test_bad_gaussian_settings_are_refused_naming_the_parameter(kwargs, name):
    base = {"noise": "gaussian", "epsilon": 1.0, "delta": 1e-5, "domain": (-1.0, 1.0),
            "observation": 0.5}
    with pytest.raises(ValueError, match=name):
        ObservedMeanSetting(**{**base, **kwargs})


def test_refusals_of_the_worst_case():
    s = ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1, 1), 0.5)
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            observed_mean_worst_case(s, bad)
    with pytest.raises(ValueError, match="setting"):
        observed_mean_worst_case("s", 1e-5)
    # Laplace with fresh masks at δ > 0 is not built (Gaussian is: test_observed_mean_fresh)
    fresh = ObservedMeanSetting("laplace", 1.0, 0.0, (-1, 1), 0.5, releases=3, masks="fresh")
    with pytest.raises(ValueError, match="masks"):
        observed_mean_worst_case(fresh, 1e-5)


def test_calibration_of_the_two_coordinates():
    lap = ObservedMeanSetting("laplace", 2.0, 0.0, (0.5, 3.0), 0.5, split=0.25)
    assert lap.sum_scale == pytest.approx(3.0 / 0.5)  # Δ_S = max(2.5, 3, 0.5)
    assert lap.count_scale == pytest.approx(1.0 / 1.5)
    g = ObservedMeanSetting("gaussian", 1.0, 1e-5, (-2.0, 1.0), 0.5)
    c = math.sqrt(2 * math.log(1.25 / 5e-6))
    assert g.sum_scale == pytest.approx(3.0 * c / 0.5)
    assert g.count_scale == pytest.approx(c / 0.5)


# ------------------------------------------------------------------------ Gaussian, 2-D
def _npdf(z, s):
    return math.exp(-0.5 * (z / s) ** 2) / (s * math.sqrt(2 * math.pi))


def _quad_delta(ca, cb, sig_s, sig_n, q, eps):
    """D_{e^ε}(P_a‖P_b) by nested scipy quadrature of (p_a − e^ε p_b)_+ over (sum, count) in the
    original scale (a record None is the NA record). At each sum x the integrand in the count y
    is A(x)N(y; 0) + B(x)N(y; 1), read off the densities; its one sign change is passed to the
    inner quadrature as a breakpoint."""
    g = math.exp(eps)

    def coef(c, x):  # (weight of the count-0 part, of the count-1 part) at sum x
        if c is None:
            return _npdf(x, sig_s), 0.0
        return (1 - q) * _npdf(x, sig_s), q * _npdf(x - c, sig_s)

    def inner(x):
        (a0, a1), (b0, b1) = coef(ca, x), coef(cb, x)
        A, B = a0 - g * b0, a1 - g * b1
        if A <= 0 and B <= 0:
            return 0.0
        pts = None
        if A * B < 0:
            pts = [sig_n ** 2 * math.log(-A / B) + 0.5]

        def f(y):
            return max(A * _npdf(y, sig_n) + B * _npdf(y - 1, sig_n), 0.0)
        lim = 14 * sig_n + 2 + (abs(pts[0]) if pts else 0.0)
        return integrate.quad(f, -lim, lim, points=pts, epsabs=1e-15, epsrel=1e-11,
                              limit=200)[0]

    lim = 14 * sig_s + 3
    return integrate.quad(inner, -lim, lim, epsabs=1e-14, epsrel=1e-10, limit=400)[0]


@pytest.mark.parametrize("a,a2,tau,q,eps", [(1.3, -0.8, 0.9, 0.3, 0.7), (-0.8, 1.3, 0.9, 0.3, 0.7),
                                            (2.0, 0.5, 0.4, 0.05, 0.2), (0.3, -1.0, 2.0, 1.0, 0.5)])
def test_pair_delta_bounds_hold_the_2d_integral(a, a2, tau, q, eps):
    """The certified (lower, upper) of one order's δ hold scipy's nested 2-D quadrature (whitened:
    σ = 1 on both coordinates), and are within 1e-6 relative of each other."""
    lo, up = gaussian_pair_delta_bounds(a, a2, tau, q, eps)
    ref = _quad_delta(a, a2, 1.0, 1.0 / tau, q, eps)
    assert lo - 1e-10 <= ref <= up + 1e-10
    assert up - lo <= 1e-6 * up + 1e-300


def test_one_gaussian_release_against_the_2d_integral():
    """k = 1: ε of the setting solved independently from the nested quadrature's δ for every
    ordered pair of {lo, hi, NA} lies in the bracket (width ≤ 1 %)."""
    s = ObservedMeanSetting("gaussian", 2.0, 1e-2, (-1.0, 0.5), 0.3)
    target = 1e-3
    w = observed_mean_worst_case(s, target)
    assert _width_ok(w) and w.exact
    recs = {"hi": 0.5, "lo": -1.0, "NA": None}
    pairs = [(a, b) for a in recs for b in recs if a != b]

    def worst_delta(e):
        return max(_quad_delta(recs[a], recs[b], s.sum_scale, s.count_scale,
                                  s.observation, e) for a, b in pairs)

    eps_ref = optimize.brentq(lambda e: worst_delta(e) - target, 0.0, 5.0, xtol=1e-7)
    assert w.lower - 1e-6 <= eps_ref <= w.epsilon + 1e-6


@pytest.mark.parametrize("dom,tau,q", [((-1.0, 1.0), 0.8, 0.3), ((0.5, 2.0), 0.5, 0.2),
                                       ((-3.0, 0.5), 1.5, 0.6)])
def test_corner_lemma_on_a_grid_of_records(dom, tau, q):
    """At γ = e^0.5 no pair of a 6-point grid of the domain (certified lower ends) exceeds the
    largest certified upper end over the corner pairs (hi, lo) and (lo, hi) and the pairs with
    NA (their δ via the nested quadrature at σ_S = 1, σ_N = 1/τ)."""
    lo, hi = dom
    eps = 0.5
    corner = max(gaussian_pair_delta_bounds(lo, hi, tau, q, eps)[1],
                 gaussian_pair_delta_bounds(hi, lo, tau, q, eps)[1],
                 *(_quad_delta(c, None, 1.0, 1.0 / tau, q, eps) + 1e-9 for c in dom),
                 *(_quad_delta(None, c, 1.0, 1.0 / tau, q, eps) + 1e-9 for c in dom))
    grid = np.linspace(lo, hi, 6)
    inner = max(gaussian_pair_delta_bounds(a, b, tau, q, eps)[0]
                for a in grid for b in grid if a != b)
    assert inner <= corner


def _gauss_eps(delta, mu):
    """The Gaussian shift's exact ε(δ) by brentq on its closed-form profile."""
    n = stats.norm

    def f(e):
        return n.cdf(-e / mu + mu / 2) - math.exp(e) * n.cdf(-e / mu - mu / 2) - delta
    return optimize.brentq(f, 0.0, 50 * mu + 50, xtol=1e-12)


@pytest.mark.parametrize("k", [1, 50])
def test_gaussian_without_missingness_is_the_base_mechanism(k):
    """q = 1: no amplification; the worst pair is a Gaussian shift at the largest whitened
    distance: (hi, lo) moves the sum by hi − lo, (c, NA) moves (c, 1)."""
    s = ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1.0, 2.0), 1.0, releases=k)
    w = observed_mean_worst_case(s, 1e-5)
    ss, sn = s.sum_scale / math.sqrt(k), s.count_scale / math.sqrt(k)
    mu = max(3.0 / ss, math.hypot(2.0 / ss, 1.0 / sn))
    ref = _gauss_eps(1e-5, mu)
    assert w.lower - 1e-9 <= ref <= w.epsilon + 1e-9 and _width_ok(w)


def test_gaussian_shared_releases_amplify_and_delta_zero_is_infinite():
    s = ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1.0, 1.0), 0.1, releases=100)
    w = observed_mean_worst_case(s, 1e-5)
    assert _width_ok(w) and w.pair == ("hi", "NA")
    full = observed_mean_worst_case(ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1.0, 1.0),
                                                        1.0, releases=100), 1e-5)
    assert w.epsilon < full.lower
    assert math.isinf(observed_mean_worst_case(s, 0.0).epsilon)


# --------------------------------------------------------------------- Laplace, δ = 0
def _laplace_brute(lo, hi, q, bs, bn, k, step):
    """Largest |ln p_a/p_b| over a grid of outputs ((sum, count) per release) and of records
    (a 0.25 grid of the domain and NA), from the densities of the model."""
    pts = np.arange(min(lo, 0.0) - 0.5, max(hi, 0.0) + 0.5 + step / 2, step)
    ys = np.array([-0.5, 0.0, 0.5, 1.0, 1.5])
    grids = np.meshgrid(*([pts] * k + [ys] * k), indexing="ij")
    out = np.stack([g.reshape(-1) for g in grids], axis=-1)
    x, y = out[:, :k], out[:, k:]
    ref = -(np.abs(x).sum(1) / bs + np.abs(y).sum(1) / bn)
    dens = [ref]
    for c in np.arange(lo, hi + 1e-9, 0.25):
        obs = -(np.abs(x - c).sum(1) / bs + np.abs(y - 1).sum(1) / bn)
        dens.append(obs if q == 1 else np.logaddexp(math.log1p(-q) + ref, math.log(q) + obs))
    d = np.array(dens)
    return float(np.max(d.max(axis=0) - d.min(axis=0)))


@pytest.mark.parametrize("dom,q,k,split", [((-1.0, 1.0), 0.2, 1, 0.5), ((0.5, 2.0), 0.3, 1, 0.9),
                                           ((-1.0, 0.5), 0.05, 2, 0.8), ((0.5, 1.5), 0.6, 2, 0.95),
                                           ((-1.0, 1.0), 1.0, 2, 0.5)])
def test_laplace_pure_against_brute_force(dom, q, k, split):
    s = ObservedMeanSetting("laplace", 1.0, 0.0, dom, q, releases=k, split=split)
    w = observed_mean_worst_case(s, 0.0)
    brute = _laplace_brute(*dom, q, s.sum_scale, s.count_scale, k, 0.05 if k == 1 else 0.125)
    assert brute <= w.epsilon + 1e-9
    assert brute >= 0.99 * w.epsilon and w.exact


def test_domain_pairs_ignore_the_fictitious_record_zero():
    """Domain [0.5, 1.5]: the branch and bound of §10.3 admits the record at its NA reading 0,
    not a record here; the domain pairs alone (brute force over outputs, Y at its top) are
    below §10.3's value and equal to the restricted one."""
    from audit.theory.laplace_shared import laplace_shared_pure
    from audit.theory.observed_mean import _domain_pure

    lo, hi, q, b = 0.5, 1.5, 0.3, 0.4
    val = max(v[1] for v in _domain_pure(lo, hi, q, b, 1).values())
    full = laplace_shared_pure(lo, hi, 0.0, q, b, 1).epsilon
    xs = np.arange(-2, 4, 0.005)
    recs = np.arange(lo, hi + 1e-9, 0.05)
    dens = np.logaddexp(math.log1p(-q) - np.abs(xs) / b,
                        math.log(q) - np.abs(xs[None, :] - recs[:, None]) / b)
    brute = float(np.max(dens.max(0) - dens.min(0)))
    assert brute <= val + 1e-9 and brute >= 0.99 * val and val < 0.9 * full


def test_laplace_without_missingness_and_fresh_masks():
    s = ObservedMeanSetting("laplace", 1.0, 0.0, (-1.0, 3.0), 1.0, releases=4)
    w = observed_mean_worst_case(s, 0.0)
    ref = max(4 * 4 / s.sum_scale, 4 * 3 / s.sum_scale + 4 / s.count_scale)
    assert w.lower <= ref <= w.epsilon and w.epsilon - ref < 1e-6
    one = observed_mean_worst_case(ObservedMeanSetting("laplace", 1.0, 0.0, (-1, 3), 0.2), 0.0)
    fr = observed_mean_worst_case(ObservedMeanSetting("laplace", 1.0, 0.0, (-1, 3), 0.2,
                                                      releases=5, masks="fresh"), 0.0)
    assert fr.epsilon == pytest.approx(5 * one.epsilon)


def test_laplace_positive_delta_closes_below_the_pure_value():
    """The setting of THEORY §10.8 (ε = 1, [−1, 1], q = 0.2, k = 5, δ = 10⁻⁵) was the bracket
    [2.1878, 2.2305] with the δ = 0 value above; the boxes close it within 1 %."""
    s = ObservedMeanSetting("laplace", 1.0, 0.0, (-1.0, 1.0), 0.2, releases=5)
    pure = observed_mean_worst_case(s, 0.0)
    w = observed_mean_worst_case(s, 1e-5)
    assert w.lower == pytest.approx(2.1878, abs=1e-3) and w.pair == ("hi", "NA")
    assert w.epsilon < 0.985 * pure.epsilon and _width_ok(w) and w.exact
    assert w.lower > observed_mean_worst_case(s, 1e-2).lower


@pytest.mark.parametrize("k", [129, 1000])
def test_laplace_beyond_the_boxes_keeps_the_pure_value_above(k):
    # the boxes run to 128 releases (k = 40 closes: [15.1733, 15.1885]); k = 1000: ε near 750,
    # e^ε overflows a float (the remove order is 0 there, by log-space tests; it raised
    # OverflowError once)
    s = ObservedMeanSetting("laplace", 1.0, 0.0, (-1.0, 1.0), 0.2, releases=k)
    w = observed_mean_worst_case(s, 1e-5)
    assert w.epsilon == observed_mean_worst_case(s, 0.0).epsilon and not w.exact
    assert 0.25 * w.epsilon < w.lower < w.epsilon


def _count_law(bn, k, h=1e-3):
    """The law of Y = Σ (|y_i| − |y_i − 1|)/b_N, y_i ~ Laplace(0, b_N), on a grid of h: each
    release from a fine grid of y binned to the nearest multiple of h, then convolved."""
    y = np.arange(-40 * bn, 40 * bn, h * bn / 4) + h * bn / 8
    w = np.exp(-np.abs(y) / bn) * (h / 8)
    idx = np.rint(((np.abs(y) - np.abs(y - 1)) / bn + 1 / bn) / h).astype(int)
    one = np.bincount(idx, weights=w, minlength=int(round(2 / bn / h)) + 1)
    law = one / one.sum()
    for _ in range(k - 1):
        law = np.convolve(law, one / one.sum())
    return -k / bn + h * np.arange(law.size), law


def _grid_deltas(s, records, gammas, cells):
    """D_γ of every ordered pair of ``records`` (None: the NA record) at each γ: the sum's k
    outputs on a midpoint grid of R^k, the count's loss Y from its own law; relative to the NA
    record an observed c has density ratio 1 − q + q e^{A_c(x) + Y}, so each term is
    E_Y[(a0 + a1 e^Y)_+] for coefficients written from the model."""
    k, q, bs = s.releases, s.observation, s.sum_scale
    ys, law = _count_law(s.count_scale, k)
    tail0 = np.concatenate([np.cumsum(law[::-1])[::-1], [0.0]])
    tail1 = np.concatenate([np.cumsum((law * np.exp(ys))[::-1])[::-1], [0.0]])
    step = bs / cells  # the sum's grid: ``cells`` per noise scale, over ±14 scales
    x1 = step * (np.arange(-14 * cells, 14 * cells) + 0.5)
    xs = [g.ravel() for g in np.meshgrid(*([x1] * k), indexing="ij")]
    ref = np.prod([np.exp(-np.abs(x) / bs) / (2 * bs) * step for x in xs], axis=0)
    ratio = {c: np.exp(sum((np.abs(x) - np.abs(x - c)) / bs for x in xs))
             for c in records if c is not None}

    def e_y(a0, a1):  # E_Y[(a0 + a1 e^Y)_+], a1 an array
        out = np.zeros_like(a1)
        up = a1 > 0
        with np.errstate(divide="ignore"):
            cut = np.log(-a0 / a1[up]) if a0 < 0 else np.full(int(up.sum()), -np.inf)
        j = np.searchsorted(ys, cut, side="right")
        out[up] = a0 * tail0[j] + a1[up] * tail1[j]
        down = (a1 < 0) & (a0 > 0)
        j = np.searchsorted(ys, np.log(a0 / -a1[down]), side="left")
        out[down] = a0 * (1 - tail0[j]) + a1[down] * (tail1[0] - tail1[j])
        return out

    out = {}
    for c in records:
        for cp in records:
            if c is cp or (c is not None and cp is not None and c == cp):
                continue
            vals = []
            for g in gammas:
                if c is not None and cp is not None:
                    a0, a1 = (1 - q) * (1 - g), q * (ratio[c] - g * ratio[cp])
                elif cp is None:
                    a0, a1 = 1 - q - g, q * ratio[c]
                else:
                    a0, a1 = 1 - g * (1 - q), -g * q * ratio[cp]
                vals.append(float(ref @ e_y(a0, a1)))
            out[(c, cp)] = vals
    return out


@pytest.mark.parametrize("dom,q,k,delta,split,eps", [
    ((-1.0, 1.0), 0.3, 1, 1e-3, 0.5, 2.0), ((-1.0, 1.0), 0.3, 2, 1e-3, 0.5, 2.0),
    ((-0.5, 1.0), 0.5, 2, 1e-2, 0.5, 2.0), ((0.0, 1.0), 0.05, 2, 1e-3, 0.9, 4.0),
    ((-1.0, 1.0), 0.05, 2, 1e-3, 0.9, 2.0), ((-0.5, 1.0), 0.05, 2, 1e-3, 0.9, 4.0)])
def test_laplace_positive_delta_against_grids_of_outputs_and_records(dom, q, k, delta, split,
                                                                      eps):
    """k ≤ 2: every ordered pair of 7 records of the domain and the NA record, integrated over
    the sum's outputs on a grid with the count's loss from its own law, has D_γ ≤ δ at the
    certified upper end (up to the grids' error), and the lower end's pair has D_γ > δ just
    below the lower end; the worst pair is (hi, NA) or (hi, lo) depending on the split."""
    s = ObservedMeanSetting("laplace", eps, 0.0, dom, q, releases=k, split=split)
    w = observed_mean_worst_case(s, delta)
    assert _width_ok(w)
    records = [None, *np.linspace(*dom, 7)]
    grid = _grid_deltas(s, records, [math.exp(w.epsilon), math.exp(0.995 * w.lower)],
                        200 if k == 1 else 30)
    assert max(v[0] for v in grid.values()) <= 1.005 * delta
    name = {"hi": dom[1], "lo": dom[0], "NA": None}
    assert grid[tuple(name[n] for n in w.pair)][1] > delta


def test_a_billion_shared_gaussian_releases_are_refused_naming_the_releases():
    # one release at sigma/sqrt(k): its pair's epsilon leaves the float range (it said only
    # "delta=1e-05 needs eps > 700.0", naming no parameter)
    s = ObservedMeanSetting("gaussian", 1.0, 1e-5, (-1.0, 1.0), 0.1, releases=10**9)
    with pytest.raises(ValueError, match="releases must be fewer .* got releases=1000000000"):
        observed_mean_worst_case(s, 1e-5)
