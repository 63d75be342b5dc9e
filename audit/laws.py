"""Output laws of A_D with structure: mixtures over 2^d mask patterns without enumerating them.

When the query's output coordinate j depends on feature j alone (vector sum, bounded and
clipped means, histograms: ``Query.separable_values``) and vanishes when that feature is
missing, the output law on a dataset whose only non-zero record is z is determined by the
law of the record's mask, coordinate by coordinate:

- independent per-feature masks (``mcar-iid``, ``never-mask``, ``mar-pivot`` given the
  pivot, ``mnar-value``): the coordinates are independent, X_j = v_j·(1 − m_j) + noise_j,
  a :class:`ProductMixture` whose log density is a sum of d one-dimensional mixtures;
- a uniformly random set of exactly k observed features, or none (``mcar-fixed``): a
  :class:`SubsetMixture`; its density is Π_j φ(x_j) · [(1 − p) + p · e_k(r)/C(d, k)] with
  r_j = φ(x_j − v_j)/φ(x_j) and e_k the k-th elementary symmetric polynomial (computed by the
  O(dk) recurrence, in log space).

Both evaluate exactly what the enumerated :class:`audit.mixture.Mixture` would (their
``as_mixture()`` enumerates, for tests on small d), in O(d) or O(dk) per point instead of
O(2^d · d).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from audit._validate import check_positive_int, check_probability
from audit.enums import NoiseKind
from audit.mixture import LOGPDF_CHUNK_FLOATS, Mixture
from audit.noise import noise_of

__all__ = ["ProductMixture", "SubsetMixture", "Law", "MAX_ENUMERATED_COMPONENTS",
           "shared_releases", "fresh_releases", "persistent_releases", "MAX_SHARED_FLOATS"]

#: ``as_mixture()`` refuses laws with more components than this.
MAX_ENUMERATED_COMPONENTS = 1 << 20
#: Most numbers (components × k × dim) the law of k shared-mask releases may hold: its
#: density costs that many operations per evaluated output.
MAX_SHARED_FLOATS = 1 << 22


def _check_scale(scale: object) -> float:
    s = float(scale)
    if not (np.isfinite(s) and s > 0):
        raise ValueError(f"scale must be in (0, inf), got scale={scale!r}")
    return s


def _points(x: np.ndarray, dim: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(f"x must have shape (n, {dim}), got shape {x.shape}")
    return x


@dataclass(frozen=True, eq=False)
class ProductMixture:
    """Independent coordinates: X_j = S_j + noise_j with P[S_j = shifts[j, k]] = weights[j, k].

    Parameters
    ----------
    weights, shifts : array_like, shape (dim, K)
        Each row of ``weights`` is a probability vector (pad with zeros for fewer
        components); shifts finite.
    noise : NoiseKind or str
    scale : float
        Laplace scale b or Gaussian σ, > 0, the same for every coordinate.
    """

    weights: np.ndarray
    shifts: np.ndarray
    noise: NoiseKind
    scale: float

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64)
        s = np.asarray(self.shifts, dtype=np.float64)
        if w.ndim != 2 or w.shape != s.shape or 0 in w.shape:
            raise ValueError(f"weights and shifts must have the same shape (dim, K), got "
                             f"{w.shape} and {s.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and >= 0")
        if np.any(np.abs(w.sum(axis=1) - 1.0) > 1e-9):
            raise ValueError("every row of weights must sum to 1")
        if not np.all(np.isfinite(s)):
            raise ValueError("shifts must be finite")
        object.__setattr__(self, "weights", w / w.sum(axis=1, keepdims=True))
        object.__setattr__(self, "shifts", s)
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise))
        object.__setattr__(self, "scale", _check_scale(self.scale))

    @property
    def dim(self) -> int:
        return int(self.weights.shape[0])

    @property
    def is_scalar(self) -> bool:
        return self.dim == 1

    @property
    def n_components(self) -> int:
        """Mask patterns of positive probability: Π_j (components of coordinate j)."""
        return math.prod(int(c) for c in (self.weights > 0).sum(axis=1))

    def arrays(self) -> tuple[np.ndarray, ...]:
        """Every number that defines the law (for digests)."""
        return self.weights, self.shifts, np.array([self.scale])

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """Σ_j ln Σ_k w_jk φ(x_j − s_jk), in row chunks (bounded temporaries)."""
        x = _points(x, self.dim)
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)[None]
        out = np.empty(x.shape[0])
        step = max(1, LOGPDF_CHUNK_FLOATS // self.weights.size)
        noise = noise_of(self.noise)
        for a in range(0, x.shape[0], step):
            comp = noise.logpdf(x[a:a + step, :, None] - self.shifts[None], self.scale) + logw
            top = comp.max(axis=2, keepdims=True)  # finite: each row has a positive weight
            lse = top[:, :, 0] + np.log(np.exp(comp - top).sum(axis=2))
            out[a:a + step] = lse.sum(axis=1)
        return out

    def sample(self, n: int, rng=None) -> np.ndarray:
        """Plain-numpy reference sampler, shape (n, dim)."""
        g = np.random.default_rng(rng)
        u = g.random((n, self.dim, 1))
        k = (u > np.cumsum(self.weights, axis=1)[None, :, :-1]).sum(axis=2)
        loc = np.take_along_axis(self.shifts[None], k[:, :, None], axis=2)[:, :, 0]
        return loc + noise_of(self.noise).sample(g, self.scale, loc.shape)

    def as_mixture(self) -> Mixture:
        """The same law as an enumerated :class:`Mixture` (small dim only)."""
        if self.n_components > MAX_ENUMERATED_COMPONENTS:
            raise ValueError(f"as_mixture needs at most {MAX_ENUMERATED_COMPONENTS} "
                             f"components, got {self.n_components}")
        idx = [np.flatnonzero(row > 0) for row in self.weights]
        combos = np.array(list(itertools.product(*idx)), dtype=np.int64)
        rows = np.arange(self.dim)[None, :]
        weights = np.prod(self.weights[rows, combos], axis=1)
        return Mixture(weights, self.shifts[rows, combos], self.noise, self.scale)


def _log_elementary_symmetric(log_r: np.ndarray, k: int) -> np.ndarray:
    """ln e_k(r_1..r_d) for each row of ``log_r`` (n, d), by the recurrence
    e_m(r_1..r_j) = e_m(r_1..r_{j−1}) + r_j e_{m−1}(r_1..r_{j−1}), in log space."""
    n, d = log_r.shape
    E = np.full((n, k + 1), -np.inf)
    E[:, 0] = 0.0
    for j in range(d):
        top = min(j + 1, k)
        E[:, 1:top + 1] = np.logaddexp(E[:, 1:top + 1], E[:, 0:top] + log_r[:, j:j + 1])
    return E[:, k]


@dataclass(frozen=True, eq=False)
class SubsetMixture:
    """Exactly ``observed`` coordinates carry their value, or none.

    With probability 1 − ``p_observed`` every shift is 0; otherwise a uniformly random set S
    of ``observed`` coordinates has shift ``values[j]`` (j ∈ S) and the others 0.

    Parameters
    ----------
    values : array_like, shape (dim,)
        The shift of each coordinate when it is observed (finite).
    observed : int
        k ∈ [1, dim].
    p_observed : float
        In [0, 1].
    noise : NoiseKind or str
    scale : float
        > 0.
    """

    values: np.ndarray
    observed: int
    p_observed: float
    noise: NoiseKind
    scale: float

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=np.float64)
        if v.ndim != 1 or v.size == 0 or not np.all(np.isfinite(v)):
            raise ValueError(f"values must be a finite vector, got shape {v.shape}")
        k = check_positive_int(self.observed, "observed")
        if k > v.size:
            raise ValueError(f"observed must be in [1, {v.size}], got observed={k}")
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "observed", k)
        object.__setattr__(self, "p_observed", check_probability(self.p_observed, "p_observed"))
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise))
        object.__setattr__(self, "scale", _check_scale(self.scale))

    @property
    def dim(self) -> int:
        return int(self.values.size)

    @property
    def is_scalar(self) -> bool:
        return self.dim == 1

    @property
    def n_components(self) -> int:
        subsets = math.comb(self.dim, self.observed) if self.p_observed > 0 else 0
        return subsets + (1 if self.p_observed < 1 else 0)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.values, np.array([self.observed, self.p_observed, self.scale])

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """ln Π_j φ(x_j) + ln[(1 − p) + p e_k(r)/C(d, k)], r_j = φ(x_j − v_j)/φ(x_j)."""
        x = _points(x, self.dim)
        k, p = self.observed, self.p_observed
        log_comb = gammaln(self.dim + 1) - gammaln(k + 1) - gammaln(self.dim - k + 1)
        out = np.empty(x.shape[0])
        step = max(1, LOGPDF_CHUNK_FLOATS // (self.dim * (k + 2)))
        noise = noise_of(self.noise)
        with np.errstate(divide="ignore"):
            log_off, log_on = np.log1p(-p), np.log(p) - log_comb
        for a in range(0, x.shape[0], step):
            xa = x[a:a + step]
            base = noise.logpdf(xa, self.scale)
            log_r = noise.logpdf(xa - self.values[None], self.scale) - base
            mix = np.logaddexp(log_off, log_on + _log_elementary_symmetric(log_r, k))
            out[a:a + step] = base.sum(axis=1) + mix
        return out

    def sample(self, n: int, rng=None) -> np.ndarray:
        """Plain-numpy reference sampler, shape (n, dim)."""
        g = np.random.default_rng(rng)
        ranks = g.random((n, self.dim)).argsort(axis=1).argsort(axis=1)
        on = (ranks < self.observed) & (g.random((n, 1)) < self.p_observed)
        loc = np.where(on, self.values[None], 0.0)
        return loc + noise_of(self.noise).sample(g, self.scale, loc.shape)

    def as_mixture(self) -> Mixture:
        """The same law as an enumerated :class:`Mixture` (small dim only)."""
        if self.n_components > MAX_ENUMERATED_COMPONENTS:
            raise ValueError(f"as_mixture needs at most {MAX_ENUMERATED_COMPONENTS} "
                             f"components, got {self.n_components}")
        subsets = list(itertools.combinations(range(self.dim), self.observed))
        shifts = np.zeros((len(subsets) + 1, self.dim))
        for i, s in enumerate(subsets):
            shifts[i, list(s)] = self.values[list(s)]
        weights = np.full(len(subsets) + 1, self.p_observed / len(subsets))
        weights[-1] = 1.0 - self.p_observed
        return Mixture(weights, shifts, self.noise, self.scale)


Law = Mixture | ProductMixture | SubsetMixture


def _check_releases(releases: object) -> int:
    return check_positive_int(releases, "releases")


def shared_releases(M: Law, releases: int) -> Mixture:
    """The law of k releases of one query from one masked table (shared masks).

    Given the mask the k releases are independent draws around the same f(z̃): the output is
    the mixture over the masks of k-fold products, Σ_c w_c ⊗_{j ≤ k} Noise(s_c, scale), an
    enumerated :class:`~audit.mixture.Mixture` of dimension k·dim whose components repeat each
    shift k times (docs/THEORY.md §9.5). Its density costs O(components × k × dim) per point.

    Parameters
    ----------
    M : Mixture, ProductMixture or SubsetMixture
        The single-release law (structured laws are enumerated first).
    releases : int
        k ≥ 1.

    Raises
    ------
    ValueError
        For a bad k, or when components × k × dim exceeds :data:`MAX_SHARED_FLOATS` (or
        ``M`` has too many components to enumerate).
    """
    k = _check_releases(releases)
    base = M if isinstance(M, Mixture) else M.as_mixture()
    size = base.n_components * k * base.dim
    if size > MAX_SHARED_FLOATS:
        raise ValueError(
            f"releases × dim × components must be at most {MAX_SHARED_FLOATS} for the law of "
            f"shared-mask releases (its density costs that much per output), got {k} × "
            f"{base.dim} × {base.n_components} = {size}")
    return Mixture(base.weights, np.tile(base.shifts, (1, k)), base.noise, base.scale)


def fresh_releases(M: Law, releases: int) -> ProductMixture:
    """The law of k releases each with freshly drawn masks: the k-fold product M^{⊗k}.

    A scalar mixture becomes a :class:`ProductMixture` with k identical coordinates; a
    product law of dimension m one with k·m coordinates (the m rows repeated k times).

    Raises
    ------
    ValueError
        For a bad k, or a vector law whose coordinates are not independent (an enumerated
        vector :class:`~audit.mixture.Mixture` or a :class:`SubsetMixture`): its k-fold
        product is not a product of scalar mixtures.
    """
    k = _check_releases(releases)
    if isinstance(M, Mixture) and M.is_scalar:
        w, s = M.weights[None, :], M.scalar_shifts[None, :]
    elif isinstance(M, ProductMixture):
        w, s = M.weights, M.shifts
    else:
        raise ValueError(
            "M must be a scalar Mixture or a ProductMixture for the law of fresh-mask "
            f"releases (independent coordinates), got a {type(M).__name__} of dim {M.dim}")
    return ProductMixture(np.tile(w, (k, 1)), np.tile(s, (k, 1)), M.noise, M.scale)


def persistent_releases(M: Law, releases: int, persistence: float) -> Mixture:
    """The law of k releases from data re-collected k times whose non-response persists
    (docs/THEORY.md §10.7): collection 1 draws the record's mask (a component of ``M``), each
    later collection keeps the previous one with probability r = ``persistence``, else redraws
    it from ``M``'s weights; given the path (c_1, …, c_k) the releases are independent draws
    around s_{c_1}, …, s_{c_k}.

    The output is the mixture over the K^k paths, an enumerated
    :class:`~audit.mixture.Mixture` of dimension k·dim, path (c_1, …, c_k) with weight
    w_{c_1} Π_t [r·1(c_t = c_{t−1}) + (1 − r)·w_{c_t}]; r = 1 gives
    :func:`shared_releases`' law, r = 0 the k-fold product of :func:`fresh_releases`. The
    components of ``M`` are the differing record's mask states (the other records fixed, as
    in :mod:`audit.mixture`), so the chain over components is the record's own.

    Raises
    ------
    ValueError
        For a bad k or r, or when K^k × k × dim exceeds :data:`MAX_SHARED_FLOATS`.
    """
    k = _check_releases(releases)
    r = check_probability(persistence, "persistence")
    base = M if isinstance(M, Mixture) else M.as_mixture()
    K = base.n_components
    size = K ** min(k, 64) * k * base.dim
    if size > MAX_SHARED_FLOATS:
        raise ValueError(
            f"components^releases × releases × dim must be at most {MAX_SHARED_FLOATS} for the "
            f"law of persistent-mask releases (one component per mask path), got {K}^{k} × "
            f"{k} × {base.dim} = {size}")
    w = base.weights
    shifts = base.shifts.reshape(K, -1)
    # paths[i] = (c_1, …, c_k) in lexicographic order; weights built one collection at a time
    paths = np.array(list(itertools.product(range(K), repeat=k)), dtype=np.int64)
    prob = w[paths[:, 0]].copy()
    for t in range(1, k):
        stay = paths[:, t] == paths[:, t - 1]
        prob *= r * stay + (1.0 - r) * w[paths[:, t]]
    keep = prob > 0.0
    locs = shifts[paths[keep]].reshape(int(keep.sum()), k * base.dim)
    return Mixture(prob[keep] / prob[keep].sum(), locs, base.noise, base.scale)
