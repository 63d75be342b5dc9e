"""na_position: a smoke run through the suite (schema, ε_lower ≤ ε_pair, midpoint < endpoint),
the closed forms and the exact pairs against an independent numerical integration, and the
committed results."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

from experiments import na_position as nap
from experiments.report import check_document, write_report
from experiments.suite import run_suite

ROOT = Path(__file__).resolve().parents[2]
KEYS = [r.key for r in nap.READINGS]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The experiment at smoke size (2,000 calls per side, a few seconds), through the suite."""
    out = tmp_path_factory.mktemp("na_position")
    (returned,) = run_suite(out, size="smoke", only=["na_position"], progress=False,
                            log=lambda *_: None)
    doc = json.loads((out / "na_position.json").read_text())
    assert returned["experiment"] == doc["experiment"] == "na_position"
    return out, doc


def _rows(doc, key):
    return sorted((r for r in doc["rows"] if r["reading"] == key), key=lambda r: r["rate"])


# --- independent numerics: hand-written Laplace densities, quadrature, brute-force masks ----

def _density(mix, y, b):
    """Σ w e^{−|y − c|/b} / (2b), written out (no audit code)."""
    y = np.asarray(y, dtype=float)[..., None]
    w = np.array([m[0] for m in mix])
    c = np.array([m[1] for m in mix])
    return (w * np.exp(-np.abs(y - c) / b)).sum(axis=-1) / (2 * b)


def _sup_log_ratio(P, Q, b):
    """sup |ln p/q| on a grid holding every centre, and beyond all of them (where the ratio of
    two Laplace mixtures of one scale is constant, so the tails are exact)."""
    centres = [m[1] for m in (*P, *Q)]
    lo, hi = min(centres), max(centres)
    y = np.unique(np.concatenate([np.linspace(lo - 1, hi + 1, 20_001), centres]))
    return float(np.max(np.abs(np.log(_density(P, y, b)) - np.log(_density(Q, y, b)))))


def _hockey(P, Q, b, t):
    """D_{e^t}(P‖Q) = ∫ max(p − e^t q, 0) by quadrature, split at every centre."""
    cuts = sorted({m[1] for m in (*P, *Q)})
    pieces = [(-np.inf, cuts[0]), *zip(cuts[:-1], cuts[1:], strict=True), (cuts[-1], np.inf)]

    def f(y):
        return max(float(_density(P, y, b)) - math.exp(t) * float(_density(Q, y, b)), 0.0)

    return sum(integrate.quad(f, a, c, epsabs=1e-13, epsrel=1e-11, limit=200)[0]
               for a, c in pieces if a < c)


def _zero_fill_laws(lo, hi, a, c, rate, others=((1.0, 0.0),)):
    """The sum's laws for record 1 at a vs c (NA read as 0), other records shifting the sum
    by S with the discrete law ``others`` [(weight, shift)]."""
    q = 1.0 - rate
    P = [(ws * w, s + v) for ws, s in others for w, v in ((rate, 0.0), (q, a))]
    Q = [(ws * w, s + v) for ws, s in others for w, v in ((rate, 0.0), (q, c))]
    return P, Q


def _mean_laws_brute_force(n, rate, first, first_p, other):
    """The dropped mean's laws by enumerating all 2^n masks of all n records."""
    P, Q = [], []
    for mask in itertools.product((False, True), repeat=n):  # True: missing
        w = math.prod(rate if m else 1.0 - rate for m in mask)
        for out, z1 in ((P, first), (Q, first_p)):
            vals = [v for v, m in zip([z1] + [other] * (n - 1), mask, strict=True) if not m]
            out.append((w, sum(vals) / len(vals) if vals else 0.0))
    return [m for m in P if m[0] > 0], [m for m in Q if m[0] > 0]


# --- the closed forms ------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["midpoint", "endpoint"])
@pytest.mark.parametrize("rate", [0.0, 0.1, 0.5, 0.9])
def test_zero_fill_closed_form_against_quadrature(key, rate):
    rd = nap.reading(key)
    b = nap.noise_scale(rd, nap.N_RECORDS, 1.0)
    assert b == pytest.approx(2.0)  # the substitution sensitivity 2B over ε = 1
    eps = nap.zero_fill_epsilon(-rd.lo / rd.width, rate, 1.0)
    P, Q = _zero_fill_laws(rd.lo, rd.hi, rd.lo, rd.hi, rate)
    assert _sup_log_ratio(P, Q, b) == pytest.approx(eps, rel=1e-9, abs=1e-12)
    # ε is the smallest t with both hockey-stick divergences zero: zero at ε, positive below
    assert max(_hockey(P, Q, b, eps), _hockey(Q, P, b, eps)) < 1e-9
    assert max(_hockey(P, Q, b, 0.97 * eps), _hockey(Q, P, b, 0.97 * eps)) > 1e-6
    # and the exact integrator on the experiment's own mixtures agrees
    assert nap.exact_epsilon(rd, nap.N_RECORDS, rate, 1.0)[0] == pytest.approx(eps, abs=1e-10)


def test_named_closed_forms():
    e, q = 1.0, 0.7
    mid = math.log((0.3 + q * math.exp(e / 2)) / (0.3 + q * math.exp(-e / 2)))
    assert nap.zero_fill_epsilon(0.5, 0.3, e) == pytest.approx(mid, rel=1e-14)
    assert nap.zero_fill_epsilon(0.0, 0.3, e) == pytest.approx(math.log(0.3 + q * math.e),
                                                               rel=1e-14)
    assert nap.zero_fill_epsilon(1.0, 0.3, e) == nap.zero_fill_epsilon(0.0, 0.3, e)
    for t in (0.0, 0.5):
        assert nap.zero_fill_epsilon(t, 0.0, e) == pytest.approx(e, rel=1e-14)  # p* = 1
        assert nap.zero_fill_epsilon(t, 1.0, e) == 0.0
    # strictly more private the closer 0 is to the middle of the range, at every 0 < π < 1
    for rate in (0.1, 0.5, 0.9):
        values = [nap.zero_fill_epsilon(t, rate, e) for t in (0.5, 0.4, 0.25, 0.1, 0.0)]
        assert all(a < b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("t", [0.0, 0.25, 0.5])
def test_zero_fill_closed_form_is_the_sup_over_every_pair(t):
    # range of width 2 with 0 at the fraction t; record 1 anywhere, the others any shift
    lo, hi, rate, b = -2.0 * t, 2.0 * (1 - t), 0.4, 2.0
    grid = np.linspace(lo, hi, 9)
    worst = max(_sup_log_ratio(*_zero_fill_laws(lo, hi, a, c, rate), b)
                for a in grid for c in grid if a != c)
    eps = nap.zero_fill_epsilon(t, rate, 1.0)
    assert worst == pytest.approx(eps, rel=1e-9)
    rng = np.random.default_rng(3)
    for _ in range(5):  # random other records: a common shift can only reduce ε
        shifts = rng.uniform(-3, 3, size=4)
        others = list(zip(rng.dirichlet(np.ones(4)), shifts, strict=True))
        assert _sup_log_ratio(*_zero_fill_laws(lo, hi, lo, hi, rate, others), b) <= eps + 1e-12


# --- the dropped mean ------------------------------------------------------------------------

@pytest.mark.parametrize("rate", [0.0, 0.3, 0.6])
def test_dropped_mean_pair_against_brute_force_masks_and_quadrature(rate):
    rd, n = nap.reading("dropped"), 6
    b = nap.noise_scale(rd, n, 1.0)
    assert b == pytest.approx(2.0 / n)
    P, Q = _mean_laws_brute_force(n, rate, -1.0, 1.0, 1.0)
    eps, err = nap.exact_epsilon(rd, n, rate, 1.0)
    assert err < 1e-9
    assert _sup_log_ratio(P, Q, b) == pytest.approx(eps, rel=1e-8)
    assert max(_hockey(P, Q, b, eps), _hockey(Q, P, b, eps)) < 1e-9
    assert max(_hockey(P, Q, b, 0.97 * eps), _hockey(Q, P, b, 0.97 * eps)) > 1e-7
    if rate > 0:
        assert eps > nap.zero_fill_epsilon(0.0, rate, 1.0)  # above Theorem 4.5 (= endpoint)


def test_dropped_pair_is_the_worst_of_common_other_values():
    rd = nap.reading("dropped")
    for rate in (0.3, 0.7):
        at = {c: nap.exact_epsilon(rd, nap.N_RECORDS, rate, 1.0, c)[0]
              for c in np.linspace(-1, 1, 9)}
        assert max(at.values()) == pytest.approx(at[1.0], rel=1e-12)
        assert at[1.0] > 1.15 * at[0.0]  # the others at 0 hide much of it


def test_the_black_box_releases_the_stated_statistic_plus_laplace_noise():
    nan = math.nan
    data = np.array([[[1.0], [nan], [0.5], [3.0]],  # 3.0 is clipped to hi
                     [[nan], [nan], [nan], [nan]]])
    expected = {"midpoint": [2.5, 0.0], "endpoint": [3.5, 0.0], "dropped": [2.5 / 3, 0.0]}
    for rd in nap.READINGS:
        impl = nap.implementation(rd, n=4, epsilon=2.0)
        out = impl.batch(data, np.random.default_rng(7))
        noise = np.random.default_rng(7).laplace(0.0, nap.noise_scale(rd, 4, 2.0), size=2)
        assert np.allclose(out - noise, expected[rd.key], atol=1e-12)
        assert impl.claim.epsilon == 2.0 and impl.claim.delta == 0.0
        single = impl(data[0], np.random.default_rng(7))
        assert single == pytest.approx(out[0])


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="reading must be one of"):
        nap.reading("nowhere")
    with pytest.raises(ValueError, match="position must be in"):
        nap.zero_fill_epsilon(1.5, 0.1, 1.0)
    with pytest.raises(ValueError, match="rate must be in"):
        nap.exact_epsilon(nap.READINGS[0], 5, 1.2, 1.0)
    with pytest.raises(ValueError, match="epsilon must be in"):
        nap.noise_scale(nap.READINGS[0], 5, 0.0)
    with pytest.raises(ValueError, match="n must be an integer"):
        nap.pair(nap.READINGS[0], 0)
    with pytest.raises(ValueError, match="lo < hi"):
        nap.Reading("x", "x", 1.0, 1.0, False, 1.0)
    with pytest.raises(ValueError, match="must lie in"):
        nap.Reading("x", "x", 1.0, 2.0, False, 1.0)  # a sum reading NA as 0 outside the range
    with pytest.raises(ValueError, match="others must be in"):
        nap.pair(nap.READINGS[1], 5, others=-1.0)


# --- the smoke run ---------------------------------------------------------------------------

def test_smoke_run_schema(smoke):
    _, doc = smoke
    check_document("na_position", doc)
    assert doc["size"] == "smoke" and doc["seed"] == 9 and doc["epsilon"] == 1.0
    assert [(r["reading"], r["rate"]) for r in doc["rows"]] == [
        (k, p) for k in KEYS for p in nap.RATES]
    for r in doc["rows"]:
        assert r["trials"] == nap.TRIALS["smoke"] and r["delta"] == 0.0
        assert r["eps_claim"] == 1.0
        assert r["p_star"] == pytest.approx(1.0 - r["rate"])
        thm = math.log1p((1 - r["rate"]) * math.expm1(1.0))
        assert r["thm_4_5"] == pytest.approx(thm, rel=1e-12)
        assert r["eps_theory"] == pytest.approx(thm, rel=1e-12)  # Theorem 3.2 = 4.5 at d = 1
        assert r["thm_4_5_applies"] == (r["reading"] != "dropped")
        assert {"k_p", "n_p", "k_q", "n_q", "direction"} <= set(r["witness"])
        assert r["eps_exact"] == r["eps_pair"]
        assert r["claim_refuted"] == (r["eps_lower"] > r["eps_claim"])
        assert r["amplified_refuted"] == (r["eps_lower"] > r["eps_theory"])
        if r["reading"] == "dropped":
            assert r["eps_closed_form"] is None
            assert r["eps_pair"] == pytest.approx(r["eps_pair_common_others_max"], rel=1e-12)
        else:
            assert r["eps_pair"] == pytest.approx(r["eps_closed_form"], abs=1e-10)


def test_smoke_lower_bounds_lie_below_the_exact_pair(smoke):
    _, doc = smoke
    for r in doc["rows"]:
        assert r["eps_lower"] <= r["eps_pair"] + r["eps_pair_error"], r["name"]


def test_smoke_midpoint_is_more_private_than_endpoint(smoke):
    _, doc = smoke
    mid, end, drop = (_rows(doc, k) for k in KEYS)
    for m, e, d in zip(mid, end, drop, strict=True):
        if m["rate"] == 0.0:
            assert m["eps_pair"] == pytest.approx(e["eps_pair"]) == pytest.approx(1.0)
            assert d["eps_pair"] == pytest.approx(1.0, abs=1e-9)
        else:
            assert m["eps_pair"] < e["eps_pair"] - 0.03
            assert e["eps_pair"] == pytest.approx(e["thm_4_5"], rel=1e-12)  # tight
            assert d["eps_pair"] > e["thm_4_5"]  # the dropped mean breaks the theorem


def test_report_of_the_smoke_run(smoke):
    out, doc = smoke
    text = write_report(out).read_text()
    assert f"## {nap.TITLE}" in text
    assert "| π | p* | Theorem 4.5 | midpoint ε_pair |" in text
    assert "every ε_lower lies below its ε_pair" in text
    assert (out / "figures" / "na_position.png").stat().st_size > 20_000


# --- the committed results -------------------------------------------------------------------

def test_committed_results_hold_every_bound_and_the_ordering():
    doc = json.loads((ROOT / "results" / "na_position.json").read_text())
    check_document("na_position", doc)
    assert doc["size"] == "default" and doc["seed"] == 9
    assert len(doc["rows"]) == len(nap.READINGS) * len(nap.RATES)
    for r in doc["rows"]:
        assert r["trials"] == nap.TRIALS["default"]
        assert r["eps_lower"] <= r["eps_pair"] + r["eps_pair_error"], r["name"]
        rd = nap.reading(r["reading"])
        assert r["eps_pair"] == pytest.approx(
            nap.exact_epsilon(rd, nap.N_RECORDS, r["rate"], 1.0)[0], rel=1e-12)
    mid, end, _ = (_rows(doc, k) for k in KEYS)
    assert all(m["eps_pair"] < e["eps_pair"] for m, e in zip(mid, end, strict=True)
               if m["rate"] > 0)
    # the dropped mean refutes its claim wherever entries go missing; the sums never do
    assert [r["claim_refuted"] for r in _rows(doc, "dropped")] == [r > 0 for r in nap.RATES]
    assert not any(r["claim_refuted"] for r in (*mid, *end))
    assert nap.findings(doc["rows"]) == doc["findings"]
