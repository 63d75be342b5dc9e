"""``python -m audit run CONFIG.toml``: one audit from a TOML config."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

__all__ = ["add_parser", "main", "format_result"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run", help="run one audit from a TOML config",
        description="Run one audit from a TOML config (README, 'Config schema'). Exit status: "
                    "0 = every ceiling holds, 1 = a ceiling (a theorem, the exact pair, or an "
                    "implementation's claim) is violated at the stated confidence, 2 = bad "
                    "input, 130 = interrupted.",
    )
    p.add_argument("config", help="path to the TOML config")
    p.add_argument("--trials", type=int, help="trials per side (overrides audit.trials)")
    p.add_argument("--seed", type=int, help="seed (overrides audit.seed)")
    p.add_argument("--jobs", type=int, help="joblib processes (overrides audit.jobs; capped at "
                                            "the CPUs this process may use)")
    p.add_argument("--backend", choices=("cpu", "cuda", "dask"),
                   help="where the work runs (overrides audit.backend): cpu; cuda for an "
                        "NVIDIA GPU (the [cuda] extra, white-box audits); dask for a local "
                        "dask cluster of --jobs workers (the [dask] extra)")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="save finished chunks here; rerunning resumes an interrupted run")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the result as JSON")
    p.add_argument("--max-hours", type=float, default=24.0, metavar="H",
                   help="refuse a run expected to take longer than H hours at the rate "
                        "measured before it starts (default: 24)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return f"{v:.4f}"


#: How each ceiling kind is explained in the summary.
_CEILING_TEXT = {
    "eps_pair": "exact privacy of the audited pair",
    "eps_fdp": "f-DP amplification, docs/THEORY.md §7",
}


def format_result(result) -> str:
    """A readable summary of an :class:`audit.pipeline.results.AuditResult`."""
    st = result.setting
    lines = [
        f"audit {result.name}: {result.trials:,} trials per side, attack {result.attack}, "
        f"selection {result.selection}, seed {result.seed}, {result.seconds:.1f} s",
        f"  p* = {st.p_star:.4g}, rho = {st.rho:.4g} ({st.missing_class}), "
        f"delta = {result.delta:.3g}, confidence = {result.confidence}",
        f"  eps_lower  {_fmt(result.eps_lower)}   (empirical: {result.describe()})",
    ]
    for c in result.ceilings:
        if c.kind.value == "eps_claim":
            lines.append(f"  eps_claim  {_fmt(c.value)}   ({c.label}, delta = "
                         f"{result.claim['delta']:.3g})")
        else:
            lines.append(f"  {c.key:<10} {_fmt(c.value)}   "
                         f"({_CEILING_TEXT.get(c.key, c.label)})")
    if result.claim is None:
        lines.append(f"  eps_base   {_fmt(st.eps_base)}   (the mechanism without missingness)")
    if st.eps_mar_formula is not None:
        lines.append(f"  MAR formula {_fmt(st.eps_mar_formula)}   (not a bound: MNAR)")
    return "\n".join(lines)


def _prepare(args: argparse.Namespace):
    """Config, output checks, plan and expected duration: every refusal before any work."""
    from audit.pipeline.budget import LARGE_RUN_TRIALS, expected_seconds, format_duration
    from audit.pipeline.config import load_config
    from audit.pipeline.factory import make_subject
    from audit.pipeline.results import check_output_dir, check_output_file
    from audit.simulation.processes import cap_jobs, check_jobs

    if args.jobs is not None:
        check_jobs(args.jobs, "--jobs")
    if not args.max_hours > 0:
        raise ValueError(f"--max-hours must be > 0, got --max-hours={args.max_hours}")
    cfg = load_config(args.config).with_overrides(
        trials=args.trials, seed=args.seed, jobs=args.jobs, checkpoint=args.checkpoint,
        backend=args.backend)
    # one cap and one note, whether the count came from --jobs or from audit.jobs
    jobs, note = cap_jobs(cfg.audit.jobs, "--jobs" if args.jobs is not None else "audit.jobs")
    if note is not None:
        print(note, file=sys.stderr)
    cfg = cfg.with_overrides(jobs=jobs)
    if cfg.audit.backend != "cpu":
        from audit.simulation.engine import check_backend

        check_backend(cfg.engine_backend)  # numba-cuda and a device, or dask, before any work
    if args.json_out is not None:
        check_output_file(args.json_out, "--json")
    if cfg.audit.checkpoint is not None:
        check_output_dir(cfg.audit.checkpoint, "--checkpoint")
    subject = make_subject(cfg)
    if cfg.audit.trials >= LARGE_RUN_TRIALS:
        seconds, rate = expected_seconds(subject)
        unit = subject.unit
        if seconds > args.max_hours * 3600:
            raise ValueError(
                f"--trials {cfg.audit.trials:.3g} would take about {format_duration(seconds)} "
                f"at {rate:.3g} {unit}/s measured here, more than --max-hours "
                f"{args.max_hours:g}; lower --trials, or raise --max-hours (and use "
                "--checkpoint DIR so that an interrupted run resumes)")
        print(f"expected duration about {format_duration(seconds)} at {rate:.3g} {unit}/s "
              "measured here", file=sys.stderr)
    return cfg, subject


def _interrupted(cfg) -> str:
    """One line saying what an interrupted run kept and how to resume it."""
    if cfg.audit.checkpoint is None:
        return ("interrupted: nothing was saved (rerun with --checkpoint DIR to make a long "
                "run resumable)")
    chunks = len(list(Path(cfg.audit.checkpoint).glob("*.npz")))
    return (f"interrupted: {chunks} finished chunk file(s) are in {cfg.audit.checkpoint}; "
            "rerun the same command to resume from them")


@contextlib.contextmanager
def _cluster(cfg):
    """For ``audit.backend = "dask"`` from the command line: a local cluster of ``jobs``
    single-threaded worker processes on loopback, closed with the run."""
    if cfg.audit.backend != "dask":
        yield
        return
    import distributed

    with distributed.LocalCluster(n_workers=max(cfg.audit.jobs, 1), threads_per_worker=1,
                                  host="127.0.0.1", dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        yield


def main(args: argparse.Namespace) -> int:
    from audit.pipeline.results import save_json
    from audit.pipeline.runner import run_audit

    try:
        cfg, subject = _prepare(args)
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    try:
        with _cluster(cfg):
            result = run_audit(subject=subject, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(_interrupted(cfg), file=sys.stderr)
        return 130
    except ValueError as exc:  # an implementation failing mid-run
        kept = _interrupted(cfg).replace("interrupted: ", "")
        print(f"error: {' '.join(str(exc).split())}; {kept}", file=sys.stderr)
        return 2
    print(format_result(result))
    if args.json_out is not None:
        save_json(result.to_dict(), args.json_out)
        print(f"wrote {args.json_out}")
    for violation in result.violations:
        print(f"VIOLATION: {violation.describe()}")
    return 1 if result.violations else 0
