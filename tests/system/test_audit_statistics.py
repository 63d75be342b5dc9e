"""Statistical behaviour of whole audits (issue 4, "Done when"), through the real runner.

* Validity: many independent audits of a pair whose ε_pair is known exceed it (and the exact
  value of the region they test) no more often than α plus a binomial slack.
* Power: on issue 4's power scenario the exact and fitted attacks come close to ε_pair.
* Rare events: [RPS] B.3's counterexample (no amplification) and the Gaussian-DP μ bound.
* A contract every ε-estimating procedure inherits (like ``AttackContract`` in
  tests/test_attacks.py): pilot-selected region, Bonferroni grid, model-selected region.

Every statistical assertion states its false-failure probability: the probability, over the
choice of the fixed seeds, that a CORRECT implementation fails it. Seeds are fixed, so each
run is reproducible.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from attacks import ExactLikelihoodRatio
from audit.estimation import (
    Direction,
    EpsLowerResult,
    Region,
    gdp_mu_lower_bound,
    grid_bound,
    region_bound,
    select_region_on_pilot,
)
from audit.estimation.regions import model_bin_probabilities, select_region_by_model
from audit.mixture import Mixture
from audit.pipeline.config import config_from_dict
from audit.pipeline.plan import plan_audit
from audit.pipeline.runner import run_audit, run_tradeoff_audit
from audit.protocols import Laws, Pilot
from audit.simulation import engine
from tests.conftest import example_doc

FAIL_PROB = 1e-3  # false-failure probability of each binomial-slack assertion


def _config(name: str, scenario: dict | None = None, **audit):
    """An example config from experiments/configs with some keys overridden."""
    data = example_doc(name)
    data["scenario"].update(scenario or {})
    data["audit"].update(audit)
    return config_from_dict(data, name=name)


def binomial_slack(reps: int, alpha: float, fail_prob: float = FAIL_PROB) -> float:
    """Largest failure fraction minus alpha that a valid procedure exceeds w.p. ≤ fail_prob.

    If each of ``reps`` independent audits fails with probability ≤ alpha, the number of
    failures is stochastically ≤ Bin(reps, alpha), so P[failures > ppf(1 − fail_prob)] ≤
    fail_prob; the allowed fraction is ppf(1 − fail_prob)/reps = alpha + slack.
    """
    return stats.binom.ppf(1.0 - fail_prob, reps, alpha) / reps - alpha


def _region_value(st, cfg, witness: dict) -> float:
    """Exact ln((num(S) − δ)/den(S)) of the region an exact-lr audit tested (its witness).

    Rebuilds the runner's layout for a white-box attack on a scalar output: default edges,
    exact LLR per bin, the region as a threshold on it.
    """
    edges = engine.default_edges(st.P, st.Q, cfg.audit.bins)
    empty = np.empty(0)
    score = ExactLikelihoodRatio().fit(Pilot(empty, empty), Laws(st.P, st.Q)).per_bin(edges)
    region = Region(witness["direction"], witness["threshold"])
    mask = region.mask(score)
    pp, pq = model_bin_probabilities(st.P, edges), model_bin_probabilities(st.Q, edges)
    num, den = (pp, pq) if region.direction is Direction.Z_VS_ZPRIME else (pq, pp)
    top = num[mask].sum() - st.audit_delta
    return math.log(top / den[mask].sum()) if top > 0 else 0.0


# ---------------------------------------------------------------------------- 1. validity
# Two scenarios with exactly known ε_pair, at trial counts where ε_lower is a large fraction
# of it (so the test has teeth). bins=400 keeps one audit at ~10 ms (the model selection is
# quadratic in the number of bins).
VALIDITY = {
    # Laplace, δ = 0: issue 4's power scenario; ε_pair = 0.15.
    "laplace": (lambda: _config("power_laplace", trials=30_000, pilot_trials=100, bins=400),
                0.6),
    # Gaussian, δ > 0: [RPS] B.3's pair (p* = 1) audited at δ = 1e-3; ε_pair ≈ 0.471.
    "gaussian": (lambda: _config("counterexample", trials=30_000, pilot_trials=100, bins=400,
                                 delta=1e-3), 0.5),
}
VALIDITY_SEED0 = 7_000_000


def _validity(kind: str, reps: int):
    make, min_ratio = VALIDITY[kind]
    cfg = make()
    st = plan_audit(cfg)
    assert st.eps_pair is not None and st.eps_pair > 0
    alpha = cfg.audit.alpha
    runs = [run_audit(cfg.with_overrides(seed=VALIDITY_SEED0 + i), plan=st)
            for i in range(reps)]
    eps = np.array([r.eps_lower for r in runs])
    assert np.all(np.isfinite(eps)) and np.all(eps >= 0)

    # ε_pair failures, exactly as the result reports them.
    over_pair = np.array([r.eps_lower > r.eps_pair + r.eps_pair_error for r in runs])
    flagged = np.array([any("eps_pair" in v for v in r.ceiling_violations()) for r in runs])
    np.testing.assert_array_equal(over_pair, flagged)
    allowed = alpha + binomial_slack(reps, alpha)
    assert over_pair.mean() <= allowed, (over_pair.mean(), allowed)
    # The theory ceilings are ≥ ε_pair, so they are exceeded no more often.
    any_ceiling = np.array([bool(r.ceiling_violations()) for r in runs])
    assert any_ceiling.mean() <= allowed

    # Sharper: model selection fixes one region for a given trial count, so every audit
    # bounds the same region S. Its exact value ε_S ≤ ε_pair, and ε_lower > ε_S is precisely
    # a Clopper–Pearson failure (probability ≤ α), so this fraction sits near α, not near 0.
    regions = {(r.witness["direction"], r.witness["threshold"]) for r in runs}
    assert len(regions) == 1
    eps_S = _region_value(st, cfg, runs[0].witness)
    assert 0 < eps_S <= st.eps_pair + st.eps_pair_error
    over_S = (eps > eps_S).mean()
    assert over_S <= allowed, (over_S, allowed)

    # Power: an estimator that returned 0 (or anything far below ε_pair) fails here.
    ratio = eps.mean() / st.eps_pair
    assert ratio >= min_ratio, ratio
    return over_pair.mean(), over_S, ratio


@pytest.mark.parametrize("kind", sorted(VALIDITY))
def test_audit_validity_ci(kind):
    """60 independent audits (CI twin of the slow test).

    Each audit exceeds ε_pair (and ε_S) w.p. ≤ α = 0.05 for a correct implementation, so the
    failure count is ≤ Bin(60, 0.05) stochastically; allowing ppf(1 − 1e-3) failures gives a
    false-failure probability ≤ 1e-3 per fraction checked (≤ 3e-3 per scenario). The ratio
    check mean(ε_lower)/ε_pair ≥ 0.6 (Laplace, observed ≈ 0.82) or ≥ 0.5 (Gaussian, ≈ 0.65)
    is many standard errors (sd of the mean ≈ 0.01–0.02) below its expectation: false
    failure < 1e-6.
    """
    _validity(kind, 60)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(VALIDITY))
def test_audit_validity_many_audits(kind):
    """1000 independent audits: as the CI twin with Bin(1000, 0.05) slack at 1e-3
    (allowed failure fraction 0.074); false-failure probability ≤ 3e-3 per scenario."""
    _validity(kind, 1000)


# ---------------------------------------------------------------------------- 2. power
@pytest.mark.parametrize("attack,fraction", [("exact-lr", 0.95), ("density-ratio", 0.90)])
def test_power_laplace(attack, fraction):
    """issue 4's power scenario at 10^7 trials per side (ε_pair = 0.15, Thm 4.5: 0.161).

    Fixed seed (the config's). False failure: the bound on the chosen region has sd
    ≈ sqrt(1/k_p + 1/k_q) ≈ 0.5% of ε_pair at these counts (k ≈ 4·10^6 per side), and it
    is observed at 0.993·ε_pair (exact-lr) and 0.987·ε_pair (density-ratio), so falling
    below 0.95 / 0.90 is a > 8 sd event (< 1e-10). Exceeding ε_theory would be a ceiling
    violation (≤ α = 0.05 for a valid estimator, in fact far less: ε_theory is 7% above
    ε_pair and ε_lower is ≈ 9 sd below ε_pair).
    """
    cfg = _config("power_laplace", trials=10_000_000, attack=attack)
    r = run_audit(cfg)
    assert r.eps_pair == pytest.approx(0.15, abs=1e-9)
    assert r.eps_theory is not None and r.theory == "RPS Theorem 4.5"
    assert r.eps_lower >= fraction * r.eps_pair, (r.eps_lower, r.eps_pair)
    assert r.eps_lower <= r.eps_theory
    assert r.ceiling_violations() == []
    # δ = 0: the joint bound, on Poisson(10^7) calls per side (6 sd: 18,974)
    assert r.trials == 10_000_000 and r.witness["rule"] == "joint"
    assert all(abs(r.witness[n] - 10_000_000) < 18_974 for n in ("n_p", "n_q"))


# ---------------------------------------------------------------------------- 3. rare events
COUNTEREXAMPLE_EPS_PAIR = 0.751  # exact ε(δ = 1e-5) of N(−1, σ²) vs N(1, σ²), σ = 9.6896


def _counterexample(trials: int, threshold: float):
    cfg = _config("counterexample", trials=trials)
    r = run_audit(cfg)
    assert r.p_star == 1.0 and r.delta == 1e-5
    assert r.eps_pair == pytest.approx(COUNTEREXAMPLE_EPS_PAIR, abs=5e-4)
    assert r.eps_lower >= threshold, r.eps_lower
    assert r.ceiling_violations() == []
    return r


def test_counterexample_rare_events_ci():
    """[RPS] B.3 at 10^7 trials: ε_lower ≥ 0.55.

    How 0.55 was chosen: at 10^7 trials the model-selected region ({LLR ≤ −0.676},
    direction zprime_vs_z) has exact masses Q(S) ≈ 7.68e-4, P(S) ≈ 3.70e-4 (≈ 7700 and 3700
    expected hits; exact region value 0.717). Simulating the binomial counts on that region
    and applying the Clopper–Pearson bound (10^5 draws) gives E[ε_lower] ≈ 0.662 with
    sd ≈ 0.020 and a 1e-4 quantile of 0.590 (this seed gives 0.658). 0.55 is 5.6 sd below
    the mean (false failure < 1e-5 even with a heavier-than-normal tail), leaves room for
    small retunings of the region selection, and is still 73% of ε_pair, so an estimator
    that loses the rare tail region (or off by a factor e^0.1 in either mass) fails.
    """
    _counterexample(10_000_000, 0.55)


@pytest.mark.slow
def test_counterexample_rare_events():
    """[RPS] B.3 at 10^8 trials: ε_lower ≥ 0.6 (issue 4). This seed gives 0.727 on a region
    with ≈ 32 400 / 14 800 hits, sd ≈ sqrt(1/k_p + 1/k_q) ≈ 0.010, so 0.6 is > 12 sd below:
    false-failure probability < 1e-10."""
    _counterexample(100_000_000, 0.6)


def test_gdp_mu_lower_bound_counterexample():
    """μ lower bound from 10^6 trials of [RPS] B.3's pair, at confidence 0.999.

    True μ = sensitivity/σ = 2/σ = ε/√(2 ln(1.25/δ)) ≈ 0.2064 (the pair IS μ-GDP and has
    trade-off curve exactly G_μ). A valid bound is ≤ μ except w.p. ≤ α = 1e-3 (the false-
    failure probability of that assertion). ≥ 0.9·μ = 0.1858: over seeds 1–10 the bound
    is 0.1975 ± 0.0018 (this seed: 0.1956), so 0.1858 is > 6 sd below (false failure
    < 1e-6).
    """
    cfg = _config("counterexample", trials=1_000_000, confidence=0.999)
    st = plan_audit(cfg)
    mu_true = cfg.scenario.epsilon / math.sqrt(2 * math.log(1.25 / cfg.scenario.delta))
    assert st.sensitivity / st.noise_scale == pytest.approx(mu_true, rel=1e-12)
    ta = run_tradeoff_audit(cfg, plan=st)
    assert ta.points.alpha == pytest.approx(1e-3)
    mu = gdp_mu_lower_bound(ta.points)
    assert 0.9 * mu_true <= mu <= mu_true, (mu, mu_true)


# ---------------------------------------------------------------------------- 4. contract
# A fixed scalar pair and its exact-LLR bin scores, shared by every procedure.
PAIR_P = Mixture([0.5, 0.5], [0.0, 3.0], "laplace", 2.0)
PAIR_Q = Mixture([0.5, 0.5], [0.0, -3.0], "laplace", 2.0)
EDGES = engine.default_edges(PAIR_P, PAIR_Q, 60)
SCORE = ExactLikelihoodRatio().fit(Pilot(np.empty(0), np.empty(0)),
                                   Laws(PAIR_P, PAIR_Q)).per_bin(EDGES)  # NaN bin: −inf
MASS_P, MASS_Q = model_bin_probabilities(PAIR_P, EDGES), model_bin_probabilities(PAIR_Q, EDGES)
N_MAIN = 20_000
ALPHA = 0.05


def _draw(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, MASS_P), rng.multinomial(n, MASS_Q)


PILOT_P, PILOT_Q = _draw(5_000, 1)  # independent of every main-run draw below (seeds ≥ 10)
GRID = np.quantile(SCORE[np.isfinite(SCORE)], np.linspace(0.0, 1.0, 9))


def _separate(cp: np.ndarray, cq: np.ndarray, frac: float):
    """Move a fraction of every bin's P mass to the highest-score bin and of Q's to the
    lowest: every {score ≥ t} gains P mass and loses Q mass, every {score ≤ t} the reverse,
    so every candidate region's bound can only grow."""
    cp, cq = cp.copy(), cq.copy()
    mp, mq = np.floor(frac * cp).astype(np.int64), np.floor(frac * cq).astype(np.int64)
    cp -= mp
    cq -= mq
    cp[int(np.argmax(SCORE))] += mp.sum()
    cq[int(np.argmin(SCORE))] += mq.sum()
    return cp, cq


BAD_INPUTS = [
    ("alpha", {"alpha": 0.0}),
    ("alpha", {"alpha": 1.0}),
    ("alpha", {"alpha": float("nan")}),
    ("delta", {"delta": -0.1}),
    ("delta", {"delta": 1.5}),
    ("counts_p", {"counts_p": "negative"}),
    ("counts_p", {"counts_p": "zeros"}),
    ("counts_p", {"counts_p": "2d"}),
    ("counts_q", {"counts_q": "fractional"}),
    ("score", {"score": "short"}),
    ("score", {"score": "nan"}),
]


class EstimatorContract:
    """Every procedure that turns (main-run counts, per-bin score) into an ε lower bound."""

    method: str

    def estimate(self, counts_p, counts_q, score, delta: float, alpha: float) -> EpsLowerResult:
        raise NotImplementedError

    def n_regions(self) -> int:
        return 1

    def test_finite_nonnegative(self):
        for seed in range(10, 20):
            cp, cq = _draw(N_MAIN, seed)
            for delta in (0.0, 1e-3, 0.5):
                res = self.estimate(cp, cq, SCORE, delta, ALPHA)
                assert isinstance(res, EpsLowerResult)
                assert math.isfinite(res.eps_lower) and res.eps_lower >= 0
        # degenerate counts: everything in one bin, disjoint supports (plug-in = ∞)
        one = np.zeros_like(SCORE, dtype=np.int64)
        cp, cq = one.copy(), one.copy()
        cp[int(np.argmax(SCORE))] = 1000
        cq[int(np.argmin(SCORE))] = 1000
        res = self.estimate(cp, cq, SCORE, 0.0, ALPHA)
        assert math.isfinite(res.eps_lower) and res.eps_lower > 0

    @pytest.mark.parametrize("delta", [0.0, 1e-5, 0.1])
    def test_zero_when_counts_agree(self, delta):
        # Identical counts: p_lo < k/n ≤ q_hi for every region, so no region proves ε > 0.
        for seed in (10, 11, 12):
            cp, _ = _draw(N_MAIN, seed)
            assert self.estimate(cp, cp.copy(), SCORE, delta, ALPHA).eps_lower == 0.0
        flat = np.full(SCORE.shape, 50, dtype=np.int64)
        assert self.estimate(flat, flat.copy(), SCORE, delta, ALPHA).eps_lower == 0.0

    def test_monotone_in_separation(self):
        cp, cq = _draw(N_MAIN, 13)
        values = [self.estimate(*_separate(cp, cq, f), SCORE, 1e-4, ALPHA).eps_lower
                  for f in (0.0, 0.05, 0.1, 0.2, 0.4, 0.8)]
        assert np.all(np.diff(values) >= 0), values
        assert values[-1] > values[0] > 0, values

    def test_never_above_plug_in(self):
        for seed in range(20, 30):
            cp, cq = _draw(N_MAIN, seed)
            for delta in (0.0, 1e-3):
                res = self.estimate(cp, cq, SCORE, delta, ALPHA)
                assert res.eps_lower <= res.plug_in() + 1e-12
                # and never above the best plug-in over ALL threshold regions
                best = max(region_bound(cp, cq, SCORE, Region(d, t), delta, ALPHA).plug_in()
                           for d in Direction for t in np.unique(SCORE))
                assert res.eps_lower <= best + 1e-12

    def test_reports_counts_and_alpha_consistently(self):
        cp, cq = _draw(N_MAIN, 14)
        for alpha, delta in ((0.05, 0.0), (0.01, 1e-3)):
            res = self.estimate(cp, cq, SCORE, delta, alpha)
            assert res.alpha == alpha and res.delta == delta
            assert res.method == self.method and res.n_regions == self.n_regions()
            assert res.n_p == cp.sum() and res.n_q == cq.sum()
            assert 0 <= res.k_p <= res.n_p and 0 <= res.k_q <= res.n_q
            mask = Region(res.direction, res.threshold).mask(SCORE)
            assert res.k_p == cp[mask].sum() and res.k_q == cq[mask].sum()
            num_k, num_n, den_k, den_n = (
                (res.k_p, res.n_p, res.k_q, res.n_q)
                if res.direction == Direction.Z_VS_ZPRIME.value
                else (res.k_q, res.n_q, res.k_p, res.n_p))
            assert 0 <= res.p_lo <= num_k / num_n and den_k / den_n <= res.q_hi <= 1
            expect = math.log((res.p_lo - delta) / res.q_hi) if res.p_lo > delta else 0.0
            assert res.eps_lower == pytest.approx(max(expect, 0.0), abs=1e-12)

    XFAIL_BAD_INPUTS: set[str] = set()  # ids of known, reported bugs (strict xfail)

    @pytest.mark.parametrize("name,bad", BAD_INPUTS, ids=[f"{n}-{i}" for i, (n, _) in
                                                          enumerate(BAD_INPUTS)])
    def test_refuses_bad_input(self, name, bad, request):
        if request.node.callspec.id in self.XFAIL_BAD_INPUTS:
            request.applymarker(pytest.mark.xfail(strict=True, reason="reported bug"))
        cp, cq = _draw(N_MAIN, 15)
        args = {"counts_p": cp, "counts_q": cq, "score": SCORE, "delta": 0.0, "alpha": ALPHA}
        value = bad[name]
        if name == "counts_p":
            value = {"negative": np.where(np.arange(cp.size) == 3, -1, cp),
                     "zeros": np.zeros_like(cp),
                     "2d": np.stack([cp, cp])}[value]
        elif name == "counts_q":
            value = cq + 0.5
        elif name == "score":
            value = SCORE[:-1] if value == "short" else np.where(SCORE > 0, np.nan, SCORE)
        args[name] = value
        with pytest.raises(ValueError, match=name):
            self.estimate(args["counts_p"], args["counts_q"], args["score"], args["delta"],
                          args["alpha"])


class TestPilotSelected(EstimatorContract):
    """Region chosen on an independent pilot, bounded once on the main run."""

    method = "pilot"

    def estimate(self, counts_p, counts_q, score, delta, alpha):
        region = select_region_on_pilot(PILOT_P, PILOT_Q, score, delta, pilot_alpha=alpha)
        return region_bound(counts_p, counts_q, score, region, delta, alpha)


class TestBonferroniGrid(EstimatorContract):
    """Maximum over a declared grid of thresholds × both directions (Bonferroni)."""

    method = "bonferroni-grid"

    def estimate(self, counts_p, counts_q, score, delta, alpha):
        return grid_bound(counts_p, counts_q, score, GRID, delta, alpha)

    def n_regions(self) -> int:
        return 2 * GRID.size

    def test_refuses_bad_grid(self):
        cp, cq = _draw(N_MAIN, 16)
        for bad in ([], [0.0, np.inf], [np.nan]):
            with pytest.raises(ValueError, match="thresholds"):
                grid_bound(cp, cq, SCORE, bad, 0.0, ALPHA)


class TestModelSelected(EstimatorContract):
    """The runner's white-box choice from the exact laws (no data), bounded on the main run."""

    method = "pilot"  # region_bound's label; run_audit relabels it "model"

    def estimate(self, counts_p, counts_q, score, delta, alpha):
        cp = np.asarray(counts_p)
        trials = int(cp.sum()) if cp.ndim == 1 and cp.sum() > 0 else N_MAIN
        region = select_region_by_model(PAIR_P, PAIR_Q, EDGES, score, trials, delta, alpha)
        return region_bound(counts_p, counts_q, score, region, delta, alpha)

    @pytest.mark.parametrize("name,value", [("trials", 0), ("trials", -5), ("trials", 2.5),
                                            ("alpha", 0.0), ("alpha", 1.5), ("delta", -0.1),
                                            ("delta", 1.5), ("scores", SCORE[:-1])])
    def test_selection_refuses_bad_input(self, name, value):
        args = {"scores": SCORE, "trials": N_MAIN, "delta": 0.0, "alpha": ALPHA} | {name: value}
        with pytest.raises(ValueError, match=name):
            select_region_by_model(PAIR_P, PAIR_Q, EDGES, args["scores"], args["trials"],
                                   args["delta"], args["alpha"])

    def test_small_trial_counts_accepted(self):
        # Regression: the selection once rounded expected counts to integers and raised
        # "pilot_counts_p must have a positive total" when every trials·mass < 0.5.
        edges = engine.default_edges(PAIR_P, PAIR_Q, 4000)
        score = ExactLikelihoodRatio().fit(Pilot(np.empty(0), np.empty(0)),
                                           Laws(PAIR_P, PAIR_Q)).per_bin(edges)
        region = select_region_by_model(PAIR_P, PAIR_Q, edges, score, 10, 0.0, ALPHA)
        assert isinstance(region, Region)
        r = run_audit(_config("power_laplace", trials=100, pilot_trials=100))
        assert r.eps_lower == 0.0 and r.selection == "model"
