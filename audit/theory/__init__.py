"""Theory layer: every theoretical privacy bound an audit is compared against.

- :mod:`~audit.theory.accountant`: one import for every bound (re-exports only);
- :mod:`~audit.theory.amplification`: [RPS] Theorems 3.2, 4.5, 4.7, Corollary 4.6 and the
  f-DP bounds of docs/THEORY.md §7;
- :mod:`~audit.theory.bounds`: the table of every applicable bound (the ``bound`` CLI);
- :mod:`~audit.theory.calibration`: noise scales; :mod:`~audit.theory.profiles`: exact
  privacy profiles δ(ε) and ε(δ) of the Gaussian and Laplace mechanisms (both delegate to
  the noise classes of :mod:`audit.noise`, where the closed forms live);
- :mod:`~audit.theory.noise_theory`: the accountant's per-noise table (which [RPS] theorem,
  which §7 curve, the base mechanism's ε) that the pipeline calls with the noise kind;
- :mod:`~audit.theory.fwl`: feature-wise Lipschitz constants and the [RPS] query catalogue;
- :mod:`~audit.theory.tradeoff`: the f-DP toolkit of [DRS] (curves, C_p, conversions);
- :mod:`~audit.theory.pair`: exact privacy of one audited pair of scalar mixtures (and, in
  :mod:`~audit.theory.pair.releases`, of the pair over k releases);
- :mod:`~audit.theory.releases`: several releases from one incomplete dataset (shared and
  fresh masks, docs/THEORY.md §9); :mod:`~audit.theory.pld`: privacy loss distributions on a
  grid, composed by dp_accounting; :mod:`~audit.theory.release_rows`: the k-release rows of the
  bound table.

The layer depends on numpy, scipy, dp_accounting (imported on first use, by
:mod:`~audit.theory.pld` and :mod:`~audit.theory.pair.releases`) and the shared vocabulary
only (``audit.enums``, ``audit.noise``, ``audit.mixture``, ``audit._validate``, ``audit._numeric``;
``tests/test_layout.py``).
"""
