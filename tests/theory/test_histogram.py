"""The worst case of a histogram under record-level missingness (audit.theory.histogram,
docs/THEORY.md §10.9) against independent computations: the Gaussian pair (a, b) as a 2-D
integral over the plane of the three bins' means (scipy), the pair (a, NA) as q times the
hockey stick of a 2k-fold Laplace composition (dp_accounting), the Laplace pair (a, b) of one
release on a midpoint grid of the outputs, and the closed forms at δ = 0."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from audit.theory import histogram as H
from audit.theory.histogram import HistogramSetting, histogram_worst_case

ROOT = Path(__file__).resolve().parents[2]


def _gaussian_ab_plane(sigma: float, q: float, eps: float) -> float:
    """D_{e^ε} of the pair (a, b) of one Gaussian release, integrated on the plane of the
    means of the NA bin, bin a and bin b (the orthogonal direction is the same under both),
    by Simpson's rule on a 2,001² grid over ±10σ."""
    gamma = math.exp(eps)
    means = {"NA": (0.0, 2 / math.sqrt(6)), "a": (1 / math.sqrt(2), -1 / math.sqrt(6)),
             "b": (-1 / math.sqrt(2), -1 / math.sqrt(6))}
    g = np.linspace(-10 * sigma, 10 * sigma, 2001)
    u, w = g[:, None], g[None, :]

    def dens(m):
        return stats.norm.pdf(u, m[0], sigma) * stats.norm.pdf(w, m[1], sigma)

    pa = (1 - q) * dens(means["NA"]) + q * dens(means["a"])
    pb = (1 - q) * dens(means["NA"]) + q * dens(means["b"])
    f = np.maximum(pa - gamma * pb, 0.0)
    return float(integrate.simpson(integrate.simpson(f, x=g, axis=1), x=g))


@pytest.mark.parametrize("sigma,q,eps", [(1.0, 0.3, 0.5), (2.0, 0.5, 0.2)])
def test_gaussian_pair_a_b_against_a_plane_integral(sigma, q, eps):
    s = HistogramSetting("gaussian", sigma, q, 1)
    laws = H._laws(s, 1, 0.005, 1e-6)
    low, high = H.pair_delta_bracket(laws, ("a", "b"), eps, q)
    ref = _gaussian_ab_plane(sigma, q, eps)
    assert low - 1e-5 * ref <= ref <= high + 1e-5 * ref
    assert high - low <= 0.02 * ref


@pytest.mark.parametrize("pair", [("a", "NA"), ("NA", "a")])
def test_gaussian_one_bin_move_closed_form_against_the_grid(pair):
    """The closed form of (a, NA) and (NA, a) against the general three-variable expectation
    on the grid (the same pair computed twice, two ways)."""
    s = HistogramSetting("gaussian", 1.5, 0.4, 3)
    laws = H._laws(s, 3, 0.002, 1e-8)
    grid_laws = H._Laws(H._Law(laws.s.up, laws.s.down, laws.s.hi_mass, laws.s.hi_tilted,
                               laws.s.mean_exp, None), laws.t, laws.step, laws.tail)
    for eps in (0.2, 1.0, 2.0):
        exact = H.pair_delta_bracket(laws, pair, eps, 0.4)[0]
        low, high = H.pair_delta_bracket(grid_laws, pair, eps, 0.4)
        assert low - 1e-12 <= exact <= high + 1e-12


@pytest.mark.parametrize("k,epsilons", [(3, (0.5, 1.5, 2.5)), (100, (30.0, 40.0, 44.0))])
def test_laplace_a_na_is_q_times_a_composed_laplace_hockey_stick(k, epsilons):
    """(a, NA): ((1 − q)N + qA − γN)_+ = q(A − γ″N)_+ with A against N a shift of 1/b in two
    bins over k releases: dp_accounting's 2k-fold Laplace PLD brackets it. At k = 100 the
    hockey stick lives 40 nats into the tail, where only the tilted masses are accurate (the
    untilted route once returned a negative δ bound there)."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    b, q = 2.0, 0.3
    laws = H._laws(HistogramSetting("laplace", b, q, k), k, 0.002 if k < 10 else 0.01, 1e-8)
    for est in (True, False):
        one = dpl.from_laplace_mechanism(b, sensitivity=1.0, pessimistic_estimate=est,
                                         value_discretization_interval=1e-4 if k < 10 else 1e-3)
        pld = one.self_compose(2 * k)
        for eps in epsilons:
            g2 = 1 + math.expm1(eps) / q
            ref = q * float(pld.get_delta_for_epsilon(math.log(g2)))
            low, high = H.pair_delta_bracket(laws, ("a", "NA"), eps, q)
            assert 0.0 <= low <= high
            if est:
                assert low <= ref * (1 + 1e-9) + 1e-12  # the pessimistic PLD is above the truth
            else:
                assert ref <= high * (1 + 1e-9) + 1e-12  # the optimistic one below
            assert high - low <= 0.01 * high


def test_laplace_pair_a_b_of_one_release_against_an_output_grid():
    """One Laplace release, pair (a, b): the hockey stick integrated over the three bins'
    outputs, each on (−∞, 0] and [1, ∞) (where its loss is constant) and a 300-point
    midpoint grid of (0, 1)."""
    b, q, eps = 1.0, 0.4, 0.6
    gamma = math.exp(eps)
    x = (np.arange(300) + 0.5) / 300
    ell = np.concatenate([[-1 / b], (2 * x - 1) / b, [1 / b]])
    mass = np.concatenate([[0.5], np.exp(-x / b) / (2 * b) / 300, [0.5 * math.exp(-1 / b)]])
    mass /= mass.sum()
    es, et = np.exp(ell)[:, None, None], np.exp(ell)[None, :, None]
    er = np.exp(ell)[None, None, :]
    val = np.maximum((1 - q) * es + q * et - gamma * ((1 - q) * es + q * er), 0.0)
    ref = float(np.einsum("i,j,k,ijk->", mass, mass, mass, val))
    laws = H._laws(HistogramSetting("laplace", b, q, 1), 1, 0.0005, 1e-8)
    low, high = H.pair_delta_bracket(laws, ("a", "b"), eps, q)
    assert low - 2e-3 * ref <= ref <= high + 2e-3 * ref


@pytest.mark.parametrize("na", [True, False])
def test_pure_closed_forms_and_fresh_is_k_times_one_release(na):
    q, b, k = 0.3, 2.0, 4
    shared = histogram_worst_case(HistogramSetting("laplace", b, q, k, na_category=na), 0.0)
    x = k / b
    want = math.log(1 - q + q * math.exp(2 * x)) if na else \
        math.log((1 - q + q * math.exp(x)) / (1 - q + q * math.exp(-x)))
    assert shared.epsilon == pytest.approx(want, rel=1e-12) and shared.exact
    one = histogram_worst_case(HistogramSetting("laplace", b, q, 1, na_category=na), 0.0)
    fresh = histogram_worst_case(HistogramSetting("laplace", b, q, k, "fresh", na), 0.0)
    assert fresh.epsilon == pytest.approx(k * one.epsilon, rel=1e-12)


@pytest.mark.parametrize("noise,scale,na", [("laplace", 2.0, True), ("laplace", 2.0, False),
                                            ("gaussian", 2.0, True), ("gaussian", 3.0, False)])
def test_shared_bracket_closes_and_sits_below_the_pure_value(noise, scale, na):
    w = histogram_worst_case(HistogramSetting(noise, scale, 0.3, 4, na_category=na), 1e-5)
    assert w.exact and w.lower <= w.epsilon
    assert w.epsilon - w.lower <= 0.005 * w.epsilon
    pure = histogram_worst_case(HistogramSetting(noise, scale, 0.3, 4, na_category=na), 0.0)
    assert w.epsilon <= pure.epsilon


def test_fresh_masks_over_one_release_are_the_shared_value():
    one = histogram_worst_case(HistogramSetting("laplace", 2.0, 0.3, 1, "fresh", False), 1e-5)
    shared = histogram_worst_case(HistogramSetting("laplace", 2.0, 0.3, 1, na_category=False),
                                  1e-5)
    assert (one.lower, one.epsilon) == (shared.lower, shared.epsilon) and one.exact


@pytest.mark.parametrize("noise,scale", [("laplace", 2.0), ("gaussian", 2.0)])
@pytest.mark.parametrize("na", [True, False])
def test_fresh_rows_close_below_the_theorem(noise, scale, na):
    """Fresh masks, k = 10: every pair's one-release law composed closes the row (each
    within 0.25 %; the bracket through one-release profiles was 0.3–2.5 % wide), below the
    per-release theorem C_{p*}(f)^{⊗k}, which bounds every pair. With the NA bin the worst
    pair is (category, NA), without it (category, other)."""
    s = HistogramSetting(noise, scale, 0.3, 10, "fresh", na)
    w = histogram_worst_case(s, 1e-5)
    assert w.exact and w.epsilon - w.lower <= 0.0025 * w.epsilon
    assert w.lower <= w.epsilon <= H._theorem_epsilon(s, 1e-5) + 1e-9
    assert w.pair == (("cat", "NA") if na else ("cat", "other"))
    assert "composed k times" in w.method


@pytest.mark.parametrize("kwargs,name", [
    ({"masks": "persistent"}, "masks"), ({"na_category": 1}, "na_category"),
    ({"observation": 0.0}, "observation"), ({"scale": -1.0}, "scale"),
])
def test_refusals_name_the_parameter(kwargs, name):
    args = {"noise": "laplace", "scale": 1.0, "observation": 0.5, **kwargs}
    with pytest.raises(ValueError, match=name):
        HistogramSetting(**args)


def test_bound_config_prints_the_histogram_worst_case_and_run_refuses_it():
    cfg = ROOT / "experiments/configs/accountant_histogram.toml"
    out = subprocess.run([sys.executable, "-m", "audit", "bound", "--config", str(cfg),
                          "--target-delta", "1e-5"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "worst case of this setting (exact worst case): epsilon = 7.54" in out.stdout
    assert "worst pair: cat vs NA" in out.stdout
    run = subprocess.run([sys.executable, "-m", "audit", "run", str(cfg)], capture_output=True,
                         text=True, cwd=ROOT)
    assert run.returncode == 2 and run.stderr.startswith("error:")
    assert "scenario.na_category" in run.stderr


@pytest.mark.parametrize("setting,match", [
    (HistogramSetting("gaussian", 1.0, 0.3, 10**6), "releases / scale\\^2 must be at most 608"),
    (HistogramSetting("laplace", 2.0, 0.3, 10**6, "fresh"), "releases must be at most 10000"),
    (HistogramSetting("laplace", 1e-3, 0.3, 1), "releases / scale must be at most 600"),
])
def test_settings_whose_grid_or_composition_would_not_fit_are_refused(setting, match):
    """Refused before any grid is built: the Gaussian grid spans k/σ² (and e^x must stay a
    double), a fresh-mask composition holds a PLD per release count."""
    with pytest.raises(ValueError, match=match):
        histogram_worst_case(setting, 1e-5)
    histogram_worst_case(setting, 0.0)  # δ = 0 is a closed form at any size


def test_a_fresh_laplace_histogram_at_a_large_loss_is_capped_and_closes():
    """b = 0.1 (one release's loss 20) with the NA bin, k = 3: the row closes, capped by the
    δ = 0 value 56.3881 (ε is non-increasing in δ; the composed upper end is above it)."""
    s = HistogramSetting("laplace", 0.1, 0.3, 3, "fresh", True)
    w = histogram_worst_case(s, 1e-6)
    pure = histogram_worst_case(s, 0.0).epsilon
    assert w.lower <= w.epsilon <= pure and w.exact
    assert "capped at the delta = 0 value" in w.method
