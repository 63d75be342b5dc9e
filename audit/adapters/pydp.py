"""Google's differential-privacy library through its Python bindings, python-dp (``pydp``):
``BoundedSum``, ``BoundedMean``, ``BoundedVariance``, ``BoundedStandardDeviation``, ``Count``
and the order statistics ``Median``, ``Percentile``, ``Max``, ``Min`` as black-box
implementations.

Targets: ``pydp:sum``, ``pydp:mean``, ``pydp:variance``, ``pydp:std``, ``pydp:count``,
``pydp:median``, ``pydp:percentile``, ``pydp:max``, ``pydp:min`` (the classes of
``pydp.algorithms.laplacian`` in that order; ``ADAPTER`` declares them, with their
parameters, NaN semantics and examples). The library is called ``pydp`` here, after the module
it installs (the distribution is ``python-dp``). Each call builds a fresh algorithm object with
``dtype="float"`` and releases ``quick_result(values)`` (one ``Result`` over the values, the
whole budget spent). Parameters:

``bounds`` (required for all but count; not accepted by count)
    (lo, hi): ``lower_bound``, ``upper_bound``; the bounded sums clamp each value to it, the
    order statistics search in it (below).
``column`` (default None)
    None: every entry of the (n, d) array, record by record; an integer j: column j only.
``percentile`` (``pydp:percentile``, required)
    The quantile in [0, 1] (the library's own scale: ``Percentile::Builder`` refuses any other,
    ``ValidateIsInInclusiveInterval(percentile_, 0, 1)``, cc/algorithms/order-statistics.h:221).

**Claim.** The C++ library's guarantee is ε-DP for adding or removing one privacy unit (a
user) that contributes at most ``linf_sensitivity`` values to the aggregation (and to at most
``l0_sensitivity`` partitions): the bindings pass them on as ``SetMaxContributionsPerPartition``
and ``SetMaxPartitionsContributed`` (PyDP ``src/bindings/PyDP/pydp_lib/algorithm_builder.hpp``,
``AlgorithmBuilder::build``), and the noise is calibrated to what removing one user changes:
``BoundedSum`` linf·max(|lo|, |hi|) (``BoundedSum::BuildMechanism``, cc/algorithms/bounded-sum.h),
``Count`` linf (``BuildCountMechanism``, cc/algorithms/count.h), ``BoundedMean`` a count with
linf and a sum of (x − mid) with linf·(hi − lo)/2 (``BuildSumMechanism``,
cc/algorithms/bounded-mean.h), ``BoundedVariance`` a count, a sum and a sum of squares the
same way (cc/algorithms/bounded-variance.h). Those are add/remove sensitivities
(``Relation.ADD_REMOVE``; the library does not bound contributions itself: its docs,
cc/docs/index.md "Caveats", leave that to the caller). The adapter makes every record one user
with ``l0_sensitivity = 1`` and ``linf_sensitivity = k`` (its k entries: d, or 1 with
``column``), so no contribution is ever out of bounds, and asks for
``to_substitution(ADD_REMOVE, ε)``: ε/2 (a substitution is a removal then an addition), which
by group privacy is ε-DP per substituted record. The claim is (ε, 0): the Python classes
offer only Laplace noise (``pydp.algorithms.laplacian``), so ``delta`` must be 0. (Checked on
the installed wheel: at ε/2 = 0.5 the sum's spread is √2·k/0.5 for linf = k, and √2·3/0.5 for
bounds (2, 3), i.e. max(|lo|, |hi|), not hi − lo.)

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): all noise comes from the C++
``SecureURBG``, which fills its buffer with OpenSSL's ``RAND_bytes``
(cc/algorithms/rand.cc, ``SecureURBG::RefreshBuffer``); neither the C++ API nor the bindings
offer a seed. ``rng`` is not used, and the same seed does not reproduce a release.

**What a NaN does** (python-dp 1.1.5; the bindings' ``result`` turns the Python list into a
``std::vector<double>`` with pybind11 — NaN passes through unchanged, nothing in the Python
layer, ``pydp/algorithms/_algorithm.py``, ``MetaAlgorithm.quick_result``, looks at the values —
and calls ``Result(begin, end)``, which feeds each value to ``AddEntry``):

* ``BoundedSum``, ``BoundedMean``, ``BoundedVariance`` (and ``BoundedStandardDeviation``, the
  square root of a ``BoundedVariance``): ``AddEntry`` returns at once on
  ``std::isnan(t)`` (``BoundedSumWithFixedBounds::AddEntry``, bounded-sum.h; ``BoundedMean::
  AddEntry``, bounded-mean.h, before ``++raw_count_``; ``BoundedVariance::AddEntry``,
  bounded-variance.h, "Drop value if it is NaN"): a NaN is **dropped** before clamping — it
  adds nothing to the sum and does not count in the mean's or the variance's count
  (``NanSemantics.DROPS``). Checked: [0.5, NaN, 0.25] at ε = 10⁶ gives sum 0.75, mean 0.375,
  variance 0.015625 (that of {0.5, 0.25}); with bounds (2, 3) an all-NaN input sums to 0, not
  to 2 per entry. No release is ever NaN: with nothing observed the sum is 0 + noise, the mean
  max(1, noisy count) in the denominator, clamped to [lo, hi] (bounded-mean.h,
  ``GenerateResult``), the variance the midpoints of its sums when the noisy count is ≤ 1,
  clamped to [0, (hi − lo)²/4] (bounded-variance.h) — all-NaN at ε = 10⁶ and bounds (−1, 1):
  variance 0.5, std 0.707.
* ``Count``: ``AddEntry`` is ``AddMultipleEntries(v, 1)``, which adds 1 whatever ``v`` is
  (count.h): a NaN is **counted** (``NanSemantics.COUNTED``); [0.5, NaN, 0.25] counts 3. Under
  substitution the count is n·k whatever the data, so the release does not depend on the data
  (trivially private; it says nothing about missingness).
* Dropping keeps the claim: a record still contributes at most k values (fewer when some are
  NaN), which is all the add/remove guarantee needs, and a substitution that turns a value
  into NaN is, for the library, the removal of that value — within the sensitivities above
  even when 0 ∉ [lo, hi] (a dropped value is not read as 0). The expected verdict on data with
  missing values is that every target's claim holds.

**Order statistics** (``Median``, ``Percentile``, ``Max``, ``Min``). The wheel ships the C++
compiled (``pydp/_pydp.so``); the lines below are those of google/differential-privacy at
b5b0286 (files unchanged since February 2024 but for one ``#include``; one line earlier at
e59bbcf, the commit PyDP 1.1.5's source pins; the wheel, built against Abseil lts_20250512,
does not record its commit), and the behaviour is measured on the installed wheel. The Python
classes bind ``differential_privacy::continuous::Median/Percentile/Max/Min<double>`` (PyDP
src/bindings/PyDP/algorithms/order_statistics.cpp; ``_pydp.so`` exports those symbols and
``BinarySearch``'s error strings), the library's *deprecated* order statistics ("Use
Quantiles instead", cc/algorithms/order-statistics.h:29-31), not the quantile tree that
PipelineDP's PERCENTILE uses. Each is a ``BinarySearch<double>`` (cc/algorithms/
binary-search.h) with quantile 0.5, p, 1 or 0 (order-statistics.h:192, 247, 116, 153): a
Bayesian search over [lo, hi] whose every step adds Laplace noise to the counts of the values
below and above a point m at ε times a local fraction, the fractions summing to at most 1
(binary-search.h:186-231), each count's sensitivity l0·linf (lines 196-200). An added user
moves at most linf values from "absent" to one side of m, so the search is ε-DP for
add/remove like the other classes; the adapter runs it at ε/2 with linf = k. Values are *not*
clamped: one outside [lo, hi] counts on its side of every m, and the release is a point of
[lo, hi] (m starts at the midpoint and only splits buckets of [lo, hi], lines 182-265). For
Max and Min the count on the far side is reduced by max(2, min(45, 0.14·noisy size)) before
each update (lines 216-222, 288-290): post-processing of noisy counts that pulls the release
inside the data, so with few values it lies well inside the true extreme (measured: the max
of {0.25, 0.5, 0.9} at ε = 10⁶ is 0.36-0.42). The Python ``Percentile`` class
(pydp/algorithms/laplacian/_percentile.py:13-27 as installed) takes no ``l0_sensitivity``
or ``linf_sensitivity``, so it always builds with 1 and 1; the adapter builds the bound class
it builds (``pydp._pydp._algorithms.PercentileDouble``: ``MetaAlgorithm.__init__``,
pydp/algorithms/_algorithm.py:23-27; ``tests/adapters/test_pydp.py`` checks it is that class)
with ``linf_sensitivity = k`` and calls its ``result(values)``, which is what ``quick_result``
calls (_algorithm.py:105).

**What a NaN does in an order statistic**: ``BinarySearch::AddEntry`` adds a value to its
sketch only ``if (!std::isnan(static_cast<double>(t)))`` (binary-search.h:88-94, there since
2020, commit 76999f2), and the sketch drops NaN again (``base::Percentile::Add``,
cc/base/percentile.h:58): a NaN is **dropped** (``DROPS``). With nothing observed,
``Percentile(m)`` is 1/2 (binary-search.h:376-378) and the counts are noise alone: the
release is still a point of [lo, hi], never NaN. Measured on the installed wheel (python-dp
1.1.5, ε = 10⁶): fifteen values 0.8 and twenty-five NaN give median 0.8 (NaN read as 0 would
give 0.0); fifteen −0.5 and twenty-five NaN give max −0.5 (as 0: 0.0); fifteen 0.5 and
twenty-five NaN give min 0.5 (as 0: 0.0); the 0.9 percentile of fifteen 0.8 and twenty-five
NaN is 0.8; all NaN gives a median anywhere in [−1, 1]. Dropping is removal, within the
add/remove guarantee: the expected verdict on data with missing values is that the claim
holds. No closed-form spread (a noisy search): the contract tests check the NaN behaviour,
and ``tests/adapters/test_pydp.py`` the calibration against the library called directly.

**Sources** (``Target.source``). Every NaN check above is in the compiled C++ (``AddEntry``
in ``pydp/_pydp.so``); the C++ source is not installed. Each target's ``source`` therefore
cites the installed Python lines that pick the bound C++ class (``BoundedSumDouble``, ...:
``MetaAlgorithm.__init__``, pydp/algorithms/_algorithm.py:23-27) and hand it the values
(``quick_result`` → ``result(data)``, _algorithm.py:105; the percentile's adapter calls that
``result`` itself).

**Per-call cost.** A fresh C++ object per call, and the values as a Python list: about 0.05 ms
per call at n·k = 120 (the order statistics about 0.25 ms: tens of search steps).
"""

from __future__ import annotations

import numpy as np

from audit.adapters import _common, relations
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import CallableImplementation, Claim

LIBRARY = "pydp"
DISTRIBUTION = "python-dp"

#: target function -> the class of ``pydp.algorithms.laplacian`` it releases
CLASSES = {"sum": "BoundedSum", "mean": "BoundedMean", "variance": "BoundedVariance",
           "std": "BoundedStandardDeviation", "count": "Count", "median": "Median",
           "percentile": "Percentile", "max": "Max", "min": "Min"}


def _check_percentile(target: str, value: object) -> float:
    """The percentile, a number in [0, 1] (the library's scale)."""
    p = _common.check_real_param(target, "percentile", value)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{target}: parameter 'percentile' must be in [0, 1] (python-dp's "
                         f"scale, not percent), got percentile={value!r}")
    return p


def _percentile_class():
    """``PercentileDouble``, the bound class ``pydp.algorithms.laplacian.Percentile`` builds
    (looked up at each call: a pybind11 class does not pickle, and the implementation must)."""
    return _common.require("pydp._pydp", DISTRIBUTION, "pydp:percentile")._algorithms \
        .PercentileDouble


def _one_shot(function: str, eps_lib: float, k: int, value_bounds: dict, percentile):
    """A fresh algorithm for one record of k values: its one-shot release ``f(list)``."""
    if function == "percentile":  # the Python class cannot set linf (module docstring)
        return _percentile_class()(epsilon=eps_lib, percentile=percentile, l0_sensitivity=1,
                                   linf_sensitivity=k, **value_bounds).result
    algorithm = getattr(_common.require("pydp.algorithms.laplacian", DISTRIBUTION,
                                        f"{LIBRARY}:{function}"), CLASSES[function])
    return algorithm(epsilon=eps_lib, l0_sensitivity=1, linf_sensitivity=k, dtype="float",
                     **value_bounds).quick_result


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``pydp:<function>`` (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    bounds = None if function == "count" else _common.check_bounds(target, p["bounds"])
    column = _common.check_column(target, p["column"])
    percentile = _check_percentile(target, p["percentile"]) if function == "percentile" else None
    if delta != 0.0:
        raise ValueError(f"{target}: python-dp's algorithms add Laplace noise (pure ε-DP); "
                         f"delta must be 0, got delta={delta!r}")
    _common.require("pydp.algorithms.laplacian", DISTRIBUTION, target)
    eps_lib = relations.to_substitution(ADAPTER.relation, epsilon, 0.0).epsilon  # ε/2
    _common.check_google_epsilon(target, epsilon, eps_lib)
    value_bounds = {} if bounds is None else {"lower_bound": bounds[0],
                                              "upper_bound": bounds[1]}

    def release(data, rng: np.random.Generator):  # rng unused: python-dp cannot be seeded
        x = _common.as_data(target, data)
        values = _common.selected(target, x, column)
        k = values.size // x.shape[0]  # one record = one user with k values
        return float(_one_shot(function, eps_lib, k, value_bounds, percentile)(values.tolist()))

    own = "" if percentile is None else f"percentile={percentile}, "
    note = (f"python-dp {_common.version(DISTRIBUTION)} {CLASSES[function]}({own}"
            f"bounds={bounds}, l0_sensitivity=1, linf_sensitivity=k entries per record) run with "
            f"epsilon=ε/2={eps_lib}: its add/remove guarantee, doubled by group privacy, is "
            f"{epsilon}-DP per substituted record (see audit.adapters.pydp for what NaN does)")
    return CallableImplementation(func=release, claim=Claim(epsilon, 0.0, note), name=target,
                                  params={"bounds": bounds, "column": column,
                                          **({} if percentile is None
                                             else {"percentile": percentile})})


_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): lower_bound, upper_bound, values clamped")
_COLUMN = Parameter("column", None, "None: every entry, record by record; j: column j only")
_RANGE = [-1.0, 1.0]
_DEFAULT = Example("default", {"bounds": _RANGE}, doc="bounds around 0, every entry")


#: ``Target.source`` of every target: ``AddEntry``'s NaN check is compiled C++
#: (``pydp/_pydp.so``), so the places are the Python-side lines that pick the bound class
#: (``BoundedSumDouble``, ...) and hand it the values (``quick_result``; the percentile's
#: ``result``, the call it makes): module docstring, "Sources"
_SOURCE = "pydp/algorithms/_algorithm.py:23-27; pydp/algorithms/_algorithm.py:105"


def _bounded(function: str, summary: str, *extra: Example) -> Target:
    return Target(function, (_BOUNDS, _COLUMN), nan=NanSemantics.DROPS, summary=summary,
                  source=_SOURCE, examples=(_DEFAULT, *extra))


_SEARCH = ("(deprecated BinarySearch over [lo, hi], values not clamped): a NaN is dropped "
           "in AddEntry; never NaN")
_SEARCH_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): the search range; values not clamped")


def _order_statistic(function: str, *own: Parameter, example: Example = _DEFAULT) -> Target:
    return Target(function, (_SEARCH_BOUNDS, _COLUMN, *own), nan=NanSemantics.DROPS,
                  summary=f"{CLASSES[function]} {_SEARCH}", source=_SOURCE,
                  examples=(example,))


ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="pydp", seedable=False,
    relation=Relation.ADD_REMOVE, make=make,
    summary="Google's differential-privacy C++ library through python-dp 1.1 (Laplace noise)",
    targets=(
        _bounded("sum", "BoundedSum: a NaN is dropped before clamping (not read as 0)",
                 Example("bounds-exclude-zero", {"bounds": [2.0, 3.0]},
                         doc="0 outside the bounds: sensitivity max(|lo|, |hi|) = 3")),
        _bounded("mean", "BoundedMean: a NaN adds nothing and is not counted"),
        _bounded("variance", "BoundedVariance: a NaN adds nothing and is not counted"),
        _bounded("std", "BoundedStandardDeviation: √ of BoundedVariance; NaN dropped"),
        Target("count", (_COLUMN,), nan=NanSemantics.COUNTED,
               summary="Count: a NaN is counted like any other value (no bounds)", source=_SOURCE,
               examples=(Example("default", {}, doc="every entry"),)),
        _order_statistic("median"),
        _order_statistic("percentile", Parameter("percentile", REQUIRED,
                                                 "the quantile, in [0, 1]"),
                         example=Example("default", {"bounds": _RANGE, "percentile": 0.9},
                                         doc="the 0.9 quantile of every entry")),
        _order_statistic("max"),
        _order_statistic("min"),
    ),
)
