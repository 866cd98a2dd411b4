"""Trainer speed: SFT tokens/s, and GRPO iterations of 64 episodes (8 tasks x 8) with the
time split over generation, environment, scoring and backward.

    python benchmarks/train_speed.py [--iterations 3] [--tasks 8] [--group 8]

It builds the tiny model (SFT from the expert, ``--sft-iterations`` steps), then runs GRPO
iterations from it and prints one line per iteration, so a cost that grows with the
iteration number shows. CPU, one thread. Figures depend on the machine's load: report them
with the load average printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--sft-iterations", type=int, default=10)
    parser.add_argument("--credit", default="gigpo")
    args = parser.parse_args()

    from stategym.train.config import GRPOConfig, SFTConfig
    from stategym.train.grpo import train as grpo
    from stategym.train.sft import train as sft

    root = Path(tempfile.mkdtemp(prefix="train-speed-"))
    common = {"progress": False, "eval_episodes": 1, "save_every": 10_000}
    sft_run = sft(SFTConfig(out=str(root / "sft"), episodes=32, iterations=args.sft_iterations,
                            batch_size=8, **common))  # fmt: skip
    steps = [json.loads(line) for line in (sft_run / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "tokens" in s]
    tokens = sum(s["tokens"] for s in steps)
    seconds = sum(s["seconds"] for s in steps)
    print(f"SFT: {tokens / seconds:,.0f} tokens/s ({tokens:,} tokens in {seconds:.1f} s)")
    run = grpo(GRPOConfig(out=str(root / "grpo"), init=str(sft_run), credit=args.credit,
                          tasks=args.tasks, group=args.group, minibatch=16,
                          iterations=args.iterations, **common))  # fmt: skip
    for line in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()):
        if "eval" in line:
            continue
        share = ", ".join(f"{k} {v:.0%}" for k, v in line["share"].items())
        episodes = args.tasks * args.group
        rate = f"generation {line['tokens_per_s']:,.0f} tokens/s"
        print(f"GRPO iteration {line['iteration']}: {episodes} episodes in {line['seconds']:.1f} s")
        print(f"  {share}; {rate}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
