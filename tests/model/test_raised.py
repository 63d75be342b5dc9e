"""audit.model.raised: a failed call released as the output symbol "raised" (NaN), in the
process or in a forked child that may die; the audit counts it like any other output."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from audit.model.implementation import CallableImplementation, Claim
from audit.model.raised import RAISED, RaisedAsOutput
from audit.testing import assert_private


def nan_raises(data, rng):
    if np.isnan(data).any():
        raise ValueError("NaN in the input")
    return float(np.sum(data) + rng.laplace())


def nan_aborts(data, rng):
    if np.isnan(data).any():
        os.abort()  # as OpenDP 0.16's panic in an FFI call that cannot unwind
    return float(np.sum(data) + rng.laplace())


def test_an_exception_it_catches_is_the_symbol_and_counted():
    wrapped = RaisedAsOutput(nan_raises, catch=(ValueError,))
    rng = np.random.default_rng(0)
    assert np.isfinite(wrapped(np.ones((3, 1)), rng))
    out = wrapped(np.full((3, 1), np.nan), rng)
    assert out is RAISED and np.isnan(out)
    assert wrapped.failures == {"ValueError": 1}


def test_an_exception_it_does_not_catch_propagates():
    wrapped = RaisedAsOutput(nan_raises, catch=(KeyError,))
    with pytest.raises(ValueError, match="NaN in the input"):
        wrapped(np.full((3, 1), np.nan), np.random.default_rng(0))


def test_a_release_returning_nan_itself_is_refused():
    wrapped = RaisedAsOutput(lambda data, rng: float("nan"))
    with pytest.raises(ValueError, match="could not be told apart"):
        wrapped(np.ones((3, 1)), np.random.default_rng(0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="own_process forks (POSIX)")
def test_a_child_that_dies_is_the_symbol_and_the_next_call_forks_anew():
    wrapped = RaisedAsOutput(nan_aborts, own_process=True)
    rng = np.random.default_rng(1)
    try:
        first = wrapped(np.ones((3, 1)), rng)
        assert np.isfinite(first)
        assert wrapped(np.full((3, 1), np.nan), rng) is RAISED
        assert wrapped(np.full((3, 1), np.nan), rng) is RAISED
        assert np.isfinite(wrapped(np.ones((3, 1)), rng))  # a new child
        assert wrapped.failures == {"died": 2}
    finally:
        wrapped.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="own_process forks (POSIX)")
def test_in_its_own_process_a_seeded_release_is_reproducible_and_errors_surface():
    def run(seed):
        wrapped = RaisedAsOutput(nan_raises, catch=(ValueError,), own_process=True)
        rng = np.random.default_rng(seed)
        try:
            return [wrapped(np.ones((2, 1)), rng) for _ in range(3)]
        finally:
            wrapped.close()

    assert np.array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))
    bad = RaisedAsOutput(nan_raises, catch=(KeyError,), own_process=True)
    try:
        with pytest.raises(RuntimeError, match="ValueError: NaN in the input"):
            bad(np.full((2, 1), np.nan), np.random.default_rng(0))
    finally:
        bad.close()


def test_it_pickles_by_its_parameters():
    wrapped = RaisedAsOutput(nan_raises, catch=(ValueError,))
    wrapped(np.full((1, 1), np.nan), np.random.default_rng(0))
    copy = pickle.loads(pickle.dumps(wrapped))
    assert copy.catch == (ValueError,) and copy.failures == {}


def test_the_audit_refutes_a_release_that_raises_only_on_the_nan_side():
    """ε = ∞ by the event "raised": the black-box audit, which would stop at the exception,
    counts it and refutes ε = 1; the same release that never raises keeps it."""
    z = np.zeros((5, 1))
    z_prime = z.copy()
    z_prime[0] = np.nan
    raising = CallableImplementation(RaisedAsOutput(nan_raises, catch=(ValueError,)),
                                     Claim(1.0), name="raises-on-nan")
    with pytest.raises(AssertionError, match="eps"):
        assert_private(raising, (z, z_prime), trials=2000, seed=0)
    failed = dict(raising.func.failures)
    assert failed["ValueError"] > 2000  # every call on z′, pilot and main run
    z_prime[0] = 1.0  # the same pair without NaN: a Laplace sum of sensitivity 1 keeps ε = 1
    res = assert_private(raising, (z, z_prime), trials=2000, seed=0)
    assert res.eps_lower <= 1.0 and raising.func.failures == failed
