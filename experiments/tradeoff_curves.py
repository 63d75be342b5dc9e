"""Experiment 3: trade-off curves in the style of [DRS] Figure 6 (right).

A Gaussian audit (sum query, d = 10, `mcar-fixed` with 3 of 10 observed, p* = 0.5,
ε = 1, δ = 1e-5). Empirical (α, β) points from the main run — each a box from the plug-in
estimate to its upper confidence corner (α_hi, β_hi), all corners simultaneously valid at 95 %
by a Bonferroni correction — against G_μ of the mechanism
without missingness, Theorem 4.7's f_{ε',δ'}, the §7 curve C_{p*}(G_{μ̃}) and the pair's exact
curve. Every box must lie above the §7 curve (its top-right corner (α_hi, β_hi) is the point
the violation test uses). Beside it, the seed example ε = 3, δ = 0.1, p = 0.2.

The figure draws the Gaussian curves and boxes as differences from the stored §7 curve
(:func:`box_outline`, :func:`corner_heights`): on the raw axes they share a band 0.07 wide and
the boxes, about 1e-3 across, cannot be seen.
"""

from __future__ import annotations

import numpy as np

from experiments.common import base, check_size, config, record, variant
from experiments.plotting import legend_below, num

NAME = "tradeoff_curves"
TITLE = "Trade-off curves: empirical boxes against G_μ, Theorem 4.7 and §7"
CAPTION = """\
Gaussian audit (sum query, d = 10, mcar-fixed with 3 of 10 observed, p* = 0.5, ε = 1, δ =
1e-5). (a) The trade-off curves as stored: G_μ without missingness, Theorem 4.7's f_(ε',δ'),
the §7 curve C_p*(G_μ̃) and the exact pair curve; at this scale they lie in a thin band and the
exact-pair curve covers the §7 curve. (b) Each curve minus the §7 curve, on the α grid all
stored curves share (so the differences are exact there): G_μ and Theorem 4.7 lie up to 0.07
below §7; the exact-pair curve lies on zero, drawn over the §7 line. (c) Zoom: each empirical
box runs from the plug-in estimate (α̂, β̂) to its upper confidence corner (α_hi, β_hi), all
corners simultaneously valid at 95 % (Bonferroni); the §7 curve, linearly interpolated on the
shared grid, is subtracted at every point of the box outline, so a box is at most 5e-4 wide in
α and shows as a slanted bar. Each threshold is tested in both orders, T(P, Q) and T(Q, P) (two
colours, nearly the same α; §7 is symmetric). An upper corner below zero would be a violation
of §7 at 95 %; the lowest lies {margin} the §7 curve. The exact-pair curve is a rigorous
lower bound on T(P, Q) that may sit up to about 1e-4 below the true curve, which is why it dips
below zero near α = 0.5. (d) The seed example ε = 3, δ = 0.1, p = 0.2, raw curves.
"""
TRIALS = {"smoke": 20_000, "default": 10_000_000, "full": 200_000_000}
N_THRESHOLDS = 12
REFERENCE = "§7"  # the Gaussian panel's curves are drawn as differences from the curve so named


def alpha_grid(n: int = 400) -> np.ndarray:
    """α grid dense near 0 and 1 (docs/THEORY.md §6: steep curves need log-spaced ends)."""
    tail = np.logspace(-8, np.log10(0.05), n // 4)
    mid = np.linspace(0.05, 0.95, n // 2)
    return np.unique(np.concatenate([[0.0], tail, mid, 1.0 - tail[::-1], [1.0]]))


def _curve(f, alphas: np.ndarray) -> dict:
    from audit.theory import accountant as acc

    return {"alpha": alphas.tolist(), "beta": np.asarray(f(alphas), dtype=float).tolist(),
            "min_error_sum": float(acc.min_error_sum(f))}


def _gaussian_panel(size: str, seed: int, jobs: int, progress: bool) -> dict:
    from audit.pipeline.runner import run_tradeoff_audit
    from audit.theory import accountant as acc
    from audit.theory.pair import pair_tradeoff

    doc = variant(base("gaussian_fixed"), **{"audit.trials": TRIALS[size], "audit.seed": seed,
                                             "audit.jobs": jobs})
    cfg = config(doc, NAME)
    ta = run_tradeoff_audit(cfg, n_thresholds=N_THRESHOLDS, progress=progress)
    st = ta.plan
    alphas = alpha_grid()
    mu_base = st.sensitivity / st.noise_scale
    eps_p, delta_p = acc.gaussian_fwl_bound(cfg.scenario.epsilon, cfg.scenario.delta, st.p_star,
                                            st.sensitivity_tilde / st.sensitivity)
    curves = {
        f"G_μ, no missingness (μ = {mu_base:.3f})": _curve(acc.tradeoff_gaussian(mu_base), alphas),
        f"Theorem 4.7: f_(ε'={eps_p:.3f}, δ'={delta_p:.1e})":
            _curve(acc.tradeoff_dp(eps_p, delta_p), alphas),
        "§7: C_p*(G_μ̃)": _curve(st.fdp_curve, alphas),
        "exact pair T(P, Q)": _curve(pair_tradeoff(st.P, st.Q), alphas),
    }
    points = [
        {"order": o, "threshold": float(t), "alpha_hat": float(a), "beta_hat": float(b),
         "alpha_hi": float(ah), "beta_hi": float(bh)}
        for o, t, a, b, ah, bh in zip(ta.points.order, ta.points.thresholds,
                                      ta.points.alpha_hat, ta.points.beta_hat,
                                      ta.points.alpha_hi, ta.points.beta_hi, strict=True)
    ]
    return {
        "title": f"p* = {st.p_star}, ρ = {st.rho}, {cfg.audit.trials:,} trials",
        "trials": cfg.audit.trials, "confidence": cfg.audit.level,
        "points": points, "curves": curves, "fdp_violation": ta.fdp_violation,
        "p_star": st.p_star, "rho": st.rho, "sigma": st.noise_scale, "seconds": ta.seconds,
    }


def _seed_panel() -> dict:
    from audit.theory import accountant as acc

    eps, delta, p = 3.0, 0.1, 0.2
    alphas = alpha_grid()
    eps_p, delta_p = acc.amplify(eps, delta, p)
    f = acc.tradeoff_dp(eps, delta)
    return {
        "title": "Seed example: ε = 3, δ = 0.1, p = 0.2",
        "curves": {
            "f_(ε,δ), no subsampling": _curve(f, alphas),
            f"classical f_(ε'={eps_p:.4f}, δ'={delta_p:.2f})":
                _curve(acc.tradeoff_dp(eps_p, delta_p), alphas),
            "C_p(f_(ε,δ)) (Corollary 4.3)": _curve(acc.amplify_tradeoff(f, p), alphas),
        },
    }


def run(size: str = "default", seed: int = 3, jobs: int = 1, progress: bool = False) -> dict:
    check_size(size)
    g = _gaussian_panel(size, seed, jobs, progress)
    return record(NAME, TITLE, size, seed, gaussian=g, seed_example=_seed_panel(),
                  findings=_findings(g))


def margin_text(g: dict) -> str:
    """How far the lowest upper box corner lies from the §7 curve, as the caption, the zoom
    panel's title and the findings all print it: ``"3.0e-04 above"`` (or ``"... below"``,
    a violation at 95 %), from the runner's ``fdp_violation`` (the §7 curve's largest excess
    over a corner, computed against the exact curve)."""
    v = -num(g.get("fdp_violation"))
    if not np.isfinite(v):
        return "at an unknown distance from"
    return f"{abs(v):.1e} {'above' if v >= 0 else 'below'}"


def caption(doc: dict) -> str:
    """The caption, with the lowest corner's margin read from the results."""
    return CAPTION.replace("{margin}", margin_text(doc["gaussian"]))


def _findings(g: dict) -> list[str]:
    verdict = ("a VIOLATION of §7 at 95 %" if -num(g.get("fdp_violation")) < 0
               else "below it would be a violation at 95 %")
    return [f"- The lowest empirical upper box corner lies {margin_text(g)} the §7 curve "
            f"({verdict})."]


def report_findings(doc: dict) -> list[str]:
    """The findings, worded from the stored numbers with the caption's format."""
    return _findings(doc["gaussian"])


def shared_grid(curves: dict) -> np.ndarray:
    """The α grid every stored curve of a panel shares; ``ValueError`` if they differ."""
    grids = [np.asarray(c["alpha"], dtype=float) for c in curves.values()]
    if any(not np.array_equal(g, grids[0]) for g in grids[1:]):
        raise ValueError("the curves of a trade-off panel must share one alpha grid")
    return grids[0]


def reference_key(curves: dict, prefix: str = REFERENCE) -> str:
    """The label of the one curve whose label starts with ``prefix``."""
    keys = [k for k in curves if k.startswith(prefix)]
    if len(keys) != 1:
        raise ValueError(f"expected one curve labelled {prefix!r}..., got {keys}")
    return keys[0]


def box_outline(point: dict, alpha: np.ndarray, ref: np.ndarray):
    """Outline of one empirical box in (α, β − ref(α)) coordinates.

    The box is [α̂, α_hi] × [β̂, β_hi]; ``ref`` is the reference curve on the grid ``alpha``,
    linearly interpolated between grid points. The horizontal edges keep every grid point
    inside [α̂, α_hi], so the outline is exact for the interpolated reference.
    """
    a_lo, a_hi = num(point["alpha_hat"]), num(point["alpha_hi"])
    b_lo, b_hi = num(point["beta_hat"]), num(point["beta_hi"])
    inner = alpha[(alpha > a_lo) & (alpha < a_hi)]
    a_edge = np.concatenate([[a_lo], inner, [a_hi]])
    xs = np.concatenate([a_edge, a_edge[::-1], [a_lo]])
    ys = np.concatenate([np.full(a_edge.size, b_lo), np.full(a_edge.size, b_hi), [b_lo]])
    return xs, ys - np.interp(xs, alpha, ref)


def corner_heights(points: list[dict], alpha: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """β_hi − ref(α_hi) for every box: negative means the upper corner violates ``ref``."""
    a_hi = np.array([num(p["alpha_hi"]) for p in points])
    b_hi = np.array([num(p["beta_hi"]) for p in points])
    return b_hi - np.interp(a_hi, alpha, ref)


_COLORS = ("0.5", "tab:blue", "tab:green", "tab:red")


def _raw_panel(ax, panel: dict, *, with_min_sum: bool):
    for (label, c), color in zip(panel["curves"].items(), _COLORS, strict=False):
        if with_min_sum:
            label = f"{label}: min α+β = {c['min_error_sum']:.4f}"
        ax.plot(c["alpha"], c["beta"], color=color, label=label)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel("type I error α")
    ax.set_ylabel("type II error β")
    ax.grid(alpha=0.3)


def _zoom_panel(ax, g: dict, alpha: np.ndarray, ref: np.ndarray, diffs: dict) -> dict:
    """The boxes in (α, β − §7) coordinates, one colour per test order.

    Returns the colour of each test order, for the legend.
    """
    from matplotlib.patches import Polygon

    heights = corner_heights(g["points"], alpha, ref)
    # Tests in both orders give two boxes at almost the same α: one colour per order.
    orders = dict.fromkeys(p["order"] for p in g["points"])
    order_color = dict(zip(orders, ("k", "tab:purple", "tab:brown"), strict=False))
    lows = []
    for p, h in zip(g["points"], heights, strict=True):
        xs, ys = box_outline(p, alpha, ref)
        lows.append(ys.min())
        color = order_color.get(p["order"], "k")
        ax.add_patch(Polygon(np.column_stack([xs, ys]), closed=True, fill=False, ec=color,
                             lw=1.0, zorder=4))
        ax.plot([num(p["alpha_hi"])], [h], ".", color=color, ms=6, zorder=5)
    pair = next(d for k, d in diffs.items() if k.startswith("exact pair"))
    lo = min(min(lows), float(np.min(pair)), 0.0)
    hi = max(float(np.max(heights)), float(np.max(pair)))
    pad = 0.1 * (hi - lo)
    ax.set_ylim(lo - pad, hi + pad)
    ax.axhspan(lo - pad, 0.0, color="tab:red", alpha=0.07, lw=0)
    ax.text(0.5, lo - 0.55 * pad, "below the §7 curve: a violation at 95 %", ha="center",
            va="center", fontsize=8, color="tab:red")
    ax.set_title(f"(c) Zoom on the boxes: β minus the §7 curve; the lowest upper corner lies "
                 f"{margin_text(g)} it", fontsize=10)
    return order_color


def draw(doc: dict, fig) -> None:
    g, s = doc["gaussian"], doc["seed_example"]
    fig.set_size_inches(13, 9.6)
    axd = fig.subplot_mosaic([["raw", "diff", "seed"], ["zoom", "zoom", "zoom"]],
                             width_ratios=[1, 1.25, 1], height_ratios=[1, 1.05])
    alpha = shared_grid(g["curves"])
    ref_key = reference_key(g["curves"])
    ref = np.asarray(g["curves"][ref_key]["beta"], dtype=float)
    diffs = {k: np.asarray(c["beta"], dtype=float) - ref for k, c in g["curves"].items()}

    # (a) the stored curves; (b) each minus §7; (c) the boxes against §7 and the exact pair.
    _raw_panel(axd["raw"], g, with_min_sum=False)
    axd["raw"].set_title(f"(a) Gaussian audit, {g['title']}", fontsize=10)
    for (key, d), color in zip(diffs.items(), _COLORS, strict=False):
        # the reference (zero) is wide and below, so the exact pair on it stays visible
        style = {"color": color, "lw": 3.0, "zorder": 2} if key == ref_key else \
            {"color": color, "lw": 1.5, "zorder": 3}
        axd["diff"].plot(alpha, d, **style)
        if key == ref_key or key.startswith("exact pair"):
            axd["zoom"].plot(alpha, d, **style)
    axd["diff"].plot([num(p["alpha_hi"]) for p in g["points"]],
                     corner_heights(g["points"], alpha, ref), "k.", ms=4, zorder=4)
    axd["diff"].set_title("(b) β minus the §7 curve (dots: upper box corners)", fontsize=10)
    order_color = _zoom_panel(axd["zoom"], g, alpha, ref, diffs)
    for order, color in order_color.items():
        axd["raw"].plot([], [], "s", color=color, mfc="none", ms=7,
                        label=f"box, test of {order}: estimate (α̂, β̂) to upper corner "
                              "(α_hi, β_hi, dot), 95 % jointly")
    for key in ("diff", "zoom"):
        axd[key].set_xlim(0, 1)
        axd[key].set_xlabel("type I error α")
        axd[key].set_ylabel("β − §7 curve at the same α")
        axd[key].grid(alpha=0.3)
        axd[key].ticklabel_format(axis="y", style="plain", useOffset=False)
    legend_below(fig, [axd["raw"]], ncol=2)

    _raw_panel(axd["seed"], s, with_min_sum=True)
    axd["seed"].set_title(f"(d) {s['title']}", fontsize=10)
    axd["seed"].legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8,
                       frameon=False)
