"""The ``stategym`` command line: one sub-command per module in :mod:`stategym.commands`.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``main(args) -> int``; the list below is explicit. Only the module of the command that runs
is imported (``stategym --help`` imports none), and a command's heavy imports happen inside
its ``main``, so every start stays fast.

Errors: anything the user can fix by changing what they typed (a :class:`UsageError`, an
unknown domain, a broken trajectory file, a damaged JSON file of any kind, deep nesting and
huge integers included (:func:`stategym.kernel.files.json_value`), a missing file, a folder
that is a file, an output that is a device or a FIFO
(:func:`stategym.kernel.files.refuse_non_file`), any OSError naming a path, such as a
symlink loop or a name too long) is one
line ``stategym: error: MESSAGE`` on stderr and exit status 2; a bad option value is
argparse's one line, also status 2; Ctrl-C is ``stategym: interrupted`` and status 130, and
SIGTERM (``kill``, ``timeout``, Slurm, ``docker stop``) is handled the same way: it is raised
as :class:`Terminated`, a :class:`KeyboardInterrupt`, so every command stops as on Ctrl-C
(finished episodes saved, workers stopped), then ``stategym: terminated`` and status 143.
An LLM endpoint that stops a run (it refused a request, kept failing after the retries, or
answered something that is no chat completion) is one line too, naming the address, the
status and the first line of its answer, and status 2; the episodes finished before it are
on disk (:func:`endpoint_failure`). So is a worker process that died under the run (killed,
out of memory, crashed: :func:`worker_failure`), with status 2: the line names the process
and how it ended, the finished episodes are on disk and the same command resumes. Any other
exception is a bug in stategym and keeps its traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import signal
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import NoReturn

from stategym import __version__
from stategym.kernel.errors import TrajectoryError, UnknownDomainError, UsageError

COMMANDS: dict[str, str] = {
    "list": "List domains, scripted agents and knobs.",
    "run": "Run an agent on seeded tasks of one domain; write trajectories and a summary.",
    "eval": (
        "Score agents on domains: outcome, decision quality, pass^k, with 95 percent intervals."
    ),
    "score": "Re-score a run directory's trajectories; write and print the scorecard.",
    "serve": "Serve a local Hugging Face model at /v1/chat/completions (OpenAI-compatible).",
    "model": "Build a tiny tool-calling model from scratch on CPU (no download), or describe one.",
    "topology": (
        "Show a domain's tool topology (names erased), draw it, or print the distance matrix."
    ),
    "protocol": (
        "Evaluate agents across tool topologies: splits, distances, gaps, collapse, probes."
    ),
    "train": "Train a policy: SFT on scripted or logged episodes, then GRPO with a credit flag.",
    "experiment": (
        "Run an experiment of the project's claims (e0-e4): tables, intervals and plots."
    ),
    "report": (
        "Write a self-contained HTML report (scorecard, plots, trajectory viewer) of run dirs."
    ),
}
"""Modules under :mod:`stategym.commands`, in the order ``--help`` shows them, with each one's
``HELP`` (repeated here so that ``stategym --help`` imports no command; a test checks they
agree)."""

USER_ERRORS: tuple[type[BaseException], ...] = (
    UsageError,
    UnknownDomainError,
    TrajectoryError,
    # A path the user named that is missing or of the wrong kind. A command that opens a
    # file of its own would also land here, but then the message still names the path.
    FileNotFoundError,
    FileExistsError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
)
"""Exceptions the CLI reports as one line and status 2 instead of a traceback (and any
:class:`OSError` that :func:`is_path_error`)."""

_MACHINE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EROFS", "EIO", "EMFILE", "ENFILE")
    if hasattr(errno, name)
)
"""Errors of the machine, not of stategym, even where no path is named (a full disk on a
``write``)."""


def is_path_error(error: OSError) -> bool:
    """Whether an :class:`OSError` is the user's to fix: it names a path (a symlink loop, a
    name too long, a folder under a file: every such error the OS raises for a path carries
    it), or it is the machine's (:data:`_MACHINE_ERRNOS`). Not all of them: an OSError
    without a path (a bad file descriptor, an invalid argument to a system call) is most
    likely a bug in stategym and keeps its traceback."""
    return error.filename is not None or error.errno in _MACHINE_ERRNOS


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C raises :class:`KeyboardInterrupt` (and a
    kind of it, so that whatever cleans up after Ctrl-C cleans up after SIGTERM too)."""


def _terminate(signum: int, frame: object) -> None:
    # a second SIGTERM while the first one's cleanup runs ends the process at once
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (the usage is one ``--help`` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(commands: Iterable[str] = tuple(COMMANDS)) -> argparse.ArgumentParser:
    """The parser, with the options of ``commands`` (their modules are imported); the other
    commands are listed by name and help line only."""
    parser = Parser(
        prog="stategym",
        description="Stateful environments and decision-quality metrics for agentic RL.",
    )
    parser.add_argument("--version", action="version", version=f"stategym {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = set(commands)
    for name, help_line in COMMANDS.items():
        command = sub.add_parser(name, help=help_line, description=help_line)
        if name in wanted:
            module = importlib.import_module(f"stategym.commands.{name.replace('-', '_')}")
            module.add_arguments(command)
            command.set_defaults(handler=module.main)
    return parser


def _named(argv: Sequence[str]) -> tuple[str, ...]:
    """The command ``argv`` runs (the first word that is not an option; before it there
    are only ``--help`` and ``--version``), if it is one."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return (first,) if first in COMMANDS else ()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status (argparse's own errors exit through ``SystemExit``)."""
    # signal handlers can only be set from the main thread (a test may call main elsewhere)
    handles = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if handles else None
    try:
        words = sys.argv[1:] if argv is None else argv
        # only the command that runs is imported: the others' dependencies stay unloaded
        args = build_parser(_named(words)).parse_args(words)
        return int(args.handler(args) or 0)
    except Terminated:
        print("stategym: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("stategym: interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as error:
        print(f"stategym: error: {describe(error)}", file=sys.stderr)
        return 2
    except OSError as error:
        if not is_path_error(error):
            raise
        print(f"stategym: error: {describe(error)}", file=sys.stderr)
        return 2
    except Exception as error:
        line = endpoint_failure(error) or worker_failure(error)
        if line is None:
            raise
        print(f"stategym: error: {line}", file=sys.stderr)
        return 2
    finally:
        if handles:
            signal.signal(signal.SIGTERM, previous)


def endpoint_failure(error: Exception) -> str | None:
    """The one line for an LLM endpoint's error that stopped the command, or ``None``.

    Such errors are the ``openai`` client's (:func:`stategym.llm.openai_agent.failure_line`);
    when that client was never imported, no endpoint was asked, and nothing is imported here.
    """
    if "openai" not in sys.modules:
        return None
    from stategym.llm.openai_agent import failure_line

    line = failure_line(error)
    return None if line is None else " ".join(line.split())


def worker_failure(error: Exception) -> str | None:
    """The one line for a worker process that died under the command, or ``None``.

    Such errors are :class:`stategym.rollout.workers.WorkerDied` (the machine's doing, not
    stategym's: a ``kill -9``, the out-of-memory killer); where that module was never
    imported, no worker ran, and nothing is imported here.
    """
    workers = sys.modules.get("stategym.rollout.workers")
    if workers is None or not isinstance(error, workers.WorkerDied):
        return None
    return describe(error)


def describe(error: BaseException) -> str:
    """The error's message on one line."""
    if isinstance(error, OSError) and error.filename is not None:
        text = f"{error.strerror or error}: {error.filename}"
    elif isinstance(error, KeyError) and error.args:
        text = str(error.args[0])  # str() of a KeyError would add quotes
    else:
        text = str(error) or type(error).__name__
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


if __name__ == "__main__":
    sys.exit(main())
