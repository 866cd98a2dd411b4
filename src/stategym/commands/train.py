"""``stategym train``: supervised fine-tuning (``sft``) and GRPO-family RL (``grpo``).

Every option is a field of :class:`~stategym.train.config.SFTConfig` or
:class:`~stategym.train.config.GRPOConfig`, its help the field's docstring (one source for
both). The command writes the run directory (``config.json``, ``metrics.jsonl``,
``checkpoints/``, ``model/``) and prints its path; re-running it resumes (see
``docs/training.md``).

One option's default is not its field's: ``--rendering`` left out means the start model's
(:func:`~stategym.train.config.start_rendering`: ``--init RUN`` trains in the rendering
``RUN/model`` records; ``tiny`` in the field's default, ``compact``), so a run goes on in
the rendering its start model was trained on unless told otherwise.
"""

from __future__ import annotations

import argparse
import typing
from dataclasses import MISSING, Field, fields
from typing import Any

NAME = "train"
HELP = "Train a policy: SFT on scripted or logged episodes, then GRPO with a credit flag."
START_DEFAULT = {
    "rendering": "the start model's: what its folder records (RUN/model's for --init RUN), "
    "messages for a model without a record, compact for --init tiny"
}
"""Options whose default is read from the start model (``None`` on the command line)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.train.config import GRPOConfig, SFTConfig

    sub = parser.add_subparsers(dest="algorithm", required=True, metavar="ALGORITHM")
    for name, cls in (("sft", SFTConfig), ("grpo", GRPOConfig)):
        command = sub.add_parser(name, help=cls.__doc__, description=cls.__doc__)
        add_config_options(command, cls)
        command.add_argument(
            "--report",
            action="store_true",
            help="also write OUT/report.html (stategym report of this run; needs matplotlib)",
        )


def add_config_options(parser: argparse.ArgumentParser, cls: type) -> None:
    """One option per field of the config dataclass ``cls`` (help: its docstring)."""
    from stategym.train.config import field_help

    hints = typing.get_type_hints(cls)
    docs = field_help(cls)
    for field in fields(cls):
        option = "--" + field.name.replace("_", "-")
        default = None if field.name in START_DEFAULT else _default(field)
        shown = START_DEFAULT.get(field.name, "%(default)s")
        text = f"{docs.get(field.name, '')} (default: {shown})"
        kind = hints[field.name]
        if isinstance(default, bool):
            parser.add_argument(
                option, action=argparse.BooleanOptionalAction, default=default, help=text
            )
        elif typing.get_origin(kind) is typing.Literal:
            parser.add_argument(option, choices=typing.get_args(kind), default=default, help=text)
        else:
            parser.add_argument(option, type=type(default), default=default, help=text)


def _default(field: Field[Any]) -> Any:
    if field.default is not MISSING:
        return field.default
    if field.default_factory is not MISSING:
        return field.default_factory()
    raise TypeError(f"config field {field.name} has no default")


def refuse_ignored(config: Any) -> None:
    """Refuse an SFT setting moved from its default that the run would ignore: the
    command line said something the run does not do (a config built in code, as E2's arms
    build one for several starts, is not checked).

    Raises:
        UsageError: ``--episodes`` beside ``--agents run:DIR`` (the log's episodes are
            the demonstrations), ``--tiny-width``/``--tiny-vocab`` beside an ``--init``
            other than ``tiny`` (the start model has its own sizes).
    """
    from stategym.kernel.errors import UsageError
    from stategym.train.config import SFTConfig

    defaults = SFTConfig()
    moved = [
        name
        for name in ("episodes", "tiny_width", "tiny_vocab")
        if getattr(config, name) != getattr(defaults, name)
    ]
    if "episodes" in moved and config.agents.startswith("run:"):
        raise UsageError(
            f"--episodes {config.episodes}: --agents {config.agents} learns from every "
            "episode of that log; leave --episodes out"
        )
    sizes = [f"--{name.replace('_', '-')}" for name in moved if name.startswith("tiny_")]
    if sizes and config.init != "tiny":
        raise UsageError(
            f"{' and '.join(sizes)} size the model --init tiny builds; --init {config.init} "
            "has its own sizes: leave them out"
        )


def settings(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The config's fields from the command line, an unset ``--rendering`` taken from the
    start model (:data:`START_DEFAULT`; the field's default for ``tiny``)."""
    from stategym.train.config import start_rendering

    values = {f.name: getattr(args, f.name) for f in fields(cls)}
    if values["rendering"] is None:
        field = next(f for f in fields(cls) if f.name == "rendering")
        values["rendering"] = start_rendering(values["init"]) or _default(field)
    return values


def main(args: argparse.Namespace) -> int:
    from stategym.train import grpo, sft
    from stategym.train.config import GRPOConfig, SFTConfig

    if args.report:  # refused now, not after the run has trained
        from pathlib import Path

        from stategym.commands.report import check_report

        check_report(Path(args.out))
    if args.algorithm == "sft":
        config = SFTConfig(**settings(args, SFTConfig))
        refuse_ignored(config)
        run = sft.train(config)
    else:
        run = grpo.train(GRPOConfig(**settings(args, GRPOConfig)))
    print(f"wrote {run} (metrics.jsonl, checkpoints/, model/)")
    if args.report:
        from stategym.commands.report import REPORT_FILE, write_report

        print(f"report: {write_report([run], run / REPORT_FILE)}")
    return 0
