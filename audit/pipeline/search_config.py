"""The ``[search]`` table: a black-box audit that finds its own neighbouring pair.

::

    [search]
    families = ["corners", "nan", "nan-position"]   # PairFamily values (audit.model.pair_families)
    cap = 16              # most candidates per family (sampled, seeded, when more)
    calls = 2000          # calls per side per candidate on the search split
    pairs = []            # the "list" family's pairs: [{z = [[...]], z_prime = [[...]]}, ...]

Each candidate is scored by a short audit on calls of its own (the search split); the best is
audited with ``[audit]``'s budget on fresh calls (pilot and main run, as with a given pair), so
the bound is valid for the pair chosen: the choice depends only on calls the bound never sees.
``[pair]`` given by the user skips the search (the two tables are exclusive).
"""

from __future__ import annotations

from dataclasses import dataclass

from audit._validate import check_positive_int, check_table
from audit.enums import PairFamily

__all__ = ["SearchConfig", "search_from_table", "check_search_setting", "MAX_SEARCH_CALLS",
           "DEFAULT_FAMILIES", "NEEDS_IMPLEMENTATION"]

#: The families searched when ``[search]`` names none (a table of records: values and NA).
DEFAULT_FAMILIES = (PairFamily.CORNERS, PairFamily.NAN, PairFamily.NAN_POSITION)
#: Most calls per side a whole search may make (candidates × calls, pilots included).
MAX_SEARCH_CALLS = 10**8
_KEYS = {"families", "cap", "calls", "pairs"}


@dataclass(frozen=True)
class SearchConfig:
    """A validated ``[search]`` table (see the module docstring)."""

    families: tuple = DEFAULT_FAMILIES
    cap: int = 16
    calls: int = 2000
    pairs: tuple = ()

    def __post_init__(self) -> None:
        fams = self.families
        if isinstance(fams, str) or not isinstance(fams, list | tuple) or not fams:
            raise ValueError(f"search.families must be a non-empty list of "
                             f"{[f.value for f in PairFamily]}, got search.families={fams!r}")
        parsed = tuple(PairFamily.parse(f, "search.families") for f in fams)
        if len(set(parsed)) != len(parsed):
            raise ValueError(f"search.families must not repeat a family, got {list(fams)}")
        object.__setattr__(self, "families", parsed)
        for key in ("cap", "calls"):
            value = getattr(self, key)
            if isinstance(value, float) and value.is_integer():
                object.__setattr__(self, key, int(value))
        from audit.model.pair_families import MAX_CANDIDATES

        cap = check_positive_int(self.cap, "search.cap")
        if cap > MAX_CANDIDATES:
            raise ValueError(f"search.cap must be in [1, {MAX_CANDIDATES}], got "
                             f"search.cap={cap}")
        calls = check_positive_int(self.calls, "search.calls", minimum=100)
        if len(parsed) * cap * calls > MAX_SEARCH_CALLS:
            raise ValueError(f"search: families × cap × calls must be at most "
                             f"{MAX_SEARCH_CALLS:.0e} calls per side, got {len(parsed)} × "
                             f"{cap} × {calls}")
        pairs = self.pairs
        if not isinstance(pairs, list | tuple):
            raise ValueError(f"search.pairs must be a list of {{z, z_prime}} tables, got "
                             f"search.pairs={pairs!r}")
        object.__setattr__(self, "pairs", tuple(_pair(i, p) for i, p in enumerate(pairs)))
        if (PairFamily.LIST in parsed) != bool(self.pairs):
            raise ValueError("search.pairs must be given exactly when search.families lists "
                             "'list'")

    def to_dict(self) -> dict:
        return {"families": [f.value for f in self.families], "cap": self.cap,
                "calls": self.calls, "pairs": [{"z": z, "z_prime": zp} for z, zp in self.pairs]}


def _pair(i: int, table: object) -> tuple[list, list]:
    if not isinstance(table, dict) or set(table) != {"z", "z_prime"}:
        raise ValueError(f"search.pairs[{i}] must be a table with the keys z and z_prime, "
                         f"got {table!r}")
    return table["z"], table["z_prime"]


def search_from_table(table: object) -> SearchConfig:
    """The :class:`SearchConfig` of a ``[search]`` table; one ``ValueError`` per bad key or
    value, naming it."""
    table = check_table("search", table, _KEYS)
    return SearchConfig(**table)


#: Why a model audit refuses ``[search]`` (raised by the subject factory, before any work).
NEEDS_IMPLEMENTATION = ("[search] searches the pair of a black box: it needs an implementation "
                        "(a model audit's pair search is exact)")


def check_search_setting(search: SearchConfig, *, pair: bool, strata: bool, n: int) -> None:
    """Refuse, before any work, a ``[search]`` the rest of the config cannot run: with
    ``[pair]`` (a given pair skips the search), with ``[strata]``, or the ``tester`` family on
    more than one record. (A model audit with ``[search]`` is refused by the subject factory:
    an implementation may be handed to the audit without an ``[implementation]`` table.)"""
    if pair:
        raise ValueError("[search] and [pair] are exclusive: a given pair skips the search")
    if strata:
        raise ValueError("[search] with [strata] is not supported: search the pair first, "
                         "then stratify its audit with [pair]")
    if PairFamily.TESTER in search.families and n != 1:
        raise ValueError(f"search.families 'tester' needs a one-record dataset (its record is "
                         f"the query vector): scenario.n must be 1, got n={n}")
