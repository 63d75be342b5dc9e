"""Tests for audit._validate: the parameter checks behind every public function.

Oracle: the contract written in the module docstring (the message names the parameter, the
allowed range and the value; the value comes back converted).
"""

from __future__ import annotations

import math
from enum import StrEnum

import numpy as np
import pytest

from audit._validate import (
    check_bool,
    check_delta,
    check_epsilon,
    check_fraction,
    check_in_range,
    check_positive,
    check_positive_int,
    check_probability,
    check_real,
    parse_enum,
)


class Colour(StrEnum):
    RED = "red"
    GREEN = "green"


def test_check_real_converts_and_rejects_non_numbers():
    assert check_real("x", 3) == 3.0 and type(check_real("x", 3)) is float
    assert check_real("x", np.float32(0.5)) == 0.5
    assert check_real("x", math.inf, allow_inf=True) == math.inf
    for bad in (True, "1.0", None, [1.0]):
        with pytest.raises(ValueError, match=r"x must be a real number, got x="):
            check_real("x", bad)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match=r"x must be a finite real number"):
            check_real("x", bad)
    with pytest.raises(ValueError, match="finite"):
        check_real("x", math.nan, allow_inf=True)  # NaN is never allowed


def test_check_in_range_ends_open_and_closed():
    assert check_in_range("a", 0, 0.0, 1.0) == 0.0
    assert check_in_range("a", 1, 0.0, 1.0) == 1.0
    with pytest.raises(ValueError, match=r"^a must be in \(0.0, 1.0\], got a=0$"):
        check_in_range("a", 0, 0.0, 1.0, lo_closed=False)
    with pytest.raises(ValueError, match=r"^a must be in \[0.0, 1.0\), got a=1$"):
        check_in_range("a", 1, 0.0, 1.0, hi_closed=False)
    with pytest.raises(ValueError, match=r"^a must be in \[0.0, 1.0\], got a=1.5$"):
        check_in_range("a", 1.5, 0.0, 1.0)
    # an infinite bound admits infinite values up to it
    assert check_in_range("a", math.inf, 0.0, math.inf) == math.inf


def test_the_message_of_the_docstring():
    with pytest.raises(ValueError) as err:
        check_delta(1.5)
    assert str(err.value) == "delta must be in [0.0, 1.0], got delta=1.5"


@pytest.mark.parametrize(("check", "good", "bad", "name"), [
    (check_delta, [0, 1e-300, 1], [-1e-12, 1.0000001], "delta"),
    (check_probability, [0, 0.5, 1], [-0.1, 2], "p"),
    (check_fraction, [1e-12, 1], [0, 1.1], "rho"),
    (check_positive, [1e-300, 7], [0, -1, math.inf], "scale"),
])
def test_range_checks(check, good, bad, name):
    kwargs = {} if check in (check_delta, check_probability) else {"name": name}
    for v in good:
        assert check(v, **kwargs) == float(v)
    for v in bad:
        with pytest.raises(ValueError, match=rf"^{name} must be "):
            check(v, **kwargs)


def test_check_epsilon_zero_and_infinity():
    assert check_epsilon(0) == 0.0
    assert check_epsilon(1e300) == 1e300
    with pytest.raises(ValueError, match=r"epsilon must be in \[0.0, inf\), got epsilon=inf"):
        check_epsilon(math.inf)
    with pytest.raises(ValueError, match=r"eps must be in \(0.0, inf\), got eps=0"):
        check_epsilon(0, "eps", allow_zero=False)
    with pytest.raises(ValueError, match="epsilon must be in"):
        check_epsilon(-0.5)
    assert check_positive(math.inf, "s", allow_inf=True) == math.inf


def test_check_positive_int():
    assert check_positive_int(np.int64(4), "n") == 4 and type(check_positive_int(4, "n")) is int
    assert check_positive_int(0, "n", minimum=0) == 0
    for bad in (0, -3, 2.0, True, "5"):
        with pytest.raises(ValueError, match=r"^n must be an integer >= 1, got n="):
            check_positive_int(bad, "n")


def test_check_bool_accepts_only_bools():
    assert check_bool(True, "flag") is True and check_bool(False, "flag") is False
    for bad in (0, 1, "yes", None):
        with pytest.raises(ValueError, match=r"^flag must be a bool, got flag="):
            check_bool(bad, "flag")


def test_parse_enum():
    assert parse_enum(Colour, Colour.RED, "colour") is Colour.RED
    assert parse_enum(Colour, "green", "colour") is Colour.GREEN
    assert parse_enum(Colour, "GREEN", "colour") is Colour.GREEN  # case-insensitive
    with pytest.raises(ValueError) as err:
        parse_enum(Colour, "blue", "colour")
    assert str(err.value) == "colour must be one of 'red', 'green', got colour='blue'"


def test_check_count_accepts_integral_floats_only():
    from audit._validate import check_count

    assert check_count(3, "releases") == 3
    assert check_count(1e9, "releases") == 10**9
    for bad in (0, -3, 1.5, "2", True, float("inf"), float("nan")):
        with pytest.raises(ValueError,
                           match=r"^releases must be a positive integer, got releases="):
            check_count(bad, "releases")


def test_check_interval_takes_two_increasing_finite_numbers():
    import numpy as np

    from audit._validate import check_interval

    assert check_interval([-1, 1], "d") == (-1.0, 1.0)
    assert check_interval(np.array([0.0, 2.0]), "d") == (0.0, 2.0)
    for bad in ([1.0, 1.0], [0.0, float("inf")], [0.0], "ab", [True, 2.0], None):
        with pytest.raises(ValueError, match=r"d must be \[lo, hi\] with finite lo < hi"):
            check_interval(bad, "d")
