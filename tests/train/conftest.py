"""Fixtures for the trainer's tests: one small SFT run per session (a tiny model from
scratch: width 64, a 400-id tokenizer trained on the demonstrations' compact rendering)."""

from __future__ import annotations

from pathlib import Path

import pytest

SMALL = {
    "episodes": 6,
    "iterations": 2,
    "batch_size": 2,
    "save_every": 1,
    "eval_episodes": 2,
    "max_tokens": 24,
    "max_length": 1400,
    "tiny_width": 64,
    "tiny_vocab": 400,
    "progress": False,
}
"""An SFT run small enough for a test: seconds per iteration on two busy cores."""


@pytest.fixture(scope="session")
def sft_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-iteration SFT run from the expert and the oracle."""
    pytest.importorskip("torch")
    from stategym.train.config import SFTConfig
    from stategym.train.sft import train

    out = tmp_path_factory.mktemp("sft") / "run"
    return train(SFTConfig(out=str(out), agents="expert:1,oracle:1", **SMALL))
