"""``stategym eval``: play agents on domains and print the decision-quality scorecard.

Every (domain, agent) plays seeds ``seed .. seed + episodes - 1`` (``--samples`` times each,
for pass^k; each sample is numbered in the trajectory's ``run.sample``), under one knob
setting or the ``mixed`` set. Every episode is an :class:`~stategym.rollout.EpisodeSpec`
played by the rollout engine (LLM agents ``--concurrency`` at a time); trajectories are
appended to ``OUT/trajectories.jsonl`` as episodes end. Agents are resolved, and LLM agents
checked (model folder, endpoint), before the file is touched. Running the command again
resumes: episodes already in the file are reused (read by :func:`stategym.rollout.load_log`:
a cut last line is dropped, a corrupt line or a duplicated episode is an error; matched by
the engine's resume rule, :func:`stategym.rollout.pending`), the missing ones played, and
the scorecard covers exactly the requested episodes. A file holding an episode of one of the
command's LLM agents played with other settings (sampling, run seed, other weights at the
same ``hf:`` path, or a log too old to say:
:func:`stategym.rollout.settings.refuse_other_settings`) is refused in one line, as is one
whose user read messages otherwise. Then ``scores.jsonl``, ``scorecard.json`` and
``scorecard.md`` are written (see :mod:`stategym.metrics.report`). The directory is held for
the whole run (:func:`stategym.rundir.locked`): a second command on it stops before reading
the file. Every file the command writes there that exists as anything but a regular file (a
folder, a FIFO, a device) is refused before anything is read or played
(:func:`stategym.kernel.files.refuse_non_files`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from stategym.kernel.trajectory import Trajectory
    from stategym.kernel.understanding import ReaderSource
    from stategym.metrics.score import Scorecard
    from stategym.rollout import Agents, EpisodeSpec
    from stategym.rollout.spec import Key
    from stategym.rollout.workers import Spread

NAME = "eval"
HELP = "Score agents on domains: outcome, decision quality, pass^k, with 95 percent intervals."

TRAJECTORIES = "trajectories.jsonl"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument(
        "--domains",
        type=options.names,
        default=[],
        help="comma-separated domains, registered or synth:<spec>, each once "
        "(default: every registered domain)",
    )
    parser.add_argument(
        "--agents",
        type=options.names,
        default=options.names("expert,oracle,serial,random"),
        help="comma-separated agents, each once: scripted names, openai:MODEL, hf:PATH "
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
    options.add_bootstrap_options(parser, seed=False)
    parser.add_argument(
        "--report",
        action="store_true",
        help="also write OUT/report.html (stategym report of this run; needs matplotlib)",
    )
    options.add_llm_options(parser)
    options.add_reader_options(parser)
    options.add_spread_options(parser)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from stategym import __version__
    from stategym.commands.options import domains, llm_options, reader_of, seed_range, spread_of
    from stategym.kernel.errors import UsageError
    from stategym.kernel.files import refuse_non_files
    from stategym.metrics import report
    from stategym.metrics.taskset import knob_schedule
    from stategym.registry import all_domains
    from stategym.rollout import pending, requested
    from stategym.rollout.log import put_in_order
    from stategym.rollout.spec import trajectory_key
    from stategym.rundir import locked

    if args.report:  # refused now, not after every episode has played
        from stategym.commands.report import check_report

        check_report(args.out)
    refuse_non_files(args.out, (TRAJECTORIES, report.SCORES, report.SCORECARD, report.SCORECARD_MD))

    console = Console()
    names = domains(args.domains) if args.domains else list(all_domains())
    try:
        schedule = knob_schedule(args.knobs)
    except ValueError as error:
        raise UsageError(f"bad --knobs: {error}") from None
    options = llm_options(args)
    seeds = seed_range(args.seed, args.episodes)
    specs = _specs(names, args.agents, seeds, schedule, args.samples, options)
    agents = _agents(specs)
    reader = reader_of(args, args.out)
    spread = spread_of(args)  # a --ray that cannot be joined is refused before anything
    with locked(args.out):  # one run at a time appends to the file
        path = args.out / TRAJECTORIES
        finished = _resume(path, args.overwrite, reader, (specs, agents), console)
        todo = pending(specs, finished)
        played = _play(path, todo, agents, options, spread, reader, console)
        finished += [trajectory for trajectory, _ in played]
        config = {
            "command": "eval",
            "domains": names,
            "agents": args.agents,
            "episodes": args.episodes,
            "seed": args.seed,
            "knobs": args.knobs,
            "samples": args.samples,
            **({"reader": reader.name} if reader is not None else {}),
            "resamples": args.resamples,
            "stategym_version": __version__,
        }
        cards = {trajectory_key(t): card for t, card in played}
        chosen = requested(specs, finished)
        put_in_order(path, finished, chosen)  # scores.jsonl follows it line for line
        status = _report(args.out, chosen, cards, config, args.resamples, console)
        if args.report:
            from stategym.commands.report import REPORT_FILE, write_report

            console.print(f"report: {write_report([args.out], args.out / REPORT_FILE)}")
    return status


def _resume(
    path: Path,
    overwrite: bool,
    reader: ReaderSource | None,
    played: tuple[list[EpisodeSpec], Agents],
    console: Console,
) -> list[Trajectory]:
    """Trajectories already in the file (which is rewritten without a cut last line).

    ``played``: the command's specs and agents, whose LLM agents' settings the episodes of
    the same domain and agent in the file must have been played with.

    Raises:
        UsageError: a corrupt line or a duplicated episode (see :func:`~stategym.rundir.load_log`),
            an episode whose user read messages otherwise than ``reader`` does, or one an LLM
            agent of the command played with other settings than it plays now
            (:func:`~stategym.rollout.settings.refuse_other_settings`).
    """
    from rich.text import Text

    from stategym.kernel.errors import UsageError
    from stategym.kernel.files import replace_bytes
    from stategym.rundir import load_log, refuse_other_settings

    if overwrite or not path.exists():
        replace_bytes(path, b"")  # a link there is replaced as a name, never emptied through
        return []
    log = load_log(path)
    if log.cut_line is not None:
        console.print(
            Text(
                f"warning: dropped {path}:{log.cut_line}, a cut last line (an interrupted "
                "append); its episode is played again"
            ),
            style="yellow",
        )
    reading = reader.name if reader is not None else None
    foreign = {t.meta.get("reader") for t in log.trajectories} - {reading}
    if foreign:
        read = ", ".join(sorted(r or "the rules" for r in foreign))
        raise UsageError(
            f"{path} holds episodes whose user read messages with {read}, not "
            f"{reading or 'the rules'}; use --overwrite or another --out"
        )
    refuse_other_settings(path, log.trajectories, *played)
    if log.trajectories:
        console.print(Text(f"resuming {path}: {len(log.trajectories)} episode(s) there"))
    return log.trajectories


def _specs(
    domains: list[str],
    agents: list[str],
    seeds: range,
    schedule: Any,
    samples: int,
    options: dict[str, Any],
) -> list[EpisodeSpec]:
    """Every requested episode: domain-major, then agent, seed and sample."""
    from stategym.rollout import episode_specs

    knobs = {seed: schedule(seed) for seed in seeds}
    return [
        spec
        for domain in domains
        for agent in agents
        for spec in episode_specs(domain, agent, seeds, knobs, samples=samples, options=options)
    ]


def _agents(specs: list[EpisodeSpec]) -> Agents:
    """Every agent resolved and every LLM agent checked, before anything is written.

    Raises:
        UsageError: an unknown agent, a missing model folder, an unreachable endpoint.
    """
    from stategym.kernel.errors import UsageError
    from stategym.rollout import Agents

    agents = Agents()
    checked: set[str] = set()
    for spec in {(s.domain, s.agent): s for s in specs}.values():
        try:
            if spec.llm and spec.agent not in checked:
                from stategym.llm import check_agent

                kind, _, target = spec.agent.partition(":")
                check_agent(kind, target, **dict(spec.options))
                checked.add(spec.agent)
            agents.factory(spec)
        except KeyError as error:
            raise UsageError(str(error.args[0])) from None
    return agents


def _play(
    path: Path,
    specs: list[EpisodeSpec],
    agents: Agents,
    options: dict[str, Any],
    spread: Spread,
    reader: ReaderSource | None,
    console: Console,
) -> list[tuple[Trajectory, Scorecard]]:
    """Play the specs, appending each trajectory to the file as it ends (in spec order
    when they play on workers or Ray); each with its scorecard, made where it was played."""
    from rich.progress import Progress

    from stategym.metrics import score
    from stategym.rollout import stream_scored
    from stategym.rollout.log import Appender

    append = Appender(path)
    played: list[tuple[Trajectory, Scorecard]] = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("episodes", total=len(specs))
        concurrency = options.get("concurrency")
        for _, trajectory, card in stream_scored(
            specs, agents, score, concurrency=concurrency, spread=spread, reader=reader
        ):
            append(trajectory)
            played.append((trajectory, card))
            progress.advance(task)
    return played


def _report(
    out: Path,
    trajectories: list[Trajectory],
    cards: dict[Key, Scorecard],
    config: dict[str, Any],
    resamples: int,
    console: Console,
) -> int:
    """Score every trajectory (``cards``: those scored as they were played, by episode key),
    write the scorecard files and print the tables."""
    from rich.text import Text

    from stategym.metrics import report, score
    from stategym.rollout.spec import trajectory_key
    from stategym.tables import print_grids

    scorecards = []
    for trajectory in trajectories:  # resumed episodes were not scored as they played
        card = cards.get(trajectory_key(trajectory))
        scorecards.append(card if card is not None else score(trajectory))
    rows = report.write(out, scorecards, config, resamples=resamples)
    print_grids(console, [*report.domain_grids(rows), report.litmus_grid(scorecards, rows)])
    console.print(Text(f"scores: {out / report.SCORES}   tables: {out / report.SCORECARD_MD}"))
    return 0
