"""``python -m audit bound``: every applicable theoretical bound at one parameter point.

Example::

    python -m audit bound --mechanism laplace --epsilon 1 --p-star 0.5 --rho 0.5 --d 10
    python -m audit bound --mechanism gaussian --epsilon 1 --delta 1e-5 --p-star 0.5 --json
    python -m audit bound --mechanism gaussian --epsilon 1 --delta 1e-5 --p-star 0.1 \
        --releases 100 --masks shared --target-delta 1e-5
    python -m audit bound --config experiments/configs/accountant_sum.toml

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
    p.add_argument(
        "--config",
        default=None,
        help="an audit config (TOML): the theorem rows of its setting and the exact worst "
        "case of its query, domain, missing-value reading, noise and missingness "
        "(docs/THEORY.md §10); replaces --mechanism, --epsilon, --delta, --p-star and the "
        "release options",
    )
    p.add_argument(
        "--plan",
        default=None,
        help="a release plan (TOML): tables with their p*, mask regime and releases, "
        "accounted as one PLD at the plan's target_delta (docs/THEORY.md §10.6)",
    )
    p.add_argument("--mechanism", default=None, help="laplace or gaussian (required without "
                   "--config)")
    p.add_argument("--epsilon", default=None, type=float, help="calibration epsilon (required "
                   "without --config)")
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help="Gaussian: calibration delta in (0, 1) (required). Laplace: also report the §7 "
        "epsilon at this delta.",
    )
    p.add_argument("--p-star", dest="p_star", default=None, type=float,
                   help="p* in [0, 1] (required without --config)")
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
        default=None,
        help="shared (one table, k releases; the default) or fresh (missingness redrawn per "
        "release); needs --releases",
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

    try:
        if args.plan is not None:
            return _plan(args)
        parameters, table, worst = (_from_config(args) if args.config is not None
                                    else _from_flags(args))
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        print(f"error: {msg}", file=sys.stderr)
        return 2
    if args.json:
        bounds = [] if table is None else [to_jsonable(r.to_dict()) for r in table.bounds]
        if worst is not None:
            bounds.append(to_jsonable(worst))
        payload = {
            "parameters": to_jsonable(parameters),
            "bounds": bounds,
            "comparisons": [] if table is None else
            [to_jsonable(r.to_dict()) for r in table.comparisons],
        }
        print(json.dumps(payload, indent=2, allow_nan=False))
        return 0
    if table is None:  # persistent masks or a public count: no theorem-level row covers them
        print("no theorem-level row covers persistent masks (docs/THEORY.md §10.7)"
              if parameters.get("count") != "public" else
              "no theorem-level row: a public count is not differentially private "
              "(docs/THEORY.md §10.8)")
        print(f"\n{_worst_line(worst)}")
        return 0
    k_mode = table.target_delta is not None
    print(format_table(table.bounds, releases=k_mode))
    if worst is not None:
        print(f"\n{_worst_line(worst)}")
    if table.comparisons:
        print("\ncomparisons (NOT bounds):")
        print(format_table(table.comparisons, releases=True))
    return 0


_FLAG_ONLY = ("mechanism", "epsilon", "delta", "p_star", "rho", "ratio", "d", "releases",
              "masks")


def _given(args: argparse.Namespace, names) -> list[str]:
    """The flags among ``names`` (argparse destinations) that the user gave, as written."""
    return ["--" + n.replace("_", "-") for n in names if getattr(args, n) is not None]


def _from_flags(args: argparse.Namespace):
    from audit.theory.accountant import bound_table

    missing = [n for n in ("mechanism", "epsilon", "p_star") if getattr(args, n) is None]
    if missing:
        flag = "--" + missing[0].replace("_", "-")
        raise ValueError(f"{flag} is required (or give --config FILE.toml)")
    releases = None if args.releases is None else _parse_releases(args.releases)
    if args.masks is not None and releases is None:
        raise ValueError(f"--masks applies to k releases: give --releases K with "
                         f"--masks {args.masks}")
    table = bound_table(
        args.epsilon, args.delta, args.p_star, args.mechanism, rho=args.rho, ratio=args.ratio,
        d=args.d, scalar_output=not args.vector_output,
        missingness_class=args.missingness_class, releases=releases,
        masks=args.masks or "shared", target_delta=args.target_delta)
    parameters = {
        "mechanism": str(args.mechanism).lower(), "epsilon": args.epsilon,
        "delta": args.delta, "p_star": args.p_star, "rho": args.rho, "ratio": args.ratio,
        "d": args.d, "scalar_output": not args.vector_output,
        "missingness_class": str(args.missingness_class).lower(),
        "releases": table.releases, "masks": table.masks.value,
        "target_delta": table.target_delta,
    }
    return parameters, table, None


def _from_config(args: argparse.Namespace):
    """The theorem rows of a config's setting and its worst case (docs/THEORY.md §10)."""
    from audit.enums import Calibration, MaskRegime, NoiseKind
    from audit.pipeline.config import load_config
    from audit.pipeline.scenario import setting_from_config, worst_case_of
    from audit.theory.accountant import bound_table
    from audit.theory.observed_mean import PublicCountMean

    given = _given(args, _FLAG_ONLY)
    if given:
        raise ValueError(f"--config reads the setting from the file: {given[0]} cannot be "
                         "given with it (set it in the config)")
    cfg = load_config(args.config, for_audit=False)
    sc = cfg.scenario
    if sc.noise is NoiseKind.GAUSSIAN and sc.calibration is Calibration.ANALYTIC:
        raise ValueError("bound --config: the theorem rows assume the classical Gaussian sigma, "
                         "got scenario.calibration='analytic'")
    setting = setting_from_config(cfg)
    td = args.target_delta if args.target_delta is not None else (sc.delta or 0.0)
    multi = setting.releases > 1
    persistent = setting.masks is MaskRegime.PERSISTENT
    public = isinstance(setting, PublicCountMean)
    # the worst case first: what it refuses is refused before the theorem rows' work
    worst = worst_case_of(setting, td)
    table = None if persistent or public else bound_table(
        sc.epsilon, sc.delta, setting.observation, sc.noise.value,
        missingness_class=cfg.components()[0].missing_class,
        releases=setting.releases if multi else None, masks=setting.masks,
        target_delta=td if multi else None)
    name = "worst case of this setting" + (
        f" (persistent masks, r = {setting.persistence:g})" if persistent else "")
    row = {"name": name + ("" if worst.exact else " (upper bound; bracket [lower, epsilon])"),
           "delta": td, "releases": setting.releases, "masks": setting.masks.value,
           **({"persistence": setting.persistence} if persistent else {}),
           **worst.to_dict()}
    parameters = {
        "config": str(args.config), "noise": sc.noise.value, "epsilon": sc.epsilon,
        "delta": sc.delta, "query": sc.query, "d": sc.d, **_setting_parameters(setting, sc),
        "p_star": setting.observation, "releases": setting.releases,
        "masks": setting.masks.value, "target_delta": td,
    }
    return parameters, table, row


def _setting_parameters(setting, sc) -> dict:
    """The JSON parameters that describe a config's setting, per statistic."""
    from audit.theory.histogram import HistogramSetting
    from audit.theory.observed_mean import ObservedMeanSetting, PublicCountMean

    if isinstance(setting, HistogramSetting):
        return {"na_category": setting.na_category, "scale": setting.scale}
    if isinstance(setting, ObservedMeanSetting):
        return {"count": "private", "domain": list(setting.domain), "split": setting.split,
                "sum_scale": setting.sum_scale, "count_scale": setting.count_scale}
    if isinstance(setting, PublicCountMean):
        return {"count": "public", "domain": list(sc.value_domain)}
    return {"domain": list(sc.value_domain), "na_value": sc.na_value,
            "record_domain": list(setting.domain), "record_na_value": setting.na_value,
            "scale": setting.scale, "persistence": setting.persistence}


def _plan(args: argparse.Namespace) -> int:
    """``bound --plan``: the plan's ε, each table's alone, and the comparison that is not a
    bound (raises ValueError on a bad plan or option)."""
    from audit.pipeline.plan_file import load_plan
    from audit.pipeline.results import to_jsonable
    from audit.theory.plans import account_plan

    given = _given(args, (*_FLAG_ONLY, "config", "target_delta"))
    if given:
        raise ValueError(f"--plan reads everything from the plan file: {given[0]} cannot be "
                         "given with it")
    plan = load_plan(args.plan)
    result = account_plan(plan)
    if args.json:
        print(json.dumps(to_jsonable({"plan": str(args.plan), **result.to_dict()}), indent=2,
                         allow_nan=False))
        return 0
    print(f"plan {args.plan}: epsilon = {_fmt(result.epsilon)} at delta = "
          f"{_fmt(result.delta)} for everything it releases (an upper bound)")
    for name, eps in result.tables:
        print(f"  table {name}: epsilon = {_fmt(eps)} alone")
    comp = result.to_dict()["comparisons"][0]
    print(f"comparison (NOT a bound): {comp['name']}: epsilon = {_fmt(comp['epsilon'])}")
    return 0


def _worst_line(row: dict) -> str:
    """The worst-case row, printed under the theorem rows."""
    pair = "none (over the whole domain)" if row["pair"] is None else " vs ".join(row["pair"])
    if not row["exact"]:  # a bracket: each end's own pair, labelled
        upper = row.get("upper_pair")
        pair = (f"upper end {' vs '.join(upper)}" if upper else
                "upper end none (an envelope of every candidate pair)") + f", lower end {pair}"
    kind = (f"exact, error {_fmt(row['error'])}" if row["exact"] else
            f"an upper bound; the worst candidate pair gives {_fmt(row['lower'])}")
    return (f"{row['name']} ({row['reference']}): epsilon = {_fmt(row['epsilon'])} at delta = "
            f"{_fmt(row['delta'])} ({kind}); worst pair: {pair}; {row['method']}; covers "
            f"{row['covers']}")


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
