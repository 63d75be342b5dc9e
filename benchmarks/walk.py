"""The walk of one audit through the package's files: how often control comes back to a file.

Traces the Python calls of ``run_audit`` on a config (default: the main config,
``experiments/configs/power_laplace.toml``, at a small size) and reads the sequence of files
of the package (``audit/``, ``attacks/``) whose functions are entered, one step per call.
Consecutive calls in one file are one *stay*; a *return* is a stay in a file already left
before. Fewer returns means a reader follows the audit through fewer back-and-forths.

    python benchmarks/walk.py [CONFIG] [--trials N] [--under FOLDER] [--files]

Only calls are counted (not lines); calls inside numba-compiled kernels are not Python
calls. The first run also imports modules and compiles kernels: the walk is taken on a
second run in the same process, so it is the audit's own path. ``--under`` keeps the files
of one folder (default ``audit/pipeline``, the runner's floor; ``''`` for every file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "attacks")
sys.path.insert(0, str(ROOT))  # this checkout's package, whatever is installed


def walk(cfg) -> list[str]:
    """The package files entered, call by call, during one audit of ``cfg``."""
    from audit.pipeline.runner import run_audit

    run_audit(cfg)  # imports, compiles, caches
    roots = tuple(str(ROOT / p) + "/" for p in PACKAGES)
    files: list[str] = []

    def tracer(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name.startswith(roots):
                files.append(str(Path(name).relative_to(ROOT)))
        return None

    sys.setprofile(None)
    sys.settrace(tracer)
    try:
        run_audit(cfg)
    finally:
        sys.settrace(None)
    return files


def stays(files: list[str]) -> list[str]:
    """Consecutive calls in one file merged into one stay."""
    out: list[str] = []
    for f in files:
        if not out or out[-1] != f:
            out.append(f)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", nargs="?", type=Path,
                    default=ROOT / "experiments/configs/power_laplace.toml")
    ap.add_argument("--trials", type=int, default=20_000)
    ap.add_argument("--under", default="audit/pipeline",
                    help="count only files under this folder ('' for the whole package)")
    ap.add_argument("--files", action="store_true", help="print the stays in order")
    args = ap.parse_args(argv)
    from audit.pipeline.config import load_config

    try:  # the config and its size checked before any work
        cfg = load_config(args.config).with_overrides(trials=args.trials, jobs=1)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    walked = stays([f for f in walk(cfg) if f.startswith(args.under)])
    seen: set[str] = set()
    returns = 0
    for i, f in enumerate(walked):
        if f in seen and walked[i - 1] != f:
            returns += 1
        seen.add(f)
        if args.files:
            print(f)
    where = args.under or "the package"
    print(f"{args.config.name}, files under {where}: {len(walked)} stays in {len(seen)} "
          f"files, {returns} returns to a file already left")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
