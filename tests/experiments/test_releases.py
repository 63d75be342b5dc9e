"""releases: a smoke run through the suite (schema, ε_lower ≤ its ceilings), the diffprivlib
pair's closed form against a brute-force k-dimensional likelihood ratio, and the committed
default run (every ε_lower below its ceilings; the shared-mask crossing)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from audit.theory import accountant as acc
from experiments import releases as rel
from experiments import releases_persistent as relp
from experiments.report import check_document, write_report
from experiments.suite import run_suite

ROOT = Path(__file__).resolve().parents[2]
ROW_KEYS = {"releases", "masks", "p_star", "eps_lower", "delta", "eps_pair",
            "eps_fresh_composed", "eps_fresh_composed_rule", "crosses_fresh_composed",
            "setting", "subject"}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The experiment at smoke size, through the suite."""
    out = tmp_path_factory.mktemp("releases")
    (returned,) = run_suite(out, size="smoke", only=["releases"], progress=False,
                            log=lambda *_: None)
    doc = json.loads((out / "releases.json").read_text())
    assert returned["experiment"] == doc["experiment"] == "releases"
    return out, doc


def _expected_cells(size: str):
    cells = []
    for p in rel.GAUSS_P_STARS:
        s = f"gaussian-p{p:g}"
        cells += [(s, "model", k, "shared") for k in rel.GAUSS_KS[size]]
        cells += [(s, "model", k, "fresh") for k in rel.GAUSS_FRESH_KS[size]]
    cells += [("laplace-iid", "model", k, m) for k in rel.FEW_KS for m in ("shared", "fresh")]
    cells += [("diffprivlib-nansum", "black-box", k, "shared") for k in rel.FEW_KS]
    return cells


def _check_schema(doc, size):
    check_document("releases", doc)
    assert doc["size"] == size and doc["seed"] == 10
    rows = doc["rows"]
    assert [(r["setting"], r["subject"], r["releases"], r["masks"]) for r in rows] == \
        _expected_cells(size)
    for r in rows:
        assert ROW_KEYS <= set(r), r["name"]
        assert r["config"]["releases"] == {"count": r["releases"], "masks": r["masks"]}
        assert r["eps_fresh_composed_rule"] in rel.FRESH_RULES.values()
        assert r["crosses_fresh_composed"] == (r["eps_lower"] > r["eps_fresh_composed"])
        gauss = r["setting"].startswith("gaussian")
        assert r["delta"] == (rel.DELTA if gauss else 0.0)
        assert r["eps_pair"] is not None
        if r["setting"] == "laplace-iid" and r["masks"] == "shared":  # the closed form
            assert r["eps_pair"] == rel.nansum_pair_epsilon(r["releases"], rel.IID_RATE,
                                                            entries=rel.LAPLACE_D)
    assert doc["crossing"] == rel.crossing(rows)
    assert doc["findings"] == rel.findings(rows, doc["curves"], doc.get("persistent"))


def _check_persistent(doc, size):
    """The persistent-non-response curve: one model audit per r, each below its pair's and
    the setting's bracket; its ends are the shared-mask accountant's row at the same k (r = 1)
    and the fresh-mask worst case (r = 0), to their errors."""
    from audit.theory.worst_case import Setting, worst_case

    cur = doc["persistent"]
    rows = cur["rows"]
    assert [r["persistence"] for r in rows] == list(relp.PERSISTENCES_BY_SIZE[doc["size"]])
    k, p = cur["releases"], cur["p_star"]
    for r in rows:
        assert ROW_KEYS <= set(r) and r["masks"] == "persistent" and r["releases"] == k
        assert r["config"]["releases"] == {"count": k, "masks": "persistent",
                                           "persistence": r["persistence"]}
        assert r["trials"] == relp.TRIALS[size] and r["violations"] == []
        upper = r["eps_pair"] + r["eps_pair_error"]
        assert r["eps_lower"] <= upper <= r["eps_accountant"] + 1e-9, r["name"]
        assert r["eps_accountant_lower"] <= r["eps_pair"] + r["eps_pair_error"]
    shared = next(r for r in rel.by(doc["rows"], cur["setting"], "model", "shared")
                  if r["releases"] == k)
    one = rows[-1]
    assert abs(one["eps_accountant"] - shared["eps_accountant"]) <= \
        (one["eps_accountant"] - one["eps_accountant_lower"]) + 1e-9
    fresh = worst_case(Setting("gaussian", rows[0]["noise_scale"], (-1.0, 1.0), 0.0, p, k,
                               "fresh"), cur["delta"])
    assert rows[0]["eps_accountant_lower"] <= fresh.epsilon
    assert fresh.lower <= rows[0]["eps_accountant"]
    # fresh masks lose less than one shared mask here, and the curve rises between them
    hi = [r["eps_accountant"] for r in rows]
    assert hi == sorted(hi) and hi[0] < rows[-1]["eps_accountant_lower"]


def _check_ceilings(doc):
    for r in doc["rows"]:
        assert r["eps_lower"] <= min(rel.ceilings(r)), r["name"]
        if r["masks"] == "shared":
            assert r["eps_lower"] <= r["eps_theory"] + 1e-12, r["name"]


def _check_theory(doc):
    """The stored bounds against the accountant, recomputed independently of the rows."""
    for r in doc["rows"]:
        k, p = r["releases"], r["p_star"]
        if r["setting"].startswith("gaussian"):
            sigma = 2.0 * math.sqrt(2 * math.log(1.25 / rel.DELTA)) / rel.EPSILON  # classical
            mu1 = 2.0 / sigma  # sensitivity 2B over σ, one release
            fresh = acc.fresh_masks_epsilon(acc.tradeoff_gaussian(mu1), p, k, r["delta"])
            if r["masks"] == "fresh":  # Proposition 9.2, on the per-release σ
                assert r["noise_scale"] == pytest.approx(sigma, rel=1e-12)
                assert r["eps_theory"] == pytest.approx(fresh, rel=1e-9)
            else:
                assert r["noise_scale"] == pytest.approx(sigma / math.sqrt(k), rel=1e-12)
                mu = math.sqrt(k) * mu1
                # Proposition 9.1 on G_{√k μ}: ln(1 + p*(e^{ε_k(δ/p*)} − 1))
                eps_k = acc.epsilon_for_delta(acc.tradeoff_gaussian(mu), rel.DELTA / p)
                assert r["eps_theory"] == pytest.approx(math.log1p(p * math.expm1(eps_k)),
                                                        rel=1e-6)
                assert r["comparisons"]["eps_fresh_composed"] == pytest.approx(fresh, rel=1e-9)
        else:
            fresh = k * math.log1p(p * math.expm1(rel.EPSILON))
        assert r["eps_fresh_composed"] == pytest.approx(fresh, rel=1e-9), r["name"]
    for r in rel.by(doc["rows"], "laplace-iid", masks="fresh"):
        assert r["eps_pair"] == pytest.approx(k_times_one(r["releases"]), rel=1e-9)


def k_times_one(k):
    """k × the Laplace sum's one-release pair ε under mcar-iid (d = 10, r = 0.9), δ = 0."""
    # the record's shift is Binomial(10, 0.1) × 2 (±1 per observed feature), noise b = 20;
    # the likelihood ratio saturates in the tails: ε = ln(E e^{S/b} / E e^{−S/b}) with S the
    # number observed (times 1 on each side: centres −S against +S)
    b, q = 20.0, 0.1
    up = sum(math.comb(10, j) * q**j * (1 - q) ** (10 - j) * math.exp(j / b) for j in range(11))
    down = sum(math.comb(10, j) * q**j * (1 - q) ** (10 - j) * math.exp(-j / b)
               for j in range(11))
    return k * math.log(up / down)


# --- the closed form of the diffprivlib pair ------------------------------------------------

def _log_ratio(y, rate):
    """ln p/q of k outputs, record 1 at −1 (p) against +1 (q), others 0, Laplace(2), shared
    mask: written out from the densities."""
    q = 1 - rate

    def lik(c):
        return rate * np.exp(-np.abs(y).sum(-1) / 2) + q * np.exp(-np.abs(y - c).sum(-1) / 2)

    return np.log(lik(-1.0)) - np.log(lik(1.0))


@pytest.mark.parametrize("k", [1, 2, 5, 20])
@pytest.mark.parametrize("rate", [0.0, 0.5, 0.9])
def test_nansum_pair_epsilon_is_the_sup_of_the_k_output_ratio(k, rate):
    eps = rel.nansum_pair_epsilon(k, rate)
    corner = np.full((1, k), -3.0)  # every output below −1: the supremum is reached
    assert abs(_log_ratio(corner, rate)[0]) == pytest.approx(eps, rel=1e-10)
    y = np.random.default_rng(k).uniform(-6, 6, size=(20_000, k))
    assert np.max(np.abs(_log_ratio(y, rate))) <= eps + 1e-9
    if k == 1:  # the one-release value by the project's exact integrator
        from experiments import na_position as nap

        assert eps == pytest.approx(nap.zero_fill_epsilon(0.5, rate, 1.0), rel=1e-14)


def _log_ratio_entries(y, rate, d):
    """ln p/q of k outputs of a Laplace(2d) sum of d entries, record 1 at −1 in each entry
    (p) against +1 (q), others 0, each entry masked with probability ``rate`` (shared by the
    k releases): the mixture over the 2^d masks written out."""
    from itertools import product

    def lik(c):
        out = 0.0
        for mask in product((0, 1), repeat=d):  # 1: observed
            j = sum(mask)
            w = (1 - rate) ** j * rate ** (d - j)
            out = out + w * np.exp(-np.abs(y - c * j).sum(-1) / (2 * d))
        return out

    return np.log(lik(-1.0)) - np.log(lik(1.0))


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("d", [2, 3])
def test_the_entrywise_pair_epsilon_is_the_sup_of_the_k_output_ratio(k, d):
    # laplace-iid's shared-mask value: feature-wise masks, one record of d entries
    eps = rel.nansum_pair_epsilon(k, 0.6, entries=d)
    corner = np.full((1, k), -3.0 * d)  # every output below −d: the supremum is reached
    assert abs(_log_ratio_entries(corner, 0.6, d)[0]) == pytest.approx(eps, rel=1e-10)
    y = np.random.default_rng(10 * k + d).uniform(-4 * d, 4 * d, size=(20_000, k))
    assert np.max(np.abs(_log_ratio_entries(y, 0.6, d))) <= eps + 1e-9
    # beyond one entry it is below the one-entry value at the same total shift
    assert eps < rel.nansum_pair_epsilon(k, 0.6)


def test_nansum_pair_epsilon_values():
    assert rel.nansum_pair_epsilon(1, 0.0) == pytest.approx(1.0)
    assert rel.nansum_pair_epsilon(20, 0.9) == pytest.approx(
        math.log((0.9 + 0.1 * math.exp(10)) / (0.9 + 0.1 * math.exp(-10))), rel=1e-14)


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="releases must be"):
        rel.nansum_pair_epsilon(0, 0.5)
    with pytest.raises(ValueError, match="rate must be in"):
        rel.nansum_pair_epsilon(2, 1.5)
    with pytest.raises(ValueError, match="size must be one of"):
        rel.run("huge")


# --- the smoke run ---------------------------------------------------------------------------

def test_smoke_run_schema_and_theory(smoke):
    _, doc = smoke
    _check_schema(doc, "smoke")
    _check_theory(doc)
    _check_persistent(doc, "smoke")


def test_smoke_lower_bounds_lie_below_their_ceilings(smoke):
    _check_ceilings(smoke[1])


def test_report_of_the_smoke_run(smoke):
    out, doc = smoke
    text = write_report(out).read_text()
    assert f"## {rel.TITLE}" in text
    assert "--releases K --masks shared" in text
    assert (out / "figures" / "releases.png").stat().st_size > 20_000


# --- the committed results -------------------------------------------------------------------

@pytest.fixture(scope="module")
def committed():
    return json.loads((ROOT / "results" / "releases.json").read_text())


def test_committed_results_schema_theory_and_ceilings(committed):
    _check_schema(committed, "default")
    _check_theory(committed)
    _check_ceilings(committed)
    if "persistent" in committed:  # results written before the curve lack it
        _check_persistent(committed, "default")
    for r in committed["rows"]:
        budget = ("diffprivlib" if r["subject"] == "black-box" else "laplace"
                  if r["setting"] == "laplace-iid" else "fresh" if r["masks"] == "fresh"
                  else "model")
        assert r["trials"] == rel.TRIALS["default"][budget], r["name"]


def test_committed_shared_mask_lower_bound_crosses_the_fresh_composed_bound(committed):
    rows = rel.by(committed["rows"], "gaussian-p0.1", "model", "shared")
    crossing = [r for r in rows if r["releases"] <= 100
                and r["eps_lower"] > r["eps_fresh_composed"]]
    assert crossing, "no shared-mask ε_lower above the fresh composed bound"
    assert committed["crossing"]["gaussian-p0.1"] == min(r["releases"] for r in crossing)
    for r in crossing:  # refutes the per-release accounting, not the shared-mask bound
        assert r["eps_lower"] <= r["eps_pair"] <= r["eps_theory"]


def _check_accountant(doc: dict) -> None:
    """The accountant's worst case of each setting (docs/THEORY.md §10) holds for what the
    audits measure: ε_lower and the audited pair's exact ε lie below its upper end, the
    bracket is ordered, and where it is exact the audited pair (−B, +B) attains it."""
    rows = [r for r in doc["rows"] if r.get("eps_accountant") is not None]
    assert {r["setting"] for r in rows} == {"gaussian-p0.1", "gaussian-p0.5",
                                            "diffprivlib-nansum"}
    for r in rows:
        assert r["eps_accountant_lower"] <= r["eps_accountant"] + 1e-12, r["name"]
        assert r["eps_lower"] <= r["eps_accountant"], r["name"]
        err = r["eps_pair_error"] or 0.0
        assert r["eps_pair"] - err <= r["eps_accountant"] + 1e-9, r["name"]
        if r["eps_accountant_exact"] and r["masks"] == "shared":
            assert r["eps_accountant"] == pytest.approx(r["eps_pair"], abs=2e-3 + err), r["name"]


def test_smoke_rows_carry_the_accountant(smoke):
    _check_accountant(smoke[1])


def test_committed_rows_carry_the_accountant(committed):
    _check_accountant(committed)
