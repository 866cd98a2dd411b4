"""Trainer speed: SFT tokens/s, and GRPO iterations of 64 episodes (8 tasks x 8) with the
time split over generation, environment, scoring and backward.

    python benchmarks/train_speed.py [--iterations 5] [--tasks 8] [--group 8] [--quick]
        [--family ask-or-act] [--sft-iterations 160] [--sft RUN]

It builds the tiny model (the default recipe's width and vocabulary, SFT from the expert on
``--family``'s tasks for ``--sft-iterations`` steps: a policy that plays the episode's
protocol, so its episodes end as a trained policy's do; a barely trained one writes to the
token cap every round and measures the cap instead), then runs GRPO iterations from it and
prints one line per iteration, so a cost that grows with the iteration number shows (the
slope of seconds over iterations is printed too). The headline
is the median iteration time with the garbage collector on, its spread (min-max) and its
ratio to the goal (1 s). CPU, one thread. Figures depend on the machine's load: report them
with the load average printed at the end. ``--quick`` (30 SFT steps, 3 iterations of 4
tasks x 4) is what ``benchmarks/all.py`` can call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

GOAL_S = 1.0
"""Seconds one GRPO iteration of 64 episodes should take on a quiet 2-core machine."""


def iterations(run: Path) -> list[dict[str, Any]]:
    """The per-iteration lines of a GRPO run (held-out evaluation lines left out)."""
    lines = map(json.loads, (run / "metrics.jsonl").read_text().splitlines())
    return [line for line in lines if "eval" not in line]


def report(lines: list[dict[str, Any]], episodes: int) -> dict[str, Any]:
    """Median, spread, slope (seconds per iteration) and ratio to the goal."""
    seconds = [line["seconds"] for line in lines]
    xs = list(range(len(seconds)))
    slope = statistics.linear_regression(xs, seconds).slope if len(seconds) > 1 else 0.0
    median = statistics.median(seconds)
    # an iteration's cost follows its episodes' lengths, which the policy changes: per
    # thousand tokens of the batch, a cost that grows with the iteration number is a leak
    per_k = [1000 * s / line["batch_tokens"] for s, line in zip(seconds, lines, strict=True)
             if line.get("batch_tokens")]  # fmt: skip
    per_k_slope = (
        statistics.linear_regression(range(len(per_k)), per_k).slope if len(per_k) > 1 else 0.0
    )
    return {
        "seconds_per_1k_tokens": per_k,
        "per_1k_tokens_slope": per_k_slope,
        "episodes": episodes,
        "median_s": median,
        "spread_s": [min(seconds), max(seconds)],
        "slope_s_per_iteration": slope,
        "ratio_to_goal": median / GOAL_S * 64 / episodes,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--sft-iterations", type=int, default=160)
    parser.add_argument("--family", default="ask-or-act", help="task family ('' : travel)")
    parser.add_argument("--sft", default="", help="reuse this SFT run instead of training one")
    parser.add_argument("--credit", default="gigpo")
    parser.add_argument("--share-prefix", action="store_true", help="GRPO's share_prefix on")
    parser.add_argument("--quick", action="store_true", help="30 SFT steps, 3 iterations of 4 x 4")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.quick:
        args.iterations, args.tasks, args.group = 3, 4, 4
        args.sft_iterations = min(args.sft_iterations, 30)

    from stategym.train.config import GRPOConfig, SFTConfig
    from stategym.train.grpo import train as grpo
    from stategym.train.sft import train as sft

    root = Path(tempfile.mkdtemp(prefix="train-speed-"))
    common = {"progress": False, "eval_episodes": 1, "save_every": 10_000}
    common["family"] = args.family
    common["max_tokens"], common["max_length"] = 24, 1024
    sft_run = Path(args.sft) if args.sft else sft(
        SFTConfig(out=str(root / "sft"), episodes=32, iterations=args.sft_iterations,
                  batch_size=8, **common)
    )  # fmt: skip
    steps = [json.loads(line) for line in (sft_run / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "tokens" in s]
    tokens = sum(s["tokens"] for s in steps)
    seconds = sum(s["seconds"] for s in steps)
    print(f"SFT: {tokens / seconds:,.0f} tokens/s ({tokens:,} tokens in {seconds:.1f} s)")
    run = grpo(GRPOConfig(out=str(root / "grpo"), init=str(sft_run), credit=args.credit,
                          tasks=args.tasks, group=args.group, minibatch=16,
                          iterations=args.iterations, share_prefix=args.share_prefix,
                          **common))  # fmt: skip
    episodes = args.tasks * args.group
    lines = iterations(run)
    for line in lines:
        share = ", ".join(f"{k} {v:.0%}" for k, v in line["share"].items())
        rate = f"generation {line['tokens_per_s']:,.0f} tokens/s"
        size = f", {line['batch_tokens']:,} tokens" if "batch_tokens" in line else ""
        if "shared_tokens" in line:
            size += f" ({line['shared_tokens']:,} row-tokens spared by the shared prefix)"
        took = f"{line['seconds']:.2f} s"
        print(f"GRPO iteration {line['iteration']}: {episodes} episodes{size} in {took}")
        print(f"  {share}; {rate}")
    figures = report(lines, episodes)
    low, high = figures["spread_s"]
    print(
        f"GRPO: median {figures['median_s']:.2f} s an iteration of {episodes} episodes "
        f"(spread {low:.2f}-{high:.2f} s over {len(lines)}, GC on), "
        f"{figures['ratio_to_goal']:.1f}x the 1 s goal per 64 episodes; "
        f"slope {figures['slope_s_per_iteration']:+.3f} s per iteration"
    )
    if figures["seconds_per_1k_tokens"]:
        per_k = figures["seconds_per_1k_tokens"]
        print(
            f"per 1,000 batch tokens: median {statistics.median(per_k):.3f} s "
            f"(spread {min(per_k):.3f}-{max(per_k):.3f}), "
            f"slope {figures['per_1k_tokens_slope']:+.4f} s per iteration"
        )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        figures["sft_tokens_per_s"] = tokens / seconds
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
