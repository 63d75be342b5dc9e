"""Runnable experiment definitions.

Each experiment module defines ``NAME``, ``TITLE`` and ``run(size, seed, jobs, progress)``,
which returns a JSON-serialisable dict (the experiment's results, its seed and the package
versions) that :mod:`experiments.suite` writes to ``results/<NAME>.json``. Figures are drawn from
those files by :mod:`experiments.report`, never recomputed.

``size`` is ``"default"`` (the suite's ≤ 10-minute run on 2 cores), ``"full"`` (paper size) or
``"smoke"`` (tiny runs used by the tests).
"""

from experiments import (
    amplification_vs_pstar,
    amplification_vs_rho,
    attack_comparison,
    counterexample,
    mar_mnar,
    mcar_iid_looseness,
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
    )
}

__all__ = ["EXPERIMENTS"]
