"""Rollout throughput with the tiny model: episodes/s, tokens/s, and where the time goes.

Usage::

    python benchmarks/rollout_speed.py --build models/tiny       # build the model first
    python benchmarks/rollout_speed.py --model models/tiny        # local agent (hf:PATH)
    python benchmarks/rollout_speed.py --model models/tiny --quick --json runs/rollout.json
    python benchmarks/rollout_speed.py --model models/tiny --device cuda    # on a GPU

Plays ``--episodes`` held-out travel tasks (seeds from 0; the recipe trains on seeds from
1,000,000) with the tiny model through the rollout engine, ``--concurrency`` episodes in
flight: the local agent answers every waiting episode in one batch and keeps each episode's
key/value cache across its rounds (``stategym.llm.engine``). ``--via serve`` plays through
``stategym serve`` on loopback instead (serve decodes the concurrent requests together, but
without the kept caches: each request's whole prompt is fed again). Wall
clock, the garbage collector on, ``--repeat`` runs; the headline is the median with the
spread (min-max) and the ratio to the goal (50 episodes/s). Reported per run:

- episodes/s, rounds/s and generated tokens/s of the rollout, and episodes per CPU-second
  of this process (less distorted than wall time on a shared machine; via serve it counts
  the server thread too, since it runs in this process);
- the share of wall time (rollout + scoring) in the model (the engine's batched decoding),
  the environment (``Env.reset``/``step``), the scorer (``stategym.metrics.score`` of every
  trajectory), and the rest (rendering, parsing, the event loop);
- the environment alone: the scripted expert on the same tasks, episodes/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
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

GOAL = 50.0
"""Episodes/s the tiny model should reach on 2 cores (issue 14)."""


def rollout(
    model: Path, via: str, episodes: int, concurrency: int, max_tokens: int, device: str = "cpu"
) -> dict[str, Any]:
    """Play the held-out episodes once, score them, and measure where the time went."""
    from stategym.metrics import score

    domain = get_domain("travel")
    options: dict[str, Any] = {"max_tokens": max_tokens}
    # the tiny model on a CPU: one thread decodes its small matrices fastest on a shared CPU
    placement: dict[str, Any] = {"threads": 1} if device == "cpu" else {"device": device}
    clock = Clock()
    if via == "local":
        make = agent_factory("hf", str(model), domain, **options, **placement)
        engine = make.backend.model.engine  # type: ignore[attr-defined]
        started, cpu = time.perf_counter(), time.process_time()
        trajectories = asyncio.run(
            run_many("travel", make, range(episodes), concurrency=concurrency, clock=clock)
        )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        model_s = engine.seconds
    else:
        from stategym.llm.local import LocalModel
        from stategym.llm.serve import BackgroundServer

        served = LocalModel(model, **placement)
        with BackgroundServer(served) as server:
            make = agent_factory(
                "openai", model.name, domain, base_url=server.base_url, temperature=0.0, **options
            )
            started, cpu = time.perf_counter(), time.process_time()
            trajectories = asyncio.run(
                run_many("travel", make, range(episodes), concurrency=concurrency, clock=clock)
            )
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        model_s = served.engine.seconds
    scoring = time.perf_counter()
    for trajectory in trajectories:
        score(trajectory)
    score_s = time.perf_counter() - scoring
    total = wall + score_s
    rounds = sum(len(t.rounds) for t in trajectories)
    tokens = sum(t.meta["usage"]["completion_tokens"] for t in trajectories)
    stats = call_stats(trajectories)
    return {
        "via": via, "episodes": episodes, "concurrency": concurrency, "max_tokens": max_tokens,
        "rounds": rounds, "tokens": tokens, "wall_s": wall,
        "episodes_per_s": episodes / wall, "rounds_per_s": rounds / wall, "cpu_s": cpu,
        "episodes_per_cpu_s": episodes / cpu,
        "tokens_per_s": tokens / wall,
        "model_share": model_s / total, "env_share": clock.env_seconds / total,
        "scorer_share": score_s / total,
        "other_share": max(0.0, 1 - (model_s + clock.env_seconds + score_s) / total),
        "parsed_share": stats.parsed_share,
        "goal_rate": sum(bool(t.outcome and t.outcome.goal_reached) for t in trajectories)
        / episodes,
    }  # fmt: skip


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


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the runs, and the spread of episodes/s."""
    rates = [r["episodes_per_s"] for r in runs]
    keys = [k for k, v in runs[0].items() if isinstance(v, float)]
    median = {k: statistics.median(r[k] for r in runs) for k in keys}
    return {
        **runs[0], **median, "runs": len(runs), "spread": [min(rates), max(rates)],
        "ratio_to_goal": median["episodes_per_s"] / GOAL,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=Path("models/tiny"))
    parser.add_argument("--build", type=Path, help="build the tiny model here first")
    parser.add_argument("--via", choices=("local", "serve", "both"), default="local")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--device", default="cpu", help="torch device of the model (cuda)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per setting (median)")
    parser.add_argument("--quick", action="store_true", help="16 episodes, 3 runs, local only")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.concurrency, args.repeat, args.via = 16, 16, 3, "local"
    if args.build is not None:
        from stategym.llm.tiny import init_model

        args.model = init_model(args.build)
    results = [
        summary(
            [
                rollout(
                    args.model, via, args.episodes, args.concurrency, args.max_tokens, args.device
                )
                for _ in range(args.repeat)
            ]
        )
        for via in (("local", "serve") if args.via == "both" else (args.via,))
    ]
    alone = environment_alone(args.episodes)
    print(
        f"{'via':6} {'episodes/s':>10} {'spread':>13} {'of goal':>7} {'per CPU-s':>9} "
        f"{'tokens/s':>9} "
        f"{'model':>6} {'env':>6} {'scorer':>6} {'other':>6}"
    )
    for r in results:
        low, high = r["spread"]
        print(
            f"{r['via']:6} {r['episodes_per_s']:10.2f} {low:6.2f}-{high:<6.2f} "
            f"{r['ratio_to_goal']:7.2f} {r['episodes_per_cpu_s']:9.2f} "
            f"{r['tokens_per_s']:9.0f} {r['model_share']:6.1%} "
            f"{r['env_share']:6.1%} {r['scorer_share']:6.1%} {r['other_share']:6.1%}"
        )
    print(
        f"({args.episodes} episodes, {args.concurrency} in flight, {args.max_tokens} tokens a "
        f"reply, median of {args.repeat} runs, GC on, {args.device}; "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    print(f"environment alone (scripted expert, same tasks): {alone:,.0f} episodes/s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"rollouts": results, "env_alone_episodes_per_s": alone}, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
