"""``stategym eval``: play agents on domains and print the decision-quality scorecard.

Every (domain, agent) plays seeds ``seed .. seed + episodes - 1`` (``--samples`` times each,
for pass^k; each sample is numbered in the trajectory's ``run.sample``), under one knob
setting or the ``mixed`` set. Trajectories are appended to ``OUT/trajectories.jsonl`` as
episodes end. Running the command again resumes: episodes already in the file are reused (read by
:func:`stategym.rundir.load_log`: a cut last line is dropped, a corrupt line or a duplicated
episode is an error), the missing ones played, and the scorecard covers exactly the
requested episodes. Then ``scores.jsonl``, ``scorecard.json`` and ``scorecard.md`` are
written (see :mod:`stategym.metrics.report`).
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from stategym.domain import Domain
    from stategym.knobs import Knobs
    from stategym.trajectory import Trajectory

    Job = tuple[Domain, str, int, Knobs]

NAME = "eval"
HELP = "Score agents on domains: outcome, decision quality, pass^k, with 95 percent intervals."

TRAJECTORIES = "trajectories.jsonl"


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
    from stategym.commands.options import llm_options
    from stategym.errors import UsageError
    from stategym.metrics.taskset import knob_schedule
    from stategym.registry import all_domains

    console = Console()
    domains = args.domains or list(all_domains())
    unknown = [d for d in domains if d not in all_domains()]
    if unknown:
        raise UsageError(
            f"unknown domain(s): {', '.join(unknown)}; registered: {', '.join(all_domains())}"
        )
    try:
        schedule = knob_schedule(args.knobs)
    except ValueError as error:
        raise UsageError(f"bad --knobs: {error}") from None
    options = llm_options(args)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / TRAJECTORIES
    finished = _resume(path, args.overwrite, console)
    seeds = range(args.seed, args.seed + args.episodes)
    jobs = [
        (all_domains()[d], agent, seed, schedule(seed))
        for d in domains
        for agent in args.agents
        for seed in seeds
    ]
    try:
        finished += _play(path, jobs, args.samples, finished, options, console)
    except KeyError as error:
        raise UsageError(str(error.args[0])) from None
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
    requested = _requested(finished, jobs, args.samples)
    return _report(args.out, requested, config, args.resamples, console)


def _resume(path: Path, overwrite: bool, console: Console) -> list[Trajectory]:
    """Trajectories already in the file (which is rewritten without a cut last line).

    Raises:
        UsageError: a corrupt line or a duplicated episode (see :func:`~stategym.rundir.load_log`).
    """
    from rich.text import Text

    from stategym.rundir import load_log

    if overwrite or not path.exists():
        path.write_bytes(b"")
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
    if log.trajectories:
        console.print(Text(f"resuming {path}: {len(log.trajectories)} episode(s) there"))
    return log.trajectories


def _job_key(domain: str, agent: str, seed: int, knobs: Knobs) -> tuple[str, str, int, Knobs]:
    return (domain, agent, seed, knobs)


def _requested(
    trajectories: Sequence[Trajectory], jobs: Sequence[Job], samples: int
) -> list[Trajectory]:
    """The trajectories this command asked for, in file order: up to ``samples`` of each job.

    The file may hold more (another ``--episodes``, ``--seed`` or ``--agents`` earlier);
    those stay in it but are not scored here.
    """
    wanted = {_job_key(d.name, a, s, k) for d, a, s, k in jobs}
    taken: Counter[tuple[str, str, int, Knobs]] = Counter()
    kept = []
    for t in trajectories:
        key = _job_key(t.domain, t.agent, t.seed, t.knobs)
        if key in wanted and taken[key] < samples:
            taken[key] += 1
            kept.append(t)
    return kept


def _play(
    path: Path,
    jobs: list[Job],
    samples: int,
    finished: list[Trajectory],
    options: dict[str, Any],
    console: Console,
) -> list[Trajectory]:
    """Play every job not already finished, appending each trajectory as it ends."""
    from rich.progress import Progress

    from stategym.trajectory import dumps

    done = Counter(_job_key(t.domain, t.agent, t.seed, t.knobs) for t in finished)
    todo = [
        (d, a, s, k)
        for d, a, s, k in jobs
        for _ in range(max(0, samples - done[_job_key(d.name, a, s, k)]))
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


def _episodes(todo: list[Job], options: dict[str, Any], done: Counter[Any]) -> Iterator[Trajectory]:
    """Play the jobs in order; each trajectory is stamped with the agent spec.

    LLM agents number their samples themselves (``run.sample``, which also seeds their
    sampling); a scripted agent's samples are numbered here the same way, continuing after
    the ones ``done`` counts, so that repeated samples of one task are told apart from a
    duplicated line.
    """
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
    numbered = Counter(done)
    for domain, agent, seed, knobs in todo:
        env = envs.setdefault((domain.name, knobs), Env(domain, knobs=knobs))
        if (domain.name, agent) not in factories:
            factories[(domain.name, agent)] = resolve(domain, agent, **options)
        trajectory = run_episode(env, factories[(domain.name, agent)], seed)
        key = _job_key(domain.name, agent, seed, knobs)
        run = replace(trajectory.run, sample=numbered[key])
        numbered[key] += 1
        yield replace(trajectory, agent=agent, run=run)


def _report(
    out: Path,
    trajectories: list[Trajectory],
    config: dict[str, Any],
    resamples: int,
    console: Console,
) -> int:
    """Score every trajectory, write the scorecard files and print the tables."""
    from rich.text import Text

    from stategym.metrics import report, score
    from stategym.tables import print_grids

    cards = [score(t) for t in trajectories]
    rows = report.write(out, cards, config, resamples=resamples)
    print_grids(console, [*report.domain_grids(rows), report.litmus_grid(cards, rows)])
    console.print(Text(f"scores: {out / report.SCORES}   tables: {out / report.SCORECARD_MD}"))
    return 0
