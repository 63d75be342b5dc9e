"""The query catalogue of [RPS] Table 1, evaluated on incomplete data with NA read as 0.

Every catalogue query is a sum of per-record contributions, f(x) = Σ_i g(x_i) (means carry
their 1/n inside g), with g(0) = 0: a record that is entirely NA (or zero) contributes
nothing. ``contributions(rows, n)`` returns g row by row; ``evaluate(x)`` sums them over the
n records of a dataset. The FWL constants come from :mod:`audit.theory.fwl`.

=================  ==============================  =============  ====  ===============
name               f(x)                            output_dim(d)  norm  L_j
=================  ==============================  =============  ====  ===============
sum                Σ_i Σ_j x_ij                    1              1     1
linear             Σ_i W x_i (W (d,) or (q, d))    1 or q         1/2   column norms
vector-sum         Σ_i x_i                         d              1     1
bounded-mean       (1/n) Σ_i x_i                   d              1     1/n
clipped-mean       (1/n) Σ_i clip_c(x_i)           d              1     1/n (B = c)
histogram          Σ_i x_i, x_i one-hot            d              1     1   (B = 1)
second-moment      vec((1/n) Σ_i x_i x_iᵀ)         d²             1     2Bd/n
projected-mean     A (1/n) Σ_i x_i                 q              2     ‖A e_j‖₂/n
=================  ==============================  =============  ====  ===============
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from audit._validate import check_positive, check_positive_int
from audit.model.catalogue import build, config_params
from audit.protocols import Query
from audit.theory import fwl

__all__ = [
    "SumQuery",
    "LinearQuery",
    "VectorSum",
    "BoundedMean",
    "ClippedMean",
    "Histogram",
    "SecondMoment",
    "ProjectedMean",
    "QUERY_KINDS",
    "make_query",
]


def _as_data(x: object, name: str = "x") -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{name} must have shape (n, d) with n, d >= 1, got shape {a.shape}")
    if np.any(np.isinf(a)):
        raise ValueError(f"{name} must be finite or NaN (NA)")
    return np.nan_to_num(a, nan=0.0)


class _Query:
    """Shared behaviour of the catalogue (an :class:`audit.protocols.Query`); subclasses are
    frozen dataclasses."""

    name: ClassVar[str]
    #: Output norm of the FWL constants (1 or 2).
    norm: ClassVar[int] = 1

    def output_dim(self, d: int) -> int:
        """Length of the output for records of length ``d``."""
        raise NotImplementedError  # pragma: no cover

    def _g(self, rows: np.ndarray, n: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover

    def _check_d(self, d: int) -> int:
        return check_positive_int(d, "d")

    def check_dimension(self, d: int) -> int:
        """Check that the query is defined on records of length ``d``; return d."""
        return self._check_d(d)

    def contributions(self, rows, n: int) -> np.ndarray:
        """Per-record contributions g(x_i), shape (M, output_dim(d)); NA (NaN) read as 0.

        Parameters
        ----------
        rows : array_like, shape (M, d)
        n : int
            Dataset size (enters the means' 1/n), ≥ 1.
        """
        n = check_positive_int(n, "n")
        r = _as_data(rows, "rows")
        self._check_d(r.shape[1])
        return self._g(r, n)

    def evaluate(self, x) -> np.ndarray:
        """f(x) for a dataset x of shape (n, d), NA (NaN) read as 0; shape (output_dim(d),)."""
        a = _as_data(x)
        self._check_d(a.shape[1])
        return self._g(a, a.shape[0]).sum(axis=0)

    def fwl_constants(self, n: int, d: int, bound: float) -> fwl.FWLConstants:
        """FWL constants for n records of d features bounded by ``bound`` ([RPS] Table 1)."""
        raise NotImplementedError  # pragma: no cover

    def candidate_records(self, d: int, bound: float) -> np.ndarray:
        """Records of the domain used by the worst-case pair search: corners of [−B, B]^d
        (all +B, all −B, half and half, alternating, and their sign flips) and single-feature
        ±B records."""
        d = self._check_d(d)
        B = check_positive(bound, "bound")
        half = np.where(np.arange(d) < (d + 1) // 2, B, -B)
        alt = np.where(np.arange(d) % 2 == 0, B, -B)
        cands = [np.full(d, B), np.full(d, -B), half, -half, alt, -alt, np.zeros(d)]
        for j in range(min(d, 3)):
            e = np.zeros(d)
            e[j] = B
            cands.append(e)
            cands.append(-e)
        return np.unique(np.array(cands), axis=0)

    def separable_values(self, record, n: int) -> np.ndarray | None:
        """For a query whose output coordinate j reads feature j alone and is 0 when that
        feature is missing: the output of a dataset whose only non-zero record is ``record``
        with every feature observed (NA read as 0), shape (d,). ``None`` for other queries.

        Then masking feature j sets output coordinate j to 0, so the law of the output over
        the record's masks factorises coordinate by coordinate (``audit.laws``).
        """
        return None

    def _separable(self, record, n: int) -> np.ndarray:
        row = np.asarray(record, dtype=np.float64).reshape(1, -1)
        return self.contributions(row, n)[0]

    def params(self) -> dict:
        """Every parameter under its config key (``make_query(name, **params())`` rebuilds)."""
        return config_params(self, _CONFIG_KEYS)


@dataclass(frozen=True, eq=False)
class SumQuery(_Query):
    """Scalar sum Σ_i Σ_j x_ij."""

    name: ClassVar[str] = "sum"

    def output_dim(self, d: int) -> int:
        self._check_d(d)
        return 1

    def _g(self, rows, n):
        return rows.sum(axis=1, keepdims=True)

    def fwl_constants(self, n, d, bound):
        check_positive_int(n, "n")
        return fwl.sum_query(d, bound=bound)


@dataclass(frozen=True, eq=False)
class LinearQuery(_Query):
    """Linear query Σ_i W x_i with a shared weight vector (d,) (scalar output) or matrix
    (q, d) (vector output). FWL in ℓ``norm`` with L_j = ‖W e_j‖_norm."""

    weights: np.ndarray
    norm_index: int = 1
    name: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        W = np.asarray(self.weights, dtype=np.float64)
        if W.ndim not in (1, 2) or 0 in W.shape or not np.all(np.isfinite(W)):
            raise ValueError(
                f"weights must be a finite array of shape (d,) or (q, d), got shape {W.shape}"
            )
        if self.norm_index not in (1, 2):
            raise ValueError(f"norm must be in {{1, 2}}, got norm={self.norm_index!r}")
        object.__setattr__(self, "weights", W)

    @property
    def norm(self) -> int:  # type: ignore[override]
        return self.norm_index

    @property
    def _matrix(self) -> np.ndarray:
        return self.weights if self.weights.ndim == 2 else self.weights[None, :]

    def _check_d(self, d):
        d = check_positive_int(d, "d")
        if d != self._matrix.shape[1]:
            raise ValueError(f"d must equal weights.shape[-1]={self._matrix.shape[1]}, got d={d}")
        return d

    def output_dim(self, d):
        self._check_d(d)
        return self._matrix.shape[0]

    def _g(self, rows, n):
        return rows @ self._matrix.T

    def fwl_constants(self, n, d, bound):
        check_positive_int(n, "n")
        self._check_d(d)
        return fwl.linear(self._matrix, norm=self.norm_index, bound=bound)

    def candidate_records(self, d: int, bound: float) -> np.ndarray:
        """The generic corners plus ±B·sign(w) for each weight row: the pair of records that
        maximises that output coordinate's difference."""
        base = super().candidate_records(d, bound)
        signs = np.sign(self._matrix) * check_positive(bound, "bound")
        return np.unique(np.concatenate([base, signs, -signs]), axis=0)


class _Coordinatewise(_Query):
    """Output coordinate j is g_j(x_ij) summed over records, with g_j(0) = 0: a separable
    query (its law over masks factorises, ``audit.laws``); output dimension d."""

    def output_dim(self, d):
        return self._check_d(d)

    def separable_values(self, record, n: int) -> np.ndarray:
        return self._separable(record, n)


@dataclass(frozen=True, eq=False)
class VectorSum(_Coordinatewise):
    """Vector sum Σ_i x_i ∈ R^d."""

    name: ClassVar[str] = "vector-sum"

    def _g(self, rows, n):
        return rows.copy()

    def fwl_constants(self, n, d, bound):
        check_positive_int(n, "n")
        return fwl.vector_sum(d, bound=bound)


@dataclass(frozen=True, eq=False)
class BoundedMean(_Coordinatewise):
    """Mean of bounded vectors (1/n) Σ_i x_i ∈ R^d."""

    name: ClassVar[str] = "bounded-mean"

    def _g(self, rows, n):
        return rows / n

    def fwl_constants(self, n, d, bound):
        return fwl.bounded_mean(n, d, bound=bound)


@dataclass(frozen=True, eq=False)
class ClippedMean(_Coordinatewise):
    """Coordinate-wise clipped mean (1/n) Σ_i clip_c(x_i); the FWL bound is min(B, c): a
    clipped feature of a record bounded by B lies in [−min(B, c), min(B, c)]."""

    clip: float = 1.0
    name: ClassVar[str] = "clipped-mean"

    def __post_init__(self) -> None:
        object.__setattr__(self, "clip", check_positive(self.clip, "clip"))

    def _g(self, rows, n):
        return np.clip(rows, -self.clip, self.clip) / n

    def fwl_constants(self, n, d, bound):
        return fwl.clipped_mean(n, d, min(self.clip, check_positive(bound, "bound")))


@dataclass(frozen=True, eq=False)
class Histogram(_Coordinatewise):
    """Histogram of one categorical attribute encoded one-hot over the d features: the
    vector of counts Σ_i x_i. Records should be one-hot (or all NA)."""

    name: ClassVar[str] = "histogram"

    def _g(self, rows, n):
        return rows.copy()

    def fwl_constants(self, n, d, bound):
        check_positive_int(n, "n")
        return fwl.histogram(d)

    def candidate_records(self, d, bound):
        """The one-hot records e_k and the zero record."""
        d = self._check_d(d)
        return np.vstack([np.eye(d), np.zeros((1, d))])


@dataclass(frozen=True, eq=False)
class SecondMoment(_Query):
    """Second moment vec((1/n) Σ_i x_i x_iᵀ) ∈ R^{d²} (row-major vectorisation)."""

    name: ClassVar[str] = "second-moment"

    def output_dim(self, d):
        d = self._check_d(d)
        return d * d

    def _g(self, rows, n):
        M, d = rows.shape
        return (rows[:, :, None] * rows[:, None, :]).reshape(M, d * d) / n

    def fwl_constants(self, n, d, bound):
        return fwl.second_moment(n, d, bound=bound)


@dataclass(frozen=True, eq=False)
class ProjectedMean(_Query):
    """Mean followed by a linear projection A (1/n) Σ_i x_i ∈ R^q (ℓ2)."""

    A: np.ndarray
    name: ClassVar[str] = "projected-mean"
    norm: ClassVar[int] = 2

    def __post_init__(self) -> None:
        A = np.asarray(self.A, dtype=np.float64)
        if A.ndim != 2 or 0 in A.shape or not np.all(np.isfinite(A)):
            raise ValueError(f"A must be a finite array of shape (q, d), got shape {A.shape}")
        object.__setattr__(self, "A", A)

    def _check_d(self, d):
        d = check_positive_int(d, "d")
        if d != self.A.shape[1]:
            raise ValueError(f"d must equal A.shape[1]={self.A.shape[1]}, got d={d}")
        return d

    def output_dim(self, d):
        self._check_d(d)
        return self.A.shape[0]

    def _g(self, rows, n):
        return rows @ self.A.T / n

    def fwl_constants(self, n, d, bound):
        self._check_d(d)
        return fwl.projected_mean(n, self.A, bound=bound)


QUERY_KINDS: dict[str, type[_Query]] = {
    cls.name: cls
    for cls in (
        SumQuery, LinearQuery, VectorSum, BoundedMean, ClippedMean, Histogram, SecondMoment,
        ProjectedMean,
    )
}

# Config names that differ from the dataclass field names.
_CONFIG_KEYS = {"norm_index": "norm"}


def make_query(name: str, **params) -> Query:
    """Build a catalogue query from its config name (``QUERY_KINDS``) and parameters.

    Raises
    ------
    ValueError
        Unknown name, unknown parameter, missing required parameter or a bad value.

    Examples
    --------
    A missing entry (NaN) is read as 0:

    >>> import numpy as np
    >>> x = np.array([[1.0, np.nan], [0.5, -0.25]])
    >>> make_query("sum").evaluate(x)
    array([1.25])
    >>> make_query("vector-sum").evaluate(x), make_query("vector-sum").output_dim(2)
    (array([ 1.5 , -0.25]), 2)
    >>> make_query("linear", weights=[1.0, 0.0]).evaluate(x)
    array([1.5])
    >>> make_query("sum").fwl_constants(2, 2, 1.0).lipschitz
    array([1., 1.])
    """
    return build(QUERY_KINDS, name, params, what="query", param="query",
                 config_keys=_CONFIG_KEYS)
