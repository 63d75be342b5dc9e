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
budget per statistic), ``groups`` (the most datasets one query releases: 1, one query per
dataset; G > 1, up to G datasets in one table, dataset i's rows carrying the public key
``g = i``, released by one ``SELECT g, SUM(x) FROM t GROUP BY g``: one row per key, each
with its own noise, ``censor_dims`` off so no key is suppressed; a batch of one dataset is
the single query, the unbatched law the check compares with). The seed is not used:
SmartNoise draws its noise from OpenDP's CSPRNG.
"""

import math
import sqlite3
from importlib import metadata

import numpy as np

INFO = {"distribution": "smartnoise-sql"}
QUERIES = {"sum": "SELECT SUM(x) FROM t", "avg": "SELECT AVG(x) FROM t",
           "count": "SELECT COUNT(x) FROM t"}
GROUPED = {"sum": "SELECT g, SUM(x) FROM t GROUP BY g", "avg": "SELECT g, AVG(x) FROM t GROUP BY g",
           "count": "SELECT g, COUNT(x) FROM t GROUP BY g"}


def _reader(bounds, epsilon):
    import snsql

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (g INTEGER, x REAL)")
    meta = {"": {"": {"t": {"row_privacy": True, "censor_dims": False, "g": {"type": "int"},
                            "x": {"type": "float", "lower": float(bounds[0]),
                                  "upper": float(bounds[1]), "nullable": True}}}}}
    privacy = snsql.Privacy(epsilon=float(epsilon), delta=0.0)
    return conn, snsql.from_connection(conn, privacy=privacy, metadata=meta, engine="sqlite")


def make(params):
    function = params["function"]
    query = QUERIES[function]
    column = int(params.get("column", 0))
    conn, reader = _reader(params["bounds"], params["epsilon"])
    groups = int(params.get("groups", 1))
    ran = query if groups == 1 else GROUPED[function]
    subquery, _ = reader._rewrite(ran)  # what the library runs exactly (for the record)
    cost = [float(v) for v in reader.get_privacy_cost(ran)]

    def fill(columns):
        conn.execute("DELETE FROM t")
        conn.executemany("INSERT INTO t VALUES (?, ?)",
                         [(g, None if math.isnan(v) else float(v))
                          for g, values in enumerate(columns) for v in values])

    def value(v):
        return math.nan if v is None else float(v)

    def one(values):
        fill([values])
        return value(reader.execute(query)[1][0])

    def grouped(columns):
        fill(columns)
        out = np.full(len(columns), np.nan)
        seen = np.zeros(len(columns), dtype=bool)
        for key, v in reader.execute(GROUPED[function])[1:]:
            out[int(key)], seen[int(key)] = value(v), True
        if not seen.all():
            raise ValueError(f"SmartNoise released {int(seen.sum())} of {len(columns)} "
                             f"keys of a GROUP BY query")
        return out

    def release(datasets, seed):
        if column >= datasets.shape[2]:
            raise ValueError(f"parameter 'column' is {column} but the data has "
                             f"{datasets.shape[2]} columns")
        columns = [x[:, column].tolist() for x in datasets]
        if groups == 1 or len(columns) == 1:  # one dataset: the single query
            return np.array([one(c) for c in columns], dtype=np.float64)
        return np.concatenate([grouped(columns[i:i + groups])
                               for i in range(0, len(columns), groups)])

    info = {"snsql": metadata.version("smartnoise-sql"), "opendp": metadata.version("opendp"),
            "query": ran, "runs": str(subquery),
            "privacy_cost": cost, "groups": groups}
    return release, info
