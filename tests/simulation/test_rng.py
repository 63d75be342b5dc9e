import numba
import numpy as np
import pytest
from scipy import stats

from audit.simulation import rng


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


def test_block_state_matches_the_splitmix_scheme():
    """block_state is splitmix64 seeded at key ^ splitmix64(side·2^48 + block) (pure Python)."""
    M = (1 << 64) - 1
    golden = 0x9E3779B97F4A7C15

    def mix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)

    key, side, block = int(rng.derive_key(11)), 1, 12345
    x = key ^ mix(((side << 48) | block) + golden & M)
    expected = []
    for _ in range(4):
        x = (x + golden) & M
        expected.append(mix(x))
    np.testing.assert_array_equal(rng.block_state(key, side, block),
                                  np.array(expected, dtype=np.uint64))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_derive_key_refuses_bad_seeds(bad):
    with pytest.raises(ValueError, match="seed must be"):
        rng.derive_key(bad)


def test_derive_key_accepts_seed_sequences_and_generators():
    assert rng.derive_key(np.random.SeedSequence(5)) == rng.derive_key(5)
    g = np.random.default_rng(0)
    assert rng.derive_key(g) != rng.derive_key(g)  # a Generator is consumed


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
