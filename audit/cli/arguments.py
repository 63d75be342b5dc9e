"""Argument types shared by the commands (``python -m audit run``, ``suite``, ...)."""

from __future__ import annotations

import argparse

__all__ = ["integer"]


def integer(text: str) -> int:
    """An argparse type for counts: ``1000``, ``1_000``, ``1e15`` (an integral value written
    as a float), refused with argparse's one-line error otherwise."""
    try:
        return int(text.replace("_", ""))
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r}") from None
    if not value.is_integer() or abs(value) >= 2.0**63:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r} (not a whole number "
                                         "below 2^63)")
    return int(value)
