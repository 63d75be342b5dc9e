"""``python -m audit suite``: the main job (every experiment, then the report)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_parser", "main"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "suite", help="run every experiment and draw the report (the main job)",
        description="Run every experiment at its default size (<= 10 minutes on 2 cores), "
                    "write results/*.json, then draw results/figures/ and results/REPORT.md.",
    )
    p.add_argument("--full", action="store_true",
                   help="paper-size run (10-20x the default trials per audit)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these experiments")
    p.add_argument("--jobs", type=int, default=1, help="joblib processes per audit")
    p.add_argument("--results", default="results", help="results folder (default: results)")
    p.add_argument("--resume", action="store_true",
                   help="skip experiments whose results file already exists at this size")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="save every audit's finished chunks here, so a rerun resumes")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def main(args: argparse.Namespace) -> int:
    from experiments.report import write_report
    from experiments.suite import experiment_names, run_suite

    try:
        if args.jobs < 1:
            raise ValueError(f"--jobs must be an integer >= 1, got --jobs={args.jobs}")
        known = experiment_names()
        for name in args.only or []:
            if name not in known:
                raise ValueError(f"unknown experiment {name!r} (known: {', '.join(known)})")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_suite(args.results, size="full" if args.full else "default", only=args.only,
              jobs=args.jobs, resume=args.resume, progress=not args.no_progress,
              checkpoint=args.checkpoint)
    report = write_report(args.results)
    print(f"[suite] report: {report}")
    return 0
