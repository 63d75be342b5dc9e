"""The targets of the ``library_audit`` experiment and the settings they are audited at: what
the experiment (:mod:`experiments.library_audit`) and the NaN regression table
(:mod:`experiments.nan_regression`, which reports each kept row's MCAR refutations) both
read, below both so that neither imports the other.
"""

from __future__ import annotations

import math

__all__ = ["RATES", "N_RECORDS", "PILOT", "LIBRARIES", "TARGETS", "target_params", "pair_of",
           "pilot_calls"]

RATES = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)
N_RECORDS = 20
#: pilot calls per side: at smoke size 600; at default size one per-rate budget per rate
#: (:func:`pilot_calls`: half the stratified audit's default of six implementation-audit
#: pilots, each twice the per-rate budget); at full size that default (None)
PILOT = {"smoke": 600, "default": "per-rate", "full": None}


def pilot_calls(size: str, trials: int) -> int | None:
    """The pilot calls per side of a target whose per-rate budget is ``trials`` (:data:`PILOT`;
    None: the stratified audit's default)."""
    pilot = PILOT[size]
    return len(RATES) * trials if pilot == "per-rate" else pilot
LIBRARIES = ("diffprivlib", "opendp", "pipeline-dp", "python-dp", "scikit-learn")

#: per target: the adapter example whose parameters it runs (``audit.adapters.example``; all
#: with bounds [−1, 1]), the query that ranks the search's pairs, the pair, budgets and the
#: finding's text
TARGETS = (
    {"target": "diffprivlib:nanmean", "example": "default", "query": "bounded-mean",
     "pair": "others-at-bound",
     "trials": {"smoke": 200, "default": 10_000, "full": 100_000},
     "setting": "explicit pair z₁ = −1 vs +1, other records +1",
     "cause": (
         "`diffprivlib/tools/utils.py` `_mean`: `np.nanmean` (l. 290) averages the k observed "
         "entries, while `LaplaceTruncated` gets `sensitivity=(upper - lower) / array.size` "
         "(l. 293), N = `array.size` counting the NaN entries. A changed entry moves the mean "
         "of k values by up to 2/k, so the noise is N/k times too small; with the other "
         "records at +1, z′ releases 1 + noise whatever the mask while z's mean 1 − 2/k moves "
         "further off as π lowers k.")},
    {"target": "diffprivlib:nansum", "example": "default", "query": "sum",
     "pair": "search",
     "trials": {"smoke": 200, "default": 2_000, "full": 20_000},
     "setting": "search pair z₁ = −1 vs +1, other records 0",
     "cause": (
         "`diffprivlib/tools/utils.py` `_sum`: `np.nansum` (l. 735) reads a NaN as 0, and "
         "`LaplaceTruncated` gets `sensitivity=upper - lower` (l. 739), which covers a value "
         "replaced by 0 because 0 ∈ [−1, 1] (with bounds excluding 0 the per-entry "
         "sensitivity would be max(|lo|, |hi|) > hi − lo).")},
    {"target": "diffprivlib:mean", "example": "default", "query": "bounded-mean",
     "pair": "nan-one-side",
     "trials": {"smoke": 200, "default": 1_500, "full": 30_000},
     "setting": "explicit pair z₁ = NaN vs +1, other records 0",
     "cause": (
         "`diffprivlib/tools/utils.py` `_mean` with `nan=False`: `np.mean` (l. 290) of data "
         "holding a NaN is NaN, `Laplace.randomise` returns `value - scale * noise` "
         "(`mechanisms/laplace.py:149`), NaN, and `_truncate` compares false both ways and "
         "returns it (`mechanisms/base.py:217-223`): the release is NaN if and only if some "
         "entry is missing, a deterministic function of the missingness pattern.")},
    {"target": "opendp:sum", "example": "impute", "query": "sum", "pair": "search",
     "trials": {"smoke": 200, "default": 2_500, "full": 25_000},
     "setting": "nan = impute 0; search pair z₁ = −1 vs +1, other records 0",
     "cause": (
         "OpenDP 0.16 `make_impute_constant` replaces each NaN by the constant before "
         "`make_clamp` (which refuses a domain that may hold NaN), so the sized checked sum "
         "sees N values and its map d_in/2·(hi − lo) covers a NaN turned into the constant; "
         "the noise is calibrated on that map at d_in = 2 (one substitution).")},
    {"target": "pipelinedp:sum", "example": "propagate", "query": "sum", "pair": "nan-one-side",
     "trials": {"smoke": 200, "default": 1_500, "full": 30_000},
     "setting": "nan = propagate; explicit pair z₁ = NaN vs +1, other records 0",
     "cause": (
         "`pipeline_dp/combiners.py` `SumCombiner.create_accumulator` (l. 430-435) returns "
         "`np.clip(values, min, max).sum()`: nothing validates the values, `np.clip` keeps "
         "NaN, and `AdditiveMechanism.add_noise` (`dp_computations.py:448-456`) hands NaN to "
         "PyDP, which returns NaN: the release is NaN if and only if some entry is missing.")},
    # libraries in their own environments (built on first use): not at smoke size, so the
    # default tests build none; SmartNoise SQL: 100 datasets per GROUP BY query
    # (audit.adapters.smartnoise_sql)
    # appended after the seeded targets, so that their seeds (seed + position) stay
    {"target": "diffprivlib:nanvar", "example": "default", "query": "bounded-mean",
     "pair": "others-at-bound", "statistic": "variance",
     "trials": {"smoke": 200, "default": 4_000, "full": 40_000},
     "setting": "explicit pair z₁ = −1 vs +1, other records +1",
     "cause": (
         "`diffprivlib/tools/utils.py` `_var`: `np.nanvar` (l. 447-448) is the variance of the k "
         "observed entries, while `LaplaceBoundedDomain` gets `sensitivity=((upper - lower) / "
         "array.size) ** 2 * (array.size - 1)` (l. 450-452), N = `array.size` counting the NaN "
         "entries: 0.19 for N = 20, against up to 4(k − 1)/k² for k observed values. The "
         "output domain [0, (hi − lo)²/4] caps the excess, so the pair stays below the claim "
         "ε while the amplified claim fails; `std`/`nanstd` are √ of this release "
         "(`_std`, l. 582-594), the same ε.")},
    {"target": "smartnoise-sql:sum", "example": "default", "query": "sum", "pair": "ends",
     "trials": {"smoke": None, "default": 1_500, "full": 15_000},
     "setting": "isolated environment; explicit pair z₁ = −1 vs +1, other records 0",
     "cause": (
         "SmartNoise SQL 1.0.10: SQL's `SUM(x)` skips NULL (read as 0) after the rewriter's "
         "clamp `CASE WHEN x < lo … ELSE x END` keeps it NULL (`sql/private_rewriter.py:"
         "313-323`), and the Laplace noise is calibrated to the column's sensitivity "
         "max(|lo|, |hi|) = 1 (`_ast/ast.py:585-592`) at the ε/2 the adapter hands it per "
         "row added or removed, which covers a value becoming NULL.")},
    # Spark-backed (each call a Spark job, a worker's start-up 15-30 s): at full size only
    {"target": "tumult:sum", "example": "default", "query": "sum", "pair": "ends",
     "trials": {"smoke": None, "default": None, "full": 3_000},
     "setting": "isolated environment (Spark); explicit pair z₁ = −1 vs +1, other records 0",
     "cause": (
         "Tumult Analytics 0.21: NULL and NaN rows are dropped before the sum (a missing value "
         "adds 0; `audit/adapters/tumult.py` cites the lines), whose Laplace noise is "
         "calibrated to max(|lo|, |hi|) per row added or removed (`spark_transformations/"
         "agg.py:1048-1050`) at the ε/2 the adapter hands it, which covers a value becoming "
         "NULL.")},
)


def target_params(spec: dict) -> dict:
    """The parameters of a target: its adapter's example ``spec["example"]`` (a fresh copy)."""
    from audit.adapters import example as adapter_example  # the adapters load scipy

    return adapter_example(spec["target"], spec["example"]).kwargs()


def pair_of(kind: str, n: int) -> dict | None:
    """The explicit pair of a target (None: the worst-case search)."""
    if kind == "search":
        return None
    if kind == "ends":  # the search's own pair for a sum, given
        return {"z": [[-1.0]] + [[0.0]] * (n - 1), "z_prime": [[1.0]] + [[0.0]] * (n - 1)}
    if kind == "others-at-bound":
        return {"z": [[-1.0]] + [[1.0]] * (n - 1), "z_prime": [[1.0]] * n}
    if kind == "nan-one-side":
        return {"z": [[math.nan]] + [[0.0]] * (n - 1),
                "z_prime": [[1.0]] + [[0.0]] * (n - 1)}
    raise ValueError(f"unknown pair kind {kind!r}")
