"""Experiment 8: DP libraries audited as black boxes under missing data (MCAR iid).

Each target claims ε = 1 per substituted record (δ = 0, Laplace noise) on n = 20 records of
d = 1 feature in [−1, 1]; every record is masked independently with probability π, for
π ∈ {0, 0.1, 0.3, 0.5, 0.7, 0.9}. With d = 1 a record is one entry, so the adapters hand each
library exactly the ε it is asked for (no group-privacy conversion for diffprivlib), p* = 1 − π,
and the amplified claim (``eps_theory``, [RPS] Theorem 3.2) is ln(1 + (1 − π)(e − 1)). That
amplified claim is what a release that really is ε-DP on datasets with missing entries must
satisfy after the masking, so an ε_lower above it refutes the claim on incomplete data too,
even where ε_lower stays below ε.

Targets and pairs (what each library does with a NaN is documented, with source lines, in the
adapter modules ``audit.adapters.diffprivlib``, ``.opendp`` and ``.pipelinedp``):

``diffprivlib:nansum``, ``opendp:sum`` (``nan = "impute"``, constant 0)
    A NaN is read as 0 (``np.nansum``; OpenDP's ``make_impute_constant``) and the noise is
    calibrated to the substitution sensitivity hi − lo = 2, which covers a value replaced by 0
    because 0 ∈ [−1, 1]: the claims should hold at every π. Pair: the project's worst-case
    search for the ``sum`` query (z₁ = −1 against +1, the other records 0), the extreme pair
    for a sum whatever the other records are.
``diffprivlib:nanmean``
    ``np.nanmean`` averages the k observed entries but the noise scale is (hi − lo)/N with N
    the array size, NaN included (diffprivlib/tools/utils.py:290-293): a changed entry moves
    the mean by 2/k, not 2/N. Pair: explicit, z₁ = −1 against +1 with the other 19 records
    at +1. The search puts the other records at 0, right for a sum (they cancel) but not for a
    mean over a random number of observed entries: with the others at +1, z' releases +1 plus
    noise whatever the mask, while z's mean 1 − 2/k moves further off the fewer entries are
    observed. (The exact ε of this pair, from the library's law, is 1.0, 1.05, 1.21, 6.1, 12,
    16 at π = 0 … 0.9; with the others at 0 it is 1.0, 1.0, 0.99, 1.03, 2.6, 6.0.)
``diffprivlib:nanvar``
    ``np.nanvar`` is the variance of the k observed entries, with the noise calibrated to the
    array size N (sensitivity (hi − lo)²(N − 1)/N² = 0.19, utils.py:447-452), while a changed
    entry moves the variance of k values by up to 4(k − 1)/k². diffprivlib's
    ``LaplaceBoundedDomain`` keeps the release in [0, (hi − lo)²/4], which caps the excess:
    the same pair as nanmean (z₁ = −1 against +1, the others +1) has exact ε 1.0, 0.90, 0.71,
    0.51, 0.68, 0.91 at π = 0 … 0.9, below the claim but above the amplified claim from
    π = 0.7 (0.42 and 0.16 there). ``std`` and ``nanstd`` release √ of this (``_std``,
    utils.py:582-594), a bijection of [0, ∞): the same ε, so they are not audited apart.
``diffprivlib:mean``, ``pipelinedp:sum`` (``nan = "propagate"``)
    Neither handles NaN: ``np.mean`` of data with a NaN is NaN and diffprivlib's Laplace
    passes it through; PipelineDP's ``SumCombiner`` sums ``np.clip(values)``, NaN included, and
    PyDP adds noise to NaN. The release is NaN if and only if some entry is missing. With a
    complete pair under MCAR that event has the same probability on both sides (the masks have
    the same law), so the pair that shows what the libraries do is one whose differing record
    is missing on one side: explicit, z₁ = NaN against +1, the others 0 (the search's own
    candidate set holds the all-missing record, but it ranks pairs with the project's Laplace
    model, which reads NaN as 0, not with the libraries' semantics). z releases NaN always and
    z' a number with probability (1 − π)^20: the true ε is infinite at every π < 1, and the
    witness event becomes rare fast (8·10⁻⁴ at π = 0.3).

``smartnoise-sql:sum``, ``tumult:sum`` (libraries in their own environments,
:mod:`audit.adapters.isolation`)
    SQL's ``SUM`` and Tumult's sum drop a NULL (read as 0) and calibrate the noise to
    max(|lo|, |hi|) per row added or removed, at the ε/2 the adapters hand them: the claims
    should hold at every π. Pair: z₁ = −1 against +1, the others 0 (``ends``: the search's
    own pair for a sum, given, so that no search runs through the worker). SmartNoise SQL is
    audited at the default and full sizes (its environment built on first use, about 20 s;
    100 datasets per ``GROUP BY`` query, checked by ``audit.model.batch_check``); Tumult, whose
    every call is a Spark job and whose worker starts in 15–30 s, at full size only (measured
    on 2 cores, environment cached: 3,000 calls per side and rate in 109 s, ε_lower 0.84,
    0.79, 0.60, 0.39, 0.23, 0 against the exact 1, 0.90, 0.70, 0.50, 0.30, 0.10 at π = 0 …
    0.9: it keeps its claim; its batched form is now checked per audit too, 35–52 s more:
    ``audit.adapters.tumult.BATCH_CHECK``). Neither runs at smoke size, so the default tests
    build no environment.

Stratification: every target is audited by mask stratum (``[strata]``, docs/THEORY.md §8.5):
one run gives ε_lower at every π of :data:`RATES`, with the calls (pilot and main run) of six
separate audits. Each rate gets an attack score fitted on the pilot resampled to its law and a
region of its own; each side is sampled by stratum or plainly per rate as the pilot decides
(for the NaN-propagating targets z′, whose telling event "every entry observed" is one
stratum, by stratum; z, which never releases a number, plainly; the other targets' events
spread over the strata, and both their sides run plainly). At the default size, seed 8, one
run per target gives diffprivlib nanmean 0.94, 0.90, 1.12, 1.21, 2.26, 3.96 at π = 0, …, 0.9
and nansum 0.95, 0.69, 0.57, 0.29, 0.09, 0; against separate audits of the same calls over 12
seeds, see the README (``benchmarks/bench_strata_power.py``). With one score for the grid,
nanmean at π = 0.9 fell to 0.87, and with one region too to 0.06.

Mode and budgets: every audit runs in fixed mode, so ε_lower is a Clopper–Pearson bound on
the pilot-chosen region and ε_point its plug-in estimate; the sequential mode would stop
earlier where a claim falls, but its ε_lower is the largest refuted value of a grid of
fractions of the claim, so it cannot show how far above the claim a library lies. Calls per
side at default size: 10,000 for nanmean (its violation starts at about 1.1× the claim), 4,000
for nanvar (its pair's ε is 0.7–0.9 where the amplified claim fails), 2,000
(diffprivlib) and 2,500 (OpenDP) for the two sums (no violation expected), 1,500 for the two
NaN-propagating targets (the NaN event is all or nothing: at π = 0 any budget refutes the claim
and ε_lower only measures the budget, at most ln of about calls/3, ``budget_ceiling``). Pilots
are one per-rate budget per rate at default size (:func:`~experiments.library_targets.
pilot_calls`: half the stratified audit's default of six black-box pilots, each twice the
per-rate budget, ``audit.policy``; measured on 2026-12-06, the run took 157 s instead of 271 s
and moved ε_lower by −0.29 to +0.07, in both directions; every claim refuted before was
refuted again, and nanvar's amplified claim fell at π = 0.7 instead of 0.9, both true
violations, docs/measurements.md) and the stratified default at full size; a
much smaller pilot leaves finite output bins unseen, which a density-ratio score rates above 0
when one side never releases a number, and the region then takes them in (one per-rate budget
in all, a twelfth of the default, lowered nanmean's ε_lower at π = 0.9 from 4.25 to 2.00).
The attack is the policy's black-box default, ``auto``. ``full`` size is 10× each, 20× for
the NaN-propagating targets (30,000 calls, so the event of probability 8·10⁻⁴ at π = 0.3 is
seen about 24 times); ``smoke`` is 200 calls per side and rate with a 600-call
pilot.
The libraries' calls are this experiment's cost (4,000–8,000 calls a second per process), so
its audits run their chunks over max(``jobs``, every usable CPU) loky processes: the chunks'
own seeds make the results the same for any number of workers (the default run's time is in
docs/measurements.md).

Reference: each row also holds ``eps_exact``, the ε of the audited pair computed from the law
the adapters document for the library (:func:`exact_epsilon`: continuous Laplace noise at the
library's scale; OpenDP samples a discretised Laplace whose ε its map bounds by the claim).
Every ε_lower must stay below it; the findings say so or flag it.

diffprivlib is seeded through the audit's generator; OpenDP and PipelineDP draw their noise
from their own CSPRNG and cannot be seeded, so their rows vary from run to run.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

from experiments.common import audit, base, check_size, record, variant
from experiments.library_targets import (  # (re-exported: the experiment's settings)
    LIBRARIES,
    N_RECORDS,
    RATES,
    TARGETS,
    pair_of,
    pilot_calls,
    target_params,
)
from experiments.plotting import STYLE, column, legend_below, lower_with_point, num

NAME = "library_audit"
TITLE = "DP libraries under missing data: ε_lower against the missing rate π (MCAR iid)"
CAPTION = """\
One panel per library target, each claiming ε = 1 per substituted record (Laplace noise,
δ = 0) on n = 20 records of one feature in [−1, 1], every record masked independently with
probability π. Black dots: the audit's 95 % lower bound ε_lower, with a thin bar up to the
plug-in estimate (no bar where that estimate is infinite or below ε_lower); black ring: the
claim is refuted (ε_lower > ε); orange ring: only the amplified claim is refuted. Grey dashed
line: the claimed ε; pale blue band: the claim amplified by Theorem 3.2 with p* = 1 − π, which
any release that is truly ε-DP on incomplete data must respect; red squares: the exact ε of the
audited pair under the library's documented NaN semantics (a triangle at the top with its
value when it lies above the panel, ∞ when infinite). At π = 0 the claim and the amplified
claim are both 1, and so is the exact ε of the sum and nanmean pairs. diffprivlib's
nansum and OpenDP's sum (NaN imputed as 0) keep their claims; diffprivlib's nanmean violates
its claim as π grows (noise calibrated to all N entries, mean over the k observed ones);
diffprivlib's mean and PipelineDP's sum release NaN exactly when an entry is missing, so a
record missing on one side is seen with certainty at π = 0 (ε_lower there is limited by the
number of calls only) and ever more rarely as the other records go missing too. Each panel
has its own ε scale.
"""
def budget_ceiling(calls: int, confidence: float | None = None) -> float:
    """The largest ε_lower ``calls`` per side can show: every draw of one side in the region
    and none of the other, bounded as every region is (the one evaluator,
    :func:`audit.estimation.binomial.eps_from_counts`: one-sided Clopper–Pearson bounds at
    α/2 each, (α/2)^(1/n) and 1 − (α/2)^(1/n)); ``confidence`` None: the policy's."""
    from audit._validate import check_in_range, check_positive_int
    from audit.estimation.binomial import eps_from_counts
    from audit.policy import DEFAULT_POLICY

    check_positive_int(calls, "calls")
    if confidence is None:
        confidence = DEFAULT_POLICY.confidence
    check_in_range("confidence", confidence, 0.0, 1.0, lo_closed=False, hi_closed=False)
    return float(eps_from_counts(calls, calls, 0, calls, 0.0, 1.0 - confidence))


def _laplace_mixture_eps(left: list, right: list, b: float, lo: float, hi: float) -> float:
    """Pure ε between two mixtures of Laplace(c, b) laws truncated to [lo, hi] (atoms at the
    ends), each a list of (weight, centre); mass outside the lists (NaN) is equal on both
    sides and does not count. The sup of the density ratio is taken over a fine grid that
    holds every centre, and the two atoms."""
    import numpy as np

    centres = [c for _, c in (*left, *right)]
    ys = np.unique(np.concatenate([np.linspace(lo, hi, 20_001)[1:-1],
                                   np.clip(centres, lo, hi)]))
    ys = ys[(ys > lo) & (ys < hi)]

    def law(mix):
        w = np.array([m[0] for m in mix])[:, None]
        c = np.array([m[1] for m in mix])[:, None]
        dens = (w * np.exp(-np.abs(ys[None, :] - c) / b)).sum(axis=0)
        lower = float((w[:, 0] * np.exp(-(c[:, 0] - lo) / b)).sum())
        upper = float((w[:, 0] * np.exp(-(hi - c[:, 0]) / b)).sum())
        return dens, lower, upper

    (d1, l1, u1), (d2, l2, u2) = law(left), law(right)
    ratios = np.log(np.concatenate([d1 / d2, [l1 / l2, u1 / u2]]))
    return float(np.max(np.abs(ratios)))


def _bounded_domain_mixture_eps(left: list, right: list, b: float, lo: float,
                                hi: float) -> float:
    """Pure ε between two mixtures of Laplace(c, b) laws conditioned on [lo, hi] (diffprivlib's
    ``LaplaceBoundedDomain`` samples until the draw lands there), each a list of (weight,
    centre); mass outside the lists (NaN) is equal on both sides. The sup of the density
    ratio is taken over a fine grid of [lo, hi] that holds every centre."""
    import numpy as np

    centres = [c for _, c in (*left, *right)]
    ys = np.unique(np.concatenate([np.linspace(lo, hi, 20_001), np.clip(centres, lo, hi)]))

    def density(mix):
        w = np.array([m[0] for m in mix])[:, None]
        c = np.array([m[1] for m in mix])[:, None]
        mass = 1.0 - 0.5 * np.exp(-(c - lo) / b) - 0.5 * np.exp(-(hi - c) / b)
        return (w * np.exp(-np.abs(ys[None, :] - c) / b) / mass).sum(axis=0)

    return float(np.max(np.abs(np.log(density(left) / density(right)))))


def _variance_pair_eps(n: int, rate: float, eps: float, bound: float) -> float:
    """diffprivlib ``nanvar`` on the pair z₁ = −bound against +bound, the other records at
    +bound (:func:`exact_epsilon`)."""
    from diffprivlib.mechanisms import LaplaceBoundedDomain

    lo, hi = 0.0, bound**2  # (upper - lower)**2 / 4
    mech = LaplaceBoundedDomain(epsilon=eps, delta=0, sensitivity=(2 * bound / n) ** 2 * (n - 1),
                                lower=lo, upper=hi)
    q = 1.0 - rate
    mix_z, mix_zp = [], []
    for j in range(n):  # j of the other n - 1 records observed
        w = math.comb(n - 1, j) * q**j * rate ** (n - 1 - j)
        # z₁ = −bound observed beside j values at +bound: variance 4j/(j + 1)² · bound²
        mix_z.append((q * w, bound**2 * 4 * j / (j + 1) ** 2))
        mix_zp.append((q * w if j == 0 else w, 0.0))  # every observed value at +bound
        if j > 0:  # z₁ masked: j values at +bound
            mix_z.append((rate * w, 0.0))
    return _bounded_domain_mixture_eps(mix_z, mix_zp, mech._find_scale(), lo, hi)


def exact_epsilon(pair: str, n: int, rate: float, eps: float, bound: float = 1.0,
                  statistic: str = "mean") -> float:
    """The ε of the audited pair under the library semantics the adapters document (d = 1,
    bounds [−bound, bound], Laplace noise calibrated to ε as the library does): a reference
    every ε_lower must stay below.

    ``search`` and ``ends`` (nansum, OpenDP's imputed sum, SmartNoise's SUM): a masked
    record adds 0, so the laws are
    π·L(0) + (1 − π)·L(∓bound) with scale 2·bound/ε, whose ε is
    ln((π + (1 − π)e^{ε/2}) / (π + (1 − π)e^{−ε/2})). ``others-at-bound`` (nanmean): the mean
    of the k observed entries plus Laplace noise of scale 2·bound/(nε), truncated to the
    bounds. ``others-at-bound`` with ``statistic="variance"`` (nanvar): the variance of the
    observed entries, 4j/(j + 1)² · bound² with z₁ and j others observed and 0 otherwise, plus
    diffprivlib's ``LaplaceBoundedDomain`` noise on [0, bound²] at the scale it finds for its
    sensitivity (4·bound²/n²)(n − 1). ``nan-one-side``: z releases NaN always, z' a number
    with probability (1 − π)^n > 0, so ε is infinite.
    """
    if statistic not in ("mean", "variance"):
        raise ValueError(f"statistic must be 'mean' or 'variance', got statistic={statistic!r}")
    if statistic == "variance":
        if pair != "others-at-bound":
            raise ValueError(f"the variance reference is for pair 'others-at-bound', got "
                             f"pair={pair!r}")
        return _variance_pair_eps(n, rate, eps, bound)
    if pair == "nan-one-side":
        return math.inf
    if pair in ("search", "ends"):
        q = 1.0 - rate
        return math.log((rate + q * math.exp(eps / 2)) / (rate + q * math.exp(-eps / 2)))
    if pair == "others-at-bound":
        q = 1.0 - rate
        mix_z, mix_zp = [], []
        for j in range(n):  # j of the other n - 1 records observed
            w = math.comb(n - 1, j) * q**j * rate ** (n - 1 - j)
            mix_z.append((q * w, bound * (j - 1) / (j + 1)))  # z₁ = -bound observed
            mix_zp.append((q * w, bound))
            if j > 0:  # z_1 masked: the mean of j values at +bound
                mix_z.append((rate * w, bound))
                mix_zp.append((rate * w, bound))
        return _laplace_mixture_eps(mix_z, mix_zp, 2 * bound / (n * eps), -bound, bound)
    raise ValueError(f"unknown pair kind {pair!r}")


def _library_versions() -> dict[str, str]:
    """The installed version of each of :data:`LIBRARIES`, and the pinned one of each library
    audited in its own environment."""
    from importlib.metadata import PackageNotFoundError, version

    from audit.adapters import registry

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    for spec in TARGETS:
        adapter = registry.get_adapter(spec["target"].split(":")[0])
        if adapter.isolated:
            out[adapter.distribution] = registry.library_version(adapter)
    return out


def _config(spec: dict, doc: dict, size: str, seed: int, jobs: int, rate: float) -> dict:
    """The audit of one target: every rate of :data:`RATES` from one mask-stratified run
    (``[strata]``, docs/THEORY.md §8.5) reported at ``rate``, ``trials`` calls per side per
    rate."""
    v = variant(doc, **{
        "implementation.target": spec["target"],
        "implementation.params": target_params(spec),
        "scenario.query": spec["query"],
        "missingness.rate": rate,
        "audit.trials": spec["trials"][size],
        "audit.pilot_trials": pilot_calls(size, spec["trials"][size]),
        "audit.seed": seed,
        "audit.jobs": jobs,
    })
    v["strata"] = {"rates": list(RATES), "sides": "auto"}
    pair = pair_of(spec["pair"], doc["scenario"]["n"])
    if pair is not None:
        v["pair"] = pair
    return v


def _row(spec: dict, res, n: int, rate: float, calls: int, **fields) -> dict:
    doc = res.to_dict()
    row = {**doc, "target": spec["target"], "rate": rate, "setting": spec["setting"],
           "pair_kind": spec["pair"], "calls_per_side": calls,
           "budget_ceiling": budget_ceiling(calls, res.confidence),
           "eps_exact": exact_epsilon(spec["pair"], n, rate, res.eps_claim,
                                     statistic=spec.get("statistic", "mean")), **fields}
    claim = row["eps_lower"] > res.eps_claim
    row["claim_refuted"] = bool(claim)
    row["amplified_refuted"] = bool(claim or row["eps_lower"] > row["eps_theory"])
    return row


def _rate_rows(spec: dict, res, n: int) -> list[dict]:
    """The rows of one stratified run: one per rate, with that rate's bound, its region,
    plug-in value and amplified claim, named by its rate; its ``budget_ceiling`` is that of
    the run's len(RATES) × calls per side."""
    strata = res.to_dict()["strata"]
    keep = ("kind", "alpha", "design", "simultaneous")
    calls = res.trials // len(strata["rates"])  # per side per rate (``trials``: the grid's)
    # a stratified side may spend all its len(RATES) × calls calls on the strata of one rate
    ceiling = budget_ceiling(res.trials, res.confidence)
    return [_row(spec, res, n, r["rate"], calls, eps_lower=r["eps_lower"],
                 eps_point=r["eps_point"], budget_ceiling=ceiling,
                 name=f"{NAME}[{spec['target']}, π={r['rate']:g}, stratified]",
                 eps_theory=r["eps_amplified"], p_star=1.0 - r["rate"],
                 witness={**{k: strata[k] for k in keep}, "rate": r["rate"],
                          "direction": r["direction"], "threshold": r["threshold"],
                          "p_lower": r["p_lower"], "q_upper": r["q_upper"]})
            for r in strata["rates"]]


def run(size: str = "default", seed: int = 8, jobs: int = 1, progress: bool = False) -> dict:
    from audit.simulation.processes import cap_jobs

    check_size(size)
    jobs = max(jobs, cap_jobs(-1, "jobs")[0])  # every usable CPU (module docstring)
    doc = base(NAME)
    n = doc["scenario"]["n"]
    rows = []
    i = 0
    for spec in TARGETS:  # one run for the whole grid
        if spec["trials"][size] is None:  # an isolated library: not at smoke size
            i += len(RATES)
            continue
        res = audit(_config(spec, doc, size, seed + i, jobs, RATES[0]),
                    f"{NAME}[{spec['target']}, stratified]", progress=progress)
        rows += _rate_rows(spec, res, n)
        i += len(RATES)
    return record(NAME, TITLE, size, seed, rows=rows, findings=findings(rows, n),
                  library_versions=_library_versions(), nan_regression=_nan_regression())


#: the committed NaN regression table (``experiments/nan_regression.py``), which this
#: experiment's report section lists beside its curves
NAN_REGRESSION = Path(__file__).resolve().parents[1] / "results" / "nan_regression.json"


def _nan_regression() -> dict | None:
    """The NaN regression table as committed (None when it has not been produced)."""
    if not NAN_REGRESSION.is_file():
        return None
    doc = json.loads(NAN_REGRESSION.read_text())
    keep = ("target", "example", "nan", "cause", "source", "library", "version", "seedable",
            "claim", "verdict", "eps_lower", "eps_estimate", "eps_point", "pair", "finding",
            "root_cause", "mcar", "mcar_amplified", "eps_lower_range", "runs")
    return {"calls": doc["calls"], "seed": doc["seed"], "confidence": doc["confidence"],
            "margin": doc["margin"], "reruns": doc.get("reruns", 1),
            "rows": [{k: r[k] for k in keep if k in r} for r in doc["rows"]],
            "findings": doc.get("findings", [])}


def report_findings(doc: dict) -> list[str]:
    """The findings, then the NaN regression table the run recorded (REPORT.md)."""
    from experiments.nan_regression import markdown

    lines = list(doc["findings"])
    table = doc.get("nan_regression")
    if table:
        text = markdown(table).splitlines()
        lines += ["", "**NaN regression table** (every adapter example with one record NaN, "
                  "from `results/nan_regression.json`; rerun `experiments/nan_regression.py` "
                  "after upgrading a library):", "", *text[2:]]
    return lines


# --- findings ------------------------------------------------------------------------------

def _g(v: float) -> str:
    return f"{v:g}"


def _witness(r: dict) -> str:
    from audit.pipeline.results import bound_from_witness

    if r["witness"].get("kind") == "strata":  # one rate of a mask-stratified run
        w = r["witness"]
        num, den = ("z", "z′") if w["direction"] == "z_vs_zprime" else ("z′", "z")
        return (f"region {num} vs {den} of the rate's score: P({num}) ≥ "
                f"{w['p_lower']:.3g}, P({den}) ≤ {w['q_upper']:.3g} (z {w['design']['p']}, "
                f"z′ {w['design']['q']})")
    w = bound_from_witness(r["witness"])
    if w.kind == "sequential":
        return f"sequential test, {w.calls_per_side:,} calls per side"
    return (f"region {w.direction.value.replace('_vs_', ' vs ').replace('zprime', 'z′')} of "
            f"the attack's score: z in {w.k_p:,}/{w.n_p:,} calls, z′ in "
            f"{w.k_q:,}/{w.n_q:,}")


def _exact_line(rs: list[dict]) -> str:
    exact = [num(r["eps_exact"]) for r in rs]
    if all(v == math.inf for v in exact):
        values = "infinite at every π"
    else:
        values = (", ".join(f"{v:.3g}" for v in exact) + " at π = "
                  + ", ".join(_g(r["rate"]) for r in rs))
    above = [r for r in rs if num(r["eps_lower"]) > num(r["eps_exact"])]
    check = ("every ε_lower lies below it" if not above else
             "ε_lower EXCEEDS it at π = " + ", ".join(_g(r["rate"]) for r in above)
             + " (the audit or this reference is wrong)")
    return f"  Exact ε of this pair under the documented semantics: {values}; {check}."


def _target_finding(spec: dict, rs: list[dict], n: int) -> list[str]:
    target = spec["target"]
    claim = rs[0]["eps_claim"]
    refuted = [r for r in rs if r["claim_refuted"]]
    amp_only = [r for r in rs if r["amplified_refuted"] and not r["claim_refuted"]]
    calls = sorted({r["calls_per_side"] for r in rs})
    head = (f"- **{target}** ({spec['setting']}; {', '.join(f'{c:,}' for c in calls)} calls "
            f"per side):")
    amp_text = ("ε_lower exceeds the amplified claim at π = "
                + ", ".join(f"{_g(r['rate'])} ({r['eps_lower']:.3f} > {r['eps_theory']:.3f})"
                            for r in amp_only)
                + ", which a release that is ε-DP on incomplete data cannot do")
    if not refuted:
        top = max(rs, key=lambda r: r["eps_lower"])
        text = (f"{head} keeps its claim at every π: ε_lower ≤ {top['eps_lower']:.3f} "
                f"(at π = {_g(top['rate'])}) against ε = {claim:g}")
        text += f"; but {amp_text}" if amp_only else \
            ", and stays below the amplified claim at every π too"
        return [text + ".", f"  Source: {spec['cause']}", _exact_line(rs)]
    first = refuted[0]
    text = (f"{head} **violates its claim from π = {_g(first['rate'])}**: ε_lower = "
            f"{first['eps_lower']:.3f} > ε = {claim:g} ({_witness(first)})")
    rest = refuted[1:]
    if rest:
        text += "; also at " + ", ".join(
            f"π = {_g(r['rate'])} (ε_lower = {r['eps_lower']:.3f})" for r in rest)
    undetected = [r for r in rs if not r["claim_refuted"] and r["rate"] > first["rate"]]
    if undetected:
        text += ("; not refuted at π = " + ", ".join(_g(r["rate"]) for r in undetected)
                 + " (ε_lower = " + ", ".join(f"{r['eps_lower']:.3f}" for r in undetected)
                 + ")")
    if amp_only:
        text += f"; below the claim, {amp_text}"
    lines = [text + ".", f"  Cause: {spec['cause']}", _exact_line(rs)]
    if spec["pair"] == "nan-one-side":
        probs = ", ".join(f"{(1 - r['rate']) ** n:.2g} at π = {_g(r['rate'])}" for r in rs
                          if 0 < r["rate"] <= 0.5)
        lines.append(
            f"  z's differing record is missing, so z releases NaN with probability 1 and z′ a "
            f"number with probability (1 − π)^{n} ({probs}). Where the audit sees this, its "
            f"ε_lower is set by the budget (at most {first['budget_ceiling']:.2f} with "
            f"{first['calls_per_side']:,} calls per side and rate, "
            f"{first['trials']:,} in all), not by the library; where the event is rarer than "
            f"about 1/calls it sees nothing.")
    return lines


def findings(rows: list[dict], n: int = N_RECORDS) -> list[str]:
    """Plain verdicts per target, from the rows (markdown lines for REPORT.md)."""
    out = []
    for spec in TARGETS:
        rs = sorted((r for r in rows if r["target"] == spec["target"]), key=lambda r: r["rate"])
        if rs:
            out += _target_finding(spec, rs, n)
    return out


# --- figure --------------------------------------------------------------------------------

def caption(doc: dict) -> str:
    """:data:`CAPTION`, and why diffprivlib nanmean's exact ε jumps where it does (numbers
    from the results)."""
    rs = sorted((r for r in doc["rows"] if r["target"] == "diffprivlib:nanmean"),
                key=lambda r: r["rate"])
    if len(rs) < 2:
        return CAPTION
    jumps = [(b["eps_exact"] / a["eps_exact"], a, b) for a, b in zip(rs, rs[1:], strict=False)]
    _, a, b = max(jumps, key=lambda t: t[0])
    n, eps = doc.get("n", N_RECORDS), a["eps_claim"]

    def alone(pi: float) -> float:  # the mask observing z₁ alone: n·ε noise scales off
        return n * eps + math.log((1 - pi) * pi ** (n - 1))

    def num(v: float) -> str:
        return f"{v:.2f}".replace("-", "−")

    return CAPTION.rstrip() + (
        f" diffprivlib nanmean's exact ε jumps from {a['eps_exact']:.3g} at π = "
        f"{_g(a['rate'])} to {b['eps_exact']:.3g} at π = {_g(b['rate'])} because it is the "
        "larger of two regimes: masks observing most records give about the claim, while the "
        f"mask observing z₁ alone (probability (1 − π)π^{n - 1}) puts z's mean at −1, n·ε = "
        f"{n * eps:g} noise scales from z′'s +1, and contributes n·ε + ln((1 − π)π^{n - 1}): "
        f"{num(alone(a['rate']))} at π = {_g(a['rate'])}, below the first regime, but "
        f"{num(alone(b['rate']))} at π = {_g(b['rate'])}, about the exact ε there. That "
        "mask is too rare for an audit of this size to see, so ε_lower cannot follow the "
        "jump.\n")


def _title(target: str) -> str:
    library, function = target.split(":")
    names = {"diffprivlib": "diffprivlib", "opendp": "OpenDP", "pipelinedp": "PipelineDP"}
    return f"{names.get(library, library)} {function}"


def draw(doc: dict, fig) -> None:
    import numpy as np

    rows = doc["rows"]
    targets = list(dict.fromkeys(r["target"] for r in rows))
    # a grid of at most four panels a row: readable at page width (one row of seven was not)
    ncol = min(4, len(targets))
    nrow = -(-len(targets) // ncol)
    fig.set_size_inches(3.3 * ncol, 3.7 * nrow + 0.9)
    grid = fig.subplots(nrow, ncol, squeeze=False)
    for ax in grid.flat[len(targets):]:
        ax.axis("off")
    axes = grid.flat[:len(targets)]
    settings = {r["target"]: r["setting"] for r in rows}
    for k, (ax, target) in enumerate(zip(axes, targets, strict=True)):
        rs = sorted((r for r in rows if r["target"] == target), key=lambda r: r["rate"])
        x = column(rs, "rate")
        lo, pt = column(rs, "eps_lower"), column(rs, "eps_point")
        claim, amp = column(rs, "eps_claim"), column(rs, "eps_theory")
        exact = column(rs, "eps_exact")
        finite = [v for v in (*lo, *pt, *claim, *amp) if math.isfinite(v)]
        top = max(finite) * 1.15
        if not np.all(np.isfinite(exact) & (exact <= top)):
            top *= 1.2  # headroom for the arrows of an exact ε above the data
        ax.plot(x, amp, label="claim amplified by Theorem 3.2 (ε_theory)",
                **STYLE["eps_theory"])
        ax.plot(x, claim, color="0.35", ls="--", lw=1.3, label="claimed ε", zorder=3)
        inside = np.isfinite(exact) & (exact <= top)
        ax.plot(x, np.where(inside, exact, np.nan),
                label="exact ε of the pair (the library's documented law)",
                **STYLE["eps_pair"])
        # exact ε above the panel (or infinite): an arrow at the top edge, with its value
        y_arrow = 0.95 * top
        for xi, v in zip(x[~inside], exact[~inside], strict=True):
            ax.annotate("∞" if v == math.inf else f"{v:.3g}", (xi, y_arrow),
                        xytext=(0, -13), textcoords="offset points", ha="center",
                        fontsize=9 if v == math.inf else 7.5, color=STYLE["eps_pair"]["color"])
        ax.plot(x[~inside], np.full((~inside).sum(), y_arrow), ls="none", marker="^", ms=6,
                color=STYLE["eps_pair"]["color"], zorder=4,
                label="exact ε above the panel (value below the arrow)")
        lower_with_point(ax, x, rs)
        bad = np.array([bool(r["claim_refuted"]) for r in rs])
        amp_only = np.array([bool(r["amplified_refuted"]) for r in rs]) & ~bad
        ax.plot(x[bad], lo[bad], "o", ms=11, mfc="none", mec="k", mew=1.6, zorder=7,
                label="claim refuted (ε_lower > ε)")
        ax.plot(x[amp_only], lo[amp_only], "o", ms=10, mfc="none", mec="tab:orange", mew=1.8,
                zorder=7, label="amplified claim refuted only")
        ax.set_ylim(-0.04 * top, top)
        ax.set_xlim(-0.05, 0.95)
        ax.set_xticks(x)
        ax.set_xticklabels([_g(v) for v in x])
        if k + ncol >= len(targets):  # the lowest panel of its column
            ax.set_xlabel("missing rate π (MCAR iid)")
        if k % ncol == 0:
            ax.set_ylabel("ε")
        ax.set_title(f"{_title(target)}\n" + textwrap.fill(settings[target], 40), fontsize=8.5)
        ax.grid(alpha=0.3)
    legend_below(fig, ncol=4)
