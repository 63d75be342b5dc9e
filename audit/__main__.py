"""Command-line entry point: ``python -m audit <command> ...``.

Each subcommand lives in its own module exposing ``add_parser(subparsers)`` (which registers
the subcommand) and ``main(args) -> int``. To add one, append ``(name, "module.path")`` to
``_COMMANDS``. Every command module is imported to build the parser, so each must keep heavy
imports (numba kernels, matplotlib) inside its ``main`` to keep ``python -m audit bound`` fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (subcommand, module implementing add_parser/main)
_COMMANDS: list[tuple[str, str]] = [
    ("bound", "audit.cli_bound"),
    ("run", "audit.cli_run"),
    ("suite", "audit.cli_suite"),
    ("report", "audit.cli_report"),
]


class _Parser(argparse.ArgumentParser):
    """Usage errors print one line ``error: ...`` on stderr and exit with status 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m audit",
        description="Empirical privacy auditing of DP releases under missing data.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for _name, module_name in _COMMANDS:
        module = importlib.import_module(module_name)
        p = module.add_parser(sub)
        p.set_defaults(_handler=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args._handler(args))


if __name__ == "__main__":
    sys.exit(main())
