"""The report: every figure drawn from the committed results alone, in PNG and PDF, and each
figure's point visible (no legend on the data, no clipped data, no line silently covering
another)."""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.container import BarContainer
from matplotlib.legend import Legend

from experiments import EXPERIMENTS, tradeoff_curves
from experiments import report as report_module
from experiments.plotting import num
from experiments.report import caption, render, report_text, write_report

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
NAMES = [n for n in EXPERIMENTS if (RESULTS / f"{n}.json").is_file()]


def _doc(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def committed(tmp_path_factory) -> Path:
    """A copy of the committed results (JSON only), with the report drawn into it."""
    out = tmp_path_factory.mktemp("results")
    for name in NAMES:
        shutil.copy(RESULTS / f"{name}.json", out)
    return out


#: two small results, for the tests of how the report is written (not of what it draws)
FEW = [n for n in NAMES if n in {"mar_mnar", "mcar_iid_looseness"}]


@pytest.fixture
def few(tmp_path) -> Path:
    """A results folder holding :data:`FEW` only."""
    for name in FEW:
        shutil.copy(RESULTS / f"{name}.json", tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def drawn():
    """Every committed result rendered, laid out, with its renderer."""
    figs = {}
    for name in NAMES:
        fig = render(name, _doc(name))
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        figs[name] = (fig, canvas.get_renderer())
    return figs


def test_every_experiment_has_committed_results():
    assert NAMES == list(EXPERIMENTS)


def test_report_draws_every_committed_result_as_png_and_pdf(committed):
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
              for p in committed.glob("*.json")}
    report = write_report(committed)
    text = report.read_text()
    for name in NAMES:
        png = committed / "figures" / f"{name}.png"
        pdf = committed / "figures" / f"{name}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
        module = EXPERIMENTS[name]
        assert f"## {module.TITLE}" in text
        assert caption(name, _doc(name)) in text
        assert f"![{name}](figures/{name}.png) ([PDF](figures/{name}.pdf))" in text
    # the results are read, never written
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                      for p in committed.glob("*.json")}


def test_report_prints_package_versions_as_a_markdown_table():
    text = report_text({name: _doc(name) for name in NAMES})  # what write_report writes
    assert "{'python'" not in text
    # one column per package any result records (results written before a package was added
    # to the record show n/a), one row per distinct set of versions ("all" when only one)
    versions = {name: _doc(name)["versions"] for name in NAMES}
    packages = list(dict.fromkeys(p for v in versions.values() for p in v))
    header = "| experiments | " + " | ".join(packages) + " |"
    assert header in text
    groups: dict[tuple, list[str]] = {}
    for name, v in versions.items():
        groups.setdefault(tuple(str(v.get(p, "n/a")) for p in packages), []).append(name)
    lines = text.splitlines()
    start = lines.index(header) + 2
    rows = lines[start:start + len(groups)]
    for (values, names), row in zip(groups.items(), rows, strict=True):
        who = "all" if len(groups) == 1 else ", ".join(names)
        assert row == f"| {who} | " + " | ".join(values) + " |"
    assert start + len(groups) == len(lines) or not lines[start + len(groups)].startswith("|")


def test_report_redraws_identically(few):
    first = write_report(few).read_text()
    pdf = few / "figures" / "mar_mnar.pdf"
    pdf_bytes = pdf.read_bytes()
    pdf.unlink()
    assert write_report(few).read_text() == first
    assert pdf.read_bytes() == pdf_bytes  # no creation date or other run-dependent bytes


def test_report_loads_neither_the_simulation_nor_numba(few):
    committed = few
    code = (
        "import json, runpy, sys\n"
        f"sys.argv = ['audit', 'report', '--results', {str(committed)!r}]\n"
        "try:\n"
        "    runpy.run_module('audit', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for f in (committed / "figures").glob("*"):
        f.unlink()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=True)
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "wrote" in proc.stdout and "experiments.report" in loaded
    assert len(list((committed / "figures").glob("*.pdf"))) == len(FEW)
    assert not any(m == "numba" or m.startswith(("numba.", "audit.simulation"))
                   for m in loaded)


# --- what every figure must get right --------------------------------------------------------

def _legends(fig):
    return fig.findobj(Legend)


@pytest.mark.parametrize("name", NAMES)
def test_legends_lie_outside_every_axes(drawn, name):
    fig, renderer = drawn[name]
    legends = _legends(fig)
    assert legends, "every figure explains its marks"
    for leg, ax in itertools.product(legends, fig.axes):
        lb, ab = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
        overlap_w = min(lb.x1, ab.x1) - max(lb.x0, ab.x0)
        overlap_h = min(lb.y1, ab.y1) - max(lb.y0, ab.y0)
        assert overlap_w <= 1 or overlap_h <= 1, (name, ax.get_title())


def _inside(values, lo, hi):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    span = hi - lo
    return bool(np.all((v >= lo - 1e-9 * span) & (v <= hi + 1e-9 * span)))


@pytest.mark.parametrize("name", NAMES)
def test_no_data_outside_the_axes(drawn, name):
    fig, _ = drawn[name]
    for ax in fig.axes:
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        for line in ax.get_lines():
            if line.get_transform() != ax.transData:
                continue  # axhline/axvline: spans the axes by construction
            assert _inside(line.get_xdata(), x0, x1), (name, line.get_label())
            assert _inside(line.get_ydata(), y0, y1), (name, line.get_label())
        for coll in ax.collections:
            if isinstance(coll, LineCollection):
                for seg in coll.get_segments():
                    assert _inside(seg[:, 1], y0, y1), name
        for patch in ax.patches:
            if patch.get_transform() != ax.transData:
                continue
            verts = patch.get_verts()  # display coordinates
            data = ax.transData.inverted().transform(verts)
            assert _inside(data[:, 1], y0, y1), (name, patch)


@pytest.mark.parametrize("name", NAMES)
def test_lines_that_coincide_are_drawn_so_both_show(drawn, name):
    """Two lines with the same data: the wider one lies below, the narrower is dashed or
    much thinner, so the reader sees both (and the caption says they coincide)."""
    fig, _ = drawn[name]
    pairs = 0
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
        for a, b in itertools.combinations(lines, 2):
            xa, ya = np.asarray(a.get_xdata(), float), np.asarray(a.get_ydata(), float)
            xb, yb = np.asarray(b.get_xdata(), float), np.asarray(b.get_ydata(), float)
            if xa.shape != xb.shape or not (np.allclose(xa, xb, rtol=1e-9)
                                            and np.allclose(ya, yb, rtol=1e-9)):
                continue
            pairs += 1
            wide, narrow = sorted((a, b), key=lambda ln: -ln.get_linewidth())
            assert wide.get_zorder() < narrow.get_zorder(), (name, a.get_label())
            assert (wide.get_linewidth() >= 2 * narrow.get_linewidth()
                    or wide.get_linestyle() != narrow.get_linestyle()), name
    if name in ("amplification_vs_pstar", "mcar_iid_looseness"):
        assert pairs >= 2  # Theorem 4.5 and §7 coincide for Laplace, in both panels


def test_counterexample_draws_every_bound_including_fdp(drawn):
    fig, _ = drawn["counterexample"]
    (ax,) = fig.axes
    bars = {c.get_label(): [r.get_height() for r in c] for c in ax.containers
            if isinstance(c, BarContainer)}
    rows = _doc("counterexample")["rows"]
    assert bars["f-DP bound (§7)"] == pytest.approx([r["eps_fdp"] for r in rows])
    assert bars["Theorem 4.7 (ε_theory)"] == pytest.approx([r["eps_theory"] for r in rows])
    assert max(max(h) for h in bars.values()) < ax.get_ylim()[1]


def test_mar_mnar_writes_na_where_a_bar_is_absent(drawn):
    fig, _ = drawn["mar_mnar"]
    (ax,) = fig.axes
    rows = _doc("mar_mnar")["rows"]
    missing = [(i, k) for i, r in enumerate(rows) for k in ("eps_theory", "eps_fdp")
               if r[k] is None]
    assert len(missing) == 4  # the two MNAR rows have neither bound
    na = [t for t in ax.texts if t.get_text().strip() == "n/a"]
    assert len(na) == len(missing)
    assert sorted(round(t.get_position()[0]) for t in na) == sorted(i for i, _ in missing)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert all(max(len(part) for part in lab.splitlines()) <= 12 for lab in labels)


@pytest.mark.parametrize("name", ["amplification_vs_pstar", "amplification_vs_rho",
                                  "mcar_iid_looseness"])
def test_bounds_are_also_drawn_as_ratios_to_eps_pair(drawn, name):
    fig, _ = drawn[name]
    doc = _doc(name)
    series = list(doc["series"].values()) if "series" in doc else [doc]
    ratio_axes = [ax for ax in fig.axes if ax.get_ylabel() == "ratio to ε_pair"]
    assert len(ratio_axes) == len(series)
    for ax, s in zip(ratio_axes, series, strict=True):
        theory = np.array([r["eps_theory"] / r["eps_pair"] for r in s["rows"]])
        lower = np.array([r["eps_lower"] / r["eps_pair"] for r in s["rows"]])
        ys = [np.asarray(ln.get_ydata(), float) for ln in ax.get_lines()]
        assert any(y.shape == theory.shape and np.allclose(y, theory) for y in ys)
        assert any(y.shape == lower.shape and np.allclose(y, lower) for y in ys)
        assert any(y.shape == theory.shape and np.allclose(y, 1.0) for y in ys)


def test_attack_markers_are_dodged_so_equal_values_stay_visible(drawn):
    fig, _ = drawn["attack_comparison"]
    (ax,) = fig.axes
    attack_lines = [ln for ln in ax.get_lines() if ln.get_label() in
                    {r["attack_name"] for r in _doc("attack_comparison")["rows"]}]
    assert len(attack_lines) == 4
    last_x = [ln.get_xdata()[-1] for ln in attack_lines]
    assert len(set(np.round(last_x))) == 4
    assert len({ln.get_marker() for ln in attack_lines}) == 4


# --- the trade-off figure: differences from the §7 curve -------------------------------------

def test_tradeoff_curves_share_one_grid_and_differences_are_taken_on_it():
    doc = _doc("tradeoff_curves")
    for panel in (doc["gaussian"], doc["seed_example"]):
        grid = tradeoff_curves.shared_grid(panel["curves"])
        assert grid[0] == 0.0 and grid[-1] == 1.0 and np.all(np.diff(grid) > 0)
    bad = {"a": {"alpha": [0.0, 1.0], "beta": [1.0, 0.0]},
           "b": {"alpha": [0.0, 0.5, 1.0], "beta": [1.0, 0.5, 0.0]}}
    with pytest.raises(ValueError, match="share one alpha grid"):
        tradeoff_curves.shared_grid(bad)


def test_box_outline_subtracts_the_reference_at_every_corner():
    grid = np.linspace(0.0, 1.0, 11)
    ref = 1.0 - grid  # a line: interpolation is exact, so the corners have closed forms
    point = {"alpha_hat": 0.2, "alpha_hi": 0.3, "beta_hat": 0.75, "beta_hi": 0.8}
    xs, ys = tradeoff_curves.box_outline(point, grid, ref)
    corners = {(round(x, 12), round(y, 12)) for x, y in zip(xs, ys, strict=True)}
    assert corners == {(0.2, -0.05), (0.3, 0.05), (0.3, 0.1), (0.2, 0.0)}
    # a curved reference: the outline keeps the grid points inside the box, and every point
    # of it is (β̂ or β_hi) minus the interpolated reference at its own α
    ref2 = (1.0 - grid) ** 2
    box = {"alpha_hat": 0.15, "alpha_hi": 0.45, "beta_hat": 0.3, "beta_hi": 0.4}
    xs2, ys2 = tradeoff_curves.box_outline(box, grid, ref2)
    assert {0.2, 0.3, 0.4} <= {round(x, 12) for x in xs2}
    assert xs2.min() == 0.15 and xs2.max() == 0.45 and (xs2[0], ys2[0]) == (xs2[-1], ys2[-1])
    beta = ys2 + np.interp(xs2, grid, ref2)
    assert np.all(np.isclose(beta, 0.3) | np.isclose(beta, 0.4))
    assert np.isclose(beta, 0.3).sum() >= 5 and np.isclose(beta, 0.4).sum() >= 5


def test_lowest_box_corner_matches_the_stored_fdp_violation():
    g = _doc("tradeoff_curves")["gaussian"]
    ref_key = tradeoff_curves.reference_key(g["curves"])
    assert ref_key.startswith("§7")
    grid = tradeoff_curves.shared_grid(g["curves"])
    heights = tradeoff_curves.corner_heights(g["points"], grid,
                                             np.asarray(g["curves"][ref_key]["beta"]))
    # the runner computed fdp_violation against the exact §7 curve; here it is interpolated
    assert -heights.min() == pytest.approx(g["fdp_violation"], abs=1e-5)
    assert math.isfinite(heights.min()) and heights.min() > 0


def test_tradeoff_figure_zoom_panel_shows_every_box(drawn):
    fig, _ = drawn["tradeoff_curves"]
    g = _doc("tradeoff_curves")["gaussian"]
    zoom = [ax for ax in fig.axes if ax.get_title().startswith("(c)")]
    assert len(zoom) == 1
    polygons = [p for p in zoom[0].patches if p.get_transform() == zoom[0].transData
                and len(p.get_xy()) >= 5]
    assert len(polygons) == len(g["points"])
    lo, hi = zoom[0].get_ylim()
    assert hi - lo < 0.01  # zoomed: the boxes (about 1e-3 tall) fill the panel


# --- files are written atomically --------------------------------------------------------------

def _full_disk_on(fmt: str):
    """A Figure.savefig that writes some bytes of a ``fmt`` file, then finds the disk full."""
    original = report_module.Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        if kwargs.get("format") != fmt:
            return original(self, fname, *args, **kwargs)
        fname.write(b"%PDF-1.4 truncated")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return savefig


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_full_disk_while_saving_a_figure_keeps_the_previous_file(few, monkeypatch):
    committed = few
    write_report(committed)
    before = _files(committed)
    monkeypatch.setattr(report_module.Figure, "savefig", _full_disk_on("pdf"))
    with pytest.raises(OSError) as exc:
        write_report(committed)
    first = committed / "figures" / f"{FEW[0]}.pdf"
    assert exc.value.errno == errno.ENOSPC and exc.value.filename == str(first)
    assert report_module.write_error_line(exc.value) == (
        f"error: could not write {first}: No space left on device; the results JSON files "
        "are kept")
    assert _files(committed) == before  # no truncated PDF, no temporary file


def test_a_full_disk_while_writing_report_md_keeps_the_previous_one(few, monkeypatch):
    committed = few
    write_report(committed)
    before = _files(committed)

    def half_then_full(fh, text):
        fh.write(text.encode()[: len(text) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(report_module, "_write_text", half_then_full)
    with pytest.raises(OSError, match="No space left on device") as exc:
        write_report(committed)
    assert exc.value.filename == str(committed / "REPORT.md")
    assert _files(committed) == before


def test_an_interrupted_write_leaves_no_temporary_file(tmp_path):
    def interrupted(fh):
        fh.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        report_module.atomic_write(tmp_path / "x.pdf", interrupted)
    assert list(tmp_path.iterdir()) == []
    path = report_module.atomic_write(tmp_path / "x.pdf", lambda fh: fh.write(b"whole"))
    assert path.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [path]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600


# --- REPORT.md is the same for the same seeds -----------------------------------------------

def _with_times(value, rng):
    """A copy of a results document with every run time (seconds, timings) replaced."""
    if isinstance(value, dict):
        return {k: (float(rng.uniform(1, 5000)) if k == "seconds" else
                    {t: float(rng.uniform(0, 900)) for t in v} if k == "timings"
                    and isinstance(v, dict) else _with_times(v, rng))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_with_times(v, rng) for v in value]
    return value


def test_report_text_does_not_depend_on_run_times():
    docs = {name: _doc(name) for name in NAMES}
    first = {n: _with_times(d, np.random.default_rng(1)) for n, d in docs.items()}
    second = {n: _with_times(d, np.random.default_rng(2)) for n, d in docs.items()}
    assert first["counterexample"]["seconds"] != second["counterexample"]["seconds"]
    text = report_text(first)
    assert text == report_text(second) == report_text(docs)
    for name in NAMES:  # the old "Size `default`, seed 4, 8 s." line had the time in it
        doc = docs[name]
        p = doc["produced"]  # the provenance, but no run time
        assert (f"Size `{doc['size']}`, seed {doc['seed']}, commit `{p['commit']}`, "
                f"{p['date']}.\n") in text
        assert f"{num(doc['seconds']):.0f} s." not in text.split(f"## {EXPERIMENTS[name].TITLE}")[1]


# --- what REPORT.md explains ----------------------------------------------------------------

def test_report_points_to_the_theory_and_has_a_glossary():
    text = report_text({name: _doc(name) for name in NAMES})
    assert "[docs/THEORY.md](../docs/THEORY.md)" in text
    assert (RESULTS / "../docs/THEORY.md").resolve().is_file()  # the link works from results/
    glossary = text.split("Glossary:")[1].split("\n## ")[0]
    for term in ("ε_lower", "ε_pair", "ε_theory", "ε_fdp", "ε_point", "§7", "D0", "C_p*",
                 "p*", "ρ", "MCAR / MAR / MNAR"):
        assert f"- **{term}" in glossary, term
    assert "B.3" in glossary and "not a bound" in glossary


def test_the_tradeoff_margin_is_one_number_in_one_format(drawn):
    doc = _doc("tradeoff_curves")
    margin = tradeoff_curves.margin_text(doc["gaussian"])
    assert margin == f"{-doc['gaussian']['fdp_violation']:.1e} above"
    text = report_text({"tradeoff_curves": doc})
    assert text.count(f"{margin} the §7 curve") == 2  # caption and findings
    fig, _ = drawn["tradeoff_curves"]
    (zoom,) = [ax for ax in fig.axes if ax.get_title().startswith("(c)")]
    assert zoom.get_title().endswith(f"lies {margin} it")
    for other in ("-0.0003", "2.5e-4", "+3.0e-04", "0.0003"):
        assert other not in text and other not in zoom.get_title()
    # another value reaches all three places, worded as the violation it would be
    bad = json.loads(json.dumps(doc))
    bad["gaussian"]["fdp_violation"] = 0.0012
    bad_text = report_text({"tradeoff_curves": bad})
    assert bad_text.count("1.2e-03 below the §7 curve") == 2 and "VIOLATION" in bad_text
    fig = render("tradeoff_curves", bad)
    assert any(ax.get_title().endswith("lies 1.2e-03 below it") for ax in fig.axes)


def test_plug_in_estimates_are_marked_as_point_estimates():
    doc = _doc("library_audit")
    text = report_text({"library_audit": doc})
    negative = [r for r in doc["rows"] if num(r["eps_point"]) < 0]
    above = [r for r in doc["rows"] if math.isfinite(num(r["eps_point"]))
             and num(r["eps_point"]) > num(r["eps_exact"])]
    assert negative and above  # the committed results hold both kinds
    lines = text.splitlines()
    note = next(line for line in lines if line.startswith("ε_point is the plug-in"))
    assert "not a bound" in note
    for r in negative:
        row = next(line for line in lines if line.startswith(f"| {r['name']} |"))
        assert f"| {num(r['eps_point']):.4f} (negative) |" in row
        assert f"{r['name']}: {num(r['eps_point']):.4f}" in note
    for r in above:
        row = next(line for line in lines if line.startswith(f"| {r['name']} |"))
        assert f"| {num(r['eps_point']):.4f} † |" in row
        assert f"{num(r['eps_point']):.4f} against {num(r['eps_exact']):.4f}" in note
    plain = [r for r in doc["rows"] if r not in negative and r not in above
             and math.isfinite(num(r["eps_point"]))]
    for r in plain:
        row = next(line for line in lines if line.startswith(f"| {r['name']} |"))
        assert f"| {num(r['eps_point']):.4f} |" in row


def test_versions_list_the_audited_dp_libraries():
    doc = _doc("library_audit")
    text = report_text({name: _doc(name) for name in NAMES})
    section = text.split("## Package versions")[1]
    for lib in ("diffprivlib", "opendp", "pipeline-dp", "python-dp"):
        assert f"| {lib} | {doc['library_versions'][lib]} | library_audit |" in section
    without = {k: v for k, v in doc["library_versions"].items() if k != "python-dp"}
    partial = report_text({"library_audit": {**doc, "library_versions": without}})
    assert "| python-dp | not recorded | — |" in partial
    assert "DP libraries audited" not in report_text({"mar_mnar": _doc("mar_mnar")})


def test_the_committed_report_is_the_one_the_committed_results_give():
    """results/REPORT.md and the results JSON come from the same run: redrawing the text from
    the committed JSON gives the committed page, byte for byte."""
    from experiments.report import _load, report_text

    committed = (ROOT / "results" / "REPORT.md").read_text(encoding="utf-8")
    assert report_text(_load(ROOT / "results")) == committed


def test_each_experiment_records_where_and_when_it_was_produced():
    from experiments.common import record

    p = record("x", "X", "smoke", 1)["produced"]
    assert set(p) == {"commit", "dirty", "date"} and len(p["date"]) == 10
