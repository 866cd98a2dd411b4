"""The ``stategym`` command line: one sub-command per module in :mod:`stategym.commands`.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``; the list below is explicit, and a command's heavy imports happen
inside its ``main`` so ``stategym list`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS = (
    "list",
    "run",
    "eval",
    "score",
    "serve",
    "model",
    "topology",
    "protocol",
)
"""Modules under :mod:`stategym.commands`, in the order ``--help`` shows them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stategym",
        description="Stateful environments and decision-quality metrics for agentic RL.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"stategym.commands.{name.replace('-', '_')}")
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(handler=module.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
