"""The plain records the protocols of :mod:`audit.interfaces` name: what the parts of an audit
hand each other.

Each is a frozen dataclass of data and a few derived views, defined here, below every module
that uses it, so that :mod:`audit.interfaces` names them as types (for type checkers) without
an import cycle; the modules they grew up in re-export them (``audit.protocols.Pilot``,
``audit.pipeline.ceilings.Ceiling``, ``audit.model.implementation.Claim``, ...). This module
imports numpy, the enums, the validators and the mixture type only.

- what is drawn and known: :class:`Pilot` (raw outputs of both sides), :class:`Laws` (the
  exact output laws), :class:`IndependentMasks` and :class:`FixedCountMasks` (a mask law in
  closed form, :data:`MaskStructure`);
- what an audit is compared with: :class:`Ceiling` (an upper bound stated before sampling),
  :class:`Comparison` (a value that is not a bound), :class:`ClaimReport` (an
  implementation's claim as the result reports it), :class:`BatchCheck` (whether a batched
  implementation's releases count as calls), :class:`Claim` (what an implementation claims),
  :class:`Setting` (the missingness setting of a subject);
- what an implementation states besides its calls: :class:`Traits` (its optional members, read
  once by :func:`traits_of`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from audit._validate import check_delta, check_epsilon
from audit.enums import CeilingKind
from audit.mixture import Mixture

__all__ = ["IndependentMasks", "FixedCountMasks", "MaskStructure", "Pilot", "Laws", "Ceiling",
           "Comparison", "ClaimReport", "BatchCheck", "BATCH_TESTS", "Claim", "Setting",
           "JSON_KEYS", "Traits", "traits_of"]


@dataclass(frozen=True, eq=False)
class IndependentMasks:
    """A mask law with features missing independently: feature j with probability
    ``rates[j]`` ∈ [0, 1] (shape (d,))."""

    rates: np.ndarray


@dataclass(frozen=True)
class FixedCountMasks:
    """A mask law: with probability ``p_observed`` ∈ [0, 1] a uniformly random set of exactly
    ``observed`` ≥ 1 features is observed, otherwise none."""

    observed: int
    p_observed: float


#: what :meth:`audit.interfaces.MissingnessMechanism.mask_structure` may return besides None
MaskStructure = IndependentMasks | FixedCountMasks


@dataclass(frozen=True, eq=False)
class Pilot:
    """Pilot outputs of A_D(z) (``p``) and A_D(z') (``q``), from streams independent of the
    main run: shape (m,) for scalar outputs, (m, dim) for vectors."""

    p: np.ndarray
    q: np.ndarray

    @property
    def is_scalar(self) -> bool:
        return np.ndim(self.p) == 1

    @property
    def dim(self) -> int:
        return 1 if self.is_scalar else int(np.shape(self.p)[1])

    def split(self, m: int) -> tuple[Pilot, Pilot]:
        """The first ``m`` draws of each side and the rest."""
        return Pilot(self.p[:m], self.q[:m]), Pilot(self.p[m:], self.q[m:])


@dataclass(frozen=True, eq=False)
class Laws:
    """The exact output laws P = A_D(z) and Q = A_D(z') (white-box attacks only)."""

    P: Mixture
    Q: Mixture


#: The JSON key each ceiling kind is reported under (an implementation's amplified claim
#: stands where a model audit's theorem does: both are "the theory" of the audit).
JSON_KEYS = {CeilingKind.PAIR: "eps_pair", CeilingKind.THEORY: "eps_theory",
             CeilingKind.FDP: "eps_fdp", CeilingKind.CLAIM: "eps_claim",
             CeilingKind.AMPLIFIED_CLAIM: "eps_theory"}


@dataclass(frozen=True)
class Ceiling:
    """An upper bound on the audited ε that the subject states before sampling.

    ``value`` is None where the ceiling does not exist for this setting (no exact ε for a
    vector output, no theorem for MNAR, a theorem whose δ exceeds the audited δ): it is shown
    as n/a and never violated. ``error`` is the ceiling's stated numerical error (the pair
    integrator's), added before comparing. ``label`` says where it comes from.
    """

    kind: CeilingKind
    value: float | None
    label: str = ""
    error: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CeilingKind.parse(self.kind, "kind"))

    @property
    def key(self) -> str:
        """The result's JSON key for this ceiling."""
        return JSON_KEYS[self.kind]

    def exceeded_by(self, eps_lower: float) -> bool:
        return self.value is not None and eps_lower > self.value + self.error

    def to_dict(self) -> dict:
        return {"kind": self.kind.value, "value": self.value, "label": self.label,
                "error": self.error}


@dataclass(frozen=True)
class Comparison:
    """A value printed beside the ceilings that is NOT a bound: the per-release accounting of
    k releases with shared masks (the per-release amplified guarantee composed as if the masks
    were fresh), which an ε_lower above it shows to understate the release's ε. JSON: the
    result's ``comparisons`` (``eps_fresh_composed``, ``rule``, ``note``)."""

    value: float
    rule: str
    note: str = "not a bound for shared masks"

    def to_dict(self) -> dict:
        return {"eps_fresh_composed": self.value, "rule": self.rule, "note": self.note}

    def exceeded_by(self, eps_lower: float) -> bool:
        """Whether ``eps_lower`` refutes the per-release accounting (a finding, not a
        violation)."""
        return eps_lower > self.value


@dataclass(frozen=True)
class ClaimReport:
    """An implementation's claim as the result reports it: (ε, δ) per substituted record,
    where it comes from (``note``) and the implementation's name; ``batch_check``, where the
    implementation makes several releases in one call, the check that let the audit count
    them as calls, or refused it (the typed record :class:`BatchCheck`). JSON: the result's
    ``claim`` (``batch_check`` only where one ran, as :meth:`BatchCheck.to_dict` writes
    it)."""

    epsilon: float
    delta: float
    note: str
    implementation: str
    batch_check: BatchCheck | None = None

    def to_dict(self) -> dict:
        doc = {"epsilon": self.epsilon, "delta": self.delta, "note": self.note,
               "implementation": self.implementation}
        if self.batch_check is not None:
            doc["batch_check"] = self.batch_check.to_dict()
        return doc


#: The three tests of a batch check, in the order :attr:`BatchCheck.p_values` lists them.
BATCH_TESTS = ("correlation", "permutation", "law")

@dataclass(frozen=True)
class BatchCheck:
    """The outcome of :func:`audit.model.batch_check.check_batch`.

    ``p_values`` maps each of :data:`BATCH_TESTS` to its p-value; each is compared with
    ``alpha``/3.
    ``nan_free`` is False when some release on the complete dataset was NaN (no test ran: the
    check fails; ±inf are ordered values like any other, e.g. OpenDP's mean over a noisy
    count of 0). ``releases`` batched and ``unbatched`` calls were made in
    ``seconds``. ``cached`` is True when this result was read from the cache on disk (the
    check ran in an earlier process; ``seconds`` is what it took then).
    """

    name: str
    p_values: dict
    alpha: float
    releases: int
    unbatched: int
    seconds: float
    nan_free: bool = True
    cached: bool = False

    @property
    def failed(self) -> tuple[str, ...]:
        """The tests that reject (all of them when some release was NaN)."""
        if not self.nan_free:
            return BATCH_TESTS
        return tuple(t for t in BATCH_TESTS
                     if self.p_values[t] <= self.alpha / len(BATCH_TESTS))

    @property
    def passed(self) -> bool:
        return not self.failed

    def describe(self) -> str:
        if not self.nan_free:
            return (f"{self.name}: a release of the batched or unbatched form on a complete "
                    f"dataset was NaN; the releases of one call cannot be checked")
        tests = ", ".join(f"{t} p = {self.p_values[t]:.2g}" for t in BATCH_TESTS)
        verdict = "independent" if self.passed else f"refused ({', '.join(self.failed)})"
        cached = "; cached from an earlier run" if self.cached else ""
        return (f"{self.name}: batched releases {verdict} at α = {self.alpha:g} "
                f"({tests}; {self.releases} batched, {self.unbatched} unbatched releases, "
                f"{self.seconds:.2f} s{cached})")

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "passed": self.passed,
                "failed": list(self.failed)}


@dataclass(frozen=True)
class Claim:
    """What an implementation claims: (ε, δ)-DP under substitution of one record.

    Parameters
    ----------
    epsilon : float
        ε ≥ 0.
    delta : float
        δ ∈ [0, 1).
    note : str
        Where the claim comes from (the library call and its parameters).
    """

    epsilon: float
    delta: float = 0.0
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "claim epsilon"))
        d = check_delta(self.delta, "claim delta")
        if d >= 1.0:
            raise ValueError(f"claim delta must be in [0, 1), got claim delta={d!r}")
        object.__setattr__(self, "delta", d)


@dataclass(frozen=True)
class Setting:
    """The missingness setting of a subject, as the result reports it."""

    p_star: float
    rho: float
    missing_class: str
    noise_scale: float | None
    eps_base: float
    eps_mar_formula: float | None = None


@dataclass(frozen=True, eq=False)
class Traits:
    """What an implementation states besides being callable, read once where it enters
    (:func:`traits_of`): the members the :class:`audit.interfaces.Implementation` protocol
    leaves optional, each with the value its absence means.

    ``name`` (the class's name when it has none); ``params`` (what the release was built with,
    {} when unstated); ``claim`` (None: no claim); ``batch`` (the batched form, or None);
    ``batch_in_one_call`` (whether a batch is one call of the library, so that its releases
    need the batch check); ``batch_check_rule`` (the implementation's own sizes for that check,
    or None: the policy's); ``cache_identity`` (a callable giving what a cached check depends
    on, or None: the modules its code comes from); ``functions`` (the callables it wraps, whose
    modules the cache key reads).
    """

    name: str
    params: dict
    claim: Claim | None
    batch: Callable | None
    batch_in_one_call: bool
    batch_check_rule: object  # an audit.policy.BatchCheckRule or None (policy sits above)
    cache_identity: Callable[[], dict | None] | None
    functions: tuple[Callable, ...]


def traits_of(impl: object) -> Traits:
    """The :class:`Traits` of ``impl``: the one place the optional members of an
    implementation are read."""
    name = getattr(impl, "name", None)
    own = getattr(impl, "cache_identity", None)
    return Traits(name=name if isinstance(name, str) else type(impl).__name__,
                  params=dict(getattr(impl, "params", None) or {}),
                  claim=getattr(impl, "claim", None),
                  batch=getattr(impl, "batch", None),
                  batch_in_one_call=getattr(impl, "batch_in_one_call", False) is True,
                  batch_check_rule=getattr(impl, "batch_check_rule", None),
                  cache_identity=own if callable(own) else None,
                  functions=tuple(f for f in (getattr(impl, "func", None),
                                              getattr(impl, "batch_func", None))
                                  if f is not None))
