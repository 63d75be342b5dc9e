"""Counter-seeded random streams for the Monte Carlo kernels.

Scheme
------
A run draws ``trials`` outputs from each side s ∈ {0, 1} (s = 0: A_D(z), s = 1: A_D(z')).
The trials of one side are cut into fixed blocks of ``block_trials`` draws; block b of side s
is the unit of reproducibility. Its generator is a xoshiro256** state (Blackman & Vigna 2018)
whose four words are the splitmix64 sequence started at

    splitmix64(key ⊕ splitmix64(s · 2^48 + b)),

where ``key`` is one 64-bit word from ``numpy.random.SeedSequence(seed).generate_state``.
A block is always run sequentially, from its own state, whatever thread, process or chunk
runs it, and histogram counts are integer sums, so a run's result depends only on
(seed, trials, block_trials) and the inputs, never on how the blocks were scheduled.

This module holds the scalar generator helpers (numba, inlined into the kernels) and the
Python-side key derivation. ``audit.simulation.kernels`` builds the sampling kernels on top of it.
"""

from __future__ import annotations

import numpy as np

from audit.simulation.jit import _jit

__all__ = ["derive_key", "block_state", "uniforms", "SIDE_P", "SIDE_Q", "MAX_BLOCKS"]

SIDE_P = 0
SIDE_Q = 1
#: Block indices are packed below bit 48, so at most 2^48 blocks per side.
MAX_BLOCKS = 1 << 48

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2^-53
_TWO_M52 = 1.0 / 4503599627370496.0  # 2^-52


@_jit(inline="always")
def _splitmix64(x):
    """One splitmix64 output for the state ``x`` (already advanced by the caller)."""
    z = x
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@_jit(inline="always")
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@_jit()
def _seed_state(key, side, block, state):
    """Fill ``state`` (uint64[4]) with the xoshiro256** state of (key, side, block)."""
    ctr = (np.uint64(side) << np.uint64(48)) | np.uint64(block)
    x = np.uint64(key) ^ _splitmix64(ctr + _GOLDEN)
    for i in range(4):
        x = x + _GOLDEN
        state[i] = _splitmix64(x)
    # xoshiro must not start from the all-zero state (probability 2^-256; guard anyway).
    if state[0] == 0 and state[1] == 0 and state[2] == 0 and state[3] == 0:
        state[0] = _GOLDEN


@_jit(inline="always")
def _next_u64(state):
    """xoshiro256** step (Blackman & Vigna, 'Scrambled linear pseudorandom number generators')."""
    s0 = state[0]
    s1 = state[1]
    s2 = state[2]
    s3 = state[3]
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    state[0] = s0
    state[1] = s1
    state[2] = s2
    state[3] = s3
    return result


@_jit(inline="always")
def _next_double(state):
    """Uniform on [0, 1) with 53 random bits."""
    return float(_next_u64(state) >> np.uint64(11)) * _TWO_M53


@_jit(inline="always")
def _next_open(state):
    """Uniform on the open interval (0, 1): (k + 1/2) 2^-52, k uniform in [0, 2^52).

    k + 1/2 is exact in double precision for k < 2^52 (with 53 bits, k = 2^53 − 1 rounded
    to 2^53 and gave u = 1, hence +inf Laplace noise). Range [2^-53, 1 − 2^-53].
    """
    return (float(_next_u64(state) >> np.uint64(12)) + 0.5) * _TWO_M52


@_jit()
def _uniforms_kernel(key, side, block, n, out):
    state = np.empty(4, dtype=np.uint64)
    _seed_state(key, side, block, state)
    for i in range(n):
        out[i] = _next_double(state)


def derive_key(seed) -> np.uint64:
    """The 64-bit stream key of ``seed``.

    Parameters
    ----------
    seed : int >= 0, numpy.random.SeedSequence or numpy.random.Generator
        An int or SeedSequence gives a fixed key. A Generator is consumed (one draw) to
        make a fresh SeedSequence, so the run is reproducible only through that generator.

    Returns
    -------
    numpy.uint64

    Raises
    ------
    ValueError
        If ``seed`` is a negative int, a bool or another type.
    """
    if isinstance(seed, np.random.Generator):
        seed = np.random.SeedSequence(int(seed.integers(0, 2**63 - 1)))
    if isinstance(seed, np.random.SeedSequence):
        ss = seed
    elif isinstance(seed, bool | np.bool_) or not isinstance(seed, int | np.integer):
        raise ValueError(
            "seed must be an int >= 0, a numpy SeedSequence or a numpy Generator, "
            f"got seed={seed!r}"
        )
    elif int(seed) < 0:
        raise ValueError(f"seed must be an int >= 0, got seed={seed!r}")
    else:
        ss = np.random.SeedSequence(int(seed))
    return ss.generate_state(1, dtype=np.uint64)[0]


def block_state(key, side: int, block: int) -> np.ndarray:
    """The xoshiro256** state (uint64[4]) of block ``block`` of side ``side``."""
    state = np.empty(4, dtype=np.uint64)
    _seed_state(np.uint64(key), np.int64(side), np.int64(block), state)
    return state


def uniforms(key, side: int, block: int, n: int) -> np.ndarray:
    """The first ``n`` uniforms on [0, 1) of one block's stream (for tests of the generator)."""
    out = np.empty(int(n), dtype=np.float64)
    _uniforms_kernel(np.uint64(key), np.int64(side), np.int64(block), np.int64(n), out)
    return out
