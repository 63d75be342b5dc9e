
import numpy as np
import pytest

from audit import statistics
from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.simulation import kernels
from audit.simulation.rng import derive_key
from audit.statistics import ENGINE_PROJECTIONS, PROJECTIONS, Statistic, histogram

P = Mixture([0.2, 0.5, 0.3], [0.0, 1.0, 3.0], "laplace", 1.0)
Q = Mixture([1.0], [0.0], "laplace", 1.0)
P3 = Mixture([0.6, 0.3, 0.1], [[0.0, 0.0, 1.0], [1.0, -1.0, 0.0], [2.0, 0.0, 0.0]],
             "gaussian", 1.1)
Q3 = Mixture([1.0], [[0.0, 0.0, 0.0]], "gaussian", 1.1)
L2 = Mixture([0.6, 0.4], [[0.0, 1.0], [1.0, -1.0]], "laplace", 0.9)
M2 = Mixture([0.5, 0.5], [[0.5, 0.0], [-1.0, 0.0]], "laplace", 0.9)
EDGES = np.linspace(-4.0, 4.0, 33)


def _blocks(seed, n_blocks, trials, block_trials, first=0):
    return kernels.Blocks(derive_key(seed), first, n_blocks, trials, block_trials)


def test_alias_table_exact():
    w = np.array([0.5, 0.1, 0.0, 0.25, 0.15])
    prob, alias = kernels.alias_table(w)
    K = len(w)
    recon = prob / K
    np.add.at(recon, alias, (1 - prob) / K)
    np.testing.assert_allclose(recon, w, atol=1e-15)


def test_one_code_table_covers_every_choice():
    assert set(kernels.NOISE_CODES) == set(NoiseKind)
    assert set(kernels.MODE_CODES) == set(ENGINE_PROJECTIONS)  # the kernels count these only
    assert set(ENGINE_PROJECTIONS) <= set(PROJECTIONS)
    assert len(set(kernels.NOISE_CODES.values())) == len(NoiseKind)
    assert len(set(kernels.MODE_CODES.values())) == len(kernels.MODE_CODES)
    assert kernels.law_of(P).noise == kernels.NOISE_CODES[NoiseKind.LAPLACE]
    assert kernels.law_of(P3).noise == kernels.NOISE_CODES[NoiseKind.GAUSSIAN]


def test_bin_index_matches_searchsorted():
    edges_u = np.linspace(-3.0, 5.0, 81)
    edges_n = np.sort(np.random.default_rng(0).normal(size=40))
    tol_u = statistics.tie_tolerance(edges_u)
    v = np.concatenate([np.random.default_rng(1).uniform(-6, 8, 2000), edges_u, edges_n,
                        np.nextafter(edges_u, -np.inf), edges_u - 2 * tol_u,
                        [1e300, -1e300, np.nan]])
    bins_u, bins_n = kernels.bins_of(edges_u), kernels.bins_of(edges_n)
    assert bins_u.uniform and not bins_n.uniform
    # The binary search also on the uniform edges (both paths must agree with numpy).
    forced = bins_u._replace(uniform=False)
    for edges, bins in ((edges_u, bins_u), (edges_n, bins_n), (edges_u, forced)):
        got = kernels.bin_indices(v, bins)
        want = np.searchsorted(statistics.binning_edges(edges), v, side="right")
        want[np.isnan(v)] = edges.size + 1  # NaN has a bin of its own, after the overflow
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, statistics.bin_indices(v, edges))
    # ties: an edge, and a value one ulp below it, open the edge's bin on both paths; a value
    # twice the tolerance below stays in the bin before
    for bins in (bins_u, forced):
        at = kernels.bin_indices(edges_u, bins)
        np.testing.assert_array_equal(kernels.bin_indices(np.nextafter(edges_u, -np.inf), bins),
                                      at)
        np.testing.assert_array_equal(kernels.bin_indices(edges_u - 2 * tol_u, bins), at - 1)


@pytest.mark.parametrize(
    ("A", "B", "statistic"),
    [
        (P, Q, Statistic.output(EDGES)),
        (P, Q, Statistic.llr(P, Q, EDGES)),
        (P3, Q3, Statistic.linear([1.0, 0.5, -2.0], 0.25, EDGES)),
        (P3, Q3, Statistic.llr(P3, Q3, EDGES)),
        (L2, M2, Statistic.llr(M2, L2, EDGES)),
    ],
    ids=["output", "llr-scalar", "linear-odd-dim", "llr-gaussian-odd-dim", "llr-laplace"],
)
def test_kernel_counts_equal_numpy_histogram_of_the_same_draws(A, B, statistic):
    """hist_blocks = audit.statistics.histogram of the kernel's statistic of the draws that
    sample_blocks returns, block by block and side by side; the kernel statistic equals the
    projection's plain-numpy evaluate up to rounding."""
    trials, bt = 5000, 1024
    nb = -(-trials // bt)
    blocks = _blocks(4, nb, trials, bt)
    spec = kernels.spec_of(A, B, statistic)
    rows = kernels.hist_blocks(blocks, spec)
    assert rows.shape == (2, nb, statistic.n_bins) and rows.dtype == np.int64
    np.testing.assert_array_equal(rows, kernels.hist_blocks(blocks, spec, parallel=False))
    for side, law in ((0, spec.p), (1, spec.q)):
        x = kernels.sample_blocks(blocks, side, law)
        v = kernels.project(x, spec)
        np.testing.assert_allclose(v, statistic.evaluate(x[:, 0] if x.shape[1] == 1 else x),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(rows[side].sum(axis=0), histogram(v, statistic.edges))
        for b in range(nb):
            one = kernels.sample_blocks(_blocks(4, b + 1, trials, bt, first=b), side, law)
            np.testing.assert_array_equal(rows[side, b],
                                          histogram(kernels.project(one, spec), statistic.edges))


def test_blocks_are_independent_of_the_call_that_runs_them():
    spec = kernels.spec_of(P, Q, Statistic.output(EDGES))
    whole = kernels.hist_blocks(_blocks(9, 6, 6000, 1000), spec)
    tail = kernels.hist_blocks(_blocks(9, 6, 6000, 1000, first=4), spec, parallel=False)
    np.testing.assert_array_equal(whole[:, 4:], tail)
    empty = kernels.hist_blocks(_blocks(9, 0, 6000, 1000), spec)
    assert empty.shape == (2, 0, EDGES.size + 2)


def test_short_last_block():
    spec = kernels.spec_of(P, Q, Statistic.output(EDGES))
    rows = kernels.hist_blocks(_blocks(1, 3, 2500, 1000), spec)
    np.testing.assert_array_equal(rows.sum(axis=2), [[1000, 1000, 500], [1000, 1000, 500]])
    x = kernels.sample_blocks(_blocks(1, 3, 2500, 1000), 0, spec.p)
    assert x.shape == (2500, 1)


def _structured_laws(noise):
    from audit.laws import ProductMixture, SubsetMixture

    rng = np.random.default_rng(11)
    d = 5
    r = rng.uniform(0.1, 0.9, d)
    prod = ProductMixture(np.column_stack([1 - r, r]),
                          np.column_stack([rng.normal(size=d), np.zeros(d)]), noise, 1.1)
    prod2 = ProductMixture(np.column_stack([r, 1 - r]),
                           np.column_stack([rng.normal(size=d), np.zeros(d)]), noise, 1.1)
    sub = SubsetMixture(rng.normal(size=d), 2, 0.7, noise, 0.9)
    sub2 = SubsetMixture(rng.normal(size=d), 2, 0.4, noise, 0.9)
    return (prod, prod2), (sub, sub2)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_structured_llr_in_the_kernel_equals_the_numpy_densities(noise):
    from audit.statistics import Statistic

    for A, B in _structured_laws(noise):
        stat = Statistic.llr(A, B, np.linspace(-5, 5, 11))
        spec = kernels.spec_of(A, B, stat)
        x = A.sample(500, 1)
        np.testing.assert_allclose(kernels.project(x, spec), A.logpdf(x) - B.logpdf(x),
                                   rtol=0, atol=1e-10)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_structured_laws_are_sampled_with_their_law(noise):
    # Kernel draws against the numpy reference sampler: KS per coordinate at 1e-4 each
    from scipy import stats

    from audit.simulation import engine

    for law in (pair[0] for pair in _structured_laws(noise)):
        a = engine.sample_outputs(law, 30_000, 4)
        b = law.sample(30_000, 5)
        for j in range(law.dim):
            assert stats.ks_2samp(a[:, j], b[:, j]).pvalue > 1e-4


def test_gaussian_uses_every_normal_it_draws():
    # One Box–Muller pair (u1, u2) per two outputs: draws 2i and 2i + 1 of a block are the
    # cos and sin halves of pair i (the spare was discarded before, one pair per output).
    # Each draw of a mixture first spends one uniform on its component: draw 2i uses words
    # 4i (component), 4i + 1 (u1), 4i + 2 (u2); draw 2i + 1 only its component word 4i + 3.
    from audit.simulation import engine
    from audit.simulation import rng as rng_mod

    sigma = 1.7
    M = Mixture([1.0], [0.0], "gaussian", sigma)
    x = engine.sample_outputs(M, 6, 9, block_trials=6)
    u = rng_mod.uniforms(rng_mod.derive_key(9), 0, 0, 12)  # 53-bit doubles of the words
    for i in range(3):
        k53 = round(u[4 * i + 1] * 2.0**53)
        u1 = ((k53 >> 1) + 0.5) * 2.0**-52  # the open uniform of the same 64-bit word
        r = np.sqrt(-2.0 * np.log(u1))
        th = 2.0 * np.pi * u[4 * i + 2]
        np.testing.assert_allclose(x[2 * i:2 * i + 2], sigma * r * np.array(
            [np.cos(th), np.sin(th)]), rtol=1e-13)


def test_structured_llr_stays_exact_in_the_far_tails():
    # Gaussian subset law far in the tails: the linear-space recurrence underflows and the
    # kernel falls back to log space; the product law's per-coordinate sums stay in [1, K].
    from audit.laws import ProductMixture, SubsetMixture
    from audit.statistics import Statistic

    d = 6
    sub = SubsetMixture(np.linspace(-3.0, 3.0, d), 3, 0.5, "gaussian", 0.05)
    sub2 = SubsetMixture(np.linspace(3.0, -3.0, d), 3, 0.5, "gaussian", 0.05)
    prod = ProductMixture(np.tile([0.6, 0.4], (d, 1)),
                          np.column_stack([np.linspace(-3, 3, d), np.zeros(d)]), "gaussian", 0.05)
    prod2 = ProductMixture(np.tile([0.4, 0.6], (d, 1)),
                           np.column_stack([np.linspace(3, -3, d), np.zeros(d)]), "gaussian", 0.05)
    x = np.array([[40.0, -35.0, 2.0, -3.0, 30.0, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    for A, B in ((sub, sub2), (prod, prod2)):
        spec = kernels.spec_of(A, B, Statistic.llr(A, B, np.linspace(-5, 5, 11)))
        want = A.logpdf(x) - B.logpdf(x)
        assert np.all(np.isfinite(want))
        np.testing.assert_allclose(kernels.project(x, spec), want, rtol=1e-12, atol=1e-9)
