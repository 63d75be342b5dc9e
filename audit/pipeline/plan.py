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
import sys
import time
from dataclasses import dataclass

import numpy as np

from audit.enums import MaskRegime, MissingnessClass
from audit.laws import Law, fresh_releases, shared_releases
from audit.mixture import Mixture
from audit.model.neighbours import NeighbourPair, worst_case_pair
from audit.model.release import Release
from audit.noise import noise_of
from audit.pipeline.ceilings import Comparison
from audit.pipeline.config import AuditConfig
from audit.pipeline.parts import check_parts
from audit.theory import accountant as acc
from audit.theory.noise_theory import theory_of
from audit.theory.pair import pair_epsilon
from audit.theory.pld import MAX_PLD_RELEASES
from audit.theory.tradeoff import TradeoffFunction
from audit.theory.worst_case import check_release_scale, scenario_keys

__all__ = ["AuditPlan", "plan_audit", "ranking_release"]


@dataclass(frozen=True, eq=False)
class AuditPlan:
    """Everything fixed before any sampling: the pair's laws and the theory at that setting."""

    config: AuditConfig
    pair: NeighbourPair
    P: Law
    Q: Law
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
    comparison: Comparison | None = None
    pair_method: str = "exact privacy of the audited pair"

    @property
    def is_scalar(self) -> bool:
        return self.P.is_scalar


def _release_and_constants(cfg: AuditConfig, query):
    """The calibrated release and the FWL constants in the norm its theorem needs."""
    sc = cfg.scenario
    noise = noise_of(sc.noise)
    # as_norm refuses an ℓ2-only FWL query for Laplace: Theorem 4.5 needs ℓ1
    consts = query.fwl_constants(sc.n, sc.d, sc.bound).as_norm(noise.norm)
    scale = noise.calibrate(_sensitivity(cfg, consts), sc.epsilon, sc.delta, sc.calibration)
    return Release(noise.kind, check_release_scale(sc, scale)), consts


def _sensitivity(cfg: AuditConfig, consts) -> float:
    """C_p = 2B Σ_j L_j; refused, naming ``scenario.bound`` and the query's keys, where it
    overflows a float (no release, no law of the pair, could be computed)."""
    keys = scenario_keys(cfg.scenario)
    with np.errstate(over="ignore"):
        total = float(np.sum(consts.lipschitz))
        sensitivity = 2.0 * cfg.scenario.bound * total
    if math.isfinite(sensitivity):
        return sensitivity
    if not math.isfinite(total):
        raise ValueError(f"the Lipschitz constants of {keys} sum to more than a float holds "
                         "(Σ_j L_j overflows): lower the query's parameters")
    top = sys.float_info.max / total / 2.0
    raise ValueError(
        f"scenario.bound must be in (0, {top:.4g}] for {keys} (the release's sensitivity "
        f"2·bound·Σ_j L_j must be a finite float), got scenario.bound="
        f"{cfg.scenario.bound!r}")


def ranking_release(cfg: AuditConfig, query) -> Release:
    """The release ``[scenario]`` describes, calibrated for ``query``: the model's own release,
    or, for a black-box audit, the model the pair search ranks candidate pairs with."""
    return _release_and_constants(cfg, query)[0]


def _reduces_to_one(cfg: AuditConfig) -> bool:
    """k releases of one query with shared masks under a noise whose mean is sufficient
    (Gaussian) are exactly one release at scale/√k (docs/THEORY.md §9.2)."""
    rel = cfg.releases
    return (rel is not None and rel.masks is MaskRegime.SHARED
            and noise_of(cfg.scenario.noise).mean_is_sufficient)


def _law_release(cfg: AuditConfig, release: Release) -> Release:
    """The release the pair's laws are drawn with: σ/√k where k releases reduce to one."""
    if not _reduces_to_one(cfg):
        return release
    return Release(release.noise, release.scale / math.sqrt(cfg.releases.count))


def _k_laws(cfg: AuditConfig, P: Law, Q: Law) -> tuple[Law, Law]:
    """The laws of ``[releases]``' k outputs together: the single-release laws where k = 1 or
    they reduce to one release; else the mixture over the masks of k-fold products (shared
    masks, :func:`audit.laws.shared_releases`) or the k-fold product (fresh masks,
    :func:`audit.laws.fresh_releases`), audited by their exact likelihood ratio."""
    rel = cfg.releases
    if rel is None or rel.count == 1 or _reduces_to_one(cfg):
        return P, Q
    build = shared_releases if rel.masks is MaskRegime.SHARED else fresh_releases
    try:
        return build(P, rel.count), build(Q, rel.count)
    except ValueError as e:
        raise ValueError(
            f"releases: the model cannot audit {rel.count} releases with {rel.masks.value} "
            f"masks of this release ({e}); lower releases.count, or audit it as an "
            "implementation with [releases]") from None


def _k_release_theory(cfg: AuditConfig, curve, p_star: float, audit_delta: float,
                      mclass: MissingnessClass
                      ) -> tuple[str, float | None, Comparison | None]:
    """The regime's bound for k releases of one release whose curve (FWL-refined) is
    ``curve``: Proposition 9.1 (shared masks: C_p* of the k-fold composition) or 9.2 (fresh
    masks: C_p*(f) composed k times); with shared masks, the per-release accounting (what 9.2
    would say) as a comparison, NOT a bound."""
    rel = cfg.releases
    if mclass is MissingnessClass.MNAR:
        return "no theorem (MNAR)", None, None
    k, shared = rel.count, rel.masks is MaskRegime.SHARED  # (fresh k: the design's answer)
    bound = acc.releases_epsilon(curve, p_star, k, audit_delta, rel.masks)
    name = (f"Proposition 9.{1 if shared else 2} ({rel.masks.value} masks, k = {k}): "
            f"{bound.rule}")
    if not shared or k > MAX_PLD_RELEASES:
        return name, float(bound.epsilon), None
    fresh = acc.fresh_masks_epsilon(curve, p_star, k, audit_delta)
    return name, float(bound.epsilon), Comparison(
        float(fresh), "C_p*(f) composed k times by PLD: the per-release accounting")


def _k_release_pair(cfg: AuditConfig, P: Mixture, Q: Mixture, audit_delta: float
                    ) -> tuple[float | None, float | None, str]:
    """ε_pair over the k releases from the single-release pair (P, Q), with its method."""
    rel = cfg.releases
    if rel is None or rel.count == 1 or _reduces_to_one(cfg):  # (P, Q) are the releases
        if not P.is_scalar:
            return None, None, "no exact value for a vector release"
        value = pair_epsilon(P, Q, audit_delta)
        return float(value.value), float(value.error), "exact privacy of the audited pair"
    if not P.is_scalar:
        return None, None, "no exact value for k releases of a vector release"
    value, method = acc.releases_pair_epsilon(P, Q, rel.count, audit_delta, rel.masks)
    if value is None:
        return None, None, method
    return float(value.value), float(value.error), f"exact privacy of the pair: {method}"


def _audit_delta(cfg: AuditConfig, p_star: float) -> float:
    """The δ of the audited claim: as configured, else 0 (a pure noise: Laplace) or p*·δ
    (Theorem 4.7)."""
    if cfg.audit.delta is not None:
        return float(cfg.audit.delta)
    if noise_of(cfg.scenario.noise).pure:
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
    name, value, theory_delta = theory_of(sc.noise).rps_bound(
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
    curve = theory_of(cfg.scenario.noise).fdp_missing(sens_tilde, scale, p_star, scalar)
    return curve, float(acc.epsilon_for_delta(curve, audit_delta))


def _base(cfg: AuditConfig, mu: float, scalar: bool, audit_delta: float) -> float:
    """ε at the audit's δ of the base mechanism A (no missingness) on complete neighbours,
    k-fold composed for ``[releases]`` (:func:`audit.theory.accountant.composed_epsilon`)."""
    theory = theory_of(cfg.scenario.noise)
    if cfg.releases is None:
        return float(theory.base_epsilon(cfg.scenario.epsilon, mu, audit_delta))
    curve = theory.base_curve(mu, scalar)
    return float(acc.composed_epsilon(curve, cfg.releases.count, audit_delta).epsilon)


#: the worst-case pairs already searched, by what the search reads (deterministic: the same
#: scenario, missingness, release law and δ give the same pair); at most _PAIRS_KEPT kept
_PAIRS: dict = {}
_PAIRS_KEPT = 64


def _worst_case_pair(cfg: AuditConfig, query, mech, law_release, audit_delta: float):
    """:func:`audit.model.neighbours.worst_case_pair` for this config, searched once per
    process for each (scenario, missingness, release law, δ): an experiment plans many audits
    that differ only in their trials, seed or releases (0.4 s each for a Gaussian pair)."""
    sc = cfg.scenario
    key = (repr(sc), repr(cfg.missingness), repr(law_release), float(audit_delta))
    if key not in _PAIRS:
        if len(_PAIRS) >= _PAIRS_KEPT:
            _PAIRS.pop(next(iter(_PAIRS)))
        try:
            _PAIRS[key] = worst_case_pair(query, mech, sc.d, sc.n, sc.bound, law_release,
                                          delta=audit_delta)
        except ValueError as exc:
            if not _reduces_to_one(cfg):
                raise
            k = cfg.releases.count  # the pair is searched on one release at sigma/sqrt(k)
            raise ValueError(f"releases.count={k} is too many for a model audit of this "
                             f"release: its k releases are one release at sigma/sqrt(k), whose "
                             f"pair cannot be resolved ({exc}); lower releases.count") from None
    return _PAIRS[key]


def plan_audit(cfg: AuditConfig) -> AuditPlan:
    """Build the worst-case pair and evaluate every ceiling for this config (no sampling).

    Raises
    ------
    ValueError
        When the parts refuse the combination for the model
        (:func:`audit.pipeline.parts.check_parts`), or a theorem's hypotheses fail.
    """
    check_parts(cfg, black_box=False)
    t0 = time.perf_counter()
    sc = cfg.scenario
    mech, query = cfg.components()
    release, consts = _release_and_constants(cfg, query)
    law_release = _law_release(cfg, release)
    p_star, rho = float(mech.p_star(sc.d)), float(mech.rho(sc.d))
    mclass = mech.missing_class
    sens, sens_tilde = consts.sensitivity(), consts.sensitivity_under_rho(rho)
    audit_delta = _audit_delta(cfg, p_star)
    pair = _worst_case_pair(cfg, query, mech, law_release, audit_delta)
    P1, Q1 = pair.mixtures(law_release)
    P, Q = _k_laws(cfg, P1, Q1)
    eps_base = _base(cfg, sens / release.scale, P1.is_scalar, audit_delta)
    eps_pair, eps_pair_error, pair_method = _k_release_pair(cfg, P1, Q1, audit_delta)
    theory, eps_theory, eps_mar = _theory(cfg, p_star, sens_tilde / sens, audit_delta, mclass)
    comparison = None
    curve = eps_fdp = None
    if cfg.releases is not None:
        per_release = theory_of(sc.noise).base_curve(sens_tilde / release.scale,
                                                         P1.is_scalar)
        theory, eps_theory, comparison = _k_release_theory(cfg, per_release, p_star,
                                                            audit_delta, mclass)
    if cfg.releases is None or cfg.releases.count == 1 or _reduces_to_one(cfg):
        curve, eps_fdp = _fdp(cfg, sens_tilde, law_release.scale, p_star, P.is_scalar, mclass,
                              audit_delta)
    return AuditPlan(cfg, pair, P, Q, p_star, rho, mclass, sens, sens_tilde,
                     law_release.scale, audit_delta, eps_base, eps_pair,
                     eps_pair_error, eps_theory, theory, eps_mar, curve, eps_fdp,
                     time.perf_counter() - t0,
                     cfg.releases.count if cfg.releases is not None else 1, comparison,
                     pair_method)
