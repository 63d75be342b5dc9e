"""The base classes of a missingness mechanism, and the record checks they share.

:class:`Mechanism` holds what every mechanism of :mod:`audit.model.missingness` shares (its
parameters as a config, its dimension check, the answers "no structured mask law" and "no extra
pair candidates"); :class:`IndependentFeatures` adds the mask law of a mechanism that masks
features independently given the record, from its per-feature missing rates alone. Both are
exported from :mod:`audit.model.missingness`; a new mechanism subclasses one of them
(docs/DESIGN.md, "How to add a missingness mechanism").
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np

from audit._validate import check_positive, check_positive_int
from audit.enums import MissingnessClass
from audit.model.catalogue import config_params
from audit.protocols import IndependentMasks, MaskStructure

__all__ = ["MAX_ENUM_D", "Mechanism", "IndependentFeatures", "all_masks"]

# Config names that differ from the dataclass field names (a field cannot share the name of
# the p_star(d) method).
_CONFIG_KEYS = {"p_star_value": "p_star"}

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


class Mechanism(abc.ABC):
    """Base class of a missingness mechanism (:class:`audit.protocols.MissingnessMechanism`).

    A subclass is a frozen dataclass whose fields are its parameters (validated in
    ``__post_init__``). It sets the class variable ``missing_class`` (MCAR, MAR or MNAR:
    what the amplification theorems may assume, so it must be true of the mask law) and
    implements

    - ``p_star(d)`` and ``rho(d)`` (their ranges: the protocol);
    - ``mask_distribution(record)``: the exact law of one record's mask;
    - ``sample_masks(records, rng=None)``: one mask per record.

    It may override ``_check_d(d)`` (a parameter that limits d, e.g. a pivot feature),
    ``mask_structure(record)`` (a law that needs no enumeration of the 2^d masks; the base
    answers None) and ``_pair_candidates(records, bound)`` (records a threshold moves, see
    :meth:`pair_candidates`; the base answers none). ``kind`` defaults to the class's import
    target ``"package.module:Class"``, the name :func:`make_missingness` builds it from.
    """

    kind: ClassVar[str]
    missing_class: ClassVar[MissingnessClass]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:  # a subclass of a built-in is a different mechanism
            cls.kind = f"{cls.__module__}:{cls.__qualname__}"

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

    @abc.abstractmethod
    def p_star(self, d: int) -> float:
        """P[a record of length d is at least partially observed], in [0, 1]."""

    @abc.abstractmethod
    def rho(self, d: int) -> float:
        """The largest observed fraction of a mask of positive probability, in [0, 1]."""

    @abc.abstractmethod
    def mask_distribution(self, record) -> tuple[np.ndarray, np.ndarray]:
        """``(masks (M, d) bool, probs (M,))``: the masks of positive probability."""

    @abc.abstractmethod
    def sample_masks(self, records, rng=None) -> np.ndarray:
        """One mask per row of ``records`` (N, d): bool (N, d), True = missing."""

    def mask_structure(self, record) -> MaskStructure | None:
        """The law of one record's mask in a form that needs no enumeration of the 2^d
        patterns (``None``: only :meth:`mask_distribution` describes it)."""
        return None

    def pair_candidates(self, records, bound: float) -> np.ndarray:
        """Extra differing records for the worst-case pair search.

        Parameters
        ----------
        records : array_like, shape (C, d)
            The query's candidate records (values in [−bound, bound], NaN = NA).
        bound : float
            Record bound B > 0.

        Returns
        -------
        ndarray, shape (K, d)
            Records whose mask probabilities differ from those of ``records`` (K ≥ 0), from
            the hook ``_pair_candidates(x, bound)``; the base class returns none.

        Raises
        ------
        ValueError
            If ``records`` is not a (C, d) array of finite values or NaN, d does not suit
            the mechanism, or ``bound`` is not positive.
        """
        x = _check_records(records)
        self._check_d(x.shape[1])
        B = check_positive(bound, "bound")
        return np.asarray(self._pair_candidates(x, B), dtype=np.float64).reshape(-1, x.shape[1])

    def _pair_candidates(self, x: np.ndarray, bound: float) -> np.ndarray:
        return np.empty((0, x.shape[1]))


class IndependentFeatures(Mechanism):
    """Base class of a mechanism that masks features independently given the record.

    A subclass implements ``_rates(x)``: for records ``x`` of shape (N, d) (finite, NA read
    as 0, d already checked by ``_check_d``) the probability that each feature is missing,
    shape (N, d) in [0, 1]; and ``p_star(d)``, ``rho(d)``. ``mask_distribution``,
    ``sample_masks`` and ``mask_structure`` (an :class:`IndependentMasks`, so separable
    queries never enumerate the 2^d masks) follow from it.
    """

    @abc.abstractmethod
    def _rates(self, x: np.ndarray) -> np.ndarray:
        """Per-feature missing probabilities (N, d) of records x (N, d), NaN read as 0."""

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
        if not q.any():  # nothing can go missing: no draw (the generator is left untouched)
            return np.zeros(x.shape, dtype=bool)
        return _rng(rng).random(x.shape) < q

    def mask_structure(self, record) -> IndependentMasks:
        z = np.asarray(record, dtype=np.float64)
        if z.ndim != 1 or z.shape[0] == 0 or np.any(np.isinf(z)):
            raise ValueError(f"record must be a finite (or NaN) vector, got shape {z.shape}")
        self._check_d(z.shape[0])
        return IndependentMasks(self._rates(np.nan_to_num(z, nan=0.0)[None, :])[0])
