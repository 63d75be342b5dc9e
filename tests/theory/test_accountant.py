"""Tests for audit.theory.accountant: one import for every bound, each with one home."""

from __future__ import annotations

import math

import pytest

from audit.mixture import NoiseKind
from audit.theory import accountant as acc
from audit.theory import amplification, bounds, fwl, profiles, releases, tradeoff


def test_reexports_and_fwl_integration():
    for name in [
        "tradeoff_dp",
        "tradeoff_gaussian",
        "tradeoff_laplace",
        "amplify_tradeoff",
        "delta_for_epsilon",
        "epsilon_for_delta",
        "min_error_sum",
    ]:
        assert callable(getattr(acc, name))
    c = fwl.bounded_mean(100, 10)
    e = acc.laplace_fwl_bound(1.0, 0.9, c.ratio(0.3))
    assert e == pytest.approx(math.log1p(0.9 * math.expm1(0.3)))


def test_every_name_is_reexported_from_its_one_home():
    homes = (amplification, bounds, profiles, releases, tradeoff)
    for name in acc.__all__:
        owners = [m for m in homes if getattr(m, name, None) is getattr(acc, name)]
        assert owners, name
    assert acc.all_bounds is bounds.all_bounds and acc.BoundRow is bounds.BoundRow
    assert acc.dp_min_error_sum is profiles.dp_min_error_sum


def test_mechanism_is_the_noise_kind_and_parse_errors_name_mechanism():
    assert acc.Mechanism is NoiseKind
    rows = acc.all_bounds(1.0, None, 0.5, NoiseKind.LAPLACE)
    assert rows[0].note.startswith("laplace calibrated")
    with pytest.raises(ValueError, match=r"^mechanism must be one of 'laplace', 'gaussian'"):
        acc.all_bounds(1.0, None, 0.5, "cauchy")
