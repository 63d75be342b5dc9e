"""Feature-wise Lipschitz (FWL) constants and the [RPS] query catalogue.

A query f is FWL w.r.t. a norm ‖·‖ with constants L_1..L_d if, for neighbours differing in
record i*,

    ‖f(z̃) − f(z̃')‖ ≤ Σ_j L_j |z̃_{i*}^{(j)} − z̃'_{i*}^{(j)}|     (NA read as 0)

([RPS] Definition 4.1, Section 4). With records bounded by ‖z‖∞ ≤ B every coordinate
difference is at most 2B, so

- C_p  = 2B Σ_j L_j                      worst-case sensitivity on complete data;
- C̃ₚ = 2B Σ_{j ≤ ⌊ρd⌋} L_(j)           when every mask leaves at most a fraction ρ of
  the features observed ([RPS] Lemma 4.4), L_(1) ≥ L_(2) ≥ … sorted descending.

The index p of C_p is the norm (1 or 2). An ℓ1-FWL query is also ℓ2-FWL with the same
constants ([RPS] Prop. C.1), so :meth:`FWLConstants.as_norm` can relax ℓ1 to ℓ2.

Catalogue ([RPS] Table 1 and Prop. C.2; closure: Prop. C.3, C.4). Every constructor takes the
record bound ``bound`` = B (default 1) as a keyword:

==================  =============================  ====  ================================
function            output                         norm  L_j
==================  =============================  ====  ================================
linear              Σ_i B_i z_i ∈ R^q              1/2   max_i ‖B_i e_j‖ (column norms)
sum_query           Σ_i Σ_j z_i^(j) ∈ R            1     1
vector_sum          Σ_i z_i ∈ R^d                  1     1
bounded_mean        (1/n) Σ_i z_i ∈ R^d            1     1/n
clipped_mean        (1/n) Σ_i clip_c(z_i) ∈ R^d    1     1/n  (B = c)
histogram           counts of one-hot categories   1     1    (B = 1)
second_moment       vec((1/n) Σ_i z_i z_iᵀ)        1     2Bd/n
projected_mean      A (1/n) Σ_i z_i ∈ R^q          2     ‖A e_j‖_2 / n
linear_combination  Σ_l a_l f_l                    same  Σ_l |a_l| L_j^(l)
postprocess         ψ ∘ f, ψ Λ-Lipschitz           same  Λ L_j
==================  =============================  ====  ================================
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from audit._validate import check_fraction, check_positive, check_positive_int, check_real

__all__ = [
    "FWLConstants",
    "observed_count",
    "rho_d_is_integer",
    "linear",
    "sum_query",
    "vector_sum",
    "bounded_mean",
    "clipped_mean",
    "histogram",
    "second_moment",
    "projected_mean",
    "linear_combination",
    "postprocess",
]


def _check_norm(norm: object) -> int:
    if isinstance(norm, bool) or norm not in (1, 2):
        raise ValueError(f"norm must be one of 1, 2, got norm={norm!r}")
    return int(norm)


# ρd within this of an integer counts as that integer (ρ = 0.3 is not exactly 3/10).
_RHO_D_TOL = 1e-9


def observed_count(rho: float, d: int) -> int:
    """⌊ρd⌋, robust to floating-point noise in ρ (e.g. ρ = 0.3, d = 10 gives 3, not 2).

    The one implementation of ⌊ρd⌋ ([RPS] Lemma 4.4): the bound table and
    :meth:`FWLConstants.sensitivity_under_rho` both use it.

    Parameters
    ----------
    rho : float
        In (0, 1].
    d : int
        Number of features, ≥ 1.

    Returns
    -------
    int
        floor(ρd + 1e-9), in [0, d].
    """
    r, dd = check_fraction(rho, "rho"), check_positive_int(d, "d")
    return min(dd, int(math.floor(r * dd + _RHO_D_TOL)))


def rho_d_is_integer(rho: float, d: int) -> bool:
    """Whether ρd is an integer within the tolerance of :func:`observed_count` (same
    parameters), as [RPS] Corollary 4.6 requires."""
    r, dd = check_fraction(rho, "rho"), check_positive_int(d, "d")
    return abs(r * dd - round(r * dd)) <= _RHO_D_TOL


@dataclass(frozen=True, eq=False)
class FWLConstants:
    """FWL description of a query: norm, feature-wise constants and record bound.

    Parameters
    ----------
    norm : int
        1 or 2: the norm in which the query's output difference is measured.
    lipschitz : ndarray, shape (d,)
        Feature-wise Lipschitz constants L_j ≥ 0, finite, at least one positive.
    bound : float
        B > 0 with every observed feature value in [−B, B] (NA reads as 0).

    Raises
    ------
    ValueError
        On a bad norm, negative/non-finite/all-zero constants or a non-positive bound.

    References
    ----------
    [RPS] Definition 4.1, Lemma 4.4.
    """

    norm: int
    lipschitz: np.ndarray
    bound: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "norm", _check_norm(self.norm))
        L = np.array(self.lipschitz, dtype=np.float64)
        if L.ndim != 1 or L.size == 0:
            raise ValueError(
                f"lipschitz must be a non-empty 1-D array, got shape {np.shape(self.lipschitz)}"
            )
        if not np.all(np.isfinite(L)) or np.any(L < 0):
            raise ValueError(f"lipschitz must be finite and >= 0, got lipschitz={L}")
        if not np.any(L > 0):
            raise ValueError("lipschitz must have at least one positive entry, got all zeros")
        L.setflags(write=False)
        object.__setattr__(self, "lipschitz", L)
        object.__setattr__(self, "bound", check_positive(self.bound, "bound"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FWLConstants):
            return NotImplemented
        return (
            self.norm == other.norm
            and self.bound == other.bound
            and np.array_equal(self.lipschitz, other.lipschitz)
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def d(self) -> int:
        """Number of features."""
        return int(self.lipschitz.shape[0])

    def sensitivity(self) -> float:
        """C_p = 2B Σ_j L_j ([RPS] Section 4, complete-data worst case)."""
        return float(2.0 * self.bound * self.lipschitz.sum())

    def sensitivity_under_rho(self, rho: float) -> float:
        """C̃ₚ = 2B Σ_{j ≤ ⌊ρd⌋} L_(j), L sorted descending ([RPS] Lemma 4.4).

        Parameters
        ----------
        rho : float
            In (0, 1]: every mask leaves at most ⌊ρd⌋ features observed (almost surely).

        Returns
        -------
        float
            C̃ₚ (0 when ⌊ρd⌋ = 0: the record is never observed at all).
        """
        k = observed_count(rho, self.d)
        top = np.sort(self.lipschitz)[::-1][:k]
        return float(2.0 * self.bound * top.sum())

    def ratio(self, rho: float) -> float:
        """C̃ₚ / C_p ∈ [0, 1]; equals ⌊ρd⌋/d when all L_j are equal ([RPS] Table 1)."""
        return min(1.0, self.sensitivity_under_rho(rho) / self.sensitivity())

    def as_norm(self, norm: int) -> FWLConstants:
        """The same constants under another norm; only ℓ1 → ℓ2 (or identity) is valid.

        Raises
        ------
        ValueError
            For ℓ2 → ℓ1, which does not hold in general.

        References
        ----------
        [RPS] Prop. C.1 (ℓ1-FWL implies ℓp-FWL, p > 1, same constants).
        """
        n = _check_norm(norm)
        if n == self.norm or (self.norm == 1 and n == 2):
            return FWLConstants(n, self.lipschitz, self.bound)
        raise ValueError(f"norm must be >= the query's norm {self.norm}, got norm={norm!r}")


# ----------------------------------------------------------------------------- catalogue
def linear(matrices: np.ndarray, norm: int = 1, *, bound: float = 1.0) -> FWLConstants:
    """Linear query f(z̃) = Σ_i B_i z̃_i.

    Parameters
    ----------
    matrices : ndarray, shape (n, q, d) or (q, d)
        Per-record matrices B_i, or one matrix B shared by every record.
    norm : int
        1 or 2: the output norm; L_j is the column norm of the same index.
    bound : float
        Record bound B > 0.

    Returns
    -------
    FWLConstants
        L_j = max_i ‖B_i e_j‖_norm.

    References
    ----------
    [RPS] Prop. C.2 (L) for ℓ1; the ℓ2 case follows from the same triangle inequality.
    """
    nrm = _check_norm(norm)
    M = np.asarray(matrices, dtype=np.float64)
    if M.ndim == 2:
        M = M[None]
    if M.ndim != 3 or 0 in M.shape:
        raise ValueError(
            f"matrices must have shape (n, q, d) or (q, d), got shape {np.shape(matrices)}"
        )
    if not np.all(np.isfinite(M)):
        raise ValueError("matrices must be finite")
    cols = np.linalg.norm(M, ord=nrm, axis=1)  # (n, d): ‖B_i e_j‖
    return FWLConstants(nrm, cols.max(axis=0), bound)


def sum_query(d: int, *, bound: float = 1.0) -> FWLConstants:
    """Scalar sum f(z̃) = Σ_i Σ_j z̃_i^(j): ℓ1, L_j = 1, C_1 = 2Bd.

    References
    ----------
    [RPS] Prop. C.2 (L) with B_i = 1ᵀ (a 1 × d row of ones).
    """
    dd = check_positive_int(d, "d")
    return FWLConstants(1, np.ones(dd), bound)


def vector_sum(d: int, *, bound: float = 1.0) -> FWLConstants:
    """Vector sum f(z̃) = Σ_i z̃_i ∈ R^d: ℓ1, L_j = 1, C_1 = 2Bd.

    References
    ----------
    [RPS] Prop. C.2 (L) with B_i = I_d.
    """
    dd = check_positive_int(d, "d")
    return FWLConstants(1, np.ones(dd), bound)


def bounded_mean(n: int, d: int, *, bound: float = 1.0) -> FWLConstants:
    """Mean of bounded vectors f(z̃) = (1/n) Σ_i z̃_i ∈ R^d: ℓ1, L_j = 1/n, C_1 = 2Bd/n.

    References
    ----------
    [RPS] Table 1 ("mean of bounded vectors"), Prop. C.2 (L) with B_i = I_d / n.
    """
    nn = check_positive_int(n, "n")
    dd = check_positive_int(d, "d")
    return FWLConstants(1, np.full(dd, 1.0 / nn), bound)


def clipped_mean(n: int, d: int, clip: float) -> FWLConstants:
    """Coordinate-wise clipped mean f(z̃) = (1/n) Σ_i clip_c(z̃_i), clip_c(x) = max(−c, min(c, x)).

    The raw records need not be bounded: the query only reads clipped values, NA (read as 0)
    lies inside [−c, c], and clipping is 1-Lipschitz per coordinate, so the FWL argument holds
    with B = c: ℓ1, L_j = 1/n, C_1 = 2cd/n.

    Parameters
    ----------
    n, d : int
        Number of records and features, ≥ 1.
    clip : float
        Clipping level c > 0 (plays the role of B).

    References
    ----------
    [RPS] Table 1 ("coordinate-wise clipped mean", Duchi et al. 2018); Prop. C.2 (L) composed
    with the coordinate-wise 1-Lipschitz clip.
    """
    nn = check_positive_int(n, "n")
    dd = check_positive_int(d, "d")
    c = check_positive(clip, "clip")
    return FWLConstants(1, np.full(dd, 1.0 / nn), c)


def histogram(n_categories: int) -> FWLConstants:
    """Histogram of one categorical attribute encoded one-hot: f(z̃) = Σ_i z̃_i ∈ R^K.

    Each record is a one-hot vector in {0, 1}^K (K = ``n_categories`` features, one indicator
    per category); a missing indicator reads as 0, so a record with its 1 masked simply drops
    out of the counts. The query is the vector sum of the indicators: ℓ1, L_j = 1, and the
    features are bounded by B = 1, giving the FWL worst case C_1 = 2K and C̃₁ = 2⌊ρK⌋.

    Notes
    -----
    FWL does not see the one-hot constraint: the classical substitution sensitivity of a
    histogram is 2 (one count moves between two bins), far below C_1 = 2K. A mechanism
    calibrated with b = C_1/ε as in [RPS] Theorem 4.5 is therefore much noisier than the
    usual histogram mechanism; the amplification factor ≈ p*ρ of [RPS] Table 1 is relative
    to that calibration. (Since {0, 1} ∪ NA differences never exceed 1, B = 1/2 would also
    be valid; B = 1 keeps the ‖z‖∞ ≤ B convention of docs/THEORY.md §1. Both choices give the same
    ratio C̃₁/C_1 = ⌊ρK⌋/K.)

    References
    ----------
    [RPS] Table 1 ("histograms / marginals", Barak et al. 2007), Prop. C.2 (L), B_i = I_K.
    """
    k = check_positive_int(n_categories, "n_categories")
    return FWLConstants(1, np.ones(k), 1.0)


def second_moment(n: int, d: int, *, bound: float = 1.0) -> FWLConstants:
    """Second moment / uncentred covariance, vectorised: vec((1/n) Σ_i z̃_i z̃_iᵀ) ∈ R^{d²}.

    ℓ1, L_j = 2Bd/n: entry (j, k) of z zᵀ − z' z'ᵀ is (z_j − z'_j) z_k + z'_j (z_k − z'_k),
    and Σ_k |z_k| ≤ Bd. Hence C_1 = 4B²d²/n.

    References
    ----------
    [RPS] Prop. C.2 (Q). ([RPS] Table 1 lists this query under ℓ2; the ℓ1 constants of
    Prop. C.2 imply ℓ2 ones by Prop. C.1, see :meth:`FWLConstants.as_norm`.)
    """
    nn = check_positive_int(n, "n")
    dd = check_positive_int(d, "d")
    B = check_positive(bound, "bound")
    return FWLConstants(1, np.full(dd, 2.0 * B * dd / nn), B)


def projected_mean(n: int, A: np.ndarray, *, bound: float = 1.0) -> FWLConstants:
    """Mean followed by a linear projection, f(z̃) = A (1/n) Σ_i z̃_i ∈ R^q: ℓ2.

    Parameters
    ----------
    n : int
        Number of records, ≥ 1.
    A : ndarray, shape (q, d)
        Projection matrix (finite).
    bound : float
        Record bound B > 0.

    Returns
    -------
    FWLConstants
        L_j = ‖A e_j‖_2 / n (column norms). This is never larger than the post-processing
        constant ‖A‖_op / n of [RPS] Prop. C.4 applied to the mean.

    References
    ----------
    [RPS] Table 1 ("mean + linear projection", Dwork & Roth 2014); Prop. C.2 (L) in ℓ2.
    """
    nn = check_positive_int(n, "n")
    M = np.asarray(A, dtype=np.float64)
    if M.ndim != 2 or 0 in M.shape:
        raise ValueError(f"A must have shape (q, d), got shape {np.shape(A)}")
    return linear(M / nn, norm=2, bound=bound)


def linear_combination(terms: Iterable[tuple[float, FWLConstants]]) -> FWLConstants:
    """FWL constants of f = Σ_l a_l f_l: L_j = Σ_l |a_l| L_j^(l).

    Parameters
    ----------
    terms : iterable of (float, FWLConstants)
        Non-empty; every term must share the norm, the number of features and the bound, and
        at least one a_l must be non-zero.

    Raises
    ------
    ValueError
        On an empty list, mismatched norm/d/bound, a non-finite coefficient, or all a_l = 0.

    References
    ----------
    [RPS] Prop. C.3.
    """
    items = list(terms)
    if not items:
        raise ValueError("terms must be a non-empty list of (coefficient, FWLConstants)")
    first = None
    total = None
    for idx, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise ValueError(f"terms[{idx}] must be a (coefficient, FWLConstants) pair")
        a, c = item
        a = check_real(f"terms[{idx}] coefficient", a)
        if not isinstance(c, FWLConstants):
            raise ValueError(f"terms[{idx}] must hold an FWLConstants, got {type(c).__name__}")
        if first is None:
            first = c
            total = np.zeros(c.d)
        elif c.norm != first.norm or c.d != first.d or c.bound != first.bound:
            raise ValueError(
                f"terms must share norm, d and bound; terms[0] has "
                f"(norm={first.norm}, d={first.d}, bound={first.bound}), terms[{idx}] has "
                f"(norm={c.norm}, d={c.d}, bound={c.bound})"
            )
        total = total + abs(a) * c.lipschitz
    if not np.any(total > 0):
        raise ValueError("terms coefficients must not all be zero")
    return FWLConstants(first.norm, total, first.bound)


def postprocess(constants: FWLConstants, Lambda: float) -> FWLConstants:
    """FWL constants of ψ ∘ f with ψ Λ-Lipschitz in the query's norm: L_j → Λ L_j.

    Parameters
    ----------
    constants : FWLConstants
        Constants of f.
    Lambda : float
        Lipschitz constant Λ > 0 of ψ (w.r.t. ``constants.norm`` on both sides).

    References
    ----------
    [RPS] Prop. C.4.
    """
    if not isinstance(constants, FWLConstants):
        raise ValueError(
            f"constants must be an FWLConstants, got constants={type(constants).__name__}"
        )
    lam = check_positive(Lambda, "Lambda")
    return FWLConstants(constants.norm, lam * constants.lipschitz, constants.bound)
