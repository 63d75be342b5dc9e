"""The exact worst case of a histogram of one categorical column under record-level
missingness (docs/THEORY.md §10.9, **derived in this project**).

Every bin gets independent Laplace (b) or Gaussian (σ) noise, k times; with ``na_category``
the histogram also counts the missing entries in a bin. Only three bins move between a pair
of records: the NA bin, the numerator's category a and the denominator's category b. With
s, t, r the k-fold sums of one unit's log density ratio in those bins (independent under the
law with the record nowhere), every hockey-stick divergence of the setting is

    D_γ = E[(A e^s + B e^t − C e^r)_+],   (a, b): A = (1 − q)(1 − γ), B = q, C = γq;
                                          (a, NA): A = 1 − q − γ, B = q, C = 0;
                                          (NA, a): A = 1 − γ(1 − q), B = 0, C = γq

(without the NA bin, s ≡ 0). Certificate: the integrand is monotone in each variable, so each
law moved up and down onto a grid gives an upper and a lower bound (a coupling moves every
value one way); the Gaussian expectation over t and the Gaussian pairs (a, NA), (NA, a) are in
closed form. δ = 0 is in closed form. Fresh masks at δ > 0: each pair's one-release loss law
moved up and down on a grid and composed (:mod:`audit.theory.histogram_fresh`), the upper end
capped by C_{p*}(f)^{⊗k}.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from audit._numeric import log1p_c_expm1
from audit._validate import check_count, check_delta, check_in_range, check_positive
from audit.enums import MaskRegime, NoiseKind
from audit.theory.grid_expectation import (
    POINT,
    GridLaw,
    coarsen,
    expectation,
    power,
    solve_epsilon,
    window,
)
from audit.theory.pld import MAX_PLD_RELEASES

__all__ = ["HistogramSetting", "histogram_worst_case", "pair_delta_bracket", "PAIRS"]

#: the three pairs of records of a histogram setting (numerator, denominator)
PAIRS = (("a", "b"), ("a", "NA"), ("NA", "a"))
#: standard deviations of a Gaussian loss kept on the grid beyond both tilts (tail < 1e-32)
_Z = 12.0
#: mass of a Laplace k-fold law left outside the grid's window on each side
_TAIL = 1e-30
#: finest grid tried (points of one variable's fine law)
_MAX_FINE = 4_000_000
#: largest |loss| a release may reach (e^loss stays a finite double)
_LOSS_MAX = 600.0
#: largest k/σ² of a Gaussian histogram at δ > 0: v/2 + _Z·√v = _LOSS_MAX
_GAUSSIAN_V_MAX = (math.sqrt(_Z ** 2 + 2 * _LOSS_MAX) - _Z) ** 2


@dataclass(frozen=True)
class HistogramSetting:
    """A histogram of one categorical column released ``releases`` times.

    Parameters
    ----------
    noise : NoiseKind or str
        ``"laplace"`` or ``"gaussian"``, independent in every bin and release.
    scale : float
        b (Laplace) or σ (Gaussian) of every bin, > 0.
    observation : float
        q ∈ (0, 1]: the probability that the record's entry is observed.
    releases : int
        k ≥ 1.
    masks : MaskRegime or str
        ``"shared"`` (one table) or ``"fresh"`` (missingness redrawn per release).
    na_category : bool
        Whether the histogram has a bin counting the missing entries.
    """

    noise: NoiseKind
    scale: float
    observation: float
    releases: int = 1
    masks: MaskRegime = MaskRegime.SHARED
    na_category: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise, "noise"))
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))
        object.__setattr__(self, "observation", check_in_range(
            "observation", self.observation, 0.0, 1.0, lo_closed=False))
        object.__setattr__(self, "releases", check_count(self.releases, "releases"))
        object.__setattr__(self, "masks", MaskRegime.parse_fixed(self.masks, "masks"))
        if not isinstance(self.na_category, bool):
            raise ValueError(f"na_category must be true or false, got na_category="
                             f"{self.na_category!r}")


# ----------------------------------------------------------------------------- laws
@dataclass(frozen=True)
class _Law:
    """One loss variable's law moved onto grid points: ``up`` and ``down`` stochastically
    above and below the true law; ``hi_mass`` and ``hi_tilted`` the mass and E[e^X; X above
    the window] of the upper tail that ``up`` leaves out (``down`` moves it down to the
    window's end, and both keep the lower tail: ``up`` at the window's start, ``down`` at −∞).
    """

    up: GridLaw
    down: GridLaw
    hi_mass: float
    hi_tilted: float
    mean_exp: float  # E[e^X] of ``up`` plus its tail (≥ the true E[e^X] = 1)
    variance: float | None = None  # X ~ N(−v/2, v) exactly (Gaussian), else None


_POINT = _Law(POINT, POINT, 0.0, 0.0, 1.0)


def _gaussian_law(v: float, h: float) -> _Law:
    """X ~ N(−v/2, v) (the k-fold Gaussian loss, v = k/σ²) on a grid of step h; cell masses
    from the distribution function below the median and the survival function above it, so
    each is accurate relative to itself."""
    sd = math.sqrt(v)
    lo, hi = -v / 2 - _Z * sd, v / 2 + _Z * sd
    n = max(int(math.ceil((hi - lo) / h)), 2)
    edges = np.linspace(lo, hi, n + 1)
    z = (edges + v / 2) / sd
    cells = np.where(z[1:] <= 0, np.diff(special.ndtr(z)), -np.diff(special.ndtr(-z)))
    below, above = float(special.ndtr(z[0])), float(special.ndtr(-z[-1]))
    up_m = cells.copy()
    up_m[0] += below  # the lower tail, moved up to the first cell's right end
    down_m = np.concatenate([[below], cells])
    down_m[-1] += above  # the upper tail moved down to the last edge
    up = GridLaw.exact(edges[1:], up_m)
    down = GridLaw.exact(np.concatenate([[-np.inf], edges[:-1]]), down_m)
    hi_tilted = float(special.ndtr(-(hi - v / 2) / sd))  # e^X tilts N(−v/2, v) to N(v/2, v)
    return _Law(up, down, above, hi_tilted, float(up.tilted.sum()) + hi_tilted, v)


def _laplace_step(b: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One release's ℓ = (|x| − |x − 1|)/b, x ~ Lap(0, b), on the grid −1/b + 2j/(bn),
    j = 0..n: (grid, masses moved up, masses moved down). Atoms: P(ℓ = −1/b) = 1/2,
    P(ℓ = 1/b) = e^{−1/b}/2; between, x = (bℓ + 1)/2 ∈ (0, 1) with density e^{−x/b}/(2b)."""
    grid = -1 / b + 2 * np.arange(n + 1) / (b * n)
    x = np.arange(n + 1) / n  # x at the grid points
    cdf = -0.5 * np.expm1(-x / b)  # P(0 < x' ≤ x)
    cells = np.diff(cdf)
    up = np.zeros(n + 1)
    down = np.zeros(n + 1)
    up[0] = down[0] = 0.5
    up[n] += 0.5 * math.exp(-1 / b)
    down[n] += 0.5 * math.exp(-1 / b)
    up[1:] += cells
    down[:-1] += cells
    return grid, up, down


def k_fold(points: np.ndarray, masses: np.ndarray, k: int, start: float,
           step: float) -> GridLaw:
    """The k-fold sum of a law on the grid ``points`` (step ``step``): its masses and its
    tilted masses each convolved by FFT (:func:`audit.theory.grid_expectation.power`), on the
    grid ``start`` + j·step."""
    m = power(masses, k)
    mt = power(masses * np.exp(points), k)
    return GridLaw.reconciled(start + step * np.arange(m.size), m, mt)


def _laplace_law(b: float, k: int, n: int, tail: float) -> _Law:
    """The k-fold sum of ℓ with each release's value moved on a grid of n cells, each law
    cut to its window (:func:`audit.theory.grid_expectation.coarsen` on its own grid)."""
    grid, up1, down1 = _laplace_step(b, n)
    step = 2 / (b * n)
    up, down = k_fold(grid, up1, k, -k / b, step), k_fold(grid, down1, k, -k / b, step)
    j = window(up, tail)[1]  # the upper tail that the cut ``up`` leaves out
    hi_mass, hi_tilted = float(up.masses[j + 1:].sum()), float(up.tilted[j + 1:].sum())
    up_law = coarsen(up, True, step, tail)
    return _Law(up_law, coarsen(down, False, step, tail), hi_mass, hi_tilted,
                float(up_law.tilted.sum()) + hi_tilted)


# ----------------------------------------------------------------------- expectation
def _coefficients(pair: tuple[str, str], gamma: float, q: float) -> tuple[float, float, float]:
    if pair == ("a", "b"):
        return (1 - q) * (1 - gamma), q, gamma * q
    if pair == ("a", "NA"):
        return 1 - q - gamma, q, 0.0
    return 1 - gamma * (1 - q), 0.0, gamma * q


@dataclass(frozen=True)
class _Laws:
    """The laws of one setting's loss variables: ``s`` the NA bin's (a point at 0 without
    that bin), ``t`` a category bin's (t and r)."""

    s: _Law
    t: _Law
    step: float  # the coarse grid of s and r in the pair (a, b)
    tail: float  # the mass its window leaves out on each side


def pair_delta_bracket(laws: _Laws, pair: tuple[str, str], epsilon: float,
                       q: float) -> tuple[float, float]:
    """(lower, upper) bounds on D_{e^ε}(P ‖ Q) of ``pair`` (one of :data:`PAIRS`)."""
    gamma = math.exp(epsilon)
    A, B, C = _coefficients(pair, gamma, q)
    s, t = laws.s, laws.t
    if t.variance is not None and s.variance is not None and pair != ("a", "b"):
        value = _gaussian_one_bin_move(pair, gamma, q, 2 * t.variance)
        return max(value - 1e-15, 0.0), min(value + 1e-15, 1.0)

    def pick(law: _Law, up: bool, coarse: bool) -> GridLaw:
        g = law.up if up else law.down
        if coarse and C > 0 and B > 0 and g.points.size > 1:  # (a, b): s and r coarse
            return coarsen(g, up, laws.step, laws.tail)
        return g

    s_up = A > 0  # the integrand rises with s when A > 0
    point = _POINT.up
    v = t.variance
    upper, e1 = expectation(A, B, C, pick(s, s_up, True), pick(t, True, False),
                             pick(t, False, True) if C > 0 else point, v)
    # the tails the upper bound's laws leave out: t above its window (none when t is
    # exact), s above it when A > 0
    upper += e1
    if v is None:
        upper += B * t.hi_tilted + t.hi_mass * max(A, 0.0) * s.mean_exp
    if s_up:
        upper += A * s.hi_tilted + s.hi_mass * B * t.mean_exp
    lower, e2 = expectation(A, B, C, pick(s, not s_up, True), pick(t, False, False),
                             pick(t, True, True) if C > 0 else point, v)
    return max(lower - e2, 0.0), min(upper, 1.0)


def _gaussian_hockey(mu: float, gamma: float) -> float:
    """D_γ(N(μ, 1) ‖ N(0, 1)) for any γ > 0 (γ < 1 through 1 − γ + γ D_{1/γ})."""
    if gamma < 1:
        return 1 - gamma + gamma * _gaussian_hockey(mu, 1 / gamma)
    e = math.log(gamma)
    return float(special.ndtr(-e / mu + mu / 2) - gamma * special.ndtr(-e / mu - mu / 2))


def _gaussian_one_bin_move(pair, gamma: float, q: float, mu2: float) -> float:
    """D_γ of (a, NA) or (NA, a) with the NA bin, Gaussian: the record moves between the NA
    bin and bin a, a shift of μ = √(mu2) (μ² = 2k/σ²) between A (the record at a) and N (at
    NA). (a, NA): ((1 − q)N + qA − γN)_+ = q(A − γ″N)_+, γ″ = 1 + (γ − 1)/q; (NA, a):
    (xN − γqA)_+ = x(N − (γq/x)A)_+, x = 1 − γ(1 − q) (0 if x ≤ 0)."""
    mu = math.sqrt(mu2)
    if pair == ("a", "NA"):
        return q * _gaussian_hockey(mu, 1 + (gamma - 1) / q)
    x = 1 - gamma * (1 - q)
    return 0.0 if x <= 0 else x * _gaussian_hockey(mu, gamma * q / x)


def pure_epsilon(setting: HistogramSetting, pair: tuple[str, str]) -> float:
    """ε at δ = 0 of ``pair`` (Laplace; Gaussian: ∞): the largest log ratio, at the corners
    of s, t, r ∈ [−k/b, k/b] (module docstring); fresh masks: k times one release's."""
    if setting.noise is NoiseKind.GAUSSIAN:
        return math.inf
    q, k = setting.observation, setting.releases
    per = 1 if setting.masks is MaskRegime.FRESH else k
    x = per / setting.scale  # the largest |s|, |t|, |r|
    span = 2 * x if setting.na_category else x  # largest t − s (s ≡ 0 without the NA bin)
    if pair == ("a", "b"):
        value = log1p_c_expm1(span, q) if setting.na_category else \
            log1p_c_expm1(x, q) - log1p_c_expm1(-x, q)
    elif pair == ("a", "NA"):
        value = log1p_c_expm1(span, q)
    else:
        value = -log1p_c_expm1(-span, q)
    return value * (k if setting.masks is MaskRegime.FRESH else 1)


def _laws(setting: HistogramSetting, releases: int, h: float, delta: float) -> _Laws:
    """The loss laws of ``releases`` releases from one table on grids of step at most ``h``
    (Laplace: each release's value moved on a grid of step h/releases)."""
    if setting.noise is NoiseKind.GAUSSIAN:
        t = _gaussian_law(releases / setting.scale ** 2, h)
    else:
        n = int(math.ceil(2 * releases / (setting.scale * h)))
        if releases * n > _MAX_FINE:
            raise ValueError(f"releases must be fewer for a Laplace histogram at delta > 0: "
                             f"its grid would hold {releases * n} points (at most "
                             f"{_MAX_FINE}), got releases={releases}")
        t = _laplace_law(setting.scale, releases, n, _TAIL)
    return _Laws(t if setting.na_category else _POINT, t, h, max(1e-4 * delta, 1e-30))


def _top(bound, target: float, start: float) -> float:
    """An ε where the upper δ bound is ≤ ``target`` (doubling from ``start``)."""
    e = max(start, 0.5)
    while bound(e) > target:
        e *= 2
        if e > _LOSS_MAX:
            raise ValueError("the histogram's epsilon at this delta exceeds "
                             f"{_LOSS_MAX:g}: delta must be larger, got delta={target!r}")
    return e


def _pair_bracket(setting: HistogramSetting, delta: float, pair: tuple[str, str],
                  releases: int, h: float) -> tuple[float, float]:
    """(lower, upper) of ``pair``'s ε over ``releases`` releases from one table, on grids of
    step ``h``."""
    laws = _laws(setting, releases, h, delta)
    q = setting.observation
    pure = pure_epsilon(replace(setting, releases=releases, masks=MaskRegime.SHARED), pair)

    def up(e):
        return pair_delta_bracket(laws, pair, e, q)[1]

    def low(e):
        return pair_delta_bracket(laws, pair, e, q)[0]

    top = pure if math.isfinite(pure) else _top(up, delta, 1.0)
    return (solve_epsilon(low, delta, top, upper=False),
            min(solve_epsilon(up, delta, top, upper=True), pure))


def _refined(setting: HistogramSetting, delta: float, pair: tuple[str, str],
             releases: int, beaten: float = -math.inf) -> tuple[float, float, float]:
    """(lower, upper, step) of ``pair``, the grid halved until the bracket is within half
    the tolerance, the upper end is at most ``beaten`` (another pair is worse), the step
    floor, or the time budget."""
    from audit.theory.worst_case import tolerance

    v = releases / setting.scale ** 2  # a bound on one bin loss's variance
    h = max(_FIRST_STEP, (v + 14 * math.sqrt(v)) / 1000) if pair == ("a", "b") else _FIRST_STEP
    while True:
        start = time.perf_counter()
        lower, upper = _pair_bracket(setting, delta, pair, releases, h)
        if upper - lower <= tolerance(upper) / 2 or upper <= beaten or h / 2 < _MIN_STEP \
                or time.perf_counter() - start > _STEP_SECONDS:
            return lower, upper, h
        h /= 2


def _shared_bracket(setting: HistogramSetting, delta: float):
    """(lower, upper, worst pair, step) of the shared-mask setting: the one-dimensional pairs
    first, then (a, b), refined only while it could be the worst."""
    found: dict[tuple[str, str], tuple[float, float, float]] = {}
    for pair in (("a", "NA"), ("NA", "a"), ("a", "b")):
        beaten = max((f[0] for f in found.values()), default=-math.inf)
        found[pair] = _refined(setting, delta, pair, setting.releases, beaten)
    worst = max(found, key=lambda p: found[p][0])
    return found[worst][0], max(f[1] for f in found.values()), worst, found[worst][2]


def _pair_names(pair: tuple[str, str]) -> tuple[str, str]:
    """The pair as the bound table names it: a category ``cat``, another ``other``."""
    names = {"a": "cat", "b": "other", "NA": "NA"}
    return names[pair[0]], names[pair[1]]


#: the loss grid step of the fresh-mask PLD compositions
_FRESH_STEP = 1e-3
#: the loss grid step of the first bracket, and the finest the refinement goes to
_FIRST_STEP, _MIN_STEP = 0.01, 0.01 / 16
#: seconds a bracket may take for the next (about 4 times slower) refinement to be tried
_STEP_SECONDS = 3.0


def _theorem_epsilon(setting: HistogramSetting, delta: float) -> float:
    """C_{p*}(f)^{⊗k} at δ, f the histogram's own one-release curve (two bins moving by 1:
    Lap_{1/b} twice, or G_{√2/σ}): the per-release theorem of §7, for every pair."""
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    from audit.theory.pld import amplified_pld, gaussian_loss, laplace_loss, subsampled_pmf

    q, k, h = setting.observation, setting.releases, _FRESH_STEP
    if setting.noise is NoiseKind.GAUSSIAN:
        one = PrivacyLossDistribution(subsampled_pmf(gaussian_loss(math.sqrt(2) / setting.scale),
                                                     q, h))
    else:
        inner = PrivacyLossDistribution(subsampled_pmf(laplace_loss(1 / setting.scale), 1.0, h)
                                        ).self_compose(2)
        one = amplified_pld(inner, q, h)
    return float(one.self_compose(k).get_epsilon_for_delta(delta))


def _fresh_bracket(setting: HistogramSetting, delta: float):
    """(lower, upper, worst pair, step) of a fresh-mask setting: each pair's one-release loss
    law composed (:func:`audit.theory.histogram_fresh.fresh_histogram_bracket`), the upper
    end capped by C_{p*}(f)^{⊗k}."""
    from audit.theory.histogram_fresh import fresh_histogram_bracket

    lower, upper, pair, h = fresh_histogram_bracket(
        setting.noise, setting.scale, setting.observation, setting.na_category,
        setting.releases, delta)
    return lower, max(lower, min(upper, _theorem_epsilon(setting, delta))), pair, h


def histogram_worst_case(setting: HistogramSetting, delta: float):
    """The worst case of ``setting`` at the final δ of its k releases: a certified bracket
    over every pair of records (two categories, a category and the NA record, both orders).

    Parameters
    ----------
    setting : HistogramSetting
    delta : float
        δ ∈ [0, 1).

    Returns
    -------
    audit.theory.worst_case.WorstCase
        ``pair`` names the records ``cat`` (a category), ``other`` (another) and ``NA``.

    Raises
    ------
    ValueError
        On a bad δ, or where the ε sought exceeds the float range of the computation.

    References
    ----------
    docs/THEORY.md §10.9 (derived in this project); [DRS] Proposition 2.12.

    Examples
    --------
    A Laplace histogram with a NA bin at ε = 1 per release (b = 2), q = 0.3, 4 releases from
    one table: at δ = 0 the closed form ln(1 − q + q e^{2k/b}).

    >>> w = histogram_worst_case(HistogramSetting("laplace", 2.0, 0.3, 4), 0.0)
    >>> round(w.epsilon, 4), w.pair, w.exact
    (2.8304, ('cat', 'NA'), True)
    """
    from audit.theory.worst_case import WorstCase, delta_monotone_cap

    if not isinstance(setting, HistogramSetting):
        raise ValueError(f"setting must be a HistogramSetting, got setting={setting!r}")
    d = check_delta(delta)
    if d >= 1.0:
        raise ValueError(f"delta must be in [0, 1), got delta={delta!r}")
    covers = "every pair of records: two categories, a category and the NA record"
    if d == 0.0:
        values = {p: pure_epsilon(setting, p) for p in PAIRS}
        pair = max(values, key=lambda p: values[p])
        how = ("pure composition: k times one release's" if setting.masks is MaskRegime.FRESH
               else "exact at delta = 0: the")
        return WorstCase(values[pair], values[pair], _pair_names(pair),
                         f"{how} largest log density ratio, in closed form (§10.9)", covers)
    per_release = 1 if setting.masks is MaskRegime.FRESH else setting.releases
    if setting.noise is NoiseKind.LAPLACE and per_release / setting.scale > _LOSS_MAX:
        raise ValueError(f"releases / scale must be at most {_LOSS_MAX:g} for a Laplace "
                         f"histogram at delta > 0, got {per_release / setting.scale:g}")
    if setting.masks is MaskRegime.FRESH and setting.releases > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for fresh masks at "
                         f"delta > 0 (a PLD composition), got releases={setting.releases}")
    v = per_release / setting.scale ** 2  # a Gaussian bin loss is N(−v/2, v)
    if setting.noise is NoiseKind.GAUSSIAN and v / 2 + _Z * math.sqrt(v) > _LOSS_MAX:
        # its grid reaches v/2 + Z·√v (e^x must stay a double; the grid's size grows with v)
        raise ValueError(f"releases / scale^2 must be at most {_GAUSSIAN_V_MAX:g} for a "
                         f"Gaussian histogram at delta > 0, got {v:g}")
    if setting.masks is MaskRegime.FRESH and setting.releases > 1:  # one release: shared
        lower, upper, pair, h = _fresh_bracket(setting, d)
    else:
        lower, upper, pair, h = _shared_bracket(setting, d)
    method = ("three independent bin losses, each law moved up and down on a grid "
              f"(step {h:.3g})")
    if setting.masks is MaskRegime.FRESH and setting.releases > 1:
        method = (f"each pair's one-release loss law moved up and down on a grid (step "
                  f"{h:.3g}), composed k times, both orders apart")
    found = WorstCase(upper, lower, _pair_names(pair), method, covers)
    if setting.noise is NoiseKind.LAPLACE:  # ε(δ) ≤ ε(0): the δ = 0 value caps the row
        return delta_monotone_cap(found, histogram_worst_case(setting, 0.0))
    return found
