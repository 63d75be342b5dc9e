"""``python -m audit bound``: every applicable theoretical bound at one parameter point.

Example::

    python -m audit bound --mechanism laplace --epsilon 1 --p-star 0.5 --rho 0.5 --d 10
    python -m audit bound --mechanism gaussian --epsilon 1 --delta 1e-5 --p-star 0.5 --json

Bad parameters print one line ``error: ...`` on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

__all__ = ["add_parser", "main", "format_table"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``bound`` subcommand on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "bound",
        help="print every applicable privacy bound "
        "([RPS] Thm 3.2/4.5/4.7, Cor 4.6, docs/THEORY.md §7)",
        description=(
            "Theoretical privacy of a Laplace or Gaussian release under MAR missing data. "
            "Laplace: b = C_1/epsilon. Gaussian: classical sigma = C_2 sqrt(2 ln(1.25/delta))"
            "/epsilon, epsilon in (0, 1]."
        ),
    )
    p.add_argument("--mechanism", required=True, help="laplace or gaussian")
    p.add_argument("--epsilon", required=True, type=float, help="calibration epsilon")
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help="Gaussian: calibration delta in (0, 1) (required). Laplace: also report the §7 "
        "epsilon at this delta.",
    )
    p.add_argument("--p-star", dest="p_star", required=True, type=float, help="p* in [0, 1]")
    p.add_argument("--rho", type=float, default=None, help="max observed fraction, in (0, 1]")
    p.add_argument("--ratio", type=float, default=None, help="C~/C in (0, 1] (overrides rho)")
    p.add_argument("--d", type=int, default=None, help="number of features")
    p.add_argument(
        "--vector-output",
        action="store_true",
        help="Laplace: the release is a vector (use f_(eps0,0) in §7, not the scalar curve)",
    )
    p.add_argument(
        "--missingness-class",
        dest="missingness_class",
        default="mar",
        help="mcar or mar (mnar is refused: no bound holds)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def format_table(rows) -> str:
    """A fixed-width text table of :class:`audit.theory.bounds.BoundRow`s."""
    header = ("bound", "reference", "epsilon", "delta", "min err sum", "note")
    body = [
        (r.name, r.reference, _fmt(r.epsilon), _fmt(r.delta), _fmt(r.min_error_sum), r.note)
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header[:-1])]
    lines = []
    for cells in [header, *body]:
        left = "  ".join(c.ljust(w) for c, w in zip(cells[:-1], widths, strict=True))
        lines.append(f"{left}  {cells[-1]}".rstrip())
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """Run the ``bound`` subcommand; return the exit status (0 ok, 2 bad parameters)."""
    from audit.pipeline.results import to_jsonable
    from audit.theory.accountant import all_bounds

    try:
        rows = all_bounds(
            args.epsilon,
            args.delta,
            args.p_star,
            args.mechanism,
            rho=args.rho,
            ratio=args.ratio,
            d=args.d,
            scalar_output=not args.vector_output,
            missingness_class=args.missingness_class,
        )
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        print(f"error: {msg}", file=sys.stderr)
        return 2
    if args.json:
        payload = {
            "parameters": {
                "mechanism": str(args.mechanism).lower(),
                "epsilon": args.epsilon,
                "delta": args.delta,
                "p_star": args.p_star,
                "rho": args.rho,
                "ratio": args.ratio,
                "d": args.d,
                "scalar_output": not args.vector_output,
                "missingness_class": str(args.missingness_class).lower(),
            },
            "bounds": [to_jsonable(r.to_dict()) for r in rows],
        }
        print(json.dumps(payload, indent=2, allow_nan=False))
    else:
        print(format_table(rows))
    return 0
