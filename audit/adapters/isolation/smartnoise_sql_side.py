"""SmartNoise SQL's side of the ``smartnoise-sql`` adapter: runs in its worker, in its own
environment (it imports ``snsql`` and numpy, never ``audit``; see
:mod:`audit.adapters.smartnoise_sql` for the semantics and the sources).

``make(params)`` sets up, once per worker, an in-memory SQLite table ``t`` with one nullable
REAL column ``x``, SmartNoise's metadata for it (``row_privacy``, ``censor_dims`` off, the
column's ``lower``/``upper``) and a private reader (``snsql.from_connection(...,
engine="sqlite")``, the engine SmartNoise's own pandas reader loads a DataFrame into). Each
release empties the table, inserts the dataset's column (NaN as NULL) and runs the query
through the reader: the library's parser, rewriter (clamping), SQL engine and noise.

Parameters: ``function`` (``"sum"``, ``"avg"`` or ``"count"``), ``bounds`` ([lo, hi]),
``column`` (the dataset column read), ``epsilon`` (the ``Privacy`` epsilon: SmartNoise's
budget per statistic). The seed is not used: SmartNoise draws its noise from OpenDP's CSPRNG.
"""

import math
import sqlite3
from importlib import metadata

import numpy as np

INFO = {"distribution": "smartnoise-sql"}
QUERIES = {"sum": "SELECT SUM(x) FROM t", "avg": "SELECT AVG(x) FROM t",
           "count": "SELECT COUNT(x) FROM t"}


def _reader(bounds, epsilon):
    import snsql

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x REAL)")
    meta = {"": {"": {"t": {"row_privacy": True, "censor_dims": False,
                            "x": {"type": "float", "lower": float(bounds[0]),
                                  "upper": float(bounds[1]), "nullable": True}}}}}
    privacy = snsql.Privacy(epsilon=float(epsilon), delta=0.0)
    return conn, snsql.from_connection(conn, privacy=privacy, metadata=meta, engine="sqlite")


def make(params):
    function = params["function"]
    query = QUERIES[function]
    column = int(params.get("column", 0))
    conn, reader = _reader(params["bounds"], params["epsilon"])
    subquery, _ = reader._rewrite(query)  # what the library runs exactly (for the record)
    cost = [float(v) for v in reader.get_privacy_cost(query)]

    def one(values):
        conn.execute("DELETE FROM t")
        conn.executemany("INSERT INTO t VALUES (?)",
                         [(None if math.isnan(v) else float(v),) for v in values])
        rows = reader.execute(query)
        value = rows[1][0]
        return math.nan if value is None else float(value)

    def release(datasets, seed):
        if column >= datasets.shape[2]:
            raise ValueError(f"parameter 'column' is {column} but the data has "
                             f"{datasets.shape[2]} columns")
        return np.array([one(x[:, column].tolist()) for x in datasets], dtype=np.float64)

    info = {"snsql": metadata.version("smartnoise-sql"), "opendp": metadata.version("opendp"),
            "query": query, "runs": str(subquery), "privacy_cost": cost}
    return release, info
