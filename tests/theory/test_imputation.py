"""docs/THEORY.md §11: the imputed sum's sensitivity and the audited pairs' exact ε, checked
against scikit-learn's imputers (the oracle for the filled sums) and an independent
numerical integration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from audit.model.imputation_pairs import imputation_pair
from audit.theory import imputation as th

N = 20
W = 2.0


def _filled_sum(strategy: str, col: np.ndarray) -> float:
    from sklearn.impute import SimpleImputer

    filled = SimpleImputer(strategy=strategy).fit_transform(col[:, None])
    return float(filled.sum())


@pytest.mark.parametrize("m", [1, 2, 4, 9, 16, 19])
@pytest.mark.parametrize("strategy,others", [("mean", "zero"), ("median", "split"),
                                             ("most_frequent", "split")])
def test_the_pair_attains_the_stated_shift(m, strategy, others):
    z, zp = imputation_pair(N, m, 1.0, others=others)
    shift = _filled_sum(strategy, z[:, 0]) - _filled_sum(strategy, zp[:, 0])
    exact = th.pair_epsilon(strategy, N, m, W, 1.0) * W  # ε × scale W/ε
    assert shift == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("m", [1, 3, 4, 8])
def test_no_substitution_exceeds_the_sensitivity(m):
    """Every substitution of one observed record, over a grid of small tables, moves the
    mean- and median-filled sums by at most the stated sensitivity."""
    rng = np.random.default_rng(m)
    k = 6 - m % 2  # odd and even observed counts
    worst = {"mean": 0.0, "median": 0.0}
    for _ in range(300):
        obs = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=k)
        col = np.concatenate([obs, np.full(m, np.nan)])
        for v in (-1.0, 1.0, rng.uniform(-1, 1)):
            other = col.copy()
            other[0] = v
            for s in worst:
                worst[s] = max(worst[s], abs(_filled_sum(s, col) - _filled_sum(s, other)))
    n = k + m
    assert worst["mean"] <= th.mean_imputed_sum_sensitivity(n, m, W) + 1e-9
    assert worst["median"] <= th.median_imputed_sum_sensitivity(n, m, W) + 1e-9
    # the bound is not vacuous: half of it is reached on this grid
    assert worst["median"] >= 0.5 * th.median_imputed_sum_sensitivity(n, m, W)


def test_knn_pair_shift_matches_scikit_learn():
    from sklearn.impute import KNNImputer

    for m in (1, 4, 16):
        z, zp = imputation_pair(N, m, 1.0)
        s = [float(KNNImputer(n_neighbors=5).fit_transform(x)[:, 0].sum()) for x in (z, zp)]
        assert s[0] - s[1] == pytest.approx(th.knn_imputed_sum_shift(N, m, W, 5))


def _mixture_eps_by_quadrature(w, s, t, b) -> float:
    ys = np.linspace(min(s.min(), t.min()) - 40 * b, max(s.max(), t.max()) + 40 * b, 400_001)
    p = (w[:, None] * np.exp(-np.abs(ys[None, :] - s[:, None]) / b)).sum(0)
    q = (w[:, None] * np.exp(-np.abs(ys[None, :] - t[:, None]) / b)).sum(0)
    return float(np.max(np.abs(np.log(p / q))))


def test_hot_deck_epsilon_against_an_independent_grid():
    for m in (1, 4, 16):
        c = np.arange(m + 1)
        w = stats.binom.pmf(c, m, 1 / (N - m))
        oracle = _mixture_eps_by_quadrature(w / w.sum(), np.zeros(m + 1), W * (1 + c), W)
        assert th.hot_deck_pair_epsilon(N, m, W, 1.0) == pytest.approx(oracle, abs=1e-6)


def test_two_laplace_epsilon_against_the_convolution():
    """The density of L1 + L2 by quadrature; the largest log ratio over a wide range tends to
    Δ/max(b1, b2) (reached in the tails)."""
    b1, b2, shift = 0.7, 2.0, 1.5

    def dens(y):
        return integrate.quad(lambda u: stats.laplace.pdf(u, scale=b1)
                              * stats.laplace.pdf(y - u, scale=b2), -60, 60, limit=400)[0]

    ratios = [abs(math.log(dens(y) / dens(y - shift))) for y in np.linspace(-25, 25, 26)]
    exact = th.two_laplace_shift_epsilon(shift, b1, b2)
    assert max(ratios) <= exact + 1e-6
    assert max(ratios) >= exact - 0.02


def test_private_public_count_reaches_the_claim_at_m_equal_k():
    assert th.private_public_count_pair_epsilon(20, 10, W, 1.0) == pytest.approx(1.0)
    for m in range(0, 20):
        assert th.private_public_count_pair_epsilon(20, m, W, 1.0) <= 1.0 + 1e-12


@pytest.mark.parametrize("call", [
    lambda: th.mean_imputed_sum_sensitivity(1, 0, 2.0),
    lambda: th.mean_imputed_sum_sensitivity(20, 20, 2.0),
    lambda: th.median_imputed_sum_sensitivity(20, -1, 2.0),
    lambda: th.median_imputed_sum_sensitivity(20, 3, 0.0),
    lambda: th.knn_imputed_sum_shift(20, 3, 2.0, 0),
    lambda: th.laplace_shift_epsilon(math.inf, 1.0),
    lambda: th.laplace_shift_epsilon(1.0, 0.0),
    lambda: th.laplace_mixture_epsilon([0.5, 0.6], [0, 1], [0, 2], 1.0),
    lambda: th.private_public_count_pair_epsilon(20, 3, 2.0, 1.0, impute_share=1.0),
    lambda: th.pair_epsilon("nope", 20, 3, 2.0, 1.0),
    lambda: th.gaussian_shift_epsilon(1.0, 1.0, 0.0),
    lambda: th.gaussian_shift_epsilon(1.0, -1.0, 1e-5),
    lambda: th.mean_mar_pair_epsilon(20, 4, 2.0, 1.0, 1.5),
])
def test_bad_parameters_are_refused(call):
    with pytest.raises(ValueError, match="must"):
        call()


def test_pair_epsilon_grows_with_m_for_every_non_private_imputer():
    for imputer in th.EXACT_IMPUTERS:
        values = [th.pair_epsilon(imputer, N, m, W, 1.0) for m in (1, 4, 16)]
        assert all(a < b for a, b in itertools.pairwise(values)), imputer
    assert th.pair_epsilon("iterative", N, 4, W, 1.0) is None


def _gaussian_delta_by_quadrature(eps: float, mu: float) -> float:
    """δ(ε) = ∫ max(0, φ(y) − e^ε φ(y − μ)) dy, integrated numerically."""
    def gap(y):
        return max(0.0, stats.norm.pdf(y) - math.exp(eps) * stats.norm.pdf(y - mu))

    cut = eps / mu + mu / 2  # φ(y) > e^ε φ(y − μ) exactly below it
    return integrate.quad(gap, -40.0, cut, limit=400, epsabs=1e-14, epsrel=1e-10)[0]


@pytest.mark.parametrize("shift,sigma,delta", [(1.0, 1.0, 1e-5), (10.0, 7.46, 1e-5),
                                               (0.3, 1.0, 1e-3), (3.0, 1.0, 1e-8)])
def test_gaussian_shift_epsilon_meets_delta_by_quadrature(shift, sigma, delta):
    """The returned ε meets δ (within 1e-12 relative), and 1 % less ε does not."""
    eps = th.gaussian_shift_epsilon(shift, sigma, delta)
    mu = shift / sigma
    assert _gaussian_delta_by_quadrature(eps, mu) <= delta * (1 + 1e-6)
    assert _gaussian_delta_by_quadrature(0.99 * eps, mu) > delta


def test_gaussian_pair_epsilon_is_the_shift_under_the_analytic_sigma():
    from audit.noise import GaussianNoise

    sigma = GaussianNoise().calibrate(W, 1.0, 1e-5, "analytic")
    for m in (1, 4, 16):
        got = th.pair_epsilon("mean", N, m, W, 1.0, delta=1e-5)
        assert got == th.gaussian_shift_epsilon(N * W / (N - m), sigma, 1e-5)
    # no shift beyond W: the claim itself, which the calibration makes tight
    assert th.gaussian_shift_epsilon(W, sigma, 1e-5) == pytest.approx(1.0, rel=1e-6)
    assert th.pair_epsilon("hot_deck", N, 4, W, 1.0, delta=1e-5) is None


def test_mean_mar_pair_epsilon_against_an_independent_grid_and_its_ends():
    """The mixture over M ~ Binomial(m, q) by quadrature on a wide grid; at q = 0 the pair is
    the plain Laplace shift W/(W/ε) = ε, at q = 1 mean imputation's ε·n/(n − m)."""
    for m, q in ((4, 0.3), (16, 0.5), (16, 0.9)):
        c = np.arange(m + 1)
        w = stats.binom.pmf(c, m, q)
        shift = 0.5 * W * N / (N - c)
        oracle = _mixture_eps_by_quadrature(w, shift, -shift, W)
        assert th.mean_mar_pair_epsilon(N, m, W, 1.0, q) == pytest.approx(oracle, abs=1e-6)
    assert th.mean_mar_pair_epsilon(N, 16, W, 1.0, 0.0) == pytest.approx(1.0)
    assert th.mean_mar_pair_epsilon(N, 16, W, 1.0, 1.0) == pytest.approx(5.0)


def test_the_mar_pair_draws_the_binomial_mixture():
    """The MAR pair under mar_mask_params(q): the filled sums that scikit-learn's mean imputer
    gives on masks drawn by the project's mar-pivot are ±(W/2)·n/(n − M) with M the number of
    incomplete records masked, and M's frequencies follow Binomial(m, q) (a chi-square test at
    level 1e-4 over 4,000 draws)."""
    from sklearn.impute import SimpleImputer

    from audit.model.imputation_pairs import mar_mask_params
    from audit.model.missingness import make_missingness

    m, q = 8, 0.4
    z, _ = imputation_pair(N, m, 1.0, mask="mar")
    mech = make_missingness(**mar_mask_params(q))
    rng = np.random.default_rng(11)
    counts = np.zeros(m + 1)
    for _ in range(4000):
        x = np.where(mech.sample_masks(z, rng), np.nan, z)
        missing = int(np.isnan(x[:, 0]).sum())
        counts[missing] += 1
        if missing in (0, m):
            s = float(SimpleImputer(keep_empty_features=True).fit_transform(x)[:, 0].sum())
            assert s == pytest.approx(0.5 * W * N / (N - missing))
    expected = 4000 * stats.binom.pmf(np.arange(m + 1), m, q)
    keep = expected >= 5
    chi2 = float((((counts - expected) ** 2 / expected)[keep]).sum())
    assert chi2 < stats.chi2.ppf(1 - 1e-4, keep.sum() - 1)
