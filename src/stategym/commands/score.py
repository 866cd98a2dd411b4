"""``stategym score RUN_DIR``: re-score a run directory from its trajectories alone.

Reads ``RUN_DIR/trajectories.jsonl`` (written by ``stategym run`` or ``stategym eval``) one
episode at a time (:func:`stategym.rollout.log.map_log`: the scorecards are kept, the
episodes not, so a log far larger than memory can be scored), by the rule of
:func:`stategym.rundir.read_log`: a corrupt line is an error naming ``FILE:LINE``, and only
a cut last line (an interrupted append) is dropped, with a warning naming it; duplicated
episodes are refused. Each task is regenerated from the trajectory's ``(domain, seed,
knobs)`` and scored; ``scores.jsonl``, ``scorecard.json`` and ``scorecard.md`` are written
beside the file and the tables printed (one of them that exists as anything but a regular
file, a folder or a FIFO, is refused before the log is read). A ``trajectories.jsonl`` that
is there but is not a regular file (a FIFO, which would wait for a writer forever; a
folder) is refused as what it is, never called missing.

``--verify`` also replays every episode before scoring it (one replay each) and refuses the
file at the first episode whose log is not what replaying its actions gives (an edited
outcome, call result or user turn, a relabelled domain): one line naming ``FILE:LINE``, the
episode and the first difference, and nothing is written. Duplicated episodes are refused
before that, and an episode that cannot be scored (a domain this installation does not
register) is refused in file order with it.
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
    from stategym.kernel.trajectory import Trajectory
    from stategym.metrics import Scorecard, report, score
    from stategym.rollout.log import map_log
    from stategym.tables import print_grids

    console = Console()
    path = args.run / TRAJECTORIES
    if not exists_as_file(path):  # a FIFO or a folder: refused as what it is
        raise UsageError(f"no {TRAJECTORIES} in {args.run}")
    refuse_non_files(args.run, (report.SCORES, report.SCORECARD, report.SCORECARD_MD))

    def scored(trajectory: Trajectory) -> Scorecard:
        try:
            return score(trajectory)
        except StateGymError as error:  # e.g. a domain this installation does not register
            raise UsageError(f"cannot score {path}: {error}") from None

    def warn(line: int) -> None:  # before any refusal, as reading the file whole did
        warning = f"warning: ignored {path}:{line}, a cut last line (an interrupted append)"
        console.print(Text(warning), style="yellow")

    # one episode in memory at a time (the cards are kept): score never rewrites a run's log
    cards, _ = map_log(path, scored, verify=args.verify, cut=warn)
    if not cards:
        raise UsageError(f"no trajectories in {path}")
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
