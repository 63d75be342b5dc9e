"""Figures and ``results/REPORT.md`` drawn from saved results only.

Nothing here samples or recomputes an audit: every number plotted is read from a
``results/<experiment>.json`` file written by :mod:`experiments.suite`. Theory curves stored in those
files (trade-off curves) are plotted as stored.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from audit.pipeline.results import load_json  # noqa: E402

__all__ = ["write_report", "FIGURES"]


def _num(v):
    """JSON values back to floats (None, 'inf' and friends included)."""
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)
    return float(v)


def _col(rows, key):
    return [_num(r.get(key)) for r in rows]


def _lower_with_point(ax, x, rows, label="ε_lower (95 % one-sided CP)", color="k"):
    lo = _col(rows, "eps_lower")
    pt = _col(rows, "eps_point")
    ax.plot(x, lo, "o", color=color, label=label, zorder=5)
    for xi, a, b in zip(x, lo, pt, strict=True):
        if math.isfinite(a) and math.isfinite(b):
            ax.plot([xi, xi], [a, max(a, b)], "-", color=color, lw=1, alpha=0.6)


def fig_amplification_vs_pstar(doc, ax):
    rows = doc["rows"]
    x = _col(rows, "p_star")
    ax.plot(x, _col(rows, "thm_3_2"), "--", label="Theorem 3.2 (ρ ignored)")
    ax.plot(x, _col(rows, "eps_theory"), "-", label="Theorem 4.5")
    ax.plot(x, _col(rows, "eps_fdp"), "-.", label="f-DP bound (§7)")
    ax.plot(x, _col(rows, "eps_pair"), "s-", ms=4, label="ε_pair (exact)")
    _lower_with_point(ax, x, rows)
    ax.set_xlabel("p* (probability the record is observed)")
    ax.set_ylabel("ε")
    ax.set_title(f"Laplace, ε = {doc['epsilon']}, sum query, 3 of 10 features observed")


def fig_amplification_vs_rho(doc, axes):
    for ax, (mech, s) in zip(axes, doc["series"].items(), strict=False):
        rows = s["rows"]
        x = _col(rows, "rho_value")
        thm = "Theorem 4.5" if mech == "laplace" else "Theorem 4.7"
        ax.plot(x, _col(rows, "eps_theory"), "-", label=thm)
        if mech == "laplace":
            ax.plot(x, _col(rows, "cor_4_6"), ":", lw=2, label="Corollary 4.6 (ρε ≤ 1 only)")
        ax.plot(x, _col(rows, "eps_fdp"), "-.", label="f-DP bound (§7)")
        ax.plot(x, _col(rows, "eps_pair"), "s-", ms=4, label="ε_pair (exact)")
        _lower_with_point(ax, x, rows)
        ax.set_xlabel("ρ (observed fraction, almost surely)")
        ax.set_ylabel(f"ε at δ = {rows[0]['delta']:.2g}")
        ax.set_title(f"{mech}, ε = {s['epsilon']}, p* = {s['p_star']}")


def fig_tradeoff_curves(doc, axes):
    g = doc["gaussian"]
    ax = axes[0]
    for label, c in g["curves"].items():
        ax.plot(c["alpha"], c["beta"], label=label)
    for pnt in g["points"]:
        a_lo, a_hi = _num(pnt["alpha_hat"]), _num(pnt["alpha_hi"])
        b_lo, b_hi = _num(pnt["beta_hat"]), _num(pnt["beta_hi"])
        ax.add_patch(plt.Rectangle((a_lo, b_lo), a_hi - a_lo, b_hi - b_lo, fill=False,
                                   color="k", lw=0.8))
        ax.plot([a_hi], [b_hi], "k.", ms=3)
    ax.plot([], [], "ks", mfc="none",
            label="estimate → upper corner (α_hi, β_hi), simultaneous 95 %")
    ax.set_title(f"Gaussian audit: {g['title']}")
    ax.set_xlabel("type I error α")
    ax.set_ylabel("type II error β")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax = axes[1]
    s = doc["seed_example"]
    for label, c in s["curves"].items():
        ax.plot(c["alpha"], c["beta"], label=f"{label}: min α+β = {c['min_error_sum']:.4f}")
    ax.set_title(s["title"])
    ax.set_xlabel("type I error α")
    ax.set_ylabel("type II error β")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)


def _bars(doc, ax, label_key="label"):
    rows = doc["rows"]
    x = list(range(len(rows)))
    width = 0.2
    for off, key, lab in ((-1.5, "eps_lower", "ε_lower"), (-0.5, "eps_pair", "ε_pair (exact)"),
                          (0.5, "eps_theory", "theory (ε_theory)"),
                          (1.5, "eps_base", "no missingness (ε_base)")):
        ax.bar([i + off * width for i in x], _col(rows, key), width, label=lab)
    extra = _col(rows, "eps_mar_formula")
    if any(math.isfinite(v) for v in extra):
        ax.plot(x, extra, "rx", ms=10, mew=2, label="MAR formula applied to MNAR (not a bound)")
    ax.set_xticks(x, [r[label_key] for r in rows], rotation=15, ha="right", fontsize=8)
    ax.set_ylabel("ε")
    ax.set_ylim(0, 1.3 * max(v for v in _col(rows, "eps_base") if math.isfinite(v)))
    ax.legend(fontsize=7, ncol=3, loc="upper center")


def fig_counterexample(doc, ax):
    _bars(doc, ax)
    ax.set_title("p* = 1: no amplification for D0 ([RPS] B.3); amplification through ρ < 1")


def fig_mar_mnar(doc, ax):
    _bars(doc, ax)
    ax.set_title("MAR and MCAR at equal p*, and the MNAR stress test (Laplace, ε = 1)")


def fig_attack_comparison(doc, ax):
    rows = doc["rows"]
    attacks = list(dict.fromkeys(r["attack_name"] for r in rows))
    for a in attacks:
        rs = [r for r in rows if r["attack_name"] == a]
        ax.plot(_col(rs, "trials"), _col(rs, "eps_lower"), "o-", label=a)
    ax.axhline(_num(rows[0]["eps_pair"]), color="k", ls="--", label="ε_pair (exact)")
    ax.axhline(_num(rows[0]["eps_theory"]), color="r", ls=":", label=rows[0]["theory"])
    ax.set_xscale("log")
    ax.set_xlabel("trials per side")
    ax.set_ylabel("ε_lower (95 %)")
    ax.set_title("Attack comparison (Laplace, mcar-fixed k = 3, p* = 0.5)")


def fig_mcar_iid_looseness(doc, ax):
    rows = doc["rows"]
    x = _col(rows, "rate")
    ax.plot(x, _col(rows, "eps_theory"), "-", label="Theorem 3.2 = 4.5 (ρ = 1)")
    ax.plot(x, _col(rows, "eps_fdp"), "-.", label="f-DP bound (§7)")
    ax.plot(x, _col(rows, "eps_pair"), "s-", ms=4, label="ε_pair (exact)")
    _lower_with_point(ax, x, rows)
    ax.set_xlabel("per-feature missing rate r")
    ax.set_ylabel("ε")
    ax.set_title("mcar-iid, d = 10: Theorem 3.2 against the exact pair")


# name -> (drawing function, number of panels, one-line caption for the gallery)
FIGURES = {
    "amplification_vs_pstar": (fig_amplification_vs_pstar, 1,
                               "Amplification against p*: theory, exact pair and audit."),
    "amplification_vs_rho": (fig_amplification_vs_rho, 2,
                             "Amplification against ρ, Laplace and Gaussian."),
    "tradeoff_curves": (fig_tradeoff_curves, 2,
                        "Trade-off curves: empirical boxes against theory; the seed example."),
    "counterexample": (fig_counterexample, 1, "The p* = 1 counterexample and ρ < 1."),
    "mar_mnar": (fig_mar_mnar, 1, "MAR against MCAR at equal p*; MNAR stress test."),
    "attack_comparison": (fig_attack_comparison, 1, "ε_lower against trials for each attack."),
    "mcar_iid_looseness": (fig_mcar_iid_looseness, 1, "How loose Theorem 3.2 is for mcar-iid."),
}


def draw(name: str, doc: dict, out: Path) -> Path:
    fn, panels, _ = FIGURES[name]
    fig, axes = plt.subplots(1, panels, figsize=(6.4 * panels, 4.6), squeeze=False)
    axes = axes[0]
    fn(doc, axes if panels > 1 else axes[0])
    for ax in axes:
        if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _table(doc: dict) -> list[str]:
    """Markdown rows of every audit in an experiment (eps columns)."""
    rows = []
    if "rows" in doc:
        rows = doc["rows"]
    elif "series" in doc:
        rows = [r for s in doc["series"].values() for r in s["rows"]]
    if not rows:
        return []
    out = ["| audit | trials | ε_lower | ε_pair | ε_theory | ε_fdp | δ |",
           "|---|---:|---:|---:|---:|---:|---:|"]

    def f(v):
        v = _num(v)
        return "n/a" if not math.isfinite(v) else f"{v:.4f}"

    for r in rows:
        out.append(f"| {r['name']} | {r['trials']:,} | {f(r['eps_lower'])} | "
                   f"{f(r['eps_pair'])} | {f(r['eps_theory'])} | {f(r['eps_fdp'])} | "
                   f"{_num(r['delta']):.2g} |")
    return out


def write_report(results_dir: str | Path = "results") -> Path:
    """Draw every figure whose results exist and write ``REPORT.md``; return its path."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ValueError(f"results folder not found: {results_dir}")
    lines = ["# Audit report", "",
             "Drawn by `python -m audit report` from the JSON files in this folder; every "
             "number below traces to one of them (seed and package versions inside).", ""]
    found = 0
    for name, (_, _, caption) in FIGURES.items():
        path = results_dir / f"{name}.json"
        if not path.is_file():
            continue
        doc = load_json(path)
        found += 1
        fig = draw(name, doc, results_dir / "figures" / f"{name}.png")
        lines += [f"## {doc.get('title', name)}", "",
                  f"{caption} Size `{doc.get('size')}`, seed {doc.get('seed')}, "
                  f"{_num(doc.get('seconds', math.nan)):.0f} s; versions "
                  f"{doc.get('versions', {})}.", "",
                  f"![{name}](figures/{fig.name})", ""]
        lines += [*doc.get("findings", []), ""] if doc.get("findings") else []
        lines += [*_table(doc), ""]
    if found == 0:
        raise ValueError(f"no experiment results (*.json) in {results_dir}")
    out = results_dir / "REPORT.md"
    out.write_text("\n".join(lines))
    return out
