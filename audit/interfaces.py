"""Every protocol of the package, in one light module: the seams a user's own object fits.

An object satisfies a protocol by having its members (``typing.Protocol``, structural): no
base class to inherit, and each protocol below is ``runtime_checkable`` where the package
checks it with ``isinstance``. What each seam is:

- :class:`Query` and :class:`MissingnessMechanism`: the setting (``audit.model`` implements
  the catalogues);
- :class:`Projection`: what the engine histograms for each output (``audit.statistics``
  implements the built-in ones; a user's class with ``evaluate`` and ``to_dict`` is counted by
  black-box audits);
- :class:`Implementation`: a release audited as a black box (``audit.model.implementation``);
- :class:`Subject` and :class:`Monitor`: what the runner audits and what watches its main
  run (``audit.pipeline``);
- :class:`Part` and :class:`Design`: the parts of an audit and a plug-in design
  (``audit.pipeline.parts``);
- :class:`Bound`: the witness an audit ends with (``audit.estimation.witness``).

The modules named above re-export their protocols, so ``audit.protocols.Query``,
``audit.pipeline.subject.Subject`` and the like remain importable. This module imports only
the standard library at run time (no numpy, scipy or numba). The records the protocols hand
each other (a pilot, the exact laws, a ceiling, a claim, ...) live in :mod:`audit.records`,
below every layer, and are named here for type checkers; the objects of a layer above (a
fitted score, a statistic, the pipeline's config, an audit's parts and what the runner fixed
on the pilot) are named by the members the seams read of them (:class:`ScoreLike`,
:class:`StatisticLike`, :class:`ConfigLike`, :class:`PartsLike`, :class:`FittedPilotLike`),
which the package's own classes satisfy (``tests/test_interfaces.py``). No annotation here
is ``Any``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only
    from collections.abc import Callable

    import numpy as np

    from audit.enums import MissingnessClass
    from audit.policy import AuditPolicy, PilotRule
    from audit.records import (
        Ceiling,
        Claim,
        ClaimReport,
        Comparison,
        Laws,
        MaskStructure,
        Pilot,
        Setting,
    )

__all__ = [
    "Query",
    "MissingnessMechanism",
    "Projection",
    "Implementation",
    "ScoreLike",
    "StatisticLike",
    "ConfigLike",
    "PartsLike",
    "FittedPilotLike",
    "Monitor",
    "Subject",
    "Part",
    "Design",
    "Bound",
]


# --------------------------------------------------------------------------- the setting
@runtime_checkable
class Query(Protocol):
    """A query f(x) = Σ_i g(x_i) on incomplete data (NA read as 0), with its FWL constants.

    Every member below is called by the model layer or the pipeline; ``audit.model.queries``
    implements the catalogue. Arrays are float64; NaN in an input marks an NA feature and is
    read as 0, and g(0) = 0 (an all-NA record contributes nothing: the fast path of
    ``audit.model.neighbours`` relies on it).
    """

    #: config name of the query (``"sum"``, ``"vector-sum"``, ...), used in messages
    name: ClassVar[str]

    def check_dimension(self, d: int) -> int:
        """Return ``d`` if the query is defined on records of length d ≥ 1; raise
        ValueError otherwise (e.g. d ≠ the number of columns of a weight matrix)."""
        ...

    def output_dim(self, d: int) -> int:
        """Length ≥ 1 of the output f(x) for records of length ``d`` (1: a scalar query)."""
        ...

    def contributions(self, rows, n: int) -> np.ndarray:
        """g(x_i) for each row of ``rows`` (shape (M, d), NaN read as 0) in a dataset of
        ``n`` ≥ 1 records (means carry their 1/n inside g): shape (M, output_dim(d))."""
        ...

    def evaluate(self, x) -> np.ndarray:
        """f(x) = Σ_i g(x_i) of a dataset x of shape (n, d): shape (output_dim(d),)."""
        ...

    def fwl_constants(self, n: int, d: int, bound: float):
        """The query's feature-wise Lipschitz constants for n ≥ 1 records of d features
        bounded by ``bound`` > 0: an :class:`audit.theory.fwl.FWLConstants` ([RPS] Def. 4.1)."""
        ...

    def candidate_records(self, d: int, bound: float) -> np.ndarray:
        """Differing records the worst-case pair search tries, shape (C, d) with C ≥ 1 and
        every value in [−bound, bound] (domain corners; one-hot records for a histogram)."""
        ...

    def separable_values(self, record, n: int) -> np.ndarray | None:
        """For a query whose output coordinate j reads feature j alone and is 0 when that
        feature is missing: the output, shape (d,), on a dataset of ``n`` records whose only
        non-zero record is ``record`` (fully observed, NaN read as 0). ``None`` when the
        query is not separable; then its law over masks is enumerated (d ≤ 20)."""
        ...

    def params(self) -> dict:
        """Every parameter under its config key (arrays as lists), JSON-ready."""
        ...


@runtime_checkable
class MissingnessMechanism(Protocol):
    """A missing-feature mechanism F: record → random mask (True = missing).

    Every member below is called by the model layer or the pipeline;
    ``audit.model.missingness`` implements the catalogue, and its public base classes
    ``Mechanism`` and ``IndependentFeatures`` supply the members a new mechanism does not
    need to change (docs/DESIGN.md, "How to add a missingness mechanism"). Records are float
    arrays with NaN marking a feature that is NA already.
    """

    #: config name (``"mcar-iid"``, ...); ``make_missingness(kind, **params())`` rebuilds
    kind: ClassVar[str]
    #: MCAR, MAR or MNAR (docs/THEORY.md §1); amplification results apply to MCAR and MAR
    missing_class: ClassVar[MissingnessClass]

    def check_dimension(self, d: int) -> int:
        """Return ``d`` if the mechanism is defined for records of length d ≥ 1; raise
        ValueError otherwise (e.g. a pivot feature ≥ d)."""
        ...

    def p_star(self, d: int) -> float:
        """p* ∈ [0, 1]: P[a record of length d is at least partially observed] (the same for
        every record under MAR; the supremum over records under MNAR) ([RPS] Lemma 3.1)."""
        ...

    def rho(self, d: int) -> float:
        """ρ ∈ [0, 1]: the largest observed fraction |obs(m)|/d over masks of positive
        probability for some record of length d ([RPS] Lemma 4.4)."""
        ...

    def mask_distribution(self, record) -> tuple[np.ndarray, np.ndarray]:
        """Exact law of one record's mask (shape (d,), d ≤ 20): ``(masks, probs)``, masks a
        (M, d) bool array of the distinct masks of positive probability, probs (M,) summing
        to 1."""
        ...

    def sample_masks(self, records, rng=None) -> np.ndarray:
        """One mask per row of ``records`` (shape (N, d)), drawn independently from ``rng``
        (a Generator, a seed or None): bool (N, d), True = missing."""
        ...

    def mask_structure(self, record) -> MaskStructure | None:
        """The law of one record's mask in a form that needs no enumeration of the 2^d
        patterns (:class:`audit.protocols.IndependentMasks` or
        :class:`audit.protocols.FixedCountMasks`), or ``None`` when only
        :meth:`mask_distribution` describes it."""
        ...

    def pair_candidates(self, records, bound: float) -> np.ndarray:
        """Extra differing records for the worst-case pair search, derived from the query's
        ``records`` (shape (C, d), values in [−bound, bound] or NaN): shape (K, d), K ≥ 0,
        values in [−bound, bound] or NaN. A mechanism whose mask probabilities change at a
        threshold returns the records moved across it (``MARPivot``: the pivot set to the
        clipped threshold and to ±bound); most mechanisms return none (K = 0)."""
        ...

    def params(self) -> dict:
        """Every parameter under its config key, defaults included, JSON-ready."""
        ...


# --------------------------------------------------------------------------- what is counted
@runtime_checkable
class Projection(Protocol):
    """What the engine histograms: each raw output x (a scalar, or a vector of the query's
    output dimension) projected to one real number.

    ``audit.statistics`` implements the built-in projections (``OutputValue``, ``ExactLLR``,
    ``LinearProjection``, ``CategoryIndex``, ``NeighbourLogRatio``, ``CoordinateSum``); the
    numba and CUDA engines count only the first three (``ENGINE_PROJECTIONS``), and any other
    object with these members is counted in numpy by a black-box (implementation) audit.
    """

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The projected value of each output: ``x`` of shape (N,) (scalar outputs) or
        (N, dim) → float array of shape (N,); NaN and ±inf are values like any other (each
        has its own bin)."""
        ...

    def to_dict(self) -> dict:
        """A JSON-ready description with a ``"kind"`` key: the result reports it and the
        run's digest (checkpoints) hashes it, so it must change when the projection does."""
        ...


# --------------------------------------------------------------------------- black boxes
@runtime_checkable
class Implementation(Protocol):
    """A release under audit: ``impl(data, rng)`` → scalar or vector.

    ``data`` is a float array (n, d), NaN = missing; ``rng`` a numpy Generator that the
    implementation should use for all its randomness (so that a seed reproduces a run).
    ``batch(datasets, rng)``, when not None, takes (m, n, d) and returns m outputs.
    ``claim`` is an :class:`audit.model.implementation.Claim`.
    """

    name: str
    claim: Claim

    def __call__(self, data: np.ndarray, rng: np.random.Generator): ...

    @property
    def batch(self) -> Callable | None: ...


# --------------------------------------------------------------------------- the pipeline
@runtime_checkable
class ScoreLike(Protocol):
    """What the seams read of a fitted distinguisher (:class:`audit.protocols.Score`): the
    attack's name, the projection the engine counts, what the fit fell back on, and the score
    of raw outputs, of projected values and of every bin of a histogram."""

    attack: str
    projection: Projection
    note: str

    def __call__(self, x: np.ndarray) -> np.ndarray: ...

    def of_projected(self, v: np.ndarray) -> np.ndarray: ...

    def per_bin(self, edges: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class StatisticLike(Protocol):
    """What the seams read of a statistic (:class:`audit.statistics.Statistic`): the
    projection and bin edges it histograms outputs with, the counts of outputs, and each
    bin's score under a fitted score."""

    projection: Projection
    edges: np.ndarray

    def counts(self, x: np.ndarray) -> np.ndarray: ...

    def bin_scores(self, score: ScoreLike) -> np.ndarray: ...


@runtime_checkable
class ConfigLike(Protocol):
    """What the seams read of an audit's config (:class:`audit.pipeline.config.AuditConfig`):
    its name, its tables (``None`` where the config has none; each a frozen dataclass of the
    pipeline layer), its plug-in designs and the policy it runs under."""

    name: str
    scenario: object
    missingness: object
    audit: object
    implementation: object
    pair: object
    releases: object
    strata: object
    search: object
    claim: object
    designs: tuple

    @property
    def policy(self) -> AuditPolicy: ...


@runtime_checkable
class PartsLike(Protocol):
    """What a part's ``supports`` reads of the other parts of its audit
    (:class:`audit.pipeline.parts.AuditParts`)."""

    config: ConfigLike
    target: Part
    pairs: Part
    designs: tuple

    @property
    def black_box(self) -> bool: ...

    def has(self, kind: type) -> bool: ...


@runtime_checkable
class FittedPilotLike(Protocol):
    """What the runner fixed on the pilot and hands :meth:`Subject.with_pilot`
    (:class:`audit.pipeline.subject.FittedPilot`)."""

    pilot: Pilot
    fit_size: int
    score: ScoreLike
    statistic: StatisticLike
    bins: int
    fit: Callable[[Pilot], ScoreLike]


class Monitor(Protocol):
    """Watches the main run chunk by chunk (a sequential test): ``update`` gets the bin
    indices of one chunk of paired draws and returns True to stop the run."""

    def update(self, bins_p: np.ndarray, bins_q: np.ndarray) -> bool: ...


@runtime_checkable
class Subject(Protocol):
    """What the runner audits (:mod:`audit.pipeline.subject`): ``config`` is an
    ``audit.pipeline.config.AuditConfig``; ``ceilings``, ``claim``, ``comparison`` and
    ``setting`` are records of :mod:`audit.records`."""

    config: ConfigLike
    #: seconds spent building the subject (its plan), reported as the ``plan`` phase
    seconds: float

    @property
    def laws(self) -> Laws | None:
        """The exact laws (P, Q) for white-box attacks; None for a black box."""

    @property
    def is_scalar(self) -> bool: ...

    @property
    def delta(self) -> float:
        """The δ of the audited (ε, δ) statement."""

    @property
    def pilot_rule(self) -> PilotRule: ...

    @property
    def ceilings(self) -> tuple[Ceiling, ...]: ...

    @property
    def setting(self) -> Setting: ...

    @property
    def claim(self) -> ClaimReport | None:
        """The implementation's claim, None for the model."""

    @property
    def comparison(self) -> Comparison | None:
        """A value beside the ceilings that is NOT a bound (the per-release accounting of k
        releases with shared masks); None when there is none."""

    @property
    def supports_sequential(self) -> bool: ...

    @property
    def poissonisable(self) -> bool:
        """Whether :meth:`count` returns n i.i.d. draws of each side for every n, so that a
        main run of Poisson(n) calls per side can be counted (the joint bound)."""

    @property
    def stratified(self) -> bool:
        """Whether the subject audits by mask stratum (``[strata]``)."""

    @property
    def tests_at_looks(self) -> bool:
        """Whether the subject runs its own sequential test at declared looks, the runner's
        chunk-by-chunk monitor unused."""

    @property
    def unit(self) -> str:
        """What one trial per side is: ``"draws"`` or ``"calls"``."""

    def draw(self, n: int, seed: int, *, progress: bool = False) -> Pilot: ...

    def statistic(self, score: ScoreLike, pilot: Pilot, bins: int) -> StatisticLike: ...

    def with_pilot(self, fitted: FittedPilotLike) -> Subject:
        """The subject that runs the main run, once the runner has fixed the attack's score,
        statistic and region on the pilot (``fitted``, an
        ``audit.pipeline.subject.FittedPilot``): itself, or, for a subject whose main run's
        design depends on the pilot (a stratified grid of missing rates: a score, region and
        allocation per rate), a new frozen subject holding that design. A wrapper (a
        plug-in design) returns itself around what its inner subject returns."""

    def count(self, statistic: StatisticLike, trials: int, seed: int, *, progress: bool = False,
              label: str = "main run", checkpoint: str | None = None,
              monitor: Monitor | None = None): ...

    def rate(self) -> float:
        """Draws (or calls) per second per side measured now, in one process."""

    def workers(self, jobs: int) -> int:
        """How many processes divide the expected duration."""


@runtime_checkable
class Part(Protocol):
    """What every part answers: None, or why it cannot run with the other parts (``parts``
    an ``audit.pipeline.parts.AuditParts``)."""

    def supports(self, parts: PartsLike) -> str | None: ...


@runtime_checkable
class Design(Part, Protocol):
    """A registered design (the ``audit.designs`` group): built from its config table ``table``
    (:meth:`from_table`, a ``ValueError`` naming the key for a bad value), written back by
    :meth:`to_dict`, refusing what it cannot run with (:meth:`supports`), and applied to the
    subject the other parts give (:meth:`wrap`: a :class:`Subject`)."""

    table: ClassVar[str]

    @classmethod
    def from_table(cls, table: dict) -> Design: ...

    def to_dict(self) -> dict: ...

    def wrap(self, subject: Subject) -> Subject: ...


# --------------------------------------------------------------------------- the witness
@runtime_checkable
class Bound(Protocol):
    """What every bound of an audit answers (:mod:`audit.estimation.witness`).

    ``eps_lower`` is valid with probability ≥ the audit's confidence; :meth:`plug_in` is a
    point estimate on the same evidence (not a bound; None when there is none);
    :meth:`refutes` says whether the bound's own test refuted a claim ε (a sequential test
    does; a fixed bound leaves that to the ceilings); :meth:`result_keys` are the extra
    top-level keys of the result's JSON (``{"strata": ...}`` for a stratified bound).
    """

    kind: ClassVar[str]
    eps_lower: float

    def plug_in(self) -> float | None: ...

    def describe(self) -> str: ...

    def to_dict(self) -> dict: ...

    @classmethod
    def from_dict(cls, doc: dict) -> Bound: ...

    def refutes(self, epsilon: float) -> bool: ...

    def result_keys(self) -> dict: ...
