"""Exact one-sided Clopper–Pearson bounds and the ε lower bound of one region.

Every bound holds with probability ≥ 1 − ``alpha`` for K ~ Bin(n, p), whatever p; they are
ONE-sided (scipy.stats.beta quantiles), never the two-sided interval's ends.

References
----------
Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated
in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

try:  # the Boost quantile scipy.stats.beta.ppf itself calls, without importing scipy.stats
    from scipy.special._ufuncs import _beta_ppf as _beta_quantile
except ImportError:  # pragma: no cover - a SciPy that moved it
    from scipy.stats import beta as _beta

    _beta_quantile = _beta.ppf

from audit._validate import check_delta, check_in_range

__all__ = ["beta_quantile", "cp_upper", "cp_lower", "cp_upper_array", "cp_lower_array",
           "eps_from_bounds",
           "eps_lower_bound", "check_alpha", "check_count"]


def check_alpha(alpha: object) -> float:
    """A failure probability in (0, 1)."""
    return check_in_range("alpha", alpha, 0.0, 1.0, lo_closed=False, hi_closed=False)


def check_count(name: str, value: object, lo: int = 0) -> int:
    """An integer count ≥ ``lo``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < lo:
        raise ValueError(f"{name} must be an integer >= {lo}, got {name}={value!r}")
    return int(value)


def _check_kn(k: object, n: object, kname: str = "k", nname: str = "n") -> tuple[int, int]:
    n = check_count(nname, n, 1)
    k = check_count(kname, k, 0)
    if k > n:
        raise ValueError(f"{kname} must be in [0, {nname}={n}], got {kname}={k}")
    return k, n


def beta_quantile(q, a, b) -> np.ndarray:
    """The q-quantile of Beta(a, b): ``scipy.stats.beta.ppf(q, a, b)``, bit for bit."""
    q, a, b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (q, a, b)))
    return np.asarray(_beta_quantile(q, a, b), dtype=np.float64)


def cp_upper_array(k, n, alpha: float) -> np.ndarray:
    """Vectorised :func:`cp_upper` on validated arrays (1 where k ≥ n).

    ``k`` and ``n`` may be fractional (expected counts, as the model's region choice predicts
    them): the bound is then the (1 − alpha) quantile of Beta(k + 1, n − k), which equals the
    integer formula at integer counts.
    """
    k = np.asarray(k)
    n = np.asarray(n)
    rest = n - k
    with np.errstate(invalid="ignore"):
        out = beta_quantile(1.0 - alpha, k + 1, np.where(rest > 0, rest, 1))
    return np.where(k >= n, 1.0, out)


def cp_lower_array(k, n, alpha: float) -> np.ndarray:
    """Vectorised :func:`cp_lower` on validated arrays (0 where k ≤ 0); fractional (expected)
    counts give the alpha quantile of Beta(k, n − k + 1), like :func:`cp_upper_array`."""
    k = np.asarray(k)
    n = np.asarray(n)
    with np.errstate(invalid="ignore"):
        out = beta_quantile(alpha, np.where(k > 0, k, 1), n - k + 1)
    return np.where(k <= 0, 0.0, out)


def cp_upper(k: int, n: int, alpha: float) -> float:
    """Exact one-sided Clopper–Pearson upper bound on a binomial proportion.

    P[p ≤ cp_upper(K, n, alpha)] ≥ 1 − alpha for K ~ Bin(n, p), every p ∈ [0, 1].

    Parameters
    ----------
    k : int, 0 ≤ k ≤ n
        Successes.
    n : int, ≥ 1
        Trials.
    alpha : float in (0, 1)
        One-sided error probability.

    Returns
    -------
    float
        The (1 − alpha) quantile of Beta(k + 1, n − k); 1 when k = n.

    Raises
    ------
    ValueError
        On counts outside [0, n], n < 1 or alpha ∉ (0, 1).
    """
    k, n = _check_kn(k, n)
    return float(cp_upper_array(k, n, check_alpha(alpha)))


def cp_lower(k: int, n: int, alpha: float) -> float:
    """Exact one-sided Clopper–Pearson lower bound: the alpha quantile of Beta(k, n − k + 1),
    0 when k = 0. P[p ≥ cp_lower(K, n, alpha)] ≥ 1 − alpha for every p.

    Raises
    ------
    ValueError
        On counts outside [0, n], n < 1 or alpha ∉ (0, 1).
    """
    k, n = _check_kn(k, n)
    return float(cp_lower_array(k, n, check_alpha(alpha)))


def eps_from_bounds(num_lo, den_hi, delta: float) -> np.ndarray:
    """ln((num_lo − δ)/den_hi), clipped to 0 where the numerator does not exceed δ or the
    logarithm is negative (0 is always a valid lower bound)."""
    num = np.asarray(num_lo, dtype=np.float64) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(num / np.asarray(den_hi, dtype=np.float64))
    return np.where((num > 0) & (val > 0), val, 0.0)


def eps_lower_bound(k_p: int, n_p: int, k_q: int, n_q: int, delta: float, alpha: float) -> float:
    """ε ≥ ln((P_lo(S) − δ)/Q_hi(S)) for one region S fixed before the counts were drawn.

    ``k_p`` of ``n_p`` draws from the numerator law fell in S, ``k_q`` of ``n_q`` from the
    denominator law. P_lo and Q_hi are one-sided Clopper–Pearson bounds at ``alpha / 2`` each
    (union bound), so the returned value is ≤ the true ln((P(S) − δ)/Q(S)) — hence ≤ the ε of
    any (ε, δ)-DP guarantee of the pair — with probability ≥ 1 − alpha. Returns 0 (a trivially
    valid bound) when P_lo ≤ δ or the logarithm is negative.

    Raises
    ------
    ValueError
        On counts outside [0, n], n < 1, delta ∉ [0, 1] or alpha ∉ (0, 1).
    """
    k_p, n_p = _check_kn(k_p, n_p, "k_p", "n_p")
    k_q, n_q = _check_kn(k_q, n_q, "k_q", "n_q")
    delta = check_delta(delta)
    alpha = check_alpha(alpha)
    p_lo = cp_lower_array(k_p, n_p, alpha / 2)
    q_hi = cp_upper_array(k_q, n_q, alpha / 2)
    return float(eps_from_bounds(p_lo, q_hi, delta))
