"""A test-only design that acts at one of the runner's points, registered through the
``audit.designs`` entry-point group by ``tests/pipeline/test_designs.py`` (a temporary
distribution), never by this project.

``[first_chunk] chunks = K`` watches the main run of a sequential audit with the sequential
design's own test but stops it after K chunks: a test that is valid at any stopping time
stays valid when stopped early, so the bound is the sequential bound at K chunks. It
subclasses :class:`audit.pipeline.designs.SequentialDesign`, so it takes part as it is (its
``monitor`` is called by the runner) and refuses what the sequential design refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audit.pipeline.designs import SequentialDesign


@dataclass(frozen=True)
class FirstChunk(SequentialDesign):
    table: ClassVar[str] = "first_chunk"
    chunks: int = 1

    @classmethod
    def from_table(cls, table: dict) -> FirstChunk:
        unknown = sorted(set(table) - {"chunks"})
        if unknown:
            raise ValueError(f"unknown key first_chunk.{unknown[0]} (allowed: chunks)")
        chunks = table.get("chunks", 1)
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
            raise ValueError(f"first_chunk.chunks must be an integer >= 1, got "
                             f"first_chunk.chunks={chunks!r}")
        return cls(chunks)

    def to_dict(self) -> dict:
        return {"chunks": self.chunks}

    def supports(self, parts) -> str | None:
        if parts.config.audit.mode.value != "fixed":
            return "[first_chunk] runs its own sequential test: it needs audit.mode='fixed'"
        return super().supports(parts)

    def monitor(self, subject, region, scored):
        return StopAfter(super().monitor(subject, region, scored), self.chunks)


class StopAfter:
    """``inner``, told to stop after ``chunks`` chunks (or when it stops itself)."""

    def __init__(self, inner, chunks: int) -> None:
        self.inner, self.left = inner, chunks

    def update(self, bins_p, bins_q) -> bool:
        self.left -= 1
        return self.inner.update(bins_p, bins_q) or self.left <= 0

    def bound(self, calls_per_side: int, budget: int):
        return self.inner.bound(calls_per_side, budget)
