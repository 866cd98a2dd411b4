"""``stategym score RUN_DIR``: re-score a run directory from its trajectories alone.

Reads ``RUN_DIR/trajectories.jsonl`` (written by ``stategym run`` or ``stategym eval``),
regenerates each task from the trajectory's ``(domain, seed, knobs)``, scores it, writes
``scores.jsonl``, ``scorecard.json`` and ``scorecard.md`` beside it and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "score"
HELP = "Re-score a run directory's trajectories; write and print the scorecard."
TRAJECTORIES = "trajectories.jsonl"
WIDTH = 160
"""Console width when the output is not a terminal (a file or a pipe): the table's width."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument("run", type=Path, help="run directory holding trajectories.jsonl")
    parser.add_argument(
        "--resamples",
        type=options.positive_int,
        default=1000,
        help="bootstrap resamples for the intervals (default: 1000)",
    )
    parser.add_argument(
        "--bootstrap-seed",
        type=options.non_negative_int,
        default=0,
        help="seed of the bootstrap generator (default: 0)",
    )


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from stategym import __version__
    from stategym.errors import StateGymError
    from stategym.metrics import report, score
    from stategym.trajectory import read_jsonl

    console = Console(width=None if sys.stdout.isatty() else WIDTH)
    path = args.run / TRAJECTORIES
    if not path.is_file():
        console.print(f"[red]no {TRAJECTORIES} in {args.run}[/]")
        return 2
    with path.open("rb") as handle:
        lines = sum(1 for line in handle if line.strip())
    try:
        cards = [score(t) for t in read_jsonl(path, strict=False)]
    except StateGymError as error:
        console.print(f"[red]cannot score {path}:[/] {error}")
        return 2
    if len(cards) < lines:
        console.print(f"[yellow]skipped {lines - len(cards)} unreadable line(s)[/]")
    if not cards:
        console.print(f"[red]no trajectories in {path}[/]")
        return 2
    config = {
        "command": "score",
        "trajectories": str(path),
        "resamples": args.resamples,
        "bootstrap_seed": args.bootstrap_seed,
        "stategym_version": __version__,
    }
    rows = report.write(args.run, cards, config, resamples=args.resamples, seed=args.bootstrap_seed)
    for domain_table in report.rich_tables(rows):
        console.print(domain_table)
    console.print(report.litmus_table(cards, rows))
    return 0
