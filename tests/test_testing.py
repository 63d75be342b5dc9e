"""assert_private: passes on an implementation that keeps its claim, fails (with the evidence)
on one that does not; the same example as the module docstring and the README."""

from __future__ import annotations

import numpy as np
import pytest

from audit.testing import assert_private

MISSING = {"kind": "mcar-iid", "rate": 0.3}


def noisy_sum(data, rng):
    """ε = 1 for the sum of d = 3 features in [-1, 1] (sensitivity 2d = 6, scale 6)."""
    x = np.clip(np.nan_to_num(data), -1, 1)
    return x.sum() + rng.laplace(scale=2 * data.shape[1] / 1.0)


def broken_sum(data, rng):
    """Claims ε = 1 but adds the noise of ε = 4."""
    x = np.clip(np.nan_to_num(data), -1, 1)
    return x.sum() + rng.laplace(scale=2 * data.shape[1] / 4.0)


def test_a_mechanism_that_keeps_its_claim_passes():
    result = assert_private(noisy_sum, query="sum", d=3, n=20, epsilon=1.0,
                            missingness=MISSING, trials=20_000)
    assert 0.0 < result.eps_lower <= 1.0
    assert result.ceiling_violations() == []


@pytest.mark.parametrize("mode", ["fixed", "sequential"])
def test_a_broken_mechanism_fails_with_the_evidence(mode):
    with pytest.raises(AssertionError) as info:
        assert_private(broken_sum, query="sum", d=3, n=20, epsilon=1.0, missingness=MISSING,
                       trials=20_000, mode=mode)
    msg = str(info.value)
    assert msg.startswith("broken_sum is not (1, 0)-DP")
    assert "eps_lower = " in msg and "claimed epsilon = 1" in msg and "region {score" in msg


def test_the_reference_implementation_passes_on_a_given_pair():
    from audit.model.implementation import Claim, ReferenceImplementation
    from audit.model.queries import make_query
    from audit.model.release import Release

    q = make_query("sum")
    ref = ReferenceImplementation(q, Release.laplace(6.0, 1.0), Claim(1.0))
    z = np.zeros((20, 3))
    zp = z.copy()
    z[0], zp[0] = 1.0, -1.0
    assert_private(ref, pair=(z, zp), epsilon=1.0, missingness=MISSING, trials=20_000,
                   amplified=True)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="d must be given"):
        assert_private(noisy_sum, query="sum", epsilon=1.0)
    with pytest.raises(ValueError, match="non-numeric"):
        assert_private(lambda data, rng: "x", query="sum", d=2, epsilon=1.0)


def test_bad_chunk_is_refused_with_its_name():
    import pytest

    from audit.testing import assert_private

    for chunk in (0, 10**7):
        with pytest.raises(ValueError, match="chunk must be"):
            assert_private(lambda data, rng: 0.0, query="sum", d=1, epsilon=1.0, chunk=chunk)


def test_an_adapters_own_claim_is_not_silently_replaced():
    from audit.model.implementation import Claim, ReferenceImplementation
    from audit.model.queries import make_query
    from audit.model.release import Release

    ref = ReferenceImplementation(make_query("sum"), Release.laplace(6.0, 1.0), Claim(1.0))
    with pytest.raises(ValueError, match=r"the implementation's own claim \(1, 0\)"):
        assert_private(ref, query="sum", d=3, epsilon=5.0, trials=1000)


def test_an_endless_budget_is_refused_before_the_run_with_its_duration():
    with pytest.raises(ValueError, match=r"trials 1e\+15 .* would take about .* max_hours 24"):
        assert_private(noisy_sum, query="sum", d=3, epsilon=1.0, trials=10**15)


def test_a_callable_needs_its_claim():
    with pytest.raises(ValueError, match="epsilon must be given"):
        assert_private(noisy_sum, query="sum", d=3)


# ---------------------------------------------------------------- the API checks like the CLI
def _never_called(data, rng):
    raise RuntimeError("called: the check came after the first call")


_PAIR = ([[1.0], [0.0]], [[-1.0], [0.0]])


@pytest.mark.parametrize(("param", "value", "needle"), [
    ("mechanism", 3, r"mechanism must be callable"),
    ("pair", "z", r"pair must be \(z, z_prime\)"),
    ("pair", ([[1.0]],), r"pair must be \(z, z_prime\)"),
    ("pair", ([1.0, 2.0], [1.0, 3.0]), r"pair must be \(z, z_prime\)"),
    ("pair", ([[1.0], [0.0]], [[1.0], [0.0]]), r"pair.z and pair.z_prime must differ"),
    ("query", 3, r"scenario.query must be a string"),
    ("query", "nope", r"query must be one of"),
    ("epsilon", "1", r"epsilon must be a real number"),
    ("epsilon", -1.0, r"epsilon must be in"),
    ("delta", "0", r"delta must be a real number"),
    ("delta", 1.5, r"delta must be in"),
    ("missingness", [0.3], r"missingness must be a dict .* got missingness=\[0.3\]"),
    ("missingness", 3, r"missingness must be a dict"),
    ("missingness", {"rate": 0.3}, r"missing the key missingness.kind"),
    ("missingness", {"kind": "mcar-iid", "rate": "a"}, r"rate must be a real number"),
    ("d", "3", r"scenario.d must be an integer"),
    ("d", 0, r"scenario.d must be an integer"),
    ("n", 2.5, r"scenario.n must be an integer"),
    ("bound", "1", r"scenario.bound must be a real number"),
    ("bound", -1.0, r"scenario.bound must be in"),
    ("trials", "100", r"audit.trials must be an integer"),
    ("trials", True, r"audit.trials must be an integer"),
    ("confidence", "0.9", r"audit.confidence must be a real number"),
    ("confidence", 1.5, r"audit.confidence must be in"),
    ("mode", "fast", r"mode must be one of"),
    ("seed", -1, r"audit.seed must be an integer"),
    ("jobs", "2", r"audit.jobs must be an integer"),
    ("attack", 3, r"audit.attack must be a string"),
    ("attack", "oracle", r"attack must be one of"),
    ("chunk", 0, r"chunk must be an integer"),
    ("amplified", "no", r"amplified must be a bool, got amplified='no'"),
    ("amplified", 1, r"amplified must be a bool"),
    ("max_hours", "1", r"max_hours must be a real number"),
    ("max_hours", 0, r"max_hours must be in"),
    ("policy", 3, r"policy must be an audit.policy.AuditPolicy"),
])
def test_each_wrong_argument_is_refused_naming_it_before_any_call(param, value, needle):
    kwargs = {"mechanism": _never_called, "pair": _PAIR, "epsilon": 1.0, "trials": 200}
    if param in ("query", "d", "n", "bound"):  # read by the search, without a pair
        kwargs.update(pair=None, query="sum", d=1, n=2)
    kwargs[param] = value
    kind = TypeError if param == "policy" else ValueError
    with pytest.raises(kind, match=needle) as err:
        assert_private(**kwargs)
    assert "called" not in str(err.value)  # (the mechanism was never called)
    assert param.split("_")[0] in str(err.value)  # the parameter is named
