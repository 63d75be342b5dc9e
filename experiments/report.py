"""Figures and ``results/REPORT.md`` drawn from saved results only.

Nothing here samples or recomputes an audit: every number plotted is read from a
``results/<experiment>.json`` file written by :mod:`experiments.suite`. Each experiment module
draws its own figure (``draw(doc, fig)``) and says what it shows (``TITLE``, ``CAPTION``, or
``caption(doc)`` where the caption quotes a number of the results; ``report_findings(doc)``
where the findings are worded at report time); this module only walks
:data:`experiments.EXPERIMENTS`, hands each one a blank :class:`matplotlib.figure.Figure` and
saves it as PNG (for the markdown report) and PDF (for the paper). No pyplot and no backend
selection: a bare ``Figure`` renders with Agg on save.

Every file is written atomically (a temporary file in the same folder, then a rename), so a
full disk or an interruption leaves the previous file or none, never a truncated one. Every
results document is checked, and every figure drawn in memory, before the first file is
written: a results file of the wrong shape is a ``ValueError`` naming it and writes nothing.
Run times (``seconds``) stay in the JSON files: REPORT.md of a seeded rerun is byte-identical.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

from audit.pipeline.results import load_json
from experiments import EXPERIMENTS
from experiments.plotting import num

__all__ = ["render", "save_figure", "write_report", "report_text", "check_document",
           "caption", "atomic_write", "write_error_line", "FORMATS", "GLOSSARY"]

FORMATS = ("png", "pdf")
_PNG_DPI = 110

#: the audited DP libraries, in the order the versions table lists them
_DP_LIBRARIES = ("diffprivlib", "opendp", "pipeline-dp", "python-dp")

GLOSSARY = (
    "- **ε_lower**: the audit's lower bound on the ε of the audited pair, a one-sided "
    "Clopper–Pearson bound at 95 % (THEORY §8.1); for a correct release ε_lower ≤ ε_pair with "
    "probability ≥ 95 %.",
    "- **ε_point**: the plug-in point estimate of the same quantity (the main run's "
    "frequencies in place of their confidence bounds). A point estimate, not a bound: it may "
    "lie above the exact ε or be negative.",
    "- **ε_pair**: the exact ε of the audited neighbouring pair at the audited δ, from its two "
    "output laws (THEORY §8, §8.3).",
    "- **ε_theory**: the ε of the [RPS] theorem that applies (3.2, 4.5 or 4.7; THEORY §3, §5); "
    "for a library audit, its claim amplified by Theorem 3.2.",
    "- **ε_fdp**: the ε that the f-DP curve of §7 implies at the audited δ.",
    "- **ε_base**: the ε of the same release without missingness.",
    "- **§7**: THEORY §7, the f-DP amplification by missing data derived in this project (not "
    "peer-reviewed, so every audit tests it): the release is C_p*(f)-DP, refined through ρ "
    "for feature-wise Lipschitz queries.",
    "- **C_p*(f)**: the [DRS] subsampling operator at rate p* applied to the trade-off curve f "
    "(THEORY §6); C_p*(G_μ̃) is the §7 curve of a Gaussian release.",
    "- **D0**: the missingness mechanism of the [RPS] Appendix B.3 counterexample: it never "
    "masks the feature j0 the query reads, so p* = 1 and there is no amplification "
    "(THEORY §3.1; the `never-mask` config).",
    "- **p***: the probability that the differing record is at least partially observed "
    "(THEORY §2).",
    "- **ρ**: an almost-sure bound on the observed fraction of a record's features (THEORY §4).",
    "- **MCAR / MAR / MNAR**: missing completely at random / at random / not at random, "
    "Rubin's classes (THEORY §1); no theorem covers MNAR.",
)


def render(name: str, doc: dict) -> Figure:
    """A new figure of experiment ``name`` drawn from its results document ``doc``."""
    fig = Figure(layout="constrained")
    EXPERIMENTS[name].draw(doc, fig)
    return fig


def atomic_write(path: str | Path, write: Callable) -> Path:
    """Write ``path`` through a temporary file in its folder, then rename it into place
    (:func:`audit.pipeline.results.atomic_write`, imported on first use: importing the
    experiments loads no estimation code)."""
    from audit.pipeline.results import atomic_write as write_atomically

    return write_atomically(path, write)


def report_or_status(results, log=None) -> tuple[Path | None, int]:
    """Draw the report of ``results`` for a command: (its path, 0), or (None, the exit
    status) after printing one ``error:`` line (2: a results file of the wrong shape; 3: a
    file that could not be written). ``log``: as :func:`write_report`."""
    import sys

    try:
        return write_report(results, log=log), 0
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return None, 2
    except OSError as exc:
        print(write_error_line(exc), file=sys.stderr)
        return None, 3


def write_error_line(exc: OSError) -> str:
    """The one ``error:`` line a command prints when writing the report fails."""
    where = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc)
    return f"error: could not write{where}: {reason}; the results JSON files are kept"


def save_figure(fig: Figure, stem: str | Path) -> list[Path]:
    """Save ``fig`` as ``<stem>.png`` and ``<stem>.pdf`` (each atomically); return the paths."""
    stem = Path(stem)
    paths = []
    for fmt in FORMATS:
        # PDFs carry a creation date by default; without it a redraw is byte-identical.
        meta = {"CreationDate": None} if fmt == "pdf" else {}
        paths.append(atomic_write(stem.with_suffix(f".{fmt}"), lambda fh, fmt=fmt, meta=meta:
                                  fig.savefig(fh, format=fmt, dpi=_PNG_DPI, metadata=meta)))
    return paths


# --- the shape of a results document ---------------------------------------------------------

_ROW_NUMBERS = ("eps_lower", "eps_pair", "eps_theory", "eps_fdp", "delta")


def _is_number(v) -> bool:
    if isinstance(v, bool):
        return False
    return v is None or isinstance(v, int | float) or v in ("inf", "-inf", "nan")


def _check_rows(rows, where: str) -> None:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{where} must be a list of objects (one per audit), got "
                         f"{type(rows).__name__}")
    for i, r in enumerate(rows):
        keys = ("name", "trials", *_ROW_NUMBERS)
        if r.get("eps_claim") is not None:
            keys += ("eps_point", "eps_claim", "p_star")
        missing = [k for k in keys if k not in r]
        if missing:
            raise ValueError(f"{where}[{i}] is missing key {missing[0]!r}")
        if not isinstance(r["name"], str):
            raise ValueError(f"{where}[{i}]['name'] must be a string, got {r['name']!r}")
        if isinstance(r["trials"], bool) or not isinstance(r["trials"], int):
            raise ValueError(f"{where}[{i}]['trials'] must be an integer, got {r['trials']!r}")
        for k in keys[2:]:
            if not _is_number(r[k]):
                raise ValueError(f"{where}[{i}][{k!r}] must be a number, got {r[k]!r}")


def check_document(name: str, doc) -> dict:
    """``doc`` if it has the shape of experiment ``name``'s results, else ``ValueError``
    saying what is wrong (the caller adds the file)."""
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object (one experiment's results), got a "
                         f"{type(doc).__name__}")
    for key, kind, shown in (("experiment", str, "a string"), ("size", str, "a string"),
                             ("seed", int, "an integer"), ("versions", dict, "an object")):
        if key not in doc:
            raise ValueError(f"missing key {key!r}")
        if not isinstance(doc[key], kind) or isinstance(doc[key], bool):
            raise ValueError(f"key {key!r} must be {shown}, got {doc[key]!r}")
    if doc["experiment"] != name:
        raise ValueError(f"it holds the results of {doc['experiment']!r}, not {name!r}")
    if not all(isinstance(v, str) for v in doc["versions"].values()):
        raise ValueError("key 'versions' must map package names to version strings")
    findings = doc.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        raise ValueError("key 'findings' must be a list of strings")
    if "rows" in doc:
        _check_rows(doc["rows"], "rows")
    if "series" in doc:
        if not isinstance(doc["series"], dict):
            raise ValueError(f"key 'series' must be an object, got "
                             f"{type(doc['series']).__name__}")
        for key, s in doc["series"].items():
            if not isinstance(s, dict) or "rows" not in s:
                raise ValueError(f"series[{key!r}] must be an object with key 'rows'")
            _check_rows(s["rows"], f"series[{key!r}]['rows']")
    return doc


def _shape_error(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"missing key {exc.args[0]!r}"
    return " ".join(str(exc).split()) or type(exc).__name__


# --- markdown ----------------------------------------------------------------------------------

def _rows(doc: dict) -> list[dict]:
    if "rows" in doc:
        return doc["rows"]
    if "series" in doc:
        return [r for s in doc["series"].values() for r in s["rows"]]
    return []


def _fmt(v) -> str:
    v = num(v)
    return "n/a" if not math.isfinite(v) else f"{v:.4f}"


def _fmt_point(r: dict) -> str:
    """ε_point as it is (∞, or negative), marked † where it lies above the exact ε."""
    v = num(r["eps_point"])
    if v == math.inf:
        return "∞"
    text = _fmt(v) + (" (negative)" if v < 0 else "")
    return text + (" †" if v > num(r.get("eps_exact")) else "")


def _point_note(rows: list[dict]) -> list[str]:
    """What the plug-in column is, with the rows where it is negative or above the exact ε."""
    neg = [r for r in rows if num(r["eps_point"]) < 0]
    above = [r for r in rows if math.isfinite(num(r["eps_point"]))
             and num(r["eps_point"]) > num(r.get("eps_exact"))]
    note = ("ε_point is the plug-in point estimate (the main run's frequencies in place of "
            "their confidence bounds), not a bound in either direction; only ε_lower is a "
            "bound.")
    if neg:
        note += (" A negative ε_point means the region was seen less often on the side it "
                 "was chosen for than on the other (here: "
                 + ", ".join(f"{r['name']}: {num(r['eps_point']):.4f}" for r in neg) + ").")
    if above:
        note += (" † marks an ε_point above the exact ε of the audited pair (here: "
                 + ", ".join(f"{r['name']}: {num(r['eps_point']):.4f} against "
                             f"{num(r['eps_exact']):.4f}" for r in above) + ").")
    return ["", note]


def _refuted(r: dict) -> str:
    claims = [label for key, label in (("claim_refuted", "claim"),
                                       ("amplified_refuted", "amplified claim")) if r.get(key)]
    return ", ".join(claims) or "—"


def _claim_table(rows: list[dict]) -> list[str]:
    """Markdown rows of implementation audits: the claim in place of ε_pair and ε_fdp."""
    out = ["| audit | calls per side | p* | ε_lower | ε_point (plug-in, not a bound) | "
           "claimed ε | ε_theory (claim amplified) | δ | refuted |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['name']} | {r['trials']:,} | {num(r['p_star']):.3g} | "
                   f"{_fmt(r['eps_lower'])} | {_fmt_point(r)} | "
                   f"{_fmt(r['eps_claim'])} | {_fmt(r['eps_theory'])} | "
                   f"{num(r['delta']):.2g} | {_refuted(r)} |")
    return out + _point_note(rows)


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


def _libraries_table(docs: dict[str, dict]) -> list[str]:
    """The DP libraries audited as black boxes, with the versions the results record."""
    recorded = {name: d["library_versions"] for name, d in docs.items()
                if isinstance(d.get("library_versions"), dict)}
    if not recorded:
        return []
    libraries = list(dict.fromkeys([*_DP_LIBRARIES, *(p for v in recorded.values() for p in v)]))
    out = ["", "DP libraries audited (and the packages they use), as recorded by the "
           "experiments that audit them:", "",
           "| library | version | recorded by |", "|---|---|---|"]
    for lib in libraries:
        by = {name: str(v[lib]) for name, v in recorded.items() if lib in v}
        versions = ", ".join(dict.fromkeys(by.values())) or "not recorded"
        out.append(f"| {lib} | {versions} | {', '.join(by) or '—'} |")
    return out


def caption(name: str, doc: dict) -> str:
    """The caption of experiment ``name``'s figure, on one line (``caption(doc)`` where the
    module defines one, so that a number it quotes is read from the results)."""
    module = EXPERIMENTS[name]
    text = module.caption(doc) if hasattr(module, "caption") else module.CAPTION
    return " ".join(text.split())


def _findings(name: str, doc: dict) -> list[str]:
    module = EXPERIMENTS[name]
    if hasattr(module, "report_findings"):
        return list(module.report_findings(doc))
    return list(doc.get("findings", []))


def _section(name: str, doc: dict) -> list[str]:
    module = EXPERIMENTS[name]
    lines = [f"## {module.TITLE}", "", caption(name, doc), "",
             f"Size `{doc['size']}`, seed {doc['seed']}{_produced(doc)}.", "",
             f"![{name}](figures/{name}.png) ([PDF](figures/{name}.pdf))", ""]
    findings = _findings(name, doc)
    lines += [*findings, ""] if findings else []
    return lines + [*_table(doc), ""]


def _produced(doc: dict) -> str:
    """``, commit abc, 2026-12-03`` from the document's provenance (nothing for results
    written before it was recorded)."""
    p = doc.get("produced")
    if not isinstance(p, dict):
        return ""
    dirty = " with uncommitted changes" if p.get("dirty") else ""
    return f", commit `{p.get('commit', 'unknown')}`{dirty}, {p.get('date', 'undated')}"


def report_text(docs: dict[str, dict]) -> str:
    """The markdown of REPORT.md for the results documents ``docs`` (by experiment name).

    Pure: it reads no file and no clock. Run times (``seconds``, ``timings``) are not part of
    it, so two runs with the same seeds give the same text.
    """
    lines = ["# Audit report", "",
             "Drawn by `python -m audit report` from the JSON files in this folder; every "
             "number below traces to one of them (seed, commit, date and package versions "
             "inside; run times too, which this page leaves out so that a rerun of the seeded "
             "experiments on an unchanged tree leaves it unchanged, on any CPU: the commit and "
             "date are those of the last change to the code; except the audits of libraries "
             "that draw their own noise and cannot be seeded, OpenDP, PipelineDP, python-dp, "
             "SmartNoise SQL, Tumult Analytics and dpmm, whose rows move from run to run within "
             "their confidence). Each figure is "
             "saved as PNG (shown here) and PDF.", "",
             "Definitions, theorems and derivations: [docs/THEORY.md](../docs/THEORY.md) "
             "(§8 says what the audit's numbers mean). Glossary:", "", *GLOSSARY, ""]
    for name, doc in docs.items():
        lines += _section(name, doc)
    lines += ["## Package versions", "", *_versions_table(docs), *_libraries_table(docs), ""]
    return "\n".join(lines)


def _load(results_dir: Path) -> dict[str, dict]:
    docs = {}
    for name in EXPERIMENTS:
        path = results_dir / f"{name}.json"
        if path.is_file():
            doc = load_json(path)
            try:
                docs[name] = check_document(name, doc)
            except ValueError as exc:
                raise ValueError(f"result file {path} has the wrong shape: {exc}") from None
    return docs


def write_report(results_dir: str | Path = "results", log=None) -> Path:
    """Draw every figure whose results exist and write ``REPORT.md``; return its path.

    ``log`` (e.g. ``print``) is told of each figure as it is drawn and of the files being
    written (``[report] 3/11 counterexample: drawn``), so a slow report says where it is.

    Every document is checked and every figure drawn before the first file is written; each
    file is then written atomically (:func:`atomic_write`).

    Raises
    ------
    ValueError
        If ``results_dir`` is not a folder, holds no experiment's results, or a results file
        is not valid JSON or not of its experiment's shape (the message names the file).
    OSError
        If a figure or REPORT.md cannot be written (``filename`` is the file; the results
        JSON files are untouched and no partial file is left).
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ValueError(f"results folder not found: {results_dir}")
    docs = _load(results_dir)
    if not docs:
        raise ValueError(f"no experiment results (*.json) in {results_dir}")
    figures = {}
    for i, (name, doc) in enumerate(docs.items(), 1):
        try:
            figures[name] = render(name, doc)
            _section(name, doc)
        except (KeyError, TypeError, IndexError, ValueError, AttributeError) as exc:
            raise ValueError(f"result file {results_dir / f'{name}.json'} has the wrong shape: "
                             f"{_shape_error(exc)}") from None
        if log is not None:
            log(f"[report] {i}/{len(docs)} {name}: drawn")
    text = report_text(docs)
    if log is not None:
        log(f"[report] writing {len(figures)} figure{'s' * (len(figures) != 1)} "
            "(PNG and PDF) and REPORT.md")
    for name, fig in figures.items():
        save_figure(fig, results_dir / "figures" / name)
    return atomic_write(results_dir / "REPORT.md", lambda fh: _write_text(fh, text))


def _write_text(fh, text: str) -> None:
    fh.write(text.encode())
