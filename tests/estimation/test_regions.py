"""Mirror of audit.estimation.regions (tests/estimation/test_estimators.py holds the Monte
Carlo validity checks). Oracles here: brute force over every threshold region with plain
loops, ``scipy.stats`` for the bin masses and the Clopper–Pearson quantiles, and
:func:`audit.estimation.binomial.eps_lower_bound` on counts summed by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from audit.enums import BoundRule, Direction
from audit.estimation.binomial import eps_joint_bound, eps_lower_bound
from audit.estimation.regions import (
    EpsLowerResult,
    Region,
    check_histograms,
    grid_bound,
    model_bin_probabilities,
    predicted_bounds,
    region_bound,
    region_counts,
    select_region_by_model,
    select_region_on_pilot,
)
from audit.mixture import Mixture

RNG = np.random.default_rng(11)
CP = RNG.integers(0, 60, size=12)
CQ = RNG.integers(0, 60, size=12)
SCORE = np.round(RNG.normal(size=12), 1)  # ties among the scores on purpose
# a pilot whose two sides the score separates (a prediction with bounds above 0 to check)
SEP_P = np.round(100 * np.exp(2 * SCORE)).astype(np.int64)
SEP_Q = np.round(100 * np.exp(-2 * SCORE)).astype(np.int64)
GE, LE = Direction.Z_VS_ZPRIME, Direction.ZPRIME_VS_Z


def _brute_bound(cp, cq, score, direction, t, delta, alpha):
    """ε bound of one region by masks and eps_lower_bound (numerator first)."""
    mask = score >= t if direction is GE else score <= t
    kp, kq = int(cp[mask].sum()), int(cq[mask].sum())
    if direction is GE:
        return eps_lower_bound(kp, int(cp.sum()), kq, int(cq.sum()), delta, alpha)
    return eps_lower_bound(kq, int(cq.sum()), kp, int(cp.sum()), delta, alpha)


def test_region_mask_both_directions():
    s = np.array([-1.0, 0.0, 0.5, 2.0])
    assert Region("z_vs_zprime", 0.5).mask(s).tolist() == [False, False, True, True]
    assert Region(LE, 0.0).mask(s).tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match="direction must be one of"):
        Region("upwards", 0.0)


def test_region_counts_match_masks():
    thresholds = np.array([-5.0, *np.unique(SCORE), 0.05, 5.0])
    rc = region_counts(CP, CQ, SCORE, thresholds)
    for i, t in enumerate(thresholds):
        assert rc.p_ge[i] == CP[SCORE >= t].sum() and rc.q_ge[i] == CQ[SCORE >= t].sum()
        assert rc.p_le[i] == CP[SCORE <= t].sum() and rc.q_le[i] == CQ[SCORE <= t].sum()
    assert (rc.n_p, rc.n_q) == (CP.sum(), CQ.sum())


@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_region_bound_is_the_binomial_bound_of_the_region_counts(delta):
    for direction in (GE, LE):
        for t in np.unique(SCORE):
            res = region_bound(CP, CQ, SCORE, Region(direction, t), delta, 0.05)
            assert res.eps_lower == _brute_bound(CP, CQ, SCORE, direction, t, delta, 0.05)
            assert res.direction is direction and res.n_regions == 1 and res.method == "pilot"


def test_grid_bound_is_the_maximum_bonferroni_bound():
    thresholds = np.unique(SCORE)[::2]
    m = 2 * thresholds.size
    want = max(_brute_bound(CP, CQ, SCORE, d, t, 0.0, 0.05 / m)
               for d in (GE, LE) for t in thresholds)
    res = grid_bound(CP, CQ, SCORE, thresholds, 0.0, 0.05)
    assert res.eps_lower == want and res.n_regions == m and res.method == "bonferroni-grid"
    assert res.alpha == 0.05  # the family's level, not the per-region one
    # its witness reproduces it
    again = _brute_bound(CP, CQ, SCORE, res.direction, res.threshold, 0.0, 0.05 / m)
    assert again == res.eps_lower


def test_pilot_point_guard_picks_the_largest_plug_in():
    best, pick = -math.inf, None
    n_p, n_q = CP.sum(), CQ.sum()
    for t in np.unique(SCORE):
        for d in (GE, LE):
            mask = SCORE >= t if d is GE else SCORE <= t
            num, den = (CP, CQ) if d is GE else (CQ, CP)
            nn, nd = (n_p, n_q) if d is GE else (n_q, n_p)
            value = math.log((num[mask].sum() / nn) / (max(den[mask].sum(), 1) / nd)) \
                if num[mask].sum() > 0 else -math.inf
            if value > best + 1e-9:
                best, pick = value, Region(d, float(t))
    assert select_region_on_pilot(CP, CQ, SCORE, 0.0, guard="point") == pick


def test_pilot_selection_finds_the_separating_region():
    # P puts its mass on the high scores, Q on the low ones
    cp = np.array([1, 2, 10, 300])
    cq = np.array([300, 10, 2, 1])
    score = np.array([-2.0, -1.0, 1.0, 2.0])
    assert select_region_on_pilot(cp, cq, score, 0.0) in (Region(GE, 2.0), Region(LE, -2.0))


def _moved(mean: float, sign: float, trials: int) -> float:
    """An expected count moved one standard deviation (the default policy's pessimism_sd,
    √mean) by ``sign``, within [0, trials]."""
    return min(max(mean + sign * math.sqrt(mean), 0.0), trials)


def test_predicted_bounds_by_hand():
    # every candidate against scipy's Beta quantiles on expected main-run counts: the
    # numerator's mass at its pilot Clopper–Pearson lower bound at guard/2, the denominator's
    # at its frequency, each expected count moved one standard deviation against the bound
    a, trials, alpha, delta = 1e-3 / 2, 5000, 0.05, 0.01
    th = np.unique(SCORE)
    pred = predicted_bounds(region_counts(SEP_P, SEP_Q, SCORE, th), delta, 1e-3, trials, alpha)
    assert (pred > 0.1).sum() >= 4  # (a check with something to check)
    for d in (GE, LE):
        for i, t in enumerate(th):
            mask = SCORE >= t if d is GE else SCORE <= t
            num, den = (SEP_P, SEP_Q) if d is GE else (SEP_Q, SEP_P)
            k, n, kd, nd = num[mask].sum(), num.sum(), den[mask].sum(), den.sum()
            rate = stats.beta.ppf(a, k, n - k + 1) if k > 0 else 0.0
            # the denominator's mass: its frequency plus one numerator hit's (1/n)
            m_num = _moved(rate * trials, -1.0, trials)
            m_den = _moved((kd / nd + 1 / n) * trials, 1.0, trials)
            lo = stats.beta.ppf(alpha / 2, m_num, trials - m_num + 1) if m_num > 0 else 0.0
            hi = (stats.beta.ppf(1 - alpha / 2, m_den + 1, trials - m_den)
                  if m_den < trials else 1.0)
            want = max(math.log((lo - delta) / hi), 0.0) if lo > delta else 0.0
            assert pred[0 if d is GE else 1, i] == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_predicted_guard_takes_the_tail_event_the_main_run_will_certify():
    # A 1.5 % tail of P the pilot (1,000 calls per side) saw 15 times and Q never, beside a
    # bulk of plug-in ε ≈ 0.4. The Clopper–Pearson guard on the pilot's own counts rates the
    # tail 0 and keeps the bulk (0.22 against 0); 10⁴ main calls would certify the tail at
    # ε ≈ 3.5, and the prediction (0.80 against 0.31) takes it. With 1,000 main calls the
    # tail is not worth it and the prediction keeps the bulk too.
    cp = np.array([385, 600, 15])
    cq = np.array([600, 400, 0])
    score = np.array([-1.0, 0.0, 1.0])
    tail = Region(GE, 1.0)
    assert select_region_on_pilot(cp, cq, score, 0.0, pilot_alpha=1e-3) == Region(LE, -1.0)
    assert select_region_on_pilot(cp, cq, score, 0.0, guard="predicted", pilot_alpha=1e-3,
                                  trials=10_000) == tail
    assert select_region_on_pilot(cp, cq, score, 0.0, guard="predicted", pilot_alpha=1e-3,
                                  trials=1_000) == Region(LE, -1.0)
    # a main run of the pilot's proportions: the tail's bound far above the bulk's
    main = (10 * cp, 10 * cq, score)
    assert region_bound(*main, tail, 0.0, 0.05).eps_lower > 3.5
    assert region_bound(*main, Region(LE, -1.0), 0.0, 0.05).eps_lower < 0.5


def test_model_bin_probabilities_are_scipys_laplace_masses():
    law = Mixture(np.array([0.3, 0.7]), np.array([0.0, 2.0]), "laplace", 1.5)
    edges = np.linspace(-4.0, 6.0, 21)
    cdf = 0.3 * stats.laplace.cdf(edges, 0.0, 1.5) + 0.7 * stats.laplace.cdf(edges, 2.0, 1.5)
    got = model_bin_probabilities(law, edges)
    assert got.shape == (edges.size + 2,) and got[-1] == 0.0  # the NaN bin
    assert got[0] == pytest.approx(cdf[0], rel=1e-12)
    assert got[-2] == pytest.approx(1.0 - cdf[-1], rel=1e-12)
    assert np.allclose(got[1:-2], np.diff(cdf), rtol=1e-10, atol=1e-15)
    assert got.sum() == pytest.approx(1.0, abs=1e-14)


def _brute_model_region(p_masses, q_masses, scores, n, delta, alpha):
    best, pick = -math.inf, None
    for d in (GE, LE):
        for t in np.unique(scores):
            mask = scores >= t if d is GE else scores <= t
            num, den = (p_masses, q_masses) if d is GE else (q_masses, p_masses)
            k_num = min(max(num[mask].sum() * n - math.sqrt(num[mask].sum() * n), 0.0), n)
            k_den = min(max(den[mask].sum() * n + math.sqrt(den[mask].sum() * n), 0.0), n)
            lo = stats.beta.ppf(alpha / 2, k_num, n - k_num + 1) if k_num > 0 else 0.0
            hi = stats.beta.ppf(1 - alpha / 2, k_den + 1, n - k_den) if k_den < n else 1.0
            value = math.log((lo - delta) / hi) if lo > delta else -math.inf
            if value > best:
                best, pick = value, Region(d, float(t))
    return pick


@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_model_selection_matches_a_brute_force_prediction(delta):
    # P = A_D(z) has a component far to the right: the evidence lies in high scores
    P = Mixture(np.array([0.5, 0.5]), np.array([0.0, 3.0]), "laplace", 1.0)
    Q = Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0)
    edges = np.linspace(-6.0, 9.0, 31)
    with np.errstate(divide="ignore"):
        scores = np.log(model_bin_probabilities(P, edges)[:-1]) \
            - np.log(model_bin_probabilities(Q, edges)[:-1])
    scores = np.append(scores, 0.0)  # the NaN bin, never reached
    pm, qm = model_bin_probabilities(P, edges), model_bin_probabilities(Q, edges)
    want = _brute_model_region(pm, qm, scores, 10_000, delta, 0.05)
    got = select_region_by_model(P, Q, edges, scores, 10_000, delta, 0.05)
    assert got.direction is want.direction is GE
    assert got.threshold == pytest.approx(want.threshold, rel=1e-12)


def test_plug_in_by_hand():
    res = EpsLowerResult(0.1, "zprime_vs_z", 0.0, k_p=10, n_p=100, k_q=60, n_q=200, p_lo=0.0,
                         q_hi=1.0, alpha=0.05, delta=0.1, method="pilot", n_regions=1)
    assert res.plug_in() == pytest.approx(math.log((0.3 - 0.1) / 0.1))
    zero = EpsLowerResult(0.0, GE, 0.0, 5, 100, 0, 100, 0.0, 1.0, 0.05, 0.1, "pilot", 1)
    assert zero.plug_in() == 0.0  # 0.05 − δ < 0
    inf = EpsLowerResult(0.0, GE, 0.0, 50, 100, 0, 100, 0.0, 1.0, 0.05, 0.0, "pilot", 1)
    assert inf.plug_in() == math.inf


@pytest.mark.parametrize(("call", "message"), [
    (lambda: check_histograms([[1, 2]], [1, 2], [0, 1]), "counts_p must be a non-empty 1-D"),
    (lambda: check_histograms([], [], []), "counts_p must be a non-empty 1-D"),
    (lambda: check_histograms([1.5, 2], [1, 2], [0, 1]), "counts_p must hold integer counts"),
    (lambda: check_histograms([1, 2], [1, -2], [0, 1]), r"counts_q must be >= 0"),
    (lambda: check_histograms([0, 0], [1, 2], [0, 1]), r"counts_p must have a positive total"),
    (lambda: check_histograms([1, 2], [1, 2, 3], [0, 1]), "must have the same length"),
    (lambda: check_histograms([1, 2], [1, 2], [0, np.nan]), "score must not contain NaN"),
    (lambda: region_bound(CP, CQ, SCORE, (GE, 0.0), 0.0, 0.05), "region must be an"),
    (lambda: region_bound(CP, CQ, SCORE, Region(GE, 0.0), -0.1, 0.05), "delta must be in"),
    (lambda: region_bound(CP, CQ, SCORE, Region(GE, 0.0), 0.0, 1.0), "alpha must be in"),
    (lambda: grid_bound(CP, CQ, SCORE, [], 0.0, 0.05), "thresholds must be a non-empty"),
    (lambda: grid_bound(CP, CQ, SCORE, [0.0, np.inf], 0.0, 0.05), "thresholds must be"),
    (lambda: grid_bound(CP, CQ, SCORE, [0.0], 2.0, 0.05), "delta must be in"),
    (lambda: grid_bound(CP, CQ, SCORE, [0.0], 0.0, 0.0), "alpha must be in"),
    (lambda: select_region_on_pilot(CP, CQ, SCORE, 0.0, guard="max"), "guard must be one of"),
    (lambda: select_region_on_pilot(CP, CQ, SCORE, 1.5), "delta must be in"),
    (lambda: select_region_on_pilot(CP, CQ, SCORE, 0.0, pilot_alpha=0.0), "alpha must be in"),
    (lambda: select_region_on_pilot(CP[:3], CQ, SCORE, 0.0), "pilot_counts_p, pilot_counts_q"),
    (lambda: select_region_on_pilot(CP, CQ, SCORE, 0.0, guard="predicted"),
     "trials must be an integer >= 1"),
    (lambda: select_region_on_pilot(CP, CQ, SCORE, 0.0, guard="predicted", trials=10,
                                    alpha=0.0), "alpha must be in"),
    (lambda: predicted_bounds(region_counts(CP, CQ, SCORE, [0.0]), 0.0, 1e-3, 0, 0.05),
     "trials must be an integer >= 1"),
    (lambda: predicted_bounds(region_counts(CP, CQ, SCORE, [0.0]), 0.0, 1e-3, 10, 1.0),
     "alpha must be in"),
    (lambda: predicted_bounds(region_counts(CP, CQ, SCORE, [0.0]), -0.5, 1e-3, 10, 0.05),
     "delta must be in"),
])
def test_each_parameter_is_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"trials": 0}, "trials must be an integer >= 1"),
    ({"delta": -1.0}, "delta must be in"),
    ({"alpha": 1.5}, "alpha must be in"),
    ({"scores": np.zeros(3)}, r"scores must have length len\(edges\)\+2=4, got 3"),
    ({"scores": np.array([0.0, np.nan, 1.0, 2.0])}, "scores must not contain NaN"),
])
def test_model_selection_validates_its_parameters(kwargs, message):
    P = Mixture(np.array([1.0]), np.array([1.0]), "gaussian", 1.0)
    Q = Mixture(np.array([1.0]), np.array([0.0]), "gaussian", 1.0)
    args = {"edges": np.array([0.0, 1.0]), "scores": np.array([-1.0, 0.0, 1.0, 0.0]),
            "trials": 100, "delta": 0.0, "alpha": 0.05} | kwargs
    with pytest.raises(ValueError, match=message):
        select_region_by_model(P, Q, **args)


# ------------------------------------------------------------------ the joint rule (δ = 0)
JOINT = BoundRule.JOINT
BOTH = (BoundRule.JOINT, BoundRule.TWO_INTERVALS)


def test_region_bound_by_the_joint_rule_is_the_joint_bound_of_the_region_counts():
    for direction in (GE, LE):
        for t in np.unique(SCORE):
            res = region_bound(CP, CQ, SCORE, Region(direction, t, JOINT), 0.0, 0.05)
            mask = SCORE >= t if direction is GE else SCORE <= t
            num, den = (CP, CQ) if direction is GE else (CQ, CP)
            assert res.eps_lower == pytest.approx(
                eps_joint_bound(int(num[mask].sum()), int(den[mask].sum()), 0.05), rel=1e-15)
            assert res.rule is JOINT and res.q_hi == pytest.approx(1.0 - res.p_lo)
    with pytest.raises(ValueError, match="joint bound rule needs delta = 0, got delta=0.01"):
        region_bound(CP, CQ, SCORE, Region(GE, 0.0, JOINT), 0.01, 0.05)


def test_the_rule_is_in_the_witness_and_read_back():
    res = region_bound(CP, CQ, SCORE, Region(GE, float(np.median(SCORE)), JOINT), 0.0, 0.05)
    doc = res.to_dict()
    assert doc["rule"] == "joint" and "joint bound" in res.describe()
    assert EpsLowerResult.from_dict(doc) == res
    old = {k: v for k, v in doc.items() if k != "rule"}  # a witness written before the rule
    assert EpsLowerResult.from_dict(old).rule is BoundRule.TWO_INTERVALS


def test_predicted_bounds_under_the_joint_rule_by_hand():
    a, trials, alpha = 1e-3 / 2, 5000, 0.05
    th = np.unique(SCORE)
    pred = predicted_bounds(region_counts(SEP_P, SEP_Q, SCORE, th), 0.0, 1e-3, trials, alpha,
                            JOINT)
    assert (pred > 0.1).sum() >= 4
    for d in (GE, LE):
        for i, t in enumerate(th):
            mask = SCORE >= t if d is GE else SCORE <= t
            num, den = (SEP_P, SEP_Q) if d is GE else (SEP_Q, SEP_P)
            k, n, kd, nd = num[mask].sum(), num.sum(), den[mask].sum(), den.sum()
            m_num = _moved((stats.beta.ppf(a, k, n - k + 1) if k > 0 else 0.0) * trials, -1.0,
                           trials)
            m_den = _moved((kd / nd + 1 / n) * trials, 1.0, trials)
            lo = stats.beta.ppf(alpha, m_num, m_den + 1) if m_num > 0 else 0.0
            want = max(math.log(lo / (1 - lo)), 0.0) if lo > 0 else 0.0
            assert pred[0 if d is GE else 1, i] == pytest.approx(want, rel=1e-9, abs=1e-12)
    with pytest.raises(ValueError, match="needs delta = 0"):
        predicted_bounds(region_counts(CP, CQ, SCORE, th), 0.01, 1e-3, trials, alpha, JOINT)


def test_pilot_choice_keeps_the_best_region_and_rule_and_predicts_with_it():
    th = np.unique(SCORE)
    rc = region_counts(CP, CQ, SCORE, th)
    for trials in (200, 5_000, 10**6):
        got = select_region_on_pilot(CP, CQ, SCORE, 0.0, guard="predicted", pilot_alpha=1e-3,
                                     trials=trials, alpha=0.05, rules=BOTH)
        preds = {r: predicted_bounds(rc, 0.0, 1e-3, trials, 0.05, r) for r in BOTH}
        d = 0 if got.direction is GE else 1
        i = int(np.flatnonzero(th == got.threshold)[0])
        assert preds[got.rule][d, i] == pytest.approx(max(p.max() for p in preds.values()))
        if preds[JOINT].max() >= preds[BoundRule.TWO_INTERVALS].max():
            assert got.rule is JOINT
    # offered the two intervals only, the choice is the one it always was
    assert select_region_on_pilot(CP, CQ, SCORE, 0.0, guard="predicted", pilot_alpha=1e-3,
                                  trials=5000, alpha=0.05).rule is BoundRule.TWO_INTERVALS
    with pytest.raises(ValueError, match="need guard='predicted'"):
        select_region_on_pilot(CP, CQ, SCORE, 0.0, rules=BOTH)


def test_model_choice_predicts_each_rule_and_keeps_the_stronger():
    P = Mixture(np.array([0.5, 0.5]), np.array([0.0, 3.0]), "laplace", 1.0)
    Q = Mixture(np.array([1.0]), np.array([0.0]), "laplace", 1.0)
    edges = np.linspace(-6.0, 9.0, 31)
    with np.errstate(divide="ignore"):
        scores = np.log(model_bin_probabilities(P, edges)[:-1]) \
            - np.log(model_bin_probabilities(Q, edges)[:-1])
    scores = np.append(scores, 0.0)
    for rules in (BOTH, (JOINT,), (BoundRule.TWO_INTERVALS,)):
        got = select_region_by_model(P, Q, edges, scores, 10_000, 0.0, 0.05, rules)
        assert got.rule in rules
    both = select_region_by_model(P, Q, edges, scores, 10_000, 0.0, 0.05, BOTH)
    alone = select_region_by_model(P, Q, edges, scores, 10_000, 0.0, 0.05, (JOINT,))
    assert both == alone  # small masses: the joint rule is the stronger here
    with pytest.raises(ValueError, match="needs delta = 0"):
        select_region_by_model(P, Q, edges, scores, 10_000, 1e-3, 0.05, BOTH)
