"""``stategym run``: play one agent on one domain's seeded tasks into a run directory.

Seeds ``seed .. seed + episodes - 1`` are played in order; each trajectory is appended to
``OUT/trajectories.jsonl`` as its episode ends, then ``OUT/summary.json`` is written and the
run is indexed in ``<OUT parent>/index.sqlite``. Running the same command again resumes:
seeds already in the file are skipped (``--overwrite`` starts afresh).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stategym.knobs import Knobs

if TYPE_CHECKING:
    from rich.console import Console

    from stategym.agents.base import AgentFactory
    from stategym.domain import Domain
    from stategym.env import Env
    from stategym.rundir import RunConfig, RunDir
    from stategym.trajectory import Trajectory

NAME = "run"
HELP = "Run an agent on seeded tasks of one domain; write trajectories and a summary."

LLM_OPTIONS = ("base_url", "temperature", "max_tokens", "concurrency")
"""Options passed to the agent resolver when given; scripted agents ignore them."""


def _knobs(text: str) -> Knobs:
    try:
        return Knobs.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument("--domain", default="travel", help="domain name (default: travel)")
    parser.add_argument(
        "--agent",
        default="expert",
        help="scripted agent name, or openai:MODEL / hf:PATH (default: expert)",
    )
    parser.add_argument(
        "--episodes",
        type=options.positive_int,
        default=200,
        help="number of seeds to play (default: 200)",
    )
    parser.add_argument(
        "--seed", type=options.non_negative_int, default=0, help="first seed (default: 0)"
    )
    parser.add_argument(
        "--out",
        type=options.output_dir,
        default=Path("runs/demo"),
        help="run directory (default: runs/demo)",
    )
    options.add_knobs(parser)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard the run directory's trajectories instead of resuming",
    )
    options.add_llm_options(parser)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from stategym import store
    from stategym.env import Env
    from stategym.rundir import RunConfig, RunDir

    console = Console()
    options = {k: getattr(args, k) for k in LLM_OPTIONS if getattr(args, k) is not None}
    resolved = _resolve(args.domain, args.agent, options, console)
    if resolved is None:
        return 2
    domain, make_agent = resolved
    config = RunConfig(domain.name, args.agent, args.knobs)
    run = RunDir(args.out)
    if args.overwrite:
        run.clear()
        store.remove(store.index_path(run.path), run.name)
    finished = _resume(run, config, console)
    if finished is None:
        return 2
    seen = {t.seed for t in finished}
    todo = [s for s in range(args.seed, args.seed + args.episodes) if s not in seen]
    interrupted = False
    try:
        if todo:
            _play(Env(domain, knobs=args.knobs), make_agent, config, todo, run, finished, console)
    except KeyboardInterrupt:
        interrupted = True
    _record(run, config, finished, options, console)
    if interrupted:
        console.print("[yellow]interrupted:[/] finished episodes are saved; run again to resume")
        return 130
    return 0


def _resolve(
    name: str, agent: str, options: dict[str, Any], console: Console
) -> tuple[Domain, AgentFactory] | None:
    """The domain and the agent factory, or ``None`` after printing why not."""
    from rich.markup import escape

    from stategym.agents import resolve
    from stategym.domains import get_domain
    from stategym.errors import UnknownDomainError

    try:
        domain = get_domain(name)
        return domain, resolve(domain, agent, **options)
    except (UnknownDomainError, KeyError) as error:
        console.print(f"[red]error:[/] {escape(str(error.args[0]))}")
    except ImportError as error:  # an LLM spec without the optional packages installed
        console.print(
            f"[red]error:[/] agent {escape(repr(agent))} needs a module that is missing "
            f"({escape(str(error))}); LLM agents need: " + escape("pip install 'stategym[llm]'")
        )
    return None


def _record(
    run: RunDir,
    config: RunConfig,
    finished: list[Trajectory],
    options: dict[str, Any],
    console: Console,
) -> None:
    """Write the summary, index the run and print the results table."""
    from rich.markup import escape

    from stategym import __version__, store
    from stategym.summary import summarise, summary_table

    summary = summarise(finished)
    run.write_summary(config, [t.seed for t in finished], summary, __version__, options)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    record = store.RunRecord(
        run.name,
        str(run.path.resolve()),
        config.domain,
        config.agent,
        config.knobs.describe(),
        summary.episodes,
        summary.goal_rate,
        __version__,
        now,
        now,
    )
    index = store.index_path(run.path)
    store.upsert(index, record)
    knobs = config.knobs.describe() if config.knobs != Knobs() else "default knobs"
    title = f"{run.name}: {config.domain} / {config.agent} / {knobs}"
    console.print(summary_table([((), summary)], (), title=escape(title)))
    console.print(escape(f"wrote {run.trajectories} and {run.summary}; indexed in {index}"))


def _resume(run: RunDir, config: RunConfig, console: Console) -> list[Trajectory] | None:
    """The trajectories to keep, or ``None`` if the directory holds another run."""
    from rich.markup import escape

    finished, dropped = run.load()
    if dropped:
        where = escape(str(run.trajectories))
        console.print(f"[yellow]dropped {dropped} unreadable line(s)[/] from {where}")
    foreign = next((t for t in finished if not config.matches(t)), None)
    if foreign is not None:
        console.print(
            "[red]error:[/] "
            + escape(
                f"{run.path} holds a run of domain={foreign.domain} agent={foreign.agent} "
                f"knobs={foreign.knobs.describe()}; use --overwrite or another --out"
            )
        )
        return None
    if finished:
        console.print(escape(f"resuming {run.path}: {len(finished)} episode(s) already there"))
    return finished


def _play(
    env: Env,
    make_agent: AgentFactory,
    config: RunConfig,
    seeds: list[int],
    run: RunDir,
    finished: list[Trajectory],
    console: Console,
) -> None:
    """Play the seeds, appending each trajectory to the run as soon as it ends."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from stategym.runner import run_episodes

    columns: list[Any] = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("goal {task.fields[goal]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    reached = played = 0
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task(f"{config.domain} / {config.agent}", total=len(seeds), goal="-")
        for trajectory in run_episodes(env, make_agent, seeds, agent_name=config.agent):
            run.append(trajectory)
            finished.append(trajectory)
            played += 1
            reached += bool(trajectory.outcome and trajectory.outcome.goal_reached)
            progress.update(bar, advance=1, goal=f"{reached}/{played}")
