"""The curves a curve claim states: ordered families of trade-off functions, and fixed curves.

A *curve claim* says that a mechanism is f-DP for f a given trade-off function, or for some
member of an ordered family {f_θ : θ ≥ 0} (larger θ = lower curve = less private). An audit
refutes f when it holds upper confidence bounds (α_hi, β_hi) on the errors of one test with
f(α_hi) > β_hi (or, for the mirrored test, f(β_hi) > α_hi): then the true errors (α, β) lie
strictly below f, so T ≱ f (docs/THEORY.md §8.2). In an ordered family the refuted members
form an interval [0, θ*), and θ* is what an audit reports (with ε_{f_θ*}(δ), the ε of that
member at the audited δ: a statement about the family, not a bound on the mechanism's ε unless
the mechanism is in the family; docs/THEORY.md §8.2 says why a μ is never read as an ε
otherwise).

- :class:`GaussianFamily`: G_μ over μ ([DRS] Def. 2.7); θ* = Φ⁻¹(1 − α_hi) − Φ⁻¹(β_hi) in
  closed form;
- :class:`SubsampledGaussianFamily`: C_{p*}(G_μ) over μ at a fixed p* (the hidden-mask
  Gaussian sum, docs/THEORY.md §7), by [DRS] Eq. 14 in closed form (x* = Φ(−μ/2)) and a
  vectorised bisection in μ;
- :class:`PointsCurve`: one fixed curve given by points (a single member: refuted or not).

:func:`curve_family` builds one from a config's ``[claim]`` keys.

References
----------
[DRS] J. Dong, A. Roth, W. J. Su. Gaussian differential privacy. JRSS-B 84(1), 2022.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from audit._validate import check_delta, check_in_range
from audit.enums import CurveFamily
from audit.theory.tradeoff.conversions import epsilon_for_delta
from audit.theory.tradeoff.curves import GaussianTradeoff
from audit.theory.tradeoff.generic import PiecewiseLinearTradeoff
from audit.theory.tradeoff.subsampling import subsampled_closed_form

__all__ = ["GaussianFamily", "SubsampledGaussianFamily", "PointsCurve", "curve_family",
           "MU_MAX"]

#: The largest μ a family's bisection resolves: a point refuting G_64 lies below every curve
#: an audit of 10^300 calls can tell apart, so θ* is reported as (at least) this value.
MU_MAX = 64.0
_BISECTIONS = 64


def _check_errors(fpr_hi, fnr_hi) -> tuple[np.ndarray, np.ndarray]:
    """Two broadcast float arrays of error bounds in [0, 1] (``fpr_hi``, ``fnr_hi``)."""
    out = []
    for name, v in (("fpr_hi", fpr_hi), ("fnr_hi", fnr_hi)):
        arr = np.asarray(v, dtype=np.float64)
        bad = ~((arr >= 0.0) & (arr <= 1.0))
        if np.any(bad):
            raise ValueError(f"{name} must be in [0, 1], got {name}="
                             f"{arr[bad].reshape(-1)[0]!r}")
        out.append(arr)
    a, b = np.broadcast_arrays(*out)
    return a, b


class _Family:
    """An ordered family f_θ, θ ∈ [0, ``MU_MAX``], pointwise non-increasing in θ."""

    parametric = True
    curve: CurveFamily

    def member(self, theta: float):
        """f_θ, a :class:`~audit.theory.tradeoff.base.TradeoffFunction`."""
        raise NotImplementedError

    def _refuted(self, theta, u, v) -> np.ndarray:
        """Whether f_θ(u) > v, for u ≤ v on a symmetric f_θ (vectorised)."""
        raise NotImplementedError

    def boundary(self, fpr_hi, fnr_hi) -> np.ndarray:
        """θ*: every member θ < θ* has f_θ(α_hi) > β_hi (refuted); 0 when none is.

        A vectorised bisection on the monotone predicate (64 halvings of [0, ``MU_MAX``]),
        returning the lower end of the last bracket, a θ that is itself refuted, so the
        value never exceeds the exact boundary. Both orientations give one answer: every
        member is symmetric, so (α, β) lies below f_θ exactly when (β, α) does.

        Parameters
        ----------
        fpr_hi, fnr_hi : float or array_like in [0, 1]
            Upper confidence bounds on a test's two errors (broadcast together).

        Returns
        -------
        ndarray
            θ* ∈ [0, ``MU_MAX``], the shape of the broadcast inputs.

        Raises
        ------
        ValueError
            If an error bound is outside [0, 1].
        """
        a, b = _check_errors(fpr_hi, fnr_hi)
        u, v = np.minimum(a, b), np.maximum(a, b)
        lo, hi = np.zeros_like(u), np.full_like(u, MU_MAX)
        top = self._refuted(hi, u, v)
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            r = self._refuted(mid, u, v)
            lo, hi = np.where(r, mid, lo), np.where(r, hi, mid)
        out = np.where(self._refuted(np.zeros_like(u), u, v), lo, 0.0)
        return np.where(top, MU_MAX, out)

    def refutes(self, fpr_hi: float, fnr_hi: float, theta: float) -> bool:
        """Whether the error bounds refute member θ (f_θ(α_hi) > β_hi)."""
        theta = check_in_range("theta", theta, 0.0, MU_MAX)
        a, b = _check_errors(fpr_hi, fnr_hi)
        return bool(self._refuted(np.asarray(theta), np.minimum(a, b), np.maximum(a, b)))

    def epsilon(self, theta: float, delta: float) -> float:
        """ε of member f_θ at ``delta`` ([DRS] Prop. 2.12: the smallest ε with δ(ε) ≤ δ).

        Raises
        ------
        ValueError
            If θ ∉ [0, ``MU_MAX``] or δ ∉ [0, 1].
        """
        theta = check_in_range("theta", theta, 0.0, MU_MAX)
        return float(epsilon_for_delta(self.member(theta), check_delta(delta)))


class GaussianFamily(_Family):
    """G_μ over μ ≥ 0 ([DRS] Def. 2.7): G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)."""

    curve = CurveFamily.GAUSSIAN

    def member(self, theta: float) -> GaussianTradeoff:
        return GaussianTradeoff(check_in_range("theta", theta, 0.0, MU_MAX))

    def _refuted(self, theta, u, v):
        with np.errstate(divide="ignore", invalid="ignore"):
            return ndtr(-ndtri(u) - theta) > v

    def boundary(self, fpr_hi, fnr_hi) -> np.ndarray:
        """θ* = Φ⁻¹(1 − α_hi) − Φ⁻¹(β_hi), floored at 0 and capped at ``MU_MAX`` (the closed
        form of the bisection of :meth:`_Family.boundary`)."""
        a, b = _check_errors(fpr_hi, fnr_hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = -ndtri(a) - ndtri(b)
        return np.clip(np.nan_to_num(mu, nan=0.0), 0.0, MU_MAX)

    def to_dict(self) -> dict:
        return {"curve": self.curve.value}

    def __repr__(self) -> str:
        return "GaussianFamily()"


class SubsampledGaussianFamily(_Family):
    """C_{p*}(G_μ) over μ ≥ 0 at a fixed p* ∈ (0, 1] ([DRS] Def. 4.1; docs/THEORY.md §7).

    By [DRS] Eq. 14 with the fixed point x* = Φ(−μ/2) of G_μ and f_p = p G_μ + (1 − p) Id:
    C_p(G_μ)(α) = f_p(α) on [0, x*], x* + f_p(x*) − α on [x*, f_p(x*)], f_p⁻¹(α) beyond.
    For u = min(α, β), v = max(α, β) the curve is above (α, β) exactly when u ≤ x* and
    f_p(u) > v, or u > x* and u + v < x* + f_p(x*) (the curve is symmetric, and a point with
    u > f_p(x*) ≥ x* lies above it).

    Parameters
    ----------
    p_star : float in (0, 1]
        The observation probability of the audited record.

    Raises
    ------
    ValueError
        If p_star ∉ (0, 1].
    """

    curve = CurveFamily.SUBSAMPLED_GAUSSIAN

    def __init__(self, p_star: float) -> None:
        self.p_star = check_in_range("p_star", p_star, 0.0, 1.0, lo_closed=False)

    def member(self, theta: float):
        mu = check_in_range("theta", theta, 0.0, MU_MAX)
        return subsampled_closed_form(GaussianTradeoff(mu), self.p_star)

    def _refuted(self, theta, u, v):
        p = self.p_star
        x = ndtr(-0.5 * theta)
        fpx = p * x + (1.0 - p) * (1.0 - x)
        with np.errstate(divide="ignore", invalid="ignore"):
            fpu = p * ndtr(-ndtri(u) - theta) + (1.0 - p) * (1.0 - u)
        return np.where(u <= x, fpu > v, u + v < x + fpx)

    def to_dict(self) -> dict:
        return {"curve": self.curve.value, "p_star": self.p_star}

    def __repr__(self) -> str:
        return f"SubsampledGaussianFamily(p_star={self.p_star!r})"


class PointsCurve:
    """One fixed trade-off function, the piecewise-linear interpolation of points
    (α_i, β_i): a single member (the verdict is refuted or not; no family ε).

    Parameters
    ----------
    points : sequence of [alpha, beta] pairs
        At least two, α strictly increasing from 0 to 1, β non-increasing and convex in α,
        with β_i ≤ 1 − α_i ([DRS] Def. 2.1, Prop. 2.2: a trade-off function lies below Id).

    Raises
    ------
    ValueError
        Naming ``points``, on anything that is not such a curve.
    """

    parametric = False
    curve = CurveFamily.POINTS

    def __init__(self, points) -> None:
        try:
            arr = np.asarray(points, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"points must be a list of [alpha, beta] pairs, got "
                             f"points={points!r}") from None
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 2:
            raise ValueError(f"points must be at least two [alpha, beta] pairs, got "
                             f"points={points!r}")
        if np.any(arr[:, 1] > 1.0 - arr[:, 0] + 1e-12):
            raise ValueError(f"points must lie on or below beta = 1 - alpha (a trade-off "
                             f"function), got points={points!r}")
        try:
            self.tradeoff = PiecewiseLinearTradeoff(arr[:, 0], arr[:, 1], symmetric=False)
        except ValueError as err:
            raise ValueError(f"points must be a decreasing convex trade-off function: {err}; "
                             f"got points={points!r}") from None
        self.points = tuple((float(a), float(b)) for a, b in arr)

    def margin(self, fpr_hi, fnr_hi) -> np.ndarray:
        """max(f(α_hi) − β_hi, f(β_hi) − α_hi): positive exactly when refuted (either
        orientation of the test: f-DP holds for both orders of a neighbouring pair)."""
        a, b = _check_errors(fpr_hi, fnr_hi)
        return np.maximum(self.tradeoff(a) - b, self.tradeoff(b) - a)

    def refutes(self, fpr_hi: float, fnr_hi: float) -> bool:
        """Whether the error bounds lie strictly below the curve."""
        return bool(self.margin(fpr_hi, fnr_hi) > 0.0)

    def to_dict(self) -> dict:
        return {"curve": self.curve.value, "points": [list(p) for p in self.points]}

    def __repr__(self) -> str:
        return f"PointsCurve(k={len(self.points)})"


def curve_family(curve, *, p_star=None, points=None, prefix: str = "claim"):
    """The family or curve a ``[claim]`` table names.

    Parameters
    ----------
    curve : {"gaussian", "subsampled-gaussian", "points"} or CurveFamily
        Which curve.
    p_star : float in (0, 1], required for (and only for) ``"subsampled-gaussian"``.
    points : list of [alpha, beta] pairs, required for (and only for) ``"points"``.
    prefix : str
        What errors name the keys by (``claim.p_star``).

    Returns
    -------
    GaussianFamily, SubsampledGaussianFamily or PointsCurve

    Raises
    ------
    ValueError
        Naming the key: an unknown curve, a missing or superfluous key, p_star ∉ (0, 1],
        points that are not a decreasing convex trade-off function.
    """
    kind = CurveFamily.parse(curve, f"{prefix}.curve")
    for key, value, needed in (("p_star", p_star, CurveFamily.SUBSAMPLED_GAUSSIAN),
                               ("points", points, CurveFamily.POINTS)):
        if (value is None) == (kind is needed):
            state = "needs" if kind is needed else "takes no"
            raise ValueError(f"{prefix}.curve = {kind.value!r} {state} {prefix}.{key}, got "
                             f"{prefix}.{key}={value!r}")
    if kind is CurveFamily.GAUSSIAN:
        return GaussianFamily()
    if kind is CurveFamily.SUBSAMPLED_GAUSSIAN:
        if isinstance(p_star, bool) or not isinstance(p_star, int | float) \
                or not 0.0 < float(p_star) <= 1.0 or math.isnan(float(p_star)):
            raise ValueError(f"{prefix}.p_star must be in (0, 1], got "
                             f"{prefix}.p_star={p_star!r}")
        return SubsampledGaussianFamily(float(p_star))
    try:
        return PointsCurve(points)
    except ValueError as err:
        raise ValueError(f"{prefix}.{err}") from None
