"""Parameter checks shared by every public function.

Each check raises ``ValueError`` with a message that names the parameter, the allowed range
and the value received, e.g. ``delta must be in [0, 1], got delta=1.5``. Checks return the
value converted to ``float`` (or ``int``) so callers can write ``eps = check_epsilon(eps)``.
"""

from __future__ import annotations

import math
from enum import Enum
from numbers import Integral, Real
from typing import TypeVar

E = TypeVar("E", bound=Enum)

__all__ = [
    "check_real",
    "check_in_range",
    "check_epsilon",
    "check_delta",
    "check_probability",
    "check_fraction",
    "check_positive",
    "check_positive_int",
    "check_count",
    "check_table",
    "check_bool",
    "check_jobs",
    "spelled_setting",
    "parse_enum",
]


def _fmt_range(lo: float, hi: float, lo_closed: bool, hi_closed: bool) -> str:
    left = "[" if lo_closed else "("
    right = "]" if hi_closed else ")"
    return f"{left}{lo}, {hi}{right}"


def check_real(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, rejecting non-numbers, NaN and (unless allowed) infinities."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a real number, got {name}={value!r}")
    v = float(value)
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name} must be a finite real number, got {name}={value!r}")
    return v


def check_interval(value: object, name: str) -> tuple[float, float]:
    """``value`` as (lo, hi): two finite real numbers (a list, tuple or 1-D array) with
    lo < hi."""
    items = value.tolist() if hasattr(value, "tolist") else value
    ok = isinstance(items, list | tuple) and len(items) == 2 and all(
        isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v) for v in items)
    if not ok or not items[0] < items[1]:
        raise ValueError(f"{name} must be [lo, hi] with finite lo < hi, got {name}={value!r}")
    return float(items[0]), float(items[1])


def check_in_range(
    name: str,
    value: object,
    lo: float,
    hi: float,
    *,
    lo_closed: bool = True,
    hi_closed: bool = True,
) -> float:
    """Check ``lo <= value <= hi`` (with open ends as requested) and return it as float."""
    v = check_real(name, value, allow_inf=math.isinf(lo) or math.isinf(hi))
    ok_lo = v >= lo if lo_closed else v > lo
    ok_hi = v <= hi if hi_closed else v < hi
    if not (ok_lo and ok_hi):
        rng = _fmt_range(lo, hi, lo_closed, hi_closed)
        raise ValueError(f"{name} must be in {rng}, got {name}={value!r}")
    return v


def check_epsilon(value: object, name: str = "epsilon", *, allow_zero: bool = True) -> float:
    """ε ∈ [0, ∞) (or (0, ∞) when ``allow_zero`` is false)."""
    return check_in_range(name, value, 0.0, math.inf, lo_closed=allow_zero, hi_closed=False)


def check_delta(value: object, name: str = "delta") -> float:
    """δ ∈ [0, 1]."""
    return check_in_range(name, value, 0.0, 1.0)


def check_probability(value: object, name: str = "p") -> float:
    """A probability in [0, 1]."""
    return check_in_range(name, value, 0.0, 1.0)


def check_fraction(value: object, name: str) -> float:
    """A fraction in (0, 1]: ρ (largest observed share of a record's features), C̃/C."""
    return check_in_range(name, value, 0.0, 1.0, lo_closed=False, hi_closed=True)


def check_positive(value: object, name: str, *, allow_inf: bool = False) -> float:
    """A strictly positive real number."""
    return check_in_range(name, value, 0.0, math.inf, lo_closed=False, hi_closed=allow_inf)


def check_positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """An integer ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {name}={value!r}")
    return int(value)


def check_count(value: object, name: str) -> int:
    """A positive integer, also written as an integral float (``1e9``): a number of releases."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")
    if not isinstance(value, Integral):
        f = float(value)
        if not (math.isfinite(f) and f.is_integer()):
            raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {name}={value!r}")
    return int(value)


def check_bool(value: object, name: str) -> bool:
    """A genuine ``bool`` (not 0/1, not a string such as "yes")."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {name}={value!r}")
    return value


def parse_enum(cls: type[E], value: object, name: str) -> E:
    """``value`` as a member of the string-valued enum ``cls`` (members pass through).

    Raises ``ValueError`` listing the allowed values: ``noise must be one of 'laplace',
    'gaussian', got noise='cauchy'``.
    """
    if isinstance(value, cls):
        return value
    for candidate in (value, str(value).lower()):
        try:
            return cls(candidate)
        except ValueError:
            continue
    allowed = ", ".join(repr(k.value) for k in cls)
    raise ValueError(f"{name} must be one of {allowed}, got {name}={value!r}")


def spelled_setting(name: str, value: object) -> str:
    """``name`` set to ``value`` as its source writes it: ``--jobs 4``, ``audit.jobs = 4``,
    ``n_jobs=4``."""
    if name.startswith("-"):
        return f"{name} {value}"
    if "." in name:
        return f"{name} = {value}"
    return f"{name}={value}"


def check_jobs(requested: object, name: str = "n_jobs") -> int:
    """``requested`` as a worker request: an integer ≥ 1, or −1 (all usable CPUs).

    Raises
    ------
    ValueError
        Naming ``name``: ``--jobs must be an integer >= 1 or -1, got --jobs 0``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str, got name={name!r}")
    if isinstance(requested, bool) or not isinstance(requested, Integral) or (
        requested < 1 and requested != -1
    ):
        raise ValueError(f"{name} must be an integer >= 1 or -1, got "
                         f"{spelled_setting(name, repr(requested))}")
    return int(requested)


def check_table(name: str, table: object, allowed: set[str]) -> dict:
    """``table`` (a config table ``[name]``) as a dict, refused with one line when it is not
    a table or holds a key outside ``allowed`` (``unknown key name.key (allowed: ...)``)."""
    if not isinstance(table, dict):
        raise ValueError(f"[{name}] must be a table, got {name}={table!r}")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ValueError(f"unknown key {name}.{unknown[0]} (allowed: "
                         f"{', '.join(sorted(allowed))})")
    return table
