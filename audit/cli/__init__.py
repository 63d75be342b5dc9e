"""Command-line interface: ``python -m audit <command> ...``.

The core commands (``bound``, ``run``, ``env``) live in this package. Other packages add commands
through the ``audit.commands`` entry-point group (``experiments`` adds ``suite`` and
``report``), so the core never imports them. A command is a module with
``add_parser(subparsers) -> ArgumentParser`` and ``main(args) -> int``; every command module
is imported to build the parser, so each keeps heavy imports (numba, matplotlib) inside
``main``, which keeps ``python -m audit bound`` fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator
from importlib.metadata import entry_points

from audit.cli.arguments import integer
from audit.cli.interrupts import Terminated, exit_status, own_signals

__all__ = ["COMMAND_ENTRY_POINT_GROUP", "build_parser", "main", "integer",
           "one_line_warnings"]

COMMAND_ENTRY_POINT_GROUP = "audit.commands"

# (subcommand, module implementing add_parser/main)
_CORE_COMMANDS: list[tuple[str, str]] = [
    ("bound", "audit.cli.bound"),
    ("run", "audit.cli.run"),
    ("env", "audit.cli.env"),
]


class _Parser(argparse.ArgumentParser):
    """Usage errors print one line ``error: ...`` on stderr and exit with status 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())}\n")


def _command_modules():
    for _name, module_name in _CORE_COMMANDS:
        yield importlib.import_module(module_name)
    for ep in sorted(entry_points(group=COMMAND_ENTRY_POINT_GROUP), key=lambda e: e.name):
        yield ep.load()


def _installed_version() -> str | None:
    """The installed distribution's version, or None when the package is run from a source tree
    that was never installed (its entry points, and so ``suite`` and ``report``, are missing)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("missingness-audit")
    except PackageNotFoundError:
        return None


def build_parser() -> argparse.ArgumentParser:

    parser = _Parser(
        prog="python -m audit",
        description="Empirical privacy auditing of DP releases under missing data. The same "
                    "commands are installed as the `missingness-audit` script.",
    )
    parser.add_argument("--version", action="version",
                        version=f"missingness-audit {_installed_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in _command_modules():
        p = module.add_parser(sub)
        p.set_defaults(_handler=module.main)
    return parser


#: Distinct warnings the command line prints at most (the others are not shown).
MAX_WARNING_LINES = 50


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Every warning that reaches the command line is printed as one line ``warning:
    <message>`` on stderr, each distinct message once: no file path, no source line. A
    warning of an implementation's calls reads ``warning: <target>: <message>``
    (:mod:`audit.simulation.mechanism_warnings`)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        if text not in seen and len(seen) < MAX_WARNING_LINES:
            seen.add(text)
            print(f"warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def main(argv: list[str] | None = None) -> int:
    if _installed_version() is None:
        print("error: missingness-audit is not installed (its commands are found through the "
              "package's entry points): run `python3 -m pip install -e .` in the checkout first",
              file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with own_signals(), one_line_warnings():
            return int(args._handler(args))
    except BrokenPipeError:  # stdout closed early (``... | head``): no traceback
        # Point stdout at /dev/null so that the interpreter's final flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (KeyboardInterrupt, Terminated) as exc:  # a command without its own handler
        print(f"interrupted: {args.command} stopped before it finished; nothing was written",
              file=sys.stderr)
        return exit_status(exc)
