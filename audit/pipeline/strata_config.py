"""The ``[strata]`` table: a mask-stratified implementation audit (docs/THEORY.md §8.5).

::

    [strata]
    by = "missing-count"       # the statistic the masks are stratified by
    rates = [0.0, 0.3, 0.5]    # the MCAR-iid grid of missing rates (must hold missingness.rate)
    floor = 20                 # calls per stratum at least, for every stratum that gets calls
    sides = "auto"             # "auto" | "both" | "p" | "q" | "none": which sides are stratified
    scores = "per-rate"        # "per-rate": a score fitted for each rate | "pooled": one score
    looks = 4                  # audit.mode = "sequential" only: the looks of the run (2 to 16)
    simultaneous = false       # true: bounds valid at every rate at once (both sides
                               # stratified, one score and one region for the grid)

One run gives ε_lower at every rate of the grid: ``audit.trials`` calls per side per rate
(``len(rates) × trials`` per side in all, the calls of as many separate audits). In
``audit.mode = "sequential"`` the run makes ``looks`` looks, after 1/2^(looks − 1), …, 1/2, 1
of every stratum's calls, each bounded at ``alpha / looks``; it stops at the first look whose
bound at the config's rate exceeds the claim (``audit.stop = "refuted"``) or runs them all
(``"budget"``).
"""

from __future__ import annotations

from dataclasses import dataclass

from audit._validate import check_positive_int, check_table
from audit.enums import StrataBy, StrataSides

__all__ = ["StrataConfig", "strata_from_table", "DEFAULT_FLOOR",
           "DEFAULT_LOOKS"]

#: Calls per sampled stratum at least, by default.
DEFAULT_FLOOR = 20
#: Looks of a sequential stratified audit, by default.
DEFAULT_LOOKS = 4
_KEYS = {"by", "rates", "floor", "sides", "scores", "looks", "simultaneous"}
_SCORES = ("per-rate", "pooled")


@dataclass(frozen=True)
class StrataConfig:
    """A validated ``[strata]`` table (see the module docstring); ``rates`` as a tuple."""

    rates: tuple
    by: StrataBy = StrataBy.MISSING_COUNT
    floor: int = DEFAULT_FLOOR
    sides: StrataSides = StrataSides.AUTO
    scores: str = "per-rate"
    #: looks of a sequential run; None: not set (:data:`DEFAULT_LOOKS` when sequential)
    looks: int | None = None
    #: bounds valid at every rate of the grid at once (both sides stratified, one pooled
    #: score, one region for the grid chosen on the pilot)
    simultaneous: bool = False

    def __post_init__(self) -> None:
        from audit.estimation.strata import check_rates  # (the config imports no scipy)
        from audit.estimation.strata_looks import MAX_LOOKS

        object.__setattr__(self, "by", StrataBy.parse(self.by, "strata.by"))
        object.__setattr__(self, "rates", tuple(float(r) for r in
                                                check_rates(self.rates, "strata.rates")))
        if isinstance(self.floor, float) and self.floor.is_integer():
            object.__setattr__(self, "floor", int(self.floor))
        check_positive_int(self.floor, "strata.floor")
        object.__setattr__(self, "sides", StrataSides.parse(self.sides, "strata.sides"))
        if self.scores not in _SCORES:
            raise ValueError(f"strata.scores must be one of {', '.join(map(repr, _SCORES))}, "
                             f"got strata.scores={self.scores!r}")
        if self.looks is not None:
            if isinstance(self.looks, float) and self.looks.is_integer():
                object.__setattr__(self, "looks", int(self.looks))
            if isinstance(self.looks, bool) or not isinstance(self.looks, int) \
                    or not 2 <= self.looks <= MAX_LOOKS:
                raise ValueError(f"strata.looks must be an integer in [2, {MAX_LOOKS}], got "
                                 f"strata.looks={self.looks!r}")

    def n_looks(self, sequential: bool) -> int:
        """The looks of the main run: one in fixed mode."""
        return (self.looks or DEFAULT_LOOKS) if sequential else 1

    @property
    def own_scores(self) -> bool:
        """Whether each rate gets a score fitted for its own law."""
        return self.scores == "per-rate"

    def to_dict(self) -> dict:
        out = {"by": self.by.value, "rates": list(self.rates), "floor": self.floor,
               "sides": self.sides.value, "scores": self.scores}
        if self.looks is not None:
            out["looks"] = self.looks
        if self.simultaneous:
            out["simultaneous"] = True
        return out


def strata_from_table(table: object) -> StrataConfig:
    """The :class:`StrataConfig` of a ``[strata]`` table; one ``ValueError`` per bad key or
    value, naming it."""
    table = check_table("strata", table, _KEYS)
    if "rates" not in table:
        raise ValueError("config is missing the key strata.rates (the grid of missing rates)")
    simultaneous = table.get("simultaneous", False)
    if not isinstance(simultaneous, bool):
        raise ValueError(f"strata.simultaneous must be true or false, got "
                         f"strata.simultaneous={simultaneous!r}")
    if simultaneous:
        # one statement about every rate needs the same per-stratum events at every rate
        for key, needed in (("sides", "both"), ("scores", "pooled")):
            if table.get(key, needed) != needed:
                raise ValueError(f"strata.simultaneous = true stratifies both sides with one "
                                 f"score and one region for the grid: strata.{key} must be "
                                 f"{needed!r} (or absent), got strata.{key}={table[key]!r}")
        table = {**table, "sides": "both", "scores": "pooled"}
    return StrataConfig(**table)
