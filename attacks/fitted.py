"""Black-box distinguishers fitted on the pilot sample only.

* :class:`DensityRatio`: a smoothed-histogram estimate of log p/q (on a 1-D projection for
  vector outputs).
* :class:`LogisticRegression`: a logistic regression (statsmodels) of the side label on output
  features; its linear predictor estimates log p/q up to a constant.

Neither sees the main run, so the regions they induce may be used for a bound on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.ndimage import gaussian_filter1d

from audit._validate import check_in_range, check_positive_int
from audit.protocols import BlackBoxAttack, Pilot, Score
from audit.statistics import LinearProjection, OutputValue, is_heavy_tailed

__all__ = ["DensityRatio", "LogisticRegression"]


def _means(x: np.ndarray) -> np.ndarray:
    """Per-coordinate means over the finite entries (0 for a coordinate with none), so one
    NaN or ±inf in one coordinate does not blind the direction."""
    if np.isfinite(x).all():
        return np.mean(x, axis=0)
    finite = np.isfinite(x)
    counts = finite.sum(axis=0)
    sums = np.where(finite, x, 0.0).sum(axis=0)
    return np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)


def _projection(pilot: Pilot) -> tuple[np.ndarray, str]:
    """Direction separating the pilot means (unit ℓ2 norm) over their finite entries, and a
    note when it had to fall back to the first axis (the means coincide)."""
    diff = _means(pilot.p) - _means(pilot.q)
    norm = np.linalg.norm(diff)
    if not np.isfinite(norm) or norm == 0:
        diff = np.zeros_like(diff)
        diff[0] = 1.0
        return diff, "the pilot means coincide: projected on the first coordinate"
    return diff / norm, ""


@dataclass(frozen=True)
class DensityRatio(BlackBoxAttack):
    """Smoothed-histogram density ratio fitted on the pilot.

    Parameters
    ----------
    n_bins : int
        Bins between the pooled pilot's ``tail`` and ``1 − tail`` quantiles (≥ 4).
    smoothing : float
        Standard deviation, in bins, of the Gaussian smoothing of the counts (≥ 0).
    pseudo_count : float
        Added to every smoothed count before taking logs (> 0), so empty bins stay finite.
    tail : float
        Quantile cut for the fitting range, in [0, 0.1]; outputs outside it are scored as the
        nearest end bin.
    """

    n_bins: int = 200
    smoothing: float = 2.0
    pseudo_count: float = 0.5
    tail: float = 1e-4
    name: ClassVar[str] = "density-ratio"
    #: its scores are output values or linear projections: the engines count them
    engine_counted: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_positive_int(self.n_bins, "n_bins", minimum=4)
        check_in_range("smoothing", self.smoothing, 0.0, np.inf, hi_closed=False)
        check_in_range("pseudo_count", self.pseudo_count, 0.0, np.inf, lo_closed=False,
                       hi_closed=False)
        check_in_range("tail", self.tail, 0.0, 0.1)

    def _fit_1d(self, a: np.ndarray, b: np.ndarray):
        """Score function of one real value: the smoothed log-ratio of the two pilot
        histograms; NaN, +inf and −inf (an implementation may return them) are categories of
        their own, scored by their own smoothed frequency ratio."""
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        fa, fb = np.isfinite(a), np.isfinite(b)
        if fa.all() and fb.all():
            return self._fit_finite(a, b, a.size, b.size)
        finite = self._fit_finite(a[fa], b[fb], a.size, b.size) if (fa.any() or fb.any()) \
            else (lambda t: np.zeros(np.shape(t)))
        special = _category_scores(a, b, self.pseudo_count)

        def score(t):
            t = np.asarray(t, dtype=np.float64)
            out = finite(np.where(np.isfinite(t), t, 0.0))
            out = np.where(np.isnan(t), special["nan"], out)
            out = np.where(np.isposinf(t), special["+inf"], out)
            return np.where(np.isneginf(t), special["-inf"], out)

        return score

    def _fit_finite(self, a: np.ndarray, b: np.ndarray, n_a: int, n_b: int):
        centres, log_ratio = self.finite_table(a, b, n_a, n_b)
        return lambda t: np.interp(np.asarray(t, dtype=np.float64), centres, log_ratio)

    def finite_table(self, a: np.ndarray, b: np.ndarray, n_a: int,
                     n_b: int) -> tuple[np.ndarray, np.ndarray]:
        """(bin centres, smoothed log-ratio at each) of the finite draws ``a`` and ``b`` out
        of ``n_a`` and ``n_b`` draws; the score is their linear interpolation."""
        pooled = np.concatenate([a, b])
        lo, hi = np.quantile(pooled, [self.tail, 1.0 - self.tail])
        if not hi > lo:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, self.n_bins + 1)
        if is_heavy_tailed(pooled):  # bins of equal pilot mass, narrow where the outputs are
            quantiles = np.unique(np.quantile(pooled, np.linspace(self.tail, 1.0 - self.tail,
                                                                  self.n_bins + 1)))
            if quantiles.size >= 3:
                edges = quantiles
        ca = np.histogram(np.clip(a, lo, hi), edges)[0].astype(float)
        cb = np.histogram(np.clip(b, lo, hi), edges)[0].astype(float)
        if self.smoothing > 0:
            ca = gaussian_filter1d(ca, self.smoothing, mode="nearest")
            cb = gaussian_filter1d(cb, self.smoothing, mode="nearest")
        # Normalised by the finite mass when every draw is finite (the histogram's own sum),
        # else by all draws, so finite bins and the special categories share one scale.
        tot_a = ca.sum() if n_a == a.size else n_a
        tot_b = cb.sum() if n_b == b.size else n_b
        log_ratio = np.log((ca + self.pseudo_count) / (tot_a + self.pseudo_count * ca.size))
        log_ratio -= np.log((cb + self.pseudo_count) / (tot_b + self.pseudo_count * cb.size))
        return 0.5 * (edges[:-1] + edges[1:]), log_ratio

    def fit(self, pilot: Pilot) -> Score:
        if pilot.is_scalar:
            return Score(self.name, OutputValue(), self._fit_1d(pilot.p, pilot.q))
        w, note = _projection(pilot)
        with np.errstate(invalid="ignore"):  # inf − inf in a projection is NaN: its own bin
            a, b = pilot.p @ w, pilot.q @ w
        return Score(self.name, LinearProjection(w, 0.0), self._fit_1d(a, b), note=note)


@dataclass(frozen=True)
class LogisticRegression(BlackBoxAttack):
    """Logistic regression of the side (1 = z, 0 = z') on output features (statsmodels Logit).

    Scalar outputs use the standardised features (x, x², |x|), so non-monotone likelihood
    ratios can be captured; vector outputs use the coordinates themselves, so the score is a
    linear statistic the kernel can compute. A fit that fails to converge or separates
    perfectly falls back to an L2-regularised fit.
    """

    alpha_l2: float = 1e-4
    name: ClassVar[str] = "logistic"
    #: its scores are output values or linear projections: the engines count them
    engine_counted: ClassVar[bool] = True

    def _features(self, x: np.ndarray, centre: float, spread: float) -> np.ndarray:
        u = (np.asarray(x, dtype=np.float64).reshape(-1) - centre) / spread
        return np.column_stack([np.ones_like(u), u, u * u, np.abs(u)])

    def _logit(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray | None, str]:
        """Coefficients of the logistic fit (None if even the regularised fit fails) and a
        note saying which fallback was used."""
        import warnings

        import statsmodels.api as sm  # imported here: only this attack needs statsmodels
        from statsmodels.tools.sm_exceptions import ConvergenceWarning, PerfectSeparationWarning

        failures = (ConvergenceWarning, PerfectSeparationWarning, np.linalg.LinAlgError,
                    ValueError, ZeroDivisionError, FloatingPointError)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            warnings.simplefilter("error", PerfectSeparationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                params = np.asarray(sm.Logit(y, X).fit(disp=0, maxiter=200).params)
                if np.all(np.isfinite(params)):
                    return params, ""
            except failures:
                pass
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", PerfectSeparationWarning)
            try:
                res = sm.Logit(y, X).fit_regularized(disp=0, alpha=self.alpha_l2, L1_wt=0.0,
                                                     maxiter=500)
                params = np.asarray(res.params)
                if np.all(np.isfinite(params)):
                    return params, ("the maximum-likelihood fit failed (separable, collinear "
                                    "or constant features): L2-regularised fit")
            except failures:
                pass
        return None, "the logistic fit failed"

    def fit(self, pilot: Pilot) -> Score:
        a, b = pilot.p, pilot.q
        if pilot.is_scalar:
            return self._fit_scalar(np.asarray(a, float), np.asarray(b, float))
        keep_a, keep_b = np.isfinite(a).all(axis=1), np.isfinite(b).all(axis=1)
        dropped = int((~keep_a).sum() + (~keep_b).sum())
        y = np.concatenate([np.ones(int(keep_a.sum())), np.zeros(int(keep_b.sum()))])
        X = np.column_stack([np.ones(len(y)), np.concatenate([a[keep_a], b[keep_b]])])
        beta, note = self._logit(X, y) if keep_a.any() and keep_b.any() else (None, "")
        if dropped:
            note = "; ".join(filter(None, [note, f"{dropped} pilot outputs with non-finite "
                                           "coordinates left out of the fit"]))
        if beta is None:  # the mean-difference direction: never fails
            w, why = _projection(pilot)
            note = "; ".join(filter(None, [note, "fell back to the mean-difference "
                                           "direction", why]))
            return Score(self.name, LinearProjection(w, 0.0), note=note)
        return Score(self.name, LinearProjection(beta[1:].copy(), float(beta[0])), note=note)

    def _fit_scalar(self, a: np.ndarray, b: np.ndarray) -> Score:
        """(x, x², |x|) over the finite outputs; NaN, −inf and +inf scored by their own
        frequency ratio (as categories)."""
        fa, fb = np.isfinite(a), np.isfinite(b)
        pooled = np.concatenate([a[fa], b[fb]])
        centre = float(np.median(pooled)) if pooled.size else 0.0
        spread = (float(np.std(pooled)) or 1.0) if pooled.size else 1.0
        y = np.concatenate([np.ones(int(fa.sum())), np.zeros(int(fb.sum()))])
        beta, note = (self._logit(self._features(pooled, centre, spread), y)
                      if fa.any() and fb.any() else (None, "no finite pilot outputs"))
        if beta is None:
            beta = np.zeros(4)
            note = note or "the logistic fit failed"
        if fa.all() and fb.all():  # no special values: the fitted curve everywhere
            return Score(self.name, OutputValue(),
                         lambda v: self._features(v, centre, spread) @ beta, note=note)
        special = _category_scores(a, b)

        def score(v):
            v = np.asarray(v, dtype=np.float64)
            out = self._features(np.where(np.isfinite(v), v, centre), centre, spread) @ beta
            for name, test in _CATEGORIES:
                out = np.where(test(v), special[name], out)
            return out

        return Score(self.name, OutputValue(), score, note=note)


#: The special values an implementation may release, each scored as a category.
_CATEGORIES = (("nan", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf))


def _category_scores(a: np.ndarray, b: np.ndarray, pc: float = 0.5) -> dict[str, float]:
    """log of the smoothed frequency ratio of each special value between the two sides."""
    return {name: float(np.log((np.count_nonzero(test(a)) + pc) / (a.size + pc))
                        - np.log((np.count_nonzero(test(b)) + pc) / (b.size + pc)))
            for name, test in _CATEGORIES}
