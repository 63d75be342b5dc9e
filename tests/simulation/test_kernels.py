import numba
import numpy as np
from scipy import stats

from audit.simulation import kernels, rng


@numba.njit(cache=False)
def _outputs(state, n):
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        out[i] = rng._next_u64(state)
    return out


def test_xoshiro256starstar_reference():
    """Reference outputs of xoshiro256** from state (1, 2, 3, 4) (rand_xoshiro's test)."""
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    expected = np.array([11520, 0, 1509978240, 1215971899390074240, 1216172134540287360,
                         607988272756665600, 16172922978634559625, 8476171486693032832,
                         10595114339597558777, 2904607092377533576], dtype=np.uint64)
    np.testing.assert_array_equal(_outputs(state, 10), expected)


def test_streams_distinct_and_uniform():
    key = rng.derive_key(3)
    a = rng.uniforms(key, 0, 0, 50_000)
    b = rng.uniforms(key, 1, 0, 50_000)
    c = rng.uniforms(key, 0, 1, 50_000)
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    np.testing.assert_array_equal(a, rng.uniforms(key, 0, 0, 50_000))
    # 3 KS tests at 1e-4: family false-failure probability <= 3e-4.
    for u in (a, b, c):
        assert stats.kstest(u, "uniform").pvalue > 1e-4
    assert rng.derive_key(3) == key and rng.derive_key(4) != key


def test_alias_table_exact():
    w = np.array([0.5, 0.1, 0.0, 0.25, 0.15])
    prob, alias = kernels.alias_table(w)
    K = len(w)
    recon = prob / K
    np.add.at(recon, alias, (1 - prob) / K)
    np.testing.assert_allclose(recon, w, atol=1e-15)


def test_bin_index_matches_searchsorted():
    edges_u = np.linspace(-3.0, 5.0, 81)
    edges_n = np.sort(np.random.default_rng(0).normal(size=40))
    v = np.concatenate([np.random.default_rng(1).uniform(-6, 8, 2000), edges_u, edges_n,
                        np.nextafter(edges_u, -np.inf), [1e300, -1e300]])
    for edges, uniform in ((edges_u, True), (edges_n, False)):
        lo = edges[0]
        inv = 1.0 / (edges[1] - edges[0])
        got = _bins(v, edges, uniform, lo, inv)
        np.testing.assert_array_equal(got, np.searchsorted(edges, v, side="right"))


@numba.njit(cache=False)
def _bins(v, edges, uniform, lo, inv):
    out = np.empty(v.shape[0], dtype=np.int64)
    for i in range(v.shape[0]):
        out[i] = kernels.bin_index(v[i], edges, uniform, lo, inv)
    return out


def test_open_uniform_never_reaches_one():
    # Regression: with 53 bits, k = 2^53 − 1 made (k + 1/2)·2^-53 round to exactly 1.0, so
    # Laplace inversion returned +inf. Build the xoshiro256** state whose next output is
    # 2^64 − 1 (output = rotl(s1 · 5, 7) · 9) and check the uniform stays below 1.
    from audit.simulation.rng import _next_open

    M = 1 << 64
    x = ((M - 1) * pow(9, -1, M)) % M
    y = ((x >> 7) | (x << 57)) % M  # rotr(x, 7)
    s1 = (y * pow(5, -1, M)) % M
    state = np.array([1, s1, 2, 3], dtype=np.uint64)
    u = _next_open(state)
    assert 0.0 < u < 1.0
    assert u == 1.0 - 2.0**-53
