"""audit.cli.arguments: the argument types the commands share."""

from __future__ import annotations

import argparse

import pytest

from audit.cli.arguments import integer


@pytest.mark.parametrize("text, value", [("1000", 1000), ("1_000", 1000), ("1e15", 10**15),
                                         ("3E4", 30_000), ("-1", -1)])
def test_integer_arguments_accept_whole_numbers_written_as_floats(text, value):
    assert integer(text) == value


@pytest.mark.parametrize("text", ["1.5", "ten", "1e30", "nan", ""])
def test_integer_arguments_refuse_the_rest(text):
    with pytest.raises(argparse.ArgumentTypeError, match="invalid integer value"):
        integer(text)
