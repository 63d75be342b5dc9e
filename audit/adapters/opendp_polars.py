"""OpenDP's Polars API (``opendp.extras.polars``): dp sum, mean and len of a LazyFrame column
as black-box implementations.

Targets: ``opendp-polars:sum``, ``opendp-polars:mean``, ``opendp-polars:len`` (``ADAPTER``
declares them, with their parameters, NaN semantics and examples). Each call releases

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
``column`` (default None)
    None: every entry, record by record; an integer j: column j only.

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
* The expected verdict of every target on data with missing values is that its claim holds:
  these are OpenDP's own shortcuts, which impute or count before any aggregation. The NaN/null
  reports (#2936, #2938-#2940) are queries written with the plain Polars expressions (``clip``,
  ``sum``, ``count``, ``cast``, ``cut``, ``%``) plus ``.dp.noise()``, which skip that
  imputation; ``experiments/opendp_issues.py`` audits them (refuted on 0.16).
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
#: the key column of the batched form's frame (one public key per dataset)
KEY = "dataset"
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
    return getattr(col.dp, function)(params["bounds"])


def calibrated(make, d_in: int, epsilon: float, *, max_steps: int = 64):
    """The measurement ``make(g)`` at the least global scale g found whose privacy map at
    ``d_in`` is ≤ ``epsilon``: every noise scale of the query is its default times g
    (make_private_expr/expr_noise/mod.rs:192-197) and the Laplace map is d_in-sensitivity over
    scale, so the map is ε₁/g with ε₁ its value at g = 1: g = ε₁/ε, raised by 10⁻¹² (relative)
    until OpenDP's own map is ≤ ε. The same scale as ``LazyFrameQuery.resolve``'s bisection
    (extras/polars/__init__.py:1049-1103), in two or three constructions instead of thousands.
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


def _space(dp, pl, size: int, distance: int, epsilon: float, groups: int):
    """The compositor's context on a placeholder frame of ``size`` rows (``groups`` = 0), or
    of ``groups`` public keys with ``size`` rows each, a unit's rows all in one group."""
    if not groups:
        return dp.Context.compositor(
            data=lazyframe(pl, np.zeros(size), "nan"), privacy_unit=dp.unit_of(
                contributions=distance), privacy_loss=dp.loss_of(epsilon=epsilon),
            split_evenly_over=1, margins=[dp.polars.Margin(max_length=size)])
    frame = pl.LazyFrame({COLUMN: np.zeros(groups * size),
                          KEY: np.repeat(np.arange(groups, dtype=np.int64), size)})
    unit = dp.unit_of(contributions=[dp.polars.Bound(per_group=distance),
                                     dp.polars.Bound(by=[KEY], num_groups=1)])
    return dp.Context.compositor(
        data=frame, privacy_unit=unit, privacy_loss=dp.loss_of(epsilon=epsilon),
        split_evenly_over=1, margins=[dp.polars.Margin(by=[KEY], max_length=size,
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

    k = d if params["column"] is None else 1
    budget = relations.to_substitution(ADAPTER.relation, epsilon, 0.0, entries=k)
    size = n * k
    try:
        context = _space(dp, pl, size, budget.distance, budget.epsilon, groups)
        space = context.accountant
        expr = expression(pl, function, params)
        if groups:
            plan = pl.LazyFrame(schema={COLUMN: pl.Float64, KEY: pl.Int64}).group_by(
                KEY).agg(expr)
        else:
            plan = pl.LazyFrame(schema={COLUMN: pl.Float64}).select(expr)
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
        values = _common.selected(self.target, x, self.checked["column"])
        measurement = self.query(x.shape)[0]
        _, pl = _modules(self.target)
        out = measurement(lazyframe(pl, values, self.checked["missing"])).collect()
        return float(out.item())

    def batch(self, datasets, rng: np.random.Generator, partitions: int | None = None):
        """One release per dataset of the stack (m, n, d): each block of ``partitions`` (default
        :func:`partitions_per_call`) datasets is one query over as many public keys,
        dataset t the rows of key t; a last, shorter block is padded with complete datasets of
        zeros, whose releases are discarded. One calibrated query per dataset shape and
        number of keys."""
        xs = np.asarray(datasets, dtype=np.float64)
        if xs.ndim != 3 or xs.shape[1] == 0 or xs.shape[2] == 0:
            raise ValueError(f"{self.target}: datasets must have shape (m, n, d) with n, d >= "
                             f"1, got shape {xs.shape}")
        m, n, d = xs.shape
        column = self.checked["column"]
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
        keys = pl.Series(KEY, np.repeat(np.arange(per, dtype=np.int64), values.shape[1]))
        out = np.empty(m)
        for start in range(0, m, per):
            block = values[start:start + per]
            t = block.shape[0]
            if t < per:
                block = np.concatenate([block, np.zeros((per - t, block.shape[1]))])
            frame = pl.LazyFrame({COLUMN: pl.Series(
                COLUMN, block.ravel(), dtype=pl.Float64,
                nan_to_null=self.checked["missing"] == "null"), KEY: keys})
            res = measurement(frame).collect().sort(KEY)
            out[start:start + t] = res.drop(KEY).to_series(0).cast(pl.Float64).to_numpy()[:t]
        return out

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_queries": {}}


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``opendp-polars:<function>`` (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    checked = {
        "bounds": None if function == "len" else _common.check_bounds(target, p["bounds"]),
        "missing": _common.check_choice(target, "missing", p["missing"], MISSING),
        "nan": _common.check_choice(target, "nan", p["nan"], HANDLING),
        "constant": _common.check_real_param(target, "constant", p["constant"]),
        "column": _common.check_column(target, p["column"]),
    }
    if delta != 0.0:
        raise ValueError(f"{target}: the adapter asks for pure ε-DP (Laplace noise); delta "
                         f"must be 0, got delta={delta!r}")
    _modules(target)  # fails here, not at the first call, when opendp[polars] is missing
    k = "d" if checked["column"] is None else "1"
    note = (f"OpenDP {_common.version(DISTRIBUTION)} Polars .dp.{function} "
            f"(missing={checked['missing']}, nan={checked['nan']}, "
            f"constant={checked['constant']}, bounds={checked['bounds']}), calibrated per dataset "
            f"shape with privacy_unit contributions = 2·{k} (symmetric distance of one "
            f"record's substitution) and privacy_loss epsilon = {epsilon}: its map is <= it")
    release = _Release(target, function, epsilon, checked)
    return CallableImplementation(func=release, claim=Claim(epsilon, 0.0, note), name=target,
                                  batch_func=release.batch, batch_in_one_call=True,
                                  params=checked)


def _parameters(default_nan: str, bounds: bool) -> tuple[Parameter, ...]:
    head = (Parameter("bounds", REQUIRED, "(lo, hi) of the clip in .dp.sum / .dp.mean"),) \
        if bounds else ()
    return (*head,
            Parameter("missing", "null", "a NaN of the array reaches Polars as a 'null' or a "
                                         "float 'nan'"),
            Parameter("nan", default_nan, "'fill_null', 'fill_nan' (with constant), 'drop' "
                                          "(drop_nulls / drop_nans) or 'keep'"),
            Parameter("constant", 0.0, "the fill value of fill_null / fill_nan"),
            Parameter("column", None, "None: every entry, record by record; j: column j only"))


_IMPUTED = {"fill_null": NanSemantics.IMPUTES_CONSTANT, "fill_nan": NanSemantics.IMPUTES_CONSTANT,
            "keep": NanSemantics.IMPUTES_CONSTANT, "drop": NanSemantics.DROPS}
_COUNTED = {"fill_null": NanSemantics.COUNTED, "fill_nan": NanSemantics.COUNTED,
            "keep": NanSemantics.COUNTED, "drop": NanSemantics.DROPS}
_BOUNDS = [-1.0, 1.0]

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="polars", seedable=False,
    relation=Relation.SYMMETRIC_DISTANCE, make=make,
    summary=("OpenDP 0.16's Polars API (opendp[polars], polars 1.36.1): .dp.sum, .dp.mean, "
             ".dp.len of a LazyFrame column through a Context, Laplace noise"),
    targets=(
        Target("sum", _parameters("fill_null", True), nan=NanSemantics.IMPUTES_CONSTANT,
               nan_options=_IMPUTED,
               summary="filled, or left for .dp.sum's own midpoint fill, or dropped",
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
        Target("mean", _parameters("fill_null", True), nan=NanSemantics.IMPUTES_CONSTANT,
               nan_options=_IMPUTED,
               summary="noisy sum over noisy len; a fill or 'keep' counts NaN in the len",
               examples=(
                   Example("fill-null", {"bounds": _BOUNDS},
                           doc="NaN as a null, fill_null(0); ε split over sum and len"),
                   Example("keep-nan", {"bounds": _BOUNDS, "missing": "nan", "nan": "keep"},
                           doc="NaN as a float NaN, left: .dp.sum fills it with the midpoint"),
               )),
        Target("len", _parameters("keep", False), nan=NanSemantics.COUNTED,
               nan_options=_COUNTED,
               summary="every row counted (nulls and NaN too), or the observed rows after drop",
               examples=(
                   Example("keep", {}, doc="the number of rows, n·k + integer Laplace noise"),
                   Example("drop", {"nan": "drop"},
                           doc="drop_nulls, then len: the observed entries"),
               )),
    ),
)
