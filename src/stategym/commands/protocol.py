"""``stategym protocol``: the cross-topology generalisation protocol for one or more agents.

Examples::

    stategym protocol --agents expert,serial --train-on synth:chain2+fanout3+askgate+conflict
    stategym protocol --agents openai:qwen --base-url http://127.0.0.1:8000/v1 \\
        --train-on travel --shots 0,1,3,8 --demos target
    stategym protocol --report runs/protocol        # re-report a saved run from its logs

A run directory holds ``cells.json`` (the configuration, the splits and their distances) and,
per agent, ``trajectories.jsonl`` (every episode, tagged in ``meta``) and ``report.json``.
Definitions: ``docs/protocol.md``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from stategym.kernel.trajectory import Trajectory

NAME = "protocol"
HELP = "Evaluate agents across tool topologies: splits, distances, gaps, collapse, probes."

DEFAULT_TRAIN = "synth:chain2+fanout3+askgate+verifycommit+conflict"
"""A training topology with every kind of decision: dependent lookups, a parallel fan-out,
a must-ask fact, a hidden priority order, and a verify-then-commit gate."""
DEFAULT_AGENTS = "expert,serial"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    _add_who(parser)
    _add_evaluation(parser)
    parser.add_argument(
        "--out",
        type=options.output_dir,
        default=Path("runs/protocol"),
        help="run directory (default: runs/protocol)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="re-report a saved run directory instead of running (default: run)",
    )
    options.add_llm_options(parser, concurrency=False)
    options.add_spread_options(parser)


def _add_who(parser: argparse.ArgumentParser) -> None:
    """The agents evaluated and the domains they train on."""
    from stategym.commands import options

    parser.add_argument(
        "--agents",
        type=options.names,
        default=options.names(DEFAULT_AGENTS),
        help="comma-separated agents: scripted names, openai:MODEL, hf:PATH "
        f"(default: {DEFAULT_AGENTS})",
    )
    # The old spelling, kept so existing command lines still work.
    parser.add_argument(
        "--agent",
        dest="agents",
        type=options.names,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--train-on",
        type=options.names,
        default=options.names(DEFAULT_TRAIN),
        help="comma-separated training domains, registered or synth:<spec> "
        f"(default: {DEFAULT_TRAIN})",
    )


def _add_evaluation(parser: argparse.ArgumentParser) -> None:
    """Seeds, knobs, demonstrations, probes, the composition split and the search budget."""
    from stategym.commands import options

    parser.add_argument(
        "--episodes", type=options.positive_int, default=20, help="seeds per cell (default: 20)"
    )
    parser.add_argument(
        "--seed",
        type=options.non_negative_int,
        default=100_000,
        help="first evaluation seed (default: 100000)",
    )
    options.add_knobs(parser)
    parser.add_argument(
        "--shots",
        type=options.whole_numbers,
        default=(0,),
        help="in-context demonstration counts, e.g. 0,1,3,8 (LLM agents) (default: 0)",
    )
    parser.add_argument(
        "--demos",
        choices=("train", "target"),
        default="train",
        help="k-shot demonstrations from the training or the target domain (default: train)",
    )
    parser.add_argument(
        "--probes",
        type=options.non_negative_int,
        default=10,
        help="probe pairs per domain (default: 10)",
    )
    parser.add_argument(
        "--compositions",
        type=options.non_negative_int,
        default=4,
        help="cells in the composition split (default: 4)",
    )
    parser.add_argument(
        "--budget",
        type=options.positive_int,
        default=None,
        help="edit-distance search budget in expanded states (default: 10,000)",
    )


def _slug(agent: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in agent)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    if args.report is not None:
        return _rereport(console, args.report)
    return _run(console, args)


def _run(console: Console, args: argparse.Namespace) -> int:
    import orjson

    from stategym.commands.options import llm_options, seed_range, spread_of
    from stategym.kernel.trajectory import write_jsonl
    from stategym.rundir import locked
    from stategym.topology.distance import EXPANSION_BUDGET
    from stategym.topology.generalisation import ProtocolConfig, run_protocol
    from stategym.topology.split import make_splits

    agents: list[str] = args.agents
    options = llm_options(args)
    train = _check(agents, args.train_on, options)
    seed_range(args.seed, args.episodes)
    base = ProtocolConfig(
        agent=agents[0],
        train=tuple(train),
        episodes=args.episodes,
        seed=args.seed,
        knobs=args.knobs,
        shots=args.shots,
        demos=args.demos,
        probes=args.probes,
        compositions=args.compositions,
        budget=args.budget or EXPANSION_BUDGET,
        options=options,
        spread=spread_of(args),
    )
    with console.status("building splits and measuring distances"):
        cells = make_splits(base.train, base.knobs, base.compositions, base.budget)
    with locked(args.out):  # one run at a time writes the directory (created here)
        reports: dict[str, dict[str, Any]] = {}
        notes: list[str] = []
        for agent in agents:
            config = replace(base, agent=agent)
            with console.status(f"playing {agent}") as status:

                def progress(step: str, name: str = agent) -> None:
                    status.update(f"{name}: {step}")

                run = run_protocol(config, cells, progress=progress)
            notes = list(run.notes)
            folder = args.out / _slug(agent)
            folder.mkdir(exist_ok=True)
            write_jsonl(folder / "trajectories.jsonl", run.trajectories)
            reports[agent] = _report(console, run, folder)
        (args.out / "cells.json").write_bytes(
            orjson.dumps(
                {
                    "config": base.describe(),
                    "agents": agents,
                    "notes": notes,
                    "cells": [c.to_dict() for c in cells],
                },
                option=orjson.OPT_INDENT_2,
            )
        )
        _compare(console, reports, args.out)
    console.print(f"wrote {args.out}")
    return 0


def _check(agents: list[str], train: list[str], options: dict[str, Any]) -> list[str]:
    """The training domains by their canonical names; unknown agents and domains refused
    before the splits are built or anything plays."""
    from stategym.agents import agent_names
    from stategym.commands.options import domains
    from stategym.kernel.errors import UsageError

    if not agents or not train:
        raise UsageError("give at least one agent (--agents) and one domain (--train-on)")
    canonical = domains(train)  # UnknownDomainError names an unknown one
    for spec in agents:
        kind, sep, target = spec.partition(":")
        if sep:
            from stategym.llm import check_agent

            check_agent(kind, target, **options)
        elif spec not in agent_names():
            raise UsageError(
                f"unknown agent {spec!r}; scripted agents: {', '.join(agent_names())}; "
                "LLM agents: openai:MODEL, hf:PATH"
            )
    return canonical


def _report(console: Console, run: Any, folder: Path) -> dict[str, Any]:
    import orjson

    from stategym.tables import print_grids
    from stategym.topology.report import build_report, render

    report = build_report(run)
    (folder / "report.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print_grids(console, render(report))
    for note in report["notes"]:
        console.print(f"[dim]note: {note}[/dim]")
    return report


def _rereport(console: Console, folder: Path) -> int:
    """Report a saved run again from its logs alone, refusing a log that is not the one the
    run wrote (:func:`_read_agent_log`)."""
    from stategym.topology.generalisation import ProtocolRun

    config, cells, agents, notes = _read_cells(folder)
    reports = {}
    for agent in agents:
        agent_config = replace(config, agent=agent)
        trajectories = _read_agent_log(
            folder / _slug(agent) / "trajectories.jsonl", agent_config, cells
        )
        run = ProtocolRun(agent_config, cells, trajectories, notes)
        reports[agent] = _report(console, run, folder / _slug(agent))
    _compare(console, reports, folder)
    return 0


def _read_cells(folder: Path) -> tuple[Any, tuple[Any, ...], list[str], tuple[str, ...]]:
    """``cells.json``: the run's configuration, cells, agents and notes.

    Raises:
        UsageError: the file is missing, not JSON, or lacks a field or has one of the wrong
            type (naming it).
    """
    import orjson

    from stategym.kernel.errors import UsageError
    from stategym.topology.generalisation import ProtocolConfig
    from stategym.topology.split import Cell

    path = folder / "cells.json"
    if not path.is_file():
        raise UsageError(f"no cells.json in {folder}: not a protocol run directory")
    try:
        saved = orjson.loads(path.read_bytes())
        if not isinstance(saved, dict):
            raise TypeError("not a JSON object")
        agents = saved["agents"]
        if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
            raise TypeError("'agents' is not a list of agent names")
        notes = tuple(str(note) for note in saved.get("notes", []))
        cells = tuple(Cell.from_dict(c) for c in saved["cells"])
        config = ProtocolConfig.from_dict(saved["config"])
    except orjson.JSONDecodeError as error:
        raise UsageError(f"{path} is not valid JSON: {error}") from None
    except KeyError as error:
        raise UsageError(f"{path} lacks {error}: not a protocol run's cells.json") from None
    except (TypeError, ValueError, AttributeError) as error:  # a field of the wrong shape
        raise UsageError(f"{path} has a field of the wrong type: {error}") from None
    return config, cells, agents, notes


def _read_agent_log(file: Path, config: Any, cells: Sequence[Any]) -> tuple[Trajectory, ...]:
    """One agent's episodes, read as a run directory's are (:func:`~stategym.rollout.read_log`
    and :func:`~stategym.rollout.refuse_duplicates`), each checked to be one the run played
    for ``config.agent`` (the expert plays the plans and references) over ``cells`` and
    ``config``'s seeds, and none missing (probes, found by a search, are checked by agent
    and cell only).

    Raises:
        UsageError: a cut or unreadable line, a duplicated, foreign or missing episode.
    """
    from stategym.kernel.errors import UsageError
    from stategym.rollout import read_log, refuse_duplicates

    log = read_log(file)
    if log.cut_line is not None:
        raise UsageError(f"{file}:{log.cut_line}: a cut last line; run the protocol again")
    refuse_duplicates(file, log.trajectories)
    expected = _expected_episodes(config, cells)
    probe_cells = {cell.domain for cell in cells}
    found = set()
    for line, trajectory in enumerate(log.trajectories, start=1):
        role = trajectory.run.role
        agent = config.agent if role in ("agent", "probe") else "expert"
        if trajectory.agent != agent:
            raise UsageError(
                f"{file}:{line}: a {role} episode of {trajectory.agent!r}, not of {agent!r}: "
                f"not the log of {config.agent!r}"
            )
        key = _episode(trajectory)
        if role == "probe" and trajectory.meta.get("cell") in probe_cells:
            continue
        if key not in expected:
            raise UsageError(
                f"{file}:{line}: {role} episode {key[1:]} is not one of the run's cells and "
                "seeds in cells.json"
            )
        found.add(key)
    missing = sorted(expected - found, key=str)
    if missing:
        raise UsageError(
            f"{file} lacks {len(missing)} of the run's {len(expected)} plan, reference and "
            f"agent episodes (e.g. {missing[0][0]} {missing[0][1:]}): run the protocol again"
        )
    return tuple(log.trajectories)


def _episode(trajectory: Trajectory) -> tuple[Any, ...]:
    """What tells a protocol episode apart: role, domain, seed, knobs, split, cell, shots."""
    meta = trajectory.meta
    return (
        trajectory.run.role,
        trajectory.domain,
        trajectory.seed,
        trajectory.knobs.describe(),
        str(meta.get("split", "")),
        str(meta.get("cell", "")),
        str(meta.get("shots", "")),
    )


def _expected_episodes(config: Any, cells: Sequence[Any]) -> set[tuple[Any, ...]]:
    """The plan, reference and agent episodes :func:`run_protocol` plays for ``config``."""
    knobs = config.knobs.describe()
    seeds = range(config.seed, config.seed + config.episodes)
    shots = [k for k in config.shots if k == 0 or config.llm]
    expected = {
        ("plan", name, s, knobs, "", "", "") for name in config.train for s in range(config.plans)
    }
    for cell in cells:
        where = (str(cell.split), cell.domain)
        expected |= {("reference", cell.domain, s, knobs, *where, "") for s in seeds}
        expected |= {("agent", cell.domain, s, knobs, *where, str(k)) for s in seeds for k in shots}
    return expected


def _compare(console: Console, reports: dict[str, dict[str, Any]], out: Path) -> None:
    """Print the agents side by side (two or more); write every table to ``OUT/protocol.md``."""
    from stategym.tables import markdown, print_grids
    from stategym.topology.report import PROTOCOL_MD, compare_table, render

    grids = [grid for report in reports.values() for grid in render(report)]
    side_by_side = compare_table(reports)
    if side_by_side is not None:
        print_grids(console, [side_by_side])
        grids.append(side_by_side)
    (out / PROTOCOL_MD).write_text(markdown(grids))
