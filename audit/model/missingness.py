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
- ``sample_masks(records, rng)``: one mask per record, plain numpy.

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
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_positive_int, check_probability, check_real
from audit.enums import MissingnessClass
from audit.model.catalogue import build, config_params

__all__ = [
    "MissingnessClass",
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
]

MAX_ENUM_D = 20


def all_masks(d: int) -> np.ndarray:
    """All 2^d masks as a (2^d, d) bool array; row i has bit j of i in column j."""
    d = check_positive_int(d, "d")
    if d > MAX_ENUM_D:
        raise ValueError(f"d must be in [1, {MAX_ENUM_D}] for enumeration, got d={d}")
    idx = np.arange(1 << d, dtype=np.int64)
    return ((idx[:, None] >> np.arange(d)) & 1).astype(bool)


def _check_records(records: object) -> np.ndarray:
    x = np.asarray(records, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"records must have shape (n, d) with d >= 1, got shape {x.shape}")
    if np.any(np.isinf(x)):
        raise ValueError("records must be finite or NaN (NA)")
    return x


def _check_record(record: object) -> np.ndarray:
    z = np.asarray(record, dtype=np.float64)
    if z.ndim != 1 or z.shape[0] == 0:
        raise ValueError(f"record must have shape (d,) with d >= 1, got shape {z.shape}")
    if z.shape[0] > MAX_ENUM_D:
        raise ValueError(
            f"record length d must be in [1, {MAX_ENUM_D}] for enumeration, got d={z.shape[0]}"
        )
    if np.any(np.isinf(z)):
        raise ValueError("record must be finite or NaN (NA)")
    return z


def _rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


@dataclass(frozen=True, eq=False)
class IndependentMasks:
    """Features missing independently: feature j with probability ``rates[j]``."""

    rates: np.ndarray


@dataclass(frozen=True)
class FixedCountMasks:
    """With probability ``p_observed`` a uniformly random set of exactly ``observed``
    features is observed, otherwise none."""

    observed: int
    p_observed: float


MaskStructure = IndependentMasks | FixedCountMasks


class _Mechanism:
    """Shared behaviour; subclasses are frozen dataclasses."""

    kind: ClassVar[str]
    missing_class: ClassVar[MissingnessClass]

    def params(self) -> dict:
        """Every parameter under its config key, defaults included
        (``make_missingness(kind, **params())`` rebuilds the mechanism)."""
        return config_params(self, _CONFIG_KEYS)

    def _check_d(self, d: int) -> int:
        """Mechanisms with per-feature parameters (a pivot, a fixed count) override this."""
        return check_positive_int(d, "d")

    def check_dimension(self, d: int) -> int:
        """Check that the mechanism is defined for records of length ``d``; return d."""
        return self._check_d(d)

    def p_star(self, d: int) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def rho(self, d: int) -> float:  # pragma: no cover - overridden
        raise NotImplementedError

    def mask_distribution(self, record) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover

    def sample_masks(self, records, rng=None) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def mask_structure(self, record) -> MaskStructure | None:
        """The law of one record's mask in a form that needs no enumeration of the 2^d
        patterns (``None``: only :meth:`mask_distribution` describes it)."""
        return None


class _IndependentFeatures(_Mechanism):
    """Features masked independently given the record, with rates ``_rates(records)``."""

    def _rates(self, x: np.ndarray) -> np.ndarray:  # (N, d) values, NaN read as 0
        raise NotImplementedError  # pragma: no cover

    def mask_distribution(self, record) -> tuple[np.ndarray, np.ndarray]:
        z = _check_record(record)
        self._check_d(z.shape[0])
        q = self._rates(np.nan_to_num(z, nan=0.0)[None, :])[0]
        masks = all_masks(z.shape[0])
        probs = np.prod(np.where(masks, q, 1.0 - q), axis=1)
        keep = probs > 0
        return masks[keep], probs[keep]

    def sample_masks(self, records, rng=None) -> np.ndarray:
        x = _check_records(records)
        self._check_d(x.shape[1])
        q = self._rates(np.nan_to_num(x, nan=0.0))
        return _rng(rng).random(x.shape) < q

    def mask_structure(self, record) -> IndependentMasks:
        z = np.asarray(record, dtype=np.float64)
        if z.ndim != 1 or z.shape[0] == 0 or np.any(np.isinf(z)):
            raise ValueError(f"record must be a finite (or NaN) vector, got shape {z.shape}")
        self._check_d(z.shape[0])
        return IndependentMasks(self._rates(np.nan_to_num(z, nan=0.0)[None, :])[0])


@dataclass(frozen=True)
class MCARIid(_IndependentFeatures):
    """Every feature missing independently with probability ``rate`` (MCAR)."""

    rate: float = 0.3
    kind: ClassVar[str] = "mcar-iid"
    missing_class: ClassVar[MissingnessClass] = MissingnessClass.MCAR

    def __post_init__(self) -> None:
        object.__setattr__(self, "rate", check_probability(self.rate, "rate"))

    def _rates(self, x):
        return np.full(x.shape, self.rate)

    def p_star(self, d: int) -> float:
        d = check_positive_int(d, "d")
        return 1.0 - self.rate**d

    def rho(self, d: int) -> float:
        check_positive_int(d, "d")
        return 1.0 if self.rate < 1.0 else 0.0


@dataclass(frozen=True)
class NeverMask(_IndependentFeatures):
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
class MARPivot(_IndependentFeatures):
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


@dataclass(frozen=True)
class MNARValue(_IndependentFeatures):
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
class MCARFixed(_Mechanism):
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
class MCARRow(_Mechanism):
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
class MARMonotone(_Mechanism):
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


MISSINGNESS_KINDS: dict[str, type[_Mechanism]] = {
    cls.kind: cls
    for cls in (MCARIid, MCARFixed, MCARRow, MARPivot, MARMonotone, NeverMask, MNARValue)
}

# Config names that differ from the dataclass field names (a field cannot share the name of
# the p_star(d) method), and short aliases accepted on input.
_CONFIG_KEYS = {"p_star_value": "p_star"}
_ALIASES = {"r": "rate", "k": "observed"}


def make_missingness(kind: str, **params) -> _Mechanism:
    """Build a mechanism from its config name and parameters.

    Parameters
    ----------
    kind : str
        One of ``MISSINGNESS_KINDS`` (``"mcar-iid"``, ``"mcar-fixed"``, ``"mcar-row"``,
        ``"mar-pivot"``, ``"mar-monotone"``, ``"never-mask"``, ``"mnar-value"``).
    **params
        The mechanism's parameters (``p_star`` is accepted for ``p_star_value``, ``r`` for
        ``rate``, ``k`` for ``observed``).

    Raises
    ------
    ValueError
        Unknown kind, unknown parameter, or a parameter out of range.
    """
    return build(MISSINGNESS_KINDS, kind, params, what="missingness kind", param="kind",
                 config_keys=_CONFIG_KEYS, aliases=_ALIASES)


def is_mar_by_enumeration(mech: _Mechanism, d: int, values, *, atol: float = 1e-12) -> bool:
    """Check the MAR definition on every record with entries in ``values``.

    For every mask m and every two records z, z' ∈ values^d that agree on obs(m), checks
    |P[F(z) = m] − P[F(z') = m]| ≤ ``atol`` (docs/THEORY.md §1). MCAR passes trivially.

    Parameters
    ----------
    mech : mechanism
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
