"""``python -m audit report``: figures and REPORT.md from saved results, no recomputation.

Exit status: 0 when the report is written; 2 on bad input (no results folder, no results, a
results file that is not JSON or not of its experiment's shape: one ``error:`` line naming the
file and what is wrong); 3 when a file cannot be written (a full disk: one ``error:`` line
naming it; the previous file, or none, is left in its place, never a truncated one).
"""

from __future__ import annotations

import argparse

__all__ = ["add_parser", "main"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report", help="draw figures and results/REPORT.md from saved results",
        description="Draw results/figures/ (PNG and PDF) and REPORT.md from results/*.json. "
                    "Exit status: 0 = written, 2 = bad input (a missing or malformed results "
                    "file), 3 = a file could not be written (e.g. a full disk).",
    )
    p.add_argument("--results", default="results", help="results folder (default: results)")
    return p


def main(args: argparse.Namespace) -> int:
    from experiments.report import report_or_status

    path, status = report_or_status(args.results, log=_print)
    if path is not None:
        print(f"wrote {path}")
    return status


def _print(line: str) -> None:
    """A progress line, flushed at once (stdout piped to a file is block-buffered)."""
    print(line, flush=True)
