"""``stategym model``: build the tiny model (``init``) and describe a model folder (``info``)."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from stategym.llm.tiny import Step

NAME = "model"
HELP = "Build a tiny tool-calling model from scratch on CPU (no download), or describe one."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options
    from stategym.llm.tiny import TinyConfig

    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = sub.add_parser(
        "init",
        help="tokenizer + small Qwen2/Llama + SFT warm-up on expert episodes",
        description=TinyConfig.__doc__,
    )
    init.add_argument(
        "--out",
        type=out_dir,
        required=True,
        help="directory to write the model to (new or empty, unless --overwrite)",
    )
    init.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty --out, replacing the model files there (default: refuse "
        "it: it may hold a run or another model)",
    )
    defaults = TinyConfig()
    for field in fields(TinyConfig):
        default = getattr(defaults, field.name)
        option = "--" + field.name.replace("_", "-")
        if field.name == "arch":
            init.add_argument(
                option,
                choices=("qwen2", "llama"),
                default=default,
                help="architecture (default: %(default)s)",
            )
        else:
            init.add_argument(
                option, type=type(default), default=default, help="(default: %(default)s)"
            )
    info = sub.add_parser(
        "info",
        help="print stategym's record of a model folder (model init's recipe, or the "
        "trainer's settings; either way the rendering it was trained on)",
    )
    info.add_argument("path", type=options.given_path)


def out_dir(text: str) -> Path:
    """``--out``: a folder to write (:func:`~stategym.commands.options.output_dir`), and not
    the empty string, which would write the model into the current directory."""
    from stategym.commands.options import output_dir

    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder to write the model to, got ''")
    return output_dir(text)


def main(args: argparse.Namespace) -> int:
    from stategym.kernel.errors import UsageError
    from stategym.kernel.files import read_json
    from stategym.llm.model_files import RECORD_FILE, check_out
    from stategym.llm.tiny import TinyConfig, check_config, init_model

    if args.action == "info":
        return _info(args.path)
    values: dict[str, Any] = {f.name: getattr(args, f.name) for f in fields(TinyConfig)}
    config = TinyConfig(**values)
    check_config(config)
    if config.max_positions < config.max_length:
        raise UsageError(
            f"--max-positions {config.max_positions} is below --max-length "
            f"{config.max_length}: the model would be trained on positions it does not accept; "
            "give --max-positions at least --max-length"
        )
    check_out(args.out, overwrite=args.overwrite)
    with _progress() as progress:
        out = init_model(
            args.out, config, ProgressBar(progress, config.steps), overwrite=args.overwrite
        )
    meta = read_json(out / RECORD_FILE)  # the record init_model just wrote
    warm = meta["warm_up"]
    print(
        f"wrote {out}: {meta['parameters']:,} parameters, {warm['steps']} steps, loss "
        f"{warm['first_loss']:.3f} -> {warm['final_loss']:.3f} ({_averaged(warm['steps'])}), "
        f"{meta['seconds']:.0f} s"
    )
    return 0


def _info(path: Path) -> int:
    """Print a model folder's stategym record, once it is known to be a JSON object.

    Raises:
        UsageError: ``path`` does not exist or is not a folder, or its record cannot be read
            (a parse failing in any way: :func:`~stategym.kernel.files.json_value`; a FIFO
            or a folder in its place: :class:`~stategym.kernel.files.NotAFile`) or is not a
            JSON object (a folder without one is answered on stdout with exit 1).
    """
    from stategym.kernel.errors import UsageError
    from stategym.kernel.files import NotJSON, exists_as_file, json_value, not_a_file, read_regular
    from stategym.llm.model_files import RECORD_FILE

    if not path.exists():
        raise UsageError(f"no model folder at {path}: the path does not exist")
    if not path.is_dir():
        raise UsageError(f"{path} is {not_a_file(path) or 'a file'}, not a model folder")
    record = path / RECORD_FILE
    if not exists_as_file(record):  # an answer (exit 1), not an error: the folder is another's
        print(
            f"{path} has no {RECORD_FILE}: not made by `stategym model init` or `stategym "
            "train` (it is played in the messages rendering)"
        )
        return 1
    try:
        data = read_regular(record)
        value = json_value(data)
    except (OSError, NotJSON) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"{record} cannot be read ({reason}); the record is damaged") from None
    if not isinstance(value, dict):
        raise UsageError(f"{record} is not a JSON object; the record is damaged")
    print(data.decode(), end="")
    return 0


def _progress() -> Progress:
    """A progress display on stderr, so stdout keeps only the one-line result."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"),
        TextColumn("{task.fields[rate]} tok/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )


class ProgressBar:
    """Shows :func:`stategym.llm.tiny.init_model`'s phases, then one bar over the warm-up's
    steps with the last loss, tokens per second and the time left."""

    def __init__(self, progress: Progress, steps: int) -> None:
        self.progress = progress
        self.task: TaskID = progress.add_task("preparing", total=steps, loss="-", rate="-")

    def phase(self, name: str) -> None:
        """Name the phase in the bar's description."""
        self.progress.update(self.task, description=name)

    def step(self, step: Step) -> None:
        """Advance the bar to ``step.done`` with its loss and throughput."""
        rate = step.tokens / step.seconds if step.seconds > 0 else 0.0
        self.progress.update(
            self.task, completed=step.done, loss=f"{step.loss:.3f}", rate=f"{rate:,.0f}"
        )


def _averaged(steps: int) -> str:
    """What the final loss is the mean of (the warm-up's last 10 steps, or all of them)."""
    if steps <= 1:
        return "one step"
    return f"the mean of the last {min(10, steps)} steps"
