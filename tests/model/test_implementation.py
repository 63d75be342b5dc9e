"""Tests for audit.model.implementation: claims, callable and reference implementations,
and ``load_callable``.

Oracles: the reference release recomputed by hand from the same seeded generator, and a
Kolmogorov–Smirnov test of its noise against scipy's Laplace and normal laws.
"""

from __future__ import annotations

import collections
import math
import os.path

import numpy as np
import pytest
from scipy import stats

from audit.model.implementation import (
    CallableImplementation,
    Claim,
    Implementation,
    ReferenceImplementation,
    load_callable,
)
from audit.model.queries import make_query
from audit.model.release import Release

DATA = np.array([[1.0, np.nan, 0.5], [0.25, 0.25, np.nan]])  # sum with NA read as 0: 2.0


def test_claim_defaults_and_validation():
    assert Claim(1.0) == Claim(1.0, 0.0, "")
    with pytest.raises(ValueError, match=r"claim epsilon must be in \[0.0, inf\)"):
        Claim(-1.0)
    with pytest.raises(ValueError, match=r"claim delta must be in \[0, 1\), got claim delta=1.0"):
        Claim(1.0, 1.0)
    with pytest.raises(ValueError, match=r"claim delta must be in \[0.0, 1.0\]"):
        Claim(1.0, -0.1)


def test_reference_release_by_hand():
    impl = ReferenceImplementation(make_query("sum"), Release("laplace", 0.7), Claim(1.0))
    assert isinstance(impl, Implementation)
    got = impl(DATA, np.random.default_rng(4))
    want = 2.0 + np.random.default_rng(4).laplace(scale=0.7, size=(1, 1))[0, 0]
    assert got == want
    stack = np.stack([DATA, 2 * DATA, np.zeros_like(DATA)])
    batch = impl.batch(stack, np.random.default_rng(9))
    noise = np.random.default_rng(9).laplace(scale=0.7, size=(3, 1))[:, 0]
    assert np.array_equal(batch, np.array([2.0, 4.0, 0.0]) + noise)


def test_a_vector_query_returns_a_vector():
    impl = ReferenceImplementation(make_query("vector-sum"), Release("gaussian", 1e-9),
                                   Claim(1.0, 1e-5))
    assert np.allclose(impl(DATA, np.random.default_rng(0)), [1.25, 0.25, 0.5], atol=1e-7)


@pytest.mark.parametrize(("noise", "law"), [("laplace", stats.laplace), ("gaussian", stats.norm)])
def test_reference_noise_follows_its_law(noise, law):
    impl = ReferenceImplementation(make_query("sum"), Release(noise, 1.3), Claim(1.0, 1e-5))
    datasets = np.broadcast_to(DATA, (4000, *DATA.shape))
    out = impl.batch(datasets, np.random.default_rng(21)) - 2.0
    assert stats.kstest(out, law(scale=1.3).cdf).pvalue > 1e-3
    # the other law of the same scale is rejected (the noise kind is not ignored)
    other = stats.norm if law is stats.laplace else stats.laplace
    assert stats.kstest(out, other(scale=1.3).cdf).pvalue < 1e-3


def test_callable_implementation_calls_through():
    def func(data, rng):
        return float(np.nansum(data)) + rng.normal()

    impl = CallableImplementation(func, Claim(0.5), name="mine")
    assert isinstance(impl, Implementation) and impl.batch is None
    assert impl(DATA, np.random.default_rng(1)) == 2.0 + np.random.default_rng(1).normal()
    batched = CallableImplementation(func, Claim(0.5), batch_func=lambda x, rng: x.sum())
    assert batched.batch(np.ones((2, 2, 2)), None) == 8.0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"func": 3}, "func must be callable, got func=3"),
    ({"batch_func": "no"}, "batch_func must be callable, got batch_func='no'"),
    ({"claim": (1.0, 0.0)}, r"claim must be an audit.model.implementation.Claim"),
])
def test_callable_implementation_validates(kwargs, message):
    args = {"func": lambda d, r: 0.0, "claim": Claim(1.0)} | kwargs
    with pytest.raises(ValueError, match=message):
        CallableImplementation(**args)


def test_load_callable_finds_module_attributes():
    assert load_callable("math:sqrt") is math.sqrt
    assert load_callable("os.path:join") is os.path.join
    assert load_callable("collections:OrderedDict.fromkeys") == collections.OrderedDict.fromkeys


@pytest.mark.parametrize(("target", "message"), [
    ("math.sqrt", r"target must look like 'package.module:function', got target='math.sqrt'"),
    (":sqrt", "target must look like"),
    ("math:", "target must look like"),
    ("no_such_module_xyz:f", r"cannot import 'no_such_module_xyz'"),
    ("math:no_such_function", r"'math' has no attribute 'no_such_function'"),
])
def test_load_callable_refuses_bad_targets(target, message):
    with pytest.raises(ValueError, match=message):
        load_callable(target)
