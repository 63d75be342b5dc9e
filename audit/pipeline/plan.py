"""The audit plan: everything fixed before any sampling.

:func:`plan_audit` turns a validated config into the model objects (query, missingness
mechanism, calibrated release), the worst-case neighbouring pair and its output laws (P, Q),
and every ceiling an audit is compared against: the exact privacy of the pair (ε_pair), the
applicable [RPS] theorem (ε_theory), the f-DP bound derived in this project (ε_fdp,
docs/THEORY.md §7) and the mechanism without missingness (ε_base). A setting outside a
theorem's hypotheses is refused here, before any Monte Carlo work.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from audit.enums import MaskRegime, MissingnessClass
from audit.mixture import Mixture
from audit.model.neighbours import NeighbourPair, worst_case_pair
from audit.model.release import Release
from audit.noise import noise_of
from audit.pipeline.config import AuditConfig
from audit.theory import accountant as acc
from audit.theory.noise_theory import theory_of
from audit.theory.pair import pair_epsilon
from audit.theory.pld import MAX_PLD_RELEASES
from audit.theory.tradeoff import TradeoffFunction

__all__ = ["AuditPlan", "plan_audit", "ranking_release"]


@dataclass(frozen=True, eq=False)
class AuditPlan:
    """Everything fixed before any sampling: the pair's laws and the theory at that setting."""

    config: AuditConfig
    pair: NeighbourPair
    P: Mixture
    Q: Mixture
    p_star: float
    rho: float
    missing_class: MissingnessClass
    sensitivity: float
    sensitivity_tilde: float
    noise_scale: float
    audit_delta: float
    eps_base: float
    eps_pair: float | None
    eps_pair_error: float | None
    eps_theory: float | None
    theory: str
    eps_mar_formula: float | None
    fdp_curve: TradeoffFunction | None
    eps_fdp: float | None
    seconds: float = 0.0
    releases: int = 1
    comparisons: dict = field(default_factory=dict)

    @property
    def is_scalar(self) -> bool:
        return self.P.is_scalar


def _release_and_constants(cfg: AuditConfig, query):
    """The calibrated release and the FWL constants in the norm its theorem needs."""
    sc = cfg.scenario
    noise = noise_of(sc.mechanism)
    # as_norm refuses an ℓ2-only FWL query for Laplace: Theorem 4.5 needs ℓ1
    consts = query.fwl_constants(sc.n, sc.d, sc.bound).as_norm(noise.norm)
    release = Release.calibrated(noise, consts.sensitivity(), sc.epsilon, sc.delta,
                                 sc.calibration)
    return release, consts


def ranking_release(cfg: AuditConfig, query) -> Release:
    """The release ``[scenario]`` describes, calibrated for ``query``: the model's own release,
    or, for a black-box audit, the model the pair search ranks candidate pairs with."""
    return _release_and_constants(cfg, query)[0]


def _k_releases(cfg: AuditConfig, release: Release) -> Release:
    """The release whose single draw is exactly as private as ``[releases]``' k releases.

    k Gaussian releases of the same query from one masked table (shared masks) are, given the
    mask, k independent N(f(z̃), σ²) draws whose mean is sufficient: one release at σ/√k
    (docs/THEORY.md §9). Laplace releases or fresh masks have no such reduction here.
    """
    rel = cfg.releases
    if rel is None:
        return release
    if noise_of(release.noise).pure or rel.masks is not MaskRegime.SHARED:
        raise ValueError(
            f"the model's k-release subject reduces k Gaussian releases with shared masks to "
            f"one (their mean is sufficient), got a {release.noise.value} release with "
            f"{rel.masks.value} masks; audit such releases as an implementation with "
            "[releases], or compute their bounds with python -m audit bound --releases K")
    return Release(release.noise, release.scale / math.sqrt(rel.count))


def _k_release_theory(cfg, p_star, sens_tilde, scale, audit_delta, mclass):
    """[RPS] Theorem 3.2 applied once to the k-fold composition G_(√k μ) (shared masks), and
    the per-release accounting (fresh-mask composition of C_p*(G_μ̃)) as a comparison."""
    k = cfg.releases.count
    if mclass is MissingnessClass.MNAR:
        return "no theorem (MNAR)", None, {}
    mu_k = sens_tilde / scale  # scale is already σ/√k
    eps_k = acc.epsilon_for_delta(acc.tradeoff_gaussian(mu_k), audit_delta / p_star)
    eps, _ = acc.amplify(eps_k, audit_delta / p_star, p_star)
    fresh = acc.fresh_masks_epsilon(acc.tradeoff_gaussian(mu_k / math.sqrt(k)), p_star, k,
                                    audit_delta) if k <= MAX_PLD_RELEASES else None
    comparisons = {} if fresh is None else {
        "eps_fresh_composed": float(fresh),
        "rule": "C_p*(G_mu) composed k times by PLD: the per-release accounting",
        "note": "not a bound for shared masks"}
    return (f"RPS Theorem 3.2 once on the {k}-fold composition (shared masks)", float(eps),
            comparisons)


def _audit_delta(cfg: AuditConfig, p_star: float) -> float:
    """The δ of the audited claim: as configured, else 0 (a pure noise: Laplace) or p*·δ
    (Theorem 4.7)."""
    if cfg.audit.delta is not None:
        return float(cfg.audit.delta)
    if noise_of(cfg.scenario.mechanism).pure:
        return 0.0
    return p_star * cfg.scenario.delta


def _theory(cfg: AuditConfig, p_star: float, ratio: float, audit_delta: float,
            mclass: MissingnessClass) -> tuple[str, float | None, float | None]:
    """The applicable [RPS] upper bound at the audit's δ: (name, ε or None, MAR formula).

    Laplace: Theorem 4.5; classically calibrated Gaussian with ε ≤ 1: Theorem 4.7; otherwise
    Theorem 3.2 (``audit.theory.noise_theory``). A theorem whose δ' exceeds the audited δ gives
    no ε at that δ. MNAR is outside every theorem: the MAR formula's value is returned apart,
    labelled as not a bound.
    """
    sc = cfg.scenario
    name, value, theory_delta = theory_of(sc.mechanism).rps_bound(
        sc.epsilon, sc.delta, sc.calibration, p_star, ratio)
    if audit_delta < theory_delta:
        return name + f" (gives δ'={theory_delta:.3g} > audit δ)", None, None
    if mclass is MissingnessClass.MNAR:
        return name + " (not applicable: MNAR)", None, float(value)
    return name, float(value), None


def _fdp(cfg: AuditConfig, sens_tilde: float, scale: float, p_star: float, scalar: bool,
         mclass: MissingnessClass, audit_delta: float):
    """The §7 curve and its ε at the audited δ (None for MNAR)."""
    if mclass is MissingnessClass.MNAR:
        return None, None
    curve = theory_of(cfg.scenario.mechanism).fdp_missing(sens_tilde, scale, p_star, scalar)
    return curve, float(acc.epsilon_for_delta(curve, audit_delta))


def plan_audit(cfg: AuditConfig) -> AuditPlan:
    """Build the worst-case pair and evaluate every ceiling for this config (no sampling)."""
    t0 = time.perf_counter()
    sc = cfg.scenario
    mech, query = cfg.components()
    release, consts = _release_and_constants(cfg, query)
    release = _k_releases(cfg, release)
    p_star, rho = float(mech.p_star(sc.d)), float(mech.rho(sc.d))
    mclass = mech.missing_class
    sens, sens_tilde = consts.sensitivity(), consts.sensitivity_under_rho(rho)
    scale = release.scale
    audit_delta = _audit_delta(cfg, p_star)
    pair = worst_case_pair(query, mech, sc.d, sc.n, sc.bound, release, delta=audit_delta)
    P, Q = pair.mixtures(release)
    # the base mechanism A (no missingness) on complete neighbours at the same δ
    eps_base = theory_of(sc.mechanism).base_epsilon(sc.epsilon, sens / scale, audit_delta)
    eps_pair = eps_pair_error = None
    if P.is_scalar:
        pv = pair_epsilon(P, Q, audit_delta)
        eps_pair, eps_pair_error = float(pv.value), float(pv.error)
    theory, eps_theory, eps_mar = _theory(cfg, p_star, sens_tilde / sens, audit_delta, mclass)
    comparisons = {}
    if cfg.releases is not None:
        theory, eps_theory, comparisons = _k_release_theory(cfg, p_star, sens_tilde, scale,
                                                            audit_delta, mclass)
    curve, eps_fdp = _fdp(cfg, sens_tilde, scale, p_star, P.is_scalar, mclass, audit_delta)
    return AuditPlan(cfg, pair, P, Q, p_star, rho, mclass, sens, sens_tilde, scale,
                     audit_delta, float(eps_base), eps_pair, eps_pair_error, eps_theory,
                     theory, eps_mar, curve, eps_fdp, time.perf_counter() - t0,
                     cfg.releases.count if cfg.releases is not None else 1, comparisons)
