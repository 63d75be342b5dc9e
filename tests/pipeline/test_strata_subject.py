"""Stratified implementation audits (audit.pipeline.strata_subject; docs/THEORY.md §8.5):
validity on null mechanisms whose exact ε is known at every rate, the design per side, the
power on diffprivlib's NaN-propagating mean, the result's ``strata`` entry."""

from __future__ import annotations

import json
import math
from unittest import mock

import numpy as np
import pytest
from scipy import stats

from audit.enums import SideDesign
from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.factory import make_subject
from audit.pipeline.runner import run_audit
from audit.pipeline.strata_subject import StratifiedImplementationSubject
from audit.pipeline.subject import FittedPilot
from audit.protocols import Pilot

#: randomized response of "every entry observed", claimed (and exactly) ε = EPS on complete
#: data; on the audited pair (z₁ = NaN vs +1) its exact ε at rate π is ln(1 + (1 − π)^n (e^ε − 1))
EPS = 4.0
KEEP = math.exp(EPS) / (1.0 + math.exp(EPS))
N = 10
RATES = [0.3, 0.5, 0.7]  # weight of the telling stratum: 0.028, 9.8e-4 (≤ 1e-3), 5.9e-6
#: the sequential audits' grid: at its main rate 0 (exact ε = EPS) a claim of 0.5 is refuted
#: at an early look, and the bounds at the rare strata's rates must still hold
SEQ_RATES = [0.0, *RATES]


def rr_batch(datasets, rng):
    observed = ~np.isnan(datasets).any(axis=(1, 2))
    return (observed ^ (rng.random(observed.shape[0]) >= KEEP)).astype(np.float64)


def rr(data, rng):
    return rr_batch(np.asarray(data)[None], rng)[0]


IMPL = CallableImplementation(rr, Claim(EPS), "rr-all-observed", rr_batch)
#: the same mechanism claiming less than its exact ε at rate 0.3 (0.92): a sequential run
#: may stop at an early look, and the bounds at every rate must still hold
IMPL_LOW = CallableImplementation(rr, Claim(0.5), "rr-all-observed", rr_batch)


def exact_eps(rate: float) -> float:
    return math.log1p((1.0 - rate) ** N * (math.exp(EPS) - 1.0))


def _doc(seed: int = 1, trials: int = 2000, **strata) -> dict:
    return {"implementation": {"target": "tests.pipeline.test_strata_subject:rr",
                               "epsilon": EPS},
            "scenario": {"query": "sum", "d": 1, "n": N, "bound": 1.0},
            "missingness": {"kind": "mcar-iid", "rate": 0.3},
            "pair": {"z": [[math.nan]] + [[0.0]] * (N - 1),
                     "z_prime": [[1.0]] + [[0.0]] * (N - 1)},
            "audit": {"trials": trials, "seed": seed, "pilot_trials": 600},
            "strata": {"rates": RATES, **strata}}


def _audit(subject):
    """``run_audit`` on ``subject``, and the subject its ``with_pilot`` returned (the one that
    ran the main run, holding the design the pilot fixed)."""
    designed = []
    original = StratifiedImplementationSubject.with_pilot

    def capture(self, fitted):
        designed.append(original(self, fitted))
        return designed[-1]

    with mock.patch.object(StratifiedImplementationSubject, "with_pilot", capture):
        res = run_audit(subject=subject)
    return res, designed[-1]


def _masses(subject, g: int) -> tuple[float, float]:
    """Exact masses (numerator, denominator) of the audit's region at rate g of its grid
    (``subject``: the one that ran the main run)."""
    design = subject.design
    stat = design.statistic
    score = design.scores[g]  # each rate's own or the pooled score
    if design.statistics is not None:
        stat = design.statistics[g]
    region = design.regions[g]
    in_region = region.mask(stat.bin_scores(score))[stat.indices(np.array([0., 1.]))]
    w0 = (1.0 - subject.rates[g]) ** N  # z′ fully observed
    law_z = np.array([KEEP, 1 - KEEP])  # z always holds a NaN: b = 0
    law_zp = w0 * np.array([1 - KEEP, KEEP]) + (1 - w0) * law_z
    p, q = law_z[in_region].sum(), law_zp[in_region].sum()
    return (p, q) if region.direction.value == "z_vs_zprime" else (q, p)


def _failures(audits: int, sequential: bool = False) -> tuple[np.ndarray, int, int]:
    """Per rate, the audits whose bound there misses its exact mass or exceeds the exact ε;
    and, over the audits whose bounds are simultaneous (both sides stratified, one region),
    how many failed at some rate, and how many there were. ``sequential``: in 4 looks, half
    the audits stopping at the first look that refutes a claim below the truth."""
    rates = SEQ_RATES if sequential else RATES
    per_rate, joint, simultaneous = np.zeros(len(rates), dtype=int), 0, 0
    stopped = 0
    for seed in range(audits):
        # half the audits fit a score per rate, half one pooled score (which may then share
        # one region over the grid: simultaneous bounds)
        doc = _doc(seed, trials=1000, sides="both", scores=("per-rate", "pooled")[seed % 2])
        doc["audit"]["pilot_trials"] = 400
        impl = IMPL
        if sequential:
            low = seed % 4 >= 2
            doc["audit"].update(mode="sequential", stop="refuted" if low else "budget")
            doc["strata"]["rates"] = SEQ_RATES
            doc["missingness"]["rate"] = 0.0
            impl = IMPL_LOW if low else IMPL
        res, subject = _audit(make_subject(config_from_dict(doc), implementation=impl))
        stopped += res.bound.stopped_early
        bad = np.zeros(len(rates), dtype=bool)
        for g, entry in enumerate(res.to_dict()["strata"]["rates"]):
            num, den = _masses(subject, g)
            bad[g] = (entry["p_lower"] > num + 1e-12 or entry["q_upper"] < den - 1e-12
                      or entry["eps_lower"] > exact_eps(entry["rate"]) + 1e-12)
        per_rate += bad
        if res.bound.simultaneous:
            simultaneous += 1
            joint += bool(bad.any())
    if sequential:  # the early stops this checks: a quarter of the audits at least
        assert stopped >= audits // 4, stopped
    print(f"{audits} audits (sequential={sequential}): failures by rate {per_rate.tolist()},"
          f" {joint} joint of {simultaneous} simultaneous, {stopped} stopped early")
    return per_rate, joint, simultaneous


def _check_validity(audits: int, sequential: bool = False) -> None:
    # each rate's bound holds at 95 % on its own (its region chosen on the pilot alone); the
    # intervals of a one-region, both-sides-stratified run hold at every rate at once. Each
    # count is checked against its binomial 1 − 1e-3 quantile (4 checks: ≤ 4e-3 to fail)
    per_rate, joint, simultaneous = _failures(audits, sequential)
    assert per_rate.max() <= stats.binom.ppf(1 - 1e-3, audits, 0.05), per_rate
    assert joint <= stats.binom.ppf(1 - 1e-3, simultaneous, 0.05), (joint, simultaneous)
    if not sequential:  # pooled scores where one region serves every rate (with rate 0 in
        # the grid, the sequential audits' pooled regions rarely serve every rate)
        assert simultaneous >= audits // 10


@pytest.mark.parametrize("sequential", [False, True], ids=["fixed", "sequential"])
def test_stratified_bounds_are_valid_on_a_null_mechanism(sequential):
    _check_validity(40, sequential)


@pytest.mark.slow
@pytest.mark.parametrize("sequential", [False, True], ids=["fixed", "sequential"])
def test_stratified_bounds_are_valid_on_a_null_mechanism_300_audits(sequential):
    _check_validity(300, sequential)


def nan_mean_batch(datasets, rng):
    """diffprivlib's mean without its NaN check: NaN when an entry is missing."""
    mean = datasets.mean(axis=(1, 2))
    return mean + rng.laplace(0.0, 2.0 / datasets.shape[1], mean.shape)


def nan_mean(data, rng):
    return nan_mean_batch(np.asarray(data)[None], rng)[0]


NAN_MEAN = CallableImplementation(nan_mean, Claim(1.0), "nan-mean", nan_mean_batch)


def _nan_doc(sides: str, trials: int = 20_000) -> dict:
    return {"implementation": {"target": "tests.pipeline.test_strata_subject:nan_mean",
                               "epsilon": 1.0},
            "scenario": {"query": "bounded-mean", "d": 1, "n": 20, "bound": 1.0},
            "missingness": {"kind": "mcar-iid", "rate": 0.3},
            "pair": {"z": [[math.nan]] + [[0.0]] * 19, "z_prime": [[1.0]] + [[0.0]] * 19},
            "audit": {"trials": trials, "seed": 4},
            "strata": {"rates": [0.3], "sides": sides}}


def test_the_rare_stratum_side_is_stratified_and_refutes_what_plain_calls_cannot():
    # z′ releases a number only when fully observed (8e-4 at π = 0.3); z never does
    auto = run_audit(config_from_dict(_nan_doc("auto")), implementation=NAN_MEAN)
    plain = run_audit(config_from_dict(_nan_doc("none")), implementation=NAN_MEAN)
    assert (auto.bound.design_p, auto.bound.design_q) == (SideDesign.PLAIN,
                                                          SideDesign.STRATIFIED)
    assert sum(auto.bound.calls_q) == sum(plain.bound.calls_q) == auto.trials == 20_000
    assert auto.eps_lower > 1.0 > plain.eps_lower  # the claim refuted by strata only
    assert any(v.kind.value == "eps_claim" for v in auto.violations)
    doc = auto.to_dict()
    assert doc["strata"]["design"] == {"p": "plain", "q": "stratified"}
    assert doc["strata"]["rates"][0]["eps_lower"] == auto.eps_lower
    assert doc["witness"]["kind"] == "strata"
    from audit.pipeline.results import bound_from_witness, to_jsonable

    assert bound_from_witness(json.loads(json.dumps(to_jsonable(doc["witness"])))) == auto.bound
    with pytest.raises(ValueError, match="not a strata bound"):
        bound_from_witness({"kind": "strata", "rates": []})


NAN_MEAN_LOW = CallableImplementation(nan_mean, Claim(0.2), "nan-mean", nan_mean_batch)


def test_a_sequential_run_stops_at_the_first_look_that_refutes_the_claim():
    doc = _nan_doc("auto")
    doc["audit"].update(mode="sequential", stop="refuted")
    res = run_audit(config_from_dict(doc), implementation=NAN_MEAN_LOW)
    b = res.bound
    assert b.sequential and b.looks == 4 and b.stopped_early and b.eps_lower > 0.2
    # the looks after 1/8, 1/4, 1/2 and all of each run's calls: stopped before the last
    assert res.trials == sum(b.calls_q) < 20_000 and res.trials <= 10_000
    assert f"stopped at look {b.looks_run}" in res.describe()
    assert any(v.kind.value == "eps_claim" for v in res.violations)
    doc_out = res.to_dict()["strata"]
    assert (doc_out["looks"], doc_out["looks_run"], doc_out["stop"]) == (4, b.looks_run,
                                                                          "refuted")
    from audit.pipeline.results import bound_from_witness, to_jsonable

    assert bound_from_witness(json.loads(json.dumps(to_jsonable(res.to_dict()["witness"])))) \
        == b
    # run to its budget: every look, the same seed the same first looks, never below them
    doc["audit"]["stop"] = "budget"
    full = run_audit(config_from_dict(doc), implementation=NAN_MEAN_LOW)
    assert full.bound.looks_run == 4 and full.trials == 20_000
    assert full.eps_lower >= b.eps_lower
    assert run_audit(config_from_dict(doc), implementation=NAN_MEAN_LOW).bound == full.bound


def test_a_sequential_run_pays_for_its_looks_with_a_smaller_level_per_look():
    doc = _nan_doc("auto")
    fixed = run_audit(config_from_dict(doc), implementation=NAN_MEAN)
    doc["audit"].update(mode="sequential", stop="budget")
    doc["strata"]["looks"] = 2
    subject = make_subject(config_from_dict(doc), implementation=NAN_MEAN)
    assert subject.looks == 2 and subject.alpha_side == pytest.approx(0.05 / 4)
    seq = run_audit(subject=subject)
    # both refute the claim at π = 0.3; the looks cost some of the fixed bound (1.35)
    assert 1.0 < seq.eps_lower < fixed.eps_lower


def test_one_run_gives_every_rate_and_is_reproducible():
    doc = _doc(3, trials=1000, sides="q")
    first = run_audit(config_from_dict(doc), implementation=IMPL)
    again = run_audit(config_from_dict(doc), implementation=IMPL)
    assert first.bound == again.bound
    rates = [e["rate"] for e in first.to_dict()["strata"]["rates"]]
    assert rates == RATES and first.trials == 3 * 1000
    assert first.bound.calls_p == (1000, 1000, 1000)  # z plain: one run per rate
    assert sum(first.bound.calls_q) == 3000 and min(first.bound.calls_q[:-1]) >= 20


def test_a_checkpointed_run_is_read_back(tmp_path):
    doc = _doc(2, trials=1000, sides="both")
    doc["audit"]["checkpoint"] = str(tmp_path)
    first = run_audit(config_from_dict(doc), implementation=IMPL)
    files = sorted(p.name for p in tmp_path.glob("*.npz"))
    assert len(files) >= 2 * 8  # one run per stratum and side
    again = run_audit(config_from_dict(doc), implementation=IMPL)
    assert again.bound == first.bound
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == files


def test_the_subject_refuses_what_it_cannot_count():
    subject = make_subject(config_from_dict(_doc(trials=1000)), implementation=IMPL)
    assert isinstance(subject, StratifiedImplementationSubject)
    assert subject.supports_sequential and subject.tests_at_looks and subject.looks == 1
    with pytest.raises(ValueError, match="count the subject with_pilot returns"):
        subject.count(None, 1000, 0)
    with pytest.raises(ValueError, match="its own pilot"):
        subject.with_pilot(FittedPilot(Pilot(np.zeros(4), np.zeros(4)), 2, None, None, 8,
                                       None))
    from audit.pipeline.implementation import ImplementationSubject

    plain = ImplementationSubject.from_plan(subject.plan)
    with pytest.raises(ValueError, match="StratifiedImplementationSubject"):
        run_audit(subject=plain)
    doc = _doc(trials=10)
    doc["strata"]["floor"] = 50
    with pytest.raises(ValueError, match="strata.floor=50"):
        make_subject(config_from_dict(doc), implementation=IMPL)


@pytest.mark.slow
@pytest.mark.parametrize("target, example", [("diffprivlib:mean", "default"),
                                             ("pipelinedp:sum", "propagate")])
def test_libraries_releasing_nan_refute_their_claim_at_rate_0_3(target, example):
    from audit.adapters import example as adapter_example

    params = adapter_example(target, example).kwargs()
    doc = _nan_doc("auto")
    doc["implementation"] = {"target": target, "epsilon": 1.0, "params": params}
    doc["scenario"]["query"] = "sum"
    res = run_audit(config_from_dict(doc))
    print(target, res.eps_lower, res.describe())
    assert res.trials <= 20_000 and res.eps_lower > 1.0


def test_each_rate_gets_its_own_score_and_the_pilot_of_separate_audits():
    from audit.pipeline.implementation import ImplementationSubject

    doc = _doc(3, trials=1000, sides="auto")
    del doc["audit"]["pilot_trials"]
    subject = make_subject(config_from_dict(doc), implementation=IMPL)
    one = ImplementationSubject.from_plan(subject.plan).pilot_rule.default_size(1000)
    assert subject.pilot_rule.default_size(1000) == len(RATES) * one
    res, designed = _audit(subject)
    assert subject.design is None  # (the subject is frozen: with_pilot returned another)
    design = designed.design
    scores, statistics = design.rate_fits
    assert len(scores) == len(statistics) == len(RATES)
    # each rate's region is on its own score and statistic or on the pooled pair, never a mix
    assert len(design.scores) == len(design.statistics) == len(RATES)
    pooled_pair = (design.score, design.statistic)
    for g in range(len(RATES)):
        pair = (design.scores[g], design.statistics[g])
        assert pair == (scores[g], statistics[g]) or pair == pooled_pair
    assert res.bound.own_scores and not res.bound.simultaneous
    assert res.to_dict()["strata"]["own_scores"] is True
    assert "each rate its own region, on its own or the pooled score" in res.describe()
    doc["strata"]["scores"] = "pooled"
    pooled = make_subject(config_from_dict(doc), implementation=IMPL)
    res, designed = _audit(pooled)
    assert not res.bound.own_scores
    assert designed.design.rate_fits is None


def exact_eps_k(rate: float, k: int) -> float:
    """The exact ε of k releases of ``rr`` sharing one mask, on the audited pair: every bit
    is 1 with probability KEEP given a fully observed z′, so the k ones give the largest
    ratio, 1 + (1 − π)^n (e^{kε} − 1)."""
    return math.log1p((1.0 - rate) ** N * math.expm1(k * EPS))


def test_strata_nest_k_releases_that_share_the_tables_mask():
    # [strata] × [releases] (shared masks): each stratum masks one table, the k releases
    # read it; every rate's bound holds against the k releases' exact ε, the ceilings are the
    # k-release claim amplified at each rate, and the bound sees the composition: above one
    # release's exact ε at π = 0.3 (0.92; the k releases' is 4.45; measured 2.05–3.07)
    k, rates = 2, [0.3, 0.5]
    for seed in range(3):
        doc = _doc(seed, trials=3000, sides="auto")
        doc["audit"].update(pilot_trials=1000, attack="categorical")  # (bits out)
        doc["strata"]["rates"] = rates
        doc["releases"] = {"count": k, "masks": "shared"}
        res = run_audit(config_from_dict(doc), implementation=IMPL)
        entries = res.to_dict()["strata"]["rates"]
        assert [e["rate"] for e in entries] == rates
        for e in entries:
            assert e["eps_lower"] <= exact_eps_k(e["rate"], k) + 1e-12
            assert e["eps_amplified"] == pytest.approx(
                math.log1p((1.0 - e["rate"]) * math.expm1(k * EPS)))
        assert entries[0]["eps_lower"] > exact_eps(0.3), entries[0]


# --------------------------------------------------------------- simultaneous bounds
#: nansum of N entries with Laplace(1) noise: z₁ = +1 against z₁ = NA (the others 0)
def nansum_batch(datasets, rng):
    return np.nansum(datasets, axis=(1, 2)) + rng.laplace(0.0, 1.0, datasets.shape[0])


def nansum(data, rng):
    return nansum_batch(np.asarray(data)[None], rng)[0]


NANSUM = CallableImplementation(nansum, Claim(1.0), "nansum", nansum_batch)
SIM_RATES = [0.0, 0.3, 0.6]


def _interval_masses(stat, region, score, centre: float) -> float:
    """Laplace(centre, 1)'s exact mass of the region's bins (the threshold attack's statistic
    is the output itself: each bin an interval)."""
    mask = region.mask(stat.bin_scores(score))
    cuts = np.concatenate([[-np.inf], stat.edges, [np.inf]])
    cdf = stats.laplace.cdf(cuts, loc=centre)
    bins = np.append(np.diff(cdf), 0.0)  # underflow, the edges' bins, overflow; NaN: 0
    return float(bins[mask[:bins.size]].sum())


def _simultaneous_failures(audits: int) -> tuple[int, int]:
    """Audits (of ``audits``) whose bounds fail at some rate of the grid at once, and the
    audits that were simultaneous."""
    failed = simultaneous = 0
    for seed in range(audits):
        doc = _doc(seed, trials=1000, simultaneous=True)
        doc["implementation"]["target"] = "tests.pipeline.test_strata_subject:nansum"
        doc["strata"]["rates"] = SIM_RATES
        doc["missingness"]["rate"] = 0.3
        doc["audit"].update(attack="threshold", pilot_trials=400)
        doc["pair"] = {"z": [[1.0]] + [[0.0]] * (N - 1),
                       "z_prime": [[math.nan]] + [[0.0]] * (N - 1)}
        res, subject = _audit(make_subject(config_from_dict(doc), implementation=NANSUM))
        design = subject.design
        simultaneous += res.bound.simultaneous
        bad = False
        for g, e in enumerate(res.to_dict()["strata"]["rates"]):
            region, rate = design.regions[g], e["rate"]
            l1, l0 = (_interval_masses(design.statistic, region, design.score, c)
                      for c in (1.0, 0.0))
            p, q = (1 - rate) * l1 + rate * l0, l0  # z: record 1 observed w.p. 1 − π
            num, den = (p, q) if region.direction.value == "z_vs_zprime" else (q, p)
            bad |= e["p_lower"] > num + 1e-12 or e["q_upper"] < den - 1e-12
        failed += bad
    return failed, simultaneous


def _check_simultaneous(audits: int) -> None:
    # every audit asked for simultaneous bounds gets them (both sides stratified, one
    # region), and the bounds fail at some rate of the grid in at most α of the audits
    # (checked against the binomial 1 − 1e-3 quantile)
    failed, simultaneous = _simultaneous_failures(audits)
    assert simultaneous == audits
    assert failed <= stats.binom.ppf(1 - 1e-3, audits, 0.05), failed


def test_simultaneous_bounds_hold_at_every_rate_at_once_on_a_continuous_release():
    _check_simultaneous(30)


@pytest.mark.slow
def test_simultaneous_bounds_hold_at_every_rate_at_once_300_audits():
    _check_simultaneous(300)


@pytest.mark.parametrize(("strata", "needle"), [
    ({"simultaneous": True, "sides": "q"}, "strata.sides must be 'both'"),
    ({"simultaneous": True, "scores": "per-rate"}, "strata.scores must be 'pooled'"),
    ({"simultaneous": "yes"}, "strata.simultaneous must be true or false"),
])
def test_simultaneous_bounds_refuse_what_would_break_them(strata, needle):
    with pytest.raises(ValueError, match=needle):
        config_from_dict(_doc(**strata))
