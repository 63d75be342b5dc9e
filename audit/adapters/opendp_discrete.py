"""OpenDP core chains with a discrete release: a quantile over a candidate grid, and counts
by declared categories. Targets of the ``opendp`` adapter (``audit/adapters/opendp.py`` lists
:data:`TARGETS` among its own and hands their calls to :func:`make`).

``opendp:quantile``
    vector of float entries (NaN allowed) → ``then_impute_constant(constant)`` or
    ``then_drop_null()`` → ``then_private_quantile(max_divergence(), candidates, alpha, scale)``:
    the candidate chosen by the exponential mechanism on OpenDP's quantile scores
    (``make_private_quantile``, opendp/measurements.py:1724; Smith 2011, permute-and-flip
    scores). Parameters: ``candidates`` (required, strictly increasing finite numbers, at least
    two), ``alpha`` (default 0.5, in [0, 1]), ``nan`` (``"impute"``, default, or ``"drop"``),
    ``constant`` (default 0.0), ``column`` (default None). The release is a scalar, one of the
    candidates.
``opendp:count_by_categories``
    vector of float entries (NaN allowed) → a map to a hashable category → ``then_count_by_
    categories`` → integer Laplace noise on each count: a fixed-length vector. ``nan`` picks
    the map (its parameter required, the other checked if given and unused, as ``opendp:sum``'s
    ``constant`` with ``nan="drop"``): ``"find_bin"`` (default; parameter ``edges``, strictly
    increasing finite numbers)
    ``then_find_bin(edges)``, bin i = [edges[i−1], edges[i]), the first bin from −∞ and the
    last to +∞ (opendp/transformations.py:1962-1963), every bin a category
    (``null_category=False``): len(edges) + 1 counts; ``"cast"`` (parameter ``categories``,
    distinct integers) ``then_cast_default(TOA=int)`` (truncation toward 0), counts of
    ``categories`` plus one last count of the values outside them (``null_category=True``,
    transformations.py:1328): len(categories) + 1 counts; ``"drop"`` the same after
    ``then_cast(TOA=int)`` (non-strict: NaN → null) and ``then_drop_null()``.

**Claim.** As every ``opendp`` target (``Relation.SYMMETRIC_DISTANCE``): one record's
substitution, k entries (k = d, or 1 with ``column``), is a symmetric distance of 2k; the
noise scale is found by ``dp.binary_search_param`` so that the chain's privacy map at
``d_in = 2k`` is ≤ ε (``MaxDivergence``), one chain per dataset shape (built on the first call
for it). Pure ε-DP: ``delta`` must be 0. Not seedable (OpenDP's CSPRNG; ``rng`` unused).

**What a NaN does** (OpenDP 0.16.0; the installed Python package's ``opendp/*.py`` docstrings
and behaviour measured on the installed wheel, the Rust source not being installed):

* ``then_private_quantile`` refuses at construction a domain that may hold NaN ("input_domain
  members must have non-nan elements", measured), so a NaN never reaches the scores:
  ``nan="impute"`` scores each NaN as ``constant`` and keeps the size N known (the scores'
  tighter sized sensitivity, measurements.py:1753): ``NanSemantics.IMPUTES_CONSTANT``;
  ``"drop"`` scores the observed entries only, the size unknown (``DROPS``). Never NaN. The
  expected verdict on a one-NaN pair is that the claim holds.
* ``"find_bin"``: ``NaN < edge`` is false for every edge, so a NaN falls in the last bin, as
  a value ≥ the last edge (index/mod.rs:111-116 of the 0.16 sdist, as ``opendp.py`` cites;
  measured: [NaN, +inf, 2.0] all land in bin len(edges)); the size stays N:
  ``NanSemantics.COUNTED``. The count of the last bin cannot tell a NaN from a large value:
  the NaN regression table's pair (+1 against NaN, edges below 1) releases the same law on
  both sides.
* ``"cast"``: ``make_cast_default`` fills every failed cast with the type's default, 0 for
  int (transformations.py:704, 710; measured: NaN and ±inf → 0), so a NaN is counted in
  category 0 (in the last, outside count when 0 is not declared): ``IMPUTES_CONSTANT``.
* ``"drop"``: NaN (and ±inf) become null in the non-strict cast (declared: an
  ``OptionDomain``, cast/mod.rs:44-47 as ``opendp.py`` cites) and are dropped
  (``make_drop_null``): ``DROPS``. OpenDP's count-by-categories map is 2 at d_in = 2 sized or
  not (measured): one substitution moves one unit between two counts.
* Each count's noise is integer (discrete) Laplace at scale 2k/ε. Expected verdict: the claim
  holds for every handling.

**Sources** (``Target.source``; the Rust is not installed, ``opendp.py`` says why): the
Python-side lines that hand each step to OpenDP's Rust library: ``make_impute_constant``
(transformations.py:2185-2189), ``make_drop_null`` (1821-1825) and ``make_private_quantile``
(measurements.py:1782-1786) for the quantile; ``make_find_bin`` (transformations.py:
2002-2006), ``make_cast_default`` (752-756) and ``make_cast`` (653-657) for the counts.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from audit.adapters import _common, relations
from audit.adapters.protocol import REQUIRED, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.model.implementation import CallableImplementation, Claim

LIBRARY, DISTRIBUTION = "opendp", "opendp"
#: the ``opendp`` adapter's relation (``audit/adapters/opendp.py``; a test checks they agree)
RELATION = Relation.SYMMETRIC_DISTANCE
QUANTILE_NAN = ("impute", "drop")
COUNT_NAN = ("find_bin", "cast", "drop")
#: the largest magnitude of an OpenDP i32 category
_I32 = 2**31 - 1


def _prelude(target: str):
    dp = _common.require("opendp.prelude", DISTRIBUTION, target)
    dp.enable_features("contrib")
    return dp


def _categories(target: str, value: object) -> list[int]:
    """``value`` as a list of one or more distinct integers in OpenDP's i32 range."""
    msg = (f"{target}: parameter 'categories' must be a sequence of one or more distinct "
           f"integers in [-{_I32}, {_I32}] (with nan='cast' or 'drop'), got "
           f"categories={value!r}")
    try:
        out = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(msg) from None
    if not out or not all(isinstance(v, Integral) and not isinstance(v, bool)
                          and abs(int(v)) <= _I32 for v in out):
        raise ValueError(msg)
    out = [int(v) for v in out]
    if len(set(out)) != len(out):
        raise ValueError(msg)
    return out


def check(function: str, params: dict | None) -> dict:
    """The checked parameters of ``opendp:<function>`` (ValueError naming the one at fault)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, target_of(function).accepted())
    if function == "quantile":
        return {"candidates": _common.check_increasing(target, "candidates", p["candidates"], 2),
                "alpha": _common.check_alpha(target, p["alpha"]),
                "nan": _common.check_choice(target, "nan", p["nan"], QUANTILE_NAN),
                "constant": _common.check_real_param(target, "constant", p["constant"]),
                "column": _common.check_column(target, p["column"])}
    nan = _common.check_choice(target, "nan", p["nan"], COUNT_NAN)
    wanted = "edges" if nan == "find_bin" else "categories"
    if p[wanted] is None:  # the other one may be given (checked, unused), as opendp:sum's
        # constant with nan='drop'
        raise ValueError(f"{target}: nan={nan!r} needs parameter {wanted!r}, got "
                         f"{wanted}=None")
    edges, categories = p["edges"], p["categories"]
    return {"nan": nan,
            "edges": None if edges is None else _common.check_increasing(target, "edges",
                                                                         edges, 1),
            "categories": None if categories is None else _categories(target, categories),
            "column": _common.check_column(target, p["column"])}


def build_chain(function: str, *, epsilon: float, params: dict, n: int, d: int):
    """(measurement, its privacy map at d_in = 2k) of ``opendp:<function>`` for datasets of
    shape (n, d), calibrated so that the map is ≤ ε; ``params`` as returned by :func:`check`."""
    target = f"{LIBRARY}:{function}"
    dp = _prelude(target)
    k = d if params["column"] is None else 1
    budget = relations.to_substitution(RELATION, epsilon, 0.0, entries=k)
    t = (dp.vector_domain(dp.atom_domain(T=float, nan=True), size=n * k),
         dp.symmetric_distance())
    try:
        if function == "quantile":
            t = t >> (dp.t.then_impute_constant(params["constant"]) if params["nan"] == "impute"
                      else dp.t.then_drop_null())
            c, a = params["candidates"], params["alpha"]

            def measurement(s):
                return t >> dp.m.then_private_quantile(dp.max_divergence(), c, a, s)
        else:
            if params["nan"] == "find_bin":
                t = t >> dp.t.then_find_bin(edges=params["edges"])
                categories = list(range(len(params["edges"]) + 1))
            elif params["nan"] == "cast":
                t = t >> dp.t.then_cast_default(TOA=int)
                categories = params["categories"]
            else:
                t = t >> dp.t.then_cast(TOA=int) >> dp.t.then_drop_null()
                categories = params["categories"]
            t = t >> dp.t.then_count_by_categories(
                categories=categories, null_category=params["nan"] != "find_bin")

            def measurement(s):
                return t >> dp.m.then_laplace(scale=s)
        scale = dp.binary_search_param(measurement, d_in=budget.distance, d_out=budget.epsilon)
    except dp.OpenDPException as exc:
        raise ValueError(f"{target}: OpenDP refused the chain for {params} on {n * k} "
                         f"entries: {exc}") from None
    m = measurement(scale)
    return m, float(m.map(budget.distance))


class _Release:
    """One chain per dataset shape, built on first use; picklable (each process rebuilds its
    chains: the ctypes handles are not sent, the calibration is deterministic)."""

    def __init__(self, function: str, epsilon: float, checked: dict) -> None:
        self.function, self.epsilon, self.checked = function, epsilon, checked
        self.target = f"{LIBRARY}:{function}"
        self._chains: dict[tuple[int, int], object] = {}

    def chain(self, shape: tuple[int, int]):
        """The measurement for datasets of ``shape``."""
        if shape not in self._chains:
            self._chains[shape] = build_chain(self.function, epsilon=self.epsilon,
                                              params=self.checked, n=shape[0], d=shape[1])[0]
        return self._chains[shape]

    def __call__(self, data, rng: np.random.Generator):  # rng unused: OpenDP is not seedable
        x = _common.as_data(self.target, data)
        out = self.chain(x.shape)(_common.selected(self.target, x, self.checked["column"]))
        if self.function == "quantile":
            return float(out)
        return np.asarray(out, dtype=np.float64)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_chains": {}}


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``opendp:quantile`` or ``opendp:count_by_categories`` (module
    docstring)."""
    target = f"{LIBRARY}:{function}"
    checked = check(function, params)
    if delta != 0.0:
        raise ValueError(f"{target}: the chain is pure ε-DP; delta must be 0, got "
                         f"delta={delta!r}")
    _prelude(target)  # fails here, not at the first call, when OpenDP is missing
    k = "d" if checked["column"] is None else "1"
    what = ("quantile (exponential mechanism over the candidates)" if function == "quantile"
            else "count by categories (integer Laplace noise on each count)")
    note = (f"OpenDP {_common.version(DISTRIBUTION)} {what}, nan={checked['nan']}, "
            f"calibrated per dataset shape so that its privacy map at d_in = 2·{k} (symmetric "
            f"distance of one record's substitution) is <= {epsilon}")
    return CallableImplementation(func=_Release(function, epsilon, checked),
                                  claim=Claim(epsilon, 0.0, note), name=target, params=checked)


_COLUMN = Parameter("column", None, "None: every entry, record by record; j: column j only")
#: -1, -0.98, ..., 1: a grid fine enough that a release is never nearly certain (the contract
#: tests' unseeded draws must differ; the most likely candidate's probability is below 0.2)
_CANDIDATES = [round(-1.0 + 0.02 * i, 2) for i in range(101)]

#: ``Target.source``: the Python-side lines that hand each step to OpenDP's Rust (not
#: installed; ``audit/adapters/opendp.py``, "Sources")
_T = "opendp/transformations.py"

TARGETS = (
    Target("quantile", (
        Parameter("candidates", REQUIRED, "strictly increasing candidate quantiles (≥ 2)"),
        Parameter("alpha", 0.5, "the quantile, in [0, 1] (0.5: the median)"),
        Parameter("nan", "impute", "'impute': NaN -> constant (size known); 'drop': removed"),
        Parameter("constant", 0.0, "the imputed value"),
        _COLUMN),
        nan=NanSemantics.IMPUTES_CONSTANT,
        nan_options={"impute": NanSemantics.IMPUTES_CONSTANT, "drop": NanSemantics.DROPS},
        summary="imputed (scored as the constant, size known) or dropped before the scores",
        # make_impute_constant, make_drop_null, make_private_quantile
        source=f"{_T}:2185-2189; {_T}:1821-1825; opendp/measurements.py:1782-1786",
        examples=(
            Example("median-impute", {"candidates": _CANDIDATES},
                    doc="the median over 101 candidates, NaN scored as 0"),
            Example("q90-drop", {"candidates": _CANDIDATES, "alpha": 0.9, "nan": "drop"},
                    doc="the 0.9-quantile of the observed entries (unsized)"),
        )),
    Target("count_by_categories", (
        Parameter("nan", "find_bin", "'find_bin' (edges: NaN in the last bin), 'cast' "
                                     "(categories: NaN -> 0) or 'drop' (categories)"),
        Parameter("edges", None, "strictly increasing bin edges (used by nan='find_bin')"),
        Parameter("categories", None, "distinct integers after the cast (used by nan='cast', "
                                      "'drop')"),
        _COLUMN),
        nan=NanSemantics.COUNTED,
        nan_options={"find_bin": NanSemantics.COUNTED, "cast": NanSemantics.IMPUTES_CONSTANT,
                     "drop": NanSemantics.DROPS},
        summary="a count per category: NaN in the last bin, cast to 0, or dropped",
        source=f"{_T}:2002-2006; {_T}:752-756; {_T}:653-657",  # find_bin, cast_default, cast
        examples=(
            Example("find-bin", {"edges": [-0.5, 0.0, 0.5], "categories": [-1, 0, 1]},
                    doc="4 bins; NaN falls in the last, [0.5, +inf) (categories unused)"),
            Example("cast", {"nan": "cast", "categories": [-1, 0, 1]},
                    doc="cast to int (truncated; NaN -> 0); 3 categories and the outside count"),
            Example("drop", {"nan": "drop", "categories": [-1, 0, 1]},
                    doc="non-strict cast (NaN -> null), nulls dropped"),
        )),
)
FUNCTIONS = tuple(t.function for t in TARGETS)


def target_of(function: str) -> Target:
    """The declared target ``function`` of this module."""
    return next(t for t in TARGETS if t.function == function)
