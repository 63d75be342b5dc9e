"""What the Monte Carlo engine counts: one number per output, in bins fixed before the run.

A :class:`Statistic` is a *projection* of each raw output x (a scalar, or a vector of the
query's output dimension) to one real number, plus fixed histogram ``edges``:

- :class:`OutputValue`: the output itself (scalar outputs only);
- :class:`ExactLLR`: ln p(x) − ln q(x) for the two output laws P = A_D(z), Q = A_D(z')
  (white box: the laws are part of the projection);
- :class:`LinearProjection`: w·x + c.

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

from audit.laws import Law, ProductMixture, SubsetMixture
from audit.mixture import Mixture

__all__ = [
    "OutputValue",
    "ExactLLR",
    "LinearProjection",
    "Projection",
    "Statistic",
    "check_edges",
    "bin_representatives",
    "histogram",
    "bin_indices",
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
    NaN): ``numpy.searchsorted(edges, v, side="right")``, and len(edges) + 1 for NaN; with
    ``infinities``, len(edges) + 2 for −inf and len(edges) + 3 for +inf."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    idx = np.searchsorted(edges, v, side="right")
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


Projection = OutputValue | ExactLLR | LinearProjection


@dataclass(frozen=True, eq=False)
class Statistic:
    """A projection and the fixed bin edges its values are counted in.

    Parameters
    ----------
    projection : OutputValue, ExactLLR or LinearProjection
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
        if not isinstance(self.projection, OutputValue | ExactLLR | LinearProjection):
            raise ValueError(
                "projection must be an OutputValue, ExactLLR or LinearProjection, got "
                f"projection={self.projection!r}"
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

    def bin_scores(self, score) -> np.ndarray:
        """The score of every bin (an attack's :class:`audit.protocols.Score`), evaluated at
        :func:`bin_representatives`; a NaN score becomes −inf (that bin then joins only the
        regions {score ≤ t}, a choice made before any data, so it is valid)."""
        with np.errstate(invalid="ignore"):
            s = score.of_projected(bin_representatives(self.edges, self.infinities))
        return np.where(np.isnan(s), -np.inf, s)

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
