"""OpenDP's Polars API (``opendp.extras.polars``): dp sum, mean, len, quantile and median of a
LazyFrame column, and a dp sum per declared key of a ``group_by``, as black-box implementations.

Targets: ``opendp-polars:sum``, ``mean``, ``len``, ``quantile``, ``median`` and
``group_by_sum`` (``ADAPTER`` declares them, with their parameters, NaN semantics and
examples). Each call but ``group_by_sum``'s releases

    LazyFrame {"x": Float64} → ``pl.col("x")`` → fill_null / fill_nan / drop_nulls / drop_nans
    (or nothing) → ``.dp.sum(bounds)``, ``.dp.mean(bounds)`` or ``.dp.len(signed=True)``

through ``dp.Context.compositor(data=..., privacy_unit=dp.unit_of(contributions=2k),
privacy_loss=dp.loss_of(epsilon=ε), split_evenly_over=1, margins=[dp.polars.Margin(
max_length=N)])`` and ``context.query().select(expr)``, N = n·k rows (the audited (n, d)
array flattened record by record: one record is k rows, k = d, or 1 with ``column``).
Parameters:

``bounds`` (required for sum and mean; not accepted by len)
    (lo, hi) of the clip inside ``.dp.sum`` / ``.dp.mean``.
``missing`` (default ``"null"``)
    How a NaN of the audited array reaches Polars: ``"null"``, a Polars null
    (``pl.Series(..., nan_to_null=True)``), or ``"nan"``, a float NaN.
``nan`` (default ``"fill_null"`` for sum and mean, ``"keep"`` for len)
    What the query does to the column first: ``"fill_null"`` (``.fill_null(constant)``),
    ``"fill_nan"`` (``.fill_nan(constant)``), ``"drop"`` (``.drop_nulls()`` when
    ``missing="null"``, ``.drop_nans()`` when ``"nan"``: the missing entries are removed) or
    ``"keep"`` (nothing). The name follows every other adapter: ``nan`` selects the
    ``NanSemantics`` (``Target.nan_options``).
``constant`` (default 0.0)
    The fill value of ``fill_null`` / ``fill_nan``.
``column`` (default None; not accepted by ``group_by_sum``)
    None: every entry, record by record; an integer j: column j only.
``candidates`` (required), ``alpha`` (default 0.5; quantile only)
    ``.dp.quantile(alpha, candidates)`` / ``.dp.median(candidates)``: the candidate chosen by
    the exponential mechanism (OpenDP's summary: "0.5-Quantile", "ExponentialMin"); the median
    is the same path at α = 0.5 (the same summary and scale, measured). A scalar release.

``group_by_sum`` releases a fixed-length vector, one ``.dp.sum(bounds)`` per key: the (n, d)
array becomes a two-column LazyFrame, one row per entry, record by record, ``k`` the entry's
column index 0..d−1 and ``x`` its value; the query is the declared key set {0, …, d−1}
left-joined with ``group_by("k").agg(expr)`` (``with_keys``, extras/polars/__init__.py:939-969:
the keys are the analyst's, not read from the data, so no partition selection and no
threshold), with margins ``max_length = n·d`` and, per key, ``max_length = n``; the release is
the d sums in key order. A record is d rows, one per key: ``contributions = 2d``, and without a
public length each sum's sensitivity is 2d·max(|lo|, |hi|) in L1 over the keys (OpenDP's
summary: one Laplace scale 2d·max(|lo|, |hi|)/ε, e.g. 6 for d = 3, bounds (−1, 1), ε = 1).
``missing``, ``nan``, ``constant`` as above, applied inside the aggregation.

**Claim.** OpenDP's privacy unit ``dp.unit_of(contributions=c)`` is the symmetric distance
between LazyFrames — rows inserted plus rows deleted — at ``d_in = c`` (context.py:337-391,
``unit_of``: ``symmetric_distance()``; ``Relation.SYMMETRIC_DISTANCE``). The substitution of
one record deletes its k rows and inserts k, a distance of 2k
(``to_substitution(SYMMETRIC_DISTANCE, ε, entries=k).distance``), so the unit is
``contributions=2k`` and the loss ``epsilon=ε``, and the noise is scaled so that OpenDP's
privacy map at d_in = 2k is ≤ ε (``calibrated``: the scale of OpenDP's own
``LazyFrameQuery.resolve``, extras/polars/__init__.py:1049-1103). No margin declares the
length public, so the float sum has sensitivity d_in·max(|lo|, |hi|) (the sum's stability map,
rust transformations/make_stable_expr/expr_sum/mod.rs:175-176), plus the float-rounding
relaxation for ``max_length = N``; the mean is a noisy sum over a noisy len, ε split between
them (measurements/make_private_expr/expr_dp_mean/mod.rs:93-113); the len is an integer count
with sensitivity d_in (integer Laplace scale 2k/ε). Laplace only (pure ε-DP): ``delta`` must
be 0. The claim is (ε, 0).

**Calibration once, release per call.** ``release()`` is the context's queryable applied to
``resolve()`` (extras/polars/__init__.py:1105-1109), and the resolved measurement depends only
on the frame's schema (the domain is inferred from it: ``_lazyframe_domain_from_schema``,
extras/polars/__init__.py:676-686, every column ``option_domain``, NaN allowed), the unit, the
loss and the margin, not on the data. A fresh ``Context`` + ``release().collect()`` per call
re-runs ``resolve``'s bisection of the global scale, thousands of constructions: 0.8 s (len)
to 5.5 s (sum, mean) per call. So the measurement is built once per dataset shape, with the
same scale found in two or three constructions (``calibrated``; the tests compare it with
``resolve``'s), and each call applies it to the call's LazyFrame and collects:
on the benchmark's dataset (``benchmarks/bench_adapters.py``: 100 records × 3, 300 rows,
complete or 20 % missing) 840-1,100 calls/s for the sum, 540-670 for the mean, 610-1,150 for
the len, the first call (the calibration) 0.03-0.2 s.

**Batched form** (``impl.batch(datasets, rng)``, ``batch_in_one_call``): a stack of m
datasets is cut into blocks of T (:func:`partitions_per_call`: 20,000 rows ÷ (n·k), within
[1, 1000]); each block is one query ``group_by("dataset").agg(expression)`` on a
frame whose key column names the dataset of each row, through a compositor whose privacy unit
is ``[Bound(per_group=2k), Bound(by=["dataset"], num_groups=1)]`` (one record's substitution
changes 2k rows of one dataset: true by construction) and whose margin declares the keys
public (``Margin(by=["dataset"], max_length=n·k, max_groups=T, invariant="keys")``, so every
key is released, no partition selection), calibrated as the unbatched query is. Each key's
noise scale equals the unbatched query's (OpenDP's summary: equal to 10⁻¹², the float-sum
rounding relaxation), and the expression, hence what a null or a NaN does, is the unbatched
one, applied per key. A last, shorter block is padded with datasets of zeros whose releases are
discarded. The audit checks the keys' independence (:mod:`audit.model.batch_check`).
Measured (``benchmarks/bench_batched.py``, one process): about 10-17× the unbatched calls per
second on datasets of ten values, about 5× on 300 values (the query's cost is per row there).

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): the noise comes from OpenDP's
CSPRNG, as for the core adapter (``audit/adapters/opendp.py``); ``rng`` is not used.

**What a NaN does** (OpenDP 0.16.0 with polars 1.36.1, the version it pins; the Rust source
of the 0.16.0 sdist, ``rust/src``; checked on the installed wheel):

* The inferred domain is nullable and NaN-permitting, so nothing is refused at construction:
  every handling builds for both ``missing`` values.
* ``.dp.sum(bounds)`` imputes on its own: before the clip it fills nulls, and for a float column
  NaN, with the midpoint (lo + hi)/2 of the bounds (``make_expr_dp_sum``,
  measurements/make_private_expr/expr_dp_sum/mod.rs:106-117 the filler, 133 ``fill_null``,
  135-137 ``fill_nan``, 139 ``clip``). So a missing value the query leaves in place — ``"keep"``,
  or a fill that does not match the representation (``fill_nan`` of a null, ``fill_null`` of a
  NaN: Polars' ``fill_null`` does not touch NaN, nor ``fill_nan`` a null) — is read as the
  midpoint, never as NaN. Checked: [0.5, missing, 0.25, 1.0] with bounds (0, 1) at ε = 10⁴
  sums to 1.75 with a matching fill of 0 (or ``"drop"``) and to 2.25 when the
  missing value is left. No release is ever NaN:
  ``NanSemantics.IMPUTES_CONSTANT`` for the fills and ``"keep"``.
* ``"drop"``: ``drop_nulls`` / ``drop_nans`` remove the missing rows (and mark the column
  non-null / non-NaN, expr_drop_nan_or_null/mod.rs:48-49); the sum runs over the observed
  entries (``NanSemantics.DROPS``; an all-missing dataset sums to 0 + noise).
* ``.dp.mean(bounds)`` is ``dp_sum(input) / dp_len(input)`` on the same input
  (expr_dp_mean/mod.rs:101-112): with a fill or ``"keep"`` the missing entries are in the
  denominator N (imputed as above); with ``"drop"`` the denominator is the noisy count of the
  observed entries — on an all-missing dataset that count is 0 with probability ≈ 0.12 (integer
  Laplace, scale 4), and the mean is then ±inf: no ``drop`` example of the mean is declared
  (the contract holds a ``drops`` target to finite releases).
* ``.dp.len()`` counts every row, nulls and NaN included (``Strategy::Len``,
  transformations/make_stable_expr/expr_count/mod.rs:106-109, 124-128): ``NanSemantics.COUNTED``
  for the fills and ``"keep"`` (the fills do not change the length); after ``"drop"`` it counts
  the observed entries (``DROPS``). Under substitution the length n·k is the same on both
  datasets, so ``len`` with ``"keep"`` does not depend on the data.
* ``.dp.quantile`` / ``.dp.median``: a fill or ``"drop"`` as above (the candidates are
  scored on the filled, or the observed, entries: ``IMPUTES_CONSTANT`` / ``DROPS``). A null or
  NaN left in the column (``"keep"``, or the fill that does not match the representation) is
  neither dropped nor NaN: measured on 0.16.0 at ε = 10⁴ (where the release is the best-scored
  candidate, OpenDP scoring c by |(1 − α)·#{x < c} − α·#{x > c}| up to a factor, ties at
  random), it is scored as the median of the candidates, as ``.dp.sum`` fills with the
  midpoint of its bounds (99 missing and one 1000.0 release 30 with candidates 10, 20, …, 50
  and with 10, 20, 30, 40, 90; with −50, −40, −30, −20 they release −30 or −20 at random, as a
  fill with −35 does; six missing and four 10.0 release 20, as a fill with 30 does, where
  dropping them releases 10). The rule is measured, not read (the plugin's Rust source is not
  installed here). ``NanSemantics.IMPUTES_CONSTANT``; never NaN.
* ``group_by_sum``: within each key's group, the handling of ``.dp.sum`` above (a matching
  fill, the midpoint fill of what is left, or ``drop``); a missing entry never moves a row to
  another key (the key is the column index, never missing), so every key is present and the
  vector has length d.
* The expected verdict of every target on data with missing values is that its claim holds:
  these are OpenDP's own shortcuts, which impute or count before any aggregation. The NaN/null
  reports (#2936, #2938-#2940) are queries written with the plain Polars expressions (``clip``,
  ``sum``, ``count``, ``cast``, ``cut``, ``%``) plus ``.dp.noise()``, which skip that
  imputation; ``experiments/opendp_issues.py`` audits them (refuted on 0.16).

**Sources** (``Target.source``). What ``.dp.sum`` and the others do with a null or a NaN is
decided in OpenDP's Rust Polars plug-in (``make_expr_dp_sum`` and its kin, cited above from the
0.16.0 sdist), which is compiled into the wheel and not installed as source. Each target's
``source`` therefore cites the installed Python line that hands the expression to the plug-in,
``register_plugin_function(..., function_name="dp_sum", ...)`` and its kin in
opendp/extras/polars/__init__.py (``dp_len`` 228-233, ``dp_sum`` 429-435, ``dp_mean``
483-489, ``dp_quantile`` 530-536, ``dp_median`` 575-581), and for ``group_by_sum`` also the
left join on the declared keys (``with_keys``, 965-968). The fills and drops the adapter
applies first (``fill_null``, ``drop_nulls``, ...) are Polars', not OpenDP's.
"""

from __future__ import annotations

import numpy as np

from audit._validate import check_positive_int
from audit.adapters import _common, relations
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import CallableImplementation, Claim

LIBRARY = "opendp-polars"
DISTRIBUTION = "opendp"
#: the name of the one column of the LazyFrame
COLUMN = "x"
#: the name of the key column of ``group_by_sum``'s LazyFrame
KEY = "k"
#: the key column of the batched form's frame (one public key per dataset)
DATASET = "dataset"
#: Rows (entries) per query of the batched form, and its most public keys (datasets) per query
#: (:func:`partitions_per_call`; measured with ``benchmarks/bench_batched.py``).
ROWS_PER_CALL = 20_000
MAX_PARTITIONS = 1000


def partitions_per_call(rows: int) -> int:
    """T, the datasets of a stack released by one query of the batched form, for datasets of
    ``rows`` values each: ``ROWS_PER_CALL // rows`` within [1, :data:`MAX_PARTITIONS`].

    >>> partitions_per_call(10), partitions_per_call(300), partitions_per_call(10**5)
    (1000, 66, 1)
    """
    return max(1, min(MAX_PARTITIONS, ROWS_PER_CALL // max(int(rows), 1)))
#: the functions with a batched form (scalar releases)
BATCHED = ("sum", "mean", "len")
MISSING = ("null", "nan")
HANDLING = ("fill_null", "fill_nan", "drop", "keep")


def _modules(target: str):
    """(opendp.prelude with "contrib" enabled, polars), or the extra's install hint."""
    dp = _common.require("opendp.prelude", DISTRIBUTION, target)
    pl = _common.require("polars", "opendp[polars]", target)
    dp.enable_features("contrib")
    return dp, pl


def lazyframe(pl, values: np.ndarray, missing: str):
    """The one-column LazyFrame of ``values`` (NaN = missing) with each NaN a Polars null
    (``missing="null"``) or a float NaN (``"nan"``)."""
    series = pl.Series(COLUMN, values, dtype=pl.Float64, nan_to_null=missing == "null")
    return pl.LazyFrame({COLUMN: series})


def expression(pl, function: str, params: dict):
    """The query's one expression: the handling of the missing entries, then the statistic."""
    col = pl.col(COLUMN)
    nan, constant = params["nan"], params["constant"]
    if nan == "fill_null":
        col = col.fill_null(constant)
    elif nan == "fill_nan":
        col = col.fill_nan(constant)
    elif nan == "drop":
        col = col.drop_nulls() if params["missing"] == "null" else col.drop_nans()
    if function == "len":
        return col.dp.len(signed=True)
    if function == "quantile":
        return col.dp.quantile(params["alpha"], params["candidates"])
    if function == "median":
        return col.dp.median(params["candidates"])
    if function == "group_by_sum":
        return col.dp.sum(params["bounds"])
    return getattr(col.dp, function)(params["bounds"])


def keyed_lazyframe(pl, x: np.ndarray, missing: str):
    """The two-column LazyFrame of an (n, d) array for ``group_by_sum``: one row per entry,
    record by record, ``KEY`` its column index 0..d−1 and ``COLUMN`` its value (NaN as in
    :func:`lazyframe`)."""
    n, d = x.shape
    keys = pl.Series(KEY, np.tile(np.arange(d), n), dtype=pl.Int64)
    values = pl.Series(COLUMN, x.reshape(-1), dtype=pl.Float64, nan_to_null=missing == "null")
    return pl.LazyFrame({KEY: keys, COLUMN: values})


def _space_and_plan(dp, pl, function: str, params: dict, n: int, d: int, k: int, budget):
    """(the Context's accountant, the query's plan): ``select(expression)`` on one column of
    n·k rows, or, for ``group_by_sum``, the declared key set 0..d−1 left-joined with
    ``group_by(KEY).agg(expression)`` (``LazyFrameQuery.with_keys``,
    extras/polars/__init__.py:939-969) on the keyed frame, each key a group of n rows."""
    grouped = function == "group_by_sum"
    if grouped:
        data = keyed_lazyframe(pl, np.zeros((n, d)), params["missing"])
        margins = [dp.polars.Margin(max_length=n * d), dp.polars.Margin(by=[KEY], max_length=n)]
    else:
        data = lazyframe(pl, np.zeros(n * k), params["missing"])
        margins = [dp.polars.Margin(max_length=n * k)]
    context = dp.Context.compositor(
        data=data, privacy_unit=dp.unit_of(contributions=budget.distance),
        privacy_loss=dp.loss_of(epsilon=budget.epsilon), split_evenly_over=1, margins=margins)
    expr = expression(pl, function, params)
    if not grouped:
        return context, pl.LazyFrame(schema={COLUMN: pl.Float64}).select(expr)
    empty = pl.LazyFrame(schema={KEY: pl.Int64, COLUMN: pl.Float64})
    keys = pl.LazyFrame({KEY: pl.Series(KEY, np.arange(d), dtype=pl.Int64)})
    return context, keys.join(empty.group_by(KEY).agg(expr), how="left", on=[KEY],
                              nulls_equal=True)


def calibrated(make, d_in: int, epsilon: float, *, max_steps: int = 64):
    """The measurement ``make(g)`` at the least global scale g found whose privacy map at
    ``d_in`` is ≤ ``epsilon``: every noise scale of the query is its default times g
    (make_private_expr/expr_noise/mod.rs:192-197) and the Laplace map is d_in-sensitivity over
    scale (the quantile's exponential mechanism likewise: checked in the tests, its map at
    the found scale is ε), so the map is ε₁/g with ε₁ its value at g = 1: g = ε₁/ε, raised
    by 10⁻¹² (relative) until OpenDP's own map is ≤ ε. The same scale as
    ``LazyFrameQuery.resolve``'s bisection (extras/polars/__init__.py:1049-1103), in two or
    three constructions instead of thousands.
    """
    eps1 = float(make(1.0).map(d_in))
    g = eps1 / epsilon
    for _ in range(max_steps):
        m = make(g)
        if m.map(d_in) <= epsilon:
            return m
        g *= 1.0 + 1e-12
    raise ValueError(  # pragma: no cover - the map is ε₁/g up to rounding
        f"epsilon: the privacy map did not reach epsilon={epsilon} within {max_steps} steps "
        f"of the global scale from {eps1 / epsilon}")


def _batched_space(dp, pl, size: int, distance: int, epsilon: float, groups: int):
    """The compositor's context on a placeholder frame of ``groups`` public keys with ``size``
    rows each, a unit's rows all in one group (the batched form)."""
    frame = pl.LazyFrame({COLUMN: np.zeros(groups * size),
                          DATASET: np.repeat(np.arange(groups, dtype=np.int64), size)})
    unit = dp.unit_of(contributions=[dp.polars.Bound(per_group=distance),
                                     dp.polars.Bound(by=[DATASET], num_groups=1)])
    return dp.Context.compositor(
        data=frame, privacy_unit=unit, privacy_loss=dp.loss_of(epsilon=epsilon),
        split_evenly_over=1, margins=[dp.polars.Margin(by=[DATASET], max_length=size,
                                                       max_groups=groups, invariant="keys")])


def build_query(function: str, *, epsilon: float, params: dict, n: int, d: int,
                groups: int = 0):
    """(measurement, its privacy map at d_in = 2k, OpenDP's summary rows of it) of
    ``opendp-polars:<function>`` for datasets of shape (n, d); with ``groups`` ≥ 1, of
    ``groups`` such datasets at once, dataset t the rows of public key t
    (``group_by(key).agg(expression)``).

    The space is a ``dp.Context.compositor``'s on a placeholder frame of that shape (domain
    from the schema, the margin, symmetric distance at d_in = 2k, max-divergence at ε); the
    query is ``select(expression)`` on an empty frame of that schema, as ``context.query()``
    builds it, made with ``dp.m.make_private_lazyframe`` and calibrated by :func:`calibrated`.
    Grouped, the unit is ``Bound(per_group=2k)`` and ``Bound(by=[key], num_groups=1)`` (one
    record's substitution changes 2k rows of one dataset, so of one key: true by construction)
    and the margin declares the keys public (``invariant="keys"``), ``max_length = n·k`` per
    key and ``max_groups``: each key's noise is that of an unbatched call.
    """
    target = f"{LIBRARY}:{function}"
    dp, pl = _modules(target)
    from opendp.accuracy import summarize_polars_measurement

    k = d if params.get("column") is None else 1
    budget = relations.to_substitution(ADAPTER.relation, epsilon, 0.0, entries=k)
    size = n * k
    try:
        if groups:
            context = _batched_space(dp, pl, size, budget.distance, budget.epsilon, groups)
            plan = pl.LazyFrame(schema={COLUMN: pl.Float64, DATASET: pl.Int64}).group_by(
                DATASET).agg(expression(pl, function, params))
        else:
            context, plan = _space_and_plan(dp, pl, function, params, n, d, k, budget)
        space = context.accountant
        measurement = calibrated(
            lambda g: dp.m.make_private_lazyframe(space.input_domain, space.input_metric,
                                                  space.output_measure, plan, global_scale=g),
            context.d_in, budget.epsilon)
    except dp.OpenDPException as exc:
        raise ValueError(f"{target}: OpenDP refused the query for {params} on {size} rows: "
                         f"{exc}") from None
    summary = summarize_polars_measurement(measurement).to_dicts()
    return measurement, float(measurement.map(context.d_in)), summary


class _Release:
    """The release: one calibrated measurement per dataset shape, built on first use; the
    batched form (:meth:`batch`) one per shape and number of public keys.

    Picklable for worker processes: the measurements (ctypes handles) are not sent, each
    process builds them again (deterministically).
    """

    def __init__(self, target: str, function: str, epsilon: float, checked: dict) -> None:
        self.target, self.function, self.epsilon, self.checked = target, function, epsilon, checked
        self._queries: dict[tuple[int, int, int], tuple] = {}

    def query(self, shape: tuple[int, int], groups: int = 0) -> tuple:
        """(measurement, map value, summary) for datasets of ``shape`` (``groups`` of them at
        once when ≥ 1)."""
        key = (*shape, groups)
        if key not in self._queries:
            self._queries[key] = build_query(self.function, epsilon=self.epsilon,
                                             params=self.checked, n=shape[0], d=shape[1],
                                             groups=groups)
        return self._queries[key]

    def __call__(self, data, rng: np.random.Generator):  # rng unused: OpenDP is not seedable
        x = _common.as_data(self.target, data)
        measurement = self.query(x.shape)[0]
        _, pl = _modules(self.target)
        if self.function == "group_by_sum":  # one sum per key, in the keys' order
            out = measurement(keyed_lazyframe(pl, x, self.checked["missing"])).collect()
            return out.sort(KEY)[COLUMN].to_numpy().astype(np.float64)
        values = _common.selected(self.target, x, self.checked["column"])
        out = measurement(lazyframe(pl, values, self.checked["missing"])).collect()
        return float(out.item())

    def batch(self, datasets, rng: np.random.Generator, partitions: int | None = None):
        """One release per dataset of the stack (m, n, d): each block of ``partitions`` (default
        :func:`partitions_per_call`) datasets is one query over as many public keys,
        dataset t the rows of key t; a last, shorter block is padded with complete datasets of
        zeros, whose releases are discarded. One calibrated query per dataset shape and
        number of keys."""
        xs = _common.as_stack(self.target, datasets)
        m, n, d = xs.shape
        column = self.checked.get("column")
        _common.selected(self.target, np.zeros((1, d)), column)  # checks the column
        if m == 0:
            return np.empty(0)
        values = xs.reshape(m, -1) if column is None else xs[:, :, column]
        # T does not depend on m: the query the independence check (20 datasets a call)
        # examines is the one the audit's chunks run
        per = (partitions_per_call(values.shape[1]) if partitions is None
               else check_positive_int(partitions, "partitions"))
        measurement = self.query((n, d), per)[0]
        _, pl = _modules(self.target)
        keys = pl.Series(DATASET, np.repeat(np.arange(per, dtype=np.int64), values.shape[1]))
        out = np.empty(m)
        for start in range(0, m, per):
            block = values[start:start + per]
            t = block.shape[0]
            if t < per:
                block = np.concatenate([block, np.zeros((per - t, block.shape[1]))])
            frame = pl.LazyFrame({COLUMN: pl.Series(
                COLUMN, block.ravel(), dtype=pl.Float64,
                nan_to_null=self.checked["missing"] == "null"), DATASET: keys})
            res = measurement(frame).collect().sort(DATASET)
            out[start:start + t] = res.drop(DATASET).to_series(0).cast(pl.Float64).to_numpy()[:t]
        return out

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_queries": {}}


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``opendp-polars:<function>`` (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    checked = {
        "missing": _common.check_choice(target, "missing", p["missing"], MISSING),
        "nan": _common.check_choice(target, "nan", p["nan"], HANDLING),
        "constant": _common.check_real_param(target, "constant", p["constant"]),
    }
    checks = {"bounds": lambda v: _common.check_bounds(target, v),
              "candidates": lambda v: _common.check_increasing(target, "candidates", v, 2),
              "alpha": lambda v: _common.check_alpha(target, v),
              "column": lambda v: _common.check_column(target, v)}
    checked.update({name: check(p[name]) for name, check in checks.items() if name in p})
    if delta != 0.0:
        raise ValueError(f"{target}: the adapter asks for pure ε-DP (Laplace noise); delta "
                         f"must be 0, got delta={delta!r}")
    _modules(target)  # fails here, not at the first call, when opendp[polars] is missing
    k = "d" if checked.get("column") is None else "1"
    call = ("group_by(key).agg(.dp.sum) with the keys declared" if function == "group_by_sum"
            else f".dp.{function}")
    note = (f"OpenDP {_common.version(DISTRIBUTION)} Polars {call} "
            f"({', '.join(f'{name}={value}' for name, value in checked.items())}), calibrated "
            f"per dataset shape with privacy_unit contributions = 2·{k} (symmetric distance of "
            f"one record's substitution) and privacy_loss epsilon = {epsilon}: its map is <= it")
    release = _Release(target, function, epsilon, checked)
    return CallableImplementation(func=release, claim=Claim(epsilon, 0.0, note), name=target,
                                  batch_func=release.batch if function in BATCHED else None,
                                  batch_in_one_call=function in BATCHED,
                                  params=checked)


def _parameters(default_nan: str, head: tuple[str, ...] = ("bounds",), *,
                column: bool = True) -> tuple[Parameter, ...]:
    """The target's parameters: those named in ``head`` first, then the handling of the
    missing entries, then (with ``column``) the column."""
    first = {"bounds": Parameter("bounds", REQUIRED, "(lo, hi) of the clip in .dp.sum / "
                                                     ".dp.mean"),
             "candidates": Parameter("candidates", REQUIRED, "strictly increasing candidate "
                                                             "quantiles (≥ 2)"),
             "alpha": Parameter("alpha", 0.5, "the quantile, in [0, 1]")}
    tail = (Parameter("column", None, "None: every entry, record by record; j: column j "
                                      "only"),) if column else ()
    return (*(first[name] for name in head),
            Parameter("missing", "null", "a NaN of the array reaches Polars as a 'null' or a "
                                         "float 'nan'"),
            Parameter("nan", default_nan, "'fill_null', 'fill_nan' (with constant), 'drop' "
                                          "(drop_nulls / drop_nans) or 'keep'"),
            Parameter("constant", 0.0, "the fill value of fill_null / fill_nan"),
            *tail)


_IMPUTED = {"fill_null": NanSemantics.IMPUTES_CONSTANT, "fill_nan": NanSemantics.IMPUTES_CONSTANT,
            "keep": NanSemantics.IMPUTES_CONSTANT, "drop": NanSemantics.DROPS}
_COUNTED = {"fill_null": NanSemantics.COUNTED, "fill_nan": NanSemantics.COUNTED,
            "keep": NanSemantics.COUNTED, "drop": NanSemantics.DROPS}
_BOUNDS = [-1.0, 1.0]
#: ``Target.source``: the plug-in registrations that hand each ``.dp`` expression to OpenDP's
#: Rust (not installed; module docstring, "Sources"), lines of 0.16.0
_P = "opendp/extras/polars/__init__.py"
_DP_SUM = f"{_P}:429-435"
#: -1, -0.98, ..., 1: a grid fine enough that a release is never nearly certain (the contract
#: tests' unseeded draws must differ; the most likely candidate's probability is below 0.2)
_CANDIDATES = [round(-1.0 + 0.02 * i, 2) for i in range(101)]

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="polars", seedable=False,
    relation=Relation.SYMMETRIC_DISTANCE, make=make,
    summary=("OpenDP 0.16's Polars API (opendp[polars], polars 1.36.1): .dp.sum, .dp.mean, "
             ".dp.len, .dp.quantile, .dp.median of a LazyFrame column, and .dp.sum per "
             "declared key of a group_by, through a Context"),
    targets=(
        Target("sum", _parameters("fill_null"), nan=NanSemantics.IMPUTES_CONSTANT,
               nan_options=_IMPUTED,
               summary="filled, or left for .dp.sum's own midpoint fill, or dropped",
               source=_DP_SUM,
               examples=(
                   Example("fill-null", {"bounds": _BOUNDS},
                           doc="NaN as a null, fill_null(0): the unsized sum, d_in·max|b|"),
                   Example("fill-nan", {"bounds": _BOUNDS, "missing": "nan", "nan": "fill_nan"},
                           doc="NaN as a float NaN, fill_nan(0)"),
                   Example("keep", {"bounds": _BOUNDS, "nan": "keep"},
                           doc="nothing done: .dp.sum fills the null with the midpoint"),
                   Example("drop", {"bounds": _BOUNDS, "nan": "drop"},
                           doc="drop_nulls: the observed entries only"),
               )),
        Target("mean", _parameters("fill_null"), nan=NanSemantics.IMPUTES_CONSTANT,
               nan_options=_IMPUTED,
               summary="noisy sum over noisy len; a fill or 'keep' counts NaN in the len",
               source=f"{_P}:483-489",
               examples=(
                   Example("fill-null", {"bounds": _BOUNDS},
                           doc="NaN as a null, fill_null(0); ε split over sum and len"),
                   Example("keep-nan", {"bounds": _BOUNDS, "missing": "nan", "nan": "keep"},
                           doc="NaN as a float NaN, left: .dp.sum fills it with the midpoint"),
               )),
        Target("len", _parameters("keep", ()), nan=NanSemantics.COUNTED,
               nan_options=_COUNTED,
               summary="every row counted (nulls and NaN too), or the observed rows after drop",
               source=f"{_P}:228-233",
               examples=(
                   Example("keep", {}, doc="the number of rows, n·k + integer Laplace noise"),
                   Example("drop", {"nan": "drop"},
                           doc="drop_nulls, then len: the observed entries"),
               )),
        Target("quantile", _parameters("fill_null", ("candidates", "alpha")),
               nan=NanSemantics.IMPUTES_CONSTANT, nan_options=_IMPUTED,
               summary="filled, or left (scored as the candidates' median, measured), or "
                       "dropped",
               source=f"{_P}:530-536",
               examples=(
                   Example("fill-null", {"candidates": _CANDIDATES, "alpha": 0.25},
                           doc="NaN as a null, fill_null(0): scored as 0"),
                   Example("keep-nan", {"candidates": _CANDIDATES, "missing": "nan",
                                        "nan": "keep"},
                           doc="NaN as a float NaN, left: scored as the candidates' median"),
               )),
        Target("median", _parameters("fill_null", ("candidates",)),
               nan=NanSemantics.IMPUTES_CONSTANT, nan_options=_IMPUTED,
               summary="the 0.5-quantile's path (.dp.median); NaN as for quantile",
               source=f"{_P}:575-581",
               examples=(
                   Example("keep", {"candidates": _CANDIDATES, "nan": "keep"},
                           doc="NaN as a null, left: scored as the candidates' median"),
               )),
        Target("group_by_sum", _parameters("fill_null", column=False),
               nan=NanSemantics.IMPUTES_CONSTANT, nan_options=_IMPUTED,
               summary="one .dp.sum per declared key (a record's column index); NaN as for sum",
               source=f"{_DP_SUM}; {_P}:965-968",  # with_keys: the left join on the keys
               examples=(
                   Example("fill-null", {"bounds": _BOUNDS},
                           doc="one sum per column, the keys 0..d−1 declared (with_keys)"),
                   Example("keep-nan", {"bounds": _BOUNDS, "missing": "nan", "nan": "keep"},
                           doc="NaN as a float NaN, left: .dp.sum's midpoint fill per group"),
               )),
    ),
)
