"""Exact one-sided Clopper–Pearson bounds and the ε lower bound of one region.

Every bound holds with probability ≥ 1 − ``alpha`` for K ~ Bin(n, p), whatever p; they are
ONE-sided (scipy.stats.beta quantiles), never the two-sided interval's ends.

Two rules turn a region's counts into an ε bound (:class:`audit.enums.BoundRule`, one
evaluator, :func:`eps_by_rule`): the two intervals (:func:`eps_from_counts`, each side at
α/:data:`SIDES`, any δ) and, at δ = 0 for a run whose numbers of draws per side are
independent Poisson variables of one mean, the joint bound (:func:`eps_joint_from_counts`,
docs/THEORY.md §8.1b).

References
----------
Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits illustrated
in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.special import betaincinv

from audit._validate import check_delta, check_in_range
from audit.enums import BoundRule

__all__ = ["beta_quantile", "cp_upper", "cp_lower", "cp_upper_array", "cp_lower_array",
           "SIDES", "log_ratio_of_bounds", "eps_from_bounds", "eps_from_counts", "eps_plug_in",
           "eps_lower_bound", "check_alpha", "check_count", "joint_share_lower",
           "eps_joint_from_counts", "eps_joint_bound", "eps_by_rule"]

#: The one α split of every two-interval ε bound (δ = 0 or not): the numerator's lower and the
#: denominator's upper Clopper–Pearson bound are each taken at ``alpha / SIDES`` (a union
#: bound over the two sides), so the ε bound holds with probability ≥ 1 − ``alpha``. (The
#: joint bound of a Poissonised run, :func:`eps_joint_from_counts`, takes one bound at α.)
SIDES = 2


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
    """The q-quantile of Beta(a, b), by the public ``scipy.special.betaincinv(a, b, q)`` (the
    Boost inverse ``scipy.stats.beta.ppf`` calls, bit for bit, without importing
    scipy.stats)."""
    q, a, b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (q, a, b)))
    return np.asarray(betaincinv(a, b, q), dtype=np.float64)


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


def log_ratio_of_bounds(num_lo, den_hi, delta: float) -> np.ndarray:
    """ln((num_lo − δ)/den_hi), unfloored: −inf where the numerator does not exceed δ. What a
    region choice ranks candidates by (a negative value still orders them); never a reported
    bound (:func:`eps_from_bounds` floors it)."""
    num = np.asarray(num_lo, dtype=np.float64) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.log(num / np.asarray(den_hi, dtype=np.float64))
    return np.where(num > 0, val, -np.inf)


def eps_from_bounds(num_lo, den_hi, delta: float) -> np.ndarray:
    """ln((num_lo − δ)/den_hi), floored at 0 (the one floor convention: 0 is always a valid
    lower bound, reported where the numerator does not exceed δ or the logarithm is
    negative)."""
    value = log_ratio_of_bounds(num_lo, den_hi, delta)
    return np.where(value > 0, value, 0.0)


def eps_from_counts(k_num, n_num, k_den, n_den, delta: float, alpha: float) -> np.ndarray:
    """The one evaluator of ε from counts: ln((P_lo − δ)/Q_hi), P_lo the one-sided
    Clopper–Pearson lower bound on the numerator's mass from ``k_num`` of ``n_num`` draws and
    Q_hi the upper bound on the denominator's from ``k_den`` of ``n_den``, each at
    ``alpha / SIDES``; floored at 0 (:func:`eps_from_bounds`).

    Vectorised and unvalidated (the callers validate): counts may be fractional (the expected
    counts of a predicted main run), arrays broadcast. Region bounds, the region choices'
    predictions, the stratified bounds, ``auto``'s held-out comparison and the largest bound a
    budget can show all evaluate here.

    Examples
    --------
    >>> round(float(eps_from_counts(900, 1000, 100, 1000, 0.0, 0.05)), 4)
    1.9897
    >>> float(eps_from_counts(5, 1000, 5, 1000, 0.0, 0.05))  # no evidence: the floor
    0.0
    """
    a = alpha / SIDES
    return eps_from_bounds(cp_lower_array(k_num, n_num, a), cp_upper_array(k_den, n_den, a),
                           delta)


def eps_plug_in(k_num, n_num, k_den, n_den, delta: float, *,
                undefined: float = 0.0) -> np.ndarray:
    """The one plug-in convention: ln((k_num/n_num − δ)/(k_den/n_den)), NOT a bound;
    ``undefined`` (0, as reported) where the numerator does not exceed δ, +inf where the
    denominator count is 0. A ranking passes ``undefined=-inf`` (such candidates rank last)
    and ``max(k_den, 1)`` (it must not prefer an empty denominator)."""
    num = np.asarray(k_num, dtype=np.float64) / np.asarray(n_num, dtype=np.float64) - delta
    den = np.asarray(k_den, dtype=np.float64) / np.asarray(n_den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(den > 0, np.log(num / np.where(den > 0, den, 1.0)), np.inf)
    return np.where(num > 0, val, undefined)


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
    return float(eps_from_counts(k_p, n_p, k_q, n_q, delta, alpha))


def joint_share_lower(k_num, k_den, alpha: float) -> np.ndarray:
    """θ_lo: the one-sided Clopper–Pearson lower bound at ``alpha`` on the numerator's share
    θ = P(S)/(P(S) + Q(S)) from ``k_num`` of the s = ``k_num`` + ``k_den`` draws in S (0 where
    k_num = 0). Vectorised and unvalidated; fractional (expected) counts allowed, as for
    :func:`cp_lower_array`."""
    k_num = np.asarray(k_num, dtype=np.float64)
    return cp_lower_array(k_num, k_num + np.asarray(k_den, dtype=np.float64), alpha)


def eps_joint_from_counts(k_num, k_den, alpha: float) -> np.ndarray:
    """The joint bound at δ = 0: ln(θ_lo/(1 − θ_lo)), θ_lo = :func:`joint_share_lower` at the
    WHOLE ``alpha``, floored at 0 (:func:`eps_from_bounds`: θ_lo and 1 − θ_lo are the bounds on
    the numerator's and the denominator's shares).

    Valid (probability ≥ 1 − alpha, whatever P(S) and Q(S)) when the region's counts are
    K_num ~ Poisson(λ·P(S)) and K_den ~ Poisson(λ·Q(S)), independent, of ONE mean λ: then
    K_num given K_num + K_den = s is Binomial(s, θ), θ = P(S)/(P(S) + Q(S)), so θ_lo ≤ θ with
    probability ≥ 1 − alpha for every s, and ε ≥ ln(P(S)/Q(S)) = ln(θ/(1 − θ)) by δ = 0 DP
    (docs/THEORY.md §8.1b). A run of N_P ~ Poisson(λ) draws from P and N_Q ~ Poisson(λ) from
    Q, independent, gives such counts for every region fixed before it. Vectorised and
    unvalidated (the callers validate); fractional counts predict (as
    :func:`eps_from_counts`).

    Examples
    --------
    >>> round(float(eps_joint_from_counts(900, 100, 0.05)), 4)  # two intervals: 1.9897
    2.0212
    >>> float(eps_joint_from_counts(5, 5, 0.05))  # no evidence: the floor
    0.0
    """
    lo = joint_share_lower(k_num, k_den, alpha)
    return eps_from_bounds(lo, 1.0 - lo, 0.0)


def eps_joint_bound(k_num: int, k_den: int, alpha: float) -> float:
    """:func:`eps_joint_from_counts` on validated counts: ε ≥ ln(θ_lo/(1 − θ_lo)) for one
    region fixed before a Poissonised run (both sides' numbers of draws independent
    Poisson(λ), one λ), ``k_num`` the numerator side's hits in it, ``k_den`` the
    denominator's; valid at δ = 0 with probability ≥ 1 − ``alpha``.

    Raises
    ------
    ValueError
        On a negative or non-integer count, or alpha ∉ (0, 1).

    References
    ----------
    Clopper and Pearson (1934); the conditional binomial law of two independent Poisson
    counts given their sum (e.g. Lehmann and Romano, Testing Statistical Hypotheses, 3rd ed.,
    §4.5). docs/THEORY.md §8.1b.
    """
    k_num = check_count("k_num", k_num)
    k_den = check_count("k_den", k_den)
    return float(eps_joint_from_counts(k_num, k_den, check_alpha(alpha)))


def eps_by_rule(rule: BoundRule, k_num, n_num, k_den, n_den, delta: float,
                alpha: float) -> np.ndarray:
    """The ε bound of ``rule`` from a region's counts (the one dispatch on
    :class:`audit.enums.BoundRule`): :func:`eps_from_counts` for the two intervals,
    :func:`eps_joint_from_counts` for the joint bound (which reads no ``n``: a Poissonised
    run's n are not the mean). Vectorised and unvalidated.

    Raises
    ------
    ValueError
        For ``JOINT`` with delta > 0 (no joint form is proven there: docs/THEORY.md §8.1b).
    """
    if BoundRule.parse(rule) is BoundRule.JOINT:
        if delta != 0.0:
            raise ValueError(f"the joint bound needs delta = 0, got delta={delta}")
        return eps_joint_from_counts(k_num, k_den, alpha)
    return eps_from_counts(k_num, n_num, k_den, n_den, delta, alpha)
