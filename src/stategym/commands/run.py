"""``stategym run``: play one agent on one domain's seeded tasks into a run directory.

Seeds ``seed .. seed + episodes - 1`` are played by the rollout engine
(:func:`stategym.rollout.stream`): scripted agents in order, LLM agents ``--concurrency``
episodes at a time; each trajectory is appended to ``OUT/trajectories.jsonl`` as its episode
ends. ``--knobs mixed`` gives each seed one setting of the eval knob mix. Every trajectory is
then scored (outcome and decision quality), ``OUT/summary.json`` and ``OUT/results.md`` are
written and the run is recorded in the project-wide index (``--index``, default
``runs/index.sqlite``). Running the same command again resumes: requested seeds already in the
file are reused, the missing ones played, and the summary covers exactly the requested seeds
(``--overwrite`` starts afresh). A directory holding episodes of another domain, agent,
knobs or reader, or of the same LLM agent played with other settings (another temperature or
``--max-tokens``, other weights at the same ``hf:`` path, a log too old to say:
:func:`stategym.rollout.settings.refuse_other_settings`), is refused in one line. The directory is
held for the whole run (:func:`stategym.rundir.locked`), and the seed range and the index are
checked before it. So are the run's files: one that exists as anything but a regular file (a
folder, a FIFO, a device) is refused before anything is read or played
(:func:`stategym.kernel.files.refuse_non_files`), and ``--index`` must not be one either.
"""

from __future__ import annotations

import argparse
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stategym.kernel.knobs import Knobs
from stategym.store import DEFAULT_INDEX

if TYPE_CHECKING:
    from rich.console import Console

    from stategym.kernel.trajectory import Trajectory
    from stategym.kernel.understanding import ReaderSource
    from stategym.rollout import Agents, EpisodeSpec
    from stategym.rollout.workers import Spread
    from stategym.rundir import RunConfig, RunDir

NAME = "run"
HELP = "Run an agent on seeded tasks of one domain; write trajectories and a summary."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "--domain",
        default="travel",
        help="domain: a registered name or synth:<spec> (default: travel)",
    )
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
    options.add_knobs(parser, mixed=True)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard the run directory's trajectories instead of resuming",
    )
    parser.add_argument(
        "--index",
        type=options.output_file,
        default=str(DEFAULT_INDEX),  # a string: argparse checks it as it checks a given one
        help=f"the project-wide run index to record the run in (default: {DEFAULT_INDEX})",
    )
    options.add_llm_options(parser)
    options.add_reader_options(parser)
    options.add_spread_options(parser)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from stategym import store
    from stategym.commands.options import domains, llm_options, reader_of, seed_range, spread_of
    from stategym.kernel.files import refuse_non_files
    from stategym.rollout import episode_specs
    from stategym.rundir import (
        RESULTS_MD,
        SUMMARY,
        TRAJECTORIES,
        RunConfig,
        RunDir,
        locked,
        resolved,
    )

    refuse_non_files(args.out, (TRAJECTORIES, SUMMARY, RESULTS_MD))  # before anything is read
    console = Console()
    options = llm_options(args)
    (domain,) = domains([args.domain])
    seeds = seed_range(args.seed, args.episodes)
    reader = reader_of(args, args.out)
    reading = reader.name if reader is not None else None
    config = RunConfig(domain, args.agent, _knobs(args.knobs), reading)
    knobs = {seed: config.knobs_of(seed) for seed in seeds}
    specs = episode_specs(domain, args.agent, seeds, knobs, options=options)
    agents = _agents(specs[0])
    store.check(args.index)  # an index it cannot write is refused before anything plays
    spread = spread_of(args)  # so is a --ray that cannot be joined
    with locked(args.out):  # one run at a time appends to the directory
        run = RunDir(args.out)
        if args.overwrite:
            run.clear()
            store.remove(args.index, str(resolved(run.path)))
        return _complete(args, run, config, specs, agents, options, spread, reader, console)


def _complete(
    args: argparse.Namespace,
    run: RunDir,
    config: RunConfig,
    specs: list[EpisodeSpec],
    agents: Agents,
    options: dict[str, Any],
    spread: Spread,
    reader: ReaderSource | None,
    console: Console,
) -> int:
    """Reuse the episodes already in the run, play the missing ones, record the run; 130
    where Ctrl-C stopped the playing (what finished is saved and recorded)."""
    from stategym.cli import Terminated
    from stategym.rollout import pending, requested
    from stategym.rollout.log import put_in_order

    finished = _resume(run, config, specs, agents, console)
    todo = pending(specs, finished)
    if finished:
        seeds = specs[0].seed, specs[-1].seed
        console.print(
            _plain(
                f"resuming {run.path}: reusing {len(specs) - len(todo)} of the {len(finished)} "
                f"episode(s) there, playing {len(todo)} (seeds {seeds[0]}-{seeds[1]} requested)"
            )
        )
    stop: KeyboardInterrupt | None = None
    try:
        if todo:
            _play(todo, agents, config, run, finished, options, spread, reader, console)
    except KeyboardInterrupt as interruption:  # Ctrl-C, or SIGTERM (cli.Terminated)
        stop = interruption
    chosen = requested(specs, finished)
    if stop is None:
        put_in_order(run.trajectories, finished, chosen)
    _record(run, config, chosen, options, args.index, console)
    if stop is not None:
        console.print("[yellow]interrupted:[/] finished episodes are saved; run again to resume")
        return 128 + signal.SIGTERM if isinstance(stop, Terminated) else 130
    return 0


def _knobs(text: str) -> Any:
    """``--knobs``: one setting, or ``mixed``."""
    from stategym.kernel.errors import UsageError
    from stategym.rundir import MIXED

    if text.strip() == MIXED:
        return MIXED
    try:
        return Knobs.parse(text)
    except ValueError as error:
        raise UsageError(f"bad --knobs: {error}") from None


def _plain(text: str) -> Any:
    """Text printed as written (paths and agent specs may hold ``[...]``)."""
    from rich.text import Text

    return Text(text)


def _agents(spec: EpisodeSpec) -> Agents:
    """The run's agent source, its agent resolved (and an LLM agent checked) up front.

    Raises:
        UsageError: an unknown domain or agent, an LLM agent without its extras, a missing
            model folder or an unreachable endpoint.
    """
    from stategym.kernel.errors import UnknownDomainError, UsageError
    from stategym.rollout import Agents

    agents = Agents()
    try:
        if spec.llm:
            from stategym.llm import check_agent

            kind, _, target = spec.agent.partition(":")
            check_agent(kind, target, **dict(spec.options))
        agents.factory(spec)
    except (UnknownDomainError, KeyError) as error:
        raise UsageError(str(error.args[0])) from None
    except ImportError as error:  # an LLM spec without the optional packages installed
        raise UsageError(
            f"agent {spec.agent!r} needs a module that is missing ({error}); "
            "LLM agents need: pip install 'stategym[llm]'"
        ) from None
    return agents


def _record(
    run: RunDir,
    config: RunConfig,
    trajectories: list[Trajectory],
    options: dict[str, Any],
    index: Path,
    console: Console,
) -> None:
    """Score and summarise the requested episodes, write the files, index the run, print."""
    from stategym import __version__, store
    from stategym.kernel.files import replace_bytes
    from stategym.metrics import score
    from stategym.rundir import resolved
    from stategym.summary import summarise, summarise_quality, summary_table
    from stategym.tables import markdown, print_grids

    summary = summarise(trajectories)
    quality = summarise_quality(score(t) for t in trajectories)
    seeds = [t.seed for t in trajectories]
    run.write_summary(config, seeds, summary, quality, __version__, options)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    record = store.RunRecord(
        run.name,
        str(resolved(run.path)),
        config.domain,
        config.agent,
        config.describe_knobs(),
        summary.episodes,
        summary.goal_rate,
        __version__,
        now,
        now,
    )
    store.upsert(index, record)
    knobs = config.describe_knobs() if config.knobs != Knobs() else "default knobs"
    title = f"{run.name}: {config.domain} / {config.agent} / {knobs}"
    grid = summary_table([((), summary, quality)], (), title=title)
    print_grids(console, [grid])
    replace_bytes(run.results, markdown([grid]).encode())  # a link there: replaced as a name
    console.print(
        _plain(
            f"wrote {run.trajectories}, {run.summary} and {run.results}; "
            f"indexed as {run.name} ({resolved(run.path)}) in {index}"
        )
    )


def _resume(
    run: RunDir, config: RunConfig, specs: list[EpisodeSpec], agents: Agents, console: Console
) -> list[Trajectory]:
    """The trajectories already in the directory.

    Raises:
        UsageError: the file is corrupt, holds duplicated episodes, another run's episodes,
            or episodes its LLM agent played with other settings (sampling, weights...) than
            it plays now (:func:`~stategym.rollout.settings.refuse_other_settings`).
    """
    from stategym.kernel.errors import UsageError
    from stategym.rundir import refuse_other_settings

    finished, dropped = run.load()
    if dropped:
        console.print(
            _plain(
                f"warning: dropped 1 unreadable line, the cut last line of {run.trajectories} "
                "(an interrupted append); its episode is played again"
            ),
            style="yellow",
        )
    foreign = next((t for t in finished if not config.matches(t)), None)
    if foreign is not None:
        reader = foreign.meta.get("reader")
        read = f" reader={reader or 'rules'}" if reader or config.reader else ""
        raise UsageError(
            f"{run.path} holds a run of domain={foreign.domain} agent={foreign.agent} "
            f"knobs={foreign.knobs.describe()}{read}; use --overwrite or another --out"
        )
    refuse_other_settings(run.trajectories, finished, specs, agents)
    return finished


def _play(
    specs: list[EpisodeSpec],
    agents: Agents,
    config: RunConfig,
    run: RunDir,
    finished: list[Trajectory],
    options: dict[str, Any],
    spread: Spread,
    reader: ReaderSource | None,
    console: Console,
) -> None:
    """Play the specs, appending each trajectory to the run as soon as it ends (in spec
    order when they play on workers or Ray)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from stategym import rollout  # looked up here, so a test can stand in for the engine

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
        bar = progress.add_task(f"{config.domain} / {config.agent}", total=len(specs), goal="-")
        played_specs = rollout.stream(
            specs, agents, concurrency=options.get("concurrency"), spread=spread, reader=reader
        )
        for _, trajectory in played_specs:
            run.append(trajectory)
            finished.append(trajectory)
            played += 1
            reached += bool(trajectory.outcome and trajectory.outcome.goal_reached)
            progress.update(bar, advance=1, goal=f"{reached}/{played}")
