"""OpenDP measurement chains (sum, mean, count) as black-box implementations.

Targets: ``opendp:sum``, ``opendp:mean``, ``opendp:count`` (``ADAPTER`` declares them, with
their parameters, NaN semantics and examples), and ``opendp:quantile`` and
``opendp:count_by_categories``, whose chains, parameters and NaN semantics are in
``audit/adapters/opendp_discrete.py`` (``ADAPTER`` lists its ``TARGETS`` and hands their calls
to its ``make``). The sum and the mean are the chain

    vector of float entries (NaN allowed) → impute a constant for NaN, or drop NaN
    → clamp to ``bounds`` → sum, or (resize →) mean → Laplace or Gaussian noise

built with ``opendp.prelude`` (``dp.t.then_impute_constant`` / ``then_drop_null``,
``then_clamp``, ``then_resize``, ``then_sum`` / ``then_mean``, ``dp.m.then_laplace`` /
``then_gaussian``). Parameters:

``bounds`` (required)
    (lo, hi) of the clamp.
``nan`` (default ``"impute"``)
    ``"impute"``: NaN → ``constant`` (before the clamp, so the constant is clamped too);
    ``"drop"``: NaN entries are removed; ``"unchecked"``: no imputation and no clamp, the
    chain starts on ``vector_domain(atom_domain(bounds=(lo, hi)), size=N)``, a domain
    declared bounded and NaN-free, and the data are passed as they are: a value outside the
    bounds or a NaN breaks the caller's side of OpenDP's contract (invocation does not check
    the domain, core/mod.rs:319-320), and a NaN sum is read as 0 by the noise (#2935 below).
    This is #2935's core witness as a target: the NaN regression table gives it its own
    verdict, ``contract``. The sum only: OpenDP's mean on such a domain errs at run time on a
    NaN ("f64 cannot not be null when clamping"), so the mean does not accept it.
``constant`` (default 0.0)
    The imputed value; with ``nan="drop"`` the mean pads the data back to its size with it, and
    then it must lie in ``bounds``.
``noise`` (default ``"laplace"``)
    ``"laplace"`` (ε-DP, ``delta`` must be 0) or ``"gaussian"`` (zCDP converted to
    (ε, δ)-DP by ``dp.c.make_zCDP_to_approxDP`` and ``make_fix_delta(δ)``; ``delta`` > 0).
``column`` (default None)
    None: the statistic runs over every entry of the (n, d) array, record by record (a record
    is d entries); an integer j: over column j only (a record is one entry).
``shape`` (default None)
    (n, d) of the datasets to be audited. When given, the chain is built and calibrated at
    once and the claim is the value of OpenDP's privacy map (below); calls on another shape
    are refused. Without it the chain is built and calibrated on the first call for each
    shape (and cached), and the claim is the (ε, δ) asked for, each chain's map being ≤ it.

**Claim.** OpenDP's dataset metric is the symmetric distance (insertions plus deletions of
elements; ``Relation.SYMMETRIC_DISTANCE``). The substitution of one record — the audit's
neighbouring relation — replaces its k entries (k = d, or 1 with ``column``), a symmetric
distance of 2k (``to_substitution(SYMMETRIC_DISTANCE, ε, δ, entries=k).distance``); the
noise scale is found by ``dp.binary_search_param`` so that the chain's privacy map at
``d_in = 2k`` is ≤ ε (Laplace, ``MaxDivergence``) or ≤ (ε, δ) (Gaussian,
``Approximate(MaxDivergence)``), and that map value is OpenDP's own claim. The map bounds
the float rounding of the sum too (the ``relaxation`` term of the checked sums).

**Randomness.** Not seedable (``ADAPTER.seedable`` is False): OpenDP samples all noise (and
the shuffles of resize and of an over-long unsized sum) from its own CSPRNG by design — the
PyPI build links OpenSSL and ``fill_bytes`` calls ``RAND_priv_bytes``
(rust/src/traits/samplers/mod.rs, ``fill_bytes``; the non-OpenSSL build uses
``rand::thread_rng``). There is no seeding API; ``rng`` is not used, and the same seed does
not reproduce a release.

**What a NaN does** (OpenDP 0.16.0, Rust source ``rust/src/transformations``; behaviour
checked on the installed wheel):

* The input domain is ``vector_domain(atom_domain(T=float, nan=True), size=N)`` (N = n·k
  entries). NaN can never reach the sum: ``make_clamp`` refuses at construction an input
  domain that may hold NaN (``input_domain.element_domain.assert_non_nan()``, clamp/mod.rs), so
  every chain imputes or drops first. No release is ever NaN.
* ``nan="impute"``: ``make_impute_constant`` replaces each NaN by ``constant`` row by row
  (``ImputeConstantDomain for AtomDomain<T>``: ``if default.is_null() { constant }``,
  impute/mod.rs); the size stays N and is known, so ``make_sum`` uses
  ``make_sized_bounded_float_checked_sum`` (sum/mod.rs → sum/float/checked/mod.rs), whose
  stability map is d_in/2·(hi − lo) + relaxation: a NaN is a value (the clamped constant) and
  the substitution sensitivity per entry is hi − lo, valid for any constant. ``make_mean``
  (mean/mod.rs) is that sum times 1/N with N known: a NaN counts in the denominator as an
  imputed value. All-missing data release the clamped constant (times N for the sum) plus
  noise.
* ``nan="drop"``: ``make_drop_null`` filters NaN out (``filter_map(DIA::option)``,
  impute/mod.rs), with stability 1 in the symmetric distance — so the size becomes unknown.
  The sum is then ``make_bounded_float_checked_sum`` with ``size_limit`` 2^20 (an input longer
  than that is shuffled and truncated), whose map is d_in·max(hi − lo, |lo|, |hi|) +
  relaxation: twice the substitution sensitivity hi − lo for bounds around 0, because a
  substitution costs 2 in the symmetric distance and the unsized sum cannot use it. The mean
  needs a known size (``make_mean`` errs otherwise, mean/mod.rs), so the dropped vector is
  resized back to N by ``make_resize`` (resize/mod.rs): padded with ``constant`` when shorter
  (so dropped NaN come back as the constant, in the denominator N), shuffled and truncated
  when longer; resize has stability 2, so the mean's noise is twice that of ``"impute"``. All
  missing: the sum releases 0 + noise, the mean the constant + noise.
* OpenDP does not check, when a measurement is invoked, that the argument lies in its input
  domain (a vector of 5 passes a chain declared for size 6): the declared size is the
  caller's promise. The adapter keeps it by building one chain per dataset shape.

``opendp:count`` counts the non-null entries: ``vector_domain(atom_domain(T=float, nan=True),
size=N)`` → with ``nan="cast"`` (default) ``make_cast(TOA=int)``, non-strict (NaN, ±inf and
floats outside i32 become null) and declared so: its output is ``OptionDomain``
(transformations/cast/mod.rs:44-47); ``nan="drop"`` skips the cast → ``make_drop_null``
(stability 1) → ``make_count`` (stability 1) → integer Laplace (discrete, ``then_laplace``)
at scale 2k/ε for a substitution (d_in = 2k): NaN entries are dropped before the count
(``NanSemantics.DROPS``), and the count of an all-missing dataset is 0 plus noise.
Parameters ``nan``, ``column``, ``shape`` as above; Laplace only (δ = 0). It is the core-API
form of the query of #2938.

**Sources** (``Target.source``). OpenDP's transformations and noise are Rust compiled into the
wheel (``opendp/lib``); the Rust source is not installed (the ``mod.rs`` lines cited here are
the 0.16.0 sdist's). Each target's ``source`` therefore cites the installed package's
Python-side lines that hand the step deciding a NaN's fate to the Rust library:
``lib.opendp_transformations__make_impute_constant`` (opendp/transformations.py:2185-2189),
``__make_drop_null`` (1821-1825), ``__make_resize`` (3238-3242), ``__make_cast`` (653-657),
and ``lib.opendp_measurements__make_laplace`` (opendp/measurements.py:801-805), whose float
noise reads the unchecked NaN sum as 0 (#2935 below); ``opendp_discrete.py`` cites its own.

Known NaN/null reports
----------------------
OpenDP issues #2935, #2936, #2938, #2939, #2940 (2026-09-18, against ``main``), checked on the
0.16.0 wheel and its source (the sdist ``opendp-0.16.0`` ships ``rust/src``; line numbers
below are 0.16's). Every file cited is identical to ``main`` at bc6e18b (2026-08-06, the
latest snapshot readable here), and the reports' own link (float/mod.rs#L89) points at the
same line: 0.16 does not differ from the reports' ``main`` in these paths. Audits, pairs
and margins: ``experiments/opendp_issues.py``, ``results/opendp_issues.md`` (ε = 1, 20,000
calls per side, seed 0); tests: ``tests/adapters/test_opendp_issues.py``. The Polars queries
of #2936/#2938/#2939/#2940 are run as the reports write them (``make_private_lazyframe`` with
``.dp.noise()``) on ``opendp[polars]`` 0.16.0 with polars 1.36.1, the version it pins; OpenDP's
own ``.dp.sum``/``.dp.mean``/``.dp.len`` are the ``opendp-polars`` adapter
(``audit/adapters/opendp_polars.py``). At 20,000 calls 8.60 is the largest ε_lower a pair
whose outputs never overlap can show. (expr_count and expr_dp_sum, cited below for how the
Polars witnesses come about, were read in 0.16 only, not compared with ``main``.)

* **#2935** (float noise maps NaN to 0): **present in 0.16**. ``make_float_to_bigint``
  (measurements/noise/nature/float/mod.rs:89-90): ``RBig::try_from(x.clamp(MIN_FINITE,
  MAX_FINITE)).unwrap_or(RBig::ZERO)``; the same in noise_threshold/nature/float/mod.rs:131-132
  and canonical_noise/mod.rs:66. A scale-10⁻³ Laplace on NaN releases ≈ 0. The domain refuses
  ``nan=True`` at construction (float/mod.rs:67-72) and the clamp errs at run time on NaN
  (traits/operations/mod.rs:356), so in the core API NaN reaches the noise only through a
  domain declared NaN-free, which invocation does not check (core/mod.rs:319-320). Witness:
  ``make_sum`` on ``atom_domain(bounds=(0, 1))``, size 20, Laplace at ε = 1 (scale 1); z =
  twenty 1.0, z' = z with record 0 NaN: z' releases 0 + noise (the NaN sum read as 0), z
  20 + noise; **claim refuted**, ε_lower = 8.60 at 20,000 calls (4.89-4.91 in ten audits of 500).
* **#2936** (``fill_null(NaN)`` keeps ``nan=False``): **present in 0.16** in Polars:
  expr_fill_null/mod.rs:86-92 checks that the fill is not nullable but keeps the data's
  NaN-free element domain, so the Polars sum is NaN and #2935 reads it as 0. Witness (Polars,
  the report's query: ``fill_null(NaN).clip(0, 1).sum()`` + noise of scale 1, charged ε = 2
  per substitution): z = a hundred 1.0, z' = z with record 0 null; z' releases 0 + noise, z
  100 + noise: **claim refuted**, ε_lower = 8.60 (4.89-4.91 in ten audits of 500). Written with
  ``.dp.sum((0, 1))`` instead — whose own midpoint fill of null and NaN
  (make_private_expr/expr_dp_sum/mod.rs:133-139) would absorb the NaN — the query is
  **refused at construction** by 0.16 ("Expr is not recognized at this time: .when(...)": the
  fill_nan that dp_sum appends after ``fill_null(NaN)`` is not a recognised expression), so
  that form is not reproducible. The core counterpart is safe: ``make_impute_constant``
  refuses a NaN constant (transformations/impute/mod.rs:151-154, "Constant may not be
  null"). Witness (core): ``opendp:sum`` imputing 0.5, bounds (0, 1), on the report's
  frames (a hundred 1.0, one missing): **claim holds**, ε_lower = 0.432 (the pair's loss is ε/2).
* **#2938** (non-strict ``cast`` keeps ``nullable=False``): **present in 0.16** in Polars:
  expr_cast/mod.rs:45-47 forces non-strict casts, 55-71 keeps the input's ``nullable``
  (``set_dtype``, domains/polars/series/mod.rs:163-166, resets only the element domain), so
  ``count()`` on a fixed-length frame is free: a count of a column declared non-null counts
  every row (expr_count/mod.rs:106-116), and under ``invariant="lengths"`` its stability map
  is 0 (136-140). Witness (Polars, the report's query, charged ε = 0): sixteen 1.0 against
  the same with record 0 NaN releases exactly 16 and 15, no noise: **claim refuted** (at the
  audit's ε = 1), ε_lower = 8.60 (4.91 in every audit of 500). The core ``make_cast`` is
  non-strict too but declares ``OptionDomain`` (cast/mod.rs:44-47): ``opendp:count[cast]`` on
  the report's frames (sixteen 1.0, one NaN): **claim holds**, ε_lower = 0.468 (counts 16
  against 15, scale 2: loss ε/2).
* **#2939** (``cut`` maps NaN to null, keeps ``nullable=False``): **present in 0.16** in
  Polars: expr_cut/mod.rs:68-84 clones the input's domain and only replaces its element domain.
  The same free count: **claim refuted**, ε_lower = 8.60 (16 against 15, exact). Core
  counterpart ``make_find_bin`` (transformations/index/mod.rs:111-116) sends NaN
  to the last bin (``NaN < edge`` is false for every edge) and yields no null: nothing to audit.
* **#2940** (``x % 0`` is null): **present in 0.16** in Polars: expr_binary/mod.rs:106-109 marks
  only ``FloorDivide | TrueDivide | Divide`` as null-introducing, not ``Modulus``. The same
  free count of ``n % m`` with m = 0 in one row: **claim refuted**, ε_lower = 8.60. The core
  API has no modulo transformation.

Later reports, audited as the NaN table's reported findings (``experiments/nan_findings.py``,
releases in ``experiments/opendp_issues_more.py``; each reproduced on 0.16.0, lines of its
sdist): **#2929** (``make_impute_uniform_float`` checks its bounds for NaN and order only,
impute/mod.rs:40-49, and a NaN row samples Uniform(0, ∞), mod.rs:55-59: rand panics inside an
FFI call that cannot unwind and the process aborts, an output of its own); **#2935**'s open
question as three policies for a NaN reaching the noise (float/mod.rs:89-90); **#2944**
(``cut().to_physical()``: cut declares its categories in break order, expr_cut/mod.rs:69-84,
to_physical takes known categories as a row-by-row map, expr_to_physical/mod.rs:69-79, Polars
numbers them in order of appearance); **#2949** (``with_columns`` drops a redefined column's
margins but keeps the metric's truncation bounds, h_stack/mod.rs:92-98, 104-119).
"""

from __future__ import annotations

import numpy as np

from audit.adapters import _common, opendp_discrete, relations
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.enums import NoiseKind
from audit.model.implementation import CallableImplementation, Claim

LIBRARY = "opendp"
DISTRIBUTION = "opendp"
COUNT_NAN_HANDLING = ("cast", "drop")


def _prelude(target: str):
    dp = _common.require("opendp.prelude", DISTRIBUTION, target)
    dp.enable_features("contrib")
    return dp


def _check_shape(target: str, value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        n, d = value  # type: ignore[misc]
        ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
                 for v in (n, d))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{target}: parameter 'shape' must be None or (n, d) with integers "
                         f">= 1, got shape={value!r}")
    return int(n), int(d)


def _count_chain(*, epsilon: float, params: dict, n: int, d: int):
    """(measurement, privacy map value at d_in = 2k) of ``opendp:count``: cast to int
    (non-strict: NaN → null) or not, drop the nulls, count, integer Laplace noise."""
    target = f"{LIBRARY}:count"
    dp = _prelude(target)
    k = d if params["column"] is None else 1
    budget = relations.to_substitution(ADAPTER.relation, epsilon, 0.0, entries=k)
    t = (dp.vector_domain(dp.atom_domain(T=float, nan=True), size=n * k),
         dp.symmetric_distance())
    if params["nan"] == "cast":
        t = t >> dp.t.then_cast(TOA=int)  # OptionDomain output: the nulls are declared
    t = t >> dp.t.then_drop_null() >> dp.t.then_count()
    scale = dp.binary_search_param(lambda s: t >> dp.m.then_laplace(scale=s),
                                   d_in=budget.distance, d_out=budget.epsilon)
    m = t >> dp.m.then_laplace(scale=scale)
    return m, float(m.map(budget.distance))


def build_chain(function: str, *, epsilon: float, delta: float, params: dict,
                n: int, d: int):
    """(measurement, privacy map value at d_in = 2k) of ``opendp:<function>`` for datasets of
    shape (n, d), calibrated so that the map is ≤ ε (Laplace) or ≤ (ε, δ) (Gaussian).

    ``params`` are the checked parameters (as in ``CallableImplementation.params``).
    """
    if function == "count":
        return _count_chain(epsilon=epsilon, params=params, n=n, d=d)
    target = f"{LIBRARY}:{function}"
    dp = _prelude(target)
    k = d if params["column"] is None else 1
    size = n * k
    budget = relations.to_substitution(ADAPTER.relation, epsilon, delta, entries=k)
    d_in = budget.distance  # one record's substitution: symmetric distance 2k
    lo, hi = params["bounds"]
    constant = params["constant"]
    gaussian = params["noise"] is NoiseKind.GAUSSIAN
    try:
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=True), size=size),
                 dp.symmetric_distance())
        if params["nan"] == "unchecked":  # the domain is declared bounded, hence NaN-free
            t = (dp.vector_domain(dp.atom_domain(bounds=(float(lo), float(hi))), size=size),
                 dp.symmetric_distance())
        elif params["nan"] == "impute":
            t = space >> dp.t.then_impute_constant(constant) >> dp.t.then_clamp((lo, hi))
        else:
            t = space >> dp.t.then_drop_null() >> dp.t.then_clamp((lo, hi))
            if function == "mean":
                t = t >> dp.t.then_resize(size=size, constant=constant)
        t = t >> (dp.t.then_sum() if function == "sum" else dp.t.then_mean())
    except dp.OpenDPException as exc:
        raise ValueError(f"{target}: OpenDP refused the chain for bounds=({lo}, {hi}), "
                         f"nan={params['nan']!r}, constant={constant!r}, size={size}: "
                         f"{exc}") from None

    def measurement(scale: float):
        if not gaussian:
            return t >> dp.m.then_laplace(scale=scale)
        zcdp = t >> dp.m.then_gaussian(scale=scale)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), budget.delta)

    d_out = (budget.epsilon, budget.delta) if gaussian else budget.epsilon
    try:
        scale = dp.binary_search_param(measurement, d_in=d_in, d_out=d_out)
    except dp.OpenDPException as exc:  # pragma: no cover - calibration failure
        raise ValueError(f"{target}: OpenDP could not calibrate the noise to "
                         f"epsilon={epsilon}, delta={delta}: {exc}") from None
    m = measurement(scale)
    value = m.map(d_in)
    return m, (tuple(float(v) for v in value) if gaussian else float(value))


class _Release:
    """The release: one OpenDP measurement chain per dataset shape, built on first use.

    Picklable for worker processes: the compiled chains (ctypes handles) are not sent, each
    process rebuilds them (the calibration is deterministic).
    """

    def __init__(self, target: str, function: str, epsilon: float, delta: float,
                 checked: dict) -> None:
        self.target, self.function = target, function
        self.epsilon, self.delta, self.checked = epsilon, delta, checked
        self._chains: dict[tuple[int, int], object] = {}

    def chain(self, shape: tuple[int, int], with_value: bool = False):
        """The measurement for datasets of ``shape`` (and its privacy map's value)."""
        if shape not in self._chains or with_value:
            self._chains[shape], value = build_chain(
                self.function, epsilon=self.epsilon, delta=self.delta, params=self.checked,
                n=shape[0], d=shape[1])
            if with_value:
                return value
        return self._chains[shape]

    def __call__(self, data, rng: np.random.Generator):  # rng unused: OpenDP is not seedable
        x = _common.as_data(self.target, data)
        values = _common.selected(self.target, x, self.checked["column"])
        fixed = self.checked["shape"]
        if fixed is not None and x.shape != fixed:
            raise ValueError(f"{self.target}: built for datasets of shape {fixed} (parameter "
                             f"'shape'), got shape {x.shape}")
        return float(self.chain(x.shape)(values))

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_chains": {}}


def _make_count(*, epsilon: float, delta: float, params: dict | None) -> CallableImplementation:
    """The implementation of ``opendp:count`` (see the module docstring)."""
    target = f"{LIBRARY}:count"
    p = _common.check_params(target, params, ADAPTER.target("count").accepted())
    checked = {"nan": _common.check_choice(target, "nan", p["nan"], COUNT_NAN_HANDLING),
               "column": _common.check_column(target, p["column"]),
               "shape": _check_shape(target, p["shape"])}
    if delta != 0.0:
        raise ValueError(f"{target}: Laplace noise is pure ε-DP; delta must be 0, got "
                         f"delta={delta!r}")
    _prelude(target)
    release = _Release(target, "count", epsilon, 0.0, checked)
    claim_eps, how = epsilon, "calibrated per dataset shape so that"
    if checked["shape"] is not None:
        claim_eps = release.chain(checked["shape"], with_value=True)
        how = f"for shape {checked['shape']}:"
    k = "d" if checked["column"] is None else "1"
    note = (f"OpenDP {_common.version(DISTRIBUTION)} count of the non-null entries "
            f"(nan={checked['nan']}, integer Laplace noise) {how} its privacy map at "
            f"d_in = 2·{k} (symmetric distance of one record's substitution) is <= {epsilon}")
    return CallableImplementation(func=release, claim=Claim(claim_eps, 0.0, note),
                                  name=target, params=checked)


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``opendp:<function>`` (see the module docstring)."""
    if function in opendp_discrete.FUNCTIONS:
        return opendp_discrete.make(function, epsilon=epsilon, delta=delta, params=params)
    if function == "count":
        return _make_count(epsilon=epsilon, delta=delta, params=params)
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    checked = {
        "bounds": _common.check_bounds(target, p["bounds"]),
        "nan": _common.check_choice(target, "nan", p["nan"],
                                    tuple(ADAPTER.target(function).nan_options)),
        "constant": _common.check_real_param(target, "constant", p["constant"]),
        "noise": _common.check_noise(target, p["noise"]),
        "column": _common.check_column(target, p["column"]),
        "shape": _check_shape(target, p["shape"]),
    }
    _common.check_noise_delta(target, checked["noise"], delta)
    gaussian = checked["noise"] is NoiseKind.GAUSSIAN
    lo, hi = checked["bounds"]
    if checked["nan"] == "drop" and function == "mean" and not lo <= checked["constant"] <= hi:
        raise ValueError(f"{target}: with nan='drop' the mean pads with parameter 'constant', "
                         f"which must lie in bounds ({lo}, {hi}), got "
                         f"constant={checked['constant']!r}")
    _prelude(target)  # fails here, not at the first call, when OpenDP is missing

    fixed = checked["shape"]
    release = _Release(target, function, epsilon, delta, checked)
    claim_eps, claim_delta = epsilon, delta
    how = "calibrated per dataset shape so that"
    if fixed is not None:
        value = release.chain(fixed, with_value=True)
        claim_eps, claim_delta = value if gaussian else (value, 0.0)
        how = f"for shape {fixed}:"

    k = "d" if checked["column"] is None else "1"
    note = (f"OpenDP {_common.version(DISTRIBUTION)} {function} chain (nan={checked['nan']}, "
            f"constant={checked['constant']}, bounds=({lo}, {hi}), "
            f"noise={checked['noise'].value}) {how} its privacy map at d_in = 2·{k} "
            f"(symmetric distance of one record's substitution) is "
            f"<= {(epsilon, delta) if gaussian else epsilon}")
    return CallableImplementation(func=release, claim=Claim(claim_eps, claim_delta, note),
                                  name=target, params=checked)


_PARAMETERS = (
    Parameter("bounds", REQUIRED, "(lo, hi) of the clamp"),
    Parameter("nan", "impute", "'impute': NaN -> constant before the clamp; 'drop': removed; "
              "'unchecked': a NaN-free bounded domain declared, the data passed as they are"),
    Parameter("constant", 0.0, "the imputed value (and the mean's padding after 'drop')"),
    Parameter("noise", "laplace", "'laplace' (δ = 0) or 'gaussian' (zCDP -> (ε, δ), δ > 0)"),
    Parameter("column", None, "None: every entry, record by record; j: column j only"),
    Parameter("shape", None, "(n, d): build and calibrate at once, claim = OpenDP's map"),
)
_COUNT_PARAMETERS = (
    Parameter("nan", "cast", "'cast': cast to int (NaN -> null), drop nulls; 'drop': drop NaN"),
    Parameter("column", None, "None: every entry, record by record; j: column j only"),
    Parameter("shape", None, "(n, d): build and calibrate at once, claim = OpenDP's map"),
)
_NAN_OPTIONS = {"impute": NanSemantics.IMPUTES_CONSTANT, "drop": NanSemantics.DROPS}
_BOUNDS = [-1.0, 1.0]
#: ``Target.source``: OpenDP's Rust is not installed (a compiled library), so each place is
#: the Python-side line that hands the transformation to it (module docstring, "Sources")
_T = "opendp/transformations.py"
_IMPUTE, _DROP_NULL = f"{_T}:2185-2189", f"{_T}:1821-1825"  # make_impute_constant, _drop_null
_LAPLACE = "opendp/measurements.py:801-805"  # make_laplace: #2935's float noise reads NaN as 0

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="opendp", seedable=False,
    relation=Relation.SYMMETRIC_DISTANCE, make=make,
    summary=("OpenDP 0.16 measurement chains (impute or drop, clamp, sum or mean, noise; "
             "count of the non-null entries; quantile over candidates, count by categories)"),
    targets=(
        Target("sum", _PARAMETERS, nan=NanSemantics.IMPUTES_CONSTANT,
               nan_options={**_NAN_OPTIONS, "unchecked": NanSemantics.UNCHECKED},
               summary="imputed (size known) or dropped (unsized sum) before the clamp",
               source=f"{_IMPUTE}; {_DROP_NULL}; {_LAPLACE}",
               examples=(
                   Example("impute", {"bounds": _BOUNDS, "nan": "impute", "constant": 0.0},
                           doc="NaN read as 0 by imputation: the sized checked sum"),
                   Example("drop", {"bounds": _BOUNDS, "nan": "drop"},
                           doc="NaN dropped: the unsized sum, sensitivity twice as large"),
                   Example("gaussian", {"bounds": _BOUNDS, "noise": "gaussian"}, delta=1e-6,
                           doc="Gaussian noise, zCDP converted to (ε, δ)"),
                   Example("unchecked", {"bounds": _BOUNDS, "nan": "unchecked"},
                           doc="a NaN-free bounded domain declared, the data passed unchecked: "
                               "#2935's core witness, a caller contract violation"),
               )),
        Target("mean", _PARAMETERS, nan=NanSemantics.IMPUTES_CONSTANT,
               nan_options=_NAN_OPTIONS,
               summary="imputed, or dropped then resized to N with the constant",
               source=f"{_IMPUTE}; {_DROP_NULL}; {_T}:3238-3242",  # make_resize
               examples=(
                   Example("impute", {"bounds": _BOUNDS, "constant": 0.25},
                           doc="NaN imputed with a constant other than 0"),
                   Example("drop", {"bounds": _BOUNDS, "nan": "drop"},
                           doc="NaN dropped, resized back to N (stability 2)"),
               )),
        Target("count", _COUNT_PARAMETERS, nan=NanSemantics.DROPS,
               nan_options={"cast": NanSemantics.DROPS, "drop": NanSemantics.DROPS},
               summary="non-null entries counted: NaN cast to null (or dropped), then dropped",
               source=f"{_T}:653-657; {_DROP_NULL}",  # make_cast (non-strict), _drop_null
               examples=(
                   Example("cast", {"nan": "cast"},
                           doc="cast(int) (NaN -> null, declared), drop_null, count: #2938's "
                               "query in the core API"),
                   Example("drop", {"nan": "drop"}, doc="drop_null, count"),
               )),
        *opendp_discrete.TARGETS,
    ),
)
