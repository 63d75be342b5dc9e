"""A test-only design, registered through the ``audit.designs`` entry-point group by
``tests/pipeline/test_parts.py`` (a temporary distribution), never by this project.

``[split] parts = K`` spends the main run as K runs of ``trials // K`` calls (or draws) each
on independent streams and adds their counts: the counts of i.i.d. draws, so the bound of the
region chosen on the pilot is as valid as the plain run's. It refuses the sequential mode (its
runs are not one chunk stream a monitor can watch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit.pipeline.subject import SampleCounts


@dataclass(frozen=True)
class SplitMain:
    table: ClassVar[str] = "split"
    parts: int = 2

    @classmethod
    def from_table(cls, table: dict) -> SplitMain:
        unknown = sorted(set(table) - {"parts"})
        if unknown:
            raise ValueError(f"unknown key split.{unknown[0]} (allowed: parts)")
        parts = table.get("parts", 2)
        if isinstance(parts, bool) or not isinstance(parts, int) or not 2 <= parts <= 16:
            raise ValueError(f"split.parts must be an integer in [2, 16], got "
                             f"split.parts={parts!r}")
        return cls(parts)

    def to_dict(self) -> dict:
        return {"parts": self.parts}

    def supports(self, parts) -> str | None:
        if parts.config.audit.mode.value == "sequential":
            return "[split] runs a fixed main run: it needs audit.mode='fixed'"
        return None

    def wrap(self, subject):
        return SplitSubject(subject, self.parts)


class SplitSubject:
    """``inner`` with its main run split into ``parts`` runs; everything else delegated."""

    def __init__(self, inner, parts: int) -> None:
        self._inner, self._parts = inner, parts

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def with_pilot(self, fitted):
        return SplitSubject(self._inner.with_pilot(fitted), self._parts)

    def count(self, statistic, trials, seed, *, progress=False, label="main run",
              checkpoint=None, monitor=None):
        if label != "main run":
            return self._inner.count(statistic, trials, seed, progress=progress, label=label,
                                     checkpoint=checkpoint, monitor=monitor)
        keys = np.random.SeedSequence([int(seed), 0x5B117]).generate_state(self._parts)
        each = trials // self._parts
        total_p = total_q = None
        done = 0
        for i, key in enumerate(keys):
            n = each if i < self._parts - 1 else trials - each * (self._parts - 1)
            c = self._inner.count(statistic, n, int(key) >> 1, progress=progress,
                                  label=f"{label} {i + 1}/{self._parts}")
            total_p = c.counts_p if total_p is None else total_p + c.counts_p
            total_q = c.counts_q if total_q is None else total_q + c.counts_q
            done += c.trials
        return SampleCounts(total_p, total_q, done)
