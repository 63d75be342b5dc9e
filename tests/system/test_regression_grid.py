"""Regression grid: the theory is never violated (issue 5, item 4).

Every scenario of a fixed grid (mechanism × query × missingness × ε × p*, docs/THEORY.md §3–§8) is
built as a config dict through :func:`audit.pipeline.config.config_from_dict`, audited end to
end with :func:`audit.pipeline.runner.run_audit`, and checked by one shared function,
:func:`check_theory_holds`:

* deterministic (no sampling), wherever the exact pair privacy ε_pair exists (scalar output):
  ε_pair ≤ ε_theory and ε_pair ≤ ε_fdp, each up to ε_pair's stated numerical error plus a tiny
  tolerance (:data:`TOL`); and ε_fdp ≤ ε_theory (the §7 curves are tighter than Theorems
  4.5 / 4.7, which they imply);
* statistical: ``result.ceiling_violations() == []``, i.e. ε_lower ≤ ε_pair (+ its error),
  ε_lower ≤ ε_theory and ε_lower ≤ ε_fdp;
* for the scalar Gaussian scenarios and a few Laplace ones, the empirical trade-off points of
  :func:`audit.pipeline.runner.run_tradeoff_audit` lie above the §7 curve: ``fdp_violation <= 0``.

False-failure probability. Each statistical statement (one ε lower bound, or one set of
simultaneously valid trade-off points) fails with probability ≤ 1 − confidence for a correct
implementation. Every audit here runs at ``confidence = 1 − FAMILY_ALPHA / N_STATEMENTS``
(Bonferroni over the whole family: every grid audit plus every trade-off audit, which is at
least as strict as 1 − 1e-3/len(GRID)), so the whole grid fails spuriously with probability
≤ FAMILY_ALPHA = 1e-3. Seeds are fixed, so a run is reproducible; a failure is evidence of a
bug, in the code or in the theory it implements (docs/THEORY.md §7–§8), not noise to re-run away.

The grid's check can fail: ``test_broken_*`` monkeypatch the accountant functions the runner
calls (``runner`` does ``from audit import accountant as acc``, so patching the attributes
of :mod:`audit.theory.accountant` reaches it) so that ε' or the §7 curve is computed with p* = 0.5
where p* = 1 (the [RPS] B.3 never-mask counterexample), and show that the same
:func:`check_theory_holds` reports the violation, statistically as well as deterministically.

Sizes: the default run uses :data:`CI_TRIALS` draws per side (the cost is dominated by
``plan_audit``: exact pair ε over every candidate pair, ~0.1–0.3 s for Laplace, ~1–3 s
for Gaussian); ``@pytest.mark.slow`` reruns the grid with :data:`SLOW_TRIALS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from audit.enums import MissingnessClass
from audit.pipeline.config import AuditConfig, config_from_dict
from audit.pipeline.plan import AuditPlan, plan_audit
from audit.pipeline.runner import run_audit, run_tradeoff_audit
from audit.theory import accountant as acc

FAMILY_ALPHA = 1e-3
#: Absolute + relative tolerance of the deterministic chain (pure numerical noise).
TOL = 1e-9
CI_TRIALS, CI_PILOT, CI_BINS = 300_000, 30_000, 2000
SLOW_TRIALS, SLOW_PILOT, SLOW_BINS = 10_000_000, 500_000, 4000


# ------------------------------------------------------------------------------- the grid
@dataclass(frozen=True)
class Scenario:
    """One grid point: the ``[scenario]`` and ``[missingness]`` tables of a config."""

    id: str
    scenario: dict
    missingness: dict
    tradeoff: bool = False
    audit_extra: dict = field(default_factory=dict)

    def config(self, *, trials: int, pilot: int, bins: int, confidence: float,
               seed: int) -> AuditConfig:
        audit = dict(trials=trials, pilot_trials=pilot, bins=bins, confidence=confidence,
                     seed=seed, attack="exact-lr", **self.audit_extra)
        return config_from_dict({"name": self.id, "scenario": dict(self.scenario),
                                  "missingness": dict(self.missingness), "audit": audit})


# Missingness variants: (label, table, d's it is used with). p* = 1 − r^d, p_star, p_star,
# 1, 1 − q0, 1 respectively; mcar-fixed with observed < d has ρ < 1 (C̃ < C).
def _missingness(d: int) -> list[tuple[str, dict]]:
    out = [
        ("mcar-iid-r0.5", {"kind": "mcar-iid", "rate": 0.5}),
        ("mcar-iid-r0.8", {"kind": "mcar-iid", "rate": 0.8}),
        ("mcar-fixed-k1-p0.4", {"kind": "mcar-fixed", "observed": 1, "p_star": 0.4}),
        (f"mcar-fixed-k{max(d - 1, 1)}-p1", {"kind": "mcar-fixed", "observed": max(d - 1, 1),
                                            "p_star": 1.0}),
        ("mcar-row-p0.25", {"kind": "mcar-row", "p_star": 0.25}),
        ("mcar-row-p0.75", {"kind": "mcar-row", "p_star": 0.75}),
        ("mar-pivot", {"kind": "mar-pivot", "pivot": 0, "threshold": 0.0, "rate_low": 0.2,
                       "rate_high": 0.7}),
        ("mar-monotone-q0.5", {"kind": "mar-monotone", "q0": 0.5, "intercept": -1.0,
                               "slope": 1.0}),
        ("never-mask", {"kind": "never-mask", "j0": 0, "rate": 0.5}),
    ]
    return out


_LAPLACE_EPS = (0.5, 1.0, 2.0)
_GAUSS_EPS_DELTA = ((1.0, 1e-5), (0.5, 1e-3), (1.0, 1e-3), (0.5, 1e-5))


def _scen(mech: str, eps: float, delta: float | None, query: str, d: int, qp: dict | None,
          qlabel: str, mlabel: str, miss: dict, tradeoff: bool) -> Scenario:
    sc = {"mechanism": mech, "epsilon": eps, "query": query, "d": d, "n": 100, "bound": 1.0}
    if mech == "gaussian":
        sc.update(delta=delta, calibration="classical")  # ε ≤ 1: Theorem 4.7's domain
    if qp:
        sc["query_params"] = qp
    tag = f"lap-eps{eps:g}" if mech == "laplace" else f"gau-eps{eps:g}-del{delta:g}"
    return Scenario(f"{tag}-{qlabel}-{mlabel}", sc, miss, tradeoff)


def _grid() -> list[Scenario]:
    grid: list[Scenario] = []
    # Scalar queries: the sum over d = 3 features and a weighted linear query, with every
    # missingness variant; ε (and δ) rotate so every value meets every kind somewhere. The
    # Gaussian linear query uses d = 2: plan_audit scores every candidate pair by its exact
    # ε, and with d = 3 distinct weights that costs 30–55 s per Gaussian scenario.
    scalar = [("sum", 3, None, "sum-d3", "sum", 3, None, "sum-d3"),
              ("linear", 3, {"weights": [1.0, 0.5, 0.25]}, "lin-d3",
               "linear", 2, {"weights": [1.0, 0.5]}, "lin-d2")]
    k = 0
    for query, d, qp, ql, gquery, gd, gqp, gql in scalar:
        for (ml, miss), (gml, gmiss) in zip(_missingness(d), _missingness(gd), strict=True):
            eps = _LAPLACE_EPS[k % 3]
            grid.append(_scen("laplace", eps, None, query, d, qp, ql, ml, miss,
                              tradeoff=(k % 4 == 0)))
            eps, delta = _GAUSS_EPS_DELTA[k % 4]
            grid.append(_scen("gaussian", eps, delta, gquery, gd, gqp, gql, gml, gmiss,
                              tradeoff=True))
            k += 1
    # Coordinate-wise clipped mean with d = 1 (a scalar release, L = 1/n, B = clip).
    for ml, miss in _missingness(1):
        if ml.startswith("mcar-iid-r0.8") or ml.startswith("mcar-row-p0.75"):
            continue
        eps = _LAPLACE_EPS[k % 3]
        grid.append(_scen("laplace", eps, None, "clipped-mean", 1, {"clip": 2.0},
                          "clipmean-d1", ml, miss, tradeoff=False))
        eps, delta = _GAUSS_EPS_DELTA[k % 4]
        grid.append(_scen("gaussian", eps, delta, "clipped-mean", 1, {"clip": 2.0},
                          "clipmean-d1", ml, miss, tradeoff=True))
        k += 1
    # Vector outputs, d = 2 (no ε_pair: only the ceilings ε_theory and ε_fdp).
    vec = [("vector-sum", 2, None, "vsum-d2"),
           ("clipped-mean", 2, {"clip": 1.0}, "clipmean-d2")]
    for query, d, qp, ql in vec:
        for ml, miss in _missingness(d):
            if ml not in ("mcar-iid-r0.5", "mcar-fixed-k1-p0.4", "mcar-row-p0.75",
                          "mar-monotone-q0.5"):
                continue
            if query == "clipped-mean" and ml in ("mcar-iid-r0.5", "mar-monotone-q0.5"):
                continue
            eps = _LAPLACE_EPS[k % 3]
            grid.append(_scen("laplace", eps, None, query, d, qp, ql, ml, miss, False))
            eps, delta = _GAUSS_EPS_DELTA[k % 4]
            grid.append(_scen("gaussian", eps, delta, query, d, qp, ql, ml, miss, False))
            k += 1
    # The [RPS] B.3 counterexample (p* = 1, no amplification), both mechanisms.
    e0 = {"weights": [1.0, 0.0, 0.0]}
    nm = {"kind": "never-mask", "j0": 0, "rate": 0.5}
    grid.append(_scen("laplace", 1.0, None, "linear", 3, e0, "e0-d3", "never-mask", nm, True))
    grid.append(_scen("gaussian", 1.0, 1e-5, "linear", 3, e0, "e0-d3", "never-mask", nm, True))
    return grid


GRID = _grid()
N_STATEMENTS = len(GRID) + sum(s.tradeoff for s in GRID)
CONFIDENCE = 1.0 - FAMILY_ALPHA / N_STATEMENTS
_BY_ID = {s.id: s for s in GRID}
assert len(_BY_ID) == len(GRID), "scenario ids must be unique"

_SETTINGS: dict[str, AuditPlan] = {}


def _plan(scn: Scenario, cfg: AuditConfig) -> AuditPlan:
    """plan_audit once per scenario and session (it does not depend on trials or seed)."""
    if scn.id not in _SETTINGS:
        _SETTINGS[scn.id] = plan_audit(cfg)
    return _SETTINGS[scn.id]


# ------------------------------------------------------------------------ the shared check
def _le(a: float, b: float, slack: float = 0.0) -> bool:
    return a <= b + slack + TOL * (1.0 + abs(b))


def theory_failures(cfg: AuditConfig, *, tradeoff: bool, plan: AuditPlan | None = None,
                    ) -> tuple[list[str], dict]:
    """Every way the audit of ``cfg`` contradicts the theory (empty list: none), and a summary.

    Deterministic chain first (ε_pair ≤ ε_theory, ε_pair ≤ ε_fdp, ε_fdp ≤ ε_theory), then the
    audit's ``ceiling_violations()``, then (``tradeoff``) the §7 curve against empirical
    trade-off points.
    """
    st = plan if plan is not None else plan_audit(cfg)
    out: list[str] = []
    if st.missing_class is MissingnessClass.MNAR:  # pragma: no cover - the grid is MCAR/MAR only
        raise AssertionError(f"{cfg.name}: MNAR scenario in the regression grid")
    if st.eps_fdp is None or (st.eps_theory is None and "Theorem 4.7" in st.theory):
        out.append(f"missing ceiling: eps_theory={st.eps_theory} ({st.theory}), "
                   f"eps_fdp={st.eps_fdp}")
    err = st.eps_pair_error or 0.0
    if st.eps_pair is not None:
        if not math.isfinite(st.eps_pair):
            out.append(f"eps_pair={st.eps_pair} is not finite")
        if st.eps_theory is not None and not _le(st.eps_pair, st.eps_theory, err):
            out.append(f"chain: eps_pair={st.eps_pair:.9g} (±{err:.2g}) > "
                       f"eps_theory={st.eps_theory:.9g} ({st.theory})")
        if st.eps_fdp is not None and not _le(st.eps_pair, st.eps_fdp, err):
            out.append(f"chain: eps_pair={st.eps_pair:.9g} (±{err:.2g}) > "
                       f"eps_fdp={st.eps_fdp:.9g}")
    if st.eps_fdp is not None and st.eps_theory is not None and not _le(st.eps_fdp,
                                                                       st.eps_theory):
        out.append(f"chain: eps_fdp={st.eps_fdp:.9g} > eps_theory={st.eps_theory:.9g} "
                   f"({st.theory})")

    res = run_audit(cfg, plan=st)
    out += [f"audit: {v}" for v in res.ceiling_violations()]
    summary = {"id": cfg.name, "eps_lower": res.eps_lower, "eps_pair": st.eps_pair,
               "eps_theory": st.eps_theory, "eps_fdp": st.eps_fdp, "p_star": st.p_star,
               "rho": st.rho, "delta": st.audit_delta, "fdp_violation": None}
    if tradeoff:
        ta = run_tradeoff_audit(cfg, plan=st)
        summary["fdp_violation"] = ta.fdp_violation
        if ta.fdp_violation is None:
            out.append("tradeoff: no §7 curve to check")
        elif ta.fdp_violation > 0.0:
            out.append(f"tradeoff: fdp_violation={ta.fdp_violation:.6g} > 0 (empirical "
                       f"trade-off points below the §7 curve at confidence "
                       f"{1 - ta.points.alpha:.8g})")
    return out, summary


def check_theory_holds(cfg: AuditConfig, *, tradeoff: bool,
                       plan: AuditPlan | None = None) -> dict:
    """Assert that the audit of ``cfg`` contradicts no ceiling (used by grid and broken tests)."""
    failures, summary = theory_failures(cfg, tradeoff=tradeoff, plan=plan)
    assert not failures, f"{cfg.name}: theory violated:\n  " + "\n  ".join(failures) + (
        f"\n  config={cfg.to_dict()}")
    return summary


# ------------------------------------------------------------------------------- the tests
def test_grid_shape():
    mechs = {s.scenario["mechanism"] for s in GRID}
    kinds = {s.missingness["kind"] for s in GRID}
    assert len(GRID) >= 50
    assert mechs == {"laplace", "gaussian"}
    assert kinds == {"mcar-iid", "mcar-fixed", "mcar-row", "mar-pivot", "mar-monotone",
                     "never-mask"}
    gauss = [s for s in GRID if s.scenario["mechanism"] == "gaussian"]
    assert all(s.scenario["epsilon"] <= 1.0 and s.scenario["calibration"] == "classical"
               for s in gauss)
    assert {s.scenario["query"] for s in GRID} >= {"sum", "linear", "clipped-mean",
                                                   "vector-sum"}
    assert 0.0 < 1.0 - CONFIDENCE <= FAMILY_ALPHA / len(GRID)


def _run(scn: Scenario, trials: int, pilot: int, bins: int, seed: int) -> dict:
    cfg = scn.config(trials=trials, pilot=pilot, bins=bins, confidence=CONFIDENCE, seed=seed)
    return check_theory_holds(cfg, tradeoff=scn.tradeoff, plan=_plan(scn, cfg))


@pytest.mark.statistical
@pytest.mark.parametrize("scn", GRID, ids=[s.id for s in GRID])
def test_theory_never_violated(scn):
    _run(scn, CI_TRIALS, CI_PILOT, CI_BINS, seed=20260501)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("scn", GRID, ids=[s.id for s in GRID])
def test_theory_never_violated_full(scn):
    _run(scn, SLOW_TRIALS, SLOW_PILOT, SLOW_BINS, seed=20260502)


# -------------------------------------------------------------- a broken bound must fail
_BROKEN_P = 0.5


def _broken(p_star: float) -> float:
    """The bug injected: p* = 1 (no amplification) silently replaced by 0.5."""
    return min(p_star, _BROKEN_P)


@pytest.fixture
def broken_theorems(monkeypatch):
    """ε' of Theorems 3.2 / 4.5 / 4.7 computed with p* = 0.5 where p* = 1."""
    amplify, lap, gau = acc.amplify, acc.laplace_fwl_bound, acc.gaussian_fwl_bound
    monkeypatch.setattr(acc, "amplify", lambda e, d, p, **kw: amplify(e, d, _broken(p), **kw))
    monkeypatch.setattr(acc, "laplace_fwl_bound",
                        lambda e, p, r, **kw: lap(e, _broken(p), r, **kw))
    monkeypatch.setattr(acc, "gaussian_fwl_bound",
                        lambda e, d, p, r, **kw: (gau(e, d, _broken(p), r, **kw)[0], p * d))


@pytest.fixture
def broken_fdp(monkeypatch):
    """The §7 curve C_{p*}(f) computed with p* = 0.5 where p* = 1."""
    gau, lap = acc.fdp_missing_gaussian, acc.fdp_missing_laplace
    monkeypatch.setattr(acc, "fdp_missing_gaussian",
                        lambda c, s, p, **kw: gau(c, s, _broken(p), **kw))
    monkeypatch.setattr(acc, "fdp_missing_laplace",
                        lambda c, b, p, *a, **kw: lap(c, b, _broken(p), *a, **kw))


def _broken_case(scn_id: str, trials: int = CI_TRIALS) -> tuple[Scenario, AuditConfig]:
    scn = _BY_ID[scn_id]
    cfg = scn.config(trials=trials, pilot=CI_PILOT, bins=CI_BINS, confidence=CONFIDENCE,
                     seed=20260503)
    return scn, cfg


_LAP_B3 = "lap-eps1-e0-d3-never-mask"
_GAU_B3 = "gau-eps1-del1e-05-e0-d3-never-mask"


def test_broken_theorem_bound_is_caught(broken_theorems):
    """Laplace B.3 counterexample, ε' = ln(1 + 0.5(e − 1)) ≈ 0.62 < ε_pair = 1: the grid's
    check fails, and the statistical part (ε_lower > ε_theory) fails on its own."""
    scn, cfg = _broken_case(_LAP_B3)
    st = plan_audit(cfg)  # not cached: this setting is wrong on purpose
    assert st.eps_theory == pytest.approx(math.log1p(0.5 * math.expm1(1.0)))
    with pytest.raises(AssertionError, match=r"audit: eps_lower=.* > eps_theory="):
        check_theory_holds(cfg, tradeoff=scn.tradeoff, plan=st)
    failures, _ = theory_failures(cfg, tradeoff=False, plan=st)
    assert any(f.startswith("chain: eps_pair=") for f in failures)
    assert run_audit(cfg, plan=st).ceiling_violations() != []


def test_broken_gaussian_theorem_bound_is_caught(broken_theorems):
    """Gaussian B.3 counterexample: Theorem 4.7 with p* = 0.5 is below the exact ε_pair."""
    scn, cfg = _broken_case(_GAU_B3)
    st = plan_audit(cfg)
    with pytest.raises(AssertionError, match=r"chain: eps_pair=.* > eps_theory="):
        check_theory_holds(cfg, tradeoff=False, plan=st)


def test_broken_fdp_curve_is_caught(broken_fdp):
    """§7 curve with p* = 0.5 on the Gaussian B.3 counterexample: the trade-off audit finds
    empirical points below it (and the deterministic chain ε_pair ≤ ε_fdp fails)."""
    scn, cfg = _broken_case(_GAU_B3)
    st = plan_audit(cfg)
    with pytest.raises(AssertionError, match=r"tradeoff: fdp_violation=") as info:
        check_theory_holds(cfg, tradeoff=True, plan=st)
    assert "chain: eps_pair=" in str(info.value) and "> eps_fdp=" in str(info.value)


def test_broken_laplace_fdp_curve_is_caught(broken_fdp):
    """§7 Laplace curve with p* = 0.5: ε_lower exceeds ε_fdp and the curve is crossed."""
    scn, cfg = _broken_case(_LAP_B3)
    st = plan_audit(cfg)
    failures, _ = theory_failures(cfg, tradeoff=True, plan=st)
    assert any(f.startswith("audit: eps_lower=") and "> eps_fdp=" in f for f in failures)
    assert any(f.startswith("tradeoff: fdp_violation=") for f in failures)
