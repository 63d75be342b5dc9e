import typing

import numpy as np
import pytest

from audit.enums import NoiseKind
from audit.mixture import Mixture
from audit.simulation import kernels
from audit.simulation.rng import derive_key
from audit.statistics import Projection, Statistic, histogram

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
    assert set(kernels.MODE_CODES) == set(typing.get_args(Projection))
    assert len(set(kernels.NOISE_CODES.values())) == len(NoiseKind)
    assert len(set(kernels.MODE_CODES.values())) == len(kernels.MODE_CODES)
    assert kernels.law_of(P).noise == kernels.NOISE_CODES[NoiseKind.LAPLACE]
    assert kernels.law_of(P3).noise == kernels.NOISE_CODES[NoiseKind.GAUSSIAN]


def test_bin_index_matches_searchsorted():
    edges_u = np.linspace(-3.0, 5.0, 81)
    edges_n = np.sort(np.random.default_rng(0).normal(size=40))
    v = np.concatenate([np.random.default_rng(1).uniform(-6, 8, 2000), edges_u, edges_n,
                        np.nextafter(edges_u, -np.inf), [1e300, -1e300, np.nan]])
    bins_u, bins_n = kernels.bins_of(edges_u), kernels.bins_of(edges_n)
    assert bins_u.uniform and not bins_n.uniform
    # The binary search also on the uniform edges (both paths must agree with numpy).
    forced = bins_u._replace(uniform=False)
    for edges, bins in ((edges_u, bins_u), (edges_n, bins_n), (edges_u, forced)):
        got = kernels.bin_indices(v, bins)
        np.testing.assert_array_equal(got, np.searchsorted(edges, v, side="right"))


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
    assert empty.shape == (2, 0, EDGES.size + 1)


def test_short_last_block():
    spec = kernels.spec_of(P, Q, Statistic.output(EDGES))
    rows = kernels.hist_blocks(_blocks(1, 3, 2500, 1000), spec)
    np.testing.assert_array_equal(rows.sum(axis=2), [[1000, 1000, 500], [1000, 1000, 500]])
    x = kernels.sample_blocks(_blocks(1, 3, 2500, 1000), 0, spec.p)
    assert x.shape == (2500, 1)
