"""Imputation before a Laplace sum: the sensitivity of the imputed sum, and the exact ε of the
audited pairs (docs/THEORY.md §11).

A table of n records, one released column with values in [lo, hi] (width W = hi − lo), m of
its entries missing and k = n − m observed. An imputer fills the m entries from the observed
ones; the release is the sum of the filled column plus Laplace noise of scale b = W/ε, the
noise a user calibrates for a sum *ignoring imputation* (one record moves a clipped sum by at
most W). The neighbouring relation is the substitution of one record observed on both sides
(which entries are missing is the same in the two tables).

- Mean imputation: the filled sum is Σ_obs x + m·mean_obs = n·mean_obs, so one substitution
  moves it by at most n·W/k (:func:`mean_imputed_sum_sensitivity`): ε·n/(n − m).
- Median imputation: the median of k observed values moves by at most W (k odd) or W/2
  (k even), in the direction of the substituted value, so the filled sum moves by at most
  W·(1 + m) or W·(1 + m/2) (:func:`median_imputed_sum_sensitivity`).
- A shift Δ of the Laplace law of scale b is exactly Δ/b-DP (:func:`laplace_shift_epsilon`),
  so an attained sensitivity gives the pair's exact ε.
- A mixture over shifts (random hot-deck: the differing record is the donor of C ~
  Binomial(m, 1/k) of the m entries): :func:`laplace_mixture_epsilon`.
- Two independent Laplace noises of scales b1, b2 added to a sum shifted by Δ: the law is a
  shift of a log-concave density whose log-slope is at most 1/max(b1, b2) in absolute value and
  attains it in the tails, so the exact ε is Δ / max(b1, b2) (:func:`two_laplace_shift_epsilon`).
- Gaussian noise of standard deviation σ: a shift Δ is exactly μ-GDP with μ = Δ/σ, so the
  exact ε at δ is the Gaussian profile's ε_μ(δ) (:func:`gaussian_shift_epsilon`).
- A MAR mask whose rate is strictly between 0 and 1 (each of the m incomplete records missing
  with probability q, independently): mean imputation's filled sum is n·x₀/(n − M) with
  M ~ Binomial(m, q) missing, a mixture over shifts (:func:`mean_mar_pair_epsilon`).
- A mean over the n filled entries (n public) with the sum's noise divided by n is a
  rescaling of the sum: the same ε.

References
----------
S. Das, J. Drechsler, K. Merrill, S. Merrill, *Imputation under Differential Privacy*,
arXiv:2206.15063 (2022): non-private imputation makes a query's sensitivity grow with the
number of imputed entries.
"""

from __future__ import annotations

import math

import numpy as np

from audit._validate import check_in_range, check_positive, check_positive_int
from audit.noise import GaussianNoise

__all__ = ["mean_imputed_sum_sensitivity", "median_imputed_sum_sensitivity",
           "knn_imputed_sum_shift", "laplace_shift_epsilon", "laplace_mixture_epsilon",
           "two_laplace_shift_epsilon", "hot_deck_pair_epsilon",
           "private_public_count_pair_epsilon", "gaussian_shift_epsilon",
           "mean_mar_pair_epsilon", "pair_epsilon", "EXACT_IMPUTERS", "SHIFT_IMPUTERS"]

#: the imputers whose audited pair has an exact ε here (:func:`pair_epsilon`)
EXACT_IMPUTERS = ("mean", "median", "most_frequent", "knn", "hot_deck")
#: the imputers whose audited pair moves the filled sum by a fixed shift (any noise)
SHIFT_IMPUTERS = ("mean", "median", "most_frequent", "knn")


def _check_nm(n: object, m: object) -> tuple[int, int]:
    n = check_positive_int(n, "n", minimum=2)
    m = check_positive_int(m, "m", minimum=0)
    if m > n - 1:
        raise ValueError(f"m must be in [0, n - 1] = [0, {n - 1}] (at least one observed "
                         f"record), got m={m}")
    return n, m


def mean_imputed_sum_sensitivity(n: int, m: int, width: float) -> float:
    """The sensitivity n·W/(n − m) of the sum of a column whose m missing entries are filled
    with the mean of its n − m observed ones, for the substitution of one observed record.

    Parameters
    ----------
    n : int
        Records, n ≥ 2.
    m : int
        Missing entries, 0 ≤ m ≤ n − 1.
    width : float
        W = hi − lo > 0, the width of the value range.

    Raises
    ------
    ValueError
        n, m or width out of range (the message names it).

    Examples
    --------
    >>> mean_imputed_sum_sensitivity(20, 16, 2.0)
    10.0
    """
    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    return n * width / (n - m)


def median_imputed_sum_sensitivity(n: int, m: int, width: float) -> float:
    """The sensitivity of the sum of a column whose m missing entries are filled with the
    median of its k = n − m observed ones (the average of the two middle values when k is
    even): W·(1 + m) for odd k, W·(1 + m/2) for even k (docs/THEORY.md §11.2; attained).

    Parameters and Raises as :func:`mean_imputed_sum_sensitivity`.

    Examples
    --------
    >>> median_imputed_sum_sensitivity(20, 1, 2.0), median_imputed_sum_sensitivity(20, 4, 2.0)
    (4.0, 6.0)
    """
    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    k = n - m
    return width * (1.0 + m) if k % 2 else width * (1.0 + m / 2.0)


def knn_imputed_sum_shift(n: int, m: int, width: float, n_neighbors: int) -> float:
    """The shift W·(1 + m/min(K, n − m)) of the sum of a KNN-imputed column (K neighbours,
    uniform weights) on the audited pair, where the differing record is among the K nearest
    donors of every incomplete record and the neighbours are found on an always-observed
    covariate (so its value moves every imputed entry by W/min(K, k)).

    Raises
    ------
    ValueError
        n, m, width or n_neighbors out of range.
    """
    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    k_nn = check_positive_int(n_neighbors, "n_neighbors")
    return width * (1.0 + m / min(k_nn, n - m))


def laplace_shift_epsilon(shift: float, scale: float) -> float:
    """The exact ε |Δ|/b between Laplace(0, b) and Laplace(Δ, b).

    Raises
    ------
    ValueError
        shift not finite, or scale ≤ 0.
    """
    if not isinstance(shift, (int, float, np.floating)) or not math.isfinite(shift):
        raise ValueError(f"shift must be a finite number, got shift={shift!r}")
    scale = check_positive(scale, "scale")
    return abs(float(shift)) / scale


def two_laplace_shift_epsilon(shift: float, scale1: float, scale2: float) -> float:
    """The exact ε between L1 + L2 and Δ + L1 + L2, L_i ~ Laplace(0, b_i) independent:
    |Δ| / max(b1, b2) (module docstring).

    Raises
    ------
    ValueError
        shift not finite, or a scale ≤ 0.
    """
    check_positive(scale1, "scale1")
    check_positive(scale2, "scale2")
    return laplace_shift_epsilon(shift, max(float(scale1), float(scale2)))


def laplace_mixture_epsilon(weights, shifts_z, shifts_zp, scale: float) -> float:
    """The exact pure ε between two mixtures Σ_j w_j·Laplace(s_j, b) and Σ_j w_j·Laplace(s′_j, b)
    (the same weights): the largest |log ratio| of the densities. Each density is linear in
    e^{±y/b} between consecutive centres, so the log ratio is monotone or single-peaked there;
    it is evaluated on a grid dense between the centres and at both tails (where the ratio
    tends to Σw e^{±s/b} / Σw e^{±s′/b}).

    Parameters
    ----------
    weights : array_like
        w_j ≥ 0, summing to 1.
    shifts_z, shifts_zp : array_like
        The centres, finite, one per weight.
    scale : float
        b > 0.

    Raises
    ------
    ValueError
        Shapes differ, a weight is negative or they do not sum to 1, a centre is not finite,
        or scale ≤ 0.
    """
    w = np.asarray(weights, dtype=np.float64)
    s = np.asarray(shifts_z, dtype=np.float64)
    t = np.asarray(shifts_zp, dtype=np.float64)
    if w.ndim != 1 or s.shape != w.shape or t.shape != w.shape or w.size == 0:
        raise ValueError(f"weights, shifts_z and shifts_zp must be 1-D of one length, got "
                         f"shapes {w.shape}, {s.shape}, {t.shape}")
    if (w < 0).any() or not math.isclose(float(w.sum()), 1.0, rel_tol=1e-9):
        raise ValueError(f"weights must be >= 0 and sum to 1, got sum {float(w.sum())!r}")
    if not (np.isfinite(s).all() and np.isfinite(t).all()):
        raise ValueError("shifts_z and shifts_zp must be finite")
    b = check_positive(scale, "scale")
    centres = np.concatenate([s, t])
    lo, hi = float(centres.min()), float(centres.max())
    ys = np.unique(np.concatenate([np.linspace(lo, hi, 200_001), centres]))

    def logdens(c):
        return np.logaddexp.reduce(np.log(np.where(w > 0, w, 1e-300))[:, None]
                                   - np.abs(ys[None, :] - c[:, None]) / b, axis=0)

    inner = float(np.max(np.abs(logdens(s) - logdens(t))))
    tails = [abs(float(np.logaddexp.reduce(np.log(w[w > 0]) + sign * s[w > 0] / b)
                       - np.logaddexp.reduce(np.log(w[w > 0]) + sign * t[w > 0] / b)))
             for sign in (1.0, -1.0)]
    return max(inner, *tails)


def hot_deck_pair_epsilon(n: int, m: int, width: float, epsilon: float) -> float:
    """The exact ε of random hot-deck imputation (each missing entry a uniform draw among the
    k = n − m observed ones, independently) before a Laplace sum of scale W/ε, on the pair
    whose differing record moves from one end of the range to the other: the sum moves by
    W·(1 + C), C ~ Binomial(m, 1/k) the times it is drawn as a donor.

    Raises
    ------
    ValueError
        n, m, width or epsilon out of range.
    """
    from scipy.stats import binom

    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    epsilon = check_positive(epsilon, "epsilon")
    c = np.arange(m + 1)
    w = binom.pmf(c, m, 1.0 / (n - m))
    w = w / w.sum()
    return laplace_mixture_epsilon(w, np.zeros(m + 1), width * (1.0 + c), width / epsilon)


def private_public_count_pair_epsilon(n: int, m: int, width: float, epsilon: float,
                                      impute_share: float = 0.5) -> float:
    """The exact ε of the private imputer with a public count (imputed value mean_obs +
    Laplace(W/(k·sε)), then a Laplace sum of scale W/((1 − s)ε)) on a pair whose differing
    record moves across the whole range, observed on both sides: the filled sum n·mean_obs
    moves by nW/k and carries the noise m·L_imp + L_rel, so ε = (nW/k) / max(mW/(k·sε),
    W/((1 − s)ε)) (:func:`two_laplace_shift_epsilon`); at most ε, equal to it when
    m·(1 − s) = k·s, e.g. m = k = n/2 with s = 1/2.

    Raises
    ------
    ValueError
        n, m, width, epsilon or impute_share out of range.
    """
    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    epsilon = check_positive(epsilon, "epsilon")
    share = check_positive(impute_share, "impute_share")
    if not share < 1.0:
        raise ValueError(f"impute_share must be in (0, 1), got impute_share={impute_share!r}")
    k = n - m
    if m == 0:
        return laplace_shift_epsilon(width, width / ((1.0 - share) * epsilon))
    return two_laplace_shift_epsilon(n * width / k, m * width / (k * share * epsilon),
                                     width / ((1.0 - share) * epsilon))


def gaussian_shift_epsilon(shift: float, sigma: float, delta: float) -> float:
    """The exact ε at δ between N(0, σ²) and N(Δ, σ²): the Gaussian profile's ε_μ(δ) at
    μ = |Δ|/σ (Balle & Wang 2018, Thm 8; :meth:`audit.noise.GaussianNoise.epsilon_for_delta`,
    rounded so that δ_μ(ε) ≤ δ).

    Raises
    ------
    ValueError
        shift not finite, sigma ≤ 0, or delta outside (0, 1).

    Examples
    --------
    >>> round(gaussian_shift_epsilon(1.0, 1.0, 1e-5), 4)
    4.3772
    """
    mu = laplace_shift_epsilon(shift, sigma)  # |Δ|/σ, both checked
    dlt = check_in_range("delta", delta, 0.0, 1.0, lo_closed=False, hi_closed=False)
    return GaussianNoise().epsilon_for_delta(dlt, mu)


def mean_mar_pair_epsilon(n: int, m: int, width: float, epsilon: float,
                          rate: float) -> float:
    """The exact ε of mean imputation before a Laplace sum of scale W/ε on the MAR pair of
    :func:`audit.model.imputation_pairs.imputation_pair` (``mask="mar"``, ``others="zero"``)
    masked by :func:`~audit.model.imputation_pairs.mar_mask_params` at ``rate_high = q``:
    each of the m incomplete records (value 0) is missing with probability q, independently,
    record 0 (±W/2) and the others (0) never, so the filled sum is ±(W/2)·n/(n − M),
    M ~ Binomial(m, q): :func:`laplace_mixture_epsilon` over M.

    Raises
    ------
    ValueError
        n, m, width, epsilon out of range, or rate outside [0, 1].
    """
    from scipy.stats import binom  # (scipy.stats on use only, as in hot_deck_pair_epsilon)

    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    epsilon = check_positive(epsilon, "epsilon")
    q = check_in_range("rate", rate, 0.0, 1.0, lo_closed=True, hi_closed=True)
    c = np.arange(m + 1)
    w = binom.pmf(c, m, q)
    keep = w > 0
    w, c = w[keep] / w[keep].sum(), c[keep]
    shift = 0.5 * width * n / (n - c)
    return laplace_mixture_epsilon(w, shift, -shift, width / epsilon)


def pair_epsilon(imputer: str, n: int, m: int, width: float, epsilon: float, *,
                 n_neighbors: int = 5, delta: float = 0.0) -> float | None:
    """The exact ε of ``imputer`` before a Laplace sum of scale W/ε (``delta`` = 0) or a
    Gaussian sum of Balle & Wang's analytic σ for sensitivity W at (ε, δ) (``delta`` > 0) on
    the audited pair of :func:`audit.model.imputation_pairs.imputation_pair` (the differing
    record from one end of the range to the other, m incomplete records, nothing else
    masked), or None where there is no closed form (``iterative``, ``private_mean``, and
    ``hot_deck`` under Gaussian noise). The same value holds for the mean over the n filled
    entries (the sum and its noise divided by n).

    The filled sum's shift: ``mean``: n·W/(n − m); ``median``: W·(1 + m) for odd
    k = n − m, W·(1 + m/2) for even k (the pair with the other records split between the
    ends); ``most_frequent``: W·(1 + m) (that pair, where record 0 breaks the tie); ``knn``:
    W·(1 + m/min(K, k)); ``hot_deck`` (Laplace only): :func:`hot_deck_pair_epsilon` (the
    other records at 0). Laplace: shift/(W/ε); Gaussian: :func:`gaussian_shift_epsilon`.

    Raises
    ------
    ValueError
        An unknown imputer, or a parameter out of range.
    """
    n, m = _check_nm(n, m)
    width = check_positive(width, "width")
    epsilon = check_positive(epsilon, "epsilon")
    if imputer in ("iterative", "private_mean"):
        return None
    if imputer not in EXACT_IMPUTERS:
        raise ValueError(f"imputer must be one of mean, median, most_frequent, knn, "
                         f"iterative, hot_deck, private_mean, got imputer={imputer!r}")
    if delta == 0.0 and imputer == "hot_deck":
        return hot_deck_pair_epsilon(n, m, width, epsilon)
    if imputer == "hot_deck":
        return None
    shift = {"mean": lambda: mean_imputed_sum_sensitivity(n, m, width),
             "median": lambda: median_imputed_sum_sensitivity(n, m, width),
             "most_frequent": lambda: width * (1.0 + m),
             "knn": lambda: knn_imputed_sum_shift(n, m, width, n_neighbors)}[imputer]()
    if delta == 0.0:
        return laplace_shift_epsilon(shift, width / epsilon)
    sigma = GaussianNoise().calibrate(width, epsilon, delta, "analytic")
    return gaussian_shift_epsilon(shift, sigma, delta)
