"""IBM diffprivlib's ``tools`` (``nanmean``, ``nansum``, ``nanvar``, ``nanstd``, ``mean``, ``sum``,
``var``, ``std``, ``quantile``, ``median``, ``percentile``, ``histogram``, ``histogramdd``,
``count_nonzero``) as black-box implementations.

Targets: ``diffprivlib:<function>`` for each function above (``ADAPTER`` declares them, with
their parameters, NaN semantics and examples). Parameters:

``bounds`` (required; not accepted by ``count_nonzero``)
    (lo, hi), passed to diffprivlib, which clips every entry to it (``histogram``: its
    ``range``; ``histogramdd``: the range of every column; entries outside it fall in no bin).
``axis`` (default None; not for ``histogram``, ``histogramdd``)
    None: one scalar over every entry of the (n, d) array; 0: one value per column (a vector
    of d), diffprivlib giving each column ε/d itself.
``quant`` (``quantile``, required), ``percent`` (``percentile``, required)
    The quantile in [0, 1], the percentile in [0, 100] (one number).
``bins`` (``histogram``, ``histogramdd``, default 10)
    The number of equal-width bins over ``bounds`` (``histogramdd``: per column); the release
    is the vector of the ``bins`` noisy counts (``histogramdd``: the bins^d cells of the
    d-dimensional histogram, flattened in C order; the edges are fixed by ``bounds`` and not
    released).

**Claim.** The audit's neighbouring relation is the substitution of one record (a row of d
entries). diffprivlib's own guarantee is ε-DP for the substitution of one *entry* of the array
it is given (its sensitivities below are those of one entry): ``Relation.ENTRY_SUBSTITUTION``.
With ``axis=None`` the adapter therefore calls diffprivlib with ``epsilon = ε / d`` on a
dataset of d columns (``to_substitution(ENTRY_SUBSTITUTION, ε, entries=d)``), which by group
privacy over the d entries of a record is ε-DP per record; with ``axis=0`` it passes ε
(``entries=1``), which diffprivlib splits into ε/d per column (``_wrap_axis``,
tools/utils.py:57-95), and a record touches one entry per column, so the vector release is
again ε-DP per record. The claim is (ε, 0): the tools are pure ε-DP, so ``delta`` must be 0.

**Randomness.** Seedable (``ADAPTER.seedable``): each call draws a 32-bit seed from ``rng``
and passes it as ``random_state``, which diffprivlib turns into a ``numpy.random.RandomState``
(``utils.check_random_state``, utils.py:75-102; the mechanisms keep it, mechanisms/base.py:83).
(With ``random_state=None`` diffprivlib would use ``secrets.SystemRandom``.) Each call is given
a fresh ``BudgetAccountant``: the default one appends every spend to a list it never empties
(accountant.py:361-382), which over millions of audit calls is unbounded memory.

**What a NaN does** (diffprivlib 0.6.6, ``diffprivlib/tools/utils.py``; N is the number of
entries the statistic runs over: n·d with ``axis=None``, n per column with ``axis=0``; k the
number of those that are observed):

* Clipping keeps NaN: ``validation.clip_to_bounds`` is ``np.clip`` (validation.py:167-200).
* ``nansum`` (``_sum``, utils.py:713-745): ``np.nansum`` — a NaN adds 0 — plus
  ``LaplaceTruncated`` noise of sensitivity hi − lo, output truncated to [lo·N, hi·N]. A NaN is
  read as 0, so substituting an entry changes the sum by up to max(hi − lo, |lo|, |hi|): the
  claim holds when 0 ∈ [lo, hi]; otherwise the true per-entry sensitivity is max(|lo|, |hi|) >
  hi − lo and the release is only ε·max(|lo|,|hi|)/(hi − lo)-DP. NaN is *not* dropped before
  clipping: ``clip_to_bounds(np.ravel(array), bounds)`` runs first (utils.py:732) and keeps it,
  then ``np.nansum`` (utils.py:735) reads it as 0 — never clipped up to lo. Hence, with bounds
  that exclude 0 (example ``bounds-exclude-zero``, (2, 3)), diffprivlib's claim does **not**
  hold on data with missing values: an entry at 3 becoming NaN moves the sum by 3 while the
  noise is calibrated to hi − lo = 1, so the expected verdict is a violation, up to 3ε per
  substituted entry (``tests/adapters/test_findings.py`` checks the shift through the seeded
  noise). On complete data the claim holds. All entries missing: 0 + noise when 0 ∈ [lo, hi];
  with 0 < lo, 0 lies below lo·N and the truncation releases exactly lo·N (deterministic).
* ``nanmean`` (``_mean``, utils.py:269-299): ``np.nanmean`` averages the k observed entries,
  but the noise is calibrated to sensitivity (hi − lo)/N with N = ``array.size``, which counts
  the NaN entries (utils.py:293). The mean of k values moves by up to (hi − lo)/k when one
  changes (and by up to (hi − lo)/(k + 1) when a NaN becomes a value), so on data with missing
  entries the release is about ε·N/k-DP, not ε: the privacy loss grows with the missing
  fraction. All entries missing (k = 0): ``np.nanmean`` is NaN and ``LaplaceTruncated`` returns
  NaN (NaN − noise, and ``_truncate`` compares false, mechanisms/base.py:217-223), so the
  release is NaN exactly when everything is missing — a deterministic event, not randomised.
* ``nanvar`` (``_var``, utils.py:425-457): ``np.nanvar`` (ddof 0) over the k observed entries,
  ``LaplaceBoundedDomain`` with sensitivity (hi − lo)²(N − 1)/N², again N counting the NaN
  entries (utils.py:450-452), where k observed entries need (hi − lo)²(k − 1)/k²: the same
  ≈ N/k inflation. k = 0: NaN, which ``LaplaceBoundedDomain.randomise`` returns as NaN
  (mechanisms/laplace.py:405). ``nanstd`` (``_std``, utils.py:582-594) is √ of that release.
* ``mean``, ``sum``, ``var``, ``std`` (the same functions with ``nan=False``): ``np.mean`` /
  ``np.sum`` / ``np.var`` of data with any NaN is NaN, and the mechanisms pass NaN through, so
  the release is NaN if and only if some entry is missing. That event is a deterministic
  function of the missingness pattern: two neighbours that differ in whether one record has a
  missing entry (all others complete) give NaN on one side and a finite value on the other
  with probability 1, which no finite ε allows.
* ``quantile``, ``median``, ``percentile`` (tools/quantiles.py; ``median`` and ``percentile``
  call ``quantile`` with 0.5 and percent/100, lines 272 and 212): the entries are clipped
  (``np.clip`` keeps NaN, line 126), ``bounds`` appended and the array sorted, NaN last; the
  interval sizes ``np.diff`` then hold a NaN, and ``if np.isnan(interval_sizes).any(): return
  np.nan`` (line 135) returns before any noise or budget spend: the release is NaN if and only
  if some entry (of the column, with ``axis=0``) is missing — ``propagates``, the same
  deterministic NaN event as ``mean``. Otherwise Smith's exponential mechanism over the k + 1
  intervals with utility sensitivity 1 (line 138), which diffprivlib claims ε-DP.
* ``histogram`` (tools/histograms.py:57-159): ``np.histogram(sample, bins, range)`` (line 141)
  keeps only entries with ``lo <= x <= hi`` (numpy 2.4, lib/_histograms_impl.py:837-838), and a
  NaN compares false, so a NaN falls in no bin: it is **dropped**, and the counts are those of
  the observed entries (never NaN; all missing: every count 0 + noise). Each count gets
  ``GeometricTruncated`` noise of sensitivity 1 (line 143), truncated to [0, maxsize]: that is
  the sensitivity of adding or removing one entry (one count changes by 1). Substituting one
  entry by another value moves it from one bin to another, two counts each by 1, an L1 change
  of 2: the release is 2ε-DP per substituted entry, not ε (on complete data as well), while a
  value becoming NaN changes one count (ε). The adapter calibrates it like the other tools
  (ε/d per entry), so the expected verdict is a violation by up to a factor 2; recorded, not
  corrected (``tests/adapters/test_findings.py``).
* ``histogramdd`` (tools/histograms.py:162-263): the (n, d) array is n *samples* of a
  d-dimensional histogram, one record one sample, so a record is one entry of diffprivlib's
  relation and the adapter passes ε itself (``entries=1``), the range ``bounds`` for every
  column. ``np.histogramdd(sample, bins, range)`` (line 247) finds each coordinate's bin with
  ``np.searchsorted(edges, x, side='right')`` (numpy 2.4, lib/_histograms_impl.py:1040-1043),
  which sorts NaN after every edge: index ``len(edges)``, the upper outlier bin (the
  rightmost-edge shift compares ``x == edges[-1]``, false for NaN, lines 1049-1053), and the
  outlier bins are cut off (lines 1069-1071). A record with a NaN in *any* coordinate falls in
  no cell: the whole record is **dropped**, its observed coordinates too (measured: the row
  (0.9, NaN) counts nowhere; all missing: every count 0 + noise; never NaN). Each cell gets
  ``GeometricTruncated`` noise of sensitivity 1 (line 249), truncated to [0, maxsize]: the
  add/remove sensitivity of one sample, exactly as ``histogram``. **It shares histogram's
  relation finding**: substituting a record moves it from one cell to another (two counts,
  L1 distance 2), so the release is 2ε-DP per substituted record, not ε (complete data as
  well), while a record becoming NaN changes one count (ε). Expected verdict: a violation by
  up to a factor 2 on a substitution pair; on the NaN table's pair (one record at +B against
  the all-NaN record) one count moves by 1, a loss of exactly ε: borderline, like
  ``histogram``'s row.
* ``count_nonzero`` (tools/utils.py:98-148): ``array.astype(np.bool_)`` (line 145), and
  numpy's float-to-bool cast is ``x != 0``, true for NaN (measured: ``np.array([np.nan])
  .astype(bool)`` is ``[True]``): a NaN is **counted** as a non-zero entry, never NaN. The
  count is ``sum(array_bool, dtype=np.intp, bounds=(0, 1))`` (line 147): an integer dtype, so
  ``_sum`` draws ``GeometricTruncated`` noise of sensitivity upper − lower = 1, truncated to
  [0, N] (lines 738-740; the truncation clamps, mechanisms/base.py:217-223): the sensitivity of
  one entry changing between zero and non-zero. With ``axis=None`` the adapter passes ε/d
  (d entries per record), with ``axis=0`` ε, split ε/d per column by ``_wrap_axis``
  (line 89). The claim holds with or without NaN (a NaN is one more non-zero value). On the
  NaN table's pair (a record at 1 against the all-NaN record) both sides count the record:
  the two laws are identical, ε_lower 0; the informative pair, 0 against NaN, differs by one
  count, a loss of ε/d per entry, within the claim.

Warnings: numpy's ``RuntimeWarning`` s "Mean of empty slice" and "Degrees of freedom <= 0 for
slice" (an all-missing dataset or column in the ``nan*`` functions) are silenced inside the
call, by message: the NaN they announce is the behaviour being audited, recorded above.
diffprivlib's ``PrivacyLeakWarning`` (bounds not given) cannot arise, since ``bounds`` is
required, and ``DiffprivlibCompatibilityWarning`` (unused arguments) cannot either, since the
adapter passes only arguments the tools take; neither is silenced, so one would surface.

Install: diffprivlib 0.6.6 imports ``sklearn.tree._tree.DOUBLE``, gone in scikit-learn 1.7;
the ``libraries`` extra pins ``scikit-learn<1.7``.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np

from audit.adapters import _common, relations
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import CallableImplementation, Claim

LIBRARY = "diffprivlib"
DISTRIBUTION = "diffprivlib"

#: numpy's warnings for an all-missing slice in the nan* functions (silenced by message)
_EMPTY_SLICE = ("Mean of empty slice", "Degrees of freedom <= 0 for slice")
#: the targets whose release is a vector of noisy counts over bins of ``bounds``
_HISTOGRAMS = ("histogram", "histogramdd")


def _release(function: str, func, x: np.ndarray, bounds, axis, **kw):
    """One call of the tool ``func`` on ``x`` (``kw``: epsilon, random_state, accountant and
    the tool's own keywords), as a float or a float64 vector."""
    if function == "histogram":  # the counts; the edges are fixed by the range
        counts, _ = func(x, range=bounds, **kw)
        return np.asarray(counts, dtype=np.float64)
    if function == "histogramdd":  # one sample per record, every column over the bounds
        counts, _ = func(x, range=[bounds] * x.shape[1], **kw)
        return np.asarray(counts, dtype=np.float64).reshape(-1)
    if bounds is not None:  # count_nonzero takes none
        kw["bounds"] = bounds
    with warnings.catch_warnings():
        for message in _EMPTY_SLICE:
            warnings.filterwarnings("ignore", message=message, category=RuntimeWarning)
        out = func(x, axis=axis, **kw)
    return float(out) if axis is None else np.asarray(out, dtype=np.float64)


def _own_keywords(target: str, function: str, p: dict) -> dict:
    """The checked arguments of ``function`` beyond bounds and axis (quant, percent, bins)."""
    if function in _HISTOGRAMS:
        bins = p["bins"]
        if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
            raise ValueError(f"{target}: parameter 'bins' must be an integer >= 1, got "
                             f"bins={bins!r}")
        return {"bins": int(bins)}
    top = {"quantile": ("quant", 1.0), "percentile": ("percent", 100.0)}.get(function)
    if top is None:
        return {}
    name, most = top
    value = _common.check_real_param(target, name, p[name])
    if not 0.0 <= value <= most:
        raise ValueError(f"{target}: parameter {name!r} must be in [0, {most:g}], got "
                         f"{name}={p[name]!r}")
    return {name: value}


def _check_axis(target: str, axis: object) -> None:
    if axis is not None and (isinstance(axis, bool) or axis != 0):
        raise ValueError(f"{target}: parameter 'axis' must be None (every entry) or 0 (per "
                         f"column), got axis={axis!r}")


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``diffprivlib.tools.<function>`` (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    bounds = None if function == "count_nonzero" else _common.check_bounds(target, p["bounds"])
    axis = p.get("axis")  # histograms: none, every entry
    _check_axis(target, axis)
    own = _own_keywords(target, function, p)
    if delta != 0.0:
        raise ValueError(f"{target}: diffprivlib's tools are pure ε-DP; delta must be 0, got "
                         f"delta={delta!r}")
    tools = _common.require("diffprivlib.tools", DISTRIBUTION, target)
    accountant_cls = _common.require("diffprivlib.accountant", DISTRIBUTION,
                                     target).BudgetAccountant
    func = getattr(tools, function)
    eps_by_entries: dict[int, float] = {}  # entries per record -> the library's ε

    def release(data, rng: np.random.Generator):
        x = _common.as_data(target, data)
        # axis=0: diffprivlib splits ε over the columns itself, one entry of each per record;
        # histogramdd: a record is one sample, one entry
        entries = 1 if axis is not None or function == "histogramdd" else x.shape[1]
        if entries not in eps_by_entries:
            eps_by_entries[entries] = relations.to_substitution(
                ADAPTER.relation, epsilon, 0.0, entries=entries).epsilon
        eps_lib = eps_by_entries[entries]
        seed = int(rng.integers(2**32))
        return _release(function, func, x, bounds, axis, epsilon=eps_lib, random_state=seed,
                        accountant=accountant_cls(), **own)

    unit = ("ε per record (one sample)" if function == "histogramdd"
            else "ε/d per entry (d = columns)" if axis is None else "ε, split ε/d per column")
    args = "".join(f", {k}={v}" for k, v in own.items())
    note = (f"diffprivlib {_common.version(DISTRIBUTION)} tools.{function}(bounds={bounds}, "
            f"axis={axis}{args}) called with {unit}: ε-DP per record by the library's "
            f"per-entry substitution guarantee (see audit.adapters.diffprivlib for what NaN "
            f"does)")
    return CallableImplementation(
        func=release, claim=Claim(epsilon, 0.0, note), name=target,
        params={"bounds": bounds, "axis": axis, **own})


_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): diffprivlib clips every entry to it")
_AXIS = Parameter("axis", None, "None: one scalar over every entry; 0: one value per column")
_PARAMETERS = (_BOUNDS, _AXIS)
_DEFAULT = Example("default", {"bounds": [-1.0, 1.0]}, doc="one scalar over every entry")
_PER_COLUMN = Example("per-column", {"bounds": [-1.0, 1.0], "axis": 0},
                      doc="a vector of d values, ε split over the columns by diffprivlib")
_EXCLUDE_ZERO = Example("bounds-exclude-zero", {"bounds": [2.0, 3.0]},
                        doc="0 outside the bounds: a NaN read as 0 breaks the claim")
#: function -> (what a NaN does, in one line)
_NAN = {
    "nanmean": (NanSemantics.SKIPS, "mean of the observed entries, noise calibrated to all N "
                                    "entries: about ε·N/k-DP with k observed"),
    "nansum": (NanSemantics.READ_AS_ZERO, "a NaN adds 0; the claim holds when 0 ∈ bounds"),
    "nanvar": (NanSemantics.SKIPS, "variance of the observed entries, sensitivity for all N"),
    "nanstd": (NanSemantics.SKIPS, "√ of nanvar's release"),
    "mean": (NanSemantics.PROPAGATES, "NaN whenever an entry is missing"),
    "sum": (NanSemantics.PROPAGATES, "NaN whenever an entry is missing"),
    "var": (NanSemantics.PROPAGATES, "NaN whenever an entry is missing"),
    "std": (NanSemantics.PROPAGATES, "NaN whenever an entry is missing"),
}
_EXAMPLES = {"nanmean": (_DEFAULT, _PER_COLUMN), "nansum": (_DEFAULT, _EXCLUDE_ZERO)}
_U = "diffprivlib/tools/utils.py"
_Q = "diffprivlib/tools/quantiles.py"
_H = "diffprivlib/tools/histograms.py"
#: function -> where diffprivlib 0.6.6 decides a NaN's fate (``Target.source``; the module
#: docstring's bullets say what each line does)
_SOURCE = {
    "nanmean": f"{_U}:290-293",  # np.nanmean; sensitivity over array.size, NaN counted
    "nansum": f"{_U}:735-740",  # np.nansum reads NaN as 0; noise of hi − lo
    "nanvar": f"{_U}:447-451",  # np.nanvar; sensitivity over array.size
    "nanstd": f"{_U}:447-451; {_U}:584-592",  # nanvar's release, then √
    "mean": f"{_U}:290-295; diffprivlib/mechanisms/base.py:217-223",  # NaN − noise, untruncated
    "sum": f"{_U}:735-741; diffprivlib/mechanisms/base.py:217-223",
    "var": f"{_U}:447-453; diffprivlib/mechanisms/laplace.py:405-406",  # NaN returned as NaN
    "std": f"{_U}:447-453; diffprivlib/mechanisms/laplace.py:405-406; {_U}:584-592",
    "quantile": f"{_Q}:135-136",  # `if np.isnan(interval_sizes).any(): return np.nan`
    "median": f"{_Q}:272; {_Q}:135-136",
    "percentile": f"{_Q}:212; {_Q}:135-136",
    "histogram": f"{_H}:141-143",  # np.histogram: NaN in no bin; sensitivity 1
    "histogramdd": f"{_H}:247-249",
    "count_nonzero": f"{_U}:145-147",  # astype(bool): NaN is non-zero
}
_QUANTILE_NAN = "NaN whenever an entry is missing (returned before any noise)"
#: the targets with parameters of their own (after the eight above)
_MORE = (
    Target("quantile", (*_PARAMETERS, Parameter("quant", REQUIRED, "the quantile, in [0, 1]")),
           nan=NanSemantics.PROPAGATES, summary=_QUANTILE_NAN, source=_SOURCE["quantile"],
           examples=(Example("default", {"bounds": [-1.0, 1.0], "quant": 0.25},
                             doc="the lower quartile of every entry"),)),
    Target("median", _PARAMETERS, nan=NanSemantics.PROPAGATES, summary=_QUANTILE_NAN,
           source=_SOURCE["median"],
           examples=(_DEFAULT,)),
    Target("percentile",
           (*_PARAMETERS, Parameter("percent", REQUIRED, "the percentile, in [0, 100]")),
           nan=NanSemantics.PROPAGATES, summary=_QUANTILE_NAN, source=_SOURCE["percentile"],
           examples=(Example("default", {"bounds": [-1.0, 1.0], "percent": 90.0},
                             doc="the 90th percentile of every entry"),)),
    Target("histogram", (_BOUNDS, Parameter("bins", 10, "equal-width bins over bounds")),
           nan=NanSemantics.DROPS, source=_SOURCE["histogram"],
           summary="a NaN falls in no bin; per-bin sensitivity 1 is add/remove: 2ε per "
                   "substituted entry",
           examples=(Example("default", {"bounds": [-1.0, 1.0], "bins": 4},
                             doc="four noisy counts over every entry"),)),
    Target("histogramdd", (Parameter("bounds", REQUIRED, "(lo, hi): the range of every column"),
                           Parameter("bins", 10, "equal-width bins per column over bounds")),
           nan=NanSemantics.DROPS, source=_SOURCE["histogramdd"],
           summary="a record with a NaN coordinate falls in no cell (dropped whole); per-cell "
                   "sensitivity 1 is add/remove: 2ε per substituted record",
           examples=(Example("default", {"bounds": [-1.0, 1.0], "bins": 2},
                             doc="bins^d noisy cell counts, one sample per record"),)),
    Target("count_nonzero", (_AXIS,), nan=NanSemantics.COUNTED, source=_SOURCE["count_nonzero"],
           summary="a NaN is non-zero (astype(bool)): counted; geometric noise of "
                   "sensitivity 1 per entry",
           examples=(Example("default", {}, doc="one count over every entry"),
                     Example("per-column", {"axis": 0},
                             doc="a count per column, ε split over the columns"))),
)

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="diffprivlib", seedable=True,
    relation=Relation.ENTRY_SUBSTITUTION, make=make,
    summary="IBM diffprivlib 0.6 tools (pure ε-DP, Laplace-type noise)",
    targets=(*(Target(function, _PARAMETERS, nan=nan, summary=summary,
                      source=_SOURCE[function], examples=_EXAMPLES.get(function, (_DEFAULT,)))
               for function, (nan, summary) in _NAN.items()), *_MORE),
)
