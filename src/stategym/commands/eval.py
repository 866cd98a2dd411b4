"""``stategym eval``: play agents on domains and print the decision-quality scorecard.

Every (domain, agent) plays seeds ``seed .. seed + episodes - 1`` (``--samples`` times each,
for pass^k), under one knob setting or the ``mixed`` set. Trajectories are appended to
``OUT/trajectories.jsonl`` as episodes end (running the command again resumes; a cut last
line is dropped), then every trajectory is scored and ``scores.jsonl``, ``scorecard.json``
and ``scorecard.md`` are written (see :mod:`stategym.metrics.report`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stategym.domain import Domain
    from stategym.knobs import Knobs
    from stategym.trajectory import Trajectory

NAME = "eval"
HELP = "Score agents on domains: outcome, decision quality, pass^k, with 95 percent intervals."

LLM_OPTIONS = ("base_url", "temperature", "max_tokens", "concurrency")
"""Options passed to the agent resolver when given; scripted agents ignore them."""
TRAJECTORIES = "trajectories.jsonl"
WIDTH = 160
"""Console width when the output is not a terminal (a file or a pipe): the table's width."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "--domains",
        type=options.names,
        default=[],
        help="comma-separated domains (default: every registered domain)",
    )
    parser.add_argument(
        "--agents",
        type=options.names,
        default=options.names("expert,oracle,serial,random"),
        help="comma-separated agents: scripted names, openai:MODEL, hf:PATH "
        "(default: expert,oracle,serial,random)",
    )
    parser.add_argument(
        "--episodes",
        type=options.positive_int,
        default=100,
        help="seeds per domain and agent (default: 100)",
    )
    parser.add_argument(
        "--seed", type=options.non_negative_int, default=0, help="first seed (default: 0)"
    )
    options.add_knobs(parser, mixed=True)
    parser.add_argument(
        "--samples",
        type=options.positive_int,
        default=1,
        help="episodes per task, for pass^k (default: 1)",
    )
    parser.add_argument(
        "--out",
        type=options.output_dir,
        default=Path("runs/eval"),
        help="run directory (default: runs/eval)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard the directory's trajectories instead of resuming",
    )
    parser.add_argument(
        "--resamples",
        type=options.positive_int,
        default=1000,
        help="bootstrap resamples for the intervals (default: 1000)",
    )
    options.add_llm_options(parser)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from stategym import __version__
    from stategym.domains import all_domains
    from stategym.metrics.taskset import knob_schedule

    console = Console(width=None if sys.stdout.isatty() else WIDTH)
    domains = args.domains or list(all_domains())
    unknown = [d for d in domains if d not in all_domains()]
    if unknown:
        console.print(
            f"[red]unknown domain(s):[/] {', '.join(unknown)}; registered: "
            f"{', '.join(all_domains())}"
        )
        return 2
    try:
        schedule = knob_schedule(args.knobs)
    except ValueError as error:
        console.print(f"[red]bad --knobs:[/] {error}")
        return 2
    options = {k: getattr(args, k) for k in LLM_OPTIONS if getattr(args, k) is not None}
    args.out.mkdir(parents=True, exist_ok=True)
    finished = _resume(args.out / TRAJECTORIES, args.overwrite)
    seeds = range(args.seed, args.seed + args.episodes)
    jobs = [
        (all_domains()[d], agent, seed, schedule(seed))
        for d in domains
        for agent in args.agents
        for seed in seeds
    ]
    try:
        finished += _play(args.out / TRAJECTORIES, jobs, args.samples, finished, options, console)
    except KeyError as error:
        console.print(f"[red]{error.args[0]}[/]")
        return 2
    config = {
        "command": "eval",
        "domains": domains,
        "agents": args.agents,
        "episodes": args.episodes,
        "seed": args.seed,
        "knobs": args.knobs,
        "samples": args.samples,
        "resamples": args.resamples,
        "stategym_version": __version__,
    }
    return _report(args.out, finished, config, args.resamples, console)


def _resume(path: Path, overwrite: bool) -> list[Trajectory]:
    """Trajectories already in the file (rewritten without a cut last line)."""
    from stategym.trajectory import read_jsonl, write_jsonl

    if overwrite or not path.exists():
        path.write_bytes(b"")
        return []
    kept = list(read_jsonl(path, strict=False))
    write_jsonl(path, kept)
    return kept


def _play(
    path: Path,
    jobs: list[tuple[Domain, str, int, Knobs]],
    samples: int,
    finished: list[Trajectory],
    options: dict[str, Any],
    console: Any,
) -> list[Trajectory]:
    """Play every job not already finished, appending each trajectory as it ends."""
    from rich.progress import Progress

    from stategym.trajectory import dumps

    done = Counter((t.domain, t.agent, t.seed, t.knobs) for t in finished)
    todo = [
        (d, a, s, k)
        for d, a, s, k in jobs
        for _ in range(max(0, samples - done[(d.name, a, s, k)]))
    ]
    played: list[Trajectory] = []
    with path.open("ab") as handle, Progress(console=console, transient=True) as progress:
        task = progress.add_task("episodes", total=len(todo))
        for trajectory in _episodes(todo, options, done):
            handle.write(dumps(trajectory) + b"\n")
            handle.flush()
            played.append(trajectory)
            progress.advance(task)
    return played


def _episodes(
    todo: list[tuple[Domain, str, int, Knobs]], options: dict[str, Any], done: Counter[Any]
) -> Iterator[Trajectory]:
    """Play the jobs in order; each trajectory is stamped with the agent spec."""
    from dataclasses import replace

    llm = [job for job in todo if ":" in job[1]]  # openai:MODEL, hf:PATH
    if llm:
        from stategym.llm.runner import stream_jobs  # concurrent, with per-sample seeds

        yield from stream_jobs(llm, options, done)
        todo = [job for job in todo if ":" not in job[1]]

    from stategym.agents import resolve
    from stategym.env import Env
    from stategym.runner import run_episode

    envs: dict[tuple[str, Knobs], Env] = {}
    factories: dict[tuple[str, str], Any] = {}
    for domain, agent, seed, knobs in todo:
        env = envs.setdefault((domain.name, knobs), Env(domain, knobs=knobs))
        if (domain.name, agent) not in factories:
            factories[(domain.name, agent)] = resolve(domain, agent, **options)
        trajectory = run_episode(env, factories[(domain.name, agent)], seed)
        yield replace(trajectory, agent=agent)


def _report(
    out: Path, trajectories: list[Trajectory], config: dict[str, Any], resamples: int, console: Any
) -> int:
    """Score every trajectory, write the scorecard files and print the tables."""
    from stategym.metrics import report, score

    cards = [score(t) for t in trajectories]
    rows = report.write(out, cards, config, resamples=resamples)
    for domain_table in report.rich_tables(rows):
        console.print(domain_table)
    console.print(report.litmus_table(cards, rows))
    console.print(f"scores: {out / report.SCORES}   table: {out / report.SCORECARD_MD}")
    return 0
