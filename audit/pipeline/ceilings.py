"""What an audit's lower bound is compared with, and what it means when it exceeds one.

A subject states its ceilings before any sampling (:class:`Ceiling`: the exact ε of the pair,
the applicable theorem, the §7 bound; or an implementation's claim and its amplified claim).
After the run, :func:`violations` lists every ceiling the bound exceeds, and every claim a
sequential test refuted, as :class:`Violation` values whose :meth:`Violation.describe` is the
line the command line prints. For a correct implementation of a valid theory the list is
empty with probability ≥ the stated confidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from audit.enums import CeilingKind

if TYPE_CHECKING:  # annotations only (the model's batch check loads scipy)
    from audit.model.batch_check import BatchCheck

__all__ = ["Ceiling", "Violation", "violations", "CeilingKind", "Comparison", "ClaimReport"]

#: The JSON key each ceiling kind is reported under (an implementation's amplified claim
#: stands where a model audit's theorem does: both are "the theory" of the audit).
JSON_KEYS = {CeilingKind.PAIR: "eps_pair", CeilingKind.THEORY: "eps_theory",
             CeilingKind.FDP: "eps_fdp", CeilingKind.CLAIM: "eps_claim",
             CeilingKind.AMPLIFIED_CLAIM: "eps_theory"}


@dataclass(frozen=True)
class Ceiling:
    """An upper bound on the audited ε that the subject states before sampling.

    ``value`` is None where the ceiling does not exist for this setting (no exact ε for a
    vector output, no theorem for MNAR, a theorem whose δ exceeds the audited δ): it is shown
    as n/a and never violated. ``error`` is the ceiling's stated numerical error (the pair
    integrator's), added before comparing. ``label`` says where it comes from.
    """

    kind: CeilingKind
    value: float | None
    label: str = ""
    error: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CeilingKind.parse(self.kind, "kind"))

    @property
    def key(self) -> str:
        """The result's JSON key for this ceiling."""
        return JSON_KEYS[self.kind]

    def exceeded_by(self, eps_lower: float) -> bool:
        return self.value is not None and eps_lower > self.value + self.error

    def to_dict(self) -> dict:
        return {"kind": self.kind.value, "value": self.value, "label": self.label,
                "error": self.error}


@dataclass(frozen=True)
class Comparison:
    """A value printed beside the ceilings that is NOT a bound: the per-release accounting of
    k releases with shared masks (the per-release amplified guarantee composed as if the masks
    were fresh), which an ε_lower above it shows to understate the release's ε. JSON: the
    result's ``comparisons`` (``eps_fresh_composed``, ``rule``, ``note``)."""

    value: float
    rule: str
    note: str = "not a bound for shared masks"

    def to_dict(self) -> dict:
        return {"eps_fresh_composed": self.value, "rule": self.rule, "note": self.note}

    def exceeded_by(self, eps_lower: float) -> bool:
        """Whether ``eps_lower`` refutes the per-release accounting (a finding, not a
        violation)."""
        return eps_lower > self.value


@dataclass(frozen=True)
class ClaimReport:
    """An implementation's claim as the result reports it: (ε, δ) per substituted record,
    where it comes from (``note``) and the implementation's name; ``batch_check``, where the
    implementation makes several releases in one call, the check that let the audit count
    them as calls, or refused it (the typed record :class:`audit.model.batch_check.
    BatchCheck`). JSON: the result's ``claim`` (``batch_check`` only where one ran, as
    :meth:`~audit.model.batch_check.BatchCheck.to_dict` writes it)."""

    epsilon: float
    delta: float
    note: str
    implementation: str
    batch_check: BatchCheck | None = None

    def to_dict(self) -> dict:
        doc = {"epsilon": self.epsilon, "delta": self.delta, "note": self.note,
               "implementation": self.implementation}
        if self.batch_check is not None:
            doc["batch_check"] = self.batch_check.to_dict()
        return doc


@dataclass(frozen=True)
class Violation:
    """A ceiling that the audit's lower bound exceeds (``sequential`` = False), or a claim
    that a sequential test refuted (``sequential`` = True, after ``calls`` calls per side)."""

    kind: CeilingKind
    eps_lower: float
    ceiling: float
    label: str = ""
    sequential: bool = False
    calls: int = 0
    #: the audit's confidence (its policy's unless it sets one; set by :func:`violations`)
    confidence: float | None = None

    def describe(self) -> str:
        """The one line printed after ``VIOLATION:`` (and stored in the result's JSON)."""
        if self.sequential:
            what = ("the claim" if self.kind is CeilingKind.CLAIM
                    else "the amplified claim (eps_theory)")
            return (f"{what} epsilon={self.ceiling:.6g} refuted by the sequential test after "
                    f"{self.calls:,} calls per side (eps > {self.ceiling:.6g} at "
                    f"{self.confidence:.0%} confidence)")
        head = f"eps_lower={self.eps_lower:.6g} > "
        if self.kind is CeilingKind.CLAIM:
            return head + (f"claimed epsilon={self.ceiling:.6g}: the implementation's claim "
                           "is refuted")
        text = head + f"{JSON_KEYS[self.kind]}={self.ceiling:.6g}"
        if self.kind in (CeilingKind.THEORY, CeilingKind.AMPLIFIED_CLAIM):
            text += f" ({self.label})"
        return text


def violations(eps_lower: float, ceilings: tuple[Ceiling, ...], bound=None, *,
               confidence: float) -> tuple[Violation, ...]:
    """Every ceiling ``eps_lower`` exceeds, then every claim the sequential ``bound`` refuted
    (any :class:`audit.estimation.witness.Bound`: a sequential test refutes; None: none).
    """
    out = [Violation(c.kind, eps_lower, c.value, c.label, confidence=confidence)
           for c in ceilings if c.exceeded_by(eps_lower)]
    if bound is None:
        return tuple(out)
    claims = [c for kind in (CeilingKind.CLAIM, CeilingKind.AMPLIFIED_CLAIM)
              for c in ceilings if c.kind is kind]
    for c in claims:  # a bound whose own test refuted a claim (a sequential test)
        if c.value is not None and c.value > 0 and bound.refutes(c.value):
            out.append(Violation(c.kind, eps_lower, c.value, c.label, sequential=True,
                                 calls=bound.calls_per_side, confidence=confidence))
    return tuple(out)
