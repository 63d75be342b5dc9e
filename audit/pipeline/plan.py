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

from audit.enums import MissingnessClass
from audit.laws import Law
from audit.model.neighbours import NeighbourPair, worst_case_pair
from audit.model.release import Release
from audit.noise import noise_of
from audit.pipeline.ceilings import Comparison
from audit.pipeline.config import AuditConfig
from audit.pipeline.parts import check_parts
from audit.pipeline.repeated import OneRelease, releases_of
from audit.pipeline.scenario import check_release_scale, scenario_keys
from audit.theory import accountant as acc
from audit.theory.noise_theory import theory_of
from audit.theory.tradeoff import TradeoffFunction

__all__ = ["build_plan", "AuditPlan", "plan_audit", "ranking_release"]


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


def _audit_delta(cfg: AuditConfig, p_star: float) -> float:
    """The δ of the audited claim: as configured, else 0 (a pure noise: Laplace) or p*·δ
    (Theorem 4.7)."""
    if cfg.audit.delta is not None:
        return float(cfg.audit.delta)
    if noise_of(cfg.scenario.noise).pure:
        return 0.0
    return p_star * cfg.scenario.delta


def _rps(cfg: AuditConfig, p_star: float, ratio: float, audit_delta: float,
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


#: the worst-case pairs already searched, by what the search reads (deterministic: the same
#: scenario, missingness, release law and δ give the same pair); at most _PAIRS_KEPT kept
_PAIRS: dict = {}
_PAIRS_KEPT = 64


def _worst_case_pair(cfg: AuditConfig, query, mech, law_release, audit_delta: float,
                     releases: OneRelease):
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
            if not releases.reduces_to_one:
                raise
            k = releases.count  # the pair is searched on one release at sigma/sqrt(k)
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
    return build_plan(cfg)


def build_plan(cfg: AuditConfig) -> AuditPlan:
    """:func:`plan_audit` of a config whose parts were asked already (the factory's call:
    :func:`audit.pipeline.factory.assemble` asks them once for the whole audit)."""
    t0 = time.perf_counter()
    sc = cfg.scenario
    mech, query = cfg.components()
    releases = releases_of(cfg)
    release, consts = _release_and_constants(cfg, query)
    law_release = releases.law_release(release)
    p_star, rho = float(mech.p_star(sc.d)), float(mech.rho(sc.d))
    mclass = mech.missing_class
    sens, sens_tilde = consts.sensitivity(), consts.sensitivity_under_rho(rho)
    audit_delta = _audit_delta(cfg, p_star)
    pair = _worst_case_pair(cfg, query, mech, law_release, audit_delta, releases)
    P1, Q1 = pair.mixtures(law_release)
    P, Q = releases.laws(P1, Q1)
    eps_base = releases.base_epsilon(sc.epsilon, sens / release.scale, P1.is_scalar,
                                     audit_delta)
    eps_pair, eps_pair_error, pair_method = releases.pair_epsilon(P1, Q1, audit_delta)
    rps_name, rps_eps, eps_mar = _rps(cfg, p_star, sens_tilde / sens, audit_delta, mclass)
    theory, eps_theory, comparison = releases.theory(
        lambda: theory_of(sc.noise).base_curve(sens_tilde / release.scale, P1.is_scalar),
        p_star, audit_delta, mclass, (rps_name, rps_eps))
    curve = eps_fdp = None
    if releases.single:
        curve, eps_fdp = _fdp(cfg, sens_tilde, law_release.scale, p_star, P.is_scalar, mclass,
                              audit_delta)
    return AuditPlan(cfg, pair, P, Q, p_star, rho, mclass, sens, sens_tilde,
                     law_release.scale, audit_delta, eps_base, eps_pair,
                     eps_pair_error, eps_theory, theory, eps_mar, curve, eps_fdp,
                     time.perf_counter() - t0, releases.count, comparison, pair_method)
