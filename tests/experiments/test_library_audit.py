"""library_audit: a smoke-size run through the suite flags the libraries that release NaN
exactly when an entry is missing (the audit has teeth), the exact-ε reference, and the report's
claim table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from experiments import library_audit
from experiments.plotting import num
from experiments.report import _table, write_report
from experiments.suite import run_suite

ROOT = Path(__file__).resolve().parents[2]
NAN_PROPAGATING = ("diffprivlib:mean", "pipelinedp:sum")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The experiment at smoke size (200 calls per side, a few seconds), through the suite."""
    out = tmp_path_factory.mktemp("library_audit")
    (returned,) = run_suite(out, size="smoke", only=["library_audit"], progress=False,
                            log=lambda *_: None)
    doc = json.loads((out / "library_audit.json").read_text())
    assert returned["experiment"] == doc["experiment"] == "library_audit"
    return out, doc


def _strata(doc):
    return [r["strata"] for r in doc["rows"]]


def test_smoke_run_has_one_row_per_target_and_rate(smoke):
    _, doc = smoke
    assert doc["size"] == "smoke" and doc["seed"] == 8
    # the isolated library (its own environment) is not run at smoke size
    targets = [t["target"] for t in library_audit.TARGETS if t["trials"]["smoke"] is not None]
    assert {t["target"] for t in library_audit.TARGETS} - set(targets) == {
        "smartnoise-sql:sum", "tumult:sum"}
    assert [(r["target"], r["rate"]) for r in doc["rows"]] == [
        (t, p) for t in targets for p in library_audit.RATES]
    for r in doc["rows"]:
        assert r["calls_per_side"] == 200  # per rate; the stratified run's trials: the grid's
        assert r["trials"] == 200 * len(library_audit.RATES)
        assert r["eps_claim"] == 1.0 and r["delta"] == 0.0
        assert r["p_star"] == pytest.approx(1.0 - r["rate"])
        assert r["eps_theory"] == pytest.approx(math.log1p((1 - r["rate"]) * (math.e - 1)))
        assert {"kind", "p_lower", "q_upper", "design", "direction"} <= set(r["witness"])
        assert r["witness"]["kind"] == "strata", r["name"]
        assert r["claim_refuted"] == (r["eps_lower"] > r["eps_claim"])
        assert "strata" in r["config"]  # every target: one run for the whole grid
        assert r["name"] == f"library_audit[{r['target']}, π={r['rate']:g}, stratified]"
    # each rate bounded on a score fitted for it (the configs' default strata.scores)
    assert all(r["own_scores"] for r in _strata(doc))
    assert set(doc["library_versions"]) == {*library_audit.LIBRARIES, "smartnoise-sql",
                                            "tmlt.analytics"}
    assert doc["library_versions"]["smartnoise-sql"] == "1.0.10"  # pinned in its environment


@pytest.mark.parametrize("target", NAN_PROPAGATING)
def test_a_library_releasing_nan_on_one_side_is_flagged_at_smoke_size(smoke, target):
    # z's differing record is missing: at π = 0, z releases NaN every time and z' never, an
    # event no finite ε allows. 200 calls per side refute ε = 1 by far (ε_lower ≈ 4).
    _, doc = smoke
    (row,) = [r for r in doc["rows"] if r["target"] == target and r["rate"] == 0.0]
    assert row["claim_refuted"] and row["amplified_refuted"]
    assert row["eps_lower"] > 3.0
    # one stratified run: z (always NaN) plain per rate, its bound on z′'s finite release
    assert row["witness"]["kind"] == "strata" and row["witness"]["q_upper"] < 0.02
    assert row["eps_lower"] <= row["budget_ceiling"] + 1e-12
    assert any(line.startswith(f"- **{target}**") and "violates its claim from π = 0" in line
               for line in doc["findings"])


def test_report_of_the_smoke_run_has_the_claim_table_and_findings(smoke):
    out, doc = smoke
    text = write_report(out).read_text()
    assert f"## {library_audit.TITLE}" in text
    assert ("| audit | calls per side | p* | ε_lower | ε_point (plug-in, not a bound) | "
            "claimed ε |") in text
    assert "violates its claim" in text and "keeps its claim" in text
    assert (out / "figures" / "library_audit.png").stat().st_size > 20_000


def test_exact_epsilon_reference():
    e = library_audit.exact_epsilon
    for pair in ("search", "others-at-bound"):
        assert e(pair, 20, 0.0, 1.0) == pytest.approx(1.0, abs=1e-3)  # no missingness: ε
    # a masked record adds 0 to the sum: ln((π + (1 − π)√e) / (π + (1 − π)/√e))
    assert e("search", 20, 0.5, 1.0) == pytest.approx(0.5, abs=1e-12)
    search = [e("search", 20, p, 1.0) for p in library_audit.RATES]
    assert search == sorted(search, reverse=True)
    # nanmean's noise is calibrated to N = 20 entries however few are observed: its ε grows
    mean = [e("others-at-bound", 20, p, 1.0) for p in library_audit.RATES]
    assert mean == sorted(mean) and mean[-1] > 15
    assert e("nan-one-side", 20, 0.3, 1.0) == math.inf


def test_the_variance_reference_is_the_bounded_domain_mixture():
    """nanvar's pair (z₁ = −1 vs +1, the others +1) against its law written anew with
    scipy's Laplace: each observed-count's variance, noise conditioned on [0, 1]."""
    from diffprivlib.mechanisms import LaplaceBoundedDomain

    e = library_audit.exact_epsilon
    # no missingness: the pair's variances differ by the sensitivity 4·19/20², whose
    # bounded-domain scale diffprivlib finds so that ε is exactly the claim
    assert e("others-at-bound", 20, 0.0, 1.0, statistic="variance") == pytest.approx(1, abs=1e-6)
    n, rate = 20, 0.7
    b = LaplaceBoundedDomain(epsilon=1.0, delta=0, sensitivity=0.19, lower=0,
                             upper=1)._find_scale()
    ys = np.linspace(0.0, 1.0, 4001)

    def density(c):
        law = stats.laplace(loc=c, scale=b)
        return law.pdf(ys) / (law.cdf(1.0) - law.cdf(0.0))

    counts = stats.binom(n - 1, 1 - rate)
    z = sum(counts.pmf(j) * ((1 - rate) * density(4 * j / (j + 1) ** 2)
                             + (rate * density(0.0) if j else 0.0)) for j in range(n))
    zp = (1 - counts.pmf(0) * rate) * density(0.0)
    direct = float(np.max(np.abs(np.log(z / zp))))
    assert e("others-at-bound", n, rate, 1.0, statistic="variance") == pytest.approx(
        direct, abs=2e-3)
    # below the claim at every rate (the domain caps it), above the amplified claim
    # ln(1 + (1 − π)(e − 1)) at π = 0.7 and 0.9
    var = {p: e("others-at-bound", 20, p, 1.0, statistic="variance")
           for p in library_audit.RATES}
    assert max(v for p, v in var.items() if p > 0) < 1
    assert all(var[p] > math.log(1 + (1 - p) * (math.e - 1)) for p in (0.7, 0.9))
    with pytest.raises(ValueError, match="statistic"):
        e("others-at-bound", 20, 0.3, 1.0, statistic="median")
    with pytest.raises(ValueError, match="unknown pair kind"):
        e("nonsense", 20, 0.3, 1.0)


@pytest.mark.parametrize("calls", [1_000, 1_500, 10**4, 10**5])
def test_budget_ceiling_is_the_all_or_nothing_clopper_pearson_bound(calls):
    # independently: statsmodels' two-sided Clopper-Pearson interval at alpha has alpha/2 in
    # each tail, the one-sided bounds at alpha/2 that every region bound uses
    from statsmodels.stats.proportion import proportion_confint

    lo = proportion_confint(calls, calls, alpha=0.05, method="beta")[0]
    hi = proportion_confint(0, calls, alpha=0.05, method="beta")[1]
    c = library_audit.budget_ceiling(calls)
    assert c == pytest.approx(math.log(lo / hi), rel=1e-12)
    # the former alpha-per-side formula overstated it by ln(ln 40 / ln 20) = 0.208 here
    q = 0.05 ** (1 / calls)
    assert math.log(q / (1 - q)) - c == pytest.approx(math.log(math.log(40) / math.log(20)),
                                                      abs=1e-3)


def test_committed_results_flag_exactly_the_libraries_the_sources_predict():
    doc = json.loads((ROOT / "results" / "library_audit.json").read_text())
    assert doc["size"] == "default"
    by = {(r["target"], r["rate"]): r for r in doc["rows"]}
    for target in ("diffprivlib:nansum", "opendp:sum", "smartnoise-sql:sum"):
        assert not any(by[target, p]["claim_refuted"] for p in library_audit.RATES)
    for target in NAN_PROPAGATING:
        assert by[target, 0.0]["claim_refuted"] and by[target, 0.1]["claim_refuted"]
    assert by["diffprivlib:nanmean", 0.9]["claim_refuted"]
    assert not by["diffprivlib:nanmean", 0.0]["claim_refuted"]
    # every committed bound lies below the exact ε of its pair (under the documented semantics)
    assert all(num(r["eps_lower"]) <= num(r["eps_exact"]) for r in doc["rows"])
    lines = _table(doc)
    assert lines[0].startswith("| audit | calls per side | p* | ε_lower | ε_point (plug-in, "
                               "not a bound) | claimed ε")
    # header, rule, one row per audit, then the note on the plug-in column
    assert len(lines) == 2 + len(doc["rows"]) + 2
    assert lines[-2] == "" and lines[-1].startswith("ε_point is the plug-in point estimate")


def test_committed_findings_are_those_of_the_committed_rows():
    doc = json.loads((ROOT / "results" / "library_audit.json").read_text())
    assert library_audit.findings(doc["rows"]) == doc["findings"]


@pytest.mark.parametrize(("calls", "confidence", "name"), [
    (0, 0.95, "calls"), (2.5, 0.95, "calls"), (100, 1.5, "confidence"), (100, 0.0, "confidence"),
])
def test_budget_ceiling_refuses_what_is_not_a_budget(calls, confidence, name):
    with pytest.raises(ValueError, match=name):
        library_audit.budget_ceiling(calls, confidence)
