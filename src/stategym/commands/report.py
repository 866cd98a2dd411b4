"""``stategym report RUN_DIR [RUN_DIR...] --out report.html``: one self-contained HTML file.

Reads run directories only (``stategym run``/``eval`` trajectories, ``stategym train``
metrics, ``stategym protocol`` reports) and never plays an episode; see ``docs/report.md``.
Needs matplotlib (``pip install 'stategym[plot]'``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "report"
HELP = "Write a self-contained HTML report (scorecard, plots, trajectory viewer) of run dirs."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "runs", type=Path, nargs="+", metavar="RUN_DIR", help="run directories to report on"
    )
    parser.add_argument(
        "--out",
        type=options.output_path,
        default=Path("report.html"),
        help="the HTML file to write (default: report.html)",
    )
    parser.add_argument("--title", default="stategym report", help="the page title")
    parser.add_argument(
        "--viewer-episodes",
        type=options.non_negative_int,
        default=100,
        help="episodes embedded in the viewer per run, domain and agent; 0 for all "
        "(the scorecard always uses every episode) (default: 100)",
    )
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
    from stategym.kernel.errors import UsageError

    try:
        import matplotlib  # noqa: F401  (checked before any run directory is read)
    except ImportError:
        raise UsageError("stategym report needs matplotlib: pip install 'stategym[plot]'") from None
    from stategym import __version__
    from stategym.report import Options, write

    options = Options(
        title=args.title,
        viewer_limit=args.viewer_episodes,
        resamples=args.resamples,
        seed=args.bootstrap_seed,
        version=__version__,
    )
    out = write(args.runs, args.out, options)
    print(f"wrote {out}")
    return 0
