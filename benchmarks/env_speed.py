"""How fast the environment is, against the issue's targets and tau2-bench's figures.

Usage::

    python benchmarks/env_speed.py                  # travel, full size (~1 min on one core)
    python benchmarks/env_speed.py --quick          # smaller samples, for a smoke run
    python benchmarks/env_speed.py --domain all --json runs/env_speed.json

One process, one core. Time is this process's CPU time by default (``--clock wall`` for wall
time). Each figure is the **median** of ``--repeat`` passes with the garbage collector on,
with the spread (min-max of the passes) beside it (:mod:`timing`). Reading the CPU clock
costs ~0.5 us, which the per-step timings below include (it makes the figures slightly
worse, never better). The memory figure uses
``tracemalloc``. Workloads are realistic: the tool-call
and Gymnasium figures replay the actions the domain's expert (and the random agent) took on
generated tasks, so the mix of reads, writes, commits, messages and errors is the one agents
produce.

Columns: ``x target`` is how many times better than the issue's target (>= 1 meets it);
``x tau2`` is how many times better than tau2-bench's figure (a range where tau2 gives one).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import gymnasium
import orjson

import stategym
from stategym.agents import scripted
from stategym.kernel.counterfactual import generated_probe
from stategym.kernel.domain import Domain
from stategym.kernel.env import Env
from stategym.kernel.protocol import Action, CallBatch, action_to_message
from stategym.kernel.task import Task
from stategym.registry import all_domains, cached_task, get_domain
from timing import CLOCKS

clock = CLOCKS["cpu"]
NEW_SEEDS = 10_000_000
"""Seeds from here on are never used by tests or runs, so their tasks are not cached yet."""


@dataclass(frozen=True)
class Figure:
    """One measured number and what it is compared with."""

    name: str
    value: float
    unit: str
    better: Literal["higher", "lower"]
    target: float | None
    tau2: tuple[float, float] | None
    samples: int
    spread: tuple[float, float] = (0.0, 0.0)
    """The lowest and highest pass, in the figure's unit."""

    def ratio(self, reference: float) -> float:
        return self.value / reference if self.better == "higher" else reference / self.value


@dataclass(frozen=True)
class Episode:
    """A task and the actions an agent took on it (replayed by the timing loops)."""

    seed: int
    task: Task
    actions: tuple[Action, ...]


PASSES: dict[int, list[tuple[float, int]]] = {}
"""Every pass of the last :func:`median_of` call, by the id of the pass it returned."""


def median_of(repeat: int, run: Callable[[], tuple[float, int]]) -> tuple[float, int]:
    """The median of ``repeat`` passes of ``run() -> (seconds, operations)``, GC on (the
    passes are remembered for :func:`spread`)."""
    gc.collect()
    passes = sorted((run() for _ in range(repeat)), key=lambda p: p[0] / max(p[1], 1))
    middle = passes[len(passes) // 2]
    PASSES[id(middle)] = passes
    return middle


def spread(middle: tuple[float, int], per: Callable[[float, int], float]) -> tuple[float, float]:
    """The lowest and highest pass of the :func:`median_of` call that returned ``middle``."""
    values = [per(*p) for p in PASSES.pop(id(middle), [middle])]
    return min(values), max(values)


def _ms(seconds: float, count: int) -> float:
    return seconds / count * 1e3


def _rate(seconds: float, count: int) -> float:
    return count / seconds


def record(domain: Domain, agent: str, seeds: range) -> list[Episode]:
    """Play ``agent`` on each seed and keep its actions."""
    env, factory = Env(domain), scripted(domain, agent)
    episodes = []
    for seed in seeds:
        observation, _ = env.reset(seed=seed)
        policy, actions = factory(env.task), []
        while not env.done:
            actions.append(policy.act(observation))
            observation = env.step(actions[-1]).observation
        episodes.append(Episode(seed, env.task, tuple(actions)))
    return episodes


# -- the measurements ------------------------------------------------------------------------


def resets(domain: Domain, count: int, repeat: int) -> list[Figure]:
    env = Env(domain)
    first = [NEW_SEEDS]

    def new_tasks() -> tuple[float, int]:
        start = first[0]
        first[0] += count
        began = clock()
        for seed in range(start, start + count):
            env.reset(seed=seed)
        return clock() - began, count

    def cached() -> tuple[float, int]:
        for seed in range(count):
            env.reset(seed=seed)
        began = clock()
        for seed in range(count):
            env.reset(seed=seed)
        return clock() - began, count

    probes = [t for t in (generated_probe(domain.name, s, env.knobs) for s in range(count)) if t]

    def probe_tasks() -> tuple[float, int]:
        """As the protocol resets a probe episode: the flipped task given to ``reset``."""
        began = clock()
        for task in probes:
            env.reset(options={"task": task})
        return clock() - began, len(probes)

    fresh = median_of(repeat, new_tasks)
    warm = median_of(repeat, cached)
    figures = [
        Figure(
            "reset, new task (generation included)",
            fresh[0] / fresh[1] * 1e3,
            "ms",
            "lower",
            1.0,
            (50.0, 150.0),
            fresh[1],
            spread(fresh, _ms),
        ),
        Figure(
            "reset, cached task",
            warm[0] / warm[1] * 1e3,
            "ms",
            "lower",
            1.0,
            (50.0, 150.0),
            warm[1],
            spread(warm, _ms),
        ),
    ]
    if probes:
        flipped = median_of(repeat, probe_tasks)
        figures.append(
            Figure(
                "reset, a probe's flipped task",
                flipped[0] / flipped[1] * 1e3,
                "ms",
                "lower",
                1.0,
                None,
                flipped[1],
                spread(flipped, _ms),
            )
        )
    return figures


def tool_calls(domain: Domain, episodes: list[Episode], label: str, repeat: int) -> Figure:
    """Calls per second in the tool rounds of replayed episodes (typed API)."""
    env = Env(domain)

    def run() -> tuple[float, int]:
        spent, count = 0.0, 0
        for episode in episodes:
            env.reset(options={"task": episode.task})
            for action in episode.actions:
                began = clock()
                env.step(action)
                if isinstance(action, CallBatch):
                    spent += clock() - began
                    count += len(action.calls)
        return spent, count

    middle = median_of(repeat, run)
    seconds, count = middle
    return Figure(
        f"tool calls/s, typed API, {label} mix",
        count / seconds,
        "calls/s",
        "higher",
        100_000.0,
        (5_000.0, 6_500.0),
        count,
        spread(middle, _rate),
    )


def gym_steps(domain: Domain, episodes: list[Episode], repeat: int) -> Figure:
    """Steps per second through ``gymnasium.make`` with JSON text actions and observations."""
    env = gymnasium.make(domain.env_id)
    texts = [
        (e.task, [orjson.dumps(action_to_message(a)).decode() for a in e.actions]) for e in episodes
    ]

    def run() -> tuple[float, int]:
        spent, count = 0.0, 0
        for task, actions in texts:
            env.reset(options={"task": task})
            began = clock()
            for text in actions:
                env.step(text)
            spent += clock() - began
            count += len(actions)
        return spent, count

    middle = median_of(repeat, run)
    seconds, count = middle
    return Figure(
        "steps/s, Gymnasium text interface",
        count / seconds,
        "steps/s",
        "higher",
        10_000.0,
        (76.0, 76.0),
        count,
        spread(middle, _rate),
    )


def episodes_per_second(domain: Domain, count: int, repeat: int) -> tuple[Figure, Figure]:
    env, factory = Env(domain), scripted(domain, "expert")
    first = [2 * NEW_SEEDS]

    def play(seeds: range) -> tuple[float, int]:
        began = clock()
        for seed in seeds:
            stategym.run_episode(env, factory, seed)
        return clock() - began, len(seeds)

    def new_tasks() -> tuple[float, int]:
        first[0] += count
        return play(range(first[0], first[0] + count))

    fresh = median_of(repeat, new_tasks)
    play(range(count))
    warm = median_of(repeat, lambda: play(range(count)))
    return (
        Figure(
            "expert episodes/s, new tasks",
            fresh[1] / fresh[0],
            "episodes/s",
            "higher",
            None,
            None,
            fresh[1],
            spread(fresh, _rate),
        ),
        Figure(
            "expert episodes/s, cached tasks",
            warm[1] / warm[0],
            "episodes/s",
            "higher",
            None,
            None,
            warm[1],
            spread(warm, _rate),
        ),
    )


def digests(domain: Domain, episodes: list[Episode], repeat: int) -> tuple[Figure, Figure]:
    """The state digest at the end of each episode (when the most has changed)."""
    finished = []
    for episode in episodes:
        env = Env(domain)
        env.reset(options={"task": episode.task})
        for action in episode.actions:
            env.step(action)
        finished.append(env)

    def timed(read: Callable[[Env], str]) -> tuple[float, int]:
        began = clock()
        for env in finished:
            for _ in range(10):
                read(env)
        return clock() - began, 10 * len(finished)

    world = median_of(repeat, lambda: timed(lambda env: env.world.digest()))
    key = median_of(repeat, lambda: timed(Env.state_key))
    return (
        Figure(
            "world digest",
            world[0] / world[1] * 1e3,
            "ms",
            "lower",
            1.0,
            (70.0, 150.0),
            world[1],
            spread(world, _ms),
        ),
        Figure(
            "state key (digest + user state)",
            key[0] / key[1] * 1e3,
            "ms",
            "lower",
            1.0,
            (70.0, 150.0),
            key[1],
            spread(key, _ms),
        ),
    )


def memory(domain: Domain, episodes: list[Episode]) -> tuple[Figure, Figure]:
    """Bytes per live environment, mid-episode: with its own task, and over cached tasks."""
    mib = 1024 * 1024

    def live(build_tasks: bool) -> float:
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        alive = []
        for episode in episodes:
            env = Env(domain)
            if build_tasks:
                env.reset(options={"task": domain.generate(episode.seed, env.knobs)})
            else:
                env.reset(options={"task": episode.task})
            for action in episode.actions[: len(episode.actions) // 2]:
                env.step(action)
            alive.append(env)
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        del alive
        return used / len(episodes) / 1024

    own = live(build_tasks=True)
    shared = live(build_tasks=False)
    return (
        Figure(
            f"memory per live env, own task ({len(episodes)} alive)",
            own,
            "KiB",
            "lower",
            100.0,
            (12 * mib / 1024, 24 * mib / 1024),
            len(episodes),
        ),
        Figure(
            f"memory per live env, cached task ({len(episodes)} alive)",
            shared,
            "KiB",
            "lower",
            100.0,
            (12 * mib / 1024, 24 * mib / 1024),
            len(episodes),
        ),
    )


# -- the report ------------------------------------------------------------------------------


def measure(domain: Domain, quick: bool, repeat: int) -> list[Figure]:
    scale = 1 if quick else 5
    expert = record(domain, "expert", range(200 * scale))
    random_mix = record(domain, "random", range(100 * scale))
    cached_task.cache_clear()
    figures = [*resets(domain, 400 * scale, repeat)]
    figures.append(tool_calls(domain, expert, "expert", repeat))
    figures.append(tool_calls(domain, random_mix, "random-agent", repeat))
    figures.append(gym_steps(domain, expert, repeat))
    figures += episodes_per_second(domain, 100 * scale, repeat)
    figures += digests(domain, expert, repeat)
    figures += memory(domain, record(domain, "expert", range(1000)))
    return figures


def _ratio(figure: Figure, reference: tuple[float, float] | float | None) -> str:
    if reference is None:
        return "-"
    if isinstance(reference, tuple):
        low, high = sorted(figure.ratio(r) for r in reference)
        return f"{low:,.0f}x" if round(low) == round(high) else f"{low:,.0f}-{high:,.0f}x"
    return f"{figure.ratio(reference):,.1f}x"


def print_table(domain: str, figures: list[Figure]) -> None:
    print(f"\n{domain}")
    header = f"{'measure':<46} {'median':>12} {'min-max':>17} {'unit':<11} {'target':>8} "
    header += f"{'x target':>9} "
    print(header + f"{'x tau2':>12}")
    for f in figures:
        target = "-" if f.target is None else f"{'<' if f.better == 'lower' else '>='}{f.target:g}"
        value, low, high = (f"{v:,.0f}" if v >= 100 else f"{v:.3g}" for v in (f.value, *f.spread))
        print(
            f"{f.name:<46} {value:>12} {low + '-' + high if any(f.spread) else '-':>17} "
            f"{f.unit:<11} {target:>8} "
            f"{_ratio(f, f.target):>9} {_ratio(f, f.tau2):>12}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="travel", help="a domain name, or 'all'")
    parser.add_argument("--quick", action="store_true", help="smaller samples")
    parser.add_argument("--repeat", type=int, default=5, help="passes per timing (median kept)")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="process CPU time (default) or wall time",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    global clock
    clock = CLOCKS[args.clock]
    names = sorted(all_domains()) if args.domain == "all" else [args.domain]
    print(
        f"stategym {stategym.__version__}, Python {sys.version.split()[0]}, one process; "
        f"{args.clock} time, median of {args.repeat} passes, GC on (min-max beside);"
        " on a shared machine the figures are noisy"
    )
    results: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        figures = measure(get_domain(name), args.quick, args.repeat)
        print_table(name, figures)
        results[name] = [asdict(f) for f in figures]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
