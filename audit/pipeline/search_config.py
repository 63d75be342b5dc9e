"""The ``[search]`` table: a black-box audit that finds its own neighbouring pair.

::

    [search]
    families = ["corners", "nan", "nan-position"]   # PairFamily values (audit.model.pair_families)
    cap = 16              # most candidates per family (sampled, seeded, when more)
    calls = 2000          # calls per side per candidate in the first round (the search split)
    pairs = []            # the "list" family's pairs: [{z = [[...]], z_prime = [[...]]}, ...]
    table = "data.csv"    # the "table" family's table (.csv or .npy: records × features, NA)

Each candidate is scored by a short audit on calls of its own (the search split), the best
quarter (at least two) again with four times the calls until a round has scored two
(successive halving, :func:`schedule`); the best is
audited with ``[audit]``'s budget on fresh calls (pilot and main run, as with a given pair), so
the bound is valid for the pair chosen: the choice depends only on calls the bound never sees.
``[pair]`` given by the user skips the search (the two tables are exclusive).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from audit._validate import check_positive_int, check_table
from audit.enums import PairFamily

__all__ = ["SearchConfig", "search_from_table", "ETA", "schedule",
           "search_cost", "MAX_SEARCH_CALLS", "DEFAULT_FAMILIES"]

#: The families searched when ``[search]`` names none (a table of records: values and NA).
DEFAULT_FAMILIES = (PairFamily.CORNERS, PairFamily.NAN, PairFamily.NAN_POSITION)
#: Successive halving's factor: a round keeps the best max(2, ⌈n/ETA⌉) of its n candidates and
#: scores them with ETA times the calls (:func:`schedule`). At 4 the tester family's 8 patterns
#: take two rounds (twice the calls of one), and the 2 finalists get 4 × calls each: on
#: ReportNoisyMax1 at 2·10⁶ calls, whose two best patterns' exact ε differ by 0.0019, the
#: standard deviation of their difference falls from 2.8·10⁻³ (one round) to 1.4·10⁻³.
ETA = 4
#: Most calls per side a whole search may make (:func:`search_cost`: every round's
#: candidates × calls, pilots excluded).
MAX_SEARCH_CALLS = 10**8
_KEYS = {"families", "cap", "calls", "pairs", "table"}


@dataclass(frozen=True)
class SearchConfig:
    """A validated ``[search]`` table (see the module docstring)."""

    families: tuple = DEFAULT_FAMILIES
    cap: int = 16
    calls: int = 2000
    pairs: tuple = ()
    #: the ``table`` family's file (read when the config is loaded: :attr:`data`)
    table: str | None = None
    data: object = field(default=None, repr=False, compare=False)

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
        cost = search_cost(len(parsed) * cap, calls)
        if cost > MAX_SEARCH_CALLS:
            raise ValueError(f"search: the calls of all its rounds (each round's candidates "
                             f"× calls, audit.pipeline.search_config.schedule) must be at most "
                             f"{MAX_SEARCH_CALLS:.0e} per side, got {cost:,} for families × cap "
                             f"× calls = {len(parsed)} × {cap} × {calls}")
        pairs = self.pairs
        if not isinstance(pairs, list | tuple):
            raise ValueError(f"search.pairs must be a list of {{z, z_prime}} tables, got "
                             f"search.pairs={pairs!r}")
        object.__setattr__(self, "pairs", tuple(_pair(i, p) for i, p in enumerate(pairs)))
        if (PairFamily.LIST in parsed) != bool(self.pairs):
            raise ValueError("search.pairs must be given exactly when search.families lists "
                             "'list'")
        if (PairFamily.TABLE in parsed) != (self.table is not None):
            raise ValueError("search.table must be given exactly when search.families lists "
                             "'table'")
        if self.table is not None:
            from audit.model.pair_families import read_table

            if not isinstance(self.table, str):
                raise ValueError(f"search.table must be a file path, got search.table="
                                 f"{self.table!r}")
            object.__setattr__(self, "data", read_table(self.table))

    def to_dict(self) -> dict:
        out = {"families": [f.value for f in self.families], "cap": self.cap,
               "calls": self.calls, "pairs": [{"z": z, "z_prime": zp} for z, zp in self.pairs]}
        if self.table is not None:
            out["table"] = self.table
        return out


def schedule(candidates: int, calls: int) -> list[tuple[int, int]]:
    """Successive halving's rounds: (candidates scored, calls per side each) per round.

    Round 0 scores all ``candidates`` with ``calls``; while a round scored more than two,
    the next scores its best max(2, ⌈n/ETA⌉) with ETA times the calls; the best of the last
    round is chosen (8 candidates: [(8, c), (2, 4c)]; 16: [(16, c), (4, 4c), (2, 16c)];
    2: [(2, c)]).

    Raises
    ------
    ValueError
        If ``candidates`` or ``calls`` is not a positive integer.
    """
    n = check_positive_int(candidates, "candidates")
    c = check_positive_int(calls, "calls")
    rounds = [(n, c)]
    while n > 2:
        n, c = max(2, -(-n // ETA)), c * ETA
        rounds.append((n, c))
    return rounds


def search_cost(candidates: int, calls: int) -> int:
    """Calls per side of a search of at most ``candidates`` candidates, pilots excluded: the
    sum over successive halving's rounds (:func:`schedule`)."""
    return sum(n * c for n, c in schedule(candidates, calls))


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

