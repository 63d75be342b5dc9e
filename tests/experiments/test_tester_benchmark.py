"""tester_benchmark: each mechanism's definition against an independent check (noise scales,
output alphabets, exact ε from hand-written densities), the smoke run through the suite, and
the committed results (ε_lower ≤ the true ε up to the tolerance derived below; the broken
mechanisms refuted)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from experiments import tester_benchmark as tb
from experiments.report import check_document
from experiments.suite import run_suite

ROOT = Path(__file__).resolve().parents[2]
M = 200_000


def _draw(key, x, m=M, seed=0):
    b = tb.benchmark(key)
    return tb.release(b, np.tile(np.asarray(x, dtype=float), (m, 1)),
                      np.random.default_rng(seed))


def _laplace_pdf(y, b):
    return np.exp(-np.abs(y) / b) / (2 * b)


def _laplace_cdf(y, b):
    return np.where(y < 0, 0.5 * np.exp(np.minimum(y, 0) / b),
                    1 - 0.5 * np.exp(-np.maximum(y, 0) / b))


# --- definitions -----------------------------------------------------------------------------

@pytest.mark.parametrize("key, scale", [("LaplaceMechanism", 10.0), ("NoisyHist1", 10.0),
                                        ("NoisyHist2", 0.1)])
def test_additive_releases_have_the_stated_laplace_scale(key, scale):
    d = tb.benchmark(key).d
    out = _draw(key, np.arange(d, dtype=float)).reshape(M, -1) - np.arange(d)
    # the mean absolute deviation of Lap(b) is b; its standard error b/sqrt(M)
    assert np.abs(out).mean() == pytest.approx(scale, rel=6 / np.sqrt(M))
    assert stats.kstest(out[:20_000, 0], stats.laplace(scale=scale).cdf).pvalue > 1e-3


def test_noisy_hist2_exact_epsilon_from_its_densities():
    # one entry moves by 1 under Lap(ε) noise: sup |ln f(y)/f(y − 1)| = 1/ε = 10, attained
    # outside [0, 1]; this is the value the experiment records
    y = np.linspace(-3, 4, 70_001)
    b = tb.EPSILON
    ratio = np.abs(np.log(_laplace_pdf(y, b)) - np.log(_laplace_pdf(y - 1, b)))
    assert ratio.max() == pytest.approx(1 / b, rel=1e-12)
    assert tb.benchmark("NoisyHist2").eps_true == pytest.approx(ratio.max())
    assert tb.benchmark("NoisyHist1").eps_true == pytest.approx(tb.EPSILON)


def test_report_noisy_max3_exact_epsilon_is_d_eps_over_2():
    """The density of the max of 5 Lap(20) entries against the same shifted by 1: its log
    ratio never exceeds dε/2 = 0.25 and reaches it in the left tail."""
    b, d = 2 / tb.EPSILON, 5
    y = np.linspace(-800, 300, 110_001)

    def dens(t):
        return d * _laplace_pdf(t, b) * _laplace_cdf(t, b) ** (d - 1)

    with np.errstate(divide="ignore"):
        lr = np.log(dens(y)) - np.log(dens(y - 1))
    lr = lr[np.isfinite(lr)]
    assert lr.max() <= 0.25 + 1e-9 and lr.max() > 0.2499
    assert tb.benchmark("ReportNoisyMax3").eps_true == 0.25


def test_report_noisy_max_alphabets():
    x = [0.0, 1.0, 0.0, 0.5, 0.0]
    for key in ("ReportNoisyMax1", "ReportNoisyMax2"):
        out = _draw(key, x, 20_000)
        assert set(np.unique(out)) == {0.0, 1.0, 2.0, 3.0, 4.0}
        assert np.bincount(out.astype(int)).argmax() == 1  # the largest entry wins most
    assert _draw("ReportNoisyMax2", [0, 500, 0, 0, 0], 2000).tolist() == [1.0] * 2000
    big = _draw("ReportNoisyMax4", x, 20_000)
    assert big.min() >= 1.0  # exponential noise: never below the largest entry (ε = ∞)
    assert (_draw("ReportNoisyMax3", x, 20_000) < 1.0).mean() > 0.01  # Laplace: it can


def test_svt_with_abort_alphabet_and_the_first_answer():
    for key in ("SVT1", "SVT4"):
        out = _draw(key, np.linspace(-1, 1, 10), 50_000)
        assert set(np.unique(out)) <= {-1.0, 0.0, 1.0}
        ones = (out == 1).sum(axis=1)
        assert ones.max() == 1  # c = 1: at most one ⊤
        first = np.where(ones == 1, (out == 1).argmax(axis=1), 10)
        idx = np.arange(10)
        assert ((out == -1) == (idx > first[:, None])).all()  # aborted after the ⊤ only
        assert ((out == 0) == (idx < first[:, None])).all()


@pytest.mark.parametrize("key, t, rho, nu", [("SVT1", 0.5, 20.0, 40.0),
                                             ("SVT4", 1.0, 40.0, 1 / 0.075),
                                             ("SVT6", 1.0, 20.0, 20.0)])
def test_svt_first_answer_probability_has_the_stated_noise_scales(key, t, rho, nu):
    # P(x₁ + ν ≥ ρ + T) at x = 0, by quadrature over ρ (hand-written densities)
    p = integrate.quad(lambda r: _laplace_pdf(r, rho) * (1 - _laplace_cdf(r + t, nu)),
                       -np.inf, np.inf)[0]
    got = (_draw(key, np.zeros(10))[:, 0] == 1).mean()
    assert got == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / M))


def test_svt5_and_svt6_release_bits_and_svt5_cannot_split_equal_queries():
    out5 = _draw("SVT5", np.zeros(10))
    assert set(np.unique(out5)) == {0.0, 1.0}
    assert (out5 == out5[:, :1]).all()  # no query noise: equal queries, equal answers
    p = 0.5 * np.exp(-1 / 20)  # P(ρ ≤ −1), ρ ~ Lap(20)
    assert out5[:, 0].mean() == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / M))
    split = _draw("SVT5", [1.0] + [-1.0] * 9)  # "one above rest below": splits them
    assert ((split[:, 0] == 1) & (split[:, 1] == 0)).mean() > 0.04
    out6 = _draw("SVT6", np.zeros(10), 20_000)
    assert set(np.unique(out6)) == {0.0, 1.0} and (out6.sum(axis=1) > 1).any()  # no abort


def test_svt3_releases_values_and_sentinels():
    out = _draw("SVT3", np.zeros(10), 50_000)
    value = (out != -1000.0) & (out != -2000.0)
    assert value.sum(axis=1).max() == 1
    first = np.where(value.any(axis=1), value.argmax(axis=1), 10)
    idx = np.arange(10)
    assert ((out == -2000.0) == (idx > first[:, None])).all()
    assert (out[value] > -1000.0).all()


def test_implementation_is_the_release_on_one_record_datasets():
    b = tb.benchmark("ReportNoisyMax3")
    impl = tb.implementation(b)
    data = np.zeros((7, 1, 5))
    data[:, 0, 2] = 3.0
    got = impl.batch(data, np.random.default_rng(4))
    want = tb.release(b, data[:, 0, :] + 1.0, np.random.default_rng(4))  # the testers' base
    assert np.array_equal(got, want) and impl.claim.epsilon == 0.1 and impl.claim.delta == 0
    assert [p["z_prime"] for p in tb.one_entry_pairs(5)] == [[[1.0, 0, 0, 0, 0]],
                                                              [[-1.0, 0, 0, 0, 0]]]


def test_bad_inputs_name_the_parameter():
    b = tb.benchmark("SVT1")
    with pytest.raises(ValueError, match="benchmark must be one of"):
        tb.benchmark("SVT2")
    with pytest.raises(ValueError, match=r"x must have shape \(m, 10\)"):
        tb.release(b, np.zeros((3, 5)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="epsilon must be in"):
        tb.release(b, np.zeros((3, 10)), np.random.default_rng(0), epsilon=0.0)
    with pytest.raises(ValueError, match="bench must be a Benchmark"):
        tb.release("SVT1", np.zeros((3, 10)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="kind must be one of"):
        tb.Benchmark("x", 1, True, False, None, tb.EXACT, (0.1, 0.1), (0.1, 0.1))


# --- the smoke run ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("tester_benchmark")
    run_suite(out, size="smoke", only=["tester_benchmark"], progress=False,
              log=lambda *_: None)
    return json.loads((out / "tester_benchmark.json").read_text())


def test_smoke_run_schema(smoke):
    check_document("tester_benchmark", smoke)
    assert smoke["size"] == "smoke" and smoke["confidence"] == 0.9
    assert [r["mechanism"] for r in smoke["rows"]] == [b.key for b in tb.BENCHMARKS]
    for r, b in zip(smoke["rows"], tb.BENCHMARKS, strict=True):
        assert r["trials"] == tb.TRIALS["smoke"] and r["eps_claim"] == 0.1
        s = r["search"]
        assert len(s["candidates"]) == (2 if b.one_entry else 8 if b.d > 1 else 2)
        assert s["calls"] == tb.SEARCH["smoke"]
        assert r["pattern"] in (*tb_patterns(), "one above", "one below")
        assert r["dpsniper"] == max(b.dpsniper) and r["statdp"] == max(b.statdp)
    assert tb.findings(smoke["rows"]) == smoke["findings"]


def tb_patterns():
    from audit.model.pair_families import TESTER_PATTERNS

    return TESTER_PATTERNS


# --- the committed results -------------------------------------------------------------------

def _committed():
    doc = json.loads((ROOT / "results" / "tester_benchmark.json").read_text())
    check_document("tester_benchmark", doc)
    return doc


def test_committed_lower_bounds_respect_the_true_epsilon():
    """Each audit's ε_lower exceeds a true ε (or a bound above it) with probability ≤ 0.1
    (confidence 0.90; the audits use independent streams), so the number of exceedances is
    stochastically below Binomial(K, 0.1), K the mechanisms with a finite true ε: allowed up
    to its 1 − 10⁻³ quantile (5 of K = 10)."""
    doc = _committed()
    assert doc["size"] == "default" and doc["trials"] == tb.TRIALS["default"]
    finite = [r for r in doc["rows"] if r["eps_true"] is not None]
    over = [r["mechanism"] for r in finite if r["eps_lower"] > r["eps_true"]]
    assert len(finite) == 10
    assert len(over) <= stats.binom.ppf(1 - 1e-3, len(finite), 1 - doc["confidence"]), over


def test_committed_results_refute_the_broken_mechanisms():
    rows = {r["mechanism"]: r for r in _committed()["rows"]}
    assert rows["NoisyHist2"]["eps_lower"] > 50 * tb.EPSILON  # true ε = 10
    assert rows["SVT5"]["eps_lower"] > 20 * tb.EPSILON  # true ε = ∞
    # found by the search's pattern (ties broken on the plug-in estimate): refuted, not by far
    # (ReportNoisyMax3, true 0.25, is not at this budget with seed 11: every candidate of its
    # search scores 0 and the tie-break picks "one above"; the full run refutes it, below)
    for key in ("ReportNoisyMax4", "SVT6"):  # true ∞, ≤ 0.5
        assert rows[key]["eps_lower"] > tb.EPSILON, key
    for key in ("LaplaceMechanism", "NoisyHist1", "ReportNoisyMax1", "ReportNoisyMax2",
                "SVT1"):  # the private ones (ε ≤ 0.1): not refuted beyond chance
        assert rows[key]["eps_lower"] <= 1.3 * tb.EPSILON
    assert tb.findings(list(rows.values())) == _committed()["findings"]


# --- the committed full-size run (DP-Sniper's budget) ---------------------------------------

def _expected_cp(p_num: float, p_den: float, n: float, alpha: float = 0.1) -> float:
    """ln(CP lower bound of p_num / CP upper bound of p_den) at the expected counts of n calls
    per side, each bound at alpha/2 (the audit's and DP-Sniper's split)."""
    lo = stats.beta.ppf(alpha / 2, p_num * n, n - p_num * n + 1)
    hi = stats.beta.ppf(1 - alpha / 2, p_den * n + 1, n - p_den * n)
    return float(np.log(lo / hi))


def _expected_joint(p_num: float, p_den: float, n: float, alpha: float = 0.1) -> float:
    """ln(θ/(1 − θ)), θ the one-sided Clopper–Pearson lower bound at alpha on the share
    P/(P + Q) at the expected counts of n calls per side: the joint bound the black-box
    audit uses at δ = 0 (written here from scipy's beta law, not the project's code)."""
    theta = stats.beta.ppf(alpha, p_num * n, p_den * n + 1)
    return float(np.log(theta / (1 - theta)))


def test_expected_joint_bounds_beat_dpsniper_where_two_intervals_cannot():
    """The joint bound at DP-Sniper's budget, at the expected counts, by quadrature: above
    DP-Sniper's published ε_lcb on the 8 mechanisms whose probabilities are computable here,
    ReportNoisyMax3 included, where the two intervals' 0.2486 is below DP-Sniper's 0.24881
    (issue: the joint bound is what makes 12 of 12 reachable in expectation)."""
    n, b = 2e8, 20.0
    ts = np.linspace(-60.0, 20.0, 1601)
    rnm3 = max(_expected_joint(_laplace_cdf(t + 1.0, b) ** 5, _laplace_cdf(t, b) ** 5, n)
               for t in ts)
    assert rnm3 == pytest.approx(0.24923, abs=2e-5)
    got = {"ReportNoisyMax3": rnm3}
    # Laplace and NoisyHist1 (x against x + 1, Lap(10)), NoisyHist2 (Lap(0.1)): the tail
    # events {y ≥ t}
    sf = lambda t, scale: 1.0 - _laplace_cdf(t, scale)  # noqa: E731
    for key, scale in (("LaplaceMechanism", 10.0), ("NoisyHist1", 10.0), ("NoisyHist2", 0.1)):
        grid = np.linspace(-10 * scale, 20 * scale, 3001)
        got[key] = max(_expected_joint(sf(t - 1.0, scale), sf(t, scale), n) for t in grid
                       if sf(t, scale) * n > 10)
    # ReportNoisyMax1/2 on "one below rest above", event {argmax = 0}: Laplace or
    # exponential noise of scale 20
    exp_pdf = lambda t: np.where(t >= 0, np.exp(-np.maximum(t, 0) / b) / b, 0.0)  # noqa: E731
    exp_cdf = lambda t: np.where(t >= 0, 1 - np.exp(-np.maximum(t, 0) / b), 0.0)  # noqa: E731
    for key, pdf, cdf in (("ReportNoisyMax1", lambda t: _laplace_pdf(t, b),
                           lambda t: _laplace_cdf(t, b)), ("ReportNoisyMax2", exp_pdf, exp_cdf)):
        def p_first(x, pdf=pdf, cdf=cdf):
            f = lambda t: pdf(t - x[0]) * np.prod(cdf(t - x[1:]))  # noqa: E731
            return integrate.quad(f, -600.0, 2000.0, limit=800, points=[-1.0, 0.0, 1.0, 2.0])[0]

        got[key] = _expected_joint(p_first(np.zeros(5)),
                                   p_first(np.array([-1.0, 1.0, 1.0, 1.0, 1.0])), n)
    for key, eps1, nu, t in (("SVT1", 0.05, 40.0, 0.5), ("SVT4", 0.025, 1 / 0.075, 1.0)):
        base, half = np.ones(10), np.r_[np.ones(5), -np.ones(5)]
        p = _svt_first_above(base, eps1, nu, t)
        q = _svt_first_above(base + half, eps1, nu, t)
        got[key] = _expected_joint(p[5], q[5], n)
        assert got[key] > _expected_cp(p[5], q[5], n)  # the joint bound is the stronger
    assert len(got) == 8
    for key, value in got.items():
        published = max(tb.benchmark(key).dpsniper)
        assert published < value <= tb.benchmark(key).eps_true + 1e-9, (key, value, published)


def test_expected_bounds_of_report_noisy_max_at_dpsnipers_budget():
    """The expected Clopper–Pearson bound at 2·10⁸ calls per side (α/2 per side at 0.90),
    probabilities by quadrature. ReportNoisyMax3 (x = 0 against x + 1, max of 5 Laplace(20)):
    the best tail event {max ≤ t} over a grid of t gives 0.2486, below DP-Sniper's published
    0.24881, so no audit of this kind beats that value except by chance. ReportNoisyMax1
    (argmax), event {argmax = 0}: on "one above rest below" (x = 0 against (1, −1, …, −1),
    exact ε 0.0927) 0.0922, below DP-Sniper's 0.0925; on "one below rest above" (x = 0 against
    (−1, 1, …, 1), exact ε 0.0946) 0.0941, above it: the search has to find the second."""
    n, b = 2e8, 20.0
    ts = np.linspace(-60.0, 20.0, 1601)
    rnm3 = max(_expected_cp(_laplace_cdf(t + 1.0, b) ** 5, _laplace_cdf(t, b) ** 5, n)
               for t in ts)
    assert 0.2484 < rnm3 < max(tb.benchmark("ReportNoisyMax3").dpsniper)

    def p_first(x):
        f = lambda t: _laplace_pdf(t - x[0], b) * np.prod(_laplace_cdf(t - x[1:], b))  # noqa: E731
        return integrate.quad(f, -600.0, 600.0, limit=400, points=[-2.0, 0.0, 2.0])[0]

    base = p_first(np.zeros(5))
    above = p_first(np.array([1.0, -1.0, -1.0, -1.0, -1.0]))
    below = p_first(np.array([-1.0, 1.0, 1.0, 1.0, 1.0]))
    assert base == pytest.approx(0.2, abs=1e-6)
    assert np.log(above / base) == pytest.approx(0.0927, abs=1e-4)
    assert np.log(base / below) == pytest.approx(0.0946, abs=1e-4)
    published = max(tb.benchmark("ReportNoisyMax1").dpsniper)
    assert 0.0920 < _expected_cp(above, base, n) < published
    assert published < 0.0940 < _expected_cp(base, below, n) < 0.0946


def _svt_first_above(x, eps1: float, nu: float, t: float) -> np.ndarray:
    """SVT with abort after the first ⊤ (c = 1): P[the first query above is i], i < d, and
    P[none above] last, by quadrature over the threshold noise ρ ~ Lap(1/eps1); query
    noise Lap(nu), threshold t."""
    b = 1.0 / eps1
    r = np.linspace(-60 * b, 60 * b, 200_001)
    f = _laplace_pdf(r, b) * (r[1] - r[0])
    out, below = [], np.ones_like(r)
    for xi in x:
        above = 1.0 - _laplace_cdf(r + t - xi, nu)
        out.append(np.sum(f * below * above))
        below = below * (1.0 - above)
    return np.array(out + [np.sum(f * below)])


@pytest.mark.parametrize("key, eps1, nu, t", [("SVT1", 0.05, 40.0, 0.5),
                                              ("SVT4", 0.025, 1 / 0.075, 1.0)])
def test_expected_bounds_of_svt_with_abort_at_dpsnipers_budget(key, eps1, nu, t):
    """SVT1 and SVT4 release the index of the first query above the noisy threshold. On
    "half above half below" (x = 0 against 1 on the first five, −1 on the last five, about
    the base 1) the atom {first above = 5} has the expected Clopper–Pearson bound (2·10⁸
    calls per side, 0.90) 0.0870 (SVT1) and 0.1706 (SVT4), above DP-Sniper's published
    0.0858 and 0.1696; on the X shape 0.0863 and 0.1699, above them by less."""
    n, base = 2e8, np.ones(10)
    half = np.r_[np.ones(5), -np.ones(5)]
    p, q = _svt_first_above(base, eps1, nu, t), _svt_first_above(base + half, eps1, nu, t)
    assert p.sum() == pytest.approx(1.0, abs=1e-6) and q.sum() == pytest.approx(1.0, abs=1e-6)
    x, x_prime = np.r_[np.zeros(5), -np.ones(5)], np.r_[-np.ones(5), np.zeros(5)]
    xp, xq = (_svt_first_above(base + v, eps1, nu, t) for v in (x, x_prime))
    published = max(tb.benchmark(key).dpsniper)
    expected = {"SVT1": (0.0870, 0.0863), "SVT4": (0.1706, 0.1699)}[key]
    assert _expected_cp(p[5], q[5], n) == pytest.approx(expected[0], abs=1e-4)
    assert _expected_cp(xq[5], xp[5], n) == pytest.approx(expected[1], abs=1e-4)
    assert published < min(expected)


def test_committed_full_run_at_dpsnipers_budget():
    """The committed ``--full`` run (2·10⁸ calls per side, pair search): every ε_lower below
    the true ε or its bound (exceedances allowed as in the default run's test), the broken
    mechanisms refuted, SVT6 ≥ 0.39, and at or above DP-Sniper's published ε_lcb on at least
    11 of the 12 (all but ReportNoisyMax3, out of reach in expectation: above)."""
    doc = json.loads((ROOT / "results" / "full" / "tester_benchmark.json").read_text())
    assert doc["size"] == "full" and doc["trials"] == tb.TRIALS["full"] == 200_000_000
    check_document(tb.NAME, doc)
    rows = {r["mechanism"]: r for r in doc["rows"]}
    finite = [r for r in rows.values() if r["eps_true"] is not None]
    over = [r["mechanism"] for r in finite if r["eps_lower"] > r["eps_true"]]
    assert len(over) <= stats.binom.ppf(1 - 1e-3, len(finite), 1 - doc["confidence"]), over
    assert rows["SVT6"]["eps_lower"] >= 0.39
    for key in ("NoisyHist2", "ReportNoisyMax4", "SVT5"):
        assert rows[key]["eps_lower"] > 1.0, key
    for key in ("ReportNoisyMax3", "SVT3", "SVT4"):  # true 0.25, ≤ 0.5, ≤ 0.175
        assert rows[key]["eps_lower"] > tb.EPSILON, key
    assert sum(r["eps_lower"] >= r["dpsniper"] for r in rows.values()) >= 11
    rnm1 = rows["ReportNoisyMax1"]
    assert rnm1["pattern"] == "one below rest above" and rnm1["eps_lower"] >= rnm1["dpsniper"]
    for r in rows.values():  # successive halving: the chosen pattern is a finalist
        s = r["search"]
        assert len(s["candidates"][s["chosen"]]["scores"]) == len(s["rounds"])
