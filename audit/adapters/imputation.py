"""Imputation before a DP release: an imputer fills the missing entries, then a sum or a mean of
one column is released (the project's Laplace or Gaussian noise, diffprivlib's or OpenDP's
release) with the noise a user calibrates *ignoring imputation*.

Targets ``imputation:<imputer>``: ``mean``, ``median``, ``most_frequent`` (scikit-learn's
``SimpleImputer`` with that strategy), ``knn`` (``KNNImputer``), ``iterative``
(``IterativeImputer``, ``BayesianRidge``, ``random_state=0``), ``hot_deck`` (random hot-deck:
each missing entry a uniform draw, independently, among the observed entries of its column)
and ``private_mean`` (the imputed value a DP mean with its own share of the budget). The
imputer sees the whole (n, d) table (KNN and iterative read the other columns); the release is

    S = Σ_i clip(x̂_i[column], lo, hi) + noise,

``x̂`` the imputed table, or that sum divided by n (``statistic="mean"``; n, the rows of
the filled table, is public). Parameters:

``bounds`` (required)
    (lo, hi), W = hi − lo; the released column is clipped to it.
``column`` (default 0)
    The column released.
``release`` (default ``"laplace"``)
    ``"laplace"``: Laplace noise of scale W/ε from the audit's ``rng`` (δ must be 0);
    ``"gaussian"``: Gaussian noise of Balle & Wang's analytic σ for sensitivity W at (ε, δ),
    from ``rng`` (δ in (0, 1)); ``"diffprivlib"``: diffprivlib's ``tools.sum`` or
    ``tools.mean`` of the imputed column at ε (bounds ``bounds``; its ``LaplaceTruncated``
    of sensitivity W, or W/n for the mean; δ must be 0), seeded from ``rng``; ``"opendp"``:
    OpenDP's chain (``audit.adapters.opendp.build_chain``: clamp, sized checked sum or mean,
    Laplace at δ = 0, Gaussian zCDP converted to (ε, δ) at δ > 0), calibrated by its own
    privacy map for a substitution (symmetric distance 2), drawing its noise from OpenDP's
    generator.
``statistic`` (default ``"sum"``)
    ``"sum"`` or ``"mean"``: the same noise as the sum, divided by n (a mean over the filled
    entries has the sum's privacy).
``n_neighbors`` (``knn``, default 5), ``max_iter`` (``iterative``, default 10)
    Passed to scikit-learn.
``impute_share`` (``private_mean``, default 0.5), ``count`` (``private_mean``, default ``"noisy"``)
    The share s of ε spent on the imputed value; the release gets (1 − s)ε.

    ``count="noisy"``: μ̃ = clip((Σ_obs x + L₁)/max(1, k + L₂), lo, hi), L₁ ~ Laplace(2W/(sε))
    and L₂ ~ Laplace(2/(sε)) (k the observed count): sε-DP for every substitution (a record
    becoming NA included when 0 ∈ [lo, hi], where the noisy sum's sensitivity is at most W);
    given μ̃ ∈ [lo, hi] the filled sum has sensitivity W, so the release is ε-DP by
    composition.

    ``count="public"``: μ̃ = mean_obs + Laplace(W/(k·sε)), unclipped: DP only for
    substitutions that keep which entries are missing (k public; a record becoming NA changes
    the noise's scale m·W/(k·sε), and where that scale is the larger one on a side the tails
    differ and no finite ε covers the pair). The exact ε of a pair that keeps the missing set
    is n·|Δx|/k / max(mW/(k·sε), W/((1 − s)ε)) (docs/THEORY.md §11.4): the null study's
    known truth.

    ``count="diffprivlib"``: μ̃ = diffprivlib's ``tools.mean`` of the observed values at sε
    (``LaplaceTruncated`` of sensitivity W/k, truncated to [lo, hi]), seeded from ``rng``: k
    is public for it too, so the total ε holds for substitutions that keep which entries are
    missing (given μ̃ ∈ [lo, hi] the filled sum has sensitivity W).

**Claim.** (ε, δ) per substituted record, the release's (ε, δ) as a user states it, ignoring
the imputation (for ``private_mean``, ε the total of the two shares; the DP mean is pure, so δ
is the release's). The relation is the
substitution of one record (``Relation.SUBSTITUTION``). The non-private imputers break it:
mean imputation makes the filled sum n·mean_obs (sensitivity nW/k), median imputation moves
every imputed entry with the substituted value (sensitivity up to W(1 + m)); see
docs/THEORY.md §11 and :mod:`audit.theory.imputation`.

**What a NaN does.** Every target replaces it by a value computed from the other records
(``NanSemantics.IMPUTES_FROM_DATA``): scikit-learn 1.6, ``sklearn/impute/_base.py`` (the
column statistics, ``_dense_fit``, and their use in ``transform``), ``_knn.py``,
``_iterative.py``; ``hot_deck`` and ``private_mean`` find the missing entries with
scikit-learn's own ``_get_mask`` (``sklearn/utils/_mask.py:23-25``, ``np.isnan``, what its
imputers use) and fill them here (``_hot_deck_columns``, ``_private_mean_columns``). A column
with no observed entry is kept (``keep_empty_features=True``) and filled with 0 by the
scikit-learn imputers (measured, 1.6.1); ``hot_deck`` and ``private_mean`` fill it with the
middle of the bounds (plus μ̃'s noise for ``private_mean``).

**Randomness.** Seedable, except with ``release="opendp"`` (``ADAPTER.unseeded``: OpenDP
draws from its own generator, so the same seed does not reproduce those releases; the
imputation's own draws still come from ``rng``). The scikit-learn imputers are
deterministic functions of the table, so the adapter keeps the imputed columns of the last
256 distinct tables (key: the table's bytes) and draws only the noise per call: the same
releases, much faster when the masks repeat. ``hot_deck`` and ``private_mean`` draw from
``rng`` on every call.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np

from audit.adapters import _common, opendp, relations
from audit.adapters.protocol import REQUIRED, Adapter, Example, NanSemantics, Parameter, Target
from audit.adapters.relations import Relation
from audit.enums import NoiseKind
from audit.model.implementation import CallableImplementation, Claim
from audit.noise import NOISES

LIBRARY = "imputation"
DISTRIBUTION = "scikit-learn"
#: the scikit-learn imputers (deterministic given the table)
SKLEARN = ("mean", "median", "most_frequent", "knn", "iterative")
#: the imputers drawing from the audit's rng
RANDOM = ("hot_deck", "private_mean")
RELEASES = ("laplace", "gaussian", "diffprivlib", "opendp")
STATISTICS = ("sum", "mean")
COUNTS = ("noisy", "public", "diffprivlib")
#: the most tables whose imputed sum is kept
CACHE_SIZE = 256


def _sklearn_imputer(function: str, p: dict):
    impute = _common.require("sklearn.impute", DISTRIBUTION, f"{LIBRARY}:{function}")
    if function in ("mean", "median", "most_frequent"):
        return impute.SimpleImputer(strategy=function, keep_empty_features=True)
    if function == "knn":
        return impute.KNNImputer(n_neighbors=p["n_neighbors"], keep_empty_features=True)
    _common.require("sklearn.experimental.enable_iterative_imputer", DISTRIBUTION,
                    f"{LIBRARY}:{function}")
    return impute.IterativeImputer(max_iter=p["max_iter"], random_state=0,
                                   keep_empty_features=True)


def _sklearn_column(imputer, x: np.ndarray, column: int, lo: float,
                    hi: float) -> np.ndarray:
    with warnings.catch_warnings():  # IterativeImputer's early-stopping notice
        warnings.filterwarnings("ignore", message=".*[Ee]arly stopping criterion.*")
        filled = imputer.fit_transform(x)
    return np.clip(filled[:, column], lo, hi)


def _missing(cols: np.ndarray) -> np.ndarray:
    """Where ``cols`` is missing, found as scikit-learn's imputers find it (``_get_mask``)."""
    mask = _common.require("sklearn.utils._mask", DISTRIBUTION, f"{LIBRARY}:hot_deck")
    return mask._get_mask(cols, np.nan)


def _hot_deck_columns(cols: np.ndarray, lo: float, hi: float, rng) -> np.ndarray:
    """Random hot-deck of each row of ``cols`` (t, n): every NaN a uniform draw, independently,
    among the row's observed entries (the middle of the bounds where none is)."""
    out = np.clip(cols, lo, hi)
    miss = _missing(out)
    k = (~miss).sum(axis=1)
    # the observed entries first, in order, so that a uniform index below k picks a donor
    order = np.argsort(miss, axis=1, kind="stable")
    donors = np.take_along_axis(out, order, axis=1)
    pick = np.floor(rng.random(out.shape) * np.maximum(k, 1)[:, None]).astype(np.intp)
    drawn = np.take_along_axis(donors, pick, axis=1)
    drawn[k == 0] = 0.5 * (lo + hi)
    return np.where(miss, drawn, out)


def _private_mean_columns(cols: np.ndarray, lo: float, hi: float, eps_imp: float, count: str,
                          rng) -> np.ndarray:
    """Each row of ``cols`` (t, n) with its NaN replaced by its own DP mean (module
    docstring: ``count`` "noisy", "public" or "diffprivlib")."""
    out = np.clip(cols, lo, hi)
    miss = _missing(out)
    k = (~miss).sum(axis=1)
    total = np.where(miss, 0.0, out).sum(axis=1)
    w, t = hi - lo, cols.shape[0]
    if count == "diffprivlib":
        mu = np.array([_diffprivlib_mean(row[~m], lo, hi, eps_imp, rng)
                       for row, m in zip(out, miss, strict=True)])
    elif count == "public":
        with np.errstate(invalid="ignore", divide="ignore"):
            mid = np.where(k > 0, total / np.maximum(k, 1), 0.5 * (lo + hi))
        mu = mid + rng.laplace(0.0, 1.0, size=t) * w / (np.maximum(k, 1) * eps_imp)
    else:
        noisy_total = total + rng.laplace(0.0, 2.0 * w / eps_imp, size=t)
        noisy_k = k + rng.laplace(0.0, 2.0 / eps_imp, size=t)
        mu = np.clip(noisy_total / np.maximum(1.0, noisy_k), lo, hi)
    return np.where(miss, mu[:, None], out)


def _diffprivlib_mean(obs: np.ndarray, lo: float, hi: float, eps_imp: float, rng) -> float:
    """diffprivlib's ``tools.mean`` of the observed values at ``eps_imp`` (its
    ``LaplaceTruncated`` of sensitivity W/k, the output in [lo, hi]), seeded from ``rng``; the
    middle of the bounds when nothing is observed (diffprivlib's mean of none is NaN)."""
    if obs.size == 0:
        return 0.5 * (lo + hi)
    tools = _common.require("diffprivlib.tools", "diffprivlib", f"{LIBRARY}:private_mean")
    accountant = _common.require("diffprivlib.accountant", "diffprivlib",
                                 f"{LIBRARY}:private_mean").BudgetAccountant
    return float(tools.mean(obs, bounds=(lo, hi), epsilon=eps_imp,
                            random_state=int(rng.integers(2**32)), accountant=accountant()))


def _check_own(target: str, function: str, p: dict) -> dict:
    """The checked parameters beyond bounds and column."""
    own = {"release": _common.check_choice(target, "release", p["release"], RELEASES),
           "statistic": _common.check_choice(target, "statistic", p["statistic"], STATISTICS)}
    if function == "knn":
        own["n_neighbors"] = _int_param(target, "n_neighbors", p["n_neighbors"])
    if function == "iterative":
        own["max_iter"] = _int_param(target, "max_iter", p["max_iter"])
    if function == "private_mean":
        share = _common.check_real_param(target, "impute_share", p["impute_share"])
        if not 0.0 < share < 1.0:
            raise ValueError(f"{target}: parameter 'impute_share' must be in (0, 1), got "
                             f"impute_share={p['impute_share']!r}")
        own["impute_share"] = share
        own["count"] = _common.check_choice(target, "count", p["count"], COUNTS)
    return own


def _int_param(target: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{target}: parameter {name!r} must be an integer >= 1, got "
                         f"{name}={value!r}")
    return int(value)


def _column(target: str, value: object, d: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{target}: parameter 'column' must be an integer >= 0, got "
                         f"column={value!r}")
    if d is not None and value >= d:
        raise ValueError(f"{target}: parameter 'column' must be in [0, {d - 1}] for data "
                         f"of {d} columns, got column={value!r}")
    return int(value)


def _column_maker(function: str, p: dict, column: int, lo: float, hi: float,
                  eps_imp: float):
    """``filled(xs, rng)``: the imputed column of each table of the stack ``xs`` (t, n, d),
    clipped to the bounds, as an array (t, n)."""
    if function == "hot_deck":
        return lambda xs, rng: _hot_deck_columns(xs[:, :, column], lo, hi, rng)
    if function == "private_mean":
        return lambda xs, rng: _private_mean_columns(xs[:, :, column], lo, hi, eps_imp,
                                                     p["count"], rng)
    imputer = _sklearn_imputer(function, p)
    cache: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def one(x: np.ndarray) -> np.ndarray:
        key = x.shape[1].to_bytes(4, "little") + x.tobytes()
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        value = _sklearn_column(imputer, x, column, lo, hi)
        cache[key] = value
        if len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
        return value

    def filled(xs: np.ndarray, rng) -> np.ndarray:
        return np.stack([one(x) for x in xs]) if len(xs) else np.empty(xs.shape[:2])

    return filled


class _OpenDPRelease:
    """OpenDP's sum or mean of an imputed column (``release="opendp"``): the chain of
    :func:`audit.adapters.opendp.build_chain` on the n entries (nothing left to impute, a
    substitution is a symmetric distance of 2), Laplace at δ = 0, Gaussian (zCDP converted to
    (ε, δ)) at δ > 0, built once per n. Picklable: the compiled chains are not sent."""

    def __init__(self, target: str, statistic: str, epsilon: float, delta: float, lo: float,
                 hi: float) -> None:
        self.target, self.statistic = target, statistic
        self.epsilon, self.delta = epsilon, delta
        self.params = {"bounds": (lo, hi), "nan": "impute", "constant": 0.5 * (lo + hi),
                       "noise": NoiseKind.GAUSSIAN if delta > 0 else NoiseKind.LAPLACE,
                       "column": None, "shape": None}
        self._chains: dict[int, object] = {}

    def chain(self, n: int):
        if n not in self._chains:
            self._chains[n], _ = opendp.build_chain(
                self.statistic, epsilon=self.epsilon, delta=self.delta, params=self.params,
                n=n, d=1)
        return self._chains[n]

    def __call__(self, col: np.ndarray, rng) -> float:  # rng unused: OpenDP is not seedable
        return float(self.chain(col.shape[0])(col))

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_chains": {}}


def _check_delta(target: str, release: str, delta: float) -> None:
    if release in ("laplace", "diffprivlib") and delta != 0.0:
        raise ValueError(f"{target}: release {release!r} is a Laplace release, pure ε-DP; "
                         f"delta must be 0, got delta={delta!r}")
    if release == "gaussian" and not 0.0 < delta < 1.0:
        raise ValueError(f"{target}: release 'gaussian' needs delta in (0, 1), got "
                         f"delta={delta!r}")


def _dp_release(target: str, own: dict, lo: float, hi: float, eps_rel: float, delta: float):
    """(one, batch, words): ``one(col, rng)`` the release of one imputed column (n,),
    ``batch(cols, rng)`` that of a stack (t, n) where the noise is the project's own (None
    otherwise), and what the release is in words."""
    release, statistic = own["release"], own["statistic"]
    if release == "opendp":
        one = _OpenDPRelease(target, statistic, eps_rel, delta, lo, hi)
        noise = "Gaussian" if delta > 0 else "Laplace"
        return one, None, f"OpenDP's {noise} {statistic} (its own generator: not seedable)"
    if release == "diffprivlib":
        tools = _common.require("diffprivlib.tools", "diffprivlib", target)
        accountant = _common.require("diffprivlib.accountant", "diffprivlib",
                                     target).BudgetAccountant
        function = tools.sum if statistic == "sum" else tools.mean

        def one(col: np.ndarray, rng) -> float:
            return float(function(col, bounds=(lo, hi), epsilon=eps_rel,
                                  random_state=int(rng.integers(2**32)),
                                  accountant=accountant()))

        return one, None, f"diffprivlib's tools.{statistic}"
    width = hi - lo
    if release == "gaussian":
        sigma = NOISES[NoiseKind.GAUSSIAN].calibrate(width, eps_rel, delta, "analytic")

        def draw(rng, size=None):
            return rng.normal(0.0, sigma, size=size)

        words = f"a Gaussian {statistic} (analytic σ = {sigma:.4g} for sensitivity {width:g})"
    else:
        scale = width / eps_rel

        def draw(rng, size=None):
            return rng.laplace(0.0, scale, size=size)

        words = f"a Laplace {statistic} (scale {scale:.4g})"

    def batch(cols: np.ndarray, rng) -> np.ndarray:
        sums = cols.sum(axis=1)
        out = sums + draw(rng, sums.shape)
        return out if statistic == "sum" else out / cols.shape[1]

    def one(col: np.ndarray, rng) -> float:
        return float(batch(col[None], rng)[0])

    return one, batch, words


def make(function: str, *, epsilon: float, delta: float,
         params: dict | None) -> CallableImplementation:
    """The implementation of ``imputation:<function>`` (see the module docstring)."""
    target = f"{LIBRARY}:{function}"
    p = _common.check_params(target, params, ADAPTER.target(function).accepted())
    lo, hi = _common.check_bounds(target, p["bounds"])
    column = _column(target, p["column"])
    own = _check_own(target, function, p)
    p.update(own)
    _check_delta(target, own["release"], delta)
    share = own.get("impute_share", 0.0)
    # the audit's own relation (one entry of the released column per record: diffprivlib's
    # per-entry relation, for its sum, gives the same budget)
    eps_lib = relations.to_substitution(ADAPTER.relation, epsilon, 0.0, entries=1).epsilon
    eps_rel = (1.0 - share) * eps_lib
    filled = _column_maker(function, p, column, lo, hi, share * eps_lib)
    dp_one, dp_batch, words = _dp_release(target, own, lo, hi, eps_rel, delta)

    def columns(xs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        _column(target, column, xs.shape[2])
        return filled(xs, rng)

    def release(data, rng: np.random.Generator) -> float:
        return dp_one(columns(_common.as_data(target, data)[None], rng)[0], rng)

    def batch(datasets, rng: np.random.Generator) -> np.ndarray:
        return dp_batch(columns(_common.as_stack(target, datasets), rng), rng)

    note = (f"{function} imputation (scikit-learn {_common.version(DISTRIBUTION)}) then "
            f"{words} of column {column} over bounds ({lo:g}, {hi:g}) at ε = {eps_rel:g}"
            + (f", δ = {delta:g}" if delta else "")
            + (f" after a DP mean at ε = {share * eps_lib:g} (count={own['count']!r})"
               if function == "private_mean" else "")
            + ": the claim ignores the imputation (audit.adapters.imputation)")
    return CallableImplementation(
        func=release, claim=Claim(epsilon, delta, note), name=target,
        batch_func=batch if dp_batch is not None else None,
        params={"bounds": (lo, hi), "column": column, **own})


_BOUNDS = Parameter("bounds", REQUIRED, "(lo, hi): the released column is clipped to it")
_COLUMN = Parameter("column", 0, "the column released (the imputer sees every column)")
_RELEASE = Parameter("release", "laplace", "'laplace' or 'gaussian' (the project's noise), "
                                          "'diffprivlib' or 'opendp' (the library's release)")
_STATISTIC = Parameter("statistic", "sum", "'sum' or 'mean' (over the n filled entries)")
_BASE = (_BOUNDS, _COLUMN, _RELEASE, _STATISTIC)
_DEFAULT = Example("default", {"bounds": [-1.0, 1.0]}, doc="a Laplace sum of column 0")
_DIFFPRIVLIB = Example("diffprivlib", {"bounds": [-1.0, 1.0], "release": "diffprivlib"},
                       doc="diffprivlib's tools.sum of the imputed column 0")
_SK = "sklearn/impute"
#: function -> (parameters of its own, what a NaN becomes, where scikit-learn 1.6 decides it)
_OWN = {
    "mean": ((), "the mean of the observed entries: the filled sum is n·mean_obs",
             f"{_SK}/_base.py:523-524; {_SK}/_base.py:672"),
    "median": ((), "the median of the observed entries: moves with the substituted value",
               f"{_SK}/_base.py:532-533; {_SK}/_base.py:672"),
    "most_frequent": ((), "the most frequent observed value (ties: the smallest)",
                      f"{_SK}/_base.py:543-563; {_SK}/_base.py:672"),
    "knn": ((Parameter("n_neighbors", 5, "donors averaged per missing entry"),),
            "the mean of the K nearest donors (distance on the observed features)",
            f"{_SK}/_knn.py:163-211"),
    "iterative": ((Parameter("max_iter", 10, "rounds of chained regressions"),),
                  "a BayesianRidge prediction from the other features, refitted in rounds",
                  f"{_SK}/_iterative.py:463"),
    "hot_deck": ((), "a uniform draw among the observed entries (random hot-deck)",
                 "sklearn/utils/_mask.py:23-25"),
    "private_mean": ((Parameter("impute_share", 0.5, "the share of ε spent on the DP mean"),
                      Parameter("count", "noisy", "'noisy' (fully DP), 'public' or "
                                                  "'diffprivlib' (its mean; k public)")),
                     "a DP mean with its own share of ε; the claim is the total",
                     "sklearn/utils/_mask.py:23-25"),
}
_PUBLIC = Example("public-count", {"bounds": [-1.0, 1.0], "count": "public"},
                  doc="μ̃ = mean_obs + Laplace, the count public: exact ε known")
_DIFFPRIVLIB_MEAN = Example("diffprivlib-mean", {"bounds": [-1.0, 1.0], "count": "diffprivlib"},
                            doc="μ̃ diffprivlib's tools.mean of the observed values")

ADAPTER = Adapter(
    library=LIBRARY, distribution=DISTRIBUTION, import_name="sklearn", seedable=True,
    relation=Relation.SUBSTITUTION, make=make, unseeded=(("release", "opendp"),),
    summary="imputers (scikit-learn, hot-deck, a DP mean) before a Laplace sum (ε ignores "
            "the imputation)",
    targets=tuple(
        Target(function, (*_BASE, *own), nan=NanSemantics.IMPUTES_FROM_DATA, summary=summary,
               source=source,
               examples=(_DEFAULT, _DIFFPRIVLIB, *((_PUBLIC, _DIFFPRIVLIB_MEAN)
                                                   if function == "private_mean"
                                                   else ())))
        for function, (own, summary, source) in _OWN.items()),
)
