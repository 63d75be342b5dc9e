"""Experiment 12: imputation before a Laplace sum, audited as a black box.

Each target (``audit.adapters.imputation``) fills the missing entries of a table of n = 20
records (column 0 the value in [−1, 1], column 1 an always-observed covariate) and releases
the sum of column 0 with Laplace noise of scale 2/ε, the claim ε = 1 a user states *ignoring
the imputation*. The audited pair (:func:`audit.model.imputation_pairs.imputation_pair`)
moves record 0 from +1 to −1 while m ∈ {1, 4, 16} records have their value missing: given
missing in the table (MCAR: the pattern does not depend on the values) or masked by a MAR
mechanism (``mar-pivot`` on the covariate: the value goes missing when the covariate is high).
Both settings hand the imputer the same table, so their bounds should agree; the MAR rows
check that the NA drawn by a mask inside the audit behave as the NA given.

The non-private imputers carry the differing record into every imputed entry: the exact ε
of the pair (docs/THEORY.md §11) is ε·n/(n − m) for the mean, up to ε·(1 + m) for the median
and the most frequent value, ε·(1 + m/min(5, k)) for KNN with 5 neighbours (record 0 is the
nearest donor), a mixture for random hot-deck; the iterative imputer (a regression on the
covariate, record 0 a high-leverage point) has no closed form. The private variant computes
the imputed value as a DP mean (noisy sum over noisy count, clipped) at half the budget and
releases the sum at the other half: ε-DP in total, so it must not be refuted.

A third panel keeps mean imputation at m = 16 and varies what follows it (:data:`VARIANTS`):
the project's Laplace mean and Gaussian sum (δ = 1e-5), diffprivlib's ``tools.mean``,
OpenDP's Laplace sum and mean (its own generator: those rows are not seeded), and the MAR
mask at rate 0.5 instead of 1 (M ~ Binomial(16, 0.5) values missing: a mixture whose exact ε
is docs/THEORY.md §11.5's). Every release is calibrated for ε = 1 ignoring the imputation;
the libraries' exact ε is at most the project's (truncation and float-rounding allowances
only add noise), so the project's value is their ceiling.
"""

from __future__ import annotations

import math

from experiments.common import audit, base, check_size, record, variant
from experiments.plotting import legend_below

NAME = "imputation"
TITLE = "Imputation before a DP release: ε_lower against the number of imputed records"
CAPTION = """\
ε_lower (95 % one-sided Clopper-Pearson) of an imputer followed by a DP release calibrated
for ε = 1 ignoring the imputation, on n = 20 records whose differing record moves across the
range [−1, 1] while m other records are missing. Left: missing in the table (MCAR); middle:
masked by a MAR mechanism reading an observed covariate; both before the project's Laplace
sum. Right: mean imputation at m = 16 before other releases (the project's Laplace sum, the
left panel's point, and mean; its Gaussian sum at δ = 1e-5; diffprivlib's tools.mean;
OpenDP's Laplace sum and mean, *: OpenDP's own noise, not seeded) and the Laplace sum under a
MAR mask of rate 0.5 (8 of the 16 values missing on average). Dashed lines and dashes: the
exact ε of the pair from docs/THEORY.md §11 (mean n/(n − m); median and most frequent up to
1 + m; KNN 1 + m/min(5, n − m); hot-deck and the rate-0.5 mask mixtures; the project's value
is the ceiling of the libraries' releases). The grey line is the claimed ε; the black line
the private imputer (a DP mean at ε/2, the sum at ε/2), which stays below it. The dotted
line is the largest ε_lower the calls per side can show: points on it are limited by the
budget.
"""
#: (imputer, how the pair's other observed records are set: the median and the most frequent
#: value need them split between the ends so that record 0 tips them)
IMPUTERS = (("mean", "zero"), ("median", "split"), ("most_frequent", "split"), ("knn", "zero"),
            ("iterative", "zero"), ("hot_deck", "zero"), ("private_mean", "zero"))
M_VALUES = (1, 4, 16)
MASKS = ("mcar", "mar")
N_RECORDS = 20
BOUND = 1.0
TRIALS = {"smoke": 300, "default": 3_000, "full": 100_000}
#: the third panel: mean imputation at m = 16 before other releases, or under a MAR mask of
#: rate 0.5: (label, release, statistic, δ, MAR rate or None)
VARIANTS = (("Laplace sum", "laplace", "sum", 0.0, None),
            ("Laplace mean", "laplace", "mean", 0.0, None),
            ("Gaussian sum", "gaussian", "sum", 1e-5, None),
            ("diffprivlib mean", "diffprivlib", "mean", 0.0, None),
            ("OpenDP sum*", "opendp", "sum", 0.0, None),
            ("OpenDP mean*", "opendp", "mean", 0.0, None),
            ("MAR rate 0.5", "laplace", "sum", 0.0, 0.5))
VARIANT_M = 16
COLORS = {"mean": "tab:blue", "median": "tab:orange", "most_frequent": "tab:green",
          "knn": "tab:purple", "iterative": "tab:brown", "hot_deck": "tab:pink",
          "private_mean": "k"}


def config(imputer: str, others: str, m: int, mask: str, trials: int, seed: int,
           jobs: int = 1, *, release: str = "laplace", statistic: str = "sum",
           delta: float = 0.0, rate: float = 1.0) -> dict:
    """The audit of one (imputer, m, mask) point: ``experiments/configs/imputation.toml`` with
    the target, its pair and its missingness replaced (and, for the third panel, the release,
    the statistic, δ and the MAR mask's rate)."""
    from audit.model.imputation_pairs import imputation_pair, mar_mask_params
    from audit.theory.imputation import mean_mar_pair_epsilon, pair_epsilon

    z, z_prime = imputation_pair(N_RECORDS, m, BOUND, others=others, mask=mask)
    v = variant(base(NAME), **{"implementation.target": f"imputation:{imputer}",
                               "implementation.delta": delta,
                               "audit.trials": trials, "audit.seed": seed, "audit.jobs": jobs})
    if (release, statistic) != ("laplace", "sum"):
        v["implementation"]["params"] = {**v["implementation"]["params"], "release": release,
                                         "statistic": statistic}
    v["pair"] = {"z": z.tolist(), "z_prime": z_prime.tolist()}
    eps = v["implementation"]["epsilon"]
    if rate < 1.0:  # a random MAR mask: mean imputation's mixture (docs/THEORY.md §11.5)
        exact = (mean_mar_pair_epsilon(N_RECORDS, m, 2 * BOUND, eps, rate)
                 if (imputer, others, mask, delta) == ("mean", "zero", "mar", 0.0) else None)
    else:
        exact = pair_epsilon(imputer, N_RECORDS, m, 2 * BOUND, eps, delta=delta)
    if exact is not None:  # the audit's ceiling (docs/THEORY.md §11.3, §11.5)
        v["pair"]["eps_pair"] = exact
    if mask == "mar":
        v["missingness"] = mar_mask_params(rate)
    return v


def run(size: str = "default", seed: int = 12, jobs: int = 1, progress: bool = False) -> dict:
    check_size(size)
    rows = []
    i = 0
    for mask in MASKS:
        for imputer, others in IMPUTERS:
            for m in M_VALUES:
                res = audit(config(imputer, others, m, mask, TRIALS[size], seed + i, jobs),
                            f"{NAME}[{imputer}, m={m}, {mask}]", progress=progress)
                i += 1
                exact = res.eps_pair
                rows.append({**res.to_dict(), "imputer": imputer, "m": m, "mask": mask,
                             "others": others,
                             "claim_refuted": bool(res.eps_lower > res.eps_claim),
                             "above_pair": bool(exact is not None and res.eps_lower > exact)})
    variants = []
    for label, release, statistic, delta, rate in VARIANTS:
        if (release, statistic, rate) == ("laplace", "sum", None):  # the first panel's point
            first = next(r for r in rows if (r["imputer"], r["m"], r["mask"])
                         == ("mean", VARIANT_M, "mcar"))
            variants.append({**first, "variant": label, "release": release,
                             "statistic": statistic, "rate": None})
            continue
        mask = "mcar" if rate is None else "mar"
        res = audit(config("mean", "zero", VARIANT_M, mask, TRIALS[size], seed + i, jobs,
                           release=release, statistic=statistic, delta=delta,
                           rate=1.0 if rate is None else rate),
                    f"{NAME}[mean, m={VARIANT_M}, {label}]", progress=progress)
        i += 1
        exact = res.eps_pair
        variants.append({**res.to_dict(), "imputer": "mean", "m": VARIANT_M, "mask": mask,
                         "others": "zero", "variant": label, "release": release,
                         "statistic": statistic, "rate": rate,
                         "claim_refuted": bool(res.eps_lower > res.eps_claim),
                         "above_pair": bool(exact is not None and res.eps_lower > exact)})
    return record(NAME, TITLE, size, seed, n=N_RECORDS, bound=BOUND, rows=rows,
                  variants=variants,
                  budget_ceiling=budget_ceiling(TRIALS[size], rows[0]["confidence"]),
                  findings=findings(rows, variants))


def budget_ceiling(calls: float, confidence: float) -> float:
    """About the largest ε_lower ``calls`` per side can show: every call of one side in the
    region and none of the other, under the δ = 0 joint bound the audits use
    (:func:`audit.estimation.binomial.eps_joint_from_counts`); a run's Poisson number of calls
    moves it by about ±1/√calls."""
    from audit.estimation.binomial import eps_joint_from_counts

    return float(eps_joint_from_counts(calls, 0, 1.0 - confidence))


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def findings(rows: list[dict], variants: list[dict] = ()) -> list[str]:
    """One line per imputer: ε_lower at each m (MCAR, then MAR), the exact ε, the verdict;
    then one line for the third panel's variants."""
    out = []
    for imputer, _ in IMPUTERS:
        rs = [r for r in rows if r["imputer"] == imputer]
        points = "; ".join(
            f"{mask}: " + ", ".join(f"m={r['m']} {r['eps_lower']:.3g} (exact {_fmt(r['eps_pair'])})"
                                    for r in rs if r["mask"] == mask) for mask in MASKS)
        refuted = sorted({r["m"] for r in rs if r["claim_refuted"]})
        verdict = (f"claim ε = 1 refuted at m ∈ {{{', '.join(map(str, refuted))}}}"
                   if refuted else "claim ε = 1 not refuted")
        above = [r for r in rs if r["above_pair"]]
        extra = (f"; ε_lower above the exact ε at m = {', '.join(str(r['m']) for r in above)} "
                 f"(each audit exceeds it with probability ≤ 5 %; above that rate over many "
                 f"runs it would be a bug)" if above else "")
        out.append(f"- {imputer}: ε_lower {points}: {verdict}{extra}.")
    if variants:
        parts = "; ".join(f"{v['variant']} {v['eps_lower']:.3g} (exact {_fmt(v['eps_pair'])}"
                          f"{', refuted' if v['claim_refuted'] else ''})" for v in variants)
        out.append(f"- mean imputation at m = {VARIANT_M}, other releases and masks "
                   f"(claim (ε, δ) = (1, δ)): {parts}.")
    return out


def draw(doc: dict, fig) -> None:
    import numpy as np

    rows = doc["rows"]
    variants = doc.get("variants", [])
    fig.set_size_inches(14 if variants else 10, 5.2 if variants else 4.6)
    axes = fig.subplots(1, len(MASKS) + bool(variants), sharey=True,
                        width_ratios=[1.0] * len(MASKS) + [1.15] * bool(variants))
    top = max(max(r["eps_lower"] for r in rows), doc["budget_ceiling"],
              max((r["eps_pair"] or 0.0) for r in rows if r["eps_pair"] is not None
                  and r["eps_pair"] <= 12)) * 1.1
    for ax, mask in zip(axes, MASKS, strict=False):
        for imputer, _ in IMPUTERS:
            rs = sorted((r for r in rows if r["imputer"] == imputer and r["mask"] == mask),
                        key=lambda r: r["m"])
            x = np.array([r["m"] for r in rs], dtype=float)
            lw = 2.4 if imputer == "private_mean" else 1.5
            ax.plot(x, [r["eps_lower"] for r in rs], "o-", color=COLORS[imputer], lw=lw,
                    label=f"{imputer} (ε_lower)", zorder=4)
            exact = np.array([math.nan if r["eps_pair"] is None else r["eps_pair"]
                              for r in rs])
            if np.isfinite(exact).any():
                ax.plot(x, np.minimum(exact, top * 0.98), ls="--", lw=1.0,
                        color=COLORS[imputer], alpha=0.8, zorder=3)
        ax.axhline(rows[0]["eps_claim"], color="0.45", lw=1.4, label="claimed ε = 1")
        ax.axhline(doc["budget_ceiling"], color="0.45", lw=1.0, ls=":",
                   label=f"about the most {rows[0]['trials']:,} calls per side can show")
        ax.plot([], [], ls="--", color="0.3", lw=1.0, label="exact ε of the pair (§11)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(M_VALUES))
        ax.set_xticklabels([str(m) for m in M_VALUES])
        ax.set_xlabel("m, incomplete records (of n = 20)")
        ax.set_title({"mcar": "missing in the table (MCAR)",
                      "mar": "masked by a MAR mechanism (mar-pivot)"}[mask], fontsize=10)
        ax.set_ylim(0, top)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ε (an exact ε above the panel is clipped at its top)")
    if variants:
        _draw_variants(axes[-1], variants, doc, top)
    legend_below(fig, axes[:1], ncol=4)


def _draw_variants(ax, variants: list[dict], doc: dict, top: float) -> None:
    """The third panel: mean imputation at m = 16 before each release of :data:`VARIANTS`
    (bars: ε_lower; black ticks: the exact ε, or the project's as the libraries' ceiling)."""
    x = range(len(variants))
    ax.bar(x, [v["eps_lower"] for v in variants], color=COLORS["mean"], alpha=0.85,
           width=0.6, zorder=3)
    for i, v in enumerate(variants):
        if v["eps_pair"] is not None:
            ax.plot([i - 0.35, i + 0.35], [min(v["eps_pair"], top * 0.98)] * 2, color="k",
                    lw=1.6, ls="--", zorder=4)
    ax.axhline(variants[0]["eps_claim"], color="0.45", lw=1.4)
    ax.axhline(doc["budget_ceiling"], color="0.45", lw=1.0, ls=":")
    ax.set_xticks(list(x))
    ax.set_xticklabels([v["variant"] for v in variants], rotation=30, ha="right",
                       rotation_mode="anchor", fontsize=8)
    ax.set_title(f"mean imputation, m = {VARIANT_M}: other releases", fontsize=10)
    ax.set_ylim(0, top)
    ax.grid(alpha=0.3, axis="y")
