"""``stategym score RUN_DIR``: re-score a run directory from its trajectories alone.

Reads ``RUN_DIR/trajectories.jsonl`` (written by ``stategym run`` or ``stategym eval``) with
:func:`stategym.rundir.read_log`: a corrupt line is an error naming ``FILE:LINE``, and only
a cut last line (an interrupted append) is dropped, with a warning naming it; duplicated
episodes are refused. Each task is regenerated from the trajectory's ``(domain, seed,
knobs)`` and scored; ``scores.jsonl``, ``scorecard.json`` and ``scorecard.md`` are written
beside the file and the tables printed (one of them that exists as anything but a regular
file, a folder or a FIFO, is refused before the log is read). A ``trajectories.jsonl`` that
is there but is not a regular file (a FIFO, which would wait for a writer forever; a
folder) is refused as what it is, never called missing.

``--verify`` first replays every episode (:func:`stategym.rollout.refuse_unverified`, one
replay each) and refuses the file at the first episode whose log is not what replaying its
actions gives (an edited outcome, call result or user turn, a relabelled domain): one line
naming ``FILE:LINE``, the episode and the first difference, and nothing is written.
"""

from __future__ import annotations

import argparse

NAME = "score"
HELP = "Re-score a run directory's trajectories; write and print the scorecard."
TRAJECTORIES = "trajectories.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "run", type=options.given_path, help="run directory holding trajectories.jsonl"
    )
    options.add_bootstrap_options(parser)
    parser.add_argument(
        "--verify",
        action="store_true",
        help="replay every episode first and refuse the file if any log differs from its replay",
    )


def main(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.text import Text

    from stategym import __version__
    from stategym.kernel.errors import StateGymError, UsageError
    from stategym.kernel.files import exists_as_file, refuse_non_files
    from stategym.metrics import report, score
    from stategym.rundir import read_log, refuse_duplicates, refuse_unverified
    from stategym.tables import print_grids

    console = Console()
    path = args.run / TRAJECTORIES
    if not exists_as_file(path):  # a FIFO or a folder: refused as what it is
        raise UsageError(f"no {TRAJECTORIES} in {args.run}")
    refuse_non_files(args.run, (report.SCORES, report.SCORECARD, report.SCORECARD_MD))
    log = read_log(path)  # the file is only read: score never rewrites a run's log
    if log.cut_line is not None:
        console.print(
            Text(
                f"warning: ignored {path}:{log.cut_line}, a cut last line (an interrupted append)"
            ),
            style="yellow",
        )
    refuse_duplicates(path, log.trajectories)
    if not log.trajectories:
        raise UsageError(f"no trajectories in {path}")
    if args.verify:
        refuse_unverified(path, log.trajectories)
    try:
        cards = [score(t) for t in log.trajectories]
    except StateGymError as error:  # e.g. a domain this installation does not register
        raise UsageError(f"cannot score {path}: {error}") from None
    config = {
        "command": "score",
        "trajectories": str(path),
        "resamples": args.resamples,
        "bootstrap_seed": args.bootstrap_seed,
        "stategym_version": __version__,
    }
    rows = report.write(args.run, cards, config, resamples=args.resamples, seed=args.bootstrap_seed)
    print_grids(console, [*report.domain_grids(rows), report.litmus_grid(cards, rows)])
    console.print(Text(f"wrote {args.run / report.SCORES} and {args.run / report.SCORECARD_MD}"))
    return 0
