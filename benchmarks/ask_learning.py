"""Does GRPO teach a never-asking policy to ask? Iteration-by-iteration curves on ask-or-act.

    python benchmarks/ask_learning.py [--iterations 12] [--lr 3e-4] [--guard ask-p1]
        [--fraction 0.25] [--credit composite] [--sft RUN]

1. SFT (tiny model, width 64) on ``ask-nothing`` demonstrations of the ``ask-or-act``
   family: the start policy guesses the budget instead of asking (ask rate ~0).
2. GRPO on the same family from that checkpoint, with the exploration guard
   (``--guard ''`` turns it off), printing each iteration's ask rate on must-ask slots,
   composite R, goal rate, clipped share, KL and entropy of the policy's own episodes.

CPU, one thread; deterministic for a given seed. What tests/train/test_learning.py asserts
was read off this script's output (docs/training.md records the runs).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

SFT = {
    "family": "ask-or-act", "agents": "ask-nothing", "episodes": 32, "iterations": 160,
    "batch_size": 8, "tiny_width": 64, "tiny_vocab": 400, "max_tokens": 24,
    "max_length": 1024, "eval_episodes": 8, "save_every": 1000, "progress": False,
}  # fmt: skip
"""The never-asking start policy (also the learning test's)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--guard", default="ask-p1")
    parser.add_argument("--fraction", type=float, default=0.25)
    parser.add_argument("--credit", default="composite")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--updates", type=int, default=1)
    parser.add_argument("--sft", default="", help="reuse this SFT run instead of training one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sft-iterations", type=int, default=SFT["iterations"])
    parser.add_argument("--sft-lr", type=float, default=2e-3)
    args = parser.parse_args()

    from stategym.train.config import GRPOConfig, SFTConfig
    from stategym.train.grpo import train as grpo
    from stategym.train.sft import train as sft

    root = Path(tempfile.mkdtemp(prefix="ask-learning-"))
    started = time.perf_counter()
    tuned = {**SFT, "iterations": args.sft_iterations, "lr": args.sft_lr}
    sft_run = Path(args.sft) if args.sft else sft(SFTConfig(out=str(root / "sft"), **tuned))
    start = [json.loads(x) for x in (sft_run / "metrics.jsonl").read_text().splitlines()]
    print(f"SFT {sft_run} in {time.perf_counter() - started:.0f} s; held-out {start[-1]['eval']}")
    config = GRPOConfig(
        out=str(root / "grpo"), init=str(sft_run), family="ask-or-act", credit=args.credit,
        tasks=args.tasks, group=args.group, updates=args.updates, minibatch=16, lr=args.lr,
        iterations=args.iterations, max_tokens=24, max_length=1024, eval_episodes=8,
        save_every=1000, progress=False, guard_teacher=args.guard,
        guard_fraction=args.fraction if args.guard else 0.0, seed=args.seed,
    )  # fmt: skip
    run = grpo(config)
    print("iter  ask   R     goal  clipped  kl      entropy  s")
    for line in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()):
        if "eval" in line:
            print(f"held-out after {line['iteration']}: {line['eval']}")
            continue
        ask = "n/a " if line["ask_rate"] is None else f"{line['ask_rate']:.2f}"  # no must-ask slot
        print(
            f"{line['iteration']:>4}  {ask}  {line['composite']:.2f}  "
            f"{line['goal_rate']:.2f}  {line['clipped']:.3f}    {line['kl']:.4f}  "
            f"{line['entropy']:.3f}    {line['seconds']:.1f}"
        )
    print(f"total {time.perf_counter() - started:.0f} s; run {run}")


if __name__ == "__main__":
    main()
