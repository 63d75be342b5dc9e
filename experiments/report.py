"""Figures and ``results/REPORT.md`` drawn from saved results only.

Nothing here samples or recomputes an audit: every number plotted is read from a
``results/<experiment>.json`` file written by :mod:`experiments.suite`. Each experiment module
draws its own figure (``draw(doc, fig)``) and says what it shows (``TITLE``, ``CAPTION``); this
module only walks :data:`experiments.EXPERIMENTS`, hands each one a blank
:class:`matplotlib.figure.Figure` and saves it as PNG (for the markdown report) and PDF (for
the paper). No pyplot and no backend selection: a bare ``Figure`` renders with Agg on save.
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure

from audit.pipeline.results import load_json
from experiments import EXPERIMENTS
from experiments.plotting import num

__all__ = ["render", "save_figure", "write_report", "FORMATS"]

FORMATS = ("png", "pdf")
_PNG_DPI = 110


def render(name: str, doc: dict) -> Figure:
    """A new figure of experiment ``name`` drawn from its results document ``doc``."""
    fig = Figure(layout="constrained")
    EXPERIMENTS[name].draw(doc, fig)
    return fig


def save_figure(fig: Figure, stem: str | Path) -> list[Path]:
    """Save ``fig`` as ``<stem>.png`` and ``<stem>.pdf``; return the paths written."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        path = stem.with_suffix(f".{fmt}")
        # PDFs carry a creation date by default; without it a redraw is byte-identical.
        meta = {"CreationDate": None} if fmt == "pdf" else {}
        fig.savefig(path, dpi=_PNG_DPI, metadata=meta)
        paths.append(path)
    return paths


def _rows(doc: dict) -> list[dict]:
    if "rows" in doc:
        return doc["rows"]
    if "series" in doc:
        return [r for s in doc["series"].values() for r in s["rows"]]
    return []


def _fmt(v) -> str:
    v = num(v)
    return "n/a" if not math.isfinite(v) else f"{v:.4f}"


def _fmt_point(v) -> str:
    v = num(v)
    return "∞" if v == math.inf else _fmt(v)


def _refuted(r: dict) -> str:
    claims = [label for key, label in (("claim_refuted", "claim"),
                                       ("amplified_refuted", "amplified claim")) if r.get(key)]
    return ", ".join(claims) or "—"


def _claim_table(rows: list[dict]) -> list[str]:
    """Markdown rows of implementation audits: the claim in place of ε_pair and ε_fdp."""
    out = ["| audit | calls per side | p* | ε_lower | ε_point | claimed ε | ε_theory (claim "
           "amplified) | δ | refuted |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['name']} | {r['trials']:,} | {num(r['p_star']):.3g} | "
                   f"{_fmt(r['eps_lower'])} | {_fmt_point(r['eps_point'])} | "
                   f"{_fmt(r['eps_claim'])} | {_fmt(r['eps_theory'])} | "
                   f"{num(r['delta']):.2g} | {_refuted(r)} |")
    return out


def _table(doc: dict) -> list[str]:
    """Markdown rows of every audit in an experiment (ε columns)."""
    rows = _rows(doc)
    if not rows:
        return []
    if all(r.get("eps_claim") is not None for r in rows):
        return _claim_table(rows)
    out = ["| audit | trials | ε_lower | ε_pair | ε_theory | ε_fdp | δ |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['name']} | {r['trials']:,} | {_fmt(r['eps_lower'])} | "
                   f"{_fmt(r['eps_pair'])} | {_fmt(r['eps_theory'])} | {_fmt(r['eps_fdp'])} | "
                   f"{num(r['delta']):.2g} |")
    return out


def _versions_table(docs: dict[str, dict]) -> list[str]:
    """Package versions as a markdown table, one row per distinct set of versions."""
    packages = list(dict.fromkeys(p for d in docs.values() for p in d.get("versions", {})))
    if not packages:
        return []
    groups: dict[tuple, list[str]] = {}
    for name, d in docs.items():
        v = d.get("versions", {})
        groups.setdefault(tuple(str(v.get(p, "n/a")) for p in packages), []).append(name)
    out = ["| experiments | " + " | ".join(packages) + " |",
           "|---|" + "---|" * len(packages)]
    for versions, names in groups.items():
        who = "all" if len(groups) == 1 else ", ".join(names)
        out.append(f"| {who} | " + " | ".join(versions) + " |")
    return out


def write_report(results_dir: str | Path = "results") -> Path:
    """Draw every figure whose results exist and write ``REPORT.md``; return its path.

    Raises
    ------
    ValueError
        If ``results_dir`` is not a folder, holds no experiment's results, or a results file
        is not valid JSON.
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ValueError(f"results folder not found: {results_dir}")
    docs = {name: load_json(results_dir / f"{name}.json") for name in EXPERIMENTS
            if (results_dir / f"{name}.json").is_file()}
    if not docs:
        raise ValueError(f"no experiment results (*.json) in {results_dir}")
    lines = ["# Audit report", "",
             "Drawn by `python -m audit report` from the JSON files in this folder; every "
             "number below traces to one of them (seed and package versions inside). Each "
             "figure is saved as PNG (shown here) and PDF.", ""]
    for name, doc in docs.items():
        module = EXPERIMENTS[name]
        fig = render(name, doc)
        png, pdf = save_figure(fig, results_dir / "figures" / name)
        lines += [f"## {module.TITLE}", "",
                  " ".join(module.CAPTION.split()), "",
                  f"Size `{doc.get('size')}`, seed {doc.get('seed')}, "
                  f"{num(doc.get('seconds', math.nan)):.0f} s.", "",
                  f"![{name}](figures/{png.name}) ([PDF](figures/{pdf.name}))", ""]
        lines += [*doc.get("findings", []), ""] if doc.get("findings") else []
        lines += [*_table(doc), ""]
    lines += ["## Package versions", "", *_versions_table(docs), ""]
    out = results_dir / "REPORT.md"
    out.write_text("\n".join(lines))
    return out
