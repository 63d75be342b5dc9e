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


@pytest.mark.parametrize(("batched", "timed"), [(False, 20), (True, 300)])
def test_a_batched_target_is_timed_on_the_runs_chunk(batched, timed):
    """A run that calls the batched form pays per call (a Spark job, a GROUP BY query): the
    rate is timed on the run's chunk (a Tumult sum timed at 20 datasets predicted 4 min 29 s
    for a run of 33 s); a run that calls one dataset at a time on 20 calls."""
    import dataclasses

    import numpy as np

    from audit.model.implementation import CallableImplementation, Claim
    from audit.pipeline.config import ImplementationConfig, config_from_dict
    from audit.pipeline.implementation import ImplementationSubject

    sizes = []

    def batch(datasets, rng):
        sizes.append(len(datasets))
        return rng.laplace(0.0, 2.0, size=len(datasets))

    impl = CallableImplementation(lambda d, rng: batch(d[None], rng)[0], Claim(1.0), "b",
                                  batch_func=batch)
    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1},
           "pair": {"z": [[-1.0], [0.0]], "z_prime": [[1.0], [0.0]]},
           "missingness": {"kind": "mcar-iid", "rate": 0.0}, "audit": {"trials": 1000}}
    cfg = config_from_dict(doc)
    cfg = dataclasses.replace(cfg, implementation=ImplementationConfig(
        target="test:b", epsilon=1.0, delta=0.0, params={}))
    subject = ImplementationSubject.from_config(cfg, impl, chunk=300, batch=batched)
    sizes.clear()
    assert subject.rate() > 0
    # the datasets timed, and how many calls they took: one per side batched
    assert sum(sizes) == 2 * timed and len(sizes) == (2 if batched else 2 * timed)
    assert np.isfinite(subject.rate(10))
