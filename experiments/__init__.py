"""Runnable experiment definitions.

Each experiment module defines

* ``NAME`` (its results file is ``results/<NAME>.json``), ``TITLE`` and ``CAPTION`` (what its
  figure shows, for the report);
* ``run(size, seed, jobs, progress)``, which returns a JSON-serialisable dict (the
  experiment's results, its seed and the package versions) that :mod:`experiments.suite`
  writes to ``results/<NAME>.json``;
* ``draw(doc, fig)``, which draws that dict onto a blank :class:`matplotlib.figure.Figure`
  (it may set the figure's size). :mod:`experiments.report` saves the figure; nothing in
  ``draw`` recomputes an audit or a bound;
* optionally ``caption(doc)`` (the caption with numbers read from the results, used in place of
  ``CAPTION``) and ``report_findings(doc)`` (the findings worded at report time, in place of
  the stored ``findings``), so that one number is printed in one format wherever it appears.

Importing an experiment module is cheap (no scipy, numba or matplotlib): ``python -m audit``
imports this package to build its parser, and ``run`` imports the audit machinery it needs.

``size`` is ``"default"`` (the suite's ≤ 10-minute run on 2 cores), ``"full"`` (paper size) or
``"smoke"`` (tiny runs used by the tests).
"""

from experiments import (
    amplification_vs_pstar,
    amplification_vs_rho,
    attack_comparison,
    counterexample,
    imputation,
    library_audit,
    mar_mnar,
    mcar_iid_looseness,
    na_position,
    releases,
    tester_benchmark,
    tradeoff_curves,
)

EXPERIMENTS = {
    m.NAME: m
    for m in (
        amplification_vs_pstar,
        amplification_vs_rho,
        tradeoff_curves,
        counterexample,
        mar_mnar,
        attack_comparison,
        mcar_iid_looseness,
        library_audit,
        na_position,
        releases,
        tester_benchmark,
        imputation,
    )
}

__all__ = ["EXPERIMENTS"]
