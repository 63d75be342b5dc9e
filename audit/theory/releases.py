"""Several releases from one incomplete dataset (docs/THEORY.md §9, **derived in this project**).

Every other result of the accountant is about one release A_D. With k releases two regimes
(:class:`audit.enums.MaskRegime`):

- **shared masks** (one table, k statistics): M_k = (A_1 ⊗ … ⊗ A_k)_D, the masks drawn once.
  [RPS] Theorem 3.2 and §7 apply **once, to the composition**: :func:`shared_masks_dp`,
  :func:`shared_masks_tradeoff`, :func:`shared_masks_epsilon`; the composed curve f_k in closed
  form where one exists (:func:`repeated_gaussian_mu`, :func:`composed_gaussian_mu`,
  :func:`composed_laplace_epsilon`). Composing per-release amplified guarantees is **not** a
  bound for this mechanism.
- **fresh masks** (missingness redrawn per release): M_k = A_D^{⊗k}, so the per-release
  guarantee C_{p*}(f) composes: :func:`fresh_masks_epsilon` (a pessimistic PLD composition by
  dp_accounting), beside :func:`basic_composition`, :func:`advanced_composition` and the
  [DRS] central-limit approximation :func:`clt_mu` (an approximation, not a bound).

Which releases share masks: :func:`mask_regime_of`; the p*_j of releases reading disjoint
feature groups under i.i.d.-per-entry MCAR: :func:`feature_group_p_stars`.

Exact privacy of the audited pair over k releases (the ceilings): :func:`shared_pair`,
:func:`shared_pair_epsilon` (Gaussian, same query: one release at σ/√k),
:class:`RecordLevelPair` and :func:`record_level_pair_epsilon` (record-level masks: a 1-D
sufficient statistic), :func:`fresh_pair_epsilon` (k-fold composition of the pair's PLD).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from audit._numeric import brentq, log1p_c_expm1, log1p_expm1_div
from audit._validate import check_delta, check_epsilon, check_positive, check_probability
from audit.enums import MaskRegime, MissingnessClass, NoiseKind
from audit.mixture import Mixture
from audit.theory.amplification import amplify, fdp_missing, p_star_mcar_iid, require_mar
from audit.theory.pair import PairValue, pair_epsilon
from audit.theory.pair.masses import check_pair
from audit.theory.pld import (
    BaseLoss,
    compose_epsilon,
    gaussian_loss,
    laplace_loss,
    pair_pmfs,
    pure_dp_loss,
    subsampled_pmf,
)
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    TradeoffFunction,
    epsilon_for_delta,
)

__all__ = [
    "MaskRegime",
    "MAX_PLD_RELEASES",
    "check_releases",
    "shared_masks_dp",
    "shared_masks_tradeoff",
    "shared_masks_epsilon",
    "repeated_gaussian_mu",
    "composed_gaussian_mu",
    "composed_laplace_epsilon",
    "mask_regime_of",
    "feature_group_p_stars",
    "fresh_masks_epsilon",
    "basic_composition",
    "advanced_composition",
    "clt_mu",
    "shared_pair",
    "shared_pair_epsilon",
    "RecordLevelPair",
    "record_level_pair_epsilon",
    "fresh_pair_epsilon",
]

#: most releases a PLD composition is run for (beyond: closed forms, or refused)
MAX_PLD_RELEASES = 10_000
#: default loss grid step of the PLD compositions
DISCRETIZATION = 1e-4


def check_releases(releases: object, name: str = "releases") -> int:
    """k as an int: a positive integer (an integral float such as 1e9 is accepted)."""
    if isinstance(releases, bool) or not isinstance(releases, Real):
        raise ValueError(f"{name} must be a positive integer, got {name}={releases!r}")
    if not isinstance(releases, Integral):
        f = float(releases)
        if not (math.isfinite(f) and f.is_integer()):
            raise ValueError(f"{name} must be a positive integer, got {name}={releases!r}")
    if int(releases) < 1:
        raise ValueError(f"{name} must be a positive integer, got {name}={releases!r}")
    return int(releases)


def _check_p_star(p_star: object) -> float:
    p = check_probability(p_star, "p_star")
    if p == 0.0:
        raise ValueError(f"p_star must be in (0, 1], got p_star={p_star!r}")
    return p


# ----------------------------------------------------------------------------- shared masks
def shared_masks_dp(eps_k: float, delta_k: float, p_star: float, *,
                    missingness_class: MissingnessClass | str = MissingnessClass.MAR
                    ) -> tuple[float, float]:
    """(ln(1 + p*(e^{ε_k} − 1)), p* δ_k): k releases from one table whose composition
    A_1 ⊗ … ⊗ A_k is (ε_k, δ_k)-DP on Z_miss^n.

    Parameters
    ----------
    eps_k, delta_k : float
        ε_k ≥ 0 and δ_k ∈ [0, 1] of the composition (not of one release).
    p_star : float
        p* ∈ (0, 1].
    missingness_class : MissingnessClass or str
        MCAR or MAR; MNAR raises.

    References
    ----------
    [RPS] Theorem 3.2 applied to M_k = (A_1 ⊗ … ⊗ A_k)_D; docs/THEORY.md §9.1.
    """
    _check_p_star(p_star)
    return amplify(eps_k, delta_k, p_star, missingness_class=missingness_class)


def shared_masks_tradeoff(f_k: TradeoffFunction, p_star: float, *,
                          missingness_class: MissingnessClass | str = MissingnessClass.MAR
                          ) -> TradeoffFunction:
    """C_{p*}(f_k): k releases from one table whose composition is f_k-DP (f_k symmetric).

    References
    ----------
    docs/THEORY.md §7 applied to M_k = (A_1 ⊗ … ⊗ A_k)_D (§9.1; derived in this project).
    """
    _check_p_star(p_star)
    return fdp_missing(f_k, p_star, missingness_class=missingness_class)


def shared_masks_epsilon(f_k: TradeoffFunction, p_star: float, delta: float, *,
                         missingness_class: MissingnessClass | str = MissingnessClass.MAR
                         ) -> float:
    """ε at the final δ of C_{p*}(f_k): ln(1 + p*(e^{ε_k(δ/p*)} − 1)) (docs/THEORY.md §9.1)."""
    d = check_delta(delta)
    return epsilon_for_delta(shared_masks_tradeoff(f_k, p_star,
                                                   missingness_class=missingness_class), d)


def repeated_gaussian_mu(mu: float, releases: int) -> float:
    """√k μ: the same Gaussian query released k times with independent noise, given the mask,
    is exactly one release at σ/√k (the mean is sufficient): f_k = G_{√k μ} (§9.2)."""
    m = check_epsilon(mu, "mu")
    return math.sqrt(check_releases(releases)) * m


def composed_gaussian_mu(mus: Sequence[float]) -> float:
    """√(Σ_j μ_j²): k Gaussian releases of shifts μ_j compose to G_{√(Σ μ_j²)} ([DRS] Cor. 3.3)."""
    arr = [check_epsilon(m, "mus") for m in _nonempty(mus, "mus")]
    return math.sqrt(math.fsum(m * m for m in arr))


def composed_laplace_epsilon(epsilons: Sequence[float]) -> float:
    """Σ_j ε_{0,j}: pure-DP composition (δ = 0), the ε_k of k Laplace releases (§9.2)."""
    return math.fsum(check_epsilon(e, "epsilons") for e in _nonempty(epsilons, "epsilons"))


def _nonempty(values, name: str) -> list:
    vals = list(np.atleast_1d(np.asarray(values, dtype=object)).tolist()) \
        if not isinstance(values, (list, tuple)) else list(values)
    if not vals:
        raise ValueError(f"{name} must hold at least one value, got {name}={values!r}")
    return vals


# ----------------------------------------------------------------------------- which share
def mask_regime_of(feature_sets: Sequence[Iterable[int]], *, record_level: bool,
                   redrawn: bool = False) -> MaskRegime:
    """Whether the releases reading ``feature_sets`` of one table may be composed as FRESH.

    ``redrawn`` (the missingness is drawn anew for every release): FRESH. One table:
    record-level missingness shares the record's mask (SHARED); i.i.d.-per-entry MCAR makes
    releases on pairwise **disjoint** feature sets independent (FRESH, each with its own
    p*_j: :func:`feature_group_p_stars`); any overlap shares entries (SHARED, always valid).

    Raises
    ------
    ValueError
        If there is no feature set or one is empty.

    References
    ----------
    docs/THEORY.md §9.4.
    """
    sets = [frozenset(int(j) for j in s) for s in feature_sets]
    if not sets or any(not s for s in sets):
        raise ValueError(f"feature_sets must be non-empty sets of feature indices, got "
                         f"feature_sets={feature_sets!r}")
    if redrawn:
        return MaskRegime.FRESH
    if record_level:
        return MaskRegime.SHARED
    seen: set[int] = set()
    for s in sets:
        if seen & s:
            return MaskRegime.SHARED
        seen |= s
    return MaskRegime.FRESH


def feature_group_p_stars(rate: float, group_sizes: Sequence[int]) -> tuple[float, ...]:
    """p*_j = 1 − r^{|J_j|} of releases reading disjoint feature groups J_j under i.i.d. MCAR
    with per-entry missing rate r (docs/THEORY.md §9.4)."""
    return tuple(p_star_mcar_iid(rate, g) for g in _nonempty(group_sizes, "group_sizes"))


# ----------------------------------------------------------------------------- fresh masks
def _base_loss(f: TradeoffFunction) -> BaseLoss:
    """The explicit pair of a base curve (the PLD builders need its loss law)."""
    if isinstance(f, GaussianTradeoff) and f.mu > 0:
        return gaussian_loss(f.mu)
    if isinstance(f, LaplaceTradeoff) and f.mu > 0:
        return laplace_loss(f.mu)
    if isinstance(f, DPTradeoff) and f.delta == 0.0 and f.epsilon > 0:
        return pure_dp_loss(f.epsilon)
    raise ValueError("f must be GaussianTradeoff(mu > 0), LaplaceTradeoff(mu > 0) or "
                     f"DPTradeoff(epsilon > 0, delta=0) for a PLD composition, got f={f!r}")


def fresh_masks_epsilon(f: TradeoffFunction, p_star: float, releases: int, delta: float, *,
                        discretization: float = DISCRETIZATION,
                        missingness_class: MissingnessClass | str = MissingnessClass.MAR
                        ) -> float:
    """ε at the final δ of C_{p*}(f)^{⊗k}: k releases, each with freshly drawn masks.

    A pessimistic PLD (losses rounded up to the grid, :func:`audit.theory.pld.subsampled_pmf`)
    composed k times by dp_accounting: the result is an upper bound on the exact ε of
    C_{p*}(f)^{⊗k}, above it by at most about k·h. At δ = 0 for Laplace / pure-DP bases the
    closed form k·ln(1 + p*(e^{ε0} − 1)) is returned.

    Parameters
    ----------
    f : GaussianTradeoff, LaplaceTradeoff or DPTradeoff (δ = 0)
        The per-release curve of A on Z_miss^n.
    p_star : float
        p* ∈ (0, 1].
    releases : int
        k ∈ [1, MAX_PLD_RELEASES].
    delta : float
        Final δ ∈ [0, 1] of the k releases together.
    discretization : float
        Loss grid step h > 0.

    Raises
    ------
    ValueError
        On a parameter out of range, an unsupported f, MNAR, or k > ``MAX_PLD_RELEASES``
        (the composition would be too costly: use :func:`basic_composition`,
        :func:`advanced_composition` or the approximation :func:`clt_mu`).

    References
    ----------
    docs/THEORY.md §7 (per release) and §9.3; [DRS] Theorem 3.2 (composition of f-DP);
    [KJH] (FFT composition of discretised PLDs, as implemented in dp_accounting).
    """
    p = _check_p_star(p_star)
    require_mar(missingness_class)
    k = check_releases(releases)
    d = check_delta(delta)
    base = _base_loss(f)
    if k > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a PLD composition "
                         f"(too costly beyond), got releases={releases!r}")
    if d == 0.0 and not isinstance(f, GaussianTradeoff):
        return k * log1p_c_expm1(base.t_max, p)
    return compose_epsilon(subsampled_pmf(base, p, discretization), k, d)


def basic_composition(epsilon: float, delta: float, releases: int) -> tuple[float, float]:
    """(k ε, k δ): basic composition of k (ε, δ)-DP mechanisms ([DR] Theorem 3.16)."""
    e, d, k = check_epsilon(epsilon), check_delta(delta), check_releases(releases)
    return k * e, min(1.0, k * d)


def advanced_composition(epsilon: float, delta: float, releases: int, delta_slack: float
                         ) -> tuple[float, float]:
    """(ε √(2k ln(1/δ̃)) + k ε (e^ε − 1), k δ + δ̃): advanced composition ([DR] Theorem 3.20).

    Raises
    ------
    ValueError
        If δ̃ = ``delta_slack`` ∉ (0, 1) or another parameter is out of range.
    """
    e, d, k = check_epsilon(epsilon), check_delta(delta), check_releases(releases)
    ds = check_probability(delta_slack, "delta_slack")
    if not 0.0 < ds < 1.0:
        raise ValueError(f"delta_slack must be in (0, 1), got delta_slack={delta_slack!r}")
    return (e * math.sqrt(2 * k * math.log(1 / ds)) + k * e * math.expm1(e),
            min(1.0, k * d + ds))


def clt_mu(f: TradeoffFunction, p_star: float, releases: int) -> float:
    """p* √(k χ²(f)): the μ of the central-limit approximation C_{p*}(f)^{⊗k} ≈ G_μ.

    **An approximation, not a bound.** [DRS] Section 5 (CLT for composition of subsampled
    mechanisms): if p√k → ν as k → ∞, C_p(f)^{⊗k} → G_{ν √χ²(f)}, with χ²(f) the χ²
    divergence of f's pair (Gaussian: e^{μ²} − 1; docs/THEORY.md §9.3). It may lie on either
    side of the exact curve at finite k.
    """
    p = _check_p_star(p_star)
    k = check_releases(releases)
    return p * math.sqrt(k * _base_loss(f).chi2)


# ----------------------------------------------------------------------------- exact pairs
def shared_pair(P: Mixture, Q: Mixture, releases: int) -> tuple[Mixture, Mixture]:
    """The pair of one Gaussian release at σ/√k, equivalent to k releases of the same query
    from one table (the mean is sufficient given the mask; docs/THEORY.md §9.5).

    Raises
    ------
    ValueError
        For Laplace mixtures (the mean is not sufficient: use
        :func:`record_level_pair_epsilon` under record-level masks) or a bad k.
    """
    P, Q = check_pair(P, Q)
    k = check_releases(releases)
    if P.noise is not NoiseKind.GAUSSIAN:
        raise ValueError("P must be a Gaussian mixture for the one-release reduction of shared "
                         f"masks (Laplace has no 1-D sufficient statistic), got P.noise="
                         f"{P.noise.value!r}")
    s = P.scale / math.sqrt(k)
    return (Mixture(P.weights, P.scalar_shifts, P.noise, s),
            Mixture(Q.weights, Q.scalar_shifts, Q.noise, s))


def shared_pair_epsilon(P: Mixture, Q: Mixture, releases: int, delta: float) -> PairValue:
    """Exact ε(δ) of the audited pair over k Gaussian releases of one query from one table."""
    return pair_epsilon(*shared_pair(P, Q, releases), delta)


@dataclass(frozen=True, eq=False)
class RecordLevelPair:
    """The audited pair under record-level masks: the differing record is observed with
    probability ``observation`` (= p*) or missing entirely (every release then reads 0).

    Parameters
    ----------
    observation : float
        q ∈ (0, 1].
    contributions, contributions_prime : array_like, shape (k,)
        What the record adds to release j under z and under z′ when observed.
    noise : NoiseKind or str
        Noise of every release.
    scales : float or array_like, shape (k,)
        Noise scale of each release (b or σ), > 0.
    """

    observation: float
    contributions: np.ndarray
    contributions_prime: np.ndarray
    noise: NoiseKind
    scales: np.ndarray

    def __post_init__(self) -> None:
        q = _check_p_star(self.observation)
        a = np.atleast_1d(np.asarray(self.contributions, dtype=np.float64))
        b = np.atleast_1d(np.asarray(self.contributions_prime, dtype=np.float64))
        if a.ndim != 1 or a.shape != b.shape or not np.all(np.isfinite(a) & np.isfinite(b)):
            raise ValueError("contributions and contributions_prime must be finite arrays of one "
                             f"shape (k,), got shapes {a.shape} and {b.shape}")
        s = np.broadcast_to(np.asarray(self.scales, dtype=np.float64), a.shape).copy()
        if not np.all(np.isfinite(s) & (s > 0)):
            raise ValueError(f"scales must be in (0, inf), got scales={self.scales!r}")
        object.__setattr__(self, "observation", q)
        object.__setattr__(self, "contributions", a)
        object.__setattr__(self, "contributions_prime", b)
        object.__setattr__(self, "noise", NoiseKind.parse(self.noise))
        object.__setattr__(self, "scales", s)

    @property
    def releases(self) -> int:
        return int(self.contributions.shape[0])


def record_level_pair_epsilon(pair: RecordLevelPair, delta: float, *,
                              discretization: float = DISCRETIZATION) -> PairValue:
    """Exact ε(δ) of a record-level pair over its k releases from one table (shared mask).

    Gaussian: whitened, the two contribution vectors must be parallel (one may be 0); the
    projection on their direction is sufficient, a 1-D pair solved by
    :func:`audit.theory.pair.pair_epsilon`. Laplace: one side must contribute 0 (a record
    against a record read as 0); with S = Σ_j ln(p_j/q_j) the loss of the observed record,
    D_{e^ε}(P‖Q) = q δ_S(ln((e^ε − 1 + q)/q)) and D_{e^ε}(Q‖P) = a δ_S(ln(e^ε q/a)),
    a = 1 − e^ε(1 − q) (0 when a ≤ 0), δ_S the profile of the k-fold Laplace composition; at
    δ = 0 the likelihood ratio saturates and ε = ln(1 + q(e^{Σ|a_j|/b_j} − 1)) exactly.

    Raises
    ------
    ValueError
        Outside these forms (no low-dimensional reduction is implemented), or a bad δ.

    References
    ----------
    docs/THEORY.md §9.5.
    """
    if not isinstance(pair, RecordLevelPair):
        raise ValueError(f"pair must be a RecordLevelPair, got pair={pair!r}")
    d = check_delta(delta)
    if pair.noise is NoiseKind.GAUSSIAN:
        return _record_level_gaussian(pair, d)
    return _record_level_laplace(pair, d, check_positive(discretization, "discretization"))


def _record_level_gaussian(pair: RecordLevelPair, delta: float) -> PairValue:
    u, v = pair.contributions / pair.scales, pair.contributions_prime / pair.scales
    ref = u if np.linalg.norm(u) >= np.linalg.norm(v) else v
    norm = float(np.linalg.norm(ref))
    if norm == 0.0:
        return PairValue(0.0, 0.0)
    e = ref / norm
    a, b = float(u @ e), float(v @ e)
    if np.linalg.norm(u - a * e) + np.linalg.norm(v - b * e) > 1e-12 * (1 + norm):
        raise ValueError("contributions/scales and contributions_prime/scales must be parallel "
                         "for the 1-D reduction of a Gaussian record-level pair, got "
                         f"contributions={pair.contributions!r}, "
                         f"contributions_prime={pair.contributions_prime!r}")
    q = pair.observation
    P = Mixture([q, 1 - q], [a, 0.0], NoiseKind.GAUSSIAN, 1.0) if q < 1 else \
        Mixture([1.0], [a], NoiseKind.GAUSSIAN, 1.0)
    Q = Mixture([q, 1 - q], [b, 0.0], NoiseKind.GAUSSIAN, 1.0) if q < 1 else \
        Mixture([1.0], [b], NoiseKind.GAUSSIAN, 1.0)
    return pair_epsilon(P, Q, delta)


def _laplace_sum_pld(mus: np.ndarray, h: float, pessimistic: bool):
    """The PLD of S = Σ_j ln(p_j/q_j), Lap(μ_j) against Lap(0) (unit scale), dp_accounting."""
    from dp_accounting.pld import privacy_loss_distribution as dpl

    uniq = np.unique(mus)
    out = None
    for m in uniq:
        one = dpl.from_laplace_mechanism(1.0, sensitivity=float(m),
                                         pessimistic_estimate=pessimistic,
                                         value_discretization_interval=h,
                                         use_connect_dots=pessimistic)
        n = int(np.sum(mus == m))
        one = one if n == 1 else one.self_compose(n)
        out = one if out is None else out.compose(one)
    return out


def _record_level_laplace(pair: RecordLevelPair, delta: float, h: float) -> PairValue:
    a, b = pair.contributions, pair.contributions_prime
    if np.any(b != 0) and np.any(a != 0):
        raise ValueError("contributions or contributions_prime must be all 0 for a Laplace "
                         "record-level pair (a record against one read as 0), got "
                         f"contributions={a!r}, contributions_prime={b!r}")
    mus = np.abs(a + b) / pair.scales
    mus = mus[mus > 0]
    if mus.size == 0:
        return PairValue(0.0, 0.0)
    q = pair.observation
    eps0 = log1p_c_expm1(float(np.sum(mus)), q)
    if delta == 0.0:
        return PairValue(eps0, 0.0)
    if pair.releases > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a Laplace pair at "
                         f"delta > 0, got {pair.releases}")
    values = []
    for pess in (True, False):
        s_pld = _laplace_sum_pld(mus, h, pess)

        def dlt(e: float, s_pld=s_pld) -> float:
            up = q * float(s_pld.get_delta_for_epsilon(log1p_expm1_div(e, q)))
            lead = -math.expm1(e + math.log1p(-q)) if q < 1 else -math.inf
            down = 0.0 if lead <= 0 else lead * float(
                s_pld.get_delta_for_epsilon(e + math.log(q) - math.log(lead)))
            return max(up, down)

        # the optimistic estimate's truncated tails (≤ 1e-15 per composition) are paid in δ
        target = delta if pess else min(1.0, delta + 1e-15 * (pair.releases + 1))
        if dlt(0.0) <= target:
            values.append(0.0)
        elif dlt(eps0) > target:
            values.append(eps0)
        else:
            values.append(brentq(lambda e, f=dlt, t=target: f(e) - t, 0.0, eps0, xtol=1e-12))
    hi, lo = values
    return PairValue(0.5 * (hi + lo), 0.5 * (hi - lo))


def fresh_pair_epsilon(P: Mixture, Q: Mixture, releases: int, delta: float, *,
                       discretization: float = DISCRETIZATION) -> PairValue:
    """Exact ε(δ) of the audited pair over k releases with fresh masks: the k-fold product
    (P^{⊗k}, Q^{⊗k}), both orders.

    The pair's PLD in both orders (:func:`audit.theory.pld.pair_pmfs`) is composed k times by
    dp_accounting with losses rounded up and, separately, down; ``value`` is the midpoint and
    ``error`` the half-width of that bracket. At δ = 0, k·sup|ln p/q| (exact for Laplace, whose
    likelihood ratio saturates; infinite for most Gaussian pairs).

    Raises
    ------
    ValueError
        On a bad pair, k, δ, or k > ``MAX_PLD_RELEASES``.

    References
    ----------
    docs/THEORY.md §9.5.
    """
    P, Q = check_pair(P, Q)
    k = check_releases(releases)
    d = check_delta(delta)
    if d == 0.0:
        one = pair_epsilon(P, Q, 0.0)
        return PairValue(k * one.value, k * one.error)
    if k > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a PLD composition "
                         f"(too costly beyond), got releases={releases!r}")
    hi = compose_epsilon(pair_pmfs(P, Q, discretization), k, d)
    # the optimistic estimate's truncated tails (≤ 1e-15 per composition) are paid in δ
    lo = compose_epsilon(pair_pmfs(P, Q, discretization, pessimistic=False), k,
                         min(1.0, d + 2e-15))
    return PairValue(0.5 * (hi + lo), 0.5 * max(hi - lo, 0.0))
