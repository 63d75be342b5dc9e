"""``python -m audit suite``: the main job (every experiment, then the report).

Exit status: 0 when no audit of the project's own model violates a ceiling (the exact pair,
a theorem, the §7 bound), 1 when one does (a bug in the code or the theory, listed), 2 on bad
input, 130 when interrupted. An implementation refuting its own claim (``library_audit``) is
a finding of the report, not a failure of the suite.
"""

from __future__ import annotations

import argparse
import sys

from audit.cli.arguments import integer
from audit.cli.interrupts import Terminated, exit_status

__all__ = ["add_parser", "main", "violations"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "suite", help="run every experiment and draw the report (the main job)",
        description="Run every experiment at its default size (about 5 minutes on 2 cores), "
                    "write results/*.json, then draw results/figures/ and results/REPORT.md. "
                    "Exit status: 0 = every ceiling holds, 1 = an audit of the model violates "
                    "a ceiling, 2 = bad input, 3 = a file could not be written "
                    "(e.g. a full disk), 130 = interrupted.",
    )
    p.add_argument("--full", action="store_true",
                   help="paper-size run (10-20x the default trials per audit; about 16 "
                        "minutes on 2 cores with --jobs 1, plus 27 minutes of "
                        "tester_benchmark at DP-Sniper's 2e8 calls per side with --jobs 2)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these experiments")
    p.add_argument("--jobs", type=integer, default=1,
                   help="joblib processes per audit (capped at the CPUs this process may use)")
    p.add_argument("--results", default="results", help="results folder (default: results)")
    p.add_argument("--resume", action="store_true",
                   help="skip experiments whose results file already exists at this size")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="save every audit's finished chunks here, so a rerun resumes")
    p.add_argument("--no-progress", action="store_true",
                   help="hide progress bars (they are only drawn when stderr is a terminal)")
    return p


def violations(doc) -> list[str]:
    """Every ceiling violation an experiment's results record for the model's own audits
    (results with ``violations`` and no implementation claim)."""
    out: list[str] = []
    if isinstance(doc, dict):
        if isinstance(doc.get("violations"), list) and doc.get("eps_claim") is None:
            out += [f"{doc.get('name', '?')}: {v}" for v in doc["violations"]]
        for value in doc.values():
            out += violations(value)
    elif isinstance(doc, list):
        for value in doc:
            out += violations(value)
    return out


def _check(args: argparse.Namespace) -> int:
    from audit.pipeline.results import check_output_dir
    from audit.simulation.processes import cap_jobs, check_jobs
    from experiments.suite import experiment_names

    check_jobs(args.jobs, "--jobs")
    known = experiment_names()
    for name in args.only or []:
        if name not in known:
            raise ValueError(f"unknown experiment {name!r} (known: {', '.join(known)})")
    check_output_dir(args.results, "--results")
    if args.checkpoint is not None:
        check_output_dir(args.checkpoint, "--checkpoint")
    jobs, note = cap_jobs(args.jobs, "--jobs")
    if note is not None:
        print(note, file=sys.stderr)
    return jobs


def _report(results: str) -> int:
    """Draw the report; 0, or the exit status after printing one ``error:`` line."""
    from experiments.report import report_or_status

    report, status = report_or_status(results, log=_print)
    if report is not None:
        print(f"[suite] report: {report}")
    return status


def main(args: argparse.Namespace) -> int:
    from experiments.suite import run_suite

    try:
        jobs = _check(args)
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    finished: list = []
    try:
        docs = run_suite(args.results, size="full" if args.full else "default",
                         only=args.only, jobs=jobs, resume=args.resume,
                         progress=not args.no_progress, checkpoint=args.checkpoint,
                         finished=finished)
    except (KeyboardInterrupt, Terminated) as exc:  # Ctrl-C: 130, SIGTERM: 143
        names = ", ".join(p.stem for p in finished) or "none"
        print(f"interrupted: finished experiments kept in {args.results}: {names}; rerun with "
              "--resume to skip them" + (f" (chunks of the unfinished one are in "
                                         f"{args.checkpoint})" if args.checkpoint else ""),
              file=sys.stderr)
        return exit_status(exc)
    except BrokenPipeError:
        raise  # the reader of stdout went away (``suite | head``): exit 141, not a write error
    except OSError as exc:
        names = ", ".join(p.stem for p in finished) or "none"
        print(f"error: could not write {exc.filename or args.results}: "
              f"{exc.strerror or exc}; finished experiments kept in {args.results}: {names}",
              file=sys.stderr)
        return 3
    code = _report(args.results)
    found = [v for doc in docs for v in violations(doc)]
    for line in found:
        print(f"VIOLATION: {line}")
    return code or (1 if found else 0)


def _print(line: str) -> None:
    """A progress line, flushed at once (stdout piped to a file is block-buffered)."""
    print(line, flush=True)
