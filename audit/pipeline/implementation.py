"""Audits of implementations run as black boxes: a DP library's release or a user's callable.

The steps are those of :mod:`audit.pipeline.runner` with the numba model of A_D replaced by
the implementation itself (``audit.simulation.callables``): every call sees a dataset whose
records were all masked by the missingness mechanism. The plan fixes the pair (given, or the
worst-case search for the declared query and bounds) and the claims under test — the
implementation's own (ε, δ), and, where the mechanism is MAR, that claim amplified by [RPS]
Theorem 3.2 with the mechanism's p*. Then:

1. a first call checks that the implementation releases numbers (one clear error if not);
2. the pilot (independent streams) is split: the attack is fitted on one half, the region is
   chosen on the other;
3. the main run either runs its whole budget and bounds ε by Clopper–Pearson on the declared
   region (``mode = "fixed"``), or bets against the claims after every chunk and stops as soon
   as the claim is refuted (``mode = "sequential"``, :mod:`audit.estimation.sequential`,
   anytime-valid).

A claim is refuted at the stated confidence when ε_lower exceeds it
(:meth:`audit.pipeline.results.AuditResult.ceiling_violations`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from audit.enums import AuditMode, MissingnessClass
from audit.estimation import regions
from audit.estimation.sequential import BettingTest, PairCounts
from audit.model.implementation import Claim
from audit.model.missingness import make_missingness
from audit.model.neighbours import NeighbourPair, worst_case_pair
from audit.model.queries import make_query
from audit.pipeline.config import AuditConfig
from audit.pipeline.plan import _release_and_constants
from audit.pipeline.results import AuditResult, to_jsonable
from audit.protocols import Pilot, load_attack
from audit.statistics import Statistic, bin_indices, edges_spanning
from audit.theory import accountant as acc

__all__ = ["ImplementationPlan", "plan_implementation_audit", "run_implementation_audit",
           "DEFAULT_PILOT"]

#: Pilot calls per side when ``audit.pilot_trials`` is not set: a fifth of the budget, at least
#: 1,000 and at most 50,000 (libraries run thousands, not millions, of calls per second).
DEFAULT_PILOT = (1_000, 50_000)
#: Grid of claimed ε tested by the sequential mode: these fractions of the claim (and the
#: amplified claim), so a refutation below the claim is reported too.
SEQUENTIAL_FRACTIONS = np.arange(1, 9) / 8


@dataclass(frozen=True, eq=False)
class ImplementationPlan:
    """Everything fixed before any call: the implementation, the pair, the claims."""

    config: AuditConfig
    implementation: object
    claim: Claim
    z: np.ndarray
    z_prime: np.ndarray
    missingness: object
    p_star: float
    rho: float
    missing_class: MissingnessClass
    eps_amplified: float | None
    theory: str
    dim: int
    seconds: float

    @property
    def pilot_size(self) -> int:
        au = self.config.audit
        if au.pilot_trials is not None:
            return au.pilot_trials
        lo, hi = DEFAULT_PILOT
        return max(lo, min(au.trials // 5, hi))


def _pair(cfg: AuditConfig, mech, query) -> tuple[np.ndarray, np.ndarray]:
    if cfg.pair is not None:
        pair = NeighbourPair(np.asarray(cfg.pair.z, dtype=np.float64),
                             np.asarray(cfg.pair.z_prime, dtype=np.float64),
                             _differing_index(cfg.pair), query, mech, cfg.scenario.bound)
        return pair.z, pair.z_prime
    release, _ = _release_and_constants(cfg, query)
    sc = cfg.scenario
    pair = worst_case_pair(query, mech, sc.d, sc.n, sc.bound, release, delta=0.0)
    return pair.z, pair.z_prime


def _differing_index(pair) -> int:
    z = np.asarray(pair.z, dtype=np.float64)
    zp = np.asarray(pair.z_prime, dtype=np.float64)
    rows = np.flatnonzero(~np.all((z == zp) | (np.isnan(z) & np.isnan(zp)), axis=1))
    if rows.size != 1:
        raise ValueError(f"pair.z and pair.z_prime must differ in exactly one record, got "
                         f"{rows.size} differing records")
    return int(rows[0])


def plan_implementation_audit(cfg: AuditConfig, implementation=None) -> ImplementationPlan:
    """Build the implementation (or use ``implementation``), probe it, fix the pair and the
    claims. Raises ``ValueError`` (an ``ImplementationError``) if its first call fails."""
    from audit.simulation.callables import probe

    t0 = time.perf_counter()
    impl = implementation if implementation is not None else cfg.implementation.build()
    claim = impl.claim
    sc = cfg.scenario
    mech = make_missingness(cfg.missingness.kind, **cfg.missingness.params)
    query = make_query(sc.query, **sc.query_params)
    z, z_prime = _pair(cfg, mech, query)
    dim = probe(impl, z, mech, cfg.audit.seed)
    p_star, rho = float(mech.p_star(sc.d)), float(mech.rho(sc.d))
    if mech.missing_class is MissingnessClass.MNAR:
        amplified, theory = None, "no amplification theorem (MNAR)"
    else:
        amplified = acc.amplify(claim.epsilon, claim.delta, p_star)[0]
        theory = f"the claim amplified by RPS Theorem 3.2 (p* = {p_star:.4g})"
    return ImplementationPlan(cfg, impl, claim, z, z_prime, mech, p_star, rho,
                              mech.missing_class, amplified, theory, dim,
                              time.perf_counter() - t0)


def _run(plan: ImplementationPlan, trials: int, seed: int):
    from audit.simulation.callables import CallableRun

    impl_cfg = plan.config.implementation
    return CallableRun(plan.implementation, plan.z, plan.z_prime, plan.missingness,
                       impl_cfg.chunk if impl_cfg is not None else 1000, trials, seed,
                       plan.dim, impl_cfg.batch if impl_cfg is not None else True)


def _bar(total: int, label: str, progress: bool):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="chunk", leave=False)


def _draw_pilot(plan: ImplementationPlan, size: int, seed: int, progress: bool) -> Pilot:
    from audit.simulation.callables import iter_chunks

    run = _run(plan, size, seed)
    bar = _bar(run.n_chunks, f"{plan.config.name}: pilot", progress)
    try:
        chunks = list(iter_chunks(run, n_jobs=plan.config.audit.jobs,
                                  on_chunk=None if bar is None else lambda c: bar.update(1)))
    finally:
        if bar is not None:
            bar.close()
    return Pilot(np.concatenate([c[1] for c in chunks]), np.concatenate([c[2] for c in chunks]))


def _statistic(score, pilot: Pilot, bins: int) -> Statistic:
    """Edges over the finite projected pilot values (NaN and ±inf have bins of their own)."""
    values = np.concatenate([score.projection.evaluate(pilot.p),
                             score.projection.evaluate(pilot.q)])
    finite = values[np.isfinite(values)]
    edges = edges_spanning(finite, bins) if finite.size else np.linspace(-1.0, 1.0, bins + 1)
    return Statistic(score.projection, edges)


def _claims(plan: ImplementationPlan) -> np.ndarray:
    grid = list(plan.claim.epsilon * SEQUENTIAL_FRACTIONS)
    if plan.eps_amplified is not None and plan.eps_amplified > 0:
        grid.append(plan.eps_amplified)
    return np.unique(np.asarray(grid, dtype=np.float64))


class _MainRun:
    """Counts of the main run, and the sequential test on the declared region."""

    def __init__(self, plan, statistic, score, region, sequential: bool) -> None:
        self.statistic = statistic
        self.in_region = region.mask(score.per_bin(statistic.edges))
        self.numerator_is_p = region.direction is regions.Direction.Z_VS_ZPRIME
        self.counts_p = np.zeros(statistic.n_bins, dtype=np.int64)
        self.counts_q = np.zeros(statistic.n_bins, dtype=np.int64)
        self.test = BettingTest(_claims(plan), plan.claim.delta, plan.config.audit.alpha) \
            if sequential else None
        self.trials = 0

    def add(self, out_p: np.ndarray, out_q: np.ndarray) -> bool:
        """Count a chunk; True when the sequential test refuted the claim (stop)."""
        edges = self.statistic.edges
        ip = bin_indices(self.statistic.evaluate(out_p), edges)
        iq = bin_indices(self.statistic.evaluate(out_q), edges)
        self.counts_p += np.bincount(ip, minlength=self.statistic.n_bins)
        self.counts_q += np.bincount(iq, minlength=self.statistic.n_bins)
        self.trials += out_p.shape[0]
        if self.test is None:
            return False
        a, b = self.in_region[ip], self.in_region[iq]
        self.test.update(PairCounts.from_indicators(*((a, b) if self.numerator_is_p
                                                      else (b, a))))
        return self.test.refuted()


def _main(plan, statistic, score, region, seed, progress) -> _MainRun:
    from audit.simulation.callables import iter_chunks

    au = plan.config.audit
    state = _MainRun(plan, statistic, score, region, au.mode is AuditMode.SEQUENTIAL)
    run = _run(plan, au.trials, seed)
    bar = _bar(run.n_chunks, f"{plan.config.name}: main run", progress)
    chunks = iter_chunks(run, n_jobs=au.jobs, checkpoint=au.checkpoint,
                         on_chunk=None if bar is None else lambda c: bar.update(1))
    try:
        for _, out_p, out_q in chunks:
            if state.add(out_p, out_q):
                break
    finally:
        chunks.close()
        if bar is not None:
            bar.close()
    return state


def _bound(plan, state: _MainRun, score, statistic, region
           ) -> tuple[float, float | None, dict]:
    """(ε_lower, plug-in estimate, witness): Clopper–Pearson on the region (fixed mode), or
    the anytime-valid bound of the betting test (sequential mode: the fixed-n interval is not
    valid after a data-dependent stop, and no plug-in estimate is reported)."""
    alpha, delta = plan.config.audit.alpha, plan.claim.delta
    if state.test is None:
        res = regions.region_bound(state.counts_p, state.counts_q,
                                   score.per_bin(statistic.edges), region, delta, alpha)
        return float(res.eps_lower), res.plug_in(), to_jsonable(res)
    summary = state.test.summary()
    witness = {"eps_lower": summary["eps_lower"], "direction": region.direction.value,
               "threshold": region.threshold, "method": "sequential betting e-process",
               "alpha": alpha, "delta": delta, "calls_per_side": state.trials,
               "stopped_early": state.trials < plan.config.audit.trials,
               "claims_tested": summary["epsilons"], "stopped_at": summary["stopped_at"],
               "max_log_wealth": summary["max_log_wealth"]}
    return summary["eps_lower"], None, witness


def _refutations(plan: ImplementationPlan, state: _MainRun) -> list[str]:
    """The claims the sequential test rejected: each proves ε > that claim at level α."""
    if state.test is None:
        return []
    out = []
    for label, eps in (("the claim", plan.claim.epsilon),
                       ("the amplified claim (eps_theory)", plan.eps_amplified)):
        if eps is not None and eps > 0 and state.test.refuted(eps):
            out.append(f"{label} epsilon={eps:.6g} refuted by the sequential test after "
                       f"{state.trials:,} calls per side (eps > {eps:.6g} at "
                       f"{1 - plan.config.audit.alpha:.0%} confidence)")
    return out


def run_implementation_audit(cfg: AuditConfig, *, progress: bool = False,
                             plan: ImplementationPlan | None = None,
                             implementation=None) -> AuditResult:
    """Audit the implementation ``cfg`` names (or ``implementation``) as a black box."""
    from audit.pipeline.runner import _streams, _Timer

    timer = _Timer()
    plan = plan if plan is not None else plan_implementation_audit(cfg, implementation)
    timer.phases["plan"] = plan.seconds
    au = cfg.audit
    attack = load_attack(au.attack)
    seed_pilot, _, seed_main = _streams(au.seed)
    with timer.phase("pilot"):
        pilot = _draw_pilot(plan, plan.pilot_size, seed_pilot, progress)
    with timer.phase("fit"):
        fit_part, select_part = pilot.split(plan.pilot_size // 2)
        score = attack.fit(fit_part)
        statistic = _statistic(score, fit_part, au.bins)
        region = regions.select_region_on_pilot(
            statistic.counts(select_part.p), statistic.counts(select_part.q),
            score.per_bin(statistic.edges), plan.claim.delta,
            pilot_alpha=regions.PILOT_GUARD_ALPHA)
    with timer.phase("main run"):
        state = _main(plan, statistic, score, region, seed_main, progress)
    with timer.phase("selection and bound"):
        eps_lower, eps_point, witness = _bound(plan, state, score, statistic, region)
    impl = plan.implementation
    return AuditResult(
        name=cfg.name, eps_lower=eps_lower, eps_point=eps_point, eps_pair=None,
        eps_pair_error=None, eps_theory=plan.eps_amplified, theory=plan.theory, eps_fdp=None,
        eps_base=plan.claim.epsilon, eps_mar_formula=None, delta=plan.claim.delta,
        p_star=plan.p_star, rho=plan.rho, missing_class=plan.missing_class.name,
        noise_scale=float("nan"), attack=au.attack, selection=f"pilot ({au.mode.value})",
        trials=state.trials, pilot_trials=plan.pilot_size, seconds=timer.total,
        confidence=au.confidence, seed=au.seed, witness=witness, config=cfg.to_dict(),
        timings=timer.phases, eps_claim=plan.claim.epsilon, refutations=_refutations(plan, state),
        claim={"epsilon": plan.claim.epsilon, "delta": plan.claim.delta,
               "note": plan.claim.note, "implementation": getattr(impl, "name", "?")},
    )
