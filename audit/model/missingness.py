"""Missing-feature mechanisms F: a record z ∈ R^d → a random mask m ∈ {0, 1}^d (True = missing).

docs/THEORY.md §1–§2. The dataset mechanism D = F^{⊗n} masks records independently. A mechanism
is MCAR if P[F(z) = m] does not depend on z, MAR if P[F(z) = m] = P[F(z') = m] whenever z and
z' agree on obs(m) = {j : m_j = 0}, MNAR otherwise (no amplification result holds for MNAR).

Each mechanism is a frozen dataclass reporting

- ``missing_class``: :class:`MissingnessClass`;
- ``p_star(d)``: P[the record is at least partially observed] = 1 − P[F(z) = 1_d]
  ([RPS] Lemma 3.1; the same for every z under MAR);
- ``rho(d)``: the almost-sure observed fraction, max over masks of positive probability (for
  some record) of |obs(m)|/d ([RPS] Lemma 4.4);
- ``mask_distribution(record)``: exact enumeration ``(masks (M, d) bool, probs (M,))`` of the
  masks of positive probability for one record (d ≤ 20);
- ``sample_masks(records, rng)``: one mask per record, plain numpy;
- ``mask_structure(record)``: the mask law without enumeration, where one exists;
- ``pair_candidates(records, bound)``: extra differing records for the worst-case pair search.

These are the members of :class:`audit.protocols.MissingnessMechanism`. A new mechanism
subclasses :class:`Mechanism` (or :class:`IndependentFeatures` when its features are masked
independently given the record) and can be used directly, or by name through
:func:`make_missingness` (a ``"package.module:Class"`` target): docs/DESIGN.md, "How to add a
missingness mechanism".

Records may hold NaN for features that are already NA (a record of Z_miss). Mechanisms whose
probabilities read feature values read such an NA as 0, the query convention of docs/THEORY.md §1.

==============  ======  ===========================  ==========================  =====
kind            class   parameters                   p*                          ρ
==============  ======  ===========================  ==========================  =====
mcar-iid        MCAR    rate r                       1 − r^d                     1
mcar-fixed      MCAR    observed k, p_star           p_star                      k/d
mcar-row        MCAR    p_star                       p_star                      1
mar-pivot       MAR     pivot, threshold, rates      1                           1
mar-monotone    MAR     q0, intercept, slope         1 − q0                      1
never-mask      MAR     j0, rate r                   1                           1
mnar-value      MNAR    threshold, rates             (sup over z) 1 − min(r)^d   1
==============  ======  ===========================  ==========================  =====

(ρ as listed when some feature beyond the forced ones can be observed: e.g. ρ = 0 for
``mcar-iid`` with r = 1, ρ = 1/d for ``never-mask`` with r = 1.)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, is_dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_positive_int, check_probability, check_real
from audit.enums import MissingnessClass
from audit.model.catalogue import build
from audit.model.implementation import load_callable
from audit.model.missingness_base import (
    _CONFIG_KEYS,
    MAX_ENUM_D,
    IndependentFeatures,
    Mechanism,
    _check_record,
    _check_records,
    _rng,
    all_masks,
)
from audit.protocols import (
    FixedCountMasks,
    IndependentMasks,
    MaskStructure,
    MissingnessMechanism,
    missing_members,
)

__all__ = [
    "MissingnessClass",
    "Mechanism",
    "IndependentFeatures",
    "MCARIid",
    "MCARFixed",
    "MCARRow",
    "MARPivot",
    "MARMonotone",
    "NeverMask",
    "MNARValue",
    "MISSINGNESS_KINDS",
    "IndependentMasks",
    "FixedCountMasks",
    "MaskStructure",
    "make_missingness",
    "is_mar_by_enumeration",
    "all_masks",
    "MAX_ENUM_D",
]


@dataclass(frozen=True)
class MCARIid(IndependentFeatures):
    """Every feature missing independently with probability ``rate`` (MCAR)."""

    rate: float = 0.3
    kind: ClassVar[str] = "mcar-iid"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", check_probability(self.rate, "rate"))

    def _rates(self, x):
        return np.full(x.shape, self.rate)

    def p_star(self, d: int) -> float:
        """p* = 1 − rate^d: the probability that a record of ``d`` features has at least one
        observed entry.

        Examples
        --------
        >>> MCARIid(rate=0.5).p_star(3)
        0.875
        >>> make_missingness("mcar-iid", rate=0.3).p_star(10)
        0.99999...
        """
        d = check_positive_int(d, "d")
        return 1.0 - self.rate**d

    def rho(self, d: int) -> float:
        check_positive_int(d, "d")
        return 1.0 if self.rate < 1.0 else 0.0


@dataclass(frozen=True)
class NeverMask(IndependentFeatures):
    """[RPS] B.3's D0: feature ``j0`` never masked, the others missing i.i.d. with ``rate``.

    MCAR in the sense of docs/THEORY.md §1 (P[F(z) = m] is free of z), hence also MAR; reported as
    MAR as in [RPS] B.3. p* = 1: no amplification.
    """

    j0: int = 0
    rate: float = 0.5
    kind: ClassVar[str] = "never-mask"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "j0", check_positive_int(self.j0, "j0", minimum=0))
        object.__setattr__(self, "rate", check_probability(self.rate, "rate"))

    def _check_d(self, d: int) -> int:
        d = check_positive_int(d, "d")
        if self.j0 >= d:
            raise ValueError(f"j0 must be in [0, {d - 1}] for d={d}, got j0={self.j0}")
        return d

    def _rates(self, x):
        q = np.full(x.shape, self.rate)
        q[:, self.j0] = 0.0
        return q

    def p_star(self, d: int) -> float:
        self._check_d(d)
        return 1.0

    def rho(self, d: int) -> float:
        d = self._check_d(d)
        return 1.0 if self.rate < 1.0 else 1.0 / d


@dataclass(frozen=True)
class MARPivot(IndependentFeatures):
    """Feature ``pivot`` always observed; every other feature missing independently with
    ``rate_low`` if z[pivot] < ``threshold`` else ``rate_high`` (MAR: the rate reads only the
    always-observed pivot)."""

    pivot: int = 0
    threshold: float = 0.0
    rate_low: float = 0.2
    rate_high: float = 0.6
    kind: ClassVar[str] = "mar-pivot"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "pivot", check_positive_int(self.pivot, "pivot", minimum=0))
        object.__setattr__(self, "threshold", check_real("threshold", self.threshold))
        object.__setattr__(self, "rate_low", check_probability(self.rate_low, "rate_low"))
        object.__setattr__(self, "rate_high", check_probability(self.rate_high, "rate_high"))

    def _check_d(self, d: int) -> int:
        d = check_positive_int(d, "d")
        if self.pivot >= d:
            raise ValueError(f"pivot must be in [0, {d - 1}] for d={d}, got pivot={self.pivot}")
        return d

    def _rates(self, x):
        r = np.where(x[:, self.pivot] < self.threshold, self.rate_low, self.rate_high)
        q = np.repeat(r[:, None], x.shape[1], axis=1)
        q[:, self.pivot] = 0.0
        return q

    def p_star(self, d: int) -> float:
        self._check_d(d)
        return 1.0

    def rho(self, d: int) -> float:
        d = self._check_d(d)
        return 1.0 if min(self.rate_low, self.rate_high) < 1.0 or d == 1 else 1.0 / d

    def _pair_candidates(self, x, bound):
        """Each record with its pivot at the threshold (clipped to [−B, B]), at −B and at +B:
        the rates change where z[pivot] crosses the threshold."""
        values = np.array([min(max(self.threshold, -bound), bound), -bound, bound])
        out = np.repeat(x[None, :, :], values.size, axis=0)
        out[:, :, self.pivot] = values[:, None]
        return out.reshape(-1, x.shape[1])


@dataclass(frozen=True)
class MNARValue(IndependentFeatures):
    """Self-masking (MNAR): feature j missing with ``rate_high`` if z_j > ``threshold`` else
    ``rate_low``. ``p_star`` returns sup_z P[partially observed] = 1 − min(rates)^d; no
    amplification theorem applies."""

    threshold: float = 0.0
    rate_low: float = 0.1
    rate_high: float = 0.7
    kind: ClassVar[str] = "mnar-value"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MNAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", check_real("threshold", self.threshold))
        object.__setattr__(self, "rate_low", check_probability(self.rate_low, "rate_low"))
        object.__setattr__(self, "rate_high", check_probability(self.rate_high, "rate_high"))

    def _rates(self, x):
        return np.where(x > self.threshold, self.rate_high, self.rate_low)

    def p_star(self, d: int) -> float:
        d = check_positive_int(d, "d")
        return 1.0 - min(self.rate_low, self.rate_high) ** d

    def rho(self, d: int) -> float:
        check_positive_int(d, "d")
        return 1.0 if min(self.rate_low, self.rate_high) < 1.0 else 0.0


@dataclass(frozen=True)
class MCARFixed(Mechanism):
    """With probability ``p_star`` exactly ``observed`` features are observed (a uniformly
    random subset); otherwise the whole record is missing. ρ = observed/d."""

    observed: int = 1
    p_star_value: float = 1.0
    kind: ClassVar[str] = "mcar-fixed"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "observed", check_positive_int(self.observed, "observed"))
        object.__setattr__(
            self, "p_star_value", check_probability(self.p_star_value, "p_star")
        )

    def _check_d(self, d: int) -> int:
        d = check_positive_int(d, "d")
        if self.observed > d:
            raise ValueError(
                f"observed must be in [1, {d}] for d={d}, got observed={self.observed}"
            )
        return d

    def p_star(self, d: int) -> float:
        """p* = ``p_star_value``, whatever ``d`` (at least ``observed``).

        Examples
        --------
        >>> mech = make_missingness("mcar-fixed", observed=3, p_star=0.5)
        >>> mech.p_star(10), mech.rho(10)
        (0.5, 0.3)
        """
        self._check_d(d)
        return self.p_star_value

    def rho(self, d: int) -> float:
        d = self._check_d(d)
        return self.observed / d if self.p_star_value > 0 else 0.0

    def mask_structure(self, record) -> FixedCountMasks:
        self._check_d(np.asarray(record).shape[-1])
        return FixedCountMasks(self.observed, self.p_star_value)

    def mask_distribution(self, record):
        z = _check_record(record)
        d = self._check_d(z.shape[0])
        k = self.observed
        subsets = list(itertools.combinations(range(d), k))
        masks = np.ones((len(subsets) + 1, d), dtype=bool)
        for i, s in enumerate(subsets):
            masks[i, list(s)] = False
        probs = np.full(len(subsets) + 1, self.p_star_value / len(subsets))
        probs[-1] = 1.0 - self.p_star_value
        keep = probs > 0
        return masks[keep], probs[keep]

    def sample_masks(self, records, rng=None):
        x = _check_records(records)
        n, d = x.shape
        self._check_d(d)
        g = _rng(rng)
        keys = g.random((n, d))
        ranks = keys.argsort(axis=1).argsort(axis=1)
        observed = (ranks < self.observed) & (g.random((n, 1)) < self.p_star_value)
        return ~observed


@dataclass(frozen=True)
class MCARRow(Mechanism):
    """The whole record missing with probability 1 − ``p_star``, else fully observed."""

    p_star_value: float = 0.5
    kind: ClassVar[str] = "mcar-row"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "p_star_value", check_probability(self.p_star_value, "p_star")
        )

    def p_star(self, d: int) -> float:
        check_positive_int(d, "d")
        return self.p_star_value

    def rho(self, d: int) -> float:
        check_positive_int(d, "d")
        return 1.0 if self.p_star_value > 0 else 0.0

    def mask_distribution(self, record):
        z = _check_record(record)
        d = z.shape[0]
        masks = np.array([np.zeros(d, bool), np.ones(d, bool)])
        probs = np.array([self.p_star_value, 1.0 - self.p_star_value])
        keep = probs > 0
        return masks[keep], probs[keep]

    def sample_masks(self, records, rng=None):
        x = _check_records(records)
        row = _rng(rng).random((x.shape[0], 1)) >= self.p_star_value
        return np.repeat(row, x.shape[1], axis=1)


def _sigmoid(t):
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(t, dtype=np.float64)))


@dataclass(frozen=True)
class MARMonotone(Mechanism):
    """Monotone dropout (MAR): feature 0 missing with probability ``q0``; given features
    0..j observed, feature j+1 is missing with probability σ(intercept + slope · z_j)
    (logistic σ), and once a feature is missing all later ones are. Masks are the d + 1
    "observed prefix" patterns; the probability of prefix length t reads only z_0..z_{t−1},
    all observed, hence MAR. p* = 1 − q0."""

    q0: float = 0.1
    intercept: float = -1.0
    slope: float = 1.0
    kind: ClassVar[str] = "mar-monotone"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "q0", check_probability(self.q0, "q0"))
        object.__setattr__(self, "intercept", check_real("intercept", self.intercept))
        object.__setattr__(self, "slope", check_real("slope", self.slope))

    def p_star(self, d: int) -> float:
        check_positive_int(d, "d")
        return 1.0 - self.q0

    def rho(self, d: int) -> float:
        check_positive_int(d, "d")
        return 1.0 if self.q0 < 1.0 else 0.0

    def _drop(self, x: np.ndarray) -> np.ndarray:
        """(N, d−1): P[feature j+1 missing | 0..j observed] = σ(a + s z_j)."""
        return _sigmoid(self.intercept + self.slope * x[:, :-1])

    def mask_distribution(self, record):
        z = np.nan_to_num(_check_record(record), nan=0.0)
        d = z.shape[0]
        h = self._drop(z[None, :])[0]
        probs = np.empty(d + 1)
        probs[0] = self.q0
        alive = 1.0 - self.q0
        for t in range(1, d):
            probs[t] = alive * h[t - 1]
            alive *= 1.0 - h[t - 1]
        probs[d] = alive
        masks = np.arange(d)[None, :] >= np.arange(d + 1)[:, None]
        keep = probs > 0
        return masks[keep], probs[keep]

    def sample_masks(self, records, rng=None):
        x = np.nan_to_num(_check_records(records), nan=0.0)
        n, d = x.shape
        g = _rng(rng)
        u = g.random((n, d))
        stop = np.empty((n, d), dtype=bool)
        stop[:, 0] = u[:, 0] < self.q0
        stop[:, 1:] = u[:, 1:] < self._drop(x)
        # A feature is missing once any earlier-or-equal stop fired.
        return np.logical_or.accumulate(stop, axis=1)


MISSINGNESS_KINDS: dict[str, type[Mechanism]] = {
    cls.kind: cls
    for cls in (MCARIid, MCARFixed, MCARRow, MARPivot, MARMonotone, NeverMask, MNARValue)
}

# Short aliases accepted on input (config keys that differ from field names: _CONFIG_KEYS).
_ALIASES = {"r": "rate", "k": "observed"}


def make_missingness(kind: str | type, **params) -> MissingnessMechanism:
    """Build a mechanism from its config name and parameters.

    Parameters
    ----------
    kind : str or class
        One of ``MISSINGNESS_KINDS`` (``"mcar-iid"``, ``"mcar-fixed"``, ``"mcar-row"``,
        ``"mar-pivot"``, ``"mar-monotone"``, ``"never-mask"``, ``"mnar-value"``); or a user's
        mechanism class (a dataclass, usually a :class:`Mechanism` subclass), given itself or
        as its import target ``"package.module:Class"`` (how a config names it; a
        :class:`Mechanism` subclass's default ``kind``).
    **params
        The mechanism's parameters (``p_star`` is accepted for ``p_star_value``, ``r`` for
        ``rate``, ``k`` for ``observed``).

    Raises
    ------
    ValueError
        Unknown kind, a target that cannot be imported or names no dataclass, unknown
        parameter, a parameter out of range, or a user class whose instances lack a member
        of :class:`audit.protocols.MissingnessMechanism`.

    Examples
    --------
    >>> make_missingness("mcar-iid", rate=0.25).p_star(2)
    0.9375
    >>> make_missingness(MCARRow, p_star=0.5).kind
    'mcar-row'
    """
    catalogue, name = _catalogue_for(kind)
    mech = build(catalogue, name, params, what="missingness kind", param="kind",
                 config_keys=_CONFIG_KEYS, aliases=_ALIASES)
    if not isinstance(mech, MissingnessMechanism):
        lacks = ", ".join(missing_members(mech, MissingnessMechanism))
        raise ValueError(f"kind {name!r} must build an audit.protocols.MissingnessMechanism; "
                         f"it lacks {lacks}")
    return mech


def _catalogue_for(kind) -> tuple[dict[str, type], str]:
    """The one-entry catalogue of a user's class, or the built-in one for a name."""
    if isinstance(kind, str) and kind not in MISSINGNESS_KINDS and ":" in kind:
        cls = load_callable(kind)
    elif isinstance(kind, type):
        cls = kind
    else:
        return MISSINGNESS_KINDS, kind
    if not (isinstance(cls, type) and is_dataclass(cls)):
        raise ValueError(f"kind must be a built-in name or a dataclass mechanism class, got "
                         f"kind={kind!r}")
    name = kind if isinstance(kind, str) else getattr(cls, "kind", cls.__qualname__)
    return {name: cls}, name


def is_mar_by_enumeration(mech: MissingnessMechanism, d: int, values, *,
                          atol: float = 1e-12) -> bool:
    """Check the MAR definition on every record with entries in ``values``.

    For every mask m and every two records z, z' ∈ values^d that agree on obs(m), checks
    |P[F(z) = m] − P[F(z') = m]| ≤ ``atol`` (docs/THEORY.md §1). MCAR passes trivially.

    Parameters
    ----------
    mech : MissingnessMechanism
    d : int
        Record length, ≥ 1, with len(values)^d · 2^d small (the check is exhaustive).
    values : sequence of float
        The value set of each feature (at least one value).

    Returns
    -------
    bool
        True if the MAR identity holds on the whole grid.
    """
    d = check_positive_int(d, "d")
    vals = np.asarray(values, dtype=np.float64).reshape(-1)
    if vals.size == 0 or not np.all(np.isfinite(vals)):
        raise ValueError(f"values must be a non-empty finite sequence, got values={values!r}")
    if vals.size**d * 2**d > 5_000_000:
        raise ValueError(
            f"len(values)^d * 2^d must be <= 5e6 for the exhaustive check, got "
            f"{vals.size}^{d} * 2^{d}"
        )
    records = np.array(list(itertools.product(vals, repeat=d)), dtype=np.float64)
    weights = 1 << np.arange(d)
    table = np.zeros((records.shape[0], 1 << d))  # P[F(record) = mask], mask as an integer
    for r, z in enumerate(records):
        masks, probs = mech.mask_distribution(z)
        table[r, masks.astype(np.int64) @ weights] = probs
    for code, m in enumerate(all_masks(d)):
        obs = ~m
        groups: dict[bytes, float] = {}
        for r in range(records.shape[0]):
            key = records[r, obs].tobytes()
            p = table[r, code]
            if key in groups:
                if not math.isclose(groups[key], p, rel_tol=0.0, abs_tol=atol):
                    return False
            else:
                groups[key] = p
    return True


# The names these base classes had before they were public.
_Mechanism = Mechanism
_IndependentFeatures = IndependentFeatures
