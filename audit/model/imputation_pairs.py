"""The pair that hurts an imputer: the differing record's value changes the imputed value of
the m incomplete records (docs/THEORY.md §11).

Records have d features (2 by default): column 0 the value, in [−B, B], which the release
sums; column 1 an always-observed covariate, which KNN and iterative imputers read; any further
columns 0. With d = 1 there is no covariate (KNN imputation then falls back to the mean). The
layout:

- record 0, the differing record: (+B, 0.5) in z, (−B, 0.5) in z′, observed on both sides:
  an extreme observed value on each side;
- records 1..m, the incomplete records: covariate 1, value NA (``mask="mcar"``: missing in the
  table given, whatever the values) or 0 to be masked by the MAR mechanism of
  :func:`mar_mask_params` (``mask="mar"``: the value goes missing because the covariate is
  high, ≥ 0.75);
- the other k − 1 = n − m − 1 observed records: covariate −1, values 0 (``others="zero"``) or
  split half at −B, half at +B, one 0 when their number is odd (``others="split"``), so that
  record 0 tips the median and the most frequent value of the k observed values from one end
  to the other (k odd) or by B (k even).

Record 0 is the nearest donor of every incomplete record on the covariate (distance 0.5
against 2), so KNN imputation averages it into every imputed entry.
"""

from __future__ import annotations

import numpy as np

from audit._validate import check_positive, check_positive_int, check_probability

__all__ = ["OTHERS", "MASKS", "imputation_pair", "mar_mask_params", "MAR_THRESHOLD"]

#: how the other observed records are set
OTHERS = ("zero", "split")
#: where the m incomplete records' NA come from
MASKS = ("mcar", "mar")
#: the covariate from which the MAR mechanism masks the value (the incomplete records sit at 1)
MAR_THRESHOLD = 0.75


def _others(count: int, bound: float, others: str) -> np.ndarray:
    if others == "zero":
        return np.zeros(count)
    half = count // 2
    return np.concatenate([np.full(half, -bound), np.full(half, bound),
                           np.zeros(count - 2 * half)])


def imputation_pair(n: int, m: int, bound: float = 1.0, *, others: str = "zero",
                    mask: str = "mcar", d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The pair (z, z′), each of shape (n, d) (module docstring).

    Parameters
    ----------
    n : int
        Records, n ≥ 2.
    m : int
        Incomplete records, 1 ≤ m ≤ n − 1.
    bound : float
        B > 0: values in [−B, B].
    others : {"zero", "split"}
        The values of the other observed records.
    mask : {"mcar", "mar"}
        "mcar": the m values NA in the pair; "mar": 0 in the pair, masked by the MAR
        mechanism of :func:`mar_mask_params` (which needs d ≥ 2).
    d : int
        Features, d ≥ 1.

    Raises
    ------
    ValueError
        A parameter out of range (the message names it).

    Examples
    --------
    >>> z, zp = imputation_pair(4, 2)
    >>> z[:, 0].tolist(), zp[:, 0].tolist()
    ([1.0, nan, nan, 0.0], [-1.0, nan, nan, 0.0])
    """
    n = check_positive_int(n, "n", minimum=2)
    m = check_positive_int(m, "m")
    if m > n - 1:
        raise ValueError(f"m must be in [1, n - 1] = [1, {n - 1}], got m={m}")
    bound = check_positive(bound, "bound")
    if others not in OTHERS:
        raise ValueError(f"others must be one of {OTHERS}, got others={others!r}")
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got mask={mask!r}")
    d = check_positive_int(d, "d")
    if mask == "mar" and d < 2:
        raise ValueError(f"d must be at least 2 with mask='mar' (the mask reads the "
                         f"covariate, column 1), got d={d}")
    z = np.zeros((n, d))
    z[0, 0] = bound
    z[1:m + 1, 0] = np.nan if mask == "mcar" else 0.0
    z[m + 1:, 0] = _others(n - m - 1, bound, others)
    if d >= 2:
        z[:, 1] = np.concatenate([[0.5], np.ones(m), -np.ones(n - m - 1)])
    z_prime = z.copy()
    z_prime[0, 0] = -bound
    return z, z_prime


def mar_mask_params(rate: float = 1.0) -> dict:
    """The ``[missingness]`` table of the MAR setting: ``mar-pivot`` on the covariate (column
    1), the value missing with probability ``rate`` (in [0, 1], independently per record) when
    the covariate is ≥ :data:`MAR_THRESHOLD` and 0 below (the rate reads only the
    always-observed covariate: MAR). At ``rate`` = 1 the m incomplete records are always
    missing; below 1 the number missing is Binomial(m, rate)
    (:func:`audit.theory.imputation.mean_mar_pair_epsilon`).

    Raises
    ------
    ValueError
        rate outside [0, 1].
    """
    rate = check_probability(rate, "rate")
    return {"kind": "mar-pivot", "pivot": 1, "threshold": MAR_THRESHOLD, "rate_low": 0.0,
            "rate_high": rate}
