"""Finite mixtures of shifted Laplace or Gaussian noise: the output law of A_D on one dataset.

With the other records fixed so that their masks add no noise, A_D(z) = f(z̃(m)) + noise where
only the differing record's mask m is random, so the output law is the finite mixture
Σ_m P[F(z_{i*}) = m] · Noise(f(z̃(m))). This module describes such a mixture; the engine samples
it, the exact-pair integrator (``audit.theory.pair``) integrates it, and the exact likelihood-ratio
attack evaluates its density.

Noise is i.i.d. per output coordinate: Laplace with scale ``b`` (density e^{-|x|/b}/(2b)) or
Gaussian with standard deviation ``sigma``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audit._numeric import round_decimals
from audit.enums import NoiseKind
from audit.noise import noise_of

__all__ = ["NoiseKind", "Mixture", "noise_logpdf", "LOGPDF_CHUNK_FLOATS"]

#: Largest temporary (in floats) a density evaluation builds; larger inputs go in chunks.
LOGPDF_CHUNK_FLOATS = 1 << 19


def noise_logpdf(diff: np.ndarray, noise: NoiseKind, scale: float) -> np.ndarray:
    """log density of one coordinate of the noise at ``diff`` (elementwise).

    Laplace: −|t|/b − ln(2b); Gaussian: −t²/(2σ²) − ln σ − ln(2π)/2. Delegates to
    :meth:`audit.noise.AdditiveNoise.logpdf`.
    """
    return noise_of(noise).logpdf(diff, scale)


@dataclass(frozen=True, eq=False)
class Mixture:
    """Σ_k weights[k] · Noise(shifts[k], scale), noise i.i.d. per coordinate.

    Parameters
    ----------
    weights : array_like, shape (K,)
        Non-negative, summing to 1 (within 1e-9; renormalised).
    shifts : array_like, shape (K,) or (K, dim)
        Component locations. A 1-D array means a scalar output.
    noise : NoiseKind or str
        ``"laplace"`` or ``"gaussian"``.
    scale : float
        Laplace scale b > 0 or Gaussian standard deviation σ > 0.

    Raises
    ------
    ValueError
        On negative weights, weights not summing to 1, mismatched shapes, non-finite shifts or
        a non-positive scale.
    """

    weights: np.ndarray
    shifts: np.ndarray
    noise: NoiseKind
    scale: float

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        s = np.asarray(self.shifts, dtype=np.float64)
        if s.ndim == 1:
            s = s.reshape(-1, 1)
        elif s.ndim != 2:
            raise ValueError(f"shifts must have shape (K,) or (K, dim), got shape {s.shape}")
        if w.size == 0 or w.shape[0] != s.shape[0]:
            raise ValueError(
                f"weights and shifts must have the same non-zero length, got "
                f"{w.shape[0]} weights and {s.shape[0]} shifts"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"weights must be finite and >= 0, got weights={w}")
        total = w.sum()
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"weights must sum to 1, got sum(weights)={total!r}")
        if not np.all(np.isfinite(s)):
            raise ValueError("shifts must be finite")
        scale = float(self.scale)
        if not (np.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be in (0, inf), got scale={self.scale!r}")
        keep = w > 0
        w, s = w[keep] / w[keep].sum(), s[keep]
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "shifts", s)
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise))
        object.__setattr__(self, "scale", scale)

    # ------------------------------------------------------------------ shape
    @property
    def n_components(self) -> int:
        return int(self.weights.shape[0])

    @property
    def dim(self) -> int:
        """Dimension of one output."""
        return int(self.shifts.shape[1])

    @property
    def is_scalar(self) -> bool:
        """True when the output is a scalar (shifts given as a 1-D array or dim == 1)."""
        return self.dim == 1

    @property
    def scalar_shifts(self) -> np.ndarray:
        """Shifts as a 1-D array; only for scalar outputs."""
        if not self.is_scalar:
            raise ValueError(f"scalar_shifts needs a scalar output, got dim={self.dim}")
        return self.shifts[:, 0]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """Every number that defines the law (for digests)."""
        return self.weights, self.shifts, np.array([self.scale])

    def merged(self, decimals: int = 12) -> Mixture:
        """The same law with components of equal (rounded) shift merged."""
        key = round_decimals(self.shifts, decimals)
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        w = np.bincount(inv.reshape(-1), weights=self.weights, minlength=uniq.shape[0])
        shifts = uniq[:, 0] if self.is_scalar else uniq
        return Mixture(w / w.sum(), shifts, self.noise, self.scale)

    # ------------------------------------------------------------- densities
    def _check_points(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if self.is_scalar and (x.ndim <= 1):
            x = x.reshape(-1, 1)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}), got shape {x.shape}")
        return x

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """log density of the mixture at ``x`` (shape (n,) for scalar or (n, dim)).

        Evaluated in row chunks, so the (rows, components, dim) temporaries stay below
        ``LOGPDF_CHUNK_FLOATS`` floats whatever the number of points.
        """
        x = self._check_points(x)
        out = np.empty(x.shape[0])
        logw = np.log(self.weights)[None, :]
        step = max(1, LOGPDF_CHUNK_FLOATS // (self.n_components * self.dim))
        for a in range(0, x.shape[0], step):
            diff = x[a:a + step, None, :] - self.shifts[None, :, :]
            comp = noise_of(self.noise).logpdf_sum(diff, self.scale) + logw
            top = comp.max(axis=1, keepdims=True)  # finite: every component density is > 0
            out[a:a + step] = (top + np.log(np.exp(comp - top).sum(axis=1, keepdims=True)))[:, 0]
        return out

    def pdf(self, x: np.ndarray) -> np.ndarray:
        return np.exp(self.logpdf(x))

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P[X <= x] for scalar outputs."""
        x = np.asarray(x, dtype=np.float64)
        z = (x[..., None] - self.scalar_shifts) / self.scale
        return (noise_of(self.noise).cdf(z) * self.weights).sum(axis=-1)

    def sf(self, x: np.ndarray) -> np.ndarray:
        """P[X > x] for scalar outputs, accurate in the upper tail (the noise's SF)."""
        x = np.asarray(x, dtype=np.float64)
        z = (x[..., None] - self.scalar_shifts) / self.scale
        return (noise_of(self.noise).sf(z) * self.weights).sum(axis=-1)

    # -------------------------------------------------------------- sampling
    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Plain-numpy reference sampler: shape (n,) for scalar outputs, else (n, dim)."""
        rng = np.random.default_rng(rng)
        comp = rng.choice(self.n_components, size=n, p=self.weights)
        loc = self.shifts[comp]
        x = loc + noise_of(self.noise).sample(rng, self.scale, loc.shape)
        return x[:, 0] if self.is_scalar else x
