"""The main job: every experiment at its default (or full) size, then the report.

Each experiment's results are written to ``results/<name>.json`` as soon as it finishes
(atomically), so an interrupted suite keeps what it finished; ``--resume`` skips experiments
whose results file exists at the requested size.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from audit.pipeline.budget import format_duration
from audit.pipeline.results import load_json, save_json

__all__ = ["run_suite", "experiment_names"]


def _experiments():
    try:
        from experiments import EXPERIMENTS
    except ImportError as exc:  # pragma: no cover - only outside a source checkout
        raise ValueError(
            "the experiment definitions (package 'experiments') are not importable; run from "
            "the repository root or install the project with pip install -e ."
        ) from exc
    return EXPERIMENTS


def experiment_names() -> list[str]:
    return list(_experiments())


def run_suite(results_dir: str | Path = "results", *, size: str = "default",
              only: list[str] | None = None, jobs: int = 1, resume: bool = False,
              progress: bool = True, checkpoint: str | Path | None = None,
              log=print, finished: list | None = None) -> list[dict]:
    """Run the experiments and write their results; return their documents.

    ``checkpoint`` is a directory where every audit's main run saves its finished chunks, so
    rerunning an interrupted ``--full`` suite redoes no finished chunk. ``finished`` (a list)
    receives the path of each results file as soon as it is written, so a caller interrupted
    mid-suite knows what was saved. With ``progress`` an overall bar counts the experiments
    (each audit's own bars, labelled with its name and phase, come and go under it) when
    standard error is a terminal; piped or redirected (a CI log), no bar is drawn and only the
    ``[suite] i/n name: ...`` lines are logged. Log lines are printed with the bar cleared and
    redrawn under them, so it is never left behind as a second copy.
    """
    exps = _experiments()
    from experiments.common import check_size, configure

    names = list(exps) if not only else only
    unknown = [n for n in names if n not in exps]
    if unknown:
        raise ValueError(f"unknown experiment {unknown[0]!r} (known: {', '.join(exps)})")
    check_size(size)
    results_dir = Path(results_dir)
    finished = [] if finished is None else finished
    docs = []
    progress = progress and _is_terminal(sys.stderr)
    bar = _suite_bar(len(names), progress)
    log = _under_bar(_flushed(log), bar)
    last = {name: _last_seconds(name, size, results_dir) for name in names}
    log(f"[suite] {len(names)} experiment{'s' * (len(names) != 1)} at size {size}: "
        f"{_expected(last)}")
    started = time.perf_counter()
    try:
        for i, name in enumerate(names, 1):
            where = f"[suite] {i}/{len(names)} {name}"
            configure(checkpoint=None if checkpoint is None else str(checkpoint),
                      announce=_announcer(where, log))
            path = results_dir / f"{name}.json"
            if resume and path.is_file():
                try:
                    doc = load_json(path)
                    if isinstance(doc, dict) and doc.get("size") == size:
                        log(f"[suite] {i}/{len(names)} {name}: kept existing {path}")
                        docs.append(doc)
                        _advance(bar)
                        continue
                except ValueError:
                    pass
            t0 = time.perf_counter()
            took = "" if last[name] is None else \
                f", last run took {format_duration(last[name])}"
            log(f"{where}: running ({size}{took}; {format_duration(t0 - started)} into the "
                "suite)")
            doc = exps[name].run(size=size, jobs=jobs, progress=progress)
            doc["seconds"] = time.perf_counter() - t0
            finished.append(_save(doc, path))
            docs.append(doc)
            log(f"[suite] {i}/{len(names)} {name}: {doc['seconds']:.1f} s -> {path}")
            _advance(bar)
    finally:
        configure()
        if bar is not None:
            bar.close()
    return docs


#: the committed results, whose recorded run times estimate a suite run in another folder
COMMITTED = Path(__file__).resolve().parents[1] / "results"


def _last_seconds(name: str, size: str, results_dir: Path) -> float | None:
    """How long ``name`` took at ``size`` the last time its results were written (in
    ``results_dir``, else among the committed results), None when unknown."""
    for folder in (results_dir, COMMITTED):
        try:
            doc = load_json(folder / f"{name}.json")
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("size") == size and \
                isinstance(doc.get("seconds"), int | float):
            return float(doc["seconds"])
    return None


def _expected(last: dict) -> str:
    """The suite's expected duration, from the experiments' last run times."""
    known = [s for s in last.values() if s is not None]
    if not known:
        return "no earlier run times recorded, so no expected duration"
    missing = len(last) - len(known)
    return (f"expected about {format_duration(sum(known))} (their last recorded run times"
            + (f"; {missing} without one" if missing else "")
            + "; a slower or loaded machine takes longer)")


def _announcer(where: str, log):
    """The suite's line for every audit an experiment starts: its number, its name and the
    time into the experiment."""
    t0 = time.perf_counter()
    count = [0]

    def announce(audit_name: str) -> None:
        count[0] += 1
        log(f"{where}: audit {count[0]} {audit_name} "
            f"({format_duration(time.perf_counter() - t0)} in)")

    return announce


def _save(doc: dict, path: Path) -> Path:
    """:func:`save_json`, an ``OSError`` naming ``path`` (a failed write names no file)."""
    try:
        return save_json(doc, path)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def _is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (progress bars only go there)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def _suite_bar(total: int, progress: bool):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="suite", unit="experiment", position=0, file=sys.stderr)


def _flushed(log):
    """``log``, then standard output flushed: piped into a file or ``tee``, stdout is
    block-buffered, and a suite's lines would otherwise appear only at its end."""
    def write(*args, **kwargs):
        log(*args, **kwargs)
        sys.stdout.flush()

    return write


def _under_bar(log, bar):
    """``log``, printing with ``bar`` (and the audits' bars) cleared and redrawn below."""
    if bar is None:
        return log

    def write(*args, **kwargs):
        with type(bar).external_write_mode(file=sys.stdout):
            log(*args, **kwargs)
            sys.stdout.flush()

    return write


def _advance(bar) -> None:
    if bar is not None:
        bar.update(1)
