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

For k releases of one query with per-release curve f: :func:`composed_epsilon` (f^{⊗k}, no
missingness) and :func:`releases_epsilon` (either regime, the composition rule named).

Which releases share masks: :func:`mask_regime_of`; the p*_j of releases reading disjoint
feature groups under i.i.d.-per-entry MCAR: :func:`feature_group_p_stars`.

Exact privacy of the audited pair over k releases (the ceilings; their home is
:mod:`audit.theory.pair.releases`): :func:`shared_pair`, :func:`shared_pair_epsilon`
(Gaussian, same query: one release at σ/√k), :class:`RecordLevelPair` and
:func:`record_level_pair_epsilon` (record-level masks: a 1-D sufficient statistic),
:func:`fresh_pair_epsilon` (k-fold composition of the pair's PLD),
:func:`record_level_form` (a pair's record-level form, when it has one) and
:func:`releases_pair_epsilon` (whichever of these applies).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from audit._numeric import brentq, log1p_c_expm1
from audit._validate import check_count, check_delta, check_epsilon, check_probability
from audit.enums import MaskRegime, MissingnessClass
from audit.theory.amplification import amplify, fdp_missing, p_star_mcar_iid, require_mar
from audit.theory.pair.releases import (
    RecordLevelPair,
    fresh_pair_epsilon,
    record_level_form,
    record_level_pair_epsilon,
    releases_pair_epsilon,
    shared_pair,
    shared_pair_epsilon,
)
from audit.theory.pld import (
    DISCRETIZATION,
    MAX_GRID,
    MAX_PLD_RELEASES,
    BaseLoss,
    compose_epsilon,
    gaussian_loss,
    laplace_loss,
    pure_dp_loss,
    refine_bracket,
    subsampled_pmf,
    tradeoff_from_profile,
)
from audit.theory.tradeoff import (
    DPTradeoff,
    GaussianTradeoff,
    LaplaceTradeoff,
    PiecewiseLinearTradeoff,
    TradeoffFunction,
    epsilon_for_delta,
)

__all__ = [
    "MaskRegime",
    "MAX_PLD_RELEASES",
    "check_releases",
    "Composed",
    "composed_epsilon",
    "optimal_composition",
    "MAX_OPTIMAL_RELEASES",
    "releases_epsilon",
    "fresh_masks_tradeoff",
    "shared_masks_dp",
    "shared_masks_tradeoff",
    "shared_masks_epsilon",
    "repeated_gaussian_mu",
    "composed_gaussian_mu",
    "composed_laplace_epsilon",
    "mask_regime_of",
    "feature_group_p_stars",
    "fresh_masks_epsilon",
    "fresh_masks_bracket",
    "basic_composition",
    "advanced_composition",
    "clt_mu",
    "shared_pair",
    "shared_pair_epsilon",
    "RecordLevelPair",
    "record_level_pair_epsilon",
    "fresh_pair_epsilon",
    "record_level_form",
    "releases_pair_epsilon",
]


def check_releases(releases: object, name: str = "releases") -> int:
    """k as an int: a positive integer (an integral float such as 1e9 is accepted)."""
    return check_count(releases, name)


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
    C_{p*}(f)^{⊗k}, above it by at most about k·h. For Laplace / pure-DP bases the closed
    form k·ln(1 + p*(e^{ε0} − 1)) (valid at every δ) is returned at δ = 0 and where the loss
    grid would exceed ``MAX_GRID`` points; a Gaussian base's grid is widened to fit instead.

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
    p, k, d, base = _fresh_setup(f, p_star, releases, delta, missingness_class)
    pure = k * log1p_c_expm1(base.t_max, p)
    if _closed_form_fresh(f, base, p, d, discretization):
        return pure  # valid at every δ
    value = compose_epsilon(subsampled_pmf(base, p, _fitting_step(base, p, discretization)), k, d)
    # ε is non-increasing in δ: a rounded-up PLD never beats the δ = 0 closed form
    return value if isinstance(f, GaussianTradeoff) else min(value, pure)


def fresh_masks_bracket(f: TradeoffFunction, p_star: float, releases: int, delta: float, *,
                        missingness_class: MissingnessClass | str = MissingnessClass.MAR,
                        time_budget: float = 60.0) -> tuple[float, float, float]:
    """(ε, error, h): :func:`fresh_masks_epsilon` with its numerical error certified.

    The pessimistic PLD (losses rounded up) gives ε ≥ the exact value and the optimistic one
    (rounded down) ε ≤ it; ``error`` is their difference. The loss grid h starts at
    ``DISCRETIZATION`` and is divided by 4 while the error exceeds 0.5 % of ε (or 10⁻³,
    whichever is larger), the grid stays within ``MAX_GRID`` points and the next composition is
    predicted to fit in ``time_budget`` seconds; the row then states the error it reached.

    Returns
    -------
    (float, float, float)
        ε (the pessimistic, upper value), its error (upper − lower, ≥ 0), the final h.

    Raises
    ------
    ValueError
        As :func:`fresh_masks_epsilon`.
    """
    from audit.theory.worst_case import tolerance

    p, k, d, base = _fresh_setup(f, p_star, releases, delta, missingness_class)
    pure = k * log1p_c_expm1(base.t_max, p)
    gaussian = isinstance(f, GaussianTradeoff)
    if d == 0.0 and not gaussian:
        return pure, 0.0, 0.0

    def bracket(h: float) -> tuple[float, float]:
        hi = compose_epsilon(subsampled_pmf(base, p, h), k, d)
        # the optimistic estimate's truncated tails (≤ 1e-15 per composition) are paid in δ
        lo = compose_epsilon(subsampled_pmf(base, p, h, pessimistic=False), k,
                             min(1.0, d + 2e-15))
        return (lo, hi) if gaussian else (min(lo, pure), min(hi, pure))

    # a large ε needs a coarser first grid to stay within MAX_GRID points (its error says so)
    first = _fitting_step(base, p, DISCRETIZATION)
    lo, hi, h = refine_bracket(bracket, first, good=lambda lo, hi: hi - lo <= tolerance(hi),
                               can_refine=lambda h: _fits(base, p, h),
                               step_seconds=time_budget / 6)
    return hi, max(hi - lo, 0.0), h


def _fresh_setup(f: TradeoffFunction, p_star, releases, delta, missingness_class):
    """(p*, k, δ, the base pair) of a fresh-mask PLD composition, each checked; k at most
    ``MAX_PLD_RELEASES``."""
    p = _check_p_star(p_star)
    require_mar(missingness_class)
    k, d = check_releases(releases), check_delta(delta)
    base = _base_loss(f)
    _check_pld_releases(k, releases)
    return p, k, d, base


def _check_pld_releases(k: int, given) -> None:
    if k > MAX_PLD_RELEASES:
        raise ValueError(f"releases must be at most {MAX_PLD_RELEASES} for a PLD composition "
                         f"(too costly beyond), got releases={given!r}")


def _fits(base: BaseLoss, p: float, h: float) -> bool:
    """Whether :func:`audit.theory.pld.subsampled_pmf`'s grid of step h holds the base's top
    loss in ``MAX_GRID`` points."""
    return 2 * _up_count(base, p, h) + 1 <= MAX_GRID


def _closed_form_fresh(f: TradeoffFunction, base: BaseLoss, p: float, delta: float,
                       h: float) -> bool:
    """Whether C_{p*}(f)^{⊗k} is given by its δ = 0 closed form k·ln(1 + p*(e^{ε0} − 1)),
    valid at every δ: a Laplace or pure-DP base at δ = 0, or where the grid of step h cannot
    hold its loss (a Gaussian base's grid is widened instead)."""
    return not isinstance(f, GaussianTradeoff) and (delta == 0.0 or not _fits(base, p, h))


def _fitting_step(base: BaseLoss, p: float, discretization: float) -> float:
    """``discretization``, or the wider loss grid step at which :func:`audit.theory.pld.
    subsampled_pmf`'s grid fits in ``MAX_GRID`` points with room (2.2 top losses per
    ``MAX_GRID``): a large per-release loss coarsens the grid instead of being refused (a
    pessimistic PLD at any step stays an upper bound; its error grows with the step)."""
    return max(discretization, 2.2 * _up_count(base, p, 1.0) / MAX_GRID)


def _up_count(base: BaseLoss, p: float, h: float) -> int:
    """Half the number of grid points of :func:`subsampled_pmf` at step h."""
    from audit.theory.pld import _subsampled_loss

    return int(math.ceil(float(_subsampled_loss(np.array(base.t_max), p)) / h))


def basic_composition(epsilon: float, delta: float, releases: int) -> tuple[float, float]:
    """(k ε, k δ): basic composition of k (ε, δ)-DP mechanisms ([DR] Theorem 3.16)."""
    e, d, k = check_epsilon(epsilon), check_delta(delta), check_releases(releases)
    return k * e, min(1.0, k * d)


#: most releases :func:`optimal_composition` composes (arrays of k + 1 terms: 8 MB each)
MAX_OPTIMAL_RELEASES = 10**6


def optimal_composition(epsilon: float, delta: float, releases: int, target_delta: float
                        ) -> float:
    """The smallest ε_k such that k (ε, δ)-DP mechanisms compose to (ε_k, ``target_delta``)-DP,
    exactly ([KOV] Theorem 3.3): the k-fold product of the canonical (ε, δ) pair, whose
    hockey-stick divergence at e^E is

        δ_k(E) = 1 − (1 − δ)^k + (1 − δ)^k Σ_j C(k, j) (a^j b^(k−j) − e^E b^j a^(k−j))_+,

    a = e^ε/(1 + e^ε), b = 1/(1 + e^ε) (j releases on the outcome of loss +ε, the others on
    −ε; with probability 1 − (1 − δ)^k one release hits its δ outcome, of infinite loss). ε_k
    solves δ_k(ε_k) = ``target_delta`` (bisection; δ_k is non-increasing).

    Returns ``inf`` when ``target_delta`` < 1 − (1 − δ)^k (no finite ε holds). k is at most
    :data:`MAX_OPTIMAL_RELEASES` (its arrays hold k + 1 terms).

    References
    ----------
    [KOV] Kairouz, Oh, Viswanath (2015). The composition theorem for differential privacy.
    ICML.
    """
    from scipy import stats as _stats

    e, d, k = check_epsilon(epsilon), check_delta(delta), check_releases(releases)
    if k > MAX_OPTIMAL_RELEASES:
        raise ValueError(f"releases must be at most {MAX_OPTIMAL_RELEASES} for the optimal "
                         f"composition (its sum has k + 1 terms), got releases={releases!r}")
    td = check_delta(target_delta, "target_delta")
    infinite = -math.expm1(k * math.log1p(-d)) if d < 1.0 else 1.0
    if td < infinite:
        return math.inf
    j = np.arange(k + 1)
    a = 1.0 / (1.0 + math.exp(-e))  # e^ε/(1 + e^ε), overflow-free
    log_p = _stats.binom.logpmf(j, k, a)  # ln C(k, j) a^j b^(k−j)
    loss = (2 * j - k) * e  # ln of P_j / Q_j

    def excess(E: float) -> float:
        keep = loss > E
        return float(infinite + (1.0 - infinite) * np.sum(
            np.exp(log_p[keep]) * -np.expm1(E - loss[keep]))) - td

    if excess(0.0) <= 0.0:
        return 0.0
    return float(brentq(excess, 0.0, k * e))


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
    growth = math.expm1(e) if e < 709.0 else math.inf  # ∞ where e^ε overflows
    return (e * math.sqrt(2 * k * math.log(1 / ds)) + k * e * growth, min(1.0, k * d + ds))


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


def fresh_masks_tradeoff(f: TradeoffFunction, p_star: float, releases: int, *,
                         discretization: float = DISCRETIZATION, n_epsilons: int = 400,
                         missingness_class: MissingnessClass | str = MissingnessClass.MAR
                         ) -> PiecewiseLinearTradeoff:
    """A certified lower bound on C_{p*}(f)^{⊗k} (fresh masks), as a trade-off curve.

    The pessimistic PLD's δ(ε) ≥ the exact profile at every ε, so the upper envelope of the
    lines 1 − δ(ε_i) − e^{ε_i} α and e^{−ε_i}(1 − δ(ε_i) − α) over a grid of ε_i ≥ 0 lies below
    the exact curve ([DRS] Proposition 2.12: f-DP ⇔ (ε, δ(ε))-DP for every ε);
    :func:`audit.theory.pld.tradeoff_from_profile` returns it exactly (its vertices).

    Parameters
    ----------
    f, p_star, releases, discretization, missingness_class
        As in :func:`fresh_masks_epsilon`.
    n_epsilons : int
        Number of ε grid points (≥ 2), spread up to the ε at δ = 10⁻¹².
    """
    p = _check_p_star(p_star)
    require_mar(missingness_class)
    k = check_releases(releases)
    n = check_count(n_epsilons, "n_epsilons")
    _check_pld_releases(k, releases)
    pmf = subsampled_pmf(_base_loss(f), p, discretization)
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    pld = PrivacyLossDistribution(pmf)
    pld = pld if k == 1 else pld.self_compose(k)
    top = max(float(pld.get_epsilon_for_delta(1e-12)), 1e-3)
    eps = np.unique(np.concatenate([np.linspace(0.0, top, max(n, 2)),
                                    np.geomspace(1e-4, top, max(n // 4, 2))]))
    return tradeoff_from_profile(eps, np.asarray(pld.get_delta_for_epsilon(eps)))


@dataclass(frozen=True)
class Composed:
    """ε at a final δ of k releases, and the rule that gave it (one line, for tables)."""

    epsilon: float
    rule: str


def composed_epsilon(f: TradeoffFunction, releases: int, delta: float, *,
                     discretization: float = DISCRETIZATION) -> Composed:
    """ε at δ of f^{⊗k}: the same release k times with no missingness.

    Gaussian: G_{√k μ} in closed form (any k). Laplace and f_{ε0,0}: k ε0 at δ = 0 (pure
    composition, valid at every δ) and beyond ``MAX_PLD_RELEASES``; otherwise the pessimistic
    PLD composition of the curve (an upper bound).

    Raises
    ------
    ValueError
        If f is not GaussianTradeoff, LaplaceTradeoff or DPTradeoff(δ = 0), or k, δ bad.
    """
    k, d = check_releases(releases), check_delta(delta)
    base = _base_loss(f)
    if isinstance(f, GaussianTradeoff):
        mu_k = repeated_gaussian_mu(f.mu, k)
        return Composed(epsilon_for_delta(GaussianTradeoff(mu_k), d),
                        f"G_(sqrt(k) mu), sqrt(k) mu = {mu_k:.6g} (same query k times: exact)")
    eps0 = base.t_max
    too_wide = not _fits(base, 1.0, discretization)
    if d == 0.0 or k > MAX_PLD_RELEASES or too_wide:
        why = "" if d == 0.0 else f"; PLD too costly for k > {MAX_PLD_RELEASES}" \
            if k > MAX_PLD_RELEASES else "; eps0 too large for the PLD grid"
        return Composed(k * eps0, f"pure composition k eps0, eps0 = {eps0:.6g}{why}")
    return Composed(compose_epsilon(subsampled_pmf(base, 1.0, discretization), k, d),
                    f"PLD composition of {base.name} (pessimistic, h = {discretization:g})")


def releases_epsilon(f: TradeoffFunction, p_star: float, releases: int, delta: float,
                     masks: MaskRegime | str = MaskRegime.SHARED, *,
                     missingness_class: MissingnessClass | str = MissingnessClass.MAR
                     ) -> Composed:
    """ε at the final δ of k releases of one query, each A being f-DP on Z_miss^n.

    ``SHARED``: C_{p*}(f^{⊗k}), i.e. ln(1 + p*(e^{ε_k(δ/p*)} − 1)) with ε_k from
    :func:`composed_epsilon` (Proposition 9.1). ``FRESH``: C_{p*}(f)^{⊗k} by
    :func:`fresh_masks_epsilon` (Proposition 9.2); beyond ``MAX_PLD_RELEASES`` it raises.

    Raises
    ------
    ValueError
        On an unknown mask regime (``masks must be one of 'shared', 'fresh'``), MNAR,
        p* ∉ (0, 1], a bad k or δ, or an unsupported f.

    References
    ----------
    docs/THEORY.md §9.1–9.3 (derived in this project).
    """
    regime = MaskRegime.parse_fixed(masks)
    p = _check_p_star(p_star)
    require_mar(missingness_class)
    d = check_delta(delta)
    if regime is MaskRegime.FRESH:
        base = _base_loss(f)
        rule = ("k ln(1 + p*(e^eps0 - 1)): pure composition of C_p*(f) (exact at delta = 0)"
                if _closed_form_fresh(f, base, p, d, DISCRETIZATION) else
                f"C_p*(f)^(k-fold) by PLD (pessimistic, h = "
                f"{_fitting_step(base, p, DISCRETIZATION):g})")
        return Composed(fresh_masks_epsilon(f, p, releases, d), rule)
    inner = composed_epsilon(f, releases, min(1.0, d / p))
    return Composed(log1p_c_expm1(inner.epsilon, p), f"C_p* of the composition: {inner.rule}")
