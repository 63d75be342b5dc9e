"""audit.pipeline.budget: expected durations from a measured rate, and their wording."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from audit.estimation.policy import PilotRule
from audit.pipeline.budget import expected_seconds, format_duration


@dataclass
class _Subject:
    trials: int
    pilot_trials: int | None
    jobs: int = 1
    per_second: float = 1000.0
    parallel: int = 1

    @property
    def config(self):
        return SimpleNamespace(audit=SimpleNamespace(trials=self.trials, jobs=self.jobs,
                                                     pilot_trials=self.pilot_trials))

    pilot_rule = PilotRule(divisor=5, lo=1000, hi=50_000, raw_cap=None,
                           counted_selection=False)

    def rate(self):
        return self.per_second

    def workers(self, jobs):
        return self.parallel


def test_expected_seconds_counts_both_sides_the_pilot_and_the_workers():
    # 2 × (10,000 main + 2,000 default pilot) calls at 1,000 calls/s
    assert expected_seconds(_Subject(10_000, None)) == (24.0, 1000.0)
    # an explicit pilot counts too: a huge pilot alone makes a run long
    assert expected_seconds(_Subject(1_000, 10**9))[0] == pytest.approx(2 * (1_000 + 10**9) / 1e3)
    # two workers halve it
    assert expected_seconds(_Subject(10_000, None, parallel=2))[0] == 12.0


@pytest.mark.parametrize("seconds, text", [(42, "42 s"), (200, "3 min 20 s"),
                                           (5 * 3600, "5.0 h"), (41 * 86400, "41 days")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text
