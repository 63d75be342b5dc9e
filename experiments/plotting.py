"""Drawing helpers shared by the experiments' ``draw`` functions.

Everything here reads numbers already stored in a results document; nothing computes a bound.
Helpers take ``matplotlib`` axes and figures (object-oriented API) and never touch pyplot's
global state or select a backend, so importing this module is cheap and safe anywhere.

One style per quantity (``STYLE``) keeps a bound recognisable across figures: the RPS theorem
is a wide pale band so that a bound equal to it (the §7 bound, for Laplace) stays visible as a
dark dashed line on top; ε_pair is an open square so the ε_lower dot inside it stays visible.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np

__all__ = [
    "STYLE",
    "LOWER_LABEL",
    "num",
    "column",
    "bounds_figure",
    "bounds_panels",
    "lower_with_point",
    "bar_series",
    "grouped_bars",
    "legend_below",
]

LOWER_LABEL = "ε_lower (95 % one-sided CP), bar up to the point estimate"

# Line styles by quantity. zorder: wide bands at the back, the audit's own numbers in front.
STYLE: dict[str, dict] = {
    "thm_3_2": {"color": "tab:purple", "ls": (0, (6, 2)), "lw": 1.6, "marker": "v", "ms": 5,
                "zorder": 2},
    "eps_theory": {"color": "tab:blue", "ls": "-", "lw": 5.0, "alpha": 0.35,
                   "solid_capstyle": "butt", "zorder": 1},
    "cor_4_6": {"color": "tab:orange", "ls": ":", "lw": 2.2, "marker": "D", "ms": 4,
                "zorder": 2},
    "eps_fdp": {"color": "tab:green", "ls": (0, (4, 2)), "lw": 1.6, "marker": "^", "ms": 5,
                "mfc": "none", "zorder": 3},
    "eps_pair": {"color": "tab:red", "ls": "-", "lw": 1.0, "marker": "s", "ms": 8,
                 "mfc": "none", "mew": 1.3, "zorder": 4},
    "eps_base": {"color": "0.55"},
}

# Bar colours, by the same quantities.
BAR_COLOR = {"eps_lower": "0.15", "eps_pair": "tab:red", "eps_fdp": "tab:green",
             "eps_theory": "tab:blue", "eps_base": "0.7"}


def num(v) -> float:
    """A JSON value back to a float: ``None`` is NaN, strings such as ``"inf"`` are parsed."""
    if v is None:
        return math.nan
    return float(v)


def column(rows: list[dict], key: str) -> np.ndarray:
    """``rows[i][key]`` for every row, as floats (missing keys and ``None`` become NaN)."""
    return np.array([num(r.get(key)) for r in rows], dtype=float)


def lower_with_point(ax, x, rows: list[dict], *, scale=None, label: str | None = LOWER_LABEL):
    """ε_lower as a black dot, with a thin bar up to the plug-in point estimate ε_point.

    ``scale`` (an array like ``x``) divides both, for panels that plot ratios to ε_pair.
    """
    lo = column(rows, "eps_lower")
    pt = column(rows, "eps_point")
    if scale is not None:
        lo, pt = lo / scale, pt / scale
    ax.plot(x, lo, "o", color="k", ms=3.5, label=label, zorder=6)
    ok = np.isfinite(lo) & np.isfinite(pt)
    ax.vlines(np.asarray(x, dtype=float)[ok], lo[ok], np.maximum(lo, pt)[ok], color="k", lw=1,
              alpha=0.7, zorder=6)


def bounds_panels(ax_eps, ax_ratio, x, rows: list[dict], bounds, *, ratio_skip=()):
    """The upper bounds, ε_pair and ε_lower against ``x``; below, each divided by ε_pair.

    ``bounds`` is a sequence of ``(key, label)``: row keys drawn with ``STYLE[key]``. The ratio
    panel makes the gaps readable (a bound 5 % above ε_pair is 1.05) where the ε panel shows
    only that they are small; keys in ``ratio_skip`` (bounds far off that scale) are drawn in
    the ε panel only. Labels are set on the ε panel.
    """
    pair = column(rows, "eps_pair")
    for key, label in bounds:
        y = column(rows, key)
        ax_eps.plot(x, y, label=label, **STYLE[key])
        if key not in ratio_skip:
            ax_ratio.plot(x, y / pair, **STYLE[key])
    ax_eps.plot(x, pair, label="ε_pair (exact ε of the audited pair)", **STYLE["eps_pair"])
    ax_ratio.plot(x, np.ones_like(pair), **STYLE["eps_pair"])
    lower_with_point(ax_eps, x, rows)
    lower_with_point(ax_ratio, x, rows, scale=pair, label=None)
    ax_eps.set_ylabel("ε")
    ax_ratio.set_ylabel("ratio to ε_pair")
    for ax in (ax_eps, ax_ratio):
        ax.grid(alpha=0.3)


def bar_series(theorem: str) -> tuple[tuple[str, str], ...]:
    """The bars of one audit, lowest to highest in the usual order: ``(row key, label)``."""
    return (
        ("eps_lower", "ε_lower (95 % one-sided CP)"),
        ("eps_pair", "ε_pair (exact)"),
        ("eps_fdp", "f-DP bound (§7)"),
        ("eps_theory", f"{theorem} (ε_theory)"),
        ("eps_base", "no missingness (ε_base)"),
    )


def bounds_figure(fig, rows: list[dict], x_key: str, bounds, *, xlabel: str, title: str,
                  ratio_skip=(), ratio_log: bool = False) -> None:
    """A one-row figure: :func:`bounds_panels` against ``rows[i][x_key]``, legend below.

    ``ratio_log`` puts the ratio panel on a log scale with plain tick labels (1, 1.5, 2, ...),
    for bounds many times ε_pair.
    """
    fig.set_size_inches(11, 4.8)
    ax_eps, ax_ratio = fig.subplots(1, 2)
    bounds_panels(ax_eps, ax_ratio, column(rows, x_key), rows, bounds, ratio_skip=ratio_skip)
    if ratio_log:
        from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

        ax_ratio.set_yscale("log")
        ax_ratio.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax_ratio.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax_ratio.yaxis.set_minor_formatter(NullFormatter())
    for ax in (ax_eps, ax_ratio):
        ax.set_xlabel(xlabel)
    ax_eps.set_title(title)
    ax_ratio.set_title("Each divided by ε_pair" + (" (log scale)" if ratio_log else ""))
    legend_below(fig)


def grouped_bars(ax, rows: list[dict], series, *, label_key: str = "label", wrap: int = 14):
    """One group of bars per row, one bar per ``(key, label)`` in ``series``.

    A value that is absent (no such bound for that row, e.g. MNAR has no ε_theory) is written
    as "n/a" in its slot, so an empty slot is never mistaken for a zero. Row labels are wrapped
    onto several lines instead of rotated, so neighbours cannot collide. The y range covers
    every finite value with headroom (no bar is clipped). Returns the bars' x offsets by key.
    """
    n = len(series)
    width = 0.8 / n
    x = np.arange(len(rows), dtype=float)
    offsets = {}
    top = 0.0
    for j, (key, label) in enumerate(series):
        xs = x + (j - (n - 1) / 2) * width
        offsets[key] = xs
        y = column(rows, key)
        top = max(top, np.nanmax(y, initial=0.0))
        ax.bar(xs, np.nan_to_num(y, nan=0.0), width, label=label, color=BAR_COLOR.get(key),
               edgecolor="white", lw=0.5)
        for xi, yi in zip(xs, y, strict=True):
            if not math.isfinite(yi):
                ax.text(xi, 0.0, " n/a", rotation=90, ha="center", va="bottom", fontsize=8,
                        color=BAR_COLOR.get(key, "k"))
    ax.set_xticks(x, [textwrap.fill(r[label_key], wrap, break_on_hyphens=False,
                                    break_long_words=False) for r in rows], fontsize=8)
    ax.set_ylim(0, 1.08 * top)
    ax.set_ylabel("ε")
    ax.grid(axis="y", alpha=0.3)
    return offsets


def legend_below(fig, axes=None, *, ncol: int = 3, **kwargs):
    """One figure legend outside the axes, below them (``layout="constrained"`` makes room).

    ``axes`` (default: all) are the axes whose labelled artists are collected, once per label.
    """
    handles, labels = [], []
    for ax in axes if axes is not None else fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=8,
                      frameon=False, **kwargs)
