"""Neighbouring pairs and the output laws (P, Q) of A_D on them.

Fast (mixture) path
-------------------
Take neighbours z ≃ z' that differ in record ``index`` and whose other records are all zero
(or NA). NA reads as 0, so masking a zero record changes nothing, and every catalogue query is
a sum of per-record contributions with g(0) = 0 (``audit.model.queries``): the output of A_D(z) is
then f(z̃_index(m)) + noise, where only the differing record's mask m is random. Its law is
the finite mixture Σ_m P[F(z_index) = m] · Noise(f(z̃(m)), scale) — exact enumeration of the
mask distribution, components with equal shifts merged. This is the law the engine samples.

General path
------------
:func:`simulate_general` draws masks for *all* n records from the mechanism, evaluates the
query on the incomplete data and adds noise, in plain numpy. It is the reference for the
fast path (same law when the other records are zero) and the only path when they are not.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from audit._numeric import round_decimals
from audit._validate import check_delta, check_positive, check_positive_int
from audit.laws import Law, ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.model.missingness import MAX_ENUM_D
from audit.model.release import Release
from audit.protocols import (
    FixedCountMasks,
    IndependentMasks,
    MissingnessMechanism,
    Query,
    missing_members,
)
from audit.theory.pair import pair_epsilon, pair_method

__all__ = ["NeighbourPair", "Release", "worst_case_pair", "simulate_general", "record_law",
           "structured_law", "check_setting"]


def _check_dataset(name: str, z: object, bound: float) -> np.ndarray:
    a = np.asarray(z, dtype=np.float64)
    if a.ndim != 2 or 0 in a.shape:
        raise ValueError(f"{name} must have shape (n, d) with n, d >= 1, got shape {a.shape}")
    finite = a[~np.isnan(a)]
    if finite.size and np.max(np.abs(finite)) > bound * (1 + 1e-12):
        raise ValueError(
            f"{name} must satisfy |value| <= bound={bound} (NaN = NA allowed), got max "
            f"|value|={np.max(np.abs(finite))!r}"
        )
    return a


def structured_law(record, n: int, query: Query, missingness: MissingnessMechanism,
                   release: Release) -> Law | None:
    """The output law as a :class:`~audit.laws.ProductMixture` or
    :class:`~audit.laws.SubsetMixture` when the query is separable (vector output whose
    coordinate j reads feature j alone) and the mechanism's masks are independent per feature
    or a uniformly random fixed-size set; ``None`` otherwise (see :func:`record_law`)."""
    row = np.asarray(record, dtype=np.float64)
    if query.output_dim(row.shape[0]) == 1:
        return None
    values = query.separable_values(row, n)
    structure = None if values is None else missingness.mask_structure(row)
    if isinstance(structure, IndependentMasks):
        r = structure.rates
        weights = np.column_stack([1.0 - r, r])
        shifts = np.column_stack([values, np.zeros_like(values)])
        return ProductMixture(weights, shifts, release.noise, release.scale)
    if isinstance(structure, FixedCountMasks):
        return SubsetMixture(values, structure.observed, structure.p_observed, release.noise,
                             release.scale)
    return None


def record_law(record, n: int, query: Query, missingness: MissingnessMechanism,
               release: Release) -> Law:
    """Output law of A_D on a dataset whose only non-zero record is ``record`` (NaN = NA).

    The mixture over the record's masks Σ_m P[F(record) = m] · Noise(f(record masked by m)):
    in a structured form that never enumerates the 2^d patterns where one exists
    (:func:`structured_law`), else enumerated with equal shifts merged (scalar shifts, 1-D,
    when the query's output is one number; d ≤ 20).

    Parameters
    ----------
    record : array_like, shape (d,)
    n : int
        Dataset size (enters means), ≥ 1.
    query : Query
    missingness : MissingnessMechanism
    release : Release

    Raises
    ------
    ValueError
        When no structured form exists and d exceeds the enumeration limit.
    """
    n = check_positive_int(n, "n")
    row = np.asarray(record, dtype=np.float64)
    law = structured_law(row, n, query, missingness, release)
    if law is not None:
        return law
    if row.shape[0] > MAX_ENUM_D:
        raise ValueError(
            f"d must be at most {MAX_ENUM_D} for query {query.name!r} under "
            f"{missingness.kind!r} masks (their output law is enumerated over 2^d mask "
            f"patterns), got d={row.shape[0]}; larger d is supported for the separable "
            "queries (vector-sum, bounded-mean, clipped-mean, histogram) under independent "
            "(mcar-iid, never-mask, mar-pivot, mnar-value) or fixed-count (mcar-fixed) masks"
        )
    masks, probs = missingness.mask_distribution(row)
    rows = np.where(masks | np.isnan(row)[None, :], 0.0, row[None, :])
    shifts = query.contributions(rows, n)
    if shifts.shape[1] == 1:
        shifts = shifts[:, 0]
    return Mixture(probs / probs.sum(), shifts, release.noise, release.scale).merged()


@dataclass(frozen=True, eq=False)
class NeighbourPair:
    """Two datasets differing in record ``index`` (substitution neighbours in Z_miss^n).

    Parameters
    ----------
    z, z_prime : array_like, shape (n, d)
        The datasets; NaN marks a feature that is NA already (an all-NaN row is the all-NA
        record). Every value must satisfy |value| <= bound.
    index : int
        The differing record, in [0, n − 1]; all other rows must be equal (NaN-aware).
    query : Query
    missingness : MissingnessMechanism
    bound : float
        Record bound B > 0.
    score : float or None
        The search score of this pair (set by :func:`worst_case_pair`).
    """

    z: np.ndarray
    z_prime: np.ndarray
    index: int
    query: Query
    missingness: MissingnessMechanism
    bound: float
    score: float | None = None

    def __post_init__(self) -> None:
        B = check_positive(self.bound, "bound")
        z = _check_dataset("z", self.z, B)
        zp = _check_dataset("z_prime", self.z_prime, B)
        if z.shape != zp.shape:
            raise ValueError(
                f"z and z_prime must have the same shape, got {z.shape} and {zp.shape}"
            )
        i = check_positive_int(self.index, "index", minimum=0)
        if i >= z.shape[0]:
            raise ValueError(f"index must be in [0, {z.shape[0] - 1}], got index={i}")
        others = np.ones(z.shape[0], dtype=bool)
        others[i] = False
        if not np.array_equal(z[others], zp[others], equal_nan=True):
            raise ValueError("z and z_prime must differ only in record `index`")
        check_setting(self.query, self.missingness)
        self.query.check_dimension(z.shape[1])
        self.missingness.check_dimension(z.shape[1])
        object.__setattr__(self, "z", z)
        object.__setattr__(self, "z_prime", zp)
        object.__setattr__(self, "index", i)
        object.__setattr__(self, "bound", B)

    @property
    def n(self) -> int:
        return int(self.z.shape[0])

    @property
    def d(self) -> int:
        return int(self.z.shape[1])

    @property
    def others_are_zero(self) -> bool:
        """True when every record but ``index`` is zero or NA (the mixture path applies)."""
        others = np.delete(self.z, self.index, axis=0)
        return bool(np.all(np.nan_to_num(others, nan=0.0) == 0.0))

    def mixtures(self, release: Release) -> tuple[Mixture, Mixture]:
        """The output laws (P, Q) of A_D(z) and A_D(z').

        Raises
        ------
        ValueError
            If a record other than ``index`` is non-zero: masking it would add randomness the
            mixture does not describe; use :func:`simulate_general` instead.
        """
        if not isinstance(release, Release):
            raise ValueError(f"release must be a Release, got release={release!r}")
        if not self.others_are_zero:
            raise ValueError(
                "mixtures() needs every record but `index` to be zero or NA; use "
                "simulate_general for other datasets"
            )
        P = record_law(self.z[self.index], self.n, self.query, self.missingness, release)
        Q = record_law(self.z_prime[self.index], self.n, self.query, self.missingness,
                           release)
        return P, Q


def _pair_dataset(row: np.ndarray, n: int, index: int) -> np.ndarray:
    z = np.zeros((n, row.shape[0]))
    z[index] = row
    return z


def check_setting(query: Query, missingness: MissingnessMechanism) -> None:
    """Check that ``query`` and ``missingness`` have every member of their protocols.

    Raises
    ------
    ValueError
        Naming the parameter and the members it lacks (``audit.protocols.Query``,
        ``audit.protocols.MissingnessMechanism``).
    """
    for name, obj, protocol in (("query", query, Query),
                                ("missingness", missingness, MissingnessMechanism)):
        if not isinstance(obj, protocol):
            lacks = ", ".join(missing_members(obj, protocol))
            raise ValueError(f"{name} must be an audit.protocols.{protocol.__name__}, got "
                             f"{name}={obj!r} (it lacks {lacks})")


_EXACT_TOP = 6  # pairs scored exactly after the divergence screen (root-finding noises)
#: δ of the exact pair ε for a noise whose natural δ is not 0
_DEFAULT_DELTA = 1e-6


def _symmetric_kl(P: Mixture, Q: Mixture, points: int = 4001) -> float:
    """KL(P‖Q) + KL(Q‖P) of scalar mixtures by quadrature on a grid (a ranking proxy)."""
    if not P.is_scalar:
        return float("inf")
    s = np.concatenate([P.scalar_shifts, Q.scalar_shifts])
    x = np.linspace(s.min() - 12 * P.scale, s.max() + 12 * P.scale, points)
    lp, lq = P.logpdf(x), Q.logpdf(x)
    return float(np.trapezoid((np.exp(lp) - np.exp(lq)) * (lp - lq), x))


def _law_key(M: Law) -> tuple:
    """A hashable key equal for laws with the same parameters (mixtures merged first)."""
    arrays = M.merged().arrays() if isinstance(M, Mixture) else M.arrays()
    return (type(M).__name__, *(round_decimals(a, 12).tobytes() for a in arrays))


class _PilotKL:
    """Symmetrised KL divergence KL(P‖Q) + KL(Q‖P) of candidate laws, estimated on pilots
    (a ranking, not a privacy parameter). Law i's pilot as P (seed) and as Q (seed + 1) and
    its own log density on them are drawn once and reused for every pair it is in."""

    def __init__(self, laws: list, trials: int, seed: int) -> None:
        self.laws, self.trials, self.seed = laws, trials, seed
        self._pilots: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def _pilot(self, i: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
        if (i, offset) not in self._pilots:
            x = self.laws[i].sample(self.trials, self.seed + offset)
            self._pilots[i, offset] = (x, self.laws[i].logpdf(x))
        return self._pilots[i, offset]

    def __call__(self, a: int, b: int) -> float:
        xp, lp = self._pilot(a, 0)
        xq, lq = self._pilot(b, 1)
        kl_pq = np.mean(lp - self.laws[b].logpdf(xp))
        kl_qp = np.mean(lq - self.laws[a].logpdf(xq))
        return float(kl_pq + kl_qp)


def worst_case_pair(query: Query, missingness: MissingnessMechanism, d: int, n: int,
                    bound: float, release: Release, candidates=None, *,
                    delta: float | None = None, index: int = 0, pilot_trials: int = 4000,
                    seed: int = 0) -> NeighbourPair:
    """Search a small candidate set of differing records for the least private pair.

    The other n − 1 records are zero (mixture path). Candidates: the query's domain corners
    (``query.candidate_records``: ±B patterns, or one-hot records for the histogram), the
    all-NA record, and the mechanism's ``pair_candidates`` of those corners (for threshold
    MAR mechanisms, the corners with the pivot moved across the threshold). Every unordered
    pair of distinct laws is scored by the exact pair ε(δ) (``audit.theory.pair.pair_epsilon``)
    when the output is scalar — for Gaussian releases only the ``_EXACT_TOP`` pairs leading a
    symmetrised-KL screen (grid quadrature), since each exact Gaussian ε costs root finding;
    for vector outputs by a pilot estimate of the symmetrised KL divergence (a ranking proxy,
    not a privacy parameter).

    Parameters
    ----------
    query : Query
    missingness : MissingnessMechanism
    d, n : int
        Features and records, ≥ 1.
    bound : float
        Record bound B > 0.
    release : Release
    candidates : array_like, shape (C, d), optional
        Replaces the default candidate records (NaN = NA allowed).
    delta : float in [0, 1], optional
        δ of the exact pair ε; default 0 for Laplace and 1e-6 for Gaussian releases.
    index : int
        Position of the differing record.
    pilot_trials, seed : int
        Pilot size and seed of the KL fallback.

    Returns
    -------
    NeighbourPair
        The best pair, with ``score`` set (the exact ε or the KL proxy).
    """
    d = check_positive_int(d, "d")
    n = check_positive_int(n, "n")
    B = check_positive(bound, "bound")
    index = check_positive_int(index, "index", minimum=0)
    if index >= n:
        raise ValueError(f"index must be in [0, {n - 1}], got index={index}")
    if not isinstance(release, Release):
        raise ValueError(f"release must be a Release, got release={release!r}")
    check_setting(query, missingness)
    query.check_dimension(d)
    missingness.check_dimension(d)
    if delta is None:
        delta = 0.0 if release.additive_noise.pure else _DEFAULT_DELTA
    delta = check_delta(delta)
    pilot_trials = check_positive_int(pilot_trials, "pilot_trials", minimum=100)
    cands = _candidate_records(query, missingness, d, B, candidates)
    laws = [record_law(c, n, query, missingness, release) for c in cands]
    todo = _distinct_law_pairs(laws)
    if not todo:  # every candidate gives the same law: any pair is worst (ε = 0)
        return NeighbourPair(_pair_dataset(cands[0], n, index),
                             _pair_dataset(cands[1 % len(cands)], n, index),
                             index, query, missingness, B, score=0.0)
    def exact(a: int, b: int) -> float:
        return float(pair_epsilon(laws[a], laws[b], delta).value)

    score = exact if laws[0].is_scalar else _PilotKL(laws, pilot_trials, seed)
    costly = not pair_method(release.noise).closed_form_split
    if laws[0].is_scalar and costly and len(todo) > _EXACT_TOP:
        # The exact pair ε costs root finding per pair (Gaussian): rank all pairs by a cheap
        # divergence first and compute the exact ε for the leading ones only.
        kl = [_symmetric_kl(laws[a], laws[b]) for a, b in todo]
        todo = [todo[i] for i in np.argsort(kl)[::-1][:_EXACT_TOP]]
    best = (-np.inf, 0, 1)
    for a, b in todo:
        value = score(a, b)
        if value > best[0]:
            best = (value, a, b)
    s, a, b = best
    return NeighbourPair(_pair_dataset(cands[a], n, index), _pair_dataset(cands[b], n, index),
                         index, query, missingness, B, score=s)


def _candidate_records(query: Query, missingness: MissingnessMechanism, d: int, bound: float,
                       candidates) -> np.ndarray:
    """The differing records the search tries: the query's corners, the mechanism's extra
    records for them (``pair_candidates``) and the all-NA record (or the caller's list)."""
    if candidates is None:
        base = np.asarray(query.candidate_records(d, bound), dtype=np.float64)
        rows = [*base, *missingness.pair_candidates(base, bound), np.full(d, np.nan)]
        cands = np.unique(np.nan_to_num(np.array(rows), nan=np.inf), axis=0)
        cands[np.isinf(cands)] = np.nan
        return cands
    cands = np.asarray(candidates, dtype=np.float64)
    if cands.ndim != 2 or cands.shape[1] != d or cands.shape[0] < 2:
        raise ValueError(
            f"candidates must have shape (C, {d}) with C >= 2, got shape {cands.shape}"
        )
    return cands


def _distinct_law_pairs(laws: list) -> list[tuple[int, int]]:
    """One (a, b) per unordered pair of distinct laws: many candidates give the same law
    (e.g. any record with the same sum), and both scores are symmetric in (P, Q)."""
    keys = [_law_key(M) for M in laws]
    pairs: dict[tuple, tuple[int, int]] = {}
    for a, b in itertools.combinations(range(len(laws)), 2):
        if keys[a] != keys[b]:
            key = (keys[a], keys[b]) if keys[a] < keys[b] else (keys[b], keys[a])
            pairs.setdefault(key, (a, b))
    return list(pairs.values())


def simulate_general(z, query: Query, missingness: MissingnessMechanism, release: Release,
                     trials: int, rng=None, *, batch: int = 20000) -> np.ndarray:
    """Plain-numpy draws of A_D(z) for any dataset: masks for all n records, query, noise.

    Parameters
    ----------
    z : array_like, shape (n, d)
        Dataset (NaN = NA).
    query : Query
    missingness : MissingnessMechanism
    release : Release
    trials : int
        Number of draws, ≥ 1.
    rng : Generator, int or None
    batch : int
        Draws per vectorised batch (memory ≈ batch · n · d floats).

    Returns
    -------
    ndarray
        Shape (trials,) for a scalar output, else (trials, output_dim).
    """
    x = np.asarray(z, dtype=np.float64)
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"z must have shape (n, d) with n, d >= 1, got shape {x.shape}")
    trials = check_positive_int(trials, "trials")
    batch = check_positive_int(batch, "batch")
    if not isinstance(release, Release):
        raise ValueError(f"release must be a Release, got release={release!r}")
    n, d = x.shape
    check_setting(query, missingness)
    query.check_dimension(d)
    missingness.check_dimension(d)
    g = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    out_dim = query.output_dim(d)
    out = np.empty((trials, out_dim))
    nan = np.isnan(x)
    done = 0
    while done < trials:
        b = min(batch, trials - done)
        X = np.broadcast_to(x, (b, n, d)).reshape(b * n, d)
        masks = missingness.sample_masks(X, g)
        Xt = np.where(masks | np.tile(nan, (b, 1)), 0.0, X)
        f = query.contributions(Xt, n).reshape(b, n, out_dim).sum(axis=1)
        f += release.additive_noise.sample(g, release.scale, f.shape)
        out[done:done + b] = f
        done += b
    return out[:, 0] if out_dim == 1 else out
