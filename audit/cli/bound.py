"""``python -m audit bound``: every applicable theoretical bound at one parameter point.

Example::

    python -m audit bound --mechanism laplace --epsilon 1 --p-star 0.5 --rho 0.5 --d 10
    python -m audit bound --mechanism gaussian --epsilon 1 --delta 1e-5 --p-star 0.5 --json
    python -m audit bound --mechanism gaussian --epsilon 1 --delta 1e-5 --p-star 0.1 \
        --releases 100 --masks shared --target-delta 1e-5

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
    p.add_argument(
        "--releases",
        default=None,
        help="k releases of the same query (any positive integer, 1e9 included): every row "
        "then reports epsilon for the k releases together (docs/THEORY.md §9)",
    )
    p.add_argument(
        "--masks",
        default="shared",
        help="shared (one table, k releases) or fresh (missingness redrawn per release)",
    )
    p.add_argument(
        "--target-delta",
        dest="target_delta",
        type=float,
        default=None,
        help="the final delta of the k releases together at which every row reports epsilon "
        "(default: the delta of the single-release §7 row)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def format_table(rows, *, releases: bool = False) -> str:
    """A fixed-width text table of :class:`audit.theory.bounds.BoundRow`s; with ``releases``
    the columns say k, the mask regime and each row's composition rule."""
    if releases:
        header = ("bound", "reference", "k", "masks", "epsilon", "delta", "rule")
        body = [(r.name, r.reference, str(r.releases), r.masks, _fmt(r.epsilon),
                 _fmt(r.delta), r.rule) for r in rows]
    else:
        header = ("bound", "reference", "epsilon", "delta", "min err sum", "note")
        body = [
            (r.name, r.reference, _fmt(r.epsilon), _fmt(r.delta), _fmt(r.min_error_sum),
             r.note)
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
    from audit.theory.accountant import bound_table

    try:
        releases = None if args.releases is None else _parse_releases(args.releases)
        table = bound_table(
            args.epsilon,
            args.delta,
            args.p_star,
            args.mechanism,
            rho=args.rho,
            ratio=args.ratio,
            d=args.d,
            scalar_output=not args.vector_output,
            missingness_class=args.missingness_class,
            releases=releases,
            masks=args.masks,
            target_delta=args.target_delta,
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
                "releases": table.releases,
                "masks": table.masks.value,
                "target_delta": table.target_delta,
            },
            "bounds": [to_jsonable(r.to_dict()) for r in table.bounds],
            "comparisons": [to_jsonable(r.to_dict()) for r in table.comparisons],
        }
        print(json.dumps(payload, indent=2, allow_nan=False))
    else:
        k_mode = table.target_delta is not None
        print(format_table(table.bounds, releases=k_mode))
        if table.comparisons:
            print("\ncomparisons (NOT bounds):")
            print(format_table(table.comparisons, releases=True))
    return 0


def _parse_releases(text: str) -> int:
    """``--releases``: a positive integer, written as an integer or an integral float (1e9)."""
    from audit.theory.releases import check_releases

    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"releases must be a positive integer, got releases={text!r}") from None
    if not value.is_integer():
        raise ValueError(f"releases must be a positive integer, got releases={text!r}")
    try:
        return check_releases(int(value) if abs(value) < 2**63 else value)
    except ValueError:
        raise ValueError(f"releases must be a positive integer, got releases={text!r}") from None
