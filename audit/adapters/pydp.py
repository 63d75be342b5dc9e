"""Google's differential-privacy library through its Python bindings, python-dp (``pydp``):
``BoundedSum``, ``BoundedMean``, ``BoundedVariance``, ``BoundedStandardDeviation`` and
``Count`` as black-box implementations.

Targets: ``pydp:sum``, ``pydp:mean``, ``pydp:variance``, ``pydp:std``, ``pydp:count`` (the
classes of ``pydp.algorithms.laplacian`` in that order; ``ADAPTER`` declares them, with their
parameters, NaN semantics and examples). The library is called ``pydp`` here, after the module
it installs (the distribution is ``python-dp``). Each call builds a fresh algorithm object with
``dtype="float"`` and releases ``quick_result(values)`` (one ``Result`` over the values, the
whole budget spent). Parameters:

``bounds`` (required for sum, mean, variance and std; not accepted by count)
    (lo, hi): ``lower_bound``, ``upper_bound``, to which the library clamps each value.
``column`` (default None)
    None: every entry of the (n, d) array, record by record; an integer j: column j only.

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

**Per-call cost.** A fresh C++ object per call, and the values as a Python list: about 0.05 ms
per call at n·k = 120.
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
           "std": "BoundedStandardDeviation", "count": "Count"}


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``pydp:<function>`` (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    bounds = None if function == "count" else _common.check_bounds(target, p["bounds"])
    column = _common.check_column(target, p["column"])
    if delta != 0.0:
        raise ValueError(f"{target}: python-dp's algorithms add Laplace noise (pure ε-DP); "
                         f"delta must be 0, got delta={delta!r}")
    laplacian = _common.require("pydp.algorithms.laplacian", DISTRIBUTION, target)
    algorithm = getattr(laplacian, CLASSES[function])
    eps_lib = relations.to_substitution(ADAPTER.relation, epsilon, 0.0).epsilon  # ε/2
    _common.check_google_epsilon(target, epsilon, eps_lib)
    value_bounds = {} if bounds is None else {"lower_bound": bounds[0],
                                              "upper_bound": bounds[1]}

    def release(data, rng: np.random.Generator):  # rng unused: python-dp cannot be seeded
        x = _common.as_data(target, data)
        values = _common.selected(target, x, column)
        k = values.size // x.shape[0]  # one record = one user with k values
        algo = algorithm(epsilon=eps_lib, l0_sensitivity=1, linf_sensitivity=k,
                         dtype="float", **value_bounds)
        return float(algo.quick_result(values.tolist()))

    note = (f"python-dp {_common.version(DISTRIBUTION)} {CLASSES[function]}(bounds={bounds}, "
            f"l0_sensitivity=1, linf_sensitivity=k entries per record) run with "
            f"epsilon=ε/2={eps_lib}: its add/remove guarantee, doubled by group privacy, is "
            f"{epsilon}-DP per substituted record (see audit.adapters.pydp for what NaN does)")
    return CallableImplementation(func=release, claim=Claim(epsilon, 0.0, note), name=target,
                                  params={"bounds": bounds, "column": column})


_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): lower_bound, upper_bound, values clamped")
_COLUMN = Parameter("column", None, "None: every entry, record by record; j: column j only")
_RANGE = [-1.0, 1.0]
_DEFAULT = Example("default", {"bounds": _RANGE}, doc="bounds around 0, every entry")


def _bounded(function: str, summary: str, *extra: Example) -> Target:
    return Target(function, (_BOUNDS, _COLUMN), nan=NanSemantics.DROPS, summary=summary,
                  examples=(_DEFAULT, *extra))


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
               summary="Count: a NaN is counted like any other value (no bounds)",
               examples=(Example("default", {}, doc="every entry"),)),
    ),
)
