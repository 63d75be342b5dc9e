"""Experiment 5: MAR against MCAR at equal p*, and the MNAR stress test.

Laplace, ε = 1, sum query, B = 1. Rows at p* = 0.5 (`mcar-row`, `mcar-iid` with r = 0.5^{1/d},
`mar-monotone` with q0 = 0.5, `mcar-fixed` with ρ = 0.3), rows at p* = 1 (`mar-pivot`,
`mcar-iid` with r = 0.4 where p* = 1 − 1e-4), and `mnar-value`, which is outside every theorem.

For MNAR, the observation probability depends on the record, so "p*" is no longer one number.
The stress test asks whether the MAR formula of Theorem 4.5 still holds when an analyst plugs
in the observation probability of either record of the pair, and reports the finding either
way: a row whose ε_lower exceeds the formula is a statistically valid (95 %) violation.
"""

from __future__ import annotations

import numpy as np

from experiments.common import audit_with_setting, base, check_size, record, variant
from experiments.plotting import bar_series, column, grouped_bars, legend_below

NAME = "mar_mnar"
TITLE = "MAR against MCAR at equal p*, and the MNAR stress test (Laplace, ε = 1)"
CAPTION = """\
Laplace, ε = 1, sum query. At equal p* = 0.5 (first four groups) the bound of Theorem 4.5
depends on the mechanism only through ρ, while the exact ε of the audited pair (ε_pair) ranges
from 0.07 (mcar-iid) to 0.5 (mcar-row). At p* = 1 (mar-pivot, mcar-iid with r = 0.4) Theorem
4.5 gives no amplification but the pair is amplified. For Laplace the f-DP bound of §7 equals
Theorem 4.5 in every MAR/MCAR group (equal bars). MNAR (last two groups) is outside every
theorem: no ε_theory or §7 bar (n/a); the cross is the smallest value of the MAR formula of
Theorem 4.5 over the two records' observation probabilities, which is not a bound: for d = 2
the audit's 95 % lower bound lies above it (a violation, ringed and labelled on its bar).
"""
TRIALS = {"smoke": 20_000, "default": 10_000_000, "full": 200_000_000}


def _observation_probability(mech, rec: np.ndarray) -> float:
    masks, probs = mech.mask_distribution(rec)
    return float(1.0 - probs[masks.all(axis=1)].sum())


def run(size: str = "default", seed: int = 5, jobs: int = 1, progress: bool = False) -> dict:
    from audit.enums import MissingnessClass
    from audit.theory import accountant as acc

    check_size(size)
    doc = base("power_laplace")
    d = doc["scenario"]["d"]
    eps = doc["scenario"]["epsilon"]
    cases = [
        ("mcar-row p*=0.5", {"kind": "mcar-row", "p_star": 0.5}, d),
        ("mcar-iid p*=0.5", {"kind": "mcar-iid", "rate": 0.5 ** (1 / d)}, d),
        ("mar-monotone p*=0.5", {"kind": "mar-monotone", "q0": 0.5}, d),
        ("mcar-fixed k=3 p*=0.5", {"kind": "mcar-fixed", "observed": 3, "p_star": 0.5}, d),
        ("mar-pivot p*=1", {"kind": "mar-pivot"}, d),
        ("mcar-iid r=0.4", {"kind": "mcar-iid", "rate": 0.4}, d),
        ("mnar-value d=10", {"kind": "mnar-value", "rate_low": 0.1, "rate_high": 0.7}, d),
        ("mnar-value d=2", {"kind": "mnar-value", "rate_low": 0.05, "rate_high": 0.95}, 2),
    ]
    rows, findings = [], []
    for i, (label, miss, dim) in enumerate(cases):
        v = variant(doc, missingness=miss, **{"scenario.d": dim, "audit.trials": TRIALS[size],
                                              "audit.seed": seed + i, "audit.jobs": jobs})
        st, res = audit_with_setting(v, f"{NAME}[{label}]", progress=progress)
        row = {"label": label, **res.to_dict()}
        if st.missing_class is MissingnessClass.MNAR:
            mech = st.pair.missingness
            i_star = st.pair.index
            p_z = _observation_probability(mech, st.pair.z[i_star])
            p_zp = _observation_probability(mech, st.pair.z_prime[i_star])
            ratio = st.sensitivity_tilde / st.sensitivity
            formula = {f"p*={p:.4f}": acc.laplace_fwl_bound(eps, p, ratio)
                       for p in sorted({p_z, p_zp})}
            row["mar_formula_by_p_star"] = formula
            row["eps_mar_formula"] = min(formula.values())
            worst = min(formula.values())
            verdict = ("VIOLATED at 95 %" if res.eps_lower > worst
                       else "not violated by the audit")
            findings.append(
                f"- {label}: observation probabilities {p_z:.4f} (z) and {p_zp:.4f} (z'); the "
                f"MAR formula gives {', '.join(f'{v:.4f}' for v in formula.values())}; "
                f"ε_pair = {res.eps_pair:.4f}, ε_lower = {res.eps_lower:.4f}: the smallest "
                f"formula value is {verdict}."
            )
        rows.append(row)
    return record(NAME, TITLE, size, seed, rows=rows, findings=findings)



def draw(doc: dict, fig) -> None:
    rows = doc["rows"]
    fig.set_size_inches(11, 5.0)
    ax = fig.subplots()
    offsets = grouped_bars(ax, rows, bar_series("Theorem 4.5"), wrap=11)
    formula = column(rows, "eps_mar_formula")
    # The MAR formula stands in for the missing theorem, so it sits in the theorem's slot.
    ax.plot(offsets["eps_theory"], formula, "x", color="tab:red", ms=9, mew=2.2,
            label="MAR formula applied to MNAR (not a bound)", zorder=5)
    # the MNAR columns whose ε_lower refutes the formula, marked on their ε_lower bar
    lower = column(rows, "eps_lower")
    refuted = np.isfinite(formula) & (lower > formula)
    if refuted.any():
        xs, ys = offsets["eps_lower"][refuted], lower[refuted]
        ax.plot(xs, ys, "o", ms=13, mfc="none", mec="k", mew=1.8, zorder=6,
                label="formula refuted: ε_lower above the cross")
        for xi, yi, fi in zip(xs, ys, formula[refuted], strict=True):
            ax.annotate(f"ε_lower {yi:.3f} > formula {fi:.3f}:\nrefutes the MAR formula",
                        (xi, yi), xytext=(0, 48), textcoords="offset points", ha="center",
                        fontsize=8.5, arrowprops={"arrowstyle": "->", "lw": 1.0})
    ax.set_title("MAR and MCAR at equal p*, and the MNAR stress test (Laplace, ε = 1)")
    legend_below(fig, ncol=3)
