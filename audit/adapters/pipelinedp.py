"""PipelineDP's SUM, MEAN, COUNT, VARIANCE, PERCENTILE, PRIVACY_ID_COUNT and VECTOR_SUM and
its private partition selection (local in-memory backend) as black-box implementations.

Targets: ``pipelinedp:sum``, ``pipelinedp:mean``, ``pipelinedp:count``,
``pipelinedp:variance``, ``pipelinedp:percentile``, ``pipelinedp:privacy_id_count``,
``pipelinedp:select_partitions`` and ``pipelinedp:vector_sum`` (``ADAPTER`` declares them,
with their parameters, NaN semantics and examples; the last two are made, and described, in
:mod:`audit.adapters.pipelinedp_extra`). Each call of the others runs one
``DPEngine.aggregate`` on a
``LocalBackend`` with a fresh ``NaiveBudgetAccountant``: every record (row) is one privacy
unit, contributing its k entries (k = d, or 1 with ``column``) as k values to the single public
partition 0 (``public_partitions=[0]``, so no partition selection), with
``max_partitions_contributed=1`` and ``max_contributions_per_partition=k`` (no record is ever
sampled down). Parameters:

``bounds`` (required for sum, mean, variance and percentile, refused for the counts)
    (lo, hi): ``min_value``, ``max_value``, to which PipelineDP clips each value.
``percentile`` (percentile only, required)
    The percentile in [0, 100] (``Metrics.PERCENTILE(percentile)``).
``noise`` (default ``"laplace"``)
    ``"laplace"`` (``delta`` must be 0) or ``"gaussian"`` (``delta`` > 0).
``nan`` (default ``"propagate"``)
    ``"propagate"``: NaN values are handed to PipelineDP as they are — what the library does
    with them is what is audited; ``"drop"``: the adapter removes NaN entries before
    PipelineDP sees them (a user's pre-filter, not library behaviour: a record left with no
    value contributes nothing).
``column`` (default None)
    None: every entry of the (n, d) array; an integer j: column j only.

**Claim.** PipelineDP's guarantee is (ε, δ)-DP for adding or removing one privacy unit
(``AddDPNoiseParams``: "adding or removing one privacy unit", aggregate_params.py:805; the
sum's sensitivity max(|lo|, |hi|)·k, ``compute_sensitivities_for_sum``,
dp_computations.py:782-795). The audit's neighbouring relation, the substitution of one
record, is a removal then an addition (``Relation.ADD_REMOVE``), so by group privacy an
(ε', δ')-DP release is (2ε', (1 + e^ε')δ')-DP under substitution. The adapter hands
PipelineDP the budget ``to_substitution(ADD_REMOVE, ε, δ)``: ``total_epsilon = ε/2``,
``total_delta = δ/(1 + e^(ε/2))``, and claims (ε, δ) per substituted record. (MEAN splits
that budget between its count and its sum, as PipelineDP does.)

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): the noise comes from PyDP
(``pydp.algorithms.numerical_mechanisms``, Google's C++ differential-privacy library), whose
``SecureURBG`` draws from ``RAND_bytes``; there is no seeding API. ``rng`` is not used. (The
only numpy randomness in this path, ``sampling_utils.choose_from_list_without_replacement``,
samples contributions only when a unit has more than ``max_contributions_per_partition`` of
them, which never happens here.)

**What a NaN does** (PipelineDP 0.3.1, ``pipeline_dp/``; PyDP 1.1.5):

* Nothing validates values: NaN flows through extraction and contribution bounding into the
  combiners.
* SUM (``SumCombiner.create_accumulator``, combiners.py:430-435): ``np.clip(values, min,
  max).sum()``; ``np.clip`` keeps NaN, so the partition's sum is NaN, and
  ``AdditiveMechanism.add_noise`` (dp_computations.py:448-456) → PyDP ``add_noise(NaN)`` is
  NaN (checked). The release is NaN if and only if some entry is missing.
* MEAN (``MeanCombiner.create_accumulator``, combiners.py:502-508): the accumulator is
  ``(len(values), sum(clip(values) − mid))`` — a NaN counts in the count and makes the
  normalized sum NaN; ``MeanMechanism.compute_mean`` (dp_computations.py:609-615) returns
  mid + NaN/max(1, noisy count) = NaN. Again NaN iff some entry is missing.
* COUNT (``CountCombiner.create_accumulator``, combiners.py:267-268): ``len(values)`` — a
  NaN value is counted like any other. Under substitution the count is n·k whatever the data,
  so the release does not depend on the data at all (trivially private; it says nothing about
  missingness).
* PRIVACY_ID_COUNT (``PrivacyIdCountCombiner.create_accumulator``, combiners.py:314-315):
  ``1 if values else 0`` for each (privacy unit, partition) after contribution bounding —
  the values themselves are never read, so a NaN value counts its unit like any other
  (``counted``); a unit is counted once however many values it has (sensitivity l0 = 1,
  linf = 1, ``compute_sensitivities_for_privacy_id_count``, dp_computations.py:774-779: the
  Laplace scale is 1/(ε/2) for any k). Under substitution the release is n + noise whatever
  the data. With ``nan="drop"`` a record left with no value has no row and is not counted
  (``drops``): the count of records with an observed entry, sensitivity 1.
* For SUM and MEAN, {release is NaN} is a deterministic function of the missingness pattern,
  not randomised: two neighbours that differ in whether one record has a missing entry (all
  other records complete) give NaN on one side and a finite value on the other with
  probability 1 — no finite ε allows that. With ``nan="drop"`` all three are ordinary DP
  releases of the observed entries (the sum reads a missing entry as absent, i.e. 0; the count
  counts observed entries, sensitivity k; the mean is their noisy sum over their noisy count).
* VARIANCE (``VarianceCombiner.create_accumulator``, combiners.py:577-586): like MEAN, the
  accumulator is ``(len(values), sum(clip − mid), sum((clip − mid)²))``: a NaN counts and makes
  both sums NaN, and ``compute_dp_var`` (dp_computations.py:354-413) returns NaN (checked). NaN
  iff some entry is missing (``propagates``). With ``nan="drop"``: the variance of the observed
  entries.
* PERCENTILE (``QuantileCombiner``, combiners.py:702-750): the values go one by one into a
  ``QuantileAccumulator`` (combiners.py:636-653) and then into PyDP's ``QuantileTree``
  (``pydp._pydp._algorithms.QuantileTree``, Google's cc/algorithms/quantile-tree.h), whose
  ``AddMultipleEntries`` returns on ``std::isnan(input)`` before clamping: a NaN is **dropped**
  by the library (``drops``, with either ``nan`` value). Checked: 60 NaN and 60 values 0.9 give
  a median of 0.9 (not a value near lo or 0); all missing gives a finite release (the tree's
  noisy counts of nothing). The tree's l0 sensitivity is its height (4) and linf the
  contributions per partition (quantile-tree.h, ``MakePrivate``), an add/remove guarantee a
  dropped NaN keeps: the expected verdict is that the claim holds.
* An empty input is refused (``_check_col``: "col must be non-empty", dp_engine.py:714-716).
  When ``nan="drop"`` leaves no value, the adapter adds one placeholder row in partition 1,
  which is not public and is dropped (``_drop_partitions``, dp_engine.py:133) before
  contribution bounding (dp_engine.py:141); partition 0 then gets PipelineDP's empty
  accumulator (``_add_empty_public_partitions``) and a release of no data (sum 0 + noise,
  count 0 + noise, mean mid + noise/1).

**Private partition selection and VECTOR_SUM** (``pipelinedp:select_partitions``,
``pipelinedp:vector_sum``): :mod:`audit.adapters.pipelinedp_extra` (the NaN keys' grouping by
object identity; VECTOR_SUM's crash in PipelineDP 0.3.1, a declared library defect).

**Per-call overhead.** Every call builds a budget accountant, an engine and the aggregation
plan, and turns the array into n·k Python tuples that pass through the lazy local pipeline
one by one: about a millisecond per call at n = 100, d = 3 — this adapter is far slower than
the others, so audits of it should budget their trials accordingly (PERCENTILE, which
builds a quantile tree, about 1.5 ms). Most of it is per row, not per call.

**Batched form** (``impl.batch(datasets, rng)``, ``batch_in_one_call``): a stack of m
datasets (m, n, d) is cut into blocks of T (:func:`partitions_per_call`: 200 rows ÷ (n·k),
within [1, 50]); each block is one ``DPEngine.aggregate`` with ``public_partitions =
range(T)``, dataset t of the block in partition t, record i of it the privacy unit t·n + i
(ids disjoint across partitions, each contributing its k values to partition t only). With
``max_partitions_contributed=1`` and ``max_contributions_per_partition=k`` as in the unbatched
call, every partition gets the same budget, sensitivities and noise as an unbatched call
(PipelineDP calibrates each public partition's noise to the per-unit bounds, not to the
number of partitions: the l0 sensitivity is ``max_partitions_contributed``,
dp_computations.py:53-55, read by the combiners built in ``create_compound_combiner``,
combiners.py:960) and the same NaN behaviour (each partition's values go through their own
accumulator: a NaN makes only its own partition's release NaN; with ``nan="drop"`` a dataset
left with no value gets the release of no data, ``_add_empty_public_partitions``,
dp_engine.py:315). The unbatched call is the batched form on a stack of one
(T = 1, partition 0: the call this adapter always made). The audit checks, rather than
assumes, that the releases of one call are independent with the unbatched law
(:mod:`audit.model.batch_check`). PRIVACY_ID_COUNT batches the same way; select_partitions
and VECTOR_SUM are not batched.

**Where the time goes** (``benchmarks/bench_batched.py --floor`` and ``--profile``; one
process, 2 shared cores, ±30 %): an engine call costs about 60–85 µs of its own (the
``AggregateParams`` checks, the combiners and the budget request, the explain-computation
report, ``parameters_to_readable_string``, which ``DPEngine`` always builds and no option
turns off, the budget computation), each public partition about 11–16 µs (its empty
accumulator, ``_add_empty_public_partitions``, the merge, PyDP's ``add_noise``, the result
tuple) and each row, a (privacy unit, partition) of one value, about 6–10 µs (three
``group_by_key`` passes of the lazy local pipeline, each stage re-caching every element in a
``ReiterableLazyIterable``; a ``create_accumulator`` per unit, an ``np.clip`` of a one-element
Python list; the merge per unit); the adapter adds about 20–26 µs per call. T partitions
therefore cost call + T·(partition + n·k·row), and the ratio of batched releases to unbatched
calls per second is at most (call + partition + n·k·row) / (partition + n·k·row): about 2× at
n·k = 10, 4.5–6× at n·k = 1 — never 20× through ``DPEngine.aggregate`` on the local backend.
The engine options that skip stages (``contribution_bounds_already_enforced``,
``public_partitions_already_filtered``) save a few µs per row and per call, not the floor, and
would skip the contribution bounding a user's call runs, so the adapter does not set them.
"""

from __future__ import annotations

import numpy as np

from audit._validate import check_positive_int
from audit.adapters import _common, pipelinedp_extra, relations
from audit.adapters.protocol import (
    REQUIRED,
    Adapter,
    Example,
    NanSemantics,
    Parameter,
    Target,
)
from audit.adapters.relations import Relation
from audit.enums import NoiseKind
from audit.model.implementation import CallableImplementation, Claim

LIBRARY = "pipelinedp"
DISTRIBUTION = "pipeline-dp"
NAN_HANDLING = ("propagate", "drop")


#: the counts, which take no bounds
_COUNTS = ("count", "privacy_id_count")

#: Rows (privacy unit × value) per engine call of the batched form: the local backend's cost
#: is per row, not per call (measured: ``benchmarks/bench_batched.py``), so more partitions
#: per call only save the per-call part; past this many rows a call is no faster per release.
ROWS_PER_CALL = 200
#: Most public partitions (releases) per engine call of the batched form.
MAX_PARTITIONS = 50


def partitions_per_call(rows: int) -> int:
    """T, the datasets of a stack released by one engine call, for datasets of ``rows``
    values each: ``ROWS_PER_CALL // rows`` within [1, :data:`MAX_PARTITIONS`] (1: one call per
    dataset, today's unbatched call).

    >>> partitions_per_call(10), partitions_per_call(300), partitions_per_call(5000)
    (20, 1, 1)
    """
    return max(1, min(MAX_PARTITIONS, ROWS_PER_CALL // max(int(rows), 1)))


#: the targets made in :mod:`audit.adapters.pipelinedp_extra`, unbatched
_EXTRA = {"select_partitions": pipelinedp_extra.make_select_partitions,
          "vector_sum": pipelinedp_extra.make_vector_sum}


def _parameters(function: str, delta: float, params: dict | None) -> dict:
    """The checked parameters of ``pipelinedp:<function>`` (ValueError naming a bad one)."""
    target = f"{LIBRARY}:{function}"
    if function in _COUNTS and isinstance(params, dict) and "bounds" in params:
        if params["bounds"] is not None:
            raise ValueError(f"{target}: parameter 'bounds' does not apply to a count")
        params = {k: v for k, v in params.items() if k != "bounds"}  # None: no bounds
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    percentile = None
    if function == "percentile":
        percentile = _common.check_real_param(target, "percentile", p["percentile"])
        if not 0.0 <= percentile <= 100.0:
            raise ValueError(f"{target}: parameter 'percentile' must be in [0, 100], got "
                             f"percentile={p['percentile']!r}")
    if function in _COUNTS:
        bounds = None
    else:
        if p["bounds"] is None:
            raise ValueError(f"{target}: parameter 'bounds' is required")
        bounds = _common.check_bounds(target, p["bounds"])
    noise = _common.check_noise(target, p["noise"])
    _common.check_noise_delta(target, noise, delta)
    return {"bounds": bounds, "noise": noise,
            "nan": _common.check_choice(target, "nan", p["nan"], NAN_HANDLING),
            "column": _common.check_column(target, p["column"]),
            **({} if percentile is None else {"percentile": percentile})}


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``pipelinedp:<function>`` (see the module docstring): its
    unbatched call and its batched form (one engine call over T public partitions);
    ``select_partitions`` and ``vector_sum``: :mod:`audit.adapters.pipelinedp_extra`."""
    if function in _EXTRA:
        return _EXTRA[function](ADAPTER, epsilon=epsilon, delta=delta, params=params)
    target = f"{LIBRARY}:{function}"
    checked = _parameters(function, delta, params)
    bounds, noise, nan, column = (checked[k] for k in ("bounds", "noise", "nan", "column"))
    percentile = checked.get("percentile")
    pdp = _common.require("pipeline_dp", DISTRIBUTION, target)

    budget = relations.to_substitution(ADAPTER.relation, epsilon, delta)
    eps_lib, delta_lib = budget.epsilon, budget.delta  # ε/2, δ/(1 + e^(ε/2))
    _common.check_google_epsilon(target, epsilon, eps_lib)
    metric = (pdp.Metrics.PERCENTILE(percentile) if function == "percentile"
              else getattr(pdp.Metrics, function.upper()))  # SUM, …, PRIVACY_ID_COUNT
    noise_kind = pdp.NoiseKind.LAPLACE if noise is NoiseKind.LAPLACE else pdp.NoiseKind.GAUSSIAN
    extractors = pipelinedp_extra.data_extractors(pdp)
    value_bounds = {} if bounds is None else {"min_value": bounds[0], "max_value": bounds[1]}
    backend = pdp.LocalBackend()

    def aggregate(ids: np.ndarray, values: np.ndarray, parts: np.ndarray, k: int,
                  partitions: int) -> np.ndarray:
        """One ``DPEngine.aggregate`` over the public partitions 0 … partitions − 1: the
        release of each, in order."""
        if nan == "drop":
            keep = ~np.isnan(values)
            ids, values, parts = ids[keep], values[keep], parts[keep]
        rows = list(zip(ids.tolist(), parts.tolist(), values.tolist(), strict=True))
        if not rows:  # PipelineDP refuses empty input; partition -1 is never public
            rows = [(-1, -1, 0.0)]
        accountant = pdp.NaiveBudgetAccountant(total_epsilon=eps_lib, total_delta=delta_lib)
        engine = pdp.DPEngine(accountant, backend)
        agg = pdp.AggregateParams(noise_kind=noise_kind, metrics=[metric],
                                  max_partitions_contributed=1,
                                  max_contributions_per_partition=k, **value_bounds)
        result = engine.aggregate(rows, agg, extractors,
                                  public_partitions=list(range(partitions)))
        accountant.compute_budgets()
        # the one metric asked for (its field: 'sum', 'percentile_50'), by partition
        by_partition = dict(result)
        return np.array([float(by_partition[t][0]) for t in range(partitions)])

    def release(data, rng: np.random.Generator):  # rng unused: PipelineDP cannot be seeded
        x = _common.as_data(target, data)
        return float(batch(x[None], rng, partitions=1)[0])

    def batch(datasets, rng: np.random.Generator, partitions: int | None = None) -> np.ndarray:
        """Dataset t of each block of ``partitions`` (default :func:`partitions_per_call`)
        as public partition t of one engine call: its records are privacy units of their
        own (ids t·n + i), each contributing to partition t only."""
        xs = _common.as_stack(target, datasets)
        m, n, d = xs.shape
        _common.selected(target, np.zeros((1, d)), column)  # checks the column
        values = xs if column is None else xs[:, :, column:column + 1]  # (m, n, k)
        k = values.shape[2]
        per_call = (partitions_per_call(n * k) if partitions is None
                    else check_positive_int(partitions, "partitions"))
        out = np.empty(m)
        for start in range(0, m, per_call):
            block = values[start:start + per_call]
            t = block.shape[0]
            out[start:start + t] = aggregate(np.repeat(np.arange(t * n), k), block.reshape(-1),
                                             np.repeat(np.arange(t), n * k), k, t)
        return out

    what = function.upper() if percentile is None else f"PERCENTILE({percentile})"
    note = (f"PipelineDP {_common.version(DISTRIBUTION)} {what} (bounds={bounds}, "
            f"noise={noise.value}, nan={nan}) run with total_epsilon=ε/2={eps_lib}, "
            f"total_delta={delta_lib}: its add/remove guarantee, doubled by group privacy, "
            f"is ({epsilon}, {delta}) per substituted record")
    return CallableImplementation(
        func=release, claim=Claim(epsilon, delta, note), name=target, batch_func=batch,
        batch_in_one_call=True,
        params=checked)
_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): min_value, max_value, each value clipped")
_OTHERS = (
    Parameter("noise", "laplace", "'laplace' (δ = 0) or 'gaussian' (δ > 0)"),
    Parameter("nan", "propagate", "'propagate': NaN handed to PipelineDP; 'drop': removed first"),
    Parameter("column", None, "None: every entry; j: column j only"),
)
_RANGE = [-1.0, 1.0]
_PROPAGATE = Example("propagate", {"bounds": _RANGE, "nan": "propagate"},
                     doc="NaN handed to the library as it is")
_DROP = Example("drop", {"bounds": _RANGE, "nan": "drop"}, doc="NaN removed by the adapter")


#: δ of the ``select_partitions`` examples: partition selection needs δ > 0; at this δ
#: (δ/(1 + e^(1/2)) ≈ 0.011 for the library) a partition of 9 privacy units, the NaN regression
#: pair's, is kept about 9 times in 10 (measured: 0.88), one of 3 or 4 units (the contract
#: data's keys at one decimal) often enough that the count varies from call to call
_SELECT_DELTA = 3e-2


def _nan_options(propagate: NanSemantics) -> dict[str, NanSemantics]:
    return {"propagate": propagate, "drop": NanSemantics.DROPS}


#: ``Target.source``: PipelineDP 0.3.1's combiners and noise
_C, _D = "pipeline_dp/combiners.py", "pipeline_dp/dp_computations.py"
_E, _B = "pipeline_dp/dp_engine.py", "pipeline_dp/pipeline_backend.py"

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="pipeline_dp", seedable=False,
    relation=Relation.ADD_REMOVE, make=make,
    summary="PipelineDP 0.3 SUM, MEAN, COUNT, VARIANCE, PERCENTILE, PRIVACY_ID_COUNT, "
            "VECTOR_SUM and select_partitions on the local backend (PyDP noise)",
    targets=(
        Target("sum", (_BOUNDS, *_OTHERS), nan=NanSemantics.PROPAGATES,
               nan_options=_nan_options(NanSemantics.PROPAGATES),
               summary="values not validated: NaN whenever an entry is missing",
               source=f"{_C}:435; {_D}:456",  # np.clip(values).sum(), then add_noise(NaN)
               examples=(_PROPAGATE, _DROP,
                         Example("gaussian", {"bounds": _RANGE, "noise": "gaussian"},
                                 delta=1e-6, doc="Gaussian noise"))),
        Target("mean", (_BOUNDS, *_OTHERS), nan=NanSemantics.PROPAGATES,
               nan_options=_nan_options(NanSemantics.PROPAGATES),
               summary="a NaN counts in the count and makes the sum NaN: NaN release",
               source=f"{_C}:505-508; {_D}:612-613",  # (len, NaN sum); mid + NaN/count
               examples=(_PROPAGATE, _DROP)),
        Target("count", _OTHERS, nan=NanSemantics.COUNTED,
               nan_options=_nan_options(NanSemantics.COUNTED),
               summary="a NaN value is counted like any other (no bounds)",
               source=f"{_C}:267-268",  # len(values)
               examples=(Example("propagate", {"nan": "propagate"}),
                         Example("drop", {"nan": "drop"}))),
        Target("variance", (_BOUNDS, *_OTHERS), nan=NanSemantics.PROPAGATES,
               nan_options=_nan_options(NanSemantics.PROPAGATES),
               summary="a NaN counts and makes both sums NaN: NaN release",
               source=f"{_C}:582-586; {_D}:409",  # (len, NaN, NaN); NaN − mean²
               examples=(_PROPAGATE, _DROP)),
        Target("percentile",
               (_BOUNDS, Parameter("percentile", REQUIRED, "the percentile, in [0, 100]"),
                *_OTHERS),
               nan=NanSemantics.DROPS, nan_options=_nan_options(NanSemantics.DROPS),
               summary="PyDP's QuantileTree drops a NaN before clamping",
               # each value handed to PyDP's compiled QuantileTree (which drops NaN)
               source=f"{_C}:636-642; {_C}:651-652",
               examples=(Example("median", {"bounds": _RANGE, "percentile": 50.0},
                                 doc="the median; NaN handed to the library"),)),
        Target("privacy_id_count", _OTHERS, nan=NanSemantics.COUNTED,
               nan_options=_nan_options(NanSemantics.COUNTED),
               summary="a unit with any row in the partition counts once, NaN values or not",
               source=f"{_C}:314-315",  # 1 if values else 0: the values are never read
               examples=(Example("propagate", {"nan": "propagate"}),
                         Example("drop", {"nan": "drop"},
                                 doc="a record left with no value is not counted"))),
        Target("select_partitions",
               (Parameter("decimals", None, "None: each entry its key; j: rounded to j "
                                            "decimals first"),
                Parameter("nan", "propagate", "'propagate': NaN keys as they are (each its "
                                              "own float); 'shared': one NaN object; "
                                              "'drop': removed first"),
                Parameter("column", None, "None: every entry a key; j: column j only")),
               nan=NanSemantics.COUNTED,
               nan_options={"propagate": NanSemantics.COUNTED,
                            "shared": NanSemantics.COUNTED, "drop": NanSemantics.DROPS},
               summary="a NaN key is a partition of its own, grouped by object identity: "
                       "every NaN its own partition unless the same object",
               # set() of a unit's keys, then dict grouping: a NaN is equal only to itself
               source=f"{_E}:274; {_B}:405-407",
               examples=(Example("propagate", {"column": 0, "decimals": 1}, delta=_SELECT_DELTA,
                                 doc="NaN keys as numpy's tolist gives them"),
                         Example("shared", {"column": 0, "decimals": 1, "nan": "shared"},
                                 delta=_SELECT_DELTA, doc="every NaN key one object"))),
        Target("vector_sum",
               (Parameter("max_norm", REQUIRED, "the norm each unit's vector is clipped to"),
                Parameter("norm", "linf", "'linf', 'l1' (Laplace) or 'l2' (Gaussian)"),
                *_OTHERS),
               nan=NanSemantics.PROPAGATES, nan_options=_nan_options(NanSemantics.PROPAGATES),
               summary="not reached: VECTOR_SUM with public partitions crashes first",
               # the empty public partition's accumulator clips None
               source=f"{_E}:326; {_C}:909; {_C}:921; {_C}:927",
               defect="PipelineDP 0.3.1 VECTOR_SUM with public partitions raises TypeError in "
                      "VectorSumCombiner._clip_vector (combiners.py:909, 921, 927): the empty "
                      "public partition's accumulator clips None, on any data",
               examples=(Example("linf", {"max_norm": 1.0}, doc="Linf clipping, Laplace"),)),
    ),
)
