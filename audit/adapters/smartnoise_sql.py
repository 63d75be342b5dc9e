"""SmartNoise SQL (``smartnoise-sql`` 1.0.10) ``SELECT SUM(x)``, ``AVG(x)``, ``COUNT(x)`` over a
one-column table with NULLs, as isolated black-box implementations.

**Isolated.** SmartNoise SQL 1.0.10 needs ``opendp>=0.14.1,<0.15`` and ``pandas>=2,<3``; the
auditor's OpenDP adapters need opendp 0.16, so it cannot be installed beside them. ``ADAPTER``
declares its own environment (:data:`ENVIRONMENT`: the pins below, on Python 3.11), built
once on first use or by ``python -m audit env build smartnoise-sql``; the library runs in a
worker there (:mod:`audit.adapters.isolation`), which imports only
``audit/adapters/isolation/smartnoise_sql_side.py``.

Targets: ``smartnoise-sql:sum``, ``:avg``, ``:count``. Parameters:

``bounds`` (required)
    (lo, hi): the column's ``lower`` and ``upper`` in SmartNoise's metadata.
``column`` (default 0)
    The dataset column that fills the table's one column ``x`` (one row per record).
``groups`` (default :data:`GROUPS`)
    The most datasets one query releases. 1: one ``SELECT SUM(x) FROM t`` per dataset, about
    30 a second (each query rebuilds its mechanism, whose Laplace scale OpenDP's
    ``binary_search_param`` searches). G > 1: up to G datasets in one table, dataset i's rows
    keyed by a public column ``g = i``, released by ``SELECT g, SUM(x) FROM t GROUP BY g``
    (``censor_dims`` off: every key is released, each with its own noise, no threshold): one
    record is one row in one key, so each key's release is the single query's on its
    dataset, and SmartNoise states the same cost for the grouped query (checked when the
    target is made); a batch of one dataset is the single query. About 1,000 releases a
    second at G = 100. That the keys' releases are independent and each has the single
    query's law is checked, not assumed: the audit runs :mod:`audit.model.batch_check` once
    per target (``batch_in_one_call``) and calls the library once per dataset if it fails;
    ``tests/adapters/test_smartnoise_sql.py`` (marker ``isolated``) tests it on more calls.

Each release fills the table ``t`` with the dataset's column (NaN inserted as SQL NULL) and
runs ``SELECT SUM(x) FROM t`` (or ``AVG``, ``COUNT``) through ``snsql.from_connection`` on an
in-memory SQLite database (the engine SmartNoise's pandas reader itself loads a DataFrame
into), with metadata ``row_privacy: true``, ``censor_dims: false``, ``nullable: true``.

**Claim.** SmartNoise's ``Privacy(epsilon)`` is the budget of *each statistic* of a query
(``Privacy`` docstring, sql/privacy.py:64; every aggregate's mechanism gets the full epsilon,
_ast/ast.py:117-128), for neighbouring tables that differ by one row added or removed
(``row_privacy``; the Laplace scale is searched by OpenDP's ``binary_search_param`` over a
clamp-then-sum on the symmetric distance at ``d_in = max_contrib = 1``,
sql/_mechanisms/laplace.py:39-54): ``Relation.ADD_REMOVE``. One record is one row, so its
substitution is two steps, and the adapter hands the query ε/2
(``to_substitution(ADD_REMOVE, ε)``), split evenly over the statistics the library computes:
``SUM`` and ``COUNT`` one each, ``AVG`` two (a noisy ``SUM`` over a noisy ``COUNT``,
sql/private_rewriter.py:58-70), so ``Privacy(epsilon = ε/4)``. The library's own statement,
``reader.get_privacy_cost(query)``, is checked to be ε/2 when the target is made and is kept
in the claim's note. The claim is (ε, 0): Laplace noise, no censoring, so ``delta`` must be 0.

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): the noise is OpenDP's
``make_laplace`` (sql/_mechanisms/laplace.py:65-71), drawn from OpenDP's CSPRNG; SmartNoise
has no seed parameter. The seed the worker is handed is not used.

**What a NULL (a NaN) does** (smartnoise-sql 1.0.10, ``snsql/``):

* Clamping keeps NULL: the rewriter wraps the column in ``CASE WHEN x < lo THEN lo WHEN x > hi
  THEN hi ELSE x END`` (sql/private_rewriter.py:318-324), and a comparison with NULL is not
  true, so NULL falls to ``ELSE x``: NULL. (With a metadata ``missing_value`` the column would
  be ``COALESCE(x, missing_value)`` first, private_rewriter.py:312-313; this adapter sets
  none.)
* ``SUM(x)`` (``sum``): SQL's SUM skips NULL, so a NULL adds nothing — read as 0, whether or
  not 0 lies in the bounds. All NULL: SQL returns NULL, which the reader sets to 0 "before
  adding noise" (sql/private_reader.py:533-536): 0 + noise, never NULL. The sensitivity is
  the column's max(|lo|, |hi|) (``Column.sensitivity``, _ast/ast.py:585-592), which covers a
  value becoming NULL even when 0 is outside the bounds (bounds (2, 3): a NULL moves the sum
  by up to 3, the sensitivity is 3) — unlike diffprivlib's ``nansum``, calibrated to hi − lo.
* ``COUNT(x)`` (``count``): counts the non-NULL rows (a NULL is dropped), sensitivity 1
  (``AggFunction.sensitivity``, _ast/expressions/sql.py:91-97), Laplace noise, then the
  integer column type truncates it toward 0 (``int(float(...))``, private_reader.py:604-605);
  counts are not clamped at 0 (``clamp_counts`` is off by default, metadata.py:427).
* ``AVG(x)`` (``avg``): rewritten as the noisy ``SUM(x)`` over the noisy ``COUNT(x)``
  (private_rewriter.py:58-70), so over the non-NULL rows only; when the noisy count
  truncates to 0 the quotient is 0 (``if self.op == '/' and int(r) == 0: return 0``,
  _ast/expressions/numeric.py:105-106), and a negative noisy count divides as it is: the
  release is never NULL, and not clamped to the bounds. All NULL: noise over noise, or 0.
"""

from __future__ import annotations

import math
from pathlib import Path

from audit.adapters import _common, relations
from audit.adapters.isolation.client import IsolatedImplementation, launch
from audit.adapters.isolation.environments import Environment
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import Claim

LIBRARY = "smartnoise-sql"
DISTRIBUTION = "smartnoise-sql"
#: the environment SmartNoise SQL runs in (``pip freeze`` of a fresh install, 2026-12-04)
ENVIRONMENT = Environment(LIBRARY, (
    "smartnoise-sql==1.0.10", "opendp==0.14.2", "pandas==2.3.3", "numpy==2.4.6",
    "SQLAlchemy==2.1.9", "antlr4-python3-runtime==4.9.3", "PyYAML==6.0.4", "graphviz==0.21",
), "3.11")
#: the library-side module the worker loads
SIDE = Path(__file__).resolve().parent / "isolation" / "smartnoise_sql_side.py"
#: statistics SmartNoise computes (each spending its Privacy epsilon) per target
STATISTICS = {"sum": 1, "avg": 2, "count": 1}
#: datasets per GROUP BY query by default (module docstring)
GROUPS = 100
#: most datasets per query
MAX_GROUPS = 10_000
QUERY = {"sum": "SUM(x)", "avg": "AVG(x)", "count": "COUNT(x)"}


def _check_groups(target: str, value: object) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_GROUPS
    if not ok:
        raise ValueError(f"{target}: parameter 'groups' must be an integer in [1, "
                         f"{MAX_GROUPS}], got groups={value!r}")
    return int(value)


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> IsolatedImplementation:
    """``SELECT <function>(x) FROM t`` in SmartNoise SQL's worker (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    lo, hi = _common.check_bounds(target, p["bounds"])
    column = _common.check_one_column(target, p["column"], "the table has one column")
    if delta != 0.0:
        raise ValueError(f"{target}: SmartNoise's sums and counts are pure ε-DP (Laplace); "
                         f"delta must be 0, got delta={delta!r}")
    budget = relations.to_substitution(ADAPTER.relation, epsilon, 0.0, entries=1).epsilon
    per_statistic = budget / STATISTICS[function]
    groups = _check_groups(target, p["groups"])
    lib = {"function": function, "bounds": [lo, hi], "column": column,
           "epsilon": per_statistic, "groups": groups}
    worker, info = launch(ENVIRONMENT, SIDE, lib, name=target)
    cost = info.get("privacy_cost", [math.nan, math.nan])
    if not math.isclose(cost[0], budget, rel_tol=1e-9):
        worker.close()
        raise ValueError(f"{target}: SmartNoise states the query costs ε = {cost[0]}, not the "
                         f"{budget:.6g} the adapter computed; the adapter needs updating")
    by = "" if groups == 1 else f" (up to {groups} datasets per query, GROUP BY a public key)"
    note = (f"smartnoise-sql {info.get('snsql')} (opendp {info.get('opendp')}) SELECT "
            f"{QUERY[function]}{by} with bounds ({lo}, {hi}), "
            f"Privacy(epsilon={per_statistic:.6g}) "
            f"per statistic; the library states its cost as (ε, δ) = ({cost[0]:.6g}, "
            f"{cost[1]:.3g}) per row added or removed: ε-DP per substituted record (see "
            f"audit.adapters.smartnoise_sql for what NULL does)")
    impl = IsolatedImplementation(ENVIRONMENT, str(SIDE), lib, Claim(epsilon, 0.0, note),
                                  target, info, batch_in_one_call=groups > 1)
    impl.adopt(worker)
    return impl


_PARAMETERS = (Parameter("bounds", REQUIRED, "(lo, hi): the column's lower and upper"),
               Parameter("column", 0, "the dataset column that fills the table"),
               Parameter("groups", GROUPS, "the most datasets one query releases (GROUP BY "
                                           "a public key per dataset); 1: a query each"))
_DEFAULT = Example("default", {"bounds": [-1.0, 1.0]}, doc="one nullable column in [-1, 1]")

#: ``Target.source`` (smartnoise-sql 1.0.10, ``snsql/``): the clamp keeps NULL
_R = "snsql/sql/private_rewriter.py"
_CLAMP = f"{_R}:318-324"

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="snsql", seedable=False,
    relation=Relation.ADD_REMOVE, make=make, environment=ENVIRONMENT,
    summary="SmartNoise SQL 1.0 SELECT SUM/AVG/COUNT (Laplace, per statistic), isolated",
    targets=(
        Target("sum", _PARAMETERS, nan=NanSemantics.READ_AS_ZERO,
               summary="SQL SUM skips NULL (all NULL: 0 + noise); sensitivity max(|lo|, |hi|) "
                       "covers it",
               source=f"{_CLAMP}; snsql/sql/private_reader.py:533-536",  # NULL sum -> 0
               examples=(_DEFAULT,
                         Example("bounds-exclude-zero", {"bounds": [2.0, 3.0]},
                                 doc="0 outside the bounds: a NULL adds 0, within the "
                                     "sensitivity 3"))),
        Target("avg", _PARAMETERS, nan=NanSemantics.DROPS,
               summary="noisy SUM over noisy COUNT of the non-NULL rows; 0 when the count "
                       "truncates to 0",
               # AVG -> SUM / COUNT; a count truncated to 0 divides to 0
               source=f"{_R}:66-69; snsql/_ast/expressions/numeric.py:105-106",
               examples=(_DEFAULT,)),
        Target("count", _PARAMETERS, nan=NanSemantics.DROPS,
               summary="counts the non-NULL rows; Laplace noise truncated toward 0",
               source=f"{_CLAMP}; {_R}:121-122",  # COUNT(x) pushed to SQL as it is
               examples=(_DEFAULT,)),
    ),
)
