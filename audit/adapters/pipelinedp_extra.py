"""PipelineDP's private partition selection and VECTOR_SUM: the two targets of
:mod:`audit.adapters.pipelinedp` (``ADAPTER`` there declares them) that are not one metric per
public partition, each unbatched (one engine call per dataset). ``make_select_partitions`` and
``make_vector_sum`` build them from the declared target; the rest of the adapter (its claim,
budget and randomness: ε/2 and δ/(1 + e^(ε/2)) for PipelineDP's add/remove unit, PyDP's
unseedable noise) is as that module's docstring says.

**Private partition selection** (``pipelinedp:select_partitions``). Each entry of a record
(or of its ``column``), rounded to ``decimals`` when given, is a partition key of the record's
privacy unit; one ``DPEngine.select_partitions`` call with ``max_partitions_contributed = k``
(no unit is sampled down) keeps the partitions its truncated-geometric strategy selects, and
the release is **the number of partitions kept** (a float). δ > 0 is required (a partition
of one unit is kept with probability about the library's δ); the budget is ε/2 and
δ/(1 + e^(ε/2)), as for the other targets. Not batched (one call per dataset): the other
targets' batching gives each dataset a public partition, which selection has not; a batched
form would key the partitions by (dataset, key) with disjoint units, each kept or not on its
own, but it is not built (and the local backend's cost per row, ``pipelinedp``'s docstring,
would leave it about as slow). What a NaN key does:

* PipelineDP groups keys with Python dicts and sets: ``unique_pks = list(set(pks))`` per
  privacy unit (dp_engine.py:274, after ``group_by_key``, dp_engine.py:266) and
  ``LocalBackend.group_by_key``'s ``collections.defaultdict`` (pipeline_backend.py:405-407)
  per partition (``combine_accumulators_per_key``, dp_engine.py:293). A dict finds a key by
  hash, then identity, then ``==``; since Python 3.10 a NaN's hash is its object's identity
  and NaN != NaN, so **NaN keys are grouped by object identity**: two NaN keys share a
  partition only if they are the same float object. Measured (30 units, each with a NaN
  key, ε = 1, δ = 1e-6): 30 distinct NaN objects (numpy's ``tolist``, ``float("nan")`` per
  record, ``np.float64`` scalars) are 30 partitions of one unit, never kept; the one object
  ``np.nan`` in every row is one partition of 30 units, always kept (and its key, NaN, is
  released).
* ``nan="propagate"`` (default): the keys as ``tolist`` gives them, every NaN a float object
  of its own: a record with a missing key is a partition of its own, like a record with a
  fresh value (``counted``: a NaN key is a key). ``nan="shared"``: every NaN key replaced by
  one float object, as a user who writes ``np.nan`` gets: the records with a missing key are
  one partition (``counted``). ``nan="drop"``: the adapter removes NaN keys first
  (``drops``; with none left PipelineDP refuses the empty input, dp_engine.py:201-202, and
  the adapter releases 0, no partition).
* Either way a record contributes to at most k partitions and the selection's guarantee is
  per privacy unit, so the claim holds with or without NaN (expected verdict: keeps): the
  grouping changes utility (how many records a NaN partition gathers), not privacy. It does
  make the release depend on how the caller built its NaN objects, which no value-level
  description of the data shows.

**Known defect: VECTOR_SUM** (``pipelinedp:vector_sum``: the record's k entries as one
vector of its privacy unit in the public partition 0; ``max_norm``, ``norm`` ``"linf"``,
``"l1"`` (Laplace) or ``"l2"`` (Gaussian), ``noise``, ``nan``, ``column`` as above; the
release would be the noisy vector sum, shape (k,)). PipelineDP 0.3.1 crashes on every such
call, complete data or not: with public partitions, ``_add_empty_public_partitions`` builds
each public partition's empty accumulator, ``create_accumulator([])`` (dp_engine.py:326);
``VectorSumCombiner.create_accumulator`` starts from ``array_sum = None`` (combiners.py:909)
and, with no vector to add, returns ``self._clip_vector(None)`` (combiners.py:921), where
``np.clip(None, -max_norm, max_norm)`` raises ``TypeError: '>=' not supported between
instances of 'NoneType' and 'float'`` (Linf, combiners.py:927) and ``np.linalg.norm(None)``
a ``ValueError`` (L1, L2, combiners.py:930). (The clipping sits in ``create_accumulator``,
per unit, as PipelineDP issue #551 asked; the empty case is not handled.) The adapter calls
the library as a user would and turns exactly this crash — an exception raised inside
``_clip_vector`` — into a :class:`~audit.adapters.protocol.LibraryDefect` naming the version
and these lines (any other exception propagates unchanged); the target declares it
(``Target.defect``), an audit of it ends with one ``error:`` line (exit 2), and the NaN
regression table's row is ``fails``. Without public partitions (private selection) the call
runs, but that is another release, not a fix, and the adapter does not switch to it. Had it
run, a NaN would propagate (``np.clip`` and the norm keep NaN; ``min(1, max_norm / NaN)`` is
1; ``add_noise_vector``, dp_computations.py:242, adds noise to NaN): the declared semantics,
``propagates``, is read from the source, not measured. ``tests/adapters/
test_pipelinedp_extra.py`` pins the crash on the library itself: a release that fixes it
fails that test.
"""

from __future__ import annotations

import numpy as np

from audit.adapters import _common, relations
from audit.adapters.protocol import Adapter, LibraryDefect
from audit.enums import NoiseKind
from audit.model.implementation import CallableImplementation, Claim

__all__ = ["NORMS", "make_select_partitions", "make_vector_sum", "data_extractors"]


def _pid(row):
    return row[0]


def _partition(row):
    return row[1]


def _value(row):
    return row[2]


def data_extractors(pdp, *, values: bool = True):
    """PipelineDP's ``DataExtractors`` of the rows both modules build, (unit, partition,
    value) (``values=False``: no value, partition selection)."""
    if not values:
        return pdp.DataExtractors(privacy_id_extractor=_pid, partition_extractor=_partition)
    return pdp.DataExtractors(privacy_id_extractor=_pid, partition_extractor=_partition,
                              value_extractor=_value)


def _nan_choices(adapter: Adapter, function: str) -> tuple[str, ...]:
    """The values of ``nan`` the target declares (its ``nan_options``), in order."""
    return tuple(adapter.target(function).nan_options)


#: one float object for every NaN key with ``nan = "shared"``: what a user who writes
#: ``np.nan`` (a single object) hands PipelineDP
_SHARED_NAN = float("nan")
#: the norms of ``vector_sum`` (``pipeline_dp.aggregate_params.NormKind``)
NORMS = ("linf", "l1", "l2")


def _check_decimals(target: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 15:
        raise ValueError(f"{target}: parameter 'decimals' must be None or an integer in "
                         f"[0, 15], got decimals={value!r}")
    return int(value)


def make_select_partitions(adapter: Adapter, *, epsilon: float, delta: float,
                           params: dict | None) -> CallableImplementation:
    """``pipelinedp:select_partitions``: the number of partitions ``DPEngine.
    select_partitions`` keeps, each entry of a record (or of its ``column``) a partition key
    of that record's privacy unit (module docstring)."""
    target = f"{adapter.library}:select_partitions"
    p = _common.check_params(target, params, adapter.target("select_partitions").accepted())
    nan = _common.check_choice(target, "nan", p["nan"],
                               _nan_choices(adapter, "select_partitions"))
    column = _common.check_column(target, p["column"])
    decimals = _check_decimals(target, p["decimals"])
    if not 0.0 < delta < 1.0:
        raise ValueError(f"{target}: private partition selection needs delta in (0, 1), got "
                         f"delta={delta!r}")
    pdp = _common.require("pipeline_dp", adapter.distribution, target)
    budget = relations.to_substitution(adapter.relation, epsilon, delta)
    eps_lib, delta_lib = budget.epsilon, budget.delta
    _common.check_google_epsilon(target, epsilon, eps_lib)
    extractors = data_extractors(pdp, values=False)
    backend = pdp.LocalBackend()

    def release(data, rng: np.random.Generator) -> float:  # rng unused: not seedable
        x = _common.as_data(target, data)
        _common.selected(target, x, column)  # checks the column
        keys = x if column is None else x[:, column:column + 1]
        if decimals is not None:
            keys = np.round(keys, decimals)  # NaN stays NaN
        n, k = keys.shape
        ids, flat = np.repeat(np.arange(n), k), keys.reshape(-1)
        if nan == "drop":
            keep = ~np.isnan(flat)
            ids, flat = ids[keep], flat[keep]
        key_list = flat.tolist()  # each NaN a float object of its own
        if nan == "shared":
            key_list = [_SHARED_NAN if v != v else v for v in key_list]
        rows = list(zip(ids.tolist(), key_list, strict=True))
        if not rows:  # PipelineDP refuses empty input (dp_engine.py:201-202): no partition
            return 0.0
        accountant = pdp.NaiveBudgetAccountant(total_epsilon=eps_lib, total_delta=delta_lib)
        engine = pdp.DPEngine(accountant, backend)
        kept = engine.select_partitions(
            rows, pdp.SelectPartitionsParams(max_partitions_contributed=k), extractors)
        accountant.compute_budgets()
        return float(len(list(kept)))

    note = (f"PipelineDP {_common.version(adapter.distribution)} select_partitions (truncated "
            f"geometric; nan={nan}, column={column}, decimals={decimals}) run with "
            f"total_epsilon=ε/2={eps_lib}, total_delta={delta_lib}: the number of partitions "
            f"kept; its add/remove guarantee, doubled by group privacy, is ({epsilon}, "
            f"{delta}) per substituted record")
    return CallableImplementation(func=release, claim=Claim(epsilon, delta, note), name=target,
                                  params={"nan": nan, "column": column, "decimals": decimals})


def _clip_vector_crash(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside ``VectorSumCombiner._clip_vector``."""
    tb = exc.__traceback__
    while tb is not None:
        if (tb.tb_frame.f_code.co_name == "_clip_vector"
                and tb.tb_frame.f_code.co_filename.endswith("combiners.py")):
            return True
        tb = tb.tb_next
    return False


def _vector_sum_parameters(adapter: Adapter, delta: float, params: dict | None) -> dict:
    """The checked parameters of ``pipelinedp:vector_sum`` (ValueError naming a bad one)."""
    target = f"{adapter.library}:vector_sum"
    p = _common.check_params(target, params, adapter.target("vector_sum").accepted())
    max_norm = _common.check_real_param(target, "max_norm", p["max_norm"])
    if max_norm <= 0.0:
        raise ValueError(f"{target}: parameter 'max_norm' must be a finite number > 0, got "
                         f"max_norm={p['max_norm']!r}")
    norm = _common.check_choice(target, "norm", p["norm"], NORMS)
    noise = _common.check_noise(target, p["noise"])
    _common.check_noise_delta(target, noise, delta)
    if (noise, norm) in ((NoiseKind.LAPLACE, "l2"), (NoiseKind.GAUSSIAN, "l1")):
        allowed = "'linf' or 'l1'" if noise is NoiseKind.LAPLACE else "'linf' or 'l2'"
        raise ValueError(f"{target}: parameter 'norm' must be {allowed} with {noise.value} "
                         f"noise (dp_computations.add_noise_vector, dp_computations.py:"
                         f"251-270), got norm={norm!r}")
    nan = _common.check_choice(target, "nan", p["nan"], _nan_choices(adapter, "vector_sum"))
    return {"max_norm": max_norm, "norm": norm, "noise": noise, "nan": nan,
            "column": _common.check_column(target, p["column"])}


def make_vector_sum(adapter: Adapter, *, epsilon: float, delta: float,
                    params: dict | None) -> CallableImplementation:
    """``pipelinedp:vector_sum``: the record's k entries as one vector of one privacy unit in
    the public partition 0; the release, the noisy vector sum (k,). PipelineDP 0.3.1 crashes
    on every such call (module docstring, "Known defect"): :class:`LibraryDefect`."""
    target = f"{adapter.library}:vector_sum"
    checked = _vector_sum_parameters(adapter, delta, params)
    max_norm, norm, noise, nan, column = (checked[k] for k in ("max_norm", "norm", "noise",
                                                                "nan", "column"))
    pdp = _common.require("pipeline_dp", adapter.distribution, target)
    from pipeline_dp.aggregate_params import NormKind

    budget = relations.to_substitution(adapter.relation, epsilon, delta)
    eps_lib, delta_lib = budget.epsilon, budget.delta
    _common.check_google_epsilon(target, epsilon, eps_lib)
    norm_kind = {"linf": NormKind.Linf, "l1": NormKind.L1, "l2": NormKind.L2}[norm]
    noise_kind = pdp.NoiseKind.LAPLACE if noise is NoiseKind.LAPLACE else pdp.NoiseKind.GAUSSIAN
    extractors = data_extractors(pdp)
    backend = pdp.LocalBackend()
    found = f"PipelineDP {_common.version(adapter.distribution)}"

    def release(data, rng: np.random.Generator) -> np.ndarray:  # rng unused: not seedable
        x = _common.as_data(target, data)
        _common.selected(target, x, column)  # checks the column
        vectors = x if column is None else x[:, column:column + 1]
        k = vectors.shape[1]
        if nan == "drop":  # a record with a missing entry has no vector
            vectors = vectors[~np.isnan(vectors).any(axis=1)]
        rows = [(i, 0, v) for i, v in enumerate(vectors)]
        if not rows:  # PipelineDP refuses empty input; partition -1 is never public
            rows = [(-1, -1, np.zeros(k))]
        accountant = pdp.NaiveBudgetAccountant(total_epsilon=eps_lib, total_delta=delta_lib)
        engine = pdp.DPEngine(accountant, backend)
        agg = pdp.AggregateParams(noise_kind=noise_kind, metrics=[pdp.Metrics.VECTOR_SUM],
                                  max_partitions_contributed=1,
                                  max_contributions_per_partition=1, vector_size=k,
                                  vector_max_norm=max_norm, vector_norm_kind=norm_kind)
        result = engine.aggregate(rows, agg, extractors, public_partitions=[0])
        accountant.compute_budgets()
        try:
            by_partition = dict(result)  # the lazy pipeline runs here
        except (TypeError, ValueError) as exc:
            if not _clip_vector_crash(exc):
                raise
            raise LibraryDefect(
                f"{target}: {found} VECTOR_SUM with public partitions crashed in "
                f"VectorSumCombiner._clip_vector ({type(exc).__name__}: {exc}): the empty "
                f"accumulator of a public partition, create_accumulator([]) "
                f"(dp_engine.py:326), clips array_sum = None (combiners.py:909, 921, "
                f"{927 if norm == 'linf' else 930}); on any data, NaN or not. A defect of "
                f"the library, no release to audit") from exc
        return np.asarray(by_partition[0][0], dtype=np.float64)

    note = (f"{found} VECTOR_SUM (max_norm={max_norm}, norm={norm}, noise={noise.value}, "
            f"nan={nan}) run with total_epsilon=ε/2={eps_lib}, total_delta={delta_lib}: its "
            f"add/remove guarantee, doubled by group privacy, is ({epsilon}, {delta}) per "
            f"substituted record")
    return CallableImplementation(func=release, claim=Claim(epsilon, delta, note), name=target,
                                  params=checked)
