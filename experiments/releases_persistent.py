"""The releases experiment's persistent-non-response curve (docs/THEORY.md §10.7).

Data re-collected k = :data:`RELEASES` times, each collection keeping a record's previous
non-response with probability r (else redrawing it), for r in :data:`PERSISTENCES`: the
Gaussian sum of the ``gaussian-p0.1`` setting (mcar-row, p* = 0.1, classical σ at ε = 1,
δ = 10⁻⁵ per release, record 1 at −B against +B, NA read as 0), audited on the model
(the k outputs are the mixture over the record's 2^k mask paths,
:func:`audit.laws.persistent_releases`) beside the accountant's bracket of the setting
(``bound --config`` with ``[releases] masks = "persistent"``). r = 0 is the fresh-mask setting,
r = 1 the shared one.

Each row carries the releases experiment's row keys with ``masks = "persistent"``, its
``persistence`` r, ``eps_pair`` ± ``eps_pair_error`` (the audited pair's bracket: midpoint and
half-width), ``eps_accountant`` / ``eps_accountant_lower`` (the setting's bracket) and
``eps_fresh_composed`` (the per-release accounting, C_p*(G_μ) composed k times).
"""

from __future__ import annotations

from experiments.common import config

#: the caption of the releases figure's bottom panel (results that hold the curve)
CAPTION = """\
Bottom: persistent non-response (data re-collected k = 5 times, each collection keeping a
record's mask with probability r) against r: the accountant's bracket (green), the audited
pair's upper end (purple squares) and the model audits' ε_lower (purple dots); r = 0 is the
fresh-mask setting, r = 1 the shared one."""
PERSISTENCES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: the persistences audited by size (smoke: both ends and the middle, for the tests)
PERSISTENCES_BY_SIZE = {"smoke": (0.0, 0.5, 1.0), "default": PERSISTENCES,
                        "full": PERSISTENCES}
RELEASES = 5
P_STAR = 0.1
#: trials (calls) per side of each audit, by size
TRIALS = {"smoke": 20_000, "default": 100_000, "full": 1_000_000}
#: where the rows' seeds start (apart from the releases experiment's other audits)
SEED_OFFSET = 300


def persistent_curve(size: str, seed: int, jobs: int, progress: bool) -> dict:
    """The curve: ``{"releases", "p_star", "delta", "setting", "rows"}``, one row per r."""
    from audit.pipeline.runner import run_audit
    from audit.theory import accountant as acc
    from experiments import releases_setup as rel

    miss = {"kind": "mcar-row", "p_star": P_STAR}
    plan = rel.plan(rel.gauss_scenario(), miss)
    fresh = acc.fresh_masks_epsilon(acc.tradeoff_gaussian(plan.sensitivity / plan.noise_scale),
                                    P_STAR, RELEASES, rel.DELTA)
    rows = []
    for i, r in enumerate(PERSISTENCES_BY_SIZE[size]):
        doc = rel.doc(rel.gauss_scenario(), miss, RELEASES, "persistent", TRIALS[size],
                       seed + SEED_OFFSET + i, jobs, delta=rel.DELTA)
        doc["releases"]["persistence"] = r
        res = run_audit(config(doc, f"{rel.NAME}[persistent, r={r:g}, k={RELEASES}]"),
                        progress=progress)
        rows.append(rel.row(res, "persistent", "model", RELEASES, "persistent",
                             eps_pair=res.eps_pair, eps_pair_error=res.eps_pair_error,
                             fresh=fresh, rule=rel.FRESH_RULES["gaussian"], persistence=r,
                             **rel.accountant("gaussian", plan.noise_scale, P_STAR, RELEASES,
                                              "persistent", rel.DELTA, persistence=r)))
    return {"setting": "gaussian-p0.1", "releases": RELEASES, "p_star": P_STAR,
            "delta": rel.DELTA, "rows": rows}


def findings(curve: dict | None) -> list[str]:
    """One line on the curve (none without it: results written before it existed)."""
    if not curve:
        return []
    rows = curve["rows"]
    ends = {r["persistence"]: r for r in rows}
    width = max(r["eps_accountant"] - r["eps_accountant_lower"] for r in rows)
    top = max(r["eps_lower"] for r in rows)
    return [f"- **Persistent non-response** (k = {curve['releases']}, p* = "
            f"{curve['p_star']:g}, Gaussian sum): the accountant's bracket moves from "
            f"{ends[0.0]['eps_accountant']:.4f} at r = 0 (fresh masks) to "
            f"{ends[1.0]['eps_accountant']:.4f} at r = 1 (shared), widest "
            f"{width:.1e}; the model audits reach ε_lower ≤ {top:.3f}, below every bracket "
            f"(`bound --config` with `[releases] masks = \"persistent\"`)."]


_STYLE = {
    "accountant": {"color": "tab:green", "ls": "-", "lw": 1.0, "marker": "_", "ms": 16,
                   "mew": 2.5, "zorder": 4,
                   "label": "persistent masks: accountant's bracket (bound --config), upper "
                            "end; bar to its lower end"},
    "pair": {"color": "tab:purple", "ls": "none", "marker": "s", "ms": 7, "mfc": "none",
             "zorder": 5, "label": "persistent masks: the audited pair's bracket, upper end"},
    "lower": {"color": "tab:purple", "ls": "none", "marker": "o", "ms": 6, "mec": "k",
              "mew": 0.6, "zorder": 6, "label": "persistent masks: ε_lower (95 %)"},
}


def draw_panel(ax, curve: dict | None) -> None:
    """ε against r: the accountant's bracket, the audited pair's upper end, ε_lower and the
    per-release accounting; a note where the results predate the curve."""
    import numpy as np

    from experiments import releases_setup as rel
    from experiments.plotting import column

    if not curve:
        ax.text(0.5, 0.5, "no persistent-non-response curve in these results",
                transform=ax.transAxes, ha="center", va="center", color="0.3")
        ax.set_axis_off()
        return
    rows = curve["rows"]
    x = column(rows, "persistence")
    hi, lo = column(rows, "eps_accountant"), column(rows, "eps_accountant_lower")
    ax.vlines(x, lo, hi, color=_STYLE["accountant"]["color"], lw=2.5, zorder=4)
    ax.plot(x, hi, **_STYLE["accountant"])
    ax.plot(x, column(rows, "eps_pair") + column(rows, "eps_pair_error"), **_STYLE["pair"])
    ax.plot(x, column(rows, "eps_lower"), **_STYLE["lower"])
    ax.axhline(rows[0]["eps_fresh_composed"], **{**rel.STYLE["eps_fresh_composed"],
                                                 "label": None})
    ax.set_xticks(np.asarray(x))
    ax.set_xticklabels([f"{v:g}\n(fresh)" if v == 0 else f"{v:g}\n(shared)" if v == 1
                        else f"{v:g}" for v in x])
    ax.set_ylim(0.0, 1.15 * max(np.nanmax(hi), rows[0]["eps_fresh_composed"]))
    ax.set_xlabel("persistence r: the probability that a record keeps its mask between "
                  "collections")
    ax.set_ylabel(f"ε of the {curve['releases']} releases together")
    ax.set_title(f"Persistent non-response: Gaussian sum, mcar-row, p* = {curve['p_star']:g}, "
                 f"k = {curve['releases']} collections (δ = {curve['delta']:g}); red dashed: "
                 "per-release accounting", fontsize=10)
    ax.grid(alpha=0.3)
