"""``stategym report RUN_DIR [RUN_DIR...] --out report.html``: one self-contained HTML file.

Reads run directories only (``stategym run``/``eval`` trajectories, ``stategym train``
metrics, ``stategym protocol`` reports, ``stategym experiment`` results) and never plays an
episode; see ``docs/report.md``. ``--out`` is never a file of a run nor any existing file but
an earlier report, and never a folder, device, FIFO or socket, which the rename of the page
would replace (:func:`stategym.report.runs.refuse_output`, checked before anything is
read). Needs matplotlib (``pip install 'stategym[plot]'``). The commands that take
``--report`` check ``OUT/report.html`` the same way before they play or train anything
(:func:`check_report`). An ``--out`` that is a link is written through (the file it names
replaced, the link kept); ``OUT/report.html`` replaces a link there as a name
(:mod:`stategym.kernel.files`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

NAME = "report"
HELP = "Write a self-contained HTML report (scorecard, plots, trajectory viewer) of run dirs."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "runs",
        type=options.given_path,
        nargs="+",
        metavar="RUN_DIR",
        help="run directories to report on",
    )
    parser.add_argument(
        "--out",
        type=options.output_file,
        default=Path("report.html"),
        help="the HTML file to write; an existing one must be an earlier report, and one "
        "inside a run directory must end in .html (default: report.html)",
    )
    parser.add_argument(
        "--title", default="stategym report", help="the page title (default: stategym report)"
    )
    parser.add_argument(
        "--viewer-episodes",
        type=options.non_negative_int,
        default=100,
        help="episodes embedded in the viewer per run, domain and agent; 0 for all "
        "(the scorecard always uses every episode) (default: 100)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="replay every episode first and refuse a log that differs from its replay",
    )
    options.add_bootstrap_options(parser)


def main(args: argparse.Namespace) -> int:
    out = write_report(
        args.runs,
        args.out,
        through_link=True,  # --out is the user's: a link there is written through
        title=args.title,
        viewer_limit=args.viewer_episodes,
        resamples=args.resamples,
        seed=args.bootstrap_seed,
        verify=args.verify,
    )
    print(f"wrote {out}")
    return 0


def require_matplotlib() -> None:
    """Refuse, in one line, before anything is played or read, where matplotlib is missing."""
    from stategym.kernel.errors import UsageError

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("stategym report needs matplotlib: pip install 'stategym[plot]'") from None


def check_report(run: Path) -> Path:
    """What a ``--report`` flag checks before its command plays or trains anything:
    matplotlib is there, and ``run/report.html`` may be written
    (:func:`~stategym.report.runs.refuse_output`: an earlier report or nothing, never a
    folder, a device or a FIFO). Returns that path.

    Raises:
        UsageError: either is not so.
    """
    require_matplotlib()
    from stategym.report.runs import refuse_output

    out = run / REPORT_FILE
    refuse_output(out, [run])
    return out


REPORT_FILE = "report.html"
"""The name of the report every ``--report`` flag writes in its run directory."""


def write_report(
    runs: list[Path], out: Path, *, through_link: bool = False, **changes: Any
) -> Path:
    """The report of ``runs`` written to ``out``, with :class:`~stategym.report.Options`
    fields changed by ``changes``; what ``report`` and every ``--report`` flag run. A link
    at ``out`` is written through only with ``through_link`` (``report --out``, named by the
    user); a ``--report`` flag's ``OUT/report.html`` replaces a link as a name
    (:mod:`stategym.kernel.files`)."""
    require_matplotlib()
    from dataclasses import replace

    from stategym import __version__
    from stategym.report import Options, write

    options = replace(Options(version=__version__), **changes)
    return write(runs, out, options, through_link=through_link)
