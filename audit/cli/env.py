"""``python -m audit env list|build NAME|remove NAME``: the isolated targets' environments.

Example::

    python -m audit env list                    # every isolated library, built or not, where
    python -m audit env build smartnoise-sql    # build it now (else: on its first audit)
    python -m audit env remove smartnoise-sql   # delete its cached environments

``NAME`` is the library of an adapter that declares an environment
(:mod:`audit.adapters.isolation`). Environments live under ``$MISSINGNESS_AUDIT_CACHE``, else
``$XDG_CACHE_HOME/missingness-audit``, else ``~/.cache/missingness-audit`` (``envs/<key>``).
Errors (an unknown name, a Python version not on this machine, a build that fails) print one
line ``error: ...`` on stderr and exit with status 2. A build stopped by Ctrl-C (130) or SIGTERM
(143) kills pip, removes its partial folder and lock, and prints one ``interrupted:`` line.
"""

from __future__ import annotations

import argparse
import sys
import time

from audit.cli.interrupts import Terminated, exit_status

__all__ = ["add_parser", "main"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``env`` subcommand on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "env", help="list, build or remove the environments of isolated libraries",
        description="The environments of the libraries audited in their own environment "
                    "(each built once from the package registry, cached; see "
                    "docs/guide/implementations.md). Exit status 2 on an error, 130 "
                    "interrupted (Ctrl-C), 143 terminated (SIGTERM).")
    p.add_argument("action", choices=("list", "build", "remove"),
                   help="list: every isolated library and its environment; build NAME: "
                        "build it now; remove NAME: delete its cached environments")
    p.add_argument("name", nargs="?", default=None, help="the library (build, remove)")
    return p


def _isolated() -> dict:
    from audit.adapters.registry import adapters

    return {name: a.environment for name, a in adapters().items() if a.isolated}


def _environment(name: str | None, action: str):
    if name is None:
        raise ValueError(f"env {action} needs the library's name")
    found = _isolated()
    if name not in found:
        raise ValueError(f"no isolated library {name!r} (isolated libraries: "
                         f"{', '.join(sorted(found)) or '(none)'})")
    return found[name]


def _list() -> None:
    from audit.adapters.isolation import environments as envs

    built = {b.path.name: b for b in envs.built()}
    print(f"environments in {envs.cache_root() / 'envs'}")
    for name, environment in sorted(_isolated().items()):
        try:
            key = environment.key()
        except ValueError as exc:
            print(f"{name}: python {environment.python}: not buildable here ({exc})")
            continue
        have = built.pop(key, None)
        state = (f"built ({have.description.get('build_seconds')} s to build) at {have.path}"
                 if have else "not built (built on first use, or: env build " + name + ")")
        print(f"{name}: python {environment.python}, {len(environment.requirements)} "
              f"requirements, key {key}: {state}")
    for key, stale in sorted(built.items()):
        print(f"{stale.description.get('name')}: key {key}: not the environment of a "
              f"registered isolated library (its requirements or interpreter changed, or a "
              f"test built it) at {stale.path}")


def main(args: argparse.Namespace) -> int:
    from audit.adapters.isolation import environments as envs

    try:
        if args.action == "list":
            if args.name is not None:
                raise ValueError("env list takes no name")
            _list()
        elif args.action == "build":
            environment = _environment(args.name, "build")
            start = time.monotonic()
            try:
                built = envs.ensure(environment)
            except (KeyboardInterrupt, Terminated) as exc:
                print(f"interrupted: the build of {args.name!r} was stopped; pip was ended and "
                      f"its partial environment removed (nothing was kept)", file=sys.stderr)
                return exit_status(exc)
            print(f"{args.name}: built at {built.path} "
                  f"({built.description.get('build_seconds')} s to build; "
                  f"{time.monotonic() - start:.1f} s now)")
        else:
            environment = _environment(args.name, "remove")
            gone = envs.remove(args.name)
            print(f"{args.name}: removed {len(gone)} environment(s)"
                  + "".join(f"\n  {p}" for p in gone))
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0
