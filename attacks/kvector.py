"""A score for k releases from one table: each side's k-vector fitted as a latent location
mixture of i.i.d. noise, scored by the two fitted mixtures' log-likelihood ratio.

**The structure it uses.** k releases of one query from one masked table (shared masks,
docs/THEORY.md §9.1) read the same masked dataset: given the dataset's masked value θ (the
query on the table the mask left), the k outputs are i.i.d. θ + N_j, N_j the release's noise.
So on each side the k-vector's law is a finite mixture over the latent states of k-fold
products, p(y) = Σ_g w_g Π_j f(y_j − θ_g), the two sides with the same noise f and their own
mixing laws w^P and w^Q (the model's own law of such releases, :func:`audit.laws.
shared_releases`, has this form, with one atom per distinct shift of the differing record).
The exact log-likelihood ratio ln p/q is then not additive over the coordinates (the
additive and isotonic scores sum per-coordinate ratios, which is exact only for a product
law, one latent state): it saturates jointly, on the orthant where every coordinate lies
beyond the atoms (the region that carries a Laplace release's pure ε), and the coordinates
are exchangeable.

**The fit** (on the pilot, both sides at once), a semi-parametric mixture:

- the noise: the exponential-power (generalised normal) family f(x) ∝ exp(−|x/s|^β), which
  holds the Laplace (β = 1) and the Gaussian (β = 2) releases exactly and lies between or
  beyond them for others; the shape β is chosen from :data:`SHAPES` by the fitted
  log-likelihood (each shape's fit a short run first, the best one then run to convergence),
  the scale s by maximum likelihood, both shared by the two sides (one release, two datasets);
- the latent law of each side: a nonparametric maximum-likelihood mixing law on a grid of
  locations ([KW56]; its EM is [L78]'s, with the scale updated in closed form at each step,
  an ECM), the grid spanning the pooled pilot's per-call medians.

A mixture of location atoms is a few numbers once the noise is known (hence this model rather
than a nonparametric per-coordinate density inside a latent-class mixture: with the noise
several times wider than the gaps between the latent states, as in a sum over incomplete
records, nonparametric classes are not identifiable from a pilot of 10⁴ calls, while a
location mixture of a known family is the classical deconvolution problem).

**The score** of a call y is ln Σ_g w^P_g Π_j f(y_j − θ_g) − ln Σ_g w^Q_g Π_j f(y_j − θ_g)
(:class:`LatentMixtureLogRatio`), computed in log space. A call with a NaN or ±inf coordinate
is scored by the smoothed ratio of how often each side released one. The model fits any
vector (and a scalar: k = 1, a deconvolved density ratio); where the coordinates are not
exchangeable it is misspecified and only loses power, which ``auto`` measures on held-out
pilot calls (:func:`looks_exchangeable` keeps it out of ``auto``'s candidates where the
pilot already shows it). Too few finite pilot calls fall back on
:class:`attacks.additive.AdditiveDensityRatio`, and the note says so. Black box only:
implementation audits count the projection in numpy.

References
----------
[KW56] J. Kiefer, J. Wolfowitz, *Consistency of the maximum likelihood estimator in the
presence of infinitely many incidental parameters*, Ann. Math. Statist. 27(4), 1956.
[L78] N. Laird, *Nonparametric maximum likelihood estimation of a mixing distribution*,
J. Amer. Statist. Assoc. 73(364), 1978.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import gammaln, logsumexp

from attacks.additive import AdditiveDensityRatio
from audit._validate import check_in_range, check_positive_int
from audit.protocols import BlackBoxAttack, Pilot, Score

__all__ = ["LatentMixture", "LatentMixtureLogRatio", "fit_latent_mixture",
           "looks_exchangeable", "SHAPES"]

#: the exponential-power shapes β tried (1: Laplace, 2: Gaussian)
SHAPES = (0.5, 1.0, 1.5, 2.0, 3.0)
#: fewest finite pilot calls per side for a mixture fit
MIN_CALLS = 20
#: most entries (rows × atoms × coordinates) of a block of distances to the grid (32 MiB)
BLOCK_FLOATS = 1 << 22
#: atoms whose weight is below this on both sides are dropped from the score
MIN_WEIGHT = 1e-9


def _rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(-1, 1) if x.ndim == 1 else x


def _distances(y: np.ndarray, locations: np.ndarray, shape: float) -> np.ndarray:
    """D[i, g] = Σ_j |y_ij − θ_g|^β, in blocks of at most :data:`BLOCK_FLOATS` entries."""
    out = np.empty((y.shape[0], locations.size))
    rows = max(1, BLOCK_FLOATS // (locations.size * y.shape[1]))
    for s in range(0, y.shape[0], rows):
        diff = np.abs(y[s:s + rows, None, :] - locations[None, :, None])
        if shape == 2.0:
            diff *= diff
        elif shape != 1.0:
            diff **= shape
        out[s:s + rows] = diff.sum(axis=2)
    return out


def _log_norm(shape: float, scale: float) -> float:
    """ln of the exponential-power density's normaliser β / (2 s Γ(1/β))."""
    return float(np.log(shape) - np.log(2.0 * scale) - gammaln(1.0 / shape))


@dataclass(frozen=True)
class _Fit:
    log_w: tuple[np.ndarray, np.ndarray]
    scale: float
    loglik: float


def _ecm(dist: np.ndarray, on_p: np.ndarray, shape: float, dim: int, iterations: int,
         tol: float, start: _Fit | None = None) -> _Fit:
    """EM of the two sides' mixing weights on the grid with the scale's closed-form update
    (an ECM): ``dist`` the rows' distances to the grid (:func:`_distances`), ``on_p`` which
    rows are P's. Stops when the mean log-likelihood per call moves by less than ``tol``."""
    n, m = dist.shape
    sides = (on_p, ~on_p)
    # s^β at least a millionth of the spread's (calls that sit on an atom: a degenerate fit)
    floor = 1e-6 * max(shape * float(dist.mean()) / dim, 1e-300)
    if start is None:
        t = shape * float(dist.min(axis=1).mean()) / dim  # s^β of the nearest atom
        log_w = (np.full(m, -np.log(m)), np.full(m, -np.log(m)))
    else:
        t, log_w = start.scale ** shape, start.log_w
    last = -np.inf
    for _ in range(iterations):
        t = max(t, floor)
        a = -dist / t
        a[on_p] += log_w[0]
        a[~on_p] += log_w[1]
        top = a.max(axis=1, keepdims=True)
        r = np.exp(a - top)
        z = r.sum(axis=1, keepdims=True)
        r /= z
        loglik = float((top + np.log(z)).sum()) / n + dim * _log_norm(shape, t ** (1 / shape))
        with np.errstate(divide="ignore"):
            log_w = tuple(np.log(r[s].mean(axis=0)) for s in sides)
        t = shape * float((r * dist).sum()) / (n * dim)
        if loglik - last < tol:
            break
        last = loglik
    return _Fit(log_w, max(t, floor) ** (1 / shape), loglik)


@dataclass(frozen=True, eq=False)
class LatentMixtureLogRatio:
    """ln Σ_g w^P_g Π_j f(u_j − θ_g) − ln Σ_g w^Q_g Π_j f(u_j − θ_g) with u = (y − centre)/unit
    and f(x) ∝ exp(−|x/s|^β) (module docstring); a row with a NaN or ±inf coordinate
    projects to ``nonfinite``. Black box only: counted in numpy.

    Parameters
    ----------
    locations : array_like
        The atoms θ_g (standardised units), finite, shape (m,), m ≥ 1.
    log_weights_p, log_weights_q : array_like
        ln w^P and ln w^Q, shape (m,), each < +inf with at least one finite entry (−inf: no
        weight).
    shape, scale : float
        β > 0 and s > 0 of the noise (standardised units).
    centre, unit : float
        The standardisation: centre finite, unit > 0.
    dim : int
        k, the coordinates of a call (≥ 1).
    nonfinite : float
        The score of a row with a non-finite coordinate (finite).
    """

    locations: np.ndarray
    log_weights_p: np.ndarray
    log_weights_q: np.ndarray
    shape: float
    scale: float
    centre: float
    unit: float
    dim: int
    nonfinite: float = 0.0

    def __post_init__(self) -> None:
        loc = np.asarray(self.locations, dtype=np.float64).reshape(-1)
        if loc.size == 0 or not np.all(np.isfinite(loc)):
            raise ValueError(f"locations must be ≥ 1 finite numbers, got {loc}")
        for name in ("log_weights_p", "log_weights_q"):
            w = np.asarray(getattr(self, name), dtype=np.float64).reshape(-1)
            if w.shape != loc.shape or np.any(np.isnan(w) | (w == np.inf)) \
                    or not np.isfinite(w).any():
                raise ValueError(f"{name} must be {loc.size} log-weights (< +inf, one finite at "
                                 f"least), got {w}")
            object.__setattr__(self, name, w)
        for name in ("shape", "scale", "unit"):
            check_in_range(name, getattr(self, name), 0.0, np.inf, lo_closed=False,
                           hi_closed=False)
        check_in_range("centre", self.centre, -np.inf, np.inf, lo_closed=False,
                       hi_closed=False)
        check_in_range("nonfinite", self.nonfinite, -np.inf, np.inf, lo_closed=False,
                       hi_closed=False)
        object.__setattr__(self, "dim", check_positive_int(self.dim, "dim"))
        object.__setattr__(self, "locations", loc)

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        x = _rows(x)
        if x.shape[1] != self.dim:
            raise ValueError(f"LatentMixtureLogRatio needs outputs of dim {self.dim}, got "
                             f"shape {x.shape}")
        out = np.full(x.shape[0], float(self.nonfinite))
        ok = np.isfinite(x).all(axis=1)
        if ok.any():
            u = (x[ok] - self.centre) / self.unit
            a = -_distances(u, self.locations, self.shape) / self.scale ** self.shape
            out[ok] = logsumexp(a + self.log_weights_p, axis=1) \
                - logsumexp(a + self.log_weights_q, axis=1)
        return out

    def to_dict(self) -> dict:
        h = hashlib.sha256()
        for arr in (self.locations, self.log_weights_p, self.log_weights_q,
                    np.array([self.shape, self.scale, self.centre, self.unit, self.nonfinite])):
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        return {"kind": "latent-mixture", "dim": self.dim, "atoms": int(self.locations.size),
                "shape": float(self.shape), "fit": h.hexdigest()[:16]}


def _standardisation(y: np.ndarray) -> tuple[float, float]:
    """(centre, unit): the pooled median and the within-call spread (IQR/1.349 of the
    deviations from each call's median; the pooled IQR for one coordinate), so the noise,
    not the latent spread, sets the unit."""
    centre = float(np.median(y))
    dev = (y - np.median(y, axis=1, keepdims=True)) if y.shape[1] > 1 else y - centre
    q1, q3 = np.quantile(dev, [0.25, 0.75])
    unit = float(q3 - q1) / 1.349
    if not unit > 0:
        unit = float(np.std(y)) or 1.0
    return centre, unit


def _grid(u: np.ndarray, size: int) -> np.ndarray:
    """``size`` locations evenly over the 0.1 %–99.9 % quantiles of the per-call medians."""
    med = np.median(u, axis=1)
    lo, hi = np.quantile(med, [0.001, 0.999])
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, size)


def fit_latent_mixture(a: np.ndarray, b: np.ndarray, *, atoms: int = 32,
                       shapes: tuple = SHAPES, iterations: int = 150, tol: float = 1e-6,
                       screen: int = 10) -> tuple[LatentMixtureLogRatio, float]:
    """Fit the latent location mixture on the finite calls ``a`` (P) and ``b`` (Q), each
    (n, k) with n ≥ 1 (module docstring): each shape of ``shapes`` is run ``screen`` ECM
    steps, the one with the largest log-likelihood is run on to ``iterations`` steps or
    until the mean log-likelihood per call moves by less than ``tol``.

    Returns
    -------
    (projection, loglik)
        The score's projection (``nonfinite`` 0) and the fit's mean log-likelihood per call
        (standardised units).
    """
    y = np.concatenate([a, b])
    on_p = np.arange(y.shape[0]) < a.shape[0]
    centre, unit = _standardisation(y)
    u = (y - centre) / unit
    locations = _grid(u, atoms)
    best = None
    for shape in shapes:
        dist = _distances(u, locations, shape)
        fit = _ecm(dist, on_p, shape, y.shape[1], screen, tol)
        if best is None or fit.loglik > best[1].loglik:
            best = (shape, fit, dist)
    shape, fit, dist = best
    fit = _ecm(dist, on_p, shape, y.shape[1], iterations, tol, start=fit)
    keep = np.maximum(*fit.log_w) >= np.log(MIN_WEIGHT)
    proj = LatentMixtureLogRatio(locations[keep], fit.log_w[0][keep], fit.log_w[1][keep],
                                 shape, fit.scale, centre, unit, y.shape[1])
    return proj, fit.loglik


def looks_exchangeable(pilot: Pilot, alpha: float = 1e-3) -> bool:
    """Whether the pilot's coordinates look exchangeable: on each side, each coordinate's
    values and the next one's (cyclically) pass a two-sample Kolmogorov–Smirnov comparison at
    level ``alpha`` (Bonferroni over the coordinates and sides; the asymptotic critical value
    √(−ln(α′/2)/2)·√(2/n), conservative for coordinates made dependent by a shared latent
    state). Equal marginals are what exchangeable coordinates must have; the held-out
    comparison of ``auto`` judges the rest. Calls with a non-finite coordinate are left out; a
    scalar, or a side with fewer than :data:`MIN_CALLS` finite calls, is not exchangeable."""
    if pilot.is_scalar:
        return False
    k = pilot.dim
    critical = np.sqrt(-np.log(alpha / (4 * k)) / 2)  # α′ = α / (2 sides × k pairs)
    for x in (pilot.p, pilot.q):
        x = _rows(x)
        x = np.sort(x[np.isfinite(x).all(axis=1)], axis=0)
        n = x.shape[0]
        if n < MIN_CALLS:
            return False
        for j in range(k):
            a, b = x[:, j], x[:, (j + 1) % k]
            grid = np.concatenate([a, b])
            gap = np.abs(np.searchsorted(a, grid, side="right")
                         - np.searchsorted(b, grid, side="right")).max() / n
            if gap > critical * np.sqrt(2.0 / n):
                return False
    return True


@dataclass(frozen=True)
class LatentMixture(BlackBoxAttack):
    """Score = the log-likelihood ratio of the two sides' fitted latent location mixtures of
    i.i.d. noise (module docstring).

    Parameters
    ----------
    atoms : int
        Grid locations of the latent law (≥ 2).
    iterations : int
        Most ECM steps of the chosen noise shape (≥ 1).
    pseudo_count : float
        Added to each side's count of non-finite calls (> 0).
    """

    atoms: int = 32
    iterations: int = 150
    pseudo_count: float = 0.5
    name: ClassVar[str] = "kvector"

    def __post_init__(self) -> None:
        check_positive_int(self.atoms, "atoms", minimum=2)
        check_positive_int(self.iterations, "iterations")
        check_in_range("pseudo_count", self.pseudo_count, 0.0, np.inf, lo_closed=False,
                       hi_closed=False)

    def fit(self, pilot: Pilot) -> Score:
        a, b = _rows(pilot.p), _rows(pilot.q)
        fa, fb = np.isfinite(a).all(axis=1), np.isfinite(b).all(axis=1)
        if fa.sum() < MIN_CALLS or fb.sum() < MIN_CALLS:
            fallback = AdditiveDensityRatio().fit(pilot)
            note = (f"fewer than {MIN_CALLS} finite pilot calls on a side: fell back to the "
                    f"additive density ratio")
            return Score(self.name, fallback.projection, fallback.transform,
                         note="; ".join(filter(None, [note, fallback.note])))
        proj, _ = fit_latent_mixture(a[fa], b[fb], atoms=self.atoms,
                                     iterations=self.iterations)
        note = ""
        if not (fa.all() and fb.all()):
            pc = self.pseudo_count
            nonfinite = float(np.log(((~fa).sum() + pc) / (fa.size + pc))
                              - np.log(((~fb).sum() + pc) / (fb.size + pc)))
            proj = LatentMixtureLogRatio(proj.locations, proj.log_weights_p,
                                         proj.log_weights_q, proj.shape, proj.scale,
                                         proj.centre, proj.unit, proj.dim, nonfinite)
            note = "calls with a non-finite coordinate: scored by how often each side released one"
        return Score(self.name, proj, note=note)
