"""The typed witness of an audit's bound: the ``Bound`` protocol and its registry.

Every bound an audit can end with (:class:`audit.estimation.regions.RegionBound`: one region
or a Bonferroni grid; :class:`audit.estimation.sequential.SequentialBound`: the anytime-valid
betting test; :class:`audit.estimation.strata.StratifiedBound`: ε_lower at every rate of a
grid) is one class registered here under its ``kind`` (the JSON witness's ``"kind"`` key) with
:func:`register_bound`. What a result, a ceiling check or a reader does with a bound goes
through the protocol's members, never through ``isinstance``: a new kind of bound is one class
and one decorator.
"""

from __future__ import annotations

import dataclasses

from audit.interfaces import Bound

__all__ = ["Bound", "register_bound", "bound_kind", "bound_kinds", "field_values"]


_KINDS: dict[str, type] = {}


def register_bound(cls: type) -> type:
    """Class decorator: register ``cls`` under ``cls.kind``.

    Raises
    ------
    ValueError
        If ``cls`` has no string ``kind``, lacks a member of :class:`Bound`, or another class
        already holds its kind.
    """
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"a bound class needs a string kind, got {cls.__name__}.kind={kind!r}")
    missing = [m for m in ("plug_in", "describe", "to_dict", "from_dict", "refutes",
                           "result_keys") if not callable(getattr(cls, m, None))]
    if missing:
        raise ValueError(f"bound class {cls.__name__} lacks {', '.join(missing)}")
    if _KINDS.get(kind, cls) is not cls:
        raise ValueError(f"bound kind {kind!r} is already registered by "
                         f"{_KINDS[kind].__name__}")
    _KINDS[kind] = cls
    return cls


def bound_kind(kind: str) -> type:
    """The bound class registered under ``kind``.

    Raises
    ------
    ValueError
        If no class is (the message lists the registered kinds).
    """
    if kind not in _KINDS:
        raise ValueError(f"witness kind must be one of {', '.join(sorted(_KINDS))}, got "
                         f"kind={kind!r}")
    return _KINDS[kind]


def field_values(cls: type, doc: dict) -> dict:
    """The values of dataclass ``cls``'s fields in a witness document ``doc`` (keys that are
    not fields, ``kind`` among them, left out), for a ``from_dict``.

    Raises
    ------
    ValueError
        If a field without a default is missing (``witness is not a <kind> bound``).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {k: doc[k] for k in fields if k in doc}
    missing = sorted(k for k, f in fields.items()
                     if f.default is dataclasses.MISSING and k not in values)
    if missing:
        raise ValueError(f"witness is not a {cls.kind} bound (missing {', '.join(missing)})")
    return values


def bound_kinds() -> tuple[str, ...]:
    """The registered kinds, sorted."""
    return tuple(sorted(_KINDS))
