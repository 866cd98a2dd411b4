"""The trainer's GPU path: the same SFT and GRPO code on ``cuda`` in bfloat16.

Skipped where torch sees no CUDA device (this project's CPU machines), saying so. On a GPU
machine it trains the tiny model from scratch, or the Hugging Face model named by
``STATEGYM_GPU_MODEL`` (a model id or folder; downloading it is the machine's business), for
two SFT steps and one GRPO iteration, and checks that the run wrote its metrics and a
bfloat16 checkpoint that loads back on the device.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device: the GPU path runs only on a GPU"
)

GPU: dict = {"device": "cuda", "dtype": "bfloat16", "progress": False, "max_length": 1400}


def test_sft_then_grpo_run_on_the_gpu_in_bfloat16(tmp_path: Path) -> None:
    from stategym.train.config import GRPOConfig, SFTConfig
    from stategym.train.grpo import train as grpo
    from stategym.train.policy import Policy
    from stategym.train.sft import train as sft

    init = os.environ.get("STATEGYM_GPU_MODEL", "tiny")
    first = SFTConfig(
        out=str(tmp_path / "sft"), init=init, agents="expert", episodes=4, iterations=2,
        batch_size=2, eval_episodes=1, max_tokens=24, **GPU,
    )  # fmt: skip
    then = GRPOConfig(
        out=str(tmp_path / "grpo"), init=str(sft(first)), iterations=1, tasks=1, group=2,
        minibatch=2, max_tokens=16, eval_episodes=1, save_every=1, **GPU,
    )  # fmt: skip
    run = grpo(then)
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("loss" in line for line in lines)
    policy = Policy.load(run / "model", device="cuda", dtype="bfloat16")
    assert next(policy.model.parameters()).dtype == torch.bfloat16
    assert next(policy.model.parameters()).device.type == "cuda"
