"""Neighbouring relations of DP libraries, and the one conversion to the audit's own.

The audit's neighbouring relation is the **substitution of one record** (a row of the (n, d)
array: d entries, or 1 when a target reads one column). A library states its guarantee for its
own relation: the substitution of one *entry* (diffprivlib), the addition or removal of one
privacy unit (PipelineDP), the symmetric distance between vectors of entries (OpenDP), ... .
:func:`to_substitution` is the one place where a library's relation and the (ε, δ) asked for
per substituted record become what the adapter hands the library; every adapter calls it
instead of dividing its budget inline.

References
----------
C. Dwork, A. Roth, *The Algorithmic Foundations of Differential Privacy* (2014), Theorem 2.2
(group privacy: an ε-DP mechanism is gε-DP for datasets g neighbouring steps apart). For
δ > 0 the same induction over the g steps gives (gε', δ'·Σ_{i<g} e^{iε'}): for g = 2, one
removal then one addition, (2ε', (1 + e^{ε'})δ').
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from audit._validate import check_delta, check_positive, check_positive_int
from audit.enums import Choice

__all__ = ["Relation", "LibraryBudget", "to_substitution"]


class Relation(Choice):
    """The neighbouring relation a library's guarantee is stated for.

    With k the number of entries of one record the target reads (``entries`` below), one
    record's substitution is, in the library's relation:

    ``SUBSTITUTION``
        one record replaced — the audit's own relation: 1 step, the budget as asked.
    ``ENTRY_SUBSTITUTION``
        one entry replaced (diffprivlib): a record is a group of k entries, k steps.
    ``ADD_REMOVE``
        one record (privacy unit) added or removed (PipelineDP, with one unit per record): a
        removal then an addition, 2 steps.
    ``ENTRY_ADD_REMOVE``
        one entry added or removed (a library that makes every entry its own unit): 2k steps.
    ``SYMMETRIC_DISTANCE``
        insertions plus deletions of entries, the library's privacy map taking that distance
        as its input (OpenDP's ``d_in``): distance 2k, and the library itself does the group
        step, so the budget is handed over as asked, with ``distance = 2k``.
    """

    SUBSTITUTION = "substitution"
    ENTRY_SUBSTITUTION = "entry-substitution"
    ADD_REMOVE = "add-remove"
    ENTRY_ADD_REMOVE = "entry-add-remove"
    SYMMETRIC_DISTANCE = "symmetric-distance"

    @classmethod
    def _parameter_name(cls) -> str:
        return "relation"


@dataclass(frozen=True)
class LibraryBudget:
    """What to hand a library: its guarantee must be (``epsilon``, ``delta``)-DP for datasets
    ``distance`` apart in its own relation (1: neighbours; more only for relations whose
    library takes the distance itself, :attr:`Relation.SYMMETRIC_DISTANCE`)."""

    epsilon: float
    delta: float
    distance: int


def _steps(relation: Relation, entries: int) -> int:
    """How many neighbouring steps of ``relation`` one record's substitution spans."""
    return {Relation.SUBSTITUTION: 1, Relation.ENTRY_SUBSTITUTION: entries,
            Relation.ADD_REMOVE: 2, Relation.ENTRY_ADD_REMOVE: 2 * entries,
            Relation.SYMMETRIC_DISTANCE: 2 * entries}[relation]


def to_substitution(relation: Relation | str, epsilon: float, delta: float = 0.0, *,
                    entries: int = 1) -> LibraryBudget:
    """The budget to ask of a library whose guarantee is for ``relation``, so that its release
    is (ε, δ)-DP for the substitution of one record of ``entries`` entries.

    A substitution spanning g neighbouring steps of the library's relation (``Relation``
    lists g) needs, by group privacy, ε' = ε/g and δ' = δ / Σ_{i<g} e^{iε'}; for
    ``SYMMETRIC_DISTANCE`` the library's own map is evaluated at the distance g = 2k, so the
    budget is (ε, δ) at ``distance = g``.

    Parameters
    ----------
    relation : Relation or str
        The library's neighbouring relation.
    epsilon : float
        ε > 0 per substituted record.
    delta : float
        δ ∈ [0, 1) per substituted record.
    entries : int
        k ≥ 1, the entries of one record the target reads (d, or 1 for one column; for
        diffprivlib's per-column form 1, since the library already splits ε over columns).

    Returns
    -------
    LibraryBudget
        (ε', δ', distance).

    Raises
    ------
    ValueError
        An unknown relation, ε ≤ 0 or not finite, δ outside [0, 1), or ``entries`` not an
        integer ≥ 1.

    References
    ----------
    Dwork & Roth (2014), Theorem 2.2; the module docstring gives the δ > 0 form.

    Examples
    --------
    >>> to_substitution("add-remove", 1.0, 1e-6)
    LibraryBudget(epsilon=0.5, delta=3.775406687981454e-07, distance=1)
    >>> to_substitution(Relation.ENTRY_SUBSTITUTION, 1.0, entries=4).epsilon
    0.25
    >>> to_substitution("symmetric-distance", 1.0, entries=3)
    LibraryBudget(epsilon=1.0, delta=0.0, distance=6)
    """
    relation = Relation.parse(relation)
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta, "delta")
    if delta >= 1.0:
        raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
    entries = check_positive_int(entries, "entries")
    steps = _steps(relation, entries)
    if relation is Relation.SYMMETRIC_DISTANCE:
        return LibraryBudget(epsilon, delta, steps)
    eps_lib = epsilon / steps
    if delta == 0.0:
        return LibraryBudget(eps_lib, delta, 1)
    total = 0.0  # Σ_{i<g} e^{iε'}, summed in this order (g = 2: exactly 1 + e^{ε'})
    for i in range(steps):
        total += math.exp(i * eps_lib)
    return LibraryBudget(eps_lib, delta / total, 1)
