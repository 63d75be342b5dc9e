"""What the Monte Carlo engine counts: one number per output, in bins fixed before the run.

A :class:`Statistic` is a *projection* of each raw output x (a scalar, or a vector of the
query's output dimension) to one real number, plus fixed histogram ``edges``:

- :class:`OutputValue`: the output itself (scalar outputs only);
- :class:`ExactLLR`: ln p(x) − ln q(x) for the two output laws P = A_D(z), Q = A_D(z')
  (white box: the laws are part of the projection);
- :class:`LinearProjection`: w·x + c;
- :class:`CategoryIndex` (black box only): the index of the output among a table of distinct
  values, unseen values to a dedicated "other" index;
- :class:`NeighbourLogRatio` (black box only): a k-nearest-neighbour estimate of ln p/q from
  fitted points of both sides, NaN for an output with a non-finite coordinate;
- :class:`CoordinateSum` (black box only): Σ_j f_j(x_j), per-coordinate fitted functions
  (an additive score).

The last three are counted only by black-box (implementation) audits, whose counts are taken in
numpy (``Statistic.indices``); the numba and CUDA engines refuse them
(:data:`ENGINE_PROJECTIONS`). A projection is any object with ``evaluate`` and ``to_dict``
(the :class:`audit.interfaces.Projection` protocol): a user's own class is counted by a
black-box audit like the built-ins that the engines refuse.

Each projection has a plain-numpy ``evaluate`` (the reference the numba kernels are tested
against, and what pilots are scored with), and :func:`histogram` is the numpy reference of the
kernels' binning. Counts always have ``len(edges) + 2`` entries: index 0 is the underflow bin
(v < edges[0], −inf included), index i the bin [edges[i−1], edges[i]), index len(edges) the
overflow bin (v ≥ edges[-1], +inf included), and the last index the NaN bin: an implementation
audited as a black box may release NaN, which is a value like any other (an output that is NaN
on one dataset and a number on the other is a distinguishing event). A statistic with
``infinities=True`` (an implementation whose pilot released ±inf; the model's kernels never
release them and keep the layout above) has two more counters after the NaN bin: −inf, then
+inf, so an infinite release is its own event rather than a draw of the edge bins.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from audit.interfaces import Projection
from audit.laws import Law, ProductMixture, SubsetMixture
from audit.mixture import Mixture
from audit.ties import SCORE_QUANTUM, TIE_PRECISION, binning_edges, quantise_scores, tie_tolerance

__all__ = [
    "OutputValue",
    "ExactLLR",
    "LinearProjection",
    "CategoryIndex",
    "NeighbourLogRatio",
    "PatternNeighbourLogRatio",
    "nonfinite_pattern",
    "CoordinateSum",
    "Projection",
    "PROJECTIONS",
    "row_keys",
    "ENGINE_PROJECTIONS",
    "Statistic",
    "check_edges",
    "bin_representatives",
    "histogram",
    "bin_indices",
    "binning_edges",
    "tie_tolerance",
    "quantise_scores",
    "TIE_PRECISION",
    "SCORE_QUANTUM",
    "edges_spanning",
    "edges_for_pilot",
    "is_heavy_tailed",
    "HEAVY_TAIL_RATIO",
]

#: A pilot whose range exceeds this many interquartile ranges is heavy-tailed (a Laplace or
#: Gaussian pilot of up to 2^50 draws stays below it; a Cauchy pilot of a few hundred exceeds
#: it): its edges are its quantiles, not a uniform grid over its range.
HEAVY_TAIL_RATIO = 50.0



def check_edges(edges: object) -> np.ndarray:
    """``edges`` as a float array: 1-D, at least 2 values, finite, strictly increasing."""
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.shape[0] < 2:
        raise ValueError(f"edges must be a 1-D array of at least 2 values, got shape {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError("edges must be finite")
    if not np.all(np.diff(e) > 0):
        raise ValueError("edges must be strictly increasing")
    return e


def bin_representatives(edges: np.ndarray, infinities: bool = False) -> np.ndarray:
    """One point per histogram bin: underflow, each bin's centre, overflow, NaN (and −inf,
    +inf with ``infinities``).

    The underflow and overflow bins are represented by their finite edge, so a score is
    evaluated where those bins begin; the NaN bin by NaN, the infinite bins by ±inf.
    """
    edges = np.asarray(edges, dtype=np.float64)
    centres = 0.5 * (edges[:-1] + edges[1:])
    tail = [edges[-1], np.nan] + ([-np.inf, np.inf] if infinities else [])
    return np.concatenate([[edges[0]], centres, tail])


def bin_indices(values: np.ndarray, edges: np.ndarray, infinities: bool = False) -> np.ndarray:
    """The bin of each value in the engine's layout (underflow, left-closed bins, overflow,
    NaN): ``numpy.searchsorted(binning_edges(edges), v, side="right")`` (a value within
    :func:`tie_tolerance` below an edge counts as on it), and len(edges) + 1 for NaN; with
    ``infinities``, len(edges) + 2 for −inf and len(edges) + 3 for +inf."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    idx = np.searchsorted(binning_edges(edges), v, side="right")
    idx[np.isnan(v)] = len(edges) + 1
    if infinities:
        idx[np.isneginf(v)] = len(edges) + 2
        idx[np.isposinf(v)] = len(edges) + 3
    return idx


def histogram(values: np.ndarray, edges: np.ndarray, infinities: bool = False) -> np.ndarray:
    """Counts of ``values`` in the engine's layout (underflow, left-closed bins, overflow,
    NaN, and −inf, +inf with ``infinities``)."""
    size = len(edges) + (4 if infinities else 2)
    return np.bincount(bin_indices(values, edges, infinities), minlength=size).astype(np.int64)


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()[:20]


@dataclass(frozen=True, eq=False)
class SampleCounts:
    """Histogram counts of ``trials`` draws per side (the bins of a :class:`Statistic`): what a
    subject counts and a bound reads (re-exported by :mod:`audit.pipeline.subject`)."""

    counts_p: np.ndarray
    counts_q: np.ndarray
    trials: int


@dataclass(frozen=True)
class OutputValue:
    """The output itself: the projection of scalar outputs."""

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 2 and x.shape[1] != 1:
            raise ValueError(f"OutputValue needs scalar outputs, got shape {x.shape}")
        return x.reshape(-1)

    def to_dict(self) -> dict:
        return {"kind": "output"}


@dataclass(frozen=True, eq=False)
class ExactLLR:
    """ln p(x) − ln q(x) of two output laws (Neyman–Pearson optimal for P against Q)."""

    P: Law
    Q: Law

    def __post_init__(self) -> None:
        for name, M in (("P", self.P), ("Q", self.Q)):
            if not isinstance(M, Mixture | ProductMixture | SubsetMixture):
                raise ValueError(f"{name} must be an output law (audit.mixture.Mixture or an "
                                 f"audit.laws structured law), got {name}={M!r}")
        if self.P.noise is not self.Q.noise or self.P.dim != self.Q.dim:
            raise ValueError("P and Q must have the same noise kind and output dimension")

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        return self.P.logpdf(x) - self.Q.logpdf(x)

    def to_dict(self) -> dict:
        parts = [a for M in (self.P, self.Q) for a in M.arrays()]
        types = [type(M).__name__ for M in (self.P, self.Q)]
        return {"kind": "llr", "noise": self.P.noise.value, "law_types": types,
                "laws": _digest(*parts)}


@dataclass(frozen=True, eq=False)
class LinearProjection:
    """w·x + c."""

    weights: np.ndarray
    offset: float = 0.0

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        if w.size == 0 or not np.all(np.isfinite(w)):
            raise ValueError(f"weights must be a non-empty finite vector, got weights={w}")
        c = float(self.offset)
        if not math.isfinite(c):
            raise ValueError(f"offset must be a finite real number, got offset={self.offset!r}")
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "offset", c)

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            x = x.reshape(-1, 1)
        return x @ self.weights + self.offset

    def to_dict(self) -> dict:
        return {"kind": "linear", "weights": self.weights.tolist(), "offset": self.offset}


def _rows(x: np.ndarray, dim: int, name: str) -> np.ndarray:
    """Outputs as a C-contiguous (N, dim) float array (1-D input: N scalar outputs)."""
    x = np.asarray(x, dtype=np.float64)
    x = x.reshape(-1, 1) if x.ndim <= 1 else x
    if x.ndim != 2 or x.shape[1] != dim:
        raise ValueError(f"{name} needs outputs of dimension {dim}, got shape {x.shape}")
    return np.ascontiguousarray(x)


def row_keys(x: np.ndarray) -> np.ndarray:
    """One opaque key per row of a 2-D float array, equal exactly when the rows are equal
    value by value, NaN equal to NaN (any payload) and −0.0 equal to 0.0."""
    x = np.where(np.isnan(x), np.nan, x + 0.0)  # one NaN bit pattern; -0.0 + 0.0 = +0.0
    x = np.ascontiguousarray(x, dtype=np.float64)
    return x.view(f"V{8 * x.shape[1]}").reshape(-1)


@dataclass(frozen=True, eq=False)
class CategoryIndex:
    """The index of each output in a table of distinct values: row i of ``table`` → i, any
    other value → ``len(table)`` (the "other" index). Black box only: counted in numpy.

    Parameters
    ----------
    table : array_like
        Shape (K, dim) with K ≥ 1 distinct rows (compared exactly, NaN equal to NaN), or
        (K,) for scalar outputs.
    """

    table: np.ndarray

    def __post_init__(self) -> None:
        t = np.asarray(self.table, dtype=np.float64)
        t = t.reshape(-1, 1) if t.ndim == 1 else t
        if t.ndim != 2 or t.shape[0] == 0 or t.shape[1] == 0:
            raise ValueError(f"table must have shape (K, dim) with K ≥ 1 and dim ≥ 1, got "
                             f"shape {np.shape(self.table)}")
        keys = row_keys(t)
        order = np.argsort(keys, kind="stable")
        if np.any(keys[order][1:] == keys[order][:-1]):
            raise ValueError("table must have distinct rows (NaN equal to NaN)")
        object.__setattr__(self, "table", t)
        object.__setattr__(self, "_sorted", (keys[order], order))

    @property
    def other(self) -> int:
        """The index of every value not in the table."""
        return int(self.table.shape[0])

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        keys = row_keys(_rows(x, self.table.shape[1], "CategoryIndex"))
        sorted_keys, order = self._sorted
        pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
        found = sorted_keys[pos] == keys
        return np.where(found, order[pos], self.other).astype(np.float64)

    def to_dict(self) -> dict:
        return {"kind": "category", "size": self.other, "table": _digest(self.table)}


@dataclass(frozen=True, eq=False)
class NeighbourLogRatio:
    """k-nearest-neighbour estimate of ln p(x)/q(x) from fitted draws of both sides.

    Among the k fitted points nearest to x (Euclidean distance after dividing each
    coordinate by ``scale``), k_p come from P's draws and k − k_p from Q's:
    ln((k_p + ½)/(k − k_p + ½)) + ln(n_q/n_p). An output with a non-finite coordinate
    projects to NaN (the statistic's NaN bin; the attack scores it). Black box only: counted
    in numpy.

    Parameters
    ----------
    points : array_like
        The fitted finite draws, shape (n, dim), n > k.
    from_p : array_like of bool
        Shape (n,): whether each point is a draw of P (both sides present).
    k : int
        Neighbours per estimate, in [1, n).
    scale : array_like
        Shape (dim,), positive finite divisors of the coordinates.
    log_prior : float
        ln(n_q/n_p) over every fitted draw (non-finite ones included).

    References
    ----------
    Loftsgaarden, D. O. and Quesenberry, C. P. (1965), "A nonparametric estimate of a
    multivariate density function", Ann. Math. Statist. 36(3): the k-NN density estimate,
    here its ratio with a common radius.
    """

    points: np.ndarray
    from_p: np.ndarray
    k: int
    scale: np.ndarray
    log_prior: float = 0.0

    def __post_init__(self) -> None:
        from scipy.spatial import cKDTree

        pts = np.asarray(self.points, dtype=np.float64)
        lab = np.asarray(self.from_p, dtype=bool).reshape(-1)
        sc = np.asarray(self.scale, dtype=np.float64).reshape(-1)
        if pts.ndim != 2 or pts.shape[0] < 2 or not np.all(np.isfinite(pts)):
            raise ValueError(f"points must be a finite (n, dim) array with n ≥ 2, got shape "
                             f"{pts.shape}")
        if lab.shape[0] != pts.shape[0] or lab.all() or not lab.any():
            raise ValueError("from_p must have one flag per point, with both sides present")
        if not isinstance(self.k, int | np.integer) or not 1 <= self.k < pts.shape[0]:
            raise ValueError(f"k must be an integer in [1, {pts.shape[0] - 1}], got "
                             f"k={self.k!r}")
        if sc.shape != (pts.shape[1],) or not np.all(np.isfinite(sc) & (sc > 0)):
            raise ValueError(f"scale must be {pts.shape[1]} positive finite numbers, got "
                             f"scale={sc}")
        if not math.isfinite(float(self.log_prior)):
            raise ValueError(f"log_prior must be finite, got log_prior={self.log_prior!r}")
        for name, value in (("points", pts), ("from_p", lab), ("scale", sc),
                            ("k", int(self.k)), ("log_prior", float(self.log_prior))):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_tree", cKDTree(pts / sc))

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = _rows(x, self.points.shape[1], "NeighbourLogRatio")
        out = np.full(x.shape[0], np.nan)
        ok = np.isfinite(x).all(axis=1)
        if ok.any():
            _, idx = self._tree.query(x[ok] / self.scale, k=self.k)
            kp = self.from_p[np.asarray(idx).reshape(-1, self.k)].sum(axis=1)
            out[ok] = np.log((kp + 0.5) / (self.k - kp + 0.5)) + self.log_prior
        return out

    def to_dict(self) -> dict:
        return {"kind": "knn", "k": self.k, "n": int(self.points.shape[0]),
                "fit": _digest(self.points, self.from_p, self.scale)}


def nonfinite_pattern(x: np.ndarray) -> np.ndarray:
    """Per row of a 2-D array, one integer coding which coordinates are NaN, +inf or −inf
    (base 4, coordinate j contributing 4^j × (0 finite, 1 NaN, 2 +inf, 3 −inf); 0: a
    finite row). Rows with more than 30 coordinates are coded by their first 30."""
    x = np.asarray(x, dtype=np.float64)
    code = np.where(np.isnan(x), 1, np.where(x == np.inf, 2, np.where(x == -np.inf, 3, 0)))
    code = code[:, :30].astype(np.int64)
    return (code * (4 ** np.arange(code.shape[1], dtype=np.int64))).sum(axis=1)


@dataclass(frozen=True, eq=False)
class PatternNeighbourLogRatio:
    """A k-NN log-ratio per pattern of non-finite coordinates: a finite row by ``finite``; a
    row whose pattern (:func:`nonfinite_pattern`) is among ``patterns`` by that pattern's
    neighbour estimate on its finite coordinates (``(code, NeighbourLogRatio, None)``) or, where
    the pilot held too few such rows, by the pattern's smoothed frequency ratio
    (``(code, None, score)``); a pattern the pilot never saw projects to NaN (the attack
    scores it). Every estimate carries ln(n_q/n_p) over all draws, so the pattern's frequency
    ratio enters the score (ln p(x)/q(x) = ln P(π)/Q(π) + ln p(x_obs|π)/q(x_obs|π)). Black
    box only: counted in numpy.

    Parameters
    ----------
    finite : NeighbourLogRatio
        The estimate of finite rows.
    patterns : tuple
        ``(code, estimate or None, score or None)`` per non-finite pattern, codes distinct
        and > 0; an estimate's dimension is the pattern's number of finite coordinates.
    """

    finite: NeighbourLogRatio
    patterns: tuple = ()

    def __post_init__(self) -> None:
        if not isinstance(self.finite, NeighbourLogRatio):
            raise ValueError(f"finite must be a NeighbourLogRatio, got {self.finite!r}")
        codes = [int(c) for c, _, _ in self.patterns]
        if len(set(codes)) != len(codes) or any(c <= 0 for c in codes):
            raise ValueError(f"patterns must have distinct codes > 0, got {codes}")
        for c, est, score in self.patterns:
            if (est is None) == (score is None) or (score is not None
                                                     and not math.isfinite(score)):
                raise ValueError(f"pattern {c} needs an estimate or a finite score, not both")

    @property
    def dim(self) -> int:
        return int(self.finite.points.shape[1])

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = _rows(x, self.dim, "PatternNeighbourLogRatio")
        out = self.finite.evaluate(x)
        codes = nonfinite_pattern(x)
        for code, est, score in self.patterns:
            rows = codes == code
            if not rows.any():
                continue
            if est is None:
                out[rows] = score
            else:
                sub = x[rows]
                out[rows] = est.evaluate(sub[:, np.isfinite(sub[0])])
        return out

    def to_dict(self) -> dict:
        return {"kind": "knn-patterns", "finite": self.finite.to_dict(),
                "patterns": [{"code": int(c), "fit": None if e is None else e.to_dict(),
                              "score": s} for c, e, s in self.patterns]}


@dataclass(frozen=True, eq=False)
class CoordinateSum:
    """Σ_j f_j(x_j): each f_j the linear interpolation of ``values[j]`` at ``knots[j]``
    (constant beyond the end knots), and a NaN, +inf or −inf coordinate j scored
    ``special[j, 0]``, ``special[j, 1]`` or ``special[j, 2]`` instead (an additive score:
    the exact log-ratio of two product laws). Black box only: counted in numpy.

    Parameters
    ----------
    knots : sequence of array_like
        One strictly increasing finite 1-D array (≥ 2 values) per coordinate.
    values : sequence of array_like
        Finite values at the knots, one array per coordinate, each as long as its knots.
    special : array_like
        Shape (dim, 3), finite: the scores of NaN, +inf and −inf in each coordinate.
    """

    knots: tuple
    values: tuple
    special: np.ndarray

    def __post_init__(self) -> None:
        knots = tuple(check_edges(k) for k in self.knots)
        values = tuple(np.asarray(v, dtype=np.float64).reshape(-1) for v in self.values)
        special = np.asarray(self.special, dtype=np.float64)
        if not knots or len(values) != len(knots):
            raise ValueError(f"knots and values must have one array per coordinate (≥ 1), "
                             f"got {len(knots)} and {len(values)}")
        for j, (k, v) in enumerate(zip(knots, values, strict=True)):
            if v.shape != k.shape or not np.all(np.isfinite(v)):
                raise ValueError(f"values[{j}] must be {k.size} finite numbers, got {v}")
        if special.shape != (len(knots), 3) or not np.all(np.isfinite(special)):
            raise ValueError(f"special must be a finite ({len(knots)}, 3) array, got shape "
                             f"{special.shape}")
        for name, value in (("knots", knots), ("values", values), ("special", special)):
            object.__setattr__(self, name, value)

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = _rows(x, len(self.knots), "CoordinateSum")
        out = np.zeros(x.shape[0])
        for j, (k, v) in enumerate(zip(self.knots, self.values, strict=True)):
            col = x[:, j]
            term = np.interp(np.where(np.isfinite(col), col, k[0]), k, v)
            term = np.where(np.isnan(col), self.special[j, 0], term)
            term = np.where(np.isposinf(col), self.special[j, 1], term)
            out += np.where(np.isneginf(col), self.special[j, 2], term)
        return out

    def to_dict(self) -> dict:
        return {"kind": "coordinate-sum", "dim": len(self.knots),
                "fit": _digest(*self.knots, *self.values, self.special)}


#: the built-in projections (a :class:`Statistic` holds any :class:`Projection`: these, or a
#: user's own class with ``evaluate`` and ``to_dict``)
PROJECTIONS = (OutputValue, ExactLLR, LinearProjection, CategoryIndex, NeighbourLogRatio,
               PatternNeighbourLogRatio, CoordinateSum)
#: the projections the numba and CUDA engines can count (the others: black box only)
ENGINE_PROJECTIONS = (OutputValue, ExactLLR, LinearProjection)


@dataclass(frozen=True, eq=False)
class Statistic:
    """A projection and the fixed bin edges its values are counted in.

    Parameters
    ----------
    projection : Projection
        Any object with ``evaluate`` and ``to_dict`` (:class:`audit.interfaces.Projection`):
        a built-in (:data:`PROJECTIONS`; the engines count only :data:`ENGINE_PROJECTIONS`)
        or a user's own, counted in numpy by black-box audits.
    edges : array_like
        Strictly increasing finite bin edges (at least 2).
    infinities : bool
        Count −inf and +inf in bins of their own (implementation audits whose pilot released
        them; the model's kernels do not support it).
    """

    projection: Projection
    edges: np.ndarray
    infinities: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.projection, Projection):
            raise ValueError(
                "projection must be an OutputValue, ExactLLR, LinearProjection, CategoryIndex, "
                "NeighbourLogRatio, CoordinateSum or another object with evaluate and to_dict "
                f"(audit.interfaces.Projection), got projection={self.projection!r}"
            )
        object.__setattr__(self, "edges", check_edges(self.edges))

    @classmethod
    def output(cls, edges) -> Statistic:
        return cls(OutputValue(), edges)

    @classmethod
    def llr(cls, P: Mixture, Q: Mixture, edges) -> Statistic:
        return cls(ExactLLR(P, Q), edges)

    @classmethod
    def linear(cls, weights, offset: float, edges) -> Statistic:
        return cls(LinearProjection(weights, offset), edges)

    @property
    def n_bins(self) -> int:
        """Number of counters, ``len(edges) + 2`` (underflow, overflow and NaN included; two
        more with ``infinities``)."""
        return int(self.edges.shape[0] + (4 if self.infinities else 2))

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """The projected values of raw outputs (plain numpy)."""
        return self.projection.evaluate(x)

    def indices(self, x: np.ndarray) -> np.ndarray:
        """The bin of each raw output (plain numpy)."""
        return bin_indices(self.evaluate(x), self.edges, self.infinities)

    def counts(self, x: np.ndarray) -> np.ndarray:
        """Histogram of raw outputs in this statistic's bins (plain numpy)."""
        return histogram(self.evaluate(x), self.edges, self.infinities)

    def pilot_counts(self, pilot) -> SampleCounts:
        """Both sides of a held ``pilot`` (raw outputs ``pilot.p`` and ``pilot.q``, as many
        of each) counted in this statistic's bins."""
        return SampleCounts(self.counts(pilot.p), self.counts(pilot.q), len(pilot.p))

    def bin_scores(self, score) -> np.ndarray:
        """The score of every bin (an attack's :class:`audit.protocols.Score`), evaluated at
        :func:`bin_representatives`; a NaN score becomes −inf (that bin then joins only the
        regions {score ≤ t}, a choice made before any data, so it is valid). Scores are
        quantised (:func:`quantise_scores`), so bins tied in exact arithmetic stay tied."""
        with np.errstate(invalid="ignore"):
            s = score.of_projected(bin_representatives(self.edges, self.infinities))
        return quantise_scores(np.where(np.isnan(s), -np.inf, s))

    def to_dict(self) -> dict:
        out = {**self.projection.to_dict(), "edges": self.edges.tolist()}
        if self.infinities:  # absent otherwise: run hashes of finite statistics unchanged
            out["infinities"] = True
        return out


def edges_spanning(values: np.ndarray, n_bins: int, *, margin: float = 0.25) -> np.ndarray:
    """Uniform edges over the range of ``values`` widened by ``margin`` of its span each side
    (edges of a kernel statistic, decided from a pilot before the main run)."""
    lo, hi = np.quantile(np.asarray(values, dtype=np.float64), [0.0, 1.0])
    span = max(hi - lo, 1e-9)
    return np.linspace(lo - margin * span, hi + margin * span, int(n_bins) + 1)


def is_heavy_tailed(values: np.ndarray) -> bool:
    """Whether finite ``values`` span more than :data:`HEAVY_TAIL_RATIO` interquartile
    ranges."""
    lo, q1, q3, hi = np.quantile(np.asarray(values, dtype=np.float64), [0.0, 0.25, 0.75, 1.0])
    return bool(q3 > q1 and hi - lo > HEAVY_TAIL_RATIO * (q3 - q1))


def edges_for_pilot(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Edges of a black-box statistic, decided from finite pilot values before the main run.

    Uniform over the pilot's widened range (:func:`edges_spanning`), unless the pilot is
    heavy-tailed (range > :data:`HEAVY_TAIL_RATIO` interquartile ranges): then the pilot's
    quantiles, so that the bins stay narrow where the outputs are and power does not fall as
    the budget (and with it the pilot's range) grows.
    """
    v = np.asarray(values, dtype=np.float64)
    if is_heavy_tailed(v):
        edges = np.unique(np.quantile(v, np.linspace(0.0, 1.0, int(n_bins) + 1)))
        if edges.size >= 2:
            return edges
    return edges_spanning(v, n_bins)
