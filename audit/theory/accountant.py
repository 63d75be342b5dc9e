"""The accountant: every theoretical privacy bound the project audits against, in one import.

This module only re-exports; each result has one home:

- :mod:`audit.theory.amplification`: [RPS] Theorem 3.2 (:func:`amplify`), Theorem 4.5
  (:func:`laplace_fwl_bound`), Corollary 4.6 (:func:`corollary_4_6`), Theorem 4.7
  (:func:`gaussian_fwl_bound`), and the f-DP bounds of docs/THEORY.md §7, **derived in this
  project** (:func:`fdp_missing`, :func:`fdp_missing_gaussian`, :func:`fdp_missing_laplace`);
  also :class:`MissingnessClass`, :data:`Mechanism` and :func:`p_star_mcar_iid`;
- :mod:`audit.theory.bounds`: :func:`all_bounds` and :class:`BoundRow`, every applicable bound
  at one parameter point (the ``bound`` CLI);
- :mod:`audit.theory.bounds` also :func:`bound_table` and :class:`BoundTable` (k releases,
  ``--releases``/``--masks``/``--target-delta``);
- :mod:`audit.theory.releases`: several releases from one incomplete dataset
  (docs/THEORY.md §9, **derived in this project**): shared masks (:func:`shared_masks_dp`,
  :func:`shared_masks_tradeoff`, :func:`shared_masks_epsilon`), fresh masks
  (:func:`fresh_masks_epsilon`, :func:`fresh_masks_tradeoff`, :func:`basic_composition`,
  :func:`advanced_composition`, :func:`clt_mu`), either regime by name
  (:func:`releases_epsilon`, :func:`composed_epsilon`), which releases share
  (:func:`mask_regime_of`, :func:`feature_group_p_stars`), and the exact pair over k releases
  (:func:`shared_pair_epsilon`, :func:`record_level_pair_epsilon`,
  :func:`fresh_pair_epsilon`, whose home is :mod:`audit.theory.pair.releases`);
- :mod:`audit.theory.profiles`: :func:`dp_min_error_sum`;
- :mod:`audit.theory.tradeoff`: the f-DP toolkit (``tradeoff_dp``, ``tradeoff_gaussian``,
  ``tradeoff_laplace``, ``amplify_tradeoff``, ``delta_for_epsilon``, ``epsilon_for_delta``,
  ``min_error_sum``).

Callers look the functions up on this module at call time (``acc.amplify(...)``), so a test
may replace one here and reach every such caller.

Examples
--------
[RPS] Theorem 3.2 for a (3, 0.1)-DP release whose differing record is observed with
probability p* = 0.2, and the same setting through f-DP ([DRS] Corollary 4.3):

>>> from audit.theory import accountant as acc
>>> acc.amplify(3.0, 0.1, 0.2)
(1.5721..., 0.0200...)
>>> f = acc.tradeoff_dp(3.0, 0.1)
>>> round(acc.min_error_sum(f), 4), round(acc.min_error_sum(acc.amplify_tradeoff(f, 0.2)), 4)
(0.0854, 0.8171)

p* of i.i.d. MCAR masks (rate 0.3 on 10 features), and Theorem 4.5 for a Laplace release of
ε = 1 whose FWL ratio C̃/C is 0.5 at p* = 0.5:

>>> acc.p_star_mcar_iid(0.3, 10)
0.99999...
>>> acc.laplace_fwl_bound(1.0, 0.5, 0.5)
0.28092...

Basic composition of ten (1, 1e-5)-DP releases:

>>> acc.basic_composition(1.0, 1e-5, 10)
(10.0, 0.0001)
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
from audit.theory.bounds import BoundRow, BoundTable, all_bounds, bound_table
from audit.theory.profiles import dp_min_error_sum
from audit.theory.releases import (
    Composed,
    MaskRegime,
    RecordLevelPair,
    advanced_composition,
    basic_composition,
    check_releases,
    clt_mu,
    composed_epsilon,
    composed_gaussian_mu,
    composed_laplace_epsilon,
    feature_group_p_stars,
    fresh_masks_epsilon,
    fresh_masks_tradeoff,
    fresh_pair_epsilon,
    mask_regime_of,
    optimal_composition,
    record_level_form,
    record_level_pair_epsilon,
    releases_epsilon,
    releases_pair_epsilon,
    repeated_gaussian_mu,
    shared_masks_dp,
    shared_masks_epsilon,
    shared_masks_tradeoff,
    shared_pair,
    shared_pair_epsilon,
)
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
    "BoundTable",
    "bound_table",
    "MaskRegime",
    "RecordLevelPair",
    "check_releases",
    "Composed",
    "composed_epsilon",
    "releases_epsilon",
    "fresh_masks_tradeoff",
    "shared_masks_dp",
    "shared_masks_tradeoff",
    "shared_masks_epsilon",
    "repeated_gaussian_mu",
    "composed_gaussian_mu",
    "composed_laplace_epsilon",
    "mask_regime_of",
    "feature_group_p_stars",
    "fresh_masks_epsilon",
    "basic_composition",
    "optimal_composition",
    "advanced_composition",
    "clt_mu",
    "shared_pair",
    "shared_pair_epsilon",
    "record_level_pair_epsilon",
    "record_level_form",
    "releases_pair_epsilon",
    "fresh_pair_epsilon",
    "tradeoff_dp",
    "tradeoff_gaussian",
    "tradeoff_laplace",
    "amplify_tradeoff",
    "delta_for_epsilon",
    "epsilon_for_delta",
    "min_error_sum",
]
