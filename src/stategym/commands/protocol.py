"""``stategym protocol``: the cross-topology generalisation protocol for one or more agents.

Examples::

    stategym protocol --agents expert,serial --train-on synth:chain2+fanout3+askgate+conflict
    stategym protocol --agents openai:qwen --base-url http://127.0.0.1:8000/v1 \\
        --train-on travel --shots 0,1,3,8 --demos target
    stategym protocol --report runs/protocol        # re-report a saved run from its logs

A run directory holds ``cells.json`` (the configuration, the splits and their distances) and,
per agent, ``trajectories.jsonl`` (every episode, tagged in ``meta``) and ``report.json``;
how they are read and checked: :mod:`stategym.report.protocol_files`. Each file is replaced
whole (:func:`~stategym.kernel.files.replace_bytes`), ``cells.json`` last. A folder holding a run
of other settings is refused before anything plays, and so is a file of the run that exists
as anything but a regular file (a folder, a FIFO, a device); the same command again plays
the run from the start and rewrites the same bytes. Definitions: ``docs/protocol.md``.

Refused in one line before anything plays: two agents whose folders would be one
(:func:`~stategym.report.protocol_files.refuse_shared_folders`), and a ``--seed`` whose
evaluation seeds reach down into the seeds the training plans or an LLM agent's k-shot
demonstrations are drawn from (:func:`_refuse_seen_seeds`). Every name the user gives (agents,
domains, ``--out``) is printed as text, never read as rich markup.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

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
    options.add_llm_options(parser)
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
        help="first evaluation seed, above every seed of the training plans and k-shot "
        "demonstrations (default: 100000)",
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


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    console = Console()
    if args.report is not None:
        return _rereport(console, args.report)
    return _run(console, args)


def _run(console: Console, args: argparse.Namespace) -> int:
    from rich.markup import escape

    from stategym.commands.options import llm_options, seed_range, spread_of
    from stategym.kernel.files import replace_bytes
    from stategym.kernel.trajectory import jsonl_bytes
    from stategym.report.protocol_files import LOG, agent_folder, refuse_other_settings
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
    _refuse_seen_seeds(base, agents)
    _refuse_non_files(args.out, agents)
    refuse_other_settings(args.out, base.describe(), agents)
    with console.status("building splits and measuring distances"):
        cells = make_splits(base.train, base.knobs, base.compositions, base.budget)
    with locked(args.out):  # one run at a time writes the directory (created here)
        refuse_other_settings(args.out, base.describe(), agents)  # none started meanwhile
        reports: dict[str, dict[str, Any]] = {}
        notes: dict[str, list[str]] = {}
        for agent in agents:
            config = replace(base, agent=agent)
            with console.status(f"playing {escape(agent)}") as status:

                def progress(step: str, name: str = agent) -> None:
                    status.update(escape(f"{name}: {step}"))

                run = run_protocol(config, cells, progress=progress)
            notes[agent] = list(run.notes)
            folder = agent_folder(args.out, agent)
            folder.mkdir(exist_ok=True)
            replace_bytes(folder / LOG, jsonl_bytes(run.trajectories))
            reports[agent] = _report(console, run, folder)
        _write_cells(args.out, base, agents, notes, cells)
        _compare(console, reports, args.out)
    console.print(f"wrote {escape(str(args.out))}")
    return 0


def _refuse_non_files(out: Path, agents: Sequence[str]) -> None:
    """Refuse, before anything is read or played, a file the run replaces (``cells.json``,
    ``protocol.md``, each agent's log and report) that exists as anything but a regular
    file: a folder, a FIFO or a device would be renamed over
    (:func:`stategym.kernel.files.refuse_non_files`)."""
    from stategym.kernel.files import refuse_non_files
    from stategym.report.protocol_files import CELLS, LOG, REPORT, agent_folder
    from stategym.topology.report import PROTOCOL_MD

    refuse_non_files(out, (CELLS, PROTOCOL_MD))
    for agent in agents:
        refuse_non_files(agent_folder(out, agent), (LOG, REPORT))


def _write_cells(
    out: Path, base: Any, agents: list[str], notes: dict[str, list[str]], cells: Sequence[Any]
) -> None:
    """Write ``cells.json``, the run's index, after every agent's files: it names a run
    whose every agent finished (:mod:`stategym.report.protocol_files`). ``notes`` holds
    every note of the run, each once; ``agent_notes`` each agent's own (a scripted agent's
    say it played zero-shot, an LLM agent's do not), which ``--report`` gives back to each
    agent, so it rewrites the same bytes."""
    import orjson

    from stategym.kernel.files import replace_bytes
    from stategym.report.protocol_files import CELLS

    index = {
        "config": base.describe(),
        "agents": agents,
        "notes": list(dict.fromkeys(note for own in notes.values() for note in own)),
        "agent_notes": notes,
        "cells": [c.to_dict() for c in cells],
    }
    replace_bytes(out / CELLS, orjson.dumps(index, option=orjson.OPT_INDENT_2))


def _check(agents: list[str], train: list[str], options: dict[str, Any]) -> list[str]:
    """The training domains by their canonical names; unknown agents and domains refused
    before the splits are built or anything plays."""
    from stategym.agents import agent_names
    from stategym.commands.options import domains
    from stategym.kernel.errors import UsageError
    from stategym.report.protocol_files import refuse_shared_folders

    if not agents or not train:
        raise UsageError("give at least one agent (--agents) and one domain (--train-on)")
    refuse_shared_folders(agents)
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


def _refuse_seen_seeds(base: Any, agents: Sequence[str]) -> None:
    """Refuse a ``--seed`` whose evaluation seeds reach the seeds the run shows or trains on:
    the expert's plans play seeds ``0 .. plans - 1`` of each training domain, and the k-shot
    demonstrations of an LLM agent seeds ``0 .. ceil(k / sources) - 1`` of each source
    (:func:`~stategym.topology.generalisation.demonstration_seeds`: round-robin from the
    ``--demos`` domains). Evaluating those seeds would score the agent on a task it was
    shown solved (``--seed 0 --demos target``: demonstration 1 was the evaluated task).

    Raises:
        UsageError: naming the lowest ``--seed`` allowed.
    """
    from stategym.kernel.errors import UsageError
    from stategym.topology.generalisation import demonstration_seeds

    shown = max(base.shots) if any(replace(base, agent=a).llm for a in agents) else 0
    lowest = max(base.plans, len(demonstration_seeds(base, shown)))
    if base.seed < lowest:
        raise UsageError(
            f"--seed {base.seed} would evaluate seeds the training plans or k-shot "
            f"demonstrations use (0 to {lowest - 1}); give --seed {lowest} or above "
            "(default: 100000)"
        )


def _report(console: Console, run: Any, folder: Path) -> dict[str, Any]:
    import orjson
    from rich.text import Text

    from stategym.kernel.files import replace_bytes
    from stategym.report.protocol_files import REPORT
    from stategym.tables import print_grids
    from stategym.topology.report import build_report, render

    report = build_report(run)
    replace_bytes(folder / REPORT, orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print_grids(console, render(report))
    for note in report["notes"]:
        console.print(Text(f"note: {note}", style="dim"))
    return report


def _rereport(console: Console, folder: Path) -> int:
    """Report a saved run again from its logs alone, refusing a log that is not the one the
    run wrote (:func:`~stategym.report.protocol_files.read_agent_log`), and a ``cells.json``
    that is there as anything but a regular file (a FIFO would wait for a writer forever)."""
    from stategym.kernel.files import exists_as_file
    from stategym.report.protocol_files import (
        CELLS,
        LOG,
        agent_folder,
        read_agent_log,
        read_cells,
    )
    from stategym.topology.generalisation import ProtocolRun

    exists_as_file(folder / CELLS)  # a FIFO or a folder: refused as what it is
    index = read_cells(folder)
    _refuse_non_files(folder, index.agents)
    reports = {}
    for agent in index.agents:
        config = replace(index.config, agent=agent)
        trajectories = read_agent_log(agent_folder(folder, agent) / LOG, config, index.cells)
        run = ProtocolRun(config, index.cells, trajectories, index.notes[agent])
        reports[agent] = _report(console, run, agent_folder(folder, agent))
    _compare(console, reports, folder)
    return 0


def _compare(console: Console, reports: dict[str, dict[str, Any]], out: Path) -> None:
    """Print the agents side by side (two or more); write every table to ``OUT/protocol.md``."""
    from stategym.tables import markdown, print_grids
    from stategym.topology.report import PROTOCOL_MD, compare_table, render

    grids = [grid for report in reports.values() for grid in render(report)]
    side_by_side = compare_table(reports)
    if side_by_side is not None:
        print_grids(console, [side_by_side])
        grids.append(side_by_side)
    from stategym.kernel.files import replace_bytes

    replace_bytes(out / PROTOCOL_MD, markdown(grids).encode())
