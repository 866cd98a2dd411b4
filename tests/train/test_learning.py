"""The honest learning test, counted in iterations: GRPO with the exploration guard teaches a
never-asking policy to ask on ``ask-or-act``.

Start: SFT of the tiny model on ``ask-nothing`` demonstrations of the family (it guesses
the budget instead of asking: ask rate 0 on must-ask slots). Then GRPO on the family with
the guard teacher ``ask-p1`` playing a quarter of each group (2 of 8), from that one start,
with three GRPO seeds. The settings are ``benchmarks/ask_learning.py``'s; docs/training.md
("Learning to ask") records the runs. CPU, one thread, fixed seeds: each run is
deterministic, so the test cannot flake; it is slow (about 10 CPU-minutes), hence the marker.

Why three seeds: one run's sampled ask rate is a mean over 12 must-ask slots an iteration,
and the whole training run is chaotic in any change to the environment (one change to how
the user reads garbled questions moved seed 0's rise from 0.33 to 0.11, while seeds 1 and 2
rose 0.36 and 0.31 on the same code). A margin on a single run measured its seed, not the
trainer; the margin is asserted on the mean of three.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from ask_learning import SFT  # the measured settings, one source

ITERATIONS = 12
"""GRPO iterations (4 tasks x 8 episodes each)."""
SEEDS = (0, 1, 2)
"""GRPO seeds, all from the same SFT start."""
MARGIN = 0.15
"""How much the mean ask rate of the last 3 iterations must exceed the first 3's, averaged
over the seeds. Measured (benchmarks/ask_learning.py --iterations 12 --lr 3e-3 --updates 4
--seed S): rises of 0.11, 0.36 and 0.31 for seeds 0, 1, 2 (mean 0.26); after the
mask-free training forward (same logits, other rounding) 0.14, 0.39 and 0.19 (mean 0.24,
this test, 557 CPU-s). The margin, set before those runs from a single run's 0.33, is
kept."""
HELD_OUT = 0.5
"""The greedy policy's ask rate on the held-out must-ask slots after training, per seed
(0 before; measured 1.0 on each of the three seeds)."""


def lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_grpo_with_the_guard_teaches_a_never_asking_policy_to_ask(tmp_path: Path) -> None:
    from stategym.train.config import GRPOConfig, SFTConfig
    from stategym.train.grpo import train as grpo
    from stategym.train.sft import train as sft

    start = sft(SFTConfig(out=str(tmp_path / "sft"), lr=2e-3, **SFT))
    before = [m["eval"] for m in lines(start) if "eval" in m][-1]
    assert before["ask_rate"] == 0.0  # the start policy never asks
    rises, held_out, curves = [], [], []
    for seed in SEEDS:
        config = GRPOConfig(
            out=str(tmp_path / f"grpo-{seed}"), init=str(start), family="ask-or-act",
            credit="composite", tasks=4, group=8, updates=4, minibatch=16, lr=3e-3,
            iterations=ITERATIONS, max_tokens=24, max_length=1024, eval_episodes=8,
            save_every=1000, progress=False, guard_teacher="ask-p1", guard_fraction=0.25,
            seed=seed,
        )  # fmt: skip
        run = grpo(config)
        steps = [m for m in lines(run) if "eval" not in m]
        assert [m["iteration"] for m in steps] == list(range(1, ITERATIONS + 1))
        curve = [m["ask_rate"] for m in steps]
        rises.append(sum(curve[-3:]) / 3 - sum(curve[:3]) / 3)
        held_out.append([m["eval"] for m in lines(run) if "eval" in m][-1]["ask_rate"])
        curves.append(curve)
    assert sum(rises) / len(rises) >= MARGIN, (rises, curves)
    assert min(held_out) >= HELD_OUT, (held_out, curves)
