"""Releases made together, checked before an audit counts them as independent calls.

A library that releases T public partitions in one call (PipelineDP's ``DPEngine.aggregate``
over public partitions, one copy of a dataset per partition, disjoint privacy units) gives T
releases for the price of one call. An audit may count them as T calls only if the releases of
one call are independent of each other and each has the law of an unbatched call. An
implementation states that its batched form works this way
(``CallableImplementation.batch_in_one_call``); this module checks it, once per target and
dataset shape in a process (:func:`checked`, cached), before the audit uses that form, and the
audit refuses the batched form (calls the implementation once per dataset, with a
:class:`BatchRefused` warning) when the check fails.

The check (:func:`check_batch`, sizes and α in ``audit.policy.DEFAULT_POLICY.batch_check``,
or in the implementation's own ``batch_check_rule`` where an unbatched call is dear):
``calls`` calls of the batched form, each on ``per_call`` copies of one complete dataset (the
audit's first dataset with its missing entries read as 0: the per-partition code is the same
whatever the values, and NaN releases would make the tests vacuous; a NaN release there fails
the check), and ``unbatched``
unbatched calls on it. A vector release is reduced to the sum of its coordinates. Three tests,
each at α/3 (Bonferroni; default α = 10⁻⁶), any of which refuses:

1. **correlation** within a call: Kendall's τ between the releases of positions 2j and 2j + 1
   of each call, the pairs pooled over calls and j (i.i.d. pairs of independent coordinates
   under independence), two-sided, exact null distribution when there are no ties (scipy's
   normal approximation with the tie correction otherwise);
2. **permutation** across calls: for calls 2i and 2i + 1, the exact permutation test of the
   rank sum (Mann–Whitney U, scipy's exact permutation distribution; normal approximation
   with the tie correction where the two calls share values) of "the releases of the two calls
   are exchangeable", two-sided; the calls/2 independent p-values are combined by Fisher's
   method (valid, conservative for the exact tests' discrete p-values). Noise shared within a
   call moves all of a call's releases together: the two calls separate;
3. **law**: the two-sample Kolmogorov–Smirnov test (``scipy.stats.ks_2samp``, exact p-value
   up to 10⁴ per sample) of the pooled batched releases against the unbatched ones (valid for
   a discrete law too, where it is conservative).

Power (default sizes): a fully shared noise gives τ = 1 on 200 pairs (p ≈ 10⁻⁹⁰) and calls
that separate completely (p = 2/C(40, 20) ≈ 1.4·10⁻¹¹ per pair of calls); the law test, with
400 releases a side, detects a Kolmogorov distance above ≈ 0.19 (a Laplace scale off by a
factor of about 3) — a guard against a gross error, not a proof of equality (the adapters'
tests compare the laws on more calls).

Cost: ``calls · per_call + unbatched`` = 800 releases by default (PipelineDP's sum on 10
values: about 0.25 s; on 100 × 3 values, where its batched form is one call per dataset
anyway, about 2.5 s), once per target and dataset shape in a process.

Cached on disk: a result is also written to the cache (:func:`audit.cache.cache_root`,
``batch-checks/<key>.json``; an isolated target's in its built environment's folder,
``envs/<key>/batch-checks/``, removed with it), and a later process auditing the same target
reads it instead of checking again (the result says so: ``cached`` is True, in the JSON's
``claim.batch_check`` and the command line's summary). The key is a digest of the target
(name, parameters, claim, whose note names the library's version), the dataset's shape, the
rule, the code (:func:`code_identity`: the digest of the source of every module the
implementation's functions come from and the installed version of the distribution named like
its package; an
isolated target's environment key, library-side module and stated versions) and this
module's own source: a change of any of them is a new key, and the check runs again. The
check draws from a fixed seed, so a seeded library's cached result is the one a rerun gives.
Files are written atomically; one that cannot be read or does not match its key is ignored
and written again; a cache that cannot be written only costs the saving.

References
----------
Kendall, M. G. (1938). A new measure of rank correlation. Biometrika 30, 81–93.
Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random variables is
stochastically larger than the other. Ann. Math. Statist. 18, 50–60.
Fisher, R. A. (1932). Statistical Methods for Research Workers, 4th ed., §21.1.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from audit.cache import cache_root, read_json, write_json_atomic
from audit.model.implementation import CallableImplementation
from audit.policy import DEFAULT_POLICY, BatchCheckRule
from audit.records import BATCH_TESTS as TESTS
from audit.records import BatchCheck, traits_of

__all__ = ["BatchCheck", "BatchRefused", "check_batch", "checked", "clear_cache",
           "code_identity", "cache_file", "TESTS"]

_CACHE: dict[str, BatchCheck] = {}


class BatchRefused(UserWarning):
    """An audit calls an implementation once per dataset: its batched form failed the check."""


def _scalar(values, m: int) -> np.ndarray:
    """``m`` releases (scalars or vectors) as m reals: a vector's coordinates summed."""
    out = np.asarray(values, dtype=np.float64)
    return out.reshape(m, -1).sum(axis=1)


def _kendall(batched: np.ndarray) -> float:
    from scipy import stats

    half = batched.shape[1] // 2
    x, y = batched[:, 0:2 * half:2].ravel(), batched[:, 1:2 * half:2].ravel()
    ties = np.unique(x).size < x.size or np.unique(y).size < y.size
    return float(stats.kendalltau(x, y, method="asymptotic" if ties else "exact").pvalue)


def _rank_sums(batched: np.ndarray) -> float:
    from scipy import stats

    ps = []
    for a, b in zip(batched[0::2], batched[1::2], strict=False):
        both = np.concatenate([a, b])
        exact = np.unique(both).size == both.size
        ps.append(stats.mannwhitneyu(a, b, method="exact" if exact else "asymptotic").pvalue)
    return float(stats.combine_pvalues(ps, method="fisher").pvalue)


def _p_values(batched: np.ndarray, unbatched: np.ndarray) -> dict:
    from scipy import stats

    pooled = batched.ravel()
    if np.ptp(pooled) == 0 and np.ptp(unbatched) == 0:  # a constant release is independent
        same = float(pooled[0] == unbatched[0])
        return {"correlation": 1.0, "permutation": 1.0, "law": same}
    return {"correlation": _kendall(batched), "permutation": _rank_sums(batched),
            "law": float(stats.ks_2samp(pooled, unbatched).pvalue)}


def check_batch(impl, data, *, rule: BatchCheckRule | None = None,
                rng: np.random.Generator | int | None = 0) -> BatchCheck:
    """Check that ``impl.batch`` releases independent copies of ``impl`` (module docstring).

    Parameters
    ----------
    impl : Implementation
        With a batched form ``impl.batch(datasets, rng)``.
    data : array (n, d)
        The dataset; its NaN entries are read as 0 (the check runs on complete data).
    rule : BatchCheckRule, optional
        Sizes and α (default: ``DEFAULT_POLICY.batch_check``).
    rng : Generator or int or None
        Handed to the implementation's calls (an unseedable library ignores it).

    Returns
    -------
    BatchCheck
    """
    rule = DEFAULT_POLICY.batch_check if rule is None else rule
    traits = traits_of(impl)
    if traits.batch is None:
        raise ValueError(f"{traits.name} has no batched form to check")
    rng = np.random.default_rng(rng)
    x = np.nan_to_num(np.asarray(data, dtype=np.float64), nan=0.0)
    stack = np.broadcast_to(x, (rule.per_call, *x.shape)).copy()
    t0 = time.perf_counter()
    batched = np.stack([_scalar(impl.batch(stack, rng), rule.per_call)
                        for _ in range(rule.calls)])
    unbatched = _scalar([impl(x, rng) for _ in range(rule.unbatched)], rule.unbatched)
    seconds = time.perf_counter() - t0
    name = traits.name
    nan_free = not bool(np.isnan(batched).any() or np.isnan(unbatched).any())
    p_values = _p_values(batched, unbatched) if nan_free else {}
    return BatchCheck(name, p_values, rule.alpha, batched.size, unbatched.size, seconds,
                      nan_free)


def _key(impl, shape: tuple, rule: BatchCheckRule) -> str:
    def plain(o):
        return np.asarray(o).tolist() if isinstance(o, (np.ndarray, np.generic)) else str(o)

    traits = traits_of(impl)
    return json.dumps({"name": traits.name, "params": traits.params,
                       "claim": repr(traits.claim), "shape": list(shape),
                       "rule": dataclasses.asdict(rule)},
                      sort_keys=True, default=plain)


#: bumped when the cached file's layout changes
_SCHEMA = 1


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _source_digest(path: str | None) -> str:
    try:
        st = Path(path).stat()
        return _file_digest(str(path), st.st_mtime_ns, st.st_size)
    except (OSError, TypeError):
        return ""


@functools.lru_cache(maxsize=64)
def _version(module_name: str) -> str:
    """The installed version of the distribution named like the module's top-level package
    (``pipeline_dp`` → pipeline-dp; '' when none is: ``packages_distributions`` would find the
    others but reads every installed distribution, a third of a second)."""
    from importlib import metadata

    try:
        return metadata.version(module_name.partition(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return ""


def _code_objects(impl) -> list:
    """The implementation (unless a plain wrapper of callables), its functions and the
    callables their closures hold (a user's function inside an adapter's wrapper)."""
    out = [] if isinstance(impl, CallableImplementation) else [impl]
    for f in traits_of(impl).functions:
        out.append(f)
        for cell in getattr(f, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if callable(value):
                out.append(value)
    return out


def code_identity(impl) -> dict | None:
    """What a cached check depends on besides the target, the shape and the rule.

    The implementation's own ``cache_identity()`` where it has one (an isolated target:
    its environment key, library-side module and stated versions; None: not cacheable on
    disk); else, for each module its code comes from (the implementation's class, its
    functions and the callables their closures hold), the digest of the module's source file
    and the installed version of the distribution named like its top-level package.
    """
    own = traits_of(impl).cache_identity
    if own is not None:
        return own()
    modules = {}
    for obj in _code_objects(impl):
        name = getattr(obj, "__module__", None) or type(obj).__module__
        if not isinstance(name, str) or name in modules:
            continue
        module = sys.modules.get(name) or inspect.getmodule(obj)
        modules[name] = {"source": _source_digest(getattr(module, "__file__", None)),
                         "distribution": _version(name)}
    return {"modules": modules}


def _material(impl, shape: tuple, rule: BatchCheckRule, identity: dict) -> str:
    return json.dumps({"schema": _SCHEMA, "target": _key(impl, shape, rule),
                       "code": identity, "check": _source_digest(__file__)},
                      sort_keys=True, default=str)


def cache_file(impl, shape: tuple, rule: BatchCheckRule) -> tuple[Path, str] | None:
    """(the file that caches the check of ``impl`` on datasets of ``shape`` under ``rule``,
    the key it must hold), or None when the implementation is not cacheable on disk."""
    identity = code_identity(impl)
    if identity is None:
        return None
    if hasattr(impl, "batch_check_folder"):  # an isolated target: its environment's folder
        folder = impl.batch_check_folder
    else:
        folder = cache_root() / "batch-checks"
    if folder is None:
        return None
    material = _material(impl, shape, rule, identity)
    return Path(folder) / f"{hashlib.sha256(material.encode()).hexdigest()[:32]}.json", material


def _load(path: Path, material: str) -> BatchCheck | None:
    """The cached check in ``path`` if it holds ``material``'s result, else None."""
    doc = read_json(path)
    if doc is None or doc.get("schema") != _SCHEMA or doc.get("key") != material:
        return None
    fields = {f.name for f in dataclasses.fields(BatchCheck)} - {"cached"}
    result = doc.get("result")
    if not isinstance(result, dict) or set(result) != fields:
        return None
    try:
        found = BatchCheck(**result, cached=True)
    except TypeError:
        return None
    p_values = found.p_values if isinstance(found.p_values, dict) else {}
    if found.nan_free and not all(isinstance(p_values.get(t), float) for t in TESTS):
        return None
    return found


def _save(path: Path, material: str, result: BatchCheck) -> None:
    doc = {"schema": _SCHEMA, "key": material,
           "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "result": {k: v for k, v in dataclasses.asdict(result).items() if k != "cached"}}
    try:
        write_json_atomic(path, doc)
    except OSError:  # a read-only or full cache: the check is still valid, only not kept
        pass


def _cached_check(impl, data, rule: BatchCheckRule) -> BatchCheck:
    """The check, from this process's cache, else the disk's, else run (and kept in both)."""
    key = _key(impl, np.shape(data), rule)
    if key in _CACHE:
        return _CACHE[key]
    where = cache_file(impl, np.shape(data), rule)
    result = None if where is None else _load(*where)
    if result is None:
        result = check_batch(impl, data, rule=rule)
        if where is not None:
            _save(*where, result)
    _CACHE[key] = result
    return result


def checked(impl, data, *, rule: BatchCheckRule | None = None):
    """``impl`` itself, or, when its batched form makes several releases in one call and fails
    :func:`check_batch` on ``data``, ``impl`` without its batched form (with a
    :class:`BatchRefused` warning). The check runs once per target (name, parameters, claim),
    dataset shape and rule in a process, and its result is cached on disk for later
    processes (module docstring; ``cached`` says it was read there); an implementation that
    does not state ``batch_in_one_call`` is returned as it is, unchecked. Without ``rule``, the
    implementation's own ``batch_check_rule`` (where its unbatched calls are too dear for the
    policy's sizes: Tumult's are Spark jobs), else the policy's.

    Returns
    -------
    (implementation, BatchCheck or None)
    """
    traits = traits_of(impl)
    if not traits.batch_in_one_call or traits.batch is None:
        return impl, None
    if rule is None:
        rule = traits.batch_check_rule or DEFAULT_POLICY.batch_check
    result = _cached_check(impl, data, rule)
    if result.passed:
        return impl, result
    warnings.warn(f"{result.describe()}: the audit calls it once per dataset", BatchRefused,
                  stacklevel=2)
    if isinstance(impl, CallableImplementation):
        return dataclasses.replace(impl, batch_func=None, batch_in_one_call=False), result
    return CallableImplementation(func=impl, claim=impl.claim, name=result.name,
                                  params=traits.params), result


def clear_cache() -> None:
    """Forget every check made in this process (tests); the cache on disk stays."""
    _CACHE.clear()
