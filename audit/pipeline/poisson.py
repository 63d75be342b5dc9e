"""A Poissonised main run: the numbers of calls per side drawn Poisson(trials), for the joint
bound at δ = 0 (docs/THEORY.md §8.1b).

When the region choice picks the joint rule (:func:`audit.estimation.policy.bound_rules`,
before the main run), the main run draws N_P ~ Poisson(``trials``) outputs of A_D(z) and
N_Q ~ Poisson(``trials``) of A_D(z'), independent of each other and of every output. Then the
counts of any region S fixed before the run are independent Poisson(trials·P(S)) and
Poisson(trials·Q(S)), and the count of the numerator side given the region's total is
Binomial(total, P(S)/(P(S) + Q(S))): one Clopper–Pearson bound at α bounds ε
(:func:`audit.estimation.binomial.eps_joint_from_counts`). ``trials`` stays the mean number of
calls per side; the result's witness records N_P and N_Q (``n_p``, ``n_q``).

How the calls are made, for any subject (no engine changes): both sides run min(N_P, N_Q)
calls on the main run's stream, exactly as a two-interval main run of that many calls would,
and the larger side |N_P − N_Q| more on a stream of its own, one-sided where the subject can
(``count_side``: an implementation's one-sided :class:`audit.simulation.callables.CallableRun`)
and else a two-sided run of which the other side is discarded (the model's kernels: about
√(2·trials) draws wasted, 1.4·10⁻⁴ of a 10⁸-draw run).

Randomness: N_P, N_Q and the top-up run's key come from :class:`numpy.random.SeedSequence`
of ``seed``, the runner's fourth stream of the audit's seed (``SeedSequence(audit.seed)
.spawn(4)[3]``; the first three, the pilots and the main run, are those of a two-interval
audit), so the same seed gives the same numbers of calls and the same counts for any
number of workers.
"""

from __future__ import annotations

import numpy as np

from audit._validate import check_positive_int
from audit.pipeline.subject import SampleCounts, Subject
from audit.statistics import Statistic

__all__ = ["poisson_calls", "poissonisable", "count_poissonised"]


def _children(seed: int) -> tuple[np.random.Generator, int]:
    """The generator of the numbers of calls and the 63-bit key of the top-up run."""
    calls, extra = np.random.SeedSequence(int(seed)).spawn(2)
    key = int(extra.generate_state(1, np.uint64)[0] >> np.uint64(1))
    return np.random.Generator(np.random.PCG64(calls)), key


def poisson_calls(trials: int, seed: int) -> tuple[int, int]:
    """(N_P, N_Q): independent Poisson(``trials``) numbers of calls of each side, from
    ``seed`` (an integer ≥ 0).

    Raises
    ------
    ValueError
        If ``trials`` is not a positive integer or ``seed`` not an integer ≥ 0.

    Examples
    --------
    >>> poisson_calls(10_000, 1) == poisson_calls(10_000, 1)
    True
    """
    trials = check_positive_int(trials, "trials")
    check_positive_int(seed, "seed", minimum=0)
    n_p, n_q = _children(seed)[0].poisson(trials, size=2)
    return int(n_p), int(n_q)


def poissonisable(subject: Subject) -> bool:
    """Whether ``subject`` can count a Poissonised main run: its ``count(statistic, n, seed)``
    returns n i.i.d. draws of each side for every n (:attr:`Subject.poissonisable`; a subject
    that cannot keeps the two intervals)."""
    return bool(subject.poissonisable)


def count_poissonised(subject: Subject, statistic: Statistic, trials: int, seed_main: int,
                      seed: int, *, progress: bool = False,
                      checkpoint: str | None = None) -> SampleCounts:
    """Counts of N_P calls on z and N_Q on z' (:func:`poisson_calls` of ``trials`` and
    ``seed``): min(N_P, N_Q) of each side on ``seed_main``, the larger side's rest on a
    stream of its own (module docstring). ``SampleCounts.trials`` is the mean, ``trials``;
    the counts' sums are N_P and N_Q.

    Raises
    ------
    ValueError
        As :func:`poisson_calls`; a subject's own errors propagate.
    """
    n_p, n_q = poisson_calls(trials, seed)
    common = min(n_p, n_q)
    counts = [np.zeros(statistic.n_bins, dtype=np.int64) for _ in range(2)]
    if common:
        both = subject.count(statistic, common, seed_main, progress=progress,
                             checkpoint=checkpoint)
        counts = [np.asarray(both.counts_p, dtype=np.int64),
                  np.asarray(both.counts_q, dtype=np.int64)]
    extra, side = abs(n_p - n_q), int(n_q > n_p)
    if extra:
        key = _children(seed)[1]
        if hasattr(subject, "count_side"):
            more = subject.count_side(statistic, extra, key, side, progress=progress,
                                      label="main run (Poisson top-up)")
        else:  # a two-sided run, the other side discarded
            run = subject.count(statistic, extra, key, progress=progress,
                                label="main run (Poisson top-up)")
            more = run.counts_q if side else run.counts_p
        counts[side] = counts[side] + np.asarray(more, dtype=np.int64)
    return SampleCounts(counts[0], counts[1], int(trials))
