"""The independence check of batched forms that make several releases in one call
(``audit.model.batch_check``), on plain-numpy fakes (no library needed).

Statistical tests: fixed seeds. A fake whose batched releases are independent copies of the
unbatched law passes each of the three tests with probability ≥ 1 − α/3 (α = 10⁻⁶): a false
failure has probability ≤ 10⁻⁶. The failing fakes are rejected with p-values below 10⁻¹⁰
(shared noise), not near the threshold.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.model import batch_check
from audit.model.batch_check import BatchRefused, check_batch, checked
from audit.model.implementation import CallableImplementation, Claim
from audit.policy import BatchCheckRule

pytestmark = pytest.mark.statistical

DATA = np.array([[1.0], [0.0], [np.nan], [0.0]])


def one(data, rng):
    return float(np.nansum(data)) + rng.laplace(0.0, 2.0)


def independent(datasets, rng):
    return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 2.0, len(datasets))


def shared(datasets, rng):  # one noise draw for the whole call
    return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 2.0)


def rescaled(datasets, rng):  # independent, but three times the noise of an unbatched call
    return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 6.0, len(datasets))


def _impl(batch, name=None, *, in_one_call=True):
    return CallableImplementation(one, Claim(1.0), name or batch.__name__, batch_func=batch,
                                  batch_in_one_call=in_one_call)


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    """An empty cache for each test, in this process and on disk."""
    from audit.cache import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    batch_check.clear_cache()
    yield
    batch_check.clear_cache()


def test_independent_batches_pass():
    result = check_batch(_impl(independent), DATA, rng=1)
    assert result.passed, result.describe()
    assert result.releases == 400 and result.unbatched == 400
    assert set(result.p_values) == set(batch_check.TESTS)


def test_shared_noise_fails_correlation_and_permutation():
    result = check_batch(_impl(shared), DATA, rng=1)
    assert not result.passed
    assert {"correlation", "permutation"} <= set(result.failed)
    assert result.p_values["correlation"] < 1e-10
    assert result.p_values["permutation"] < 1e-10


def test_half_shared_noise_fails():
    def half(datasets, rng):  # independent noise plus a per-call shared part of equal scale
        return independent(datasets, rng) + rng.laplace(0.0, 2.0)

    result = check_batch(_impl(half), DATA, rng=1)
    assert "permutation" in result.failed, result.describe()


def test_wrong_law_fails_the_two_sample_test():
    result = check_batch(_impl(rescaled), DATA, rng=1)
    assert result.failed == ("law",), result.describe()


def test_nan_releases_fail():
    def nan_batch(datasets, rng):
        return np.full(len(datasets), np.nan)

    result = check_batch(_impl(nan_batch), DATA)
    assert not result.nan_free and not result.passed
    assert "was NaN" in result.describe()


def test_infinite_releases_are_ordered_values():
    def with_inf(data, rng):
        return np.inf if rng.random() < 0.1 else one(data, rng)

    def batch(datasets, rng):
        out = independent(datasets, rng)
        return np.where(rng.random(len(datasets)) < 0.1, np.inf, out)

    impl = CallableImplementation(with_inf, Claim(1.0), "inf", batch_func=batch,
                                  batch_in_one_call=True)
    result = check_batch(impl, DATA, rng=3)
    assert result.nan_free and result.passed, result.describe()


def test_constant_releases_pass():
    impl = CallableImplementation(lambda d, rng: 3.0, Claim(1.0), "constant",
                                  batch_func=lambda ds, rng: np.full(len(ds), 3.0),
                                  batch_in_one_call=True)
    assert check_batch(impl, DATA).passed


def test_vector_releases_are_summed():
    def vec(data, rng):
        return np.array([one(data, rng), 0.0])

    def vec_shared(datasets, rng):
        return np.stack([shared(datasets, rng), np.zeros(len(datasets))], axis=1)

    impl = CallableImplementation(vec, Claim(1.0), "vec", batch_func=vec_shared,
                                  batch_in_one_call=True)
    assert not check_batch(impl, DATA, rng=2).passed


def test_checked_refuses_a_failing_batch_once_per_target():
    calls = []

    def counted(datasets, rng):
        calls.append(len(datasets))
        return shared(datasets, rng)

    impl = _impl(counted)
    with pytest.warns(BatchRefused, match="refused"):
        out, result = checked(impl, DATA)
    assert out.batch is None and not out.batch_in_one_call and not result.passed
    assert out.claim == impl.claim and out.name == impl.name
    made = len(calls)
    assert made == BatchCheckRule().calls
    with pytest.warns(BatchRefused):
        checked(impl, DATA)  # cached: no new call
    assert len(calls) == made


def test_checked_keeps_a_passing_batch_and_skips_undeclared_ones():
    impl = _impl(independent)
    out, result = checked(impl, DATA)
    assert out is impl and result.passed
    plain = _impl(shared, "plain", in_one_call=False)  # not stated: not checked
    assert checked(plain, DATA) == (plain, None)


def test_an_implementation_states_its_own_check_sizes():
    """Where unbatched calls are dear (Tumult: Spark jobs) the implementation's
    ``batch_check_rule`` sets the sizes; a rule handed to ``checked`` still wins."""
    rule = BatchCheckRule(calls=4, per_call=6, unbatched=10)

    class Dear:
        claim, name, batch_in_one_call, batch_check_rule = Claim(1.0), "dear", True, rule

        def __init__(self):
            self.batched, self.unbatched = [], 0

        def batch(self, datasets, rng):
            self.batched.append(len(datasets))
            return independent(datasets, rng)

        def __call__(self, data, rng):
            self.unbatched += 1
            return one(data, rng)

    impl = Dear()
    out, result = checked(impl, DATA)
    assert out is impl and result.passed
    assert impl.batched == [6] * 4 and impl.unbatched == 10
    assert (result.releases, result.unbatched) == (24, 10)
    checked(impl, DATA, rule=BatchCheckRule(calls=2, per_call=3, unbatched=5))  # not cached
    assert impl.batched[4:] == [3, 3] and impl.unbatched == 15


def test_check_needs_a_batched_form():
    impl = CallableImplementation(one, Claim(1.0), "no-batch")
    with pytest.raises(ValueError, match="no batched form"):
        check_batch(impl, DATA)


def test_rule_is_validated():
    with pytest.raises(ValueError, match="alpha"):
        BatchCheckRule(alpha=0.0)
    with pytest.raises(ValueError, match="per_call"):
        BatchCheckRule(per_call=1)


def _sum_audit(trials: int) -> dict:
    """An implementation audit of a sum on a fixed pair (the fakes above are the sum)."""
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "n": 4, "d": 1,
                         "bound": 1.0, "query": "sum"},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "pair": {"z": [[1.0], [0.0], [0.0], [0.0]],
                     "z_prime": [[-1.0], [0.0], [0.0], [0.0]]},
            "audit": {"trials": trials, "seed": 0}}


def test_audit_refuses_the_batched_form_of_a_failing_target():
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.implementation import ImplementationSubject

    doc = _sum_audit(200)
    cfg = config_from_dict(doc, name="shared")
    with pytest.warns(BatchRefused):
        subject = ImplementationSubject.from_config(cfg, _impl(shared))
    assert subject.plan.batch_check is not None and not subject.plan.batch_check.passed
    assert subject.plan.implementation.batch is None
    good = ImplementationSubject.from_config(cfg, _impl(independent))
    assert good.plan.batch_check.passed and good.plan.implementation.batch is not None
    off = ImplementationSubject.from_config(cfg, _impl(shared, "off"), batch=False)
    assert off.plan.batch_check is None  # batching off: nothing to check
    # the result reports the check (JSON: claim.batch_check; a line of the CLI's summary)
    assert subject.claim.to_dict()["batch_check"]["failed"] == ["correlation", "permutation"]
    assert good.claim.to_dict()["batch_check"]["passed"] is True
    assert "batch_check" not in off.claim.to_dict()


def test_the_cli_summary_says_whether_the_batched_form_was_used():
    from audit.cli.run import format_result
    from audit.pipeline.config import config_from_dict
    from audit.pipeline.runner import run_audit

    doc = _sum_audit(400)
    good = format_result(run_audit(config_from_dict(doc, name="good"),
                                   implementation=_impl(independent)))
    assert "batched    releases of one call checked independent at alpha = 1e-06" in good
    with pytest.warns(BatchRefused):
        bad = run_audit(config_from_dict(doc, name="bad"), implementation=_impl(shared))
    assert "batched    refused (correlation, permutation): one call per dataset" in \
        format_result(bad)


def user_release(data, rng):
    return one(data, rng)


user_release.batch = shared
user_release.batch_in_one_call = True


def test_a_users_callable_states_it_by_attribute():
    from audit.adapters import make_implementation

    impl = make_implementation("tests.model.test_batch_check:user_release", epsilon=1.0)
    assert impl.batch_in_one_call and impl.batch is not None
    with pytest.warns(BatchRefused):
        out, _ = checked(impl, DATA)
    assert out.batch is None
    plain = make_implementation("tests.adapters.example_mechanisms:noisy_sum", epsilon=1.0,
                                params={"bound": 1.0, "scale": 6.0})
    assert not plain.batch_in_one_call
