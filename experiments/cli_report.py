"""``python -m audit report``: figures and REPORT.md from saved results, no recomputation."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_parser", "main"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report", help="draw figures and results/REPORT.md from saved results",
        description="Draw results/figures/ (PNG and PDF) and REPORT.md from results/*.json.",
    )
    p.add_argument("--results", default="results", help="results folder (default: results)")
    return p


def main(args: argparse.Namespace) -> int:
    from experiments.report import write_report

    try:
        path = write_report(args.results)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0
