"""One audit end to end: setting → worst-case pair → pilot → attack → main run → bounds.

The runner ties the parts together and returns an :class:`AuditResult` that puts the
empirical lower bound beside every ceiling: the exact privacy of the audited pair (ε_pair),
the applicable [RPS] theorem (ε_theory) and the f-DP bound derived in this project (ε_fdp,
THEORY §7). For a correct implementation, with probability ≥ confidence,

    eps_lower ≤ eps_pair ≤ eps_theory,   eps_lower ≤ eps_pair ≤ eps_fdp.

Randomness: ``SeedSequence(seed)`` is spawned into three independent streams (pilot of z,
pilot of z', main run); the main run never reuses pilot randomness, so a region chosen on the
pilot is independent of the counts it is evaluated on.
"""

from __future__ import annotations

import math
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats

from audit.theory import accountant as acc
from audit.estimation import estimators as est
from audit._validate import check_delta, check_in_range, check_positive_int
from audit.pipeline.config import AuditConfig
from audit.mixture import Mixture, NoiseKind
from audit.protocols import AttackInput, Score, bin_representatives, load_attack

__all__ = ["AuditSetting", "AuditResult", "build_setting", "run_audit", "package_versions"]


def package_versions() -> dict[str, str]:
    """Versions of Python and the numerical packages, recorded in every result."""
    import numba
    import scipy
    import statsmodels

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "statsmodels": statsmodels.__version__,
    }


@dataclass(frozen=True, eq=False)
class AuditSetting:
    """Everything fixed before any sampling: the pair's laws and the theory at that setting."""

    config: AuditConfig
    pair: Any
    P: Mixture
    Q: Mixture
    p_star: float
    rho: float
    missing_class: str
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
    fdp_curve: Any | None
    eps_fdp: float | None


def _release_and_constants(cfg: AuditConfig, query, d: int, n: int):
    from audit.model.release import Release

    sc = cfg.scenario
    consts = query.fwl_constants(n, d, sc.bound)
    if sc.mechanism == "laplace":
        c1 = consts.as_norm(1)  # refuses an ℓ2-only FWL query: Theorem 4.5 needs ℓ1
        return Release.laplace(c1.sensitivity(), sc.epsilon), c1
    c2 = consts.as_norm(2)
    return Release.gaussian(c2.sensitivity(), sc.epsilon, sc.delta,
                            calibration=sc.calibration), c2


def build_setting(cfg: AuditConfig) -> AuditSetting:
    """Build the worst-case pair and evaluate every ceiling for this config (no sampling)."""
    from audit.model.missingness import make_missingness
    from audit.model.neighbours import worst_case_pair
    from audit.model.queries import make_query

    sc = cfg.scenario
    mech = make_missingness(cfg.missingness.kind, **cfg.missingness.params)
    query = make_query(sc.query, **sc.query_params)
    release, consts = _release_and_constants(cfg, query, sc.d, sc.n)
    p_star = float(mech.p_star(sc.d))
    rho = float(mech.rho(sc.d))
    mclass = mech.missing_class.name
    sens = consts.sensitivity()
    sens_tilde = consts.sensitivity_under_rho(rho)
    ratio = sens_tilde / sens
    scale = release.scale

    if cfg.audit.delta is not None:
        audit_delta = float(cfg.audit.delta)
    elif sc.mechanism == "laplace":
        audit_delta = 0.0
    else:
        audit_delta = p_star * sc.delta
    pair = worst_case_pair(query, mech, sc.d, sc.n, sc.bound, release, delta=audit_delta)
    P, Q = pair.mixtures(release)

    # The base mechanism A (no missingness) on complete neighbours at the same δ.
    if sc.mechanism == "laplace":
        eps_base = sc.epsilon
    else:
        eps_base = acc.epsilon_for_delta(acc.tradeoff_gaussian(sens / scale), audit_delta)

    eps_pair = eps_pair_error = None
    if P.is_scalar:
        from audit.theory.pair import pair_epsilon

        pv = pair_epsilon(P, Q, audit_delta)
        eps_pair, eps_pair_error = float(pv.value), float(pv.error)

    theory, eps_theory, eps_mar = _theory(cfg, p_star, ratio, audit_delta, mclass)
    curve = eps_fdp = None
    if mclass != "MNAR":
        if sc.mechanism == "gaussian":
            curve = acc.fdp_missing_gaussian(sens_tilde, scale, p_star)
        else:
            curve = acc.fdp_missing_laplace(sens_tilde, scale, p_star, scalar_output=P.is_scalar)
        eps_fdp = float(acc.epsilon_for_delta(curve, audit_delta))
    return AuditSetting(cfg, pair, P, Q, p_star, rho, mclass, sens, sens_tilde, scale,
                        audit_delta, float(eps_base), eps_pair, eps_pair_error, eps_theory,
                        theory, eps_mar, curve, eps_fdp)


def _theory(cfg: AuditConfig, p_star: float, ratio: float, audit_delta: float, mclass: str):
    """The applicable [RPS] upper bound at the audit's δ, as (name, ε or None, MAR formula)."""
    sc = cfg.scenario
    if sc.mechanism == "laplace":
        name = "RPS Theorem 4.5"
        value = acc.laplace_fwl_bound(sc.epsilon, p_star, ratio)
    elif sc.calibration == "classical" and sc.epsilon <= 1.0:
        name = "RPS Theorem 4.7"
        value, theory_delta = acc.gaussian_fwl_bound(sc.epsilon, sc.delta, p_star, ratio)
        if audit_delta < theory_delta:
            return name + f" (gives δ'={theory_delta:.3g} > audit δ)", None, None
    else:
        name = "RPS Theorem 3.2"
        value, theory_delta = acc.amplify(sc.epsilon, sc.delta, p_star)
        if audit_delta < theory_delta:
            return name + f" (gives δ'={theory_delta:.3g} > audit δ)", None, None
    if mclass == "MNAR":
        # Not a bound: MNAR is outside every theorem. Kept apart for the stress test.
        return name + " (not applicable: MNAR)", None, float(value)
    return name, float(value), None


@dataclass
class AuditResult:
    """What one audit found, with every ceiling beside it (JSON-serialisable via to_dict)."""

    name: str
    eps_lower: float
    eps_point: float | None
    eps_pair: float | None
    eps_pair_error: float | None
    eps_theory: float | None
    theory: str
    eps_fdp: float | None
    eps_base: float
    eps_mar_formula: float | None
    delta: float
    p_star: float
    rho: float
    missing_class: str
    noise_scale: float
    attack: str
    selection: str
    trials: int
    pilot_trials: int
    seconds: float
    confidence: float
    seed: int
    witness: dict
    config: dict
    versions: dict = field(default_factory=package_versions)

    def to_dict(self) -> dict:
        return _jsonable(asdict(self))

    def ceiling_violations(self) -> list[str]:
        """Every ceiling that ε_lower exceeds: empty for a correct implementation w.p. ≥ 1 − α.

        ε_pair is compared with its stated numerical error added; the theory bounds as they
        are. A non-empty list from a valid estimator is evidence of a bug, in the code or in
        the theory it implements (THEORY §8).
        """
        out = []
        if self.eps_pair is not None and self.eps_lower > self.eps_pair + (
                self.eps_pair_error or 0.0):
            out.append(f"eps_lower={self.eps_lower:.6g} > eps_pair={self.eps_pair:.6g}")
        if self.eps_theory is not None and self.eps_lower > self.eps_theory:
            out.append(f"eps_lower={self.eps_lower:.6g} > eps_theory={self.eps_theory:.6g} "
                       f"({self.theory})")
        if self.eps_fdp is not None and self.eps_lower > self.eps_fdp:
            out.append(f"eps_lower={self.eps_lower:.6g} > eps_fdp={self.eps_fdp:.6g}")
        return out


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
    if isinstance(obj, NoiseKind):
        return obj.value
    return obj


# ---------------------------------------------------------------------------- sampling steps
def _streams(seed: int) -> tuple[int, int, int]:
    """Independent 63-bit seeds for the two pilots and the main run."""
    children = np.random.SeedSequence(seed).spawn(3)
    return tuple(int(c.generate_state(1, np.uint64)[0] >> np.uint64(1)) for c in children)


def _statistic_for(score: Score, P: Mixture, Q: Mixture, pilot_values: np.ndarray, bins: int):
    """The engine statistic and its fixed edges, decided before the main run."""
    from audit.simulation import engine

    if score.kernel is None:
        return engine.OutputStatistic(engine.default_edges(P, Q, bins))
    lo, hi = np.quantile(pilot_values, [0.0, 1.0])
    span = max(hi - lo, 1e-9)
    edges = np.linspace(lo - 0.25 * span, hi + 0.25 * span, bins + 1)
    if score.kernel[0] == "llr":
        return engine.LLRStatistic(edges)
    _, w, c = score.kernel
    return engine.LinearStatistic(np.asarray(w, dtype=np.float64), float(c), edges)


def _histogrammed(score: Score, st: AuditSetting, x: np.ndarray) -> np.ndarray:
    """The quantity the engine histograms for these raw outputs: the output itself (scalar
    outputs), the exact LLR, or the linear statistic — not the score, which a ``transform``
    may map from it (e.g. the density-ratio attack on vector outputs)."""
    if score.kernel is None:
        return np.asarray(x, dtype=np.float64)
    if score.kernel[0] == "llr":
        return st.P.logpdf(x) - st.Q.logpdf(x)
    _, w, c = score.kernel
    return np.asarray(x, dtype=np.float64) @ np.asarray(w, dtype=np.float64) + float(c)


def _histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts with underflow and overflow bins, the engine's layout (left-closed bins)."""
    idx = np.searchsorted(edges, values, side="right")
    return np.bincount(idx, minlength=len(edges) + 1).astype(np.int64)


def _model_bin_probabilities(M: Mixture, edges: np.ndarray) -> np.ndarray:
    cdf = M.cdf(edges)
    return np.diff(np.concatenate([[0.0], cdf, [1.0]])).clip(min=0.0)


# Guard level of region selection: a candidate is ranked by the bound it would give with its
# counts moved this many standard deviations against it (model), or by its Clopper–Pearson
# bound at this level (pilot). Without it, the maximum over thousands of candidate regions
# picks tail regions whose few counts happened to (or are expected to) look good, and whose
# bound on the main run is then 0 (the winner's curse).
_MODEL_PESSIMISM_SD = 1.0
_PILOT_GUARD_ALPHA = 1e-3


def select_region_by_model(P, Q, edges, scores, trials, delta, alpha) -> est.Region:
    """White-box region choice from the exact laws, using no sample at all.

    For every threshold region of the score (both directions), predict the Clopper–Pearson
    bound the main run would give with expected counts moved ``_MODEL_PESSIMISM_SD`` standard
    deviations against it, and keep the best. Valid because the choice does not depend on the
    data it is later evaluated on.
    """
    trials = check_positive_int(trials, "trials")
    delta = check_delta(delta)
    alpha = check_in_range("alpha", alpha, 0.0, 1.0, lo_closed=False, hi_closed=False)
    edges = np.asarray(edges, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if scores.size != edges.size + 1:
        raise ValueError(f"scores must have length len(edges)+1={edges.size + 1}, "
                         f"got {scores.size}")
    if np.isnan(scores).any():
        raise ValueError("scores must not contain NaN")
    pp = _model_bin_probabilities(P, edges)
    pq = _model_bin_probabilities(Q, edges)
    thresholds, inv = np.unique(scores, return_inverse=True)
    mp = np.bincount(inv, weights=pp, minlength=thresholds.size)
    mq = np.bincount(inv, weights=pq, minlength=thresholds.size)
    # Masses of {score >= t} and {score <= t} for every candidate t.
    p_ge, q_ge = np.cumsum(mp[::-1])[::-1], np.cumsum(mq[::-1])[::-1]
    p_le, q_le = np.cumsum(mp), np.cumsum(mq)
    n = float(trials)
    a = alpha / 2.0
    best, region = -np.inf, est.Region(est.Direction.Z_VS_ZPRIME, float(thresholds[-1]))
    for direction, num, den in ((est.Direction.Z_VS_ZPRIME, p_ge, q_ge),
                                (est.Direction.ZPRIME_VS_Z, q_le, p_le)):
        k_num = np.clip(num * n - _MODEL_PESSIMISM_SD * np.sqrt(num * n), 0.0, n)
        k_den = np.clip(den * n + _MODEL_PESSIMISM_SD * np.sqrt(den * n), 0.0, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = np.where(k_num > 0, stats.beta.ppf(a, k_num, n - k_num + 1), 0.0)
            hi = np.where(k_den < n, stats.beta.isf(a, k_den + 1, n - k_den), 1.0)
            pred = np.where(lo > delta, np.log((lo - delta) / hi), -np.inf)
        i = int(np.argmax(pred))
        if pred[i] > best:
            best, region = pred[i], est.Region(direction, float(thresholds[i]))
    return region


def run_audit(cfg: AuditConfig, *, progress: bool = False, setting: AuditSetting | None = None
              ) -> AuditResult:
    """Run one audit as configured.

    Parameters
    ----------
    cfg : AuditConfig
        Validated configuration (:func:`audit.pipeline.config.load_config`).
    progress : bool
        Show a progress bar over the main run's chunks.
    setting : AuditSetting, optional
        A precomputed :func:`build_setting` for this config (saves rebuilding it).

    Returns
    -------
    AuditResult
    """
    from audit.simulation import engine

    t0 = time.perf_counter()
    st = setting if setting is not None else build_setting(cfg)
    au = cfg.audit
    attack = load_attack(au.attack)
    seed_pp, seed_pq, seed_main = _streams(au.seed)
    m = au.pilot_size
    pilot_p = engine.sample_outputs(st.P, m, seed_pp)
    pilot_q = engine.sample_outputs(st.Q, m, seed_pq)
    # Black-box attacks are fitted on one half of the pilot and their region is chosen on the
    # other half, so the region is not tuned to the noise the score was fitted to.
    half = m // 2 if not attack.white_box else m
    score = attack.fit(AttackInput(st.P, st.Q, pilot_p[:half], pilot_q[:half]))
    sel_p, sel_q = (pilot_p[half:], pilot_q[half:]) if half < m else (pilot_p, pilot_q)
    ps, qs = score(sel_p), score(sel_q)
    hp, hq = _histogrammed(score, st, sel_p), _histogrammed(score, st, sel_q)
    statistic = _statistic_for(score, st.P, st.Q, np.concatenate([hp, hq]), au.bins)
    edges = statistic.edges
    bin_scores = score.per_bin(edges)

    selection = au.selection
    if selection == "auto":
        selection = "model" if (attack.white_box and st.P.is_scalar) else "pilot"
    if selection == "model" and not (attack.white_box and st.P.is_scalar):
        raise ValueError("audit.selection='model' needs a white-box attack and a scalar output")

    counts = engine.run_histograms(st.P, st.Q, statistic, au.trials, seed_main,
                                   n_jobs=au.jobs, progress=progress,
                                   checkpoint=au.checkpoint)
    n = au.trials
    if selection == "grid":
        thresholds = np.unique(np.quantile(np.concatenate([ps, qs]), np.linspace(0, 1, 41)))
        if score.kernel is None:
            thresholds = np.unique(score(np.quantile(np.concatenate([sel_p, sel_q]),
                                                     np.linspace(0, 1, 41))))
        res = est.grid_bound(counts.counts_p, counts.counts_q, bin_scores, thresholds,
                             st.audit_delta, au.alpha)
    else:
        if selection == "model":
            region = select_region_by_model(st.P, st.Q, edges, bin_scores, n, st.audit_delta,
                                            au.alpha)
        else:
            cp, cq = _histogram(hp, edges), _histogram(hq, edges)
            region = est.select_region_on_pilot(cp, cq, bin_scores, st.audit_delta,
                                                pilot_alpha=_PILOT_GUARD_ALPHA)
        res = est.region_bound(counts.counts_p, counts.counts_q, bin_scores, region,
                               st.audit_delta, au.alpha)
        res = replace(res, method=selection)
    witness = _jsonable(asdict(res))
    return AuditResult(
        name=cfg.name, eps_lower=float(res.eps_lower), eps_point=res.plug_in(),
        eps_pair=st.eps_pair, eps_pair_error=st.eps_pair_error, eps_theory=st.eps_theory,
        theory=st.theory, eps_fdp=st.eps_fdp,
        eps_base=st.eps_base, eps_mar_formula=st.eps_mar_formula, delta=st.audit_delta,
        p_star=st.p_star, rho=st.rho, missing_class=st.missing_class,
        noise_scale=st.noise_scale, attack=au.attack, selection=selection, trials=n,
        pilot_trials=m, seconds=time.perf_counter() - t0, confidence=au.confidence,
        seed=au.seed, witness=witness, config=cfg.to_dict(),
    )




@dataclass(frozen=True, eq=False)
class TradeoffAudit:
    """Empirical trade-off points of one pair, simultaneously valid at ``points.alpha``.

    ``estimates`` are the plug-in (α, β) of the same tests (not bounds), ``fdp_violation``
    is max_i f(α_hi,i) − β_hi,i for the §7 curve f (positive = the curve is violated at the
    stated confidence).
    """

    setting: AuditSetting
    points: est.TradeoffPoints
    estimates: np.ndarray
    fdp_violation: float | None
    trials: int
    seconds: float


def run_tradeoff_audit(cfg: AuditConfig, *, n_thresholds: int = 12, progress: bool = False,
                       setting: AuditSetting | None = None) -> TradeoffAudit:
    """Empirical trade-off points for a scalar-output audit, checked against the §7 curve.

    Thresholds on the exact log-likelihood ratio are declared from pilot quantiles (the pilot
    streams are independent of the main run), and every point's two error bounds hold
    simultaneously at 1 − alpha (Bonferroni, :func:`audit.estimation.estimators.empirical_tradeoff_points`).
    """
    from audit.simulation import engine

    t0 = time.perf_counter()
    st = setting if setting is not None else build_setting(cfg)
    if not st.P.is_scalar:
        raise ValueError("run_tradeoff_audit needs a scalar output")
    seed_pp, seed_pq, seed_main = _streams(cfg.audit.seed)
    m = cfg.audit.pilot_size
    pilot = np.concatenate([engine.sample_outputs(st.P, m, seed_pp),
                            engine.sample_outputs(st.Q, m, seed_pq)])

    def llr(x: np.ndarray) -> np.ndarray:
        return st.P.logpdf(x) - st.Q.logpdf(x)

    edges = engine.default_edges(st.P, st.Q, cfg.audit.bins)
    bin_scores = llr(bin_representatives(edges))
    thresholds = np.unique(np.quantile(llr(pilot), np.linspace(0.02, 0.98, n_thresholds)))
    counts = engine.run_histograms(st.P, st.Q, engine.OutputStatistic(edges), cfg.audit.trials,
                                   seed_main, n_jobs=cfg.audit.jobs, progress=progress,
                                   checkpoint=cfg.audit.checkpoint)
    points = est.empirical_tradeoff_points(counts.counts_p, counts.counts_q, bin_scores,
                                           thresholds, cfg.audit.alpha)
    n = cfg.audit.trials
    cp, cq = counts.counts_p, counts.counts_q
    rows = []
    for order in ("T(P,Q)", "T(Q,P)"):
        for t in thresholds:
            if order == "T(P,Q)":  # reject P on {score <= t}
                rows.append((cp[bin_scores <= t].sum() / n, cq[bin_scores > t].sum() / n))
            else:  # reject Q on {score >= t}
                rows.append((cq[bin_scores >= t].sum() / n, cp[bin_scores < t].sum() / n))
    violation = None
    if st.fdp_curve is not None:
        violation = est.tradeoff_violation(points, st.fdp_curve)
    return TradeoffAudit(st, points, np.asarray(rows), violation, n, time.perf_counter() - t0)
