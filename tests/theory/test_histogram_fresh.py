"""Fresh-mask histograms: each pair's one-release loss law moved up and down, composed
(audit.theory.histogram_fresh), checked against two independent computations: the
one-release hockey-stick brackets of audit.theory.histogram (an expectation over the three
bins' losses, no conditioning, no plane) and dp_accounting's Poisson-subsampled Laplace and
Gaussian mechanisms for the pair (category, NA)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.theory import histogram as H
from audit.theory import histogram_fresh as F
from audit.theory.pld import gaussian_loss, laplace_loss
from audit.theory.worst_case import tolerance

EPSILONS = (0.0, 0.2, 0.6, 1.2)
SETTINGS = [("laplace", 1.5, 0.3, False), ("gaussian", 1.2, 0.3, False),
            ("laplace", 1.5, 0.3, True), ("gaussian", 1.2, 0.3, True),
            ("laplace", 0.7, 0.8, True), ("gaussian", 0.8, 0.1, True)]


#: the plane's λ cells in these tests (its own grids go to 2,000)
PLANE_CELLS = 1000


def _one_release_laws(noise, scale, q, na, pair, h):
    """Our moved laws of ``pair`` (remove order, other order) at one release."""
    gaussian = noise == "gaussian"
    if gaussian and na and pair == "swap":
        law = F._plane_law(scale, q, h, PLANE_CELLS)
        return law, law
    base = gaussian_loss((math.sqrt(2) if na else 1) / scale) if gaussian else \
        laplace_loss(1 / scale)
    na_bin = na and not gaussian
    cells = int(math.ceil(2 * base.t_max / (F._CELL_STEPS * h))) if na_bin else 0
    return F._pair_laws(base, q, pair, na_bin, h, cells)


def _delta(law, epsilon, h, up):
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return float(PrivacyLossDistribution(F._pmf(law, h, up)).get_delta_for_epsilon(epsilon))


@pytest.mark.parametrize("noise,scale,q,na", SETTINGS)
@pytest.mark.parametrize("pair", ["move", "swap"])
def test_one_release_hockey_sticks_agree_with_the_three_bin_expectation(noise, scale, q, na,
                                                                        pair):
    """Both computations bracket D_{e^ε}(P ‖ Q) of each ordered pair: the brackets must
    meet (a law off by one cell's mass, a sign or a shift would part them), and ours is
    no wider than its losses' moves allow (δ(ε) moves by at most as much as every loss)."""
    plane = noise == "gaussian" and na and pair == "swap"
    h = 2e-3 if plane else 2e-4
    # up and down each move every term by at most one step and one cell of s (Laplace with
    # the NA bin: 40 steps) or of λ (the plane, one term)
    terms = 1 if plane or pair == "move" else 2
    cell = {True: 2 * (1.5 / scale ** 2 + 24 * math.sqrt(1.5) / scale) / PLANE_CELLS,
            False: F._CELL_STEPS * h if na and noise == "laplace" else 0.0}[plane]
    width = 2 * terms * (h + cell)
    ours = _one_release_laws(noise, scale, q, na, pair, h)
    setting = H.HistogramSetting(noise, scale, q, 1, na_category=na)
    laws = H._laws(setting, 1, 1e-2 if plane else 2e-3, 1e-12)
    orders = (("a", "b"), ("a", "b")) if pair == "swap" else (("a", "NA"), ("NA", "a"))
    for law, order in zip(ours, orders, strict=True):
        for eps in EPSILONS:
            lo, hi = H.pair_delta_bracket(laws, order, eps, q)
            down, up = _delta(law, eps, h, False), _delta(law, eps, h, True)
            assert down <= up
            assert max(lo, down) <= min(hi, up) + 1e-12, (order, eps, lo, hi, down, up)
            assert up - down <= width, (order, eps, down, up)


@pytest.mark.parametrize("noise,scale,na", [("laplace", 2.0, False), ("gaussian", 2.0, False),
                                            ("gaussian", 2.0, True)])
def test_the_pair_category_na_is_dp_accountings_subsampled_mechanism(noise, scale, na):
    """(category, NA) at q is the Poisson-subsampled mechanism (remove and add orders):
    Lap(b) of sensitivity 1, or N(0, σ²) of sensitivity 1, √2 with the NA bin. Composed 10
    times, its bracket meets dp_accounting's (both are certified)."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    q, k, delta = 0.3, 10, 1e-5
    make = dpl.from_laplace_mechanism if noise == "laplace" else dpl.from_gaussian_mechanism
    theirs = [make(scale, sensitivity=math.sqrt(2) if na else 1.0, sampling_prob=q,
                   pessimistic_estimate=up, value_discretization_interval=1e-4)
              .self_compose(k).get_epsilon_for_delta(delta) for up in (False, True)]
    base = gaussian_loss((math.sqrt(2) if na else 1) / scale) if noise == "gaussian" else \
        laplace_loss(1 / scale)
    ours = F._compose(F._line_pmfs(base, q, "move", 1e-4), k, delta)
    assert max(theirs[0], ours[0]) <= min(theirs[1], ours[1]) + 1e-9, (theirs, ours)
    assert ours[1] - ours[0] <= 2 * k * 1e-4 + 1e-9


@pytest.mark.parametrize("noise,scale,q,na", SETTINGS[:4])
def test_ten_releases_close_within_the_tolerance_below_the_theorem(noise, scale, q, na):
    """k = 10 at δ = 1e-5: a bracket within half the tolerance, under C_{p*}(f)^{⊗k}, which
    bounds every pair, and the row exact."""
    lower, upper, pair, step = F.fresh_histogram_bracket(noise, scale, q, na, 10, 1e-5)
    assert upper - lower <= tolerance(upper) / 2
    setting = H.HistogramSetting(noise, scale, q, 10, "fresh", na)
    assert lower <= H._theorem_epsilon(setting, 1e-5)
    w = H.histogram_worst_case(setting, 1e-5)
    assert w.exact and w.lower == lower and w.epsilon <= upper
    assert pair == (("a", "NA") if na else ("a", "b"))
    assert 0 < step <= F.FIRST_STEP


def test_the_plane_on_finer_grids_narrows_inside_the_coarser_bracket():
    coarse, fine = ([F._compose(((F._pmf(law, h, True),) * 2, (F._pmf(law, h, False),) * 2),
                                10, 1e-5) for law in [F._plane_law(2.0, 0.3, h, cells)]][0]
                    for h, cells in ((1e-2, 100), (3e-3, 500)))
    assert coarse[0] <= fine[0] <= fine[1] <= coarse[1]
    assert fine[1] - fine[0] < 0.5 * (coarse[1] - coarse[0])


def test_the_plane_loss_inverse_solves_the_loss():
    ell = np.array([-3.0, -0.5, 0.0, 0.7, 4.0])
    log_kappa = np.array([-np.inf, -2.0, 0.0, 3.0, np.inf])
    x = F._plane_x(ell, log_kappa)
    for i, e in enumerate(ell):
        for j, lk in enumerate(log_kappa[1:-1], start=1):
            k = math.exp(lk)
            loss = math.log(k + math.exp(x[i, j])) - math.log(k + math.exp(-x[i, j]))
            assert loss == pytest.approx(e, abs=1e-10)
        assert x[i, 0] == pytest.approx(e / 2)  # κ = 0: L = 2x
        assert x[i, -1] == (math.inf if e >= 0 else -math.inf)  # κ = ∞: L ≡ 0


@pytest.mark.parametrize("kwargs,name", [
    ({"noise": "cauchy"}, "noise"), ({"scale": 0.0}, "scale"), ({"q": 0.0}, "q"),
    ({"q": 1.5}, "q"), ({"na_category": 1}, "na_category"), ({"releases": 0}, "releases"),
    ({"releases": 10_001}, "releases"), ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"),
])
def test_refusals_name_the_parameter(kwargs, name):
    args = {"noise": "laplace", "scale": 1.0, "q": 0.5, "na_category": False, "releases": 2,
            "delta": 1e-5, **kwargs}
    with pytest.raises(ValueError, match=name):
        F.fresh_histogram_bracket(**args)


def test_a_loss_beyond_the_exponents_range_keeps_the_lower_end_below_the_truth():
    """Gaussian σ = 0.05 without the NA bin, p* = 0.3, k = 5 (ε ≈ 1113): at δ = 1e-5 only the
    releases with the record observed in all five count (the rest is below 10⁻¹⁵), where the
    loss is t + ln(p*/(1 − p*)) to within e^{−150}, t ~ N(200, 400) per release: a closed
    form. The row brackets it (the old row was [1110.327, 1112.330], below it)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    q, k = 0.3, 5
    m, v = k * (200 + math.log(q / (1 - q))), k * 400.0

    def delta(e):
        sd = math.sqrt(v)
        return q ** k * (norm.cdf((m - e) / sd)
                         - math.exp(e - m + v / 2 + norm.logcdf((m - e - v) / sd)))

    exact = brentq(lambda e: delta(e) - 1e-5, 900.0, 1300.0)
    lower, upper, pair, _ = F.fresh_histogram_bracket("gaussian", 0.05, q, False, k, 1e-5)
    assert lower - 1e-3 <= exact <= upper + 1e-3 and pair == ("a", "b")
    assert upper - lower <= tolerance(upper) / 2
