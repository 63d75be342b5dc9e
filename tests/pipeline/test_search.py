"""audit.pipeline.search: a black-box audit that finds its own pair ([search])."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.model.implementation import CallableImplementation, Claim
from audit.pipeline.config import config_from_dict
from audit.pipeline.runner import run_audit
from audit.pipeline.search import CandidateScore, search_key, search_pair
from audit.pipeline.search_config import schedule, search_cost


def _sum_release(leak: float = 0.0):
    """A Laplace sum of the clipped entries (NA read as 0) at the substitution sensitivity
    2dB of d features in [−1, 1]: ε = 1. With ``leak`` > 0 it adds ``leak`` when record 0's
    feature 1 is NA, which no value pair shows."""
    def batch(datasets, rng):
        x = np.clip(np.nan_to_num(datasets, nan=0.0), -1, 1)
        out = x.sum(axis=(1, 2)) + rng.laplace(0.0, 2.0 * datasets.shape[2], datasets.shape[0])
        return out + leak * np.isnan(datasets[:, 0, 1])

    return CallableImplementation(lambda data, rng: batch(data[None], rng)[0],
                                  Claim(1.0, 0.0, "Laplace sum, b = 2dB"), "sum",
                                  batch_func=batch)


def _doc(**search) -> dict:
    return {"scenario": {"mechanism": "laplace", "epsilon": 1.0, "n": 5, "d": 2, "bound": 1.0,
                         "query": "sum"},
            "missingness": {"kind": "mcar-iid", "rate": 0.0},
            "search": {"families": ["corners", "nan-position"], "cap": 8, "calls": 1000,
                       **search},
            "audit": {"trials": 5000, "seed": 1, "attack": "density-ratio"}}


def test_the_search_finds_the_pair_that_leaks_and_the_audit_refutes_the_claim():
    res = run_audit(config_from_dict(_doc()), implementation=_sum_release(leak=5.0))
    s = res.to_dict()["search"]
    best = s["candidates"][s["chosen"]]
    assert best["family"] == "nan-position" and "feature 1 NA" in best["label"]
    # successive halving: 16 candidates at 1,000 calls, the best 4 at 4,000, the best 2 at
    # 16,000 (each with the black-box pilot rule's pilot: 2,000, 8,000 and 20,000 calls)
    assert s["rounds"] == [{"candidates": 16, "calls": 1000}, {"candidates": 4, "calls": 4000},
                           {"candidates": 2, "calls": 16000}]
    cands = s["candidates"]
    assert sorted(len(c["scores"]) for c in cands) == [1] * 12 + [2] * 2 + [3] * 2
    assert all(c["score"] == c["scores"][-1] for c in cands)
    for r in (0, 1):  # each round goes on with the best of the round before
        went_on = [c["scores"][r] for c in cands if len(c["scores"]) > r + 1]
        stayed = [c["scores"][r] for c in cands if len(c["scores"]) == r + 1]
        assert min(went_on) >= max(stayed)
    finalists = [c for c in cands if len(c["scores"]) == 3]
    assert best in finalists and best["score"] == max(c["score"] for c in finalists)
    top = [c for c in finalists if c["score"] == best["score"]]
    assert best["eps_point"] == max(c["eps_point"] for c in top)  # ties: the plug-in value
    assert s["calls_per_side"] == 16 * 3000 + 4 * 12000 + 2 * 36000
    assert res.violations and res.eps_lower > 1.0  # shift 6 at b = 4: ε = 1.5
    assert best["z_prime0"][1] is None  # record 0's feature 1 NA on z′
    # the result's config is the audit that ran: rerunning it audits the same pair
    assert np.isnan(np.asarray(res.config["pair"]["z_prime"], dtype=float)[0, 1])
    assert "search" not in res.config


def test_the_search_is_reproducible_and_on_streams_of_its_own():
    cfg = config_from_dict(_doc(cap=3))
    impl = _sum_release()
    seen = []

    def score(candidate):  # the search is handed a scoring function, not the runner
        seen.append(candidate)
        return CandidateScore.of(run_audit(candidate, implementation=impl))

    a = search_pair(cfg, score)
    b = search_pair(cfg, score)
    assert [c["score"] for c in a.report.candidates] == \
        [c["score"] for c in b.report.candidates]
    assert len(seen) == 2 * sum(n for n, _ in a.report.rounds)
    assert all(c.search is None and c.pair is not None for c in seen)
    assert a.report.to_dict()["candidates"][a.report.chosen] == a.report.best
    keys = {search_key(1, i, r) for i in range(100) for r in range(3)}
    assert len(keys) == 300 and 1 not in keys and search_key(1, 0) == search_key(1, 0, 0)
    assert search_key(2, 0) != search_key(1, 0)


def _fake_scores(cfg, positive_from_round: int):
    """A scoring function that scores 0 before ``positive_from_round`` and the candidate's
    index after it (a signal only more calls reveal), recording each (round, calls)."""
    seen = []

    def score(candidate):
        calls = candidate.audit.trials
        r = {cfg.search.calls * 4 ** j: j for j in range(6)}.get(calls, 99)
        seen.append((candidate.name, calls))
        value = 0.0 if r < positive_from_round else float(len(seen))
        return CandidateScore(value, None, calls)

    return score, seen


def test_a_round_of_zeros_is_not_halved_on_noise():
    cfg = config_from_dict(_doc(cap=16, calls=100))
    n = len(search_pair(cfg, _fake_scores(cfg, 0)[0]).report.candidates)
    planned = schedule(n, 100)
    assert len(planned) == 3, planned  # more than 8 candidates: n -> ceil(n/4) -> 2
    score, seen = _fake_scores(cfg, 99)  # every score 0 in every round
    out = search_pair(cfg, score)
    left = sum(k * c for k, c in planned[1:]) // n
    assert list(out.report.rounds) == [(n, 100), (n, left)]
    assert len(seen) == 2 * n and all(len(c["scores"]) == 2 for c in out.report.candidates)
    assert sum(k * c for k, c in out.report.rounds) <= sum(k * c for k, c in planned)
    # a round with a positive score is halved as planned
    score, seen = _fake_scores(cfg, 0)
    assert list(search_pair(cfg, score).report.rounds) == planned


@pytest.mark.parametrize("candidates, rounds", [
    (1, [(1, 100)]), (2, [(2, 100)]), (3, [(3, 100), (2, 400)]), (8, [(8, 100), (2, 400)]),
    (9, [(9, 100), (3, 400), (2, 1600)]), (16, [(16, 100), (4, 400), (2, 1600)]),
])
def test_successive_halving_keeps_a_quarter_and_ends_on_two(candidates, rounds):
    assert schedule(candidates, 100) == rounds
    assert search_cost(candidates, 100) == sum(n * c for n, c in rounds)


@pytest.mark.parametrize("candidates, calls, needle", [(0, 100, "candidates"),
                                                       (8, 0, "calls"), (2.5, 100, "candidates")])
def test_a_schedule_refuses_what_is_not_a_positive_count(candidates, calls, needle):
    with pytest.raises(ValueError, match=needle):
        schedule(candidates, calls)


def _null_failures(audits: int, first_seed: int) -> int:
    """How many of ``audits`` searched audits of the ε = 1 sum exceed ε = 1."""
    impl = _sum_release()
    fails = 0
    for seed in range(first_seed, first_seed + audits):
        doc = _doc(cap=4, calls=200)
        doc["audit"].update(seed=seed, trials=2000)
        fails += run_audit(config_from_dict(doc), implementation=impl).eps_lower > 1.0
    return fails


def test_searched_audits_of_a_release_that_keeps_its_claim_stay_below_it():
    """The chosen pair is audited on fresh calls: ε_lower ≤ ε = 1 in at least 95 % of audits.
    20 audits: failures allowed up to the Binomial(20, 0.05) quantile at 1 − 10⁻³."""
    assert _null_failures(20, 100) <= stats.binom.ppf(1 - 1e-3, 20, 0.05)


def test_a_search_extended_on_zeros_still_audits_on_fresh_calls():
    """A release that ignores its input (true ε = 0): every candidate scores 0, so the search
    extends its first round instead of halving; the chosen pair's audit still runs on calls
    the search never saw, so ε_lower > 0 at most at the rate α = 5 % (10 audits, Binomial
    quantile at 1 − 10⁻³; the slow test_searched_audit_validity_300 holds 300)."""
    def noise(datasets, rng):
        return rng.laplace(0.0, 1.0, datasets.shape[0])

    impl = CallableImplementation(lambda d, rng: noise(d[None], rng)[0], Claim(1.0, 0.0, "n"),
                                  "noise", batch_func=noise)
    exceed, extended = 0, 0
    for seed in range(10):
        doc = _doc(cap=5, calls=200)
        doc["audit"].update(seed=seed, trials=1000)
        res = run_audit(config_from_dict(doc), implementation=impl)
        rounds = res.search.rounds
        extended += len(rounds) == 2 and rounds[1][0] == rounds[0][0]
        exceed += res.eps_lower > 0.0
    assert extended >= 5  # the extension is what this test exercises
    assert exceed <= stats.binom.ppf(1 - 1e-3, 10, 0.05)


@pytest.mark.slow
def test_searched_audit_validity_300():
    assert _null_failures(300, 1000) <= stats.binom.ppf(1 - 1e-3, 300, 0.05)


@pytest.mark.parametrize("change, needle", [
    ({"pair": {"z": [[1.0, 0.0]] + [[0.0, 0.0]] * 4,
               "z_prime": [[0.0, 0.0]] * 5}}, "exclusive"),
    ({"strata": {"rates": [0.0]}, "implementation": {"target": "diffprivlib:nanmean",
                                                      "epsilon": 1.0,
                                                      "params": {"bounds": [-1.0, 1.0]}}},
     "not supported"),
    ({"search": {"families": ["tester"]}}, "scenario.n must be 1"),
    ({"search": {"colour": 1}}, "unknown key search.colour"),
    ({"search": {"calls": 10}}, "search.calls must be"),
    ({"search": {"calls": 10**6, "cap": 1000}}, "the calls of all its rounds"),
    # one round (2 × 3 × 10⁷ = 6·10⁷) would fit; the second (2 × 4·10⁷ more) does not
    ({"search": {"families": ["corners", "nan"], "cap": 3, "calls": 10**7}},
     "the calls of all its rounds"),
    ({"search": {"families": "nan"}}, "search.families must be a non-empty list"),
    ({"search": {"families": ["list"], "pairs": [{"z": [[1.0]]}]}}, "search.pairs"),
    ({"search": "everything"}, r"\[search\] must be a table"),
])
def test_bad_search_tables_are_refused_before_any_work(change, needle):
    doc = _doc()
    doc.update(change)
    with pytest.raises(ValueError, match=needle):
        config_from_dict(doc)


def test_a_model_audit_with_a_search_is_refused_before_any_work():
    with pytest.raises(ValueError, match="needs an implementation"):
        run_audit(config_from_dict(_doc()))


def test_a_search_around_the_users_table_finds_the_record_whose_na_leaks(tmp_path):
    # the release leaks when record 3's feature 0 is NA; the user's table has NA elsewhere:
    # the table family replaces each record (corners, NA, another record's NaN pattern) and
    # the search picks record 3 against a pattern with feature 0 NA
    table = np.array([[0.5, -0.5], [np.nan, 1.0], [1.0, 0.0], [0.25, 0.75], [0.0, np.nan]])
    path = tmp_path / "mine.csv"
    path.write_text("a,b\n" + "\n".join(",".join("" if np.isnan(v) else str(v) for v in r)
                                        for r in table))

    def batch(datasets, rng):
        x = np.clip(np.nan_to_num(datasets, nan=0.0), -1, 1)
        out = x.sum(axis=(1, 2)) + rng.laplace(0.0, 4.0, datasets.shape[0])
        return out + 6.0 * np.isnan(datasets[:, 3, 0])

    impl = CallableImplementation(lambda data, rng: batch(data[None], rng)[0],
                                  Claim(1.0, 0.0, "Laplace sum, b = 4"), "sum", batch_func=batch)
    doc = _doc(families=["table"], table=str(path), cap=32)
    res = run_audit(config_from_dict(doc), implementation=impl)
    s = res.to_dict()["search"]
    best = s["candidates"][s["chosen"]]
    assert best["family"] == "table" and best["record"] == 3 and best["z_prime0"][0] is None
    assert res.eps_lower > 1.0  # the claim refuted on the pair around the user's table
    z = np.asarray(res.config["pair"]["z"], dtype=float)
    np.testing.assert_array_equal(z, table)  # the audited z is the user's table


@pytest.mark.parametrize(("search", "needle"), [
    ({"families": ["table"]}, "search.table must be given exactly"),
    ({"families": ["corners"], "table": "x.csv"}, "search.table must be given exactly"),
    ({"families": ["table"], "table": "/nonexistent/t.csv"}, "readable table of numbers"),
    ({"families": ["table"], "table": "WRONG_SHAPE"}, r"5 × 2 entries"),
])
def test_bad_tables_are_refused_before_any_work(tmp_path, search, needle):
    if search.get("table") == "WRONG_SHAPE":
        path = tmp_path / "t.csv"
        path.write_text("1,0\n0,1\n")
        search = {**search, "table": str(path)}
    with pytest.raises(ValueError, match=needle):
        config_from_dict(_doc(**search))


def test_a_table_is_named_relative_to_the_config_file(tmp_path):
    from audit.pipeline.config import load_config

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("\n".join(["0.5,0", "0,1", "1,1", "0,0", ",0"]))
    cfg = tmp_path / "audit.toml"
    cfg.write_text('[scenario]\nnoise = "laplace"\nepsilon = 1.0\nquery = "sum"\nd = 2\nn = 5\n'
                   '[missingness]\nkind = "mcar-iid"\nrate = 0.0\n'
                   '[search]\nfamilies = ["table"]\ntable = "data/t.csv"\n')
    loaded = load_config(cfg)
    assert loaded.search.data.shape == (5, 2) and np.isnan(loaded.search.data[4, 0])
