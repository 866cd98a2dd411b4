"""Rollout throughput with the tiny model: is the environment ever the bottleneck?

Usage::

    python benchmarks/rollout_speed.py --build models/tiny       # build the model first
    python benchmarks/rollout_speed.py --model models/tiny        # local agent (hf:PATH)
    python benchmarks/rollout_speed.py --model models/tiny --via serve --json runs/rollout.json

Plays ``--episodes`` held-out travel tasks (seeds from 0; the recipe trains on seeds from
1,000,000) with the tiny model, ``--concurrency`` episodes in flight, through the async runner:
either the local agent (``--via local``) or ``stategym serve`` on loopback through the
``openai`` client (``--via serve``, a real HTTP round trip per round). Wall-clock time
throughout. Reported:

- episodes/s and rounds/s of the whole rollout, and generated tokens/s;
- ``env share``: time inside ``Env.reset``/``Env.step`` over the rollout's wall time. The
  environment steps on the event loop between replies, so this is the share of the rollout
  the environment holds up; everything else is the model (and HTTP, via serve);
- the environment alone: the scripted expert on the same tasks, episodes/s, i.e. how many
  rollouts per second the environment could feed if the model cost nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.llm import agent_factory
from stategym.llm.batch import Clock, run_many
from stategym.llm.calls import call_stats
from stategym.registry import get_domain
from stategym.rollout import run_episode


def rollout(
    model: Path, via: str, episodes: int, concurrency: int, max_tokens: int
) -> dict[str, Any]:
    """Play the held-out episodes once and measure where the time went."""
    domain = get_domain("travel")
    options: dict[str, Any] = {"max_tokens": max_tokens}
    threads = {"threads": 1}  # tiny matrices: one thread decodes fastest on a shared CPU
    clock = Clock()
    if via == "local":
        make = agent_factory("hf", str(model), domain, **options, **threads)
        started = time.perf_counter()
        trajectories = asyncio.run(
            run_many("travel", make, range(episodes), concurrency=concurrency, clock=clock)
        )
        wall = time.perf_counter() - started
    else:
        from stategym.llm.local import LocalModel
        from stategym.llm.serve import BackgroundServer

        with BackgroundServer(LocalModel(model, **threads)) as server:
            make = agent_factory(
                "openai", model.name, domain, base_url=server.base_url, temperature=0.0, **options
            )
            started = time.perf_counter()
            trajectories = asyncio.run(
                run_many("travel", make, range(episodes), concurrency=concurrency, clock=clock)
            )
            wall = time.perf_counter() - started
    rounds = sum(len(t.rounds) for t in trajectories)
    tokens = sum(t.meta["usage"]["completion_tokens"] for t in trajectories)
    stats = call_stats(trajectories)
    return {
        "via": via,
        "episodes": episodes,
        "concurrency": concurrency,
        "max_tokens": max_tokens,
        "rounds": rounds,
        "wall_s": wall,
        "episodes_per_s": episodes / wall,
        "rounds_per_s": rounds / wall,
        "tokens_per_s": tokens / wall,
        "env_s": clock.env_seconds,
        "env_share": clock.env_seconds / wall,
        "env_ms_per_round": 1000 * clock.env_seconds / rounds,
        "parsed_share": stats.parsed_share,
        "accepted_share": stats.accepted_share,
        "goal_rate": sum(bool(t.outcome and t.outcome.goal_reached) for t in trajectories)
        / episodes,
    }


def environment_alone(episodes: int, repeat: int = 20) -> float:
    """Expert episodes per second on the same tasks (tasks cached, as in a rollout loop)."""
    env = Env("travel")
    expert = scripted(env.domain, "expert")
    for seed in range(episodes):
        run_episode(env, expert, seed)
    started = time.perf_counter()
    for _ in range(repeat):
        for seed in range(episodes):
            run_episode(env, expert, seed)
    return repeat * episodes / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("models/tiny"))
    parser.add_argument("--build", type=Path, help="build the tiny model here first")
    parser.add_argument("--via", choices=("local", "serve", "both"), default="both")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.build is not None:
        from stategym.llm.tiny import init_model

        args.model = init_model(args.build)
    results = [
        rollout(args.model, via, args.episodes, args.concurrency, args.max_tokens)
        for via in (("local", "serve") if args.via == "both" else (args.via,))
    ]
    alone = environment_alone(args.episodes)
    print(
        f"{'via':6} {'episodes/s':>10} {'rounds/s':>9} {'tokens/s':>9} "
        f"{'env share':>9} {'env ms/round':>12} {'parsed':>7}"
    )
    for r in results:
        print(
            f"{r['via']:6} {r['episodes_per_s']:10.3f} {r['rounds_per_s']:9.1f} "
            f"{r['tokens_per_s']:9.0f} {r['env_share']:9.2%} {r['env_ms_per_round']:12.3f} "
            f"{r['parsed_share']:7.2f}"
        )
    print(f"environment alone (scripted expert, same tasks): {alone:,.0f} episodes/s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"rollouts": results, "env_alone_episodes_per_s": alone}, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
