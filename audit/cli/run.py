"""``python -m audit run CONFIG.toml``: one audit from a TOML config."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from audit.cli.arguments import integer
from audit.cli.interrupts import Terminated, exit_status
from audit.enums import CeilingKind

__all__ = ["add_parser", "main", "format_result"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run", help="run one audit from a TOML config",
        description="Run one audit from a TOML config (README, 'Config schema'). Exit status: "
                    "0 = every ceiling holds, 1 = a ceiling (a theorem, the exact pair, or an "
                    "implementation's claim) is violated at the stated confidence, 2 = bad "
                    "input (before any work), 3 = the work failed once started (the "
                    "implementation failed mid-run, a worker died, a file could not be "
                    "written), 130 = interrupted (Ctrl-C), 141 = standard output closed "
                    "early, 143 = terminated (SIGTERM); both stops print one interrupted: "
                    "line.",
    )
    p.add_argument("config", help="path to the TOML config")
    p.add_argument("--trials", type=integer, help="trials per side (overrides audit.trials; "
                                                  "1e8 and 100_000_000 are accepted)")
    p.add_argument("--seed", type=integer, help="seed (overrides audit.seed)")
    p.add_argument("--jobs", type=integer, help="joblib processes (overrides audit.jobs; capped at "
                                            "the CPUs this process may use)")
    p.add_argument("--backend", metavar="NAME",
                   help="where the work runs (overrides audit.backend): cpu; cuda for an "
                        "NVIDIA GPU (the [cuda] extra, white-box audits); dask for a local "
                        "dask cluster of --jobs workers (the [dask] extra); or the name of a "
                        "joblib backend registered in this process (loky, threading, ...)")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="save finished chunks here; rerunning resumes an interrupted run")
    p.add_argument("--json", dest="json_out", metavar="OUT", help="write the result as JSON")
    p.add_argument("--max-hours", type=float, default=24.0, metavar="H",
                   help="refuse a run expected to take longer than H hours at the rate "
                        "measured before it starts (default: 24)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


#: Exit status of a run whose work failed once started (never 0, never 1).
EXIT_FAILED = 3


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    return f"{v:.4f}" if abs(v) < 1e6 else f"{v:.4g}"


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
        where = (f"{c.label}, delta = {result.claim.delta:.3g}"
                 if c.kind is CeilingKind.CLAIM else c.label)
        lines.append(f"  {c.key:<10} {_fmt(c.value)}   ({where})")
    if result.claim is None:
        lines.append(f"  eps_base   {_fmt(st.eps_base)}   (the mechanism without missingness)")
    if st.eps_mar_formula is not None:
        lines.append(f"  MAR formula {_fmt(st.eps_mar_formula)}   (not a bound: MNAR)")
    comp = result.comparison
    if comp is not None:
        lines.append(f"  per-release {_fmt(comp.value)}   ({comp.rule}; NOT a bound "
                     "for shared masks)")
        if comp.exceeded_by(result.eps_lower):
            lines.append("  finding: eps_lower exceeds the per-release accounting: composing "
                         "per-release amplified guarantees understates this release's epsilon")
    check = None if result.claim is None else result.claim.batch_check
    if check is not None:
        if check.passed:  # (a BatchCheck: audit.model.batch_check)
            lines.append(f"  batched    releases of one call checked independent at alpha = "
                         f"{check.alpha:g} ({check.releases:,} batched, "
                         f"{check.unbatched:,} unbatched, {check.seconds:.1f} s"
                         f"{'; cached from an earlier run' if check.cached else ''})")
        else:
            lines.append(f"  batched    refused ({', '.join(check.failed)}): one call per "
                         f"dataset")
    if result.curve_claim is not None:
        cc = result.curve_claim
        if cc.theta is not None:
            lines.append(f"  eps_family {_fmt(cc.eps_family)}   (claim {cc.curve.value}: "
                         f"refuted below mu = {cc.theta:.4f}; bounds the mechanism's "
                         f"epsilon only if it is in the family)")
        else:
            lines.append(f"  claim      {cc.curve.value} curve "
                         f"{'REFUTED' if cc.refuted else 'not refuted'} at confidence "
                         f"{1 - cc.alpha:g}")
    if result.attack_note:
        lines.append(f"  note: the attack {result.attack_note}")
    if result.search is not None:
        s = result.search
        best = s.best
        lines.append(f"  pair       searched: {best['family']} {best['label']} (score "
                     f"{_fmt(best['score'])}, best of {len(s.candidates)} candidates in "
                     f"{len(s.rounds)} round(s), {s.calls_per_side:,} calls "
                     f"per side on their own streams)")
    return "\n".join(lines)


def _prepare(args: argparse.Namespace):
    """Config, output checks, plan and expected duration: every refusal before any work."""
    from audit.pipeline.config import load_config
    from audit.pipeline.factory import make_subject
    from audit.pipeline.results import check_output_dir, check_output_file
    from audit.simulation.processes import cap_jobs, check_backend_setting, check_jobs

    if args.jobs is not None:
        check_jobs(args.jobs, "--jobs")
    if args.backend is not None:
        args.backend = check_backend_setting(args.backend, "--backend")
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
        if _same_file(args.json_out, args.config):
            raise ValueError(f"--json must not be the config file itself, got --json="
                             f"{args.json_out!r} (the config is {args.config!r})")
    if cfg.audit.checkpoint is not None:
        check_output_dir(cfg.audit.checkpoint, "--checkpoint")
    if cfg.search is not None:
        from audit.pipeline.parts import check_parts, names_black_box
        from audit.pipeline.search import first_candidate_config

        # the search calls a black box: without [implementation] the model's parts refuse it
        check_parts(cfg, black_box=names_black_box(cfg))

        # timed on the first candidate pair; the search runs with the work (its own calls)
        _check_duration(make_subject(first_candidate_config(cfg)), args.max_hours)
        return cfg, None
    subject = make_subject(cfg)
    _check_duration(subject, args.max_hours)
    return cfg, subject


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).exists() and Path(a).samefile(b)
    except OSError:
        return False


def _check_duration(subject, max_hours: float) -> None:
    """:func:`audit.pipeline.budget.check_duration`, its estimate printed on stderr."""
    from audit.pipeline.budget import check_duration

    note = check_duration(subject, max_hours)
    if note is not None:
        print(note, file=sys.stderr)


def _interrupted(cfg) -> str:
    """One line saying what an interrupted run kept and how to resume it."""
    if cfg.audit.checkpoint is None:
        return ("interrupted: nothing was saved (rerun with --checkpoint DIR to make a long "
                "run resumable)")
    from audit.simulation.checkpoints import count_chunk_files, run_prefixes

    folder = cfg.audit.checkpoint
    chunks = count_chunk_files(folder, run_prefixes(folder))  # this run's, not the folder's
    return (f"interrupted: {chunks} finished chunk file(s) of this run are in {folder}; "
            "rerun the same command to resume from them")


def _reraise_closed_stdout(exc: BaseException) -> None:
    """A mechanism that prints while our stdout was closed (``... | head -1``) fails with
    BrokenPipeError: that is the reader going away (exit 141), not the mechanism's fault."""
    if isinstance(exc, BrokenPipeError) or isinstance(exc.__cause__, BrokenPipeError):
        raise BrokenPipeError from exc


@contextlib.contextmanager
def _cluster(cfg):
    """For ``audit.backend = "dask"`` from the command line: a local cluster of ``jobs``
    worker processes (:func:`audit.cli.cluster.local_cluster`), closed with the run."""
    if cfg.audit.backend != "dask":
        yield
        return
    from audit.cli.cluster import local_cluster

    with local_cluster(cfg.audit.jobs):
        yield


def main(args: argparse.Namespace) -> int:
    from audit.pipeline.results import save_json
    from audit.pipeline.runner import run_audit

    try:
        cfg, subject = _prepare(args)
    except ValueError as exc:
        _reraise_closed_stdout(exc)
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    try:
        with _cluster(cfg):
            # bars on a terminal only: a log or a pipe gets the summary, not redraws
            progress = not args.no_progress and sys.stderr.isatty()
            result = (run_audit(cfg, progress=progress) if subject is None else
                      run_audit(subject=subject, progress=progress))
    except (KeyboardInterrupt, Terminated) as exc:  # Ctrl-C: 130, SIGTERM: 143
        print(_interrupted(cfg), file=sys.stderr)
        return exit_status(exc)
    except (ValueError, OSError, RuntimeError, MemoryError) as exc:
        # the work failed once started: the implementation mid-run, a dead worker, a disk
        _reraise_closed_stdout(exc)
        kept = _interrupted(cfg).replace("interrupted: ", "")
        print(f"error: {' '.join(str(exc).split())}; {kept}", file=sys.stderr)
        return EXIT_FAILED
    print(format_result(result))
    if args.json_out is not None:
        try:
            save_json(result.to_dict(), args.json_out)
        except OSError as exc:
            print(f"error: could not write --json {args.json_out}: "
                  f"{exc.strerror or exc}; the result is printed above", file=sys.stderr)
            return EXIT_FAILED
        print(f"wrote {args.json_out}")
    for violation in result.violations:
        print(f"VIOLATION: {violation.describe()}")
    return 1 if cfg.policy.failing(result.violations) else 0  # (the config's policy)
