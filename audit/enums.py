"""Every choice the framework offers, as one string-valued enum each.

Configs, the command line and the public API accept the string values (``"laplace"``) or the
members (``NoiseKind.LAPLACE``); :meth:`Choice.parse` converts at the boundary and refuses
anything else with a ``ValueError`` that lists the allowed values. Inside the package only
members are passed around. The numba kernels need integers: ``audit.simulation`` derives its
codes from these members in one table, so there is no second encoding to keep in sync.
"""

from __future__ import annotations

import enum

from audit._validate import parse_enum

__all__ = [
    "Choice",
    "NoiseKind",
    "MissingnessClass",
    "Calibration",
    "Selection",
    "Direction",
    "BoundRule",
    "TradeoffOrder",
    "Backend",
    "AuditMode",
    "CeilingKind",
    "StopRule",
    "MaskRegime",
    "StrataBy",
    "StrataSides",
    "SideDesign",
    "PairFamily",
    "CurveFamily",
]


class Choice(enum.StrEnum):
    """A string-valued enum that parses its values (case-insensitively) at the boundary.

    Members are ``str`` instances equal to their value, so they serialise to JSON as that
    value and print as it.
    """

    @classmethod
    def parse(cls, value: object, name: str | None = None):
        """``value`` as a member; ``name`` is the parameter named in the error message."""
        return parse_enum(cls, value, name or cls._parameter_name())

    @classmethod
    def _parameter_name(cls) -> str:
        return cls.__name__.lower()


class NoiseKind(Choice):
    """The additive noise of the release: Laplace (scale b) or Gaussian (standard deviation σ)."""

    LAPLACE = "laplace"
    GAUSSIAN = "gaussian"

    @classmethod
    def _parameter_name(cls) -> str:
        return "noise"


class MissingnessClass(Choice):
    """Rubin's classes of missingness mechanisms (docs/THEORY.md §1)."""

    MCAR = "mcar"
    MAR = "mar"
    MNAR = "mnar"

    @classmethod
    def _parameter_name(cls) -> str:
        return "missingness_class"


class Calibration(Choice):
    """How a Gaussian release's σ is set: Dwork–Roth's classical σ (ε ≤ 1) or Balle–Wang's."""

    CLASSICAL = "classical"
    ANALYTIC = "analytic"


class Selection(Choice):
    """How an audit's test region is chosen before the main run.

    ``MODEL``: from the exact laws (white-box attacks on scalar outputs, no data used);
    ``PILOT``: on a pilot sample independent of the main run; ``GRID``: a grid declared in
    advance and paid for with a Bonferroni correction; ``AUTO``: model where it applies,
    else pilot.
    """

    AUTO = "auto"
    MODEL = "model"
    PILOT = "pilot"
    GRID = "grid"


class Direction(Choice):
    """Which side is the numerator of a threshold region's likelihood-ratio bound."""

    Z_VS_ZPRIME = "z_vs_zprime"  # S = {score >= t}: ln((P(S) - δ)/Q(S))
    ZPRIME_VS_Z = "zprime_vs_z"  # S = {score <= t}: ln((Q(S) - δ)/P(S))


class BoundRule(Choice):
    """How a region's counts become an ε lower bound at δ = 0 (docs/THEORY.md §8.1b).

    ``TWO_INTERVALS``: the numerator's Clopper–Pearson lower and the denominator's upper bound
    at α/2 each (fixed numbers of draws per side; every δ); ``JOINT``: one Clopper–Pearson
    lower bound at α on the numerator's share P(S)/(P(S) + Q(S)), from the region's two counts
    of a run whose numbers of draws per side are independent Poisson(``trials``) (δ = 0 only).
    """

    TWO_INTERVALS = "two-intervals"
    JOINT = "joint"

    @classmethod
    def _parameter_name(cls) -> str:
        return "rule"


class TradeoffOrder(Choice):
    """Which trade-off function a test probes (docs/THEORY.md §6).

    ``P_Q``: T(P, Q), the test rejects P on {score ≤ t}; ``Q_P``: T(Q, P), it rejects Q on
    {score ≥ t}.
    """

    P_Q = "T(P,Q)"
    Q_P = "T(Q,P)"

    @classmethod
    def _parameter_name(cls) -> str:
        return "orders"


class Backend(Choice):
    """Where the chunks of a Monte Carlo run execute.

    ``LOKY``: joblib worker processes; ``THREADING``: joblib threads running serial nogil
    kernels; ``DASK``: a ``distributed.Client`` the caller created (optional extra);
    ``CUDA``: an NVIDIA GPU driven from the calling process (numba-cuda, optional extra).
    """

    LOKY = "loky"
    THREADING = "threading"
    DASK = "dask"
    CUDA = "cuda"


class AuditMode(Choice):
    """How the main run of an implementation audit ends.

    ``FIXED``: runs its whole budget, then bounds ε with Clopper–Pearson on the declared
    region. ``SEQUENTIAL``: tests the claim after every chunk with an anytime-valid betting
    e-process and stops as soon as the claim is refuted at level α (else at the budget).
    ``ONLINE``: the same test with no pilot, its regions chosen from the run's own past calls
    (:mod:`audit.estimation.online`; scalar outputs).
    """

    FIXED = "fixed"
    SEQUENTIAL = "sequential"
    ONLINE = "online"


class CeilingKind(Choice):
    """What an audit's ε_lower is compared with (``audit.pipeline.ceilings``).

    ``PAIR``: the exact ε of the audited pair; ``THEORY``: the applicable [RPS] theorem;
    ``FDP``: the f-DP amplification bound (docs/THEORY.md §7); ``CLAIM``: an implementation's
    own claimed ε; ``AMPLIFIED_CLAIM``: that claim amplified by [RPS] Theorem 3.2 under the
    audit's missingness.
    """

    PAIR = "eps_pair"
    THEORY = "eps_theory"
    FDP = "eps_fdp"
    CLAIM = "eps_claim"
    AMPLIFIED_CLAIM = "eps_amplified"


class StopRule(Choice):
    """When a sequential audit stops: ``REFUTED`` as soon as the claim is refuted (reporting
    the largest ε refuted so far, which may exceed the claim), ``BUDGET`` at the budget (an
    anytime-valid estimator run to the end)."""

    REFUTED = "refuted"
    BUDGET = "budget"


class MaskRegime(Choice):
    """How the masks of k releases relate (docs/THEORY.md §9).

    ``SHARED``: one incomplete table, k releases computed from it (one mask draw for all);
    ``FRESH``: the missingness is drawn anew, independently, for every release;
    ``PERSISTENT``: each re-collection keeps a record's previous mask with a probability r (its
    ``persistence``), else redraws it (§10.7; r = 1 is shared, r = 0 fresh).

    Only a config's ``[releases]``, the accountant's :class:`~audit.theory.worst_case.Setting`
    and the model's k-release design handle ``PERSISTENT``; the others parse with
    :meth:`parse_fixed`, which refuses it, naming the parameter.
    """

    SHARED = "shared"
    FRESH = "fresh"
    PERSISTENT = "persistent"

    @classmethod
    def parse_fixed(cls, value: object, name: str | None = None):
        """``value`` as ``SHARED`` or ``FRESH``: for a caller that handles only the two fixed
        regimes (``PERSISTENT`` is refused like an unknown value, with a pointer to where it
        is handled)."""
        name = name or cls._parameter_name()
        try:
            member = parse_enum(cls, value, name)
        except ValueError:
            member = None
        if member in (cls.SHARED, cls.FRESH):
            return member
        hint = ("" if member is None else
                " (persistent masks are accounted for one sum of a config: "
                "[releases] masks = 'persistent' with persistence = r, docs/THEORY.md §10.7)")
        raise ValueError(f"{name} must be one of 'shared', 'fresh', got {name}={value!r}{hint}")

    @classmethod
    def _parameter_name(cls) -> str:
        return "masks"


class StrataBy(Choice):
    """The statistic a stratified implementation audit stratifies the masks by
    (docs/THEORY.md §8.5): ``MISSING_COUNT``, the number of entries the mechanism masks."""

    MISSING_COUNT = "missing-count"

    @classmethod
    def _parameter_name(cls) -> str:
        return "strata.by"


class StrataSides(Choice):
    """Which sides of a stratified audit are sampled by stratum: ``AUTO`` (each side's
    design chosen from the pilot), ``BOTH``, ``P`` (z only), ``Q`` (z' only), ``NONE``
    (both plain: one plain run per missing rate, the separate audits in one run)."""

    AUTO = "auto"
    BOTH = "both"
    P = "p"
    Q = "q"
    NONE = "none"

    @classmethod
    def _parameter_name(cls) -> str:
        return "strata.sides"


class SideDesign(Choice):
    """How one side of a stratified audit is sampled: ``STRATIFIED`` (calls allocated over
    the strata, bounds combined with the exact weights) or ``PLAIN`` (one run per missing
    rate, as separate audits)."""

    STRATIFIED = "stratified"
    PLAIN = "plain"

    @classmethod
    def _parameter_name(cls) -> str:
        return "design"


class PairFamily(Choice):
    """A declared family of candidate neighbouring pairs for a black-box pair search
    (``[search]``; :mod:`audit.model.pair_families`).

    ``CORNERS``: the differing record at two different domain corners (or 0); ``NAN``: a
    record against the all-NA record; ``NAN_POSITION``: a record against itself with one
    feature NA, at each position; ``TESTER``: the DP testers' patterns on a one-record
    dataset whose record is the query vector (adjacency ‖x − x′‖∞ ≤ 1: StatDP, DP-Sniper);
    ``LIST``: the user's pairs; ``TABLE``: the user's own table with one record replaced (by a
    domain corner, the all-NA record, or itself with another record's NaN pattern);
    ``IMPUTATION``: the pairs that hurt an imputer, an extreme value of record 0 carried into m
    incomplete records (:mod:`audit.model.imputation_pairs`).
    """

    CORNERS = "corners"
    NAN = "nan"
    NAN_POSITION = "nan-position"
    TESTER = "tester"
    LIST = "list"
    TABLE = "table"
    IMPUTATION = "imputation"

    @classmethod
    def _parameter_name(cls) -> str:
        return "search.families"


class CurveFamily(Choice):
    """The trade-off curves a curve claim (``[claim] curve``;
    :mod:`audit.estimation.curve_claims`) states the mechanism is at least as private as.

    ``GAUSSIAN``: G_μ over μ ≥ 0 ([DRS] Def. 2.7); ``SUBSAMPLED_GAUSSIAN``: C_{p*}(G_μ) over
    μ ≥ 0 at a fixed p* (the hidden-mask Gaussian sum, docs/THEORY.md §7); ``POINTS``: one
    fixed curve, the piecewise-linear interpolation of points (α_i, β_i).
    """

    GAUSSIAN = "gaussian"
    SUBSAMPLED_GAUSSIAN = "subsampled-gaussian"
    POINTS = "points"

    @classmethod
    def _parameter_name(cls) -> str:
        return "curve"
