"""The accountant: every theoretical privacy bound the project audits against, in one import.

This module only re-exports; each result has one home:

- :mod:`audit.theory.amplification`: [RPS] Theorem 3.2 (:func:`amplify`), Theorem 4.5
  (:func:`laplace_fwl_bound`), Corollary 4.6 (:func:`corollary_4_6`), Theorem 4.7
  (:func:`gaussian_fwl_bound`), and the f-DP bounds of docs/THEORY.md §7, **derived in this
  project** (:func:`fdp_missing`, :func:`fdp_missing_gaussian`, :func:`fdp_missing_laplace`);
  also :class:`MissingnessClass`, :data:`Mechanism` and :func:`p_star_mcar_iid`;
- :mod:`audit.theory.bounds`: :func:`all_bounds` and :class:`BoundRow`, every applicable bound
  at one parameter point (the ``bound`` CLI);
- :mod:`audit.theory.profiles`: :func:`dp_min_error_sum`;
- :mod:`audit.theory.tradeoff`: the f-DP toolkit (``tradeoff_dp``, ``tradeoff_gaussian``,
  ``tradeoff_laplace``, ``amplify_tradeoff``, ``delta_for_epsilon``, ``epsilon_for_delta``,
  ``min_error_sum``).

Callers look the functions up on this module at call time (``acc.amplify(...)``), so a test
may replace one here and reach every such caller.
"""

from __future__ import annotations

from audit.theory.amplification import (
    Mechanism,
    MissingnessClass,
    amplify,
    corollary_4_6,
    fdp_missing,
    fdp_missing_gaussian,
    fdp_missing_laplace,
    gaussian_fwl_bound,
    laplace_fwl_bound,
    p_star_mcar_iid,
)
from audit.theory.bounds import BoundRow, all_bounds
from audit.theory.profiles import dp_min_error_sum
from audit.theory.tradeoff import (
    amplify_tradeoff,
    delta_for_epsilon,
    epsilon_for_delta,
    min_error_sum,
    tradeoff_dp,
    tradeoff_gaussian,
    tradeoff_laplace,
)

__all__ = [
    "MissingnessClass",
    "Mechanism",
    "BoundRow",
    "amplify",
    "p_star_mcar_iid",
    "laplace_fwl_bound",
    "corollary_4_6",
    "gaussian_fwl_bound",
    "fdp_missing",
    "fdp_missing_gaussian",
    "fdp_missing_laplace",
    "dp_min_error_sum",
    "all_bounds",
    "tradeoff_dp",
    "tradeoff_gaussian",
    "tradeoff_laplace",
    "amplify_tradeoff",
    "delta_for_epsilon",
    "epsilon_for_delta",
    "min_error_sum",
]
