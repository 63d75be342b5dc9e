"""Mirror of audit.pipeline.poisson: the Poissonised main run of the joint bound.

Oracles: numpy's own Poisson generator on the documented stream, the subject's plain counts
(the common part of a Poissonised run is the two-interval main run of min(N_P, N_Q) calls),
and null releases (true ε = 0) audited through the whole runner: ε_lower > 0 happens no more
often than the Bin(audits, α) quantile at 1 − 1e-3 allows (the acceptance rule of
tests/attacks/test_validity.py), for a scalar, a vector and a discrete release.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.stats import binom

from audit.enums import BoundRule
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import ImplementationConfig, config_from_dict
from audit.pipeline.implementation import ImplementationSubject
from audit.pipeline.poisson import count_poissonised, poisson_calls, poissonisable
from audit.pipeline.runner import _streams, run_audit
from audit.policy import DEFAULT_POLICY
from audit.statistics import Statistic

ALPHA = 0.05


def _laplace(datasets, rng):
    return rng.laplace(0.0, 1.0, size=datasets.shape[0])


def _vector(datasets, rng):
    return rng.laplace(0.0, 1.0, size=(datasets.shape[0], 2))


def _bits(datasets, rng):
    return (rng.random((datasets.shape[0], 3)) < [0.5, 0.3, 0.1]).astype(np.float64)


def _shifted(datasets, rng):
    """ε = 1 on the pair below: the first entry (±1) plus Laplace noise of scale 2."""
    return np.clip(datasets[:, 0, 0], -1, 1) + rng.laplace(0.0, 2.0, size=datasets.shape[0])


def _impl(batch, delta: float = 0.0):
    return CallableImplementation(lambda d, rng: batch(d[None], rng)[0],
                                  Claim(1.0, delta, "test"), batch.__name__, batch_func=batch)


def _config(trials: int, seed: int, attack: str, delta: float = 0.0, mode: str = "fixed"):
    doc = {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "query": "sum", "d": 1},
           "pair": {"z": [[-1.0], [0.0]], "z_prime": [[1.0], [0.0]]},
           "missingness": {"kind": "mcar-iid", "rate": 0.0},
           "audit": {"trials": trials, "seed": seed, "attack": attack, "mode": mode}}
    cfg = config_from_dict(doc)
    return dataclasses.replace(cfg, implementation=ImplementationConfig(
        "python:test", 1.0, delta, chunk=max(trials // 4, 1)))


# ------------------------------------------------------------------------ the numbers of calls
def test_poisson_calls_are_numpys_poisson_draws_on_the_documented_stream():
    calls, _ = np.random.SeedSequence(77).spawn(2)
    want = np.random.Generator(np.random.PCG64(calls)).poisson(10_000, size=2)
    assert poisson_calls(10_000, 77) == tuple(int(v) for v in want)
    assert poisson_calls(10_000, 77) == poisson_calls(10_000, 77)
    assert poisson_calls(10_000, 77) != poisson_calls(10_000, 78)


def test_trials_is_the_mean_number_of_calls_per_side():
    # 2,000 seeds: the mean of N_P and of N_Q within 6 standard errors (sqrt(λ/2000)) of λ
    draws = np.array([poisson_calls(5_000, s) for s in range(2_000)])
    assert np.all(np.abs(draws.mean(axis=0) - 5_000) < 6 * np.sqrt(5_000 / 2_000))
    assert np.all(np.abs(draws.var(axis=0) / 5_000 - 1) < 0.2)  # Poisson: variance = mean
    assert abs(np.corrcoef(draws.T)[0, 1]) < 0.1  # independent sides


@pytest.mark.parametrize(("call", "message"), [
    (lambda: poisson_calls(0, 1), "trials must be an integer >= 1, got trials=0"),
    (lambda: poisson_calls(10, -1), "seed must be an integer >= 0, got seed=-1"),
    (lambda: poisson_calls(10.5, 1), "trials must be an integer >= 1, got trials=10.5"),
])
def test_bad_parameters_are_refused_naming_them(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------------ the counts
def _subject(batch=_laplace, trials: int = 2_000):
    cfg = _config(trials, 3, "density-ratio")
    return ImplementationSubject.from_config(cfg, _impl(batch), chunk=500)


class _TwoSidedOnly:
    """A subject without ``count_side`` (the model's case): its top-up runs both sides; it
    says it is not poissonisable."""

    poissonisable = False

    def __init__(self, inner) -> None:
        self._inner = inner

    def count(self, *args, **kwargs):
        return self._inner.count(*args, **kwargs)


def test_a_poissonised_run_counts_n_p_and_n_q_calls_and_extends_the_plain_run():
    subject = _subject()
    statistic = Statistic.output(np.linspace(-5.0, 5.0, 21))
    n_p, n_q = poisson_calls(2_000, 11)
    counts = count_poissonised(subject, statistic, 2_000, 5, 11)
    assert (counts.counts_p.sum(), counts.counts_q.sum(), counts.trials) == (n_p, n_q, 2_000)
    common = subject.count(statistic, min(n_p, n_q), 5)
    small, large = (0, 1) if n_p < n_q else (1, 0)
    sides = (counts.counts_p, counts.counts_q)
    plain = (common.counts_p, common.counts_q)
    np.testing.assert_array_equal(sides[small], plain[small])
    assert np.all(sides[large] >= plain[large])
    # without a one-sided run, the same counts (the top-up's other side is discarded)
    again = count_poissonised(_TwoSidedOnly(subject), statistic, 2_000, 5, 11)
    np.testing.assert_array_equal(again.counts_p, counts.counts_p)
    np.testing.assert_array_equal(again.counts_q, counts.counts_q)


def test_which_subjects_are_poissonised():
    subject = _subject()
    assert poissonisable(subject) and not poissonisable(_TwoSidedOnly(subject))


# ------------------------------------------------------------------------ through the runner
def test_an_audit_at_delta_zero_is_bounded_jointly_on_poisson_calls_reproducibly():
    cfg = _config(4_000, 9, "density-ratio")
    impl = _impl(_shifted)
    res = run_audit(cfg, implementation=impl)
    w = res.witness
    assert w["rule"] == "joint" and res.trials == 4_000
    assert (w["n_p"], w["n_q"]) == poisson_calls(4_000, _streams(9)[3])
    assert 0.0 < res.eps_lower <= 1.0 + 0.2  # ε = 1 (the ceiling check is the slow tests')
    again = run_audit(cfg, implementation=impl)
    assert again.eps_lower == res.eps_lower and again.witness == w


def test_the_two_intervals_stay_where_the_joint_bound_is_not_offered():
    impl = _impl(_shifted)
    # δ > 0 and sequential mode: the two intervals on exactly ``trials`` calls per side
    for cfg, claimed in ((_config(4_000, 9, "density-ratio", delta=1e-6),
                          _impl(_shifted, delta=1e-6)),
                         (_config(4_000, 9, "density-ratio", mode="sequential"), impl)):
        w = run_audit(cfg, implementation=claimed).witness
        assert w.get("rule", "two-intervals") == "two-intervals"
        assert w.get("n_p", 4_000) == w.get("n_q", 4_000) == 4_000
    # the policy's switch off: the audit the runner gave before the joint bound
    off = dataclasses.replace(DEFAULT_POLICY, black_box_joint_bound=False)
    res = run_audit(_config(4_000, 9, "density-ratio"), implementation=impl, policy=off)
    assert res.witness["rule"] == "two-intervals"
    assert res.witness["n_p"] == res.witness["n_q"] == 4_000


# ------------------------------------------------------------------------ null validity
NULLS = [("scalar", _laplace, "density-ratio"), ("vector", _vector, "additive"),
         ("discrete", _bits, "categorical")]


def _null_exceedances(batch, attack: str, audits: int, trials: int) -> int:
    impl = _impl(batch)
    over, joint = 0, 0
    for seed in range(audits):
        res = run_audit(_config(trials, 50_000 + seed, attack), implementation=impl)
        over += res.eps_lower > 0.0
        joint += res.witness["rule"] == BoundRule.JOINT.value
    assert joint == audits  # every null audit takes the joint rule: the test tests it
    return over


@pytest.mark.statistical
@pytest.mark.parametrize(("kind", "batch", "attack"), NULLS, ids=[n[0] for n in NULLS])
def test_null_audits_by_the_joint_rule_exceed_zero_at_most_at_rate_alpha(kind, batch, attack):
    audits = 30  # the reduced twin of the slow test below
    assert _null_exceedances(batch, attack, audits, 1_000) <= binom.ppf(1 - 1e-3, audits,
                                                                         ALPHA)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize(("kind", "batch", "attack"), NULLS, ids=[n[0] for n in NULLS])
def test_null_audits_by_the_joint_rule_exceed_zero_at_most_at_rate_alpha_slow(kind, batch,
                                                                             attack):
    audits = 300  # false failure ≤ 1e-3 each: Bin(300, 0.05) exceeds 25 w.p. < 1e-3
    over = _null_exceedances(batch, attack, audits, 2_000)
    print(f"{kind}: {over} of {audits} null audits above 0")
    assert over <= binom.ppf(1 - 1e-3, audits, ALPHA)
