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

from audit.enums import CeilingKind
from audit.records import JSON_KEYS, Ceiling, ClaimReport, Comparison

__all__ = ["Ceiling", "Violation", "violations", "CeilingKind", "Comparison", "ClaimReport"]

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
