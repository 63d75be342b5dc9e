"""``assert_private``: a privacy regression test for your own test suite.

Audit a mechanism you wrote (or a library call) as a black box on a neighbouring pair with
missing values, and fail the test when the audit refutes its (ε, δ) claim at the stated
confidence::

    import numpy as np
    from audit.testing import assert_private

    def noisy_sum(data, rng):                       # your mechanism: NaN = missing
        x = np.clip(np.nan_to_num(data), -1, 1)
        return x.sum() + rng.laplace(scale=2 * data.shape[1] / 1.0)

    def test_noisy_sum_keeps_its_claim():
        assert_private(noisy_sum, query="sum", d=3, n=20, epsilon=1.0,
                       missingness={"kind": "mcar-iid", "rate": 0.3}, trials=20_000)

A passing assertion is evidence, not proof: the audit found no violation with its budget.
A failing one is a proof at the stated confidence (the region and counts that refute the
claim are in the message), whatever the budget.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from audit._validate import check_bool, check_in_range
from audit.enums import AuditMode, CeilingKind
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.budget import check_duration
from audit.pipeline.config import check_chunk, config_from_dict
from audit.pipeline.implementation import ImplementationSubject
from audit.pipeline.results import AuditResult
from audit.pipeline.runner import run_audit
from audit.policy import DEFAULT_POLICY, AuditPolicy
from audit.records import traits_of

__all__ = ["assert_private"]


def _implementation(mechanism, epsilon: float, delta: float):
    if epsilon is None and not hasattr(mechanism, "claim"):
        raise ValueError("epsilon must be given: the claim of a mechanism without its own")
    if hasattr(mechanism, "claim") and callable(mechanism):
        claim = mechanism.claim
        if (epsilon, delta) != (claim.epsilon, claim.delta) and epsilon is not None:
            raise ValueError(f"epsilon and delta must be the implementation's own claim "
                             f"({claim.epsilon:g}, {claim.delta:g}) or left out, got "
                             f"epsilon={epsilon!r}, delta={delta!r}")
        return mechanism
    if not callable(mechanism):
        raise ValueError(f"mechanism must be callable as mechanism(data, rng), got "
                         f"mechanism={mechanism!r}")
    name = getattr(mechanism, "__name__", type(mechanism).__name__)
    traits = traits_of(mechanism)
    return CallableImplementation(mechanism, Claim(epsilon, delta, f"{name} (assert_private)"),
                                  name=name, batch_func=traits.batch,
                                  batch_in_one_call=traits.batch is not None
                                  and traits.batch_in_one_call)


def _config(impl, pair, query, miss: dict, audit: dict, *, d, n, bound, mode):
    """The audit config of :func:`assert_private` (checked as a TOML config would be): the
    pair (or the search's query and domain), the missingness and the audit settings; the
    implementation is handed to the subject directly."""
    scenario = {"mechanism": "laplace", "epsilon": impl.claim.epsilon, "bound": bound,
                "query": query or "sum", "n": n}
    doc = {"scenario": scenario, "missingness": miss, "audit": audit}
    if pair is not None:
        z, z_prime = (np.asarray(a, dtype=np.float64) for a in pair)
        doc["pair"] = {"z": z.tolist(), "z_prime": z_prime.tolist()}
        scenario.pop("n")
    elif d is None:
        raise ValueError("d must be given (features per record) when no pair is given")
    else:
        scenario["d"] = d
    cfg = config_from_dict(doc, name=traits_of(impl).name)
    return dataclasses.replace(
        cfg, audit=dataclasses.replace(cfg.audit, mode=AuditMode.parse(mode, "mode")))


def assert_private(mechanism, pair=None, query: str | None = None, *,
                   epsilon: float | None = None, delta: float = 0.0, missingness=None,
                   d: int | None = None, n: int = 20, bound: float = 1.0,
                   trials: int = 20_000, confidence: float | None = None,
                   mode: str = "fixed", seed: int = 0, jobs: int = 1,
                   attack: str | None = None, chunk: int = 1000, amplified: bool | None = None,
                   max_hours: float = 24.0, policy: AuditPolicy | None = None) -> AuditResult:
    """Assert that ``mechanism`` is (ε, δ)-DP on the audited pair under ``missingness``.

    Parameters
    ----------
    mechanism : callable or Implementation
        ``mechanism(data, rng)`` → scalar or vector, ``data`` an (n, d) float array with NaN
        for missing values, ``rng`` a numpy Generator (use it for all randomness). An
        ``audit.adapters`` implementation (with its own claim) is accepted too.
    pair : (z, z_prime), optional
        Two (n, d) datasets differing in one record (NaN = already missing). Default: the
        worst-case search of the project for ``query`` over [−bound, bound]^d.
    query : str, optional
        The project query the search uses (``"sum"``, ``"bounded-mean"``, …), when no pair.
    epsilon, delta : float
        The claim: ε > 0, δ ∈ [0, 1). Required for a callable; for an implementation with
        its own claim (an adapter's), left out or equal to that claim.
    missingness : dict or str, optional
        ``{"kind": "mcar-iid", "rate": 0.3}`` or a kind name with its defaults; default:
        nothing missing (``mcar-iid`` with rate 0).
    d, n, bound : int, int, float
        Features, records and the value bound of the search (ignored with a ``pair``).
    trials : int
        Calls per side of the main run; the pilot adds the black-box pilot rule's calls
        (:mod:`audit.policy`: twice the main run up to 2·10⁴, so 2·10⁴ at the default 20,000).
    confidence : float, optional
        Of the one-sided lower bound, in (0, 1); default the policy's (0.95).
    attack : str, optional
        A black-box attack of the ``audit.attacks`` group; default the policy's black-box
        attack (``auto``).
    mode : {"fixed", "sequential", "online"}
        The whole budget, or stop once the claim is refuted (anytime-valid; online: no pilot).
    amplified : bool, optional
        Also fail when ε_lower exceeds the claim amplified by [RPS] Theorem 3.2 (MAR only);
        None: the policy's (``AuditPolicy.amplified_binds``: True, as ``python -m audit
        run``, exit 1 on either claim); a bool or None, nothing else.
    max_hours : float
        Refuse, before the run, an audit expected to take longer (at the rate measured
        here), as ``run --max-hours`` does.
    policy : AuditPolicy, optional
        The statistical defaults the audit reads (confidence, attack and the amplified
        claim's binding where not given, the pilot rule, the guards); default DEFAULT_POLICY.

    Returns
    -------
    AuditResult
        When the claim survives.

    Raises
    ------
    AssertionError
        When the audit refutes the claim: the message gives ε_lower, the claim and the
        witness region with its counts.
    ValueError
        On bad input (before any call), or, as its subclass
        ``audit.simulation.callables.ImplementationError``, when the mechanism raises or
        releases something that is not a number, at any call.
    """
    policy = _check_arguments(pair, missingness, amplified, max_hours, chunk, policy)
    impl = _implementation(mechanism, epsilon, delta)
    miss = {"kind": "mcar-iid", "rate": 0.0} if missingness is None else (
        {"kind": missingness} if isinstance(missingness, str) else dict(missingness))
    audit = {"trials": trials, "seed": seed, "jobs": jobs,
             "attack": policy.black_box_attack if attack is None else attack,
             **({} if confidence is None else {"confidence": confidence})}
    cfg = _config(impl, pair, query, miss, audit, d=d, n=n, bound=bound,
                  mode=mode).with_policy(policy)
    subject = ImplementationSubject.from_config(cfg, impl, chunk=chunk)
    check_duration(subject, max_hours, trials="trials", hours="max_hours")
    result = run_audit(subject=subject)
    refuted = policy.failing(result.violations, amplified=amplified)
    if refuted:
        raise AssertionError(_refutation(impl, result, refuted, miss, cfg.audit.level))
    return result


def _check_arguments(pair, missingness, amplified, max_hours, chunk, policy) -> AuditPolicy:
    """Refuse, before any call, the arguments the config's own checks would not name: each
    error names the parameter (the others are checked by the config, naming their key).
    Returns the policy (default :data:`audit.policy.DEFAULT_POLICY`)."""
    policy = _policy(policy)
    check_chunk(chunk, "chunk")
    if pair is not None:
        ok = isinstance(pair, tuple | list) and len(pair) == 2
        if ok:
            try:
                ok = all(np.asarray(a, dtype=np.float64).ndim == 2 for a in pair)
            except (TypeError, ValueError):
                ok = False
        if not ok:
            raise ValueError(f"pair must be (z, z_prime): two (n, d) arrays of numbers (NaN = "
                             f"missing) differing in one record, got pair={pair!r}")
    if missingness is not None and not isinstance(missingness, str | dict):
        raise ValueError(f"missingness must be a dict such as {{'kind': 'mcar-iid', 'rate': "
                         f"0.3}} or a kind name (str), got missingness={missingness!r}")
    if amplified is not None:
        check_bool(amplified, "amplified")
    check_in_range("max_hours", max_hours, 0.0, np.inf, lo_closed=False, hi_closed=False)
    return policy


def _policy(policy) -> AuditPolicy:
    """``policy`` checked (default :data:`audit.policy.DEFAULT_POLICY`)."""
    if policy is None:
        return DEFAULT_POLICY
    if not isinstance(policy, AuditPolicy):
        raise TypeError(f"policy must be an audit.policy.AuditPolicy, got "
                        f"policy={type(policy).__name__}")
    return policy


def _refutation(impl, result: AuditResult, refuted: list, miss: dict, confidence: float
                ) -> str:
    """The message of a refuted claim: which claim (its own, or only the amplified one), the
    bound and the witness."""
    c = impl.claim
    own = any(v.kind is CeilingKind.CLAIM for v in refuted)
    which = (f"({c.epsilon:g}, {c.delta:g})-DP" if own else
             f"private at its claim amplified by the missingness ([RPS] Thm 3.2; its own "
             f"claim ({c.epsilon:g}, {c.delta:g}) is not refuted)")
    return (f"{impl.name} is not {which} under {miss} at {confidence:.0%} confidence: "
            f"eps_lower = {result.eps_lower:.4g}, claimed epsilon = {c.epsilon:g} "
            f"({'; '.join(v.describe() for v in refuted)}); witness: {result.describe()}")
