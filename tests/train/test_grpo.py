"""``stategym train grpo``: lock-step rollouts, every credit flag, the run directory,
determinism and resume, and the checkpoint played as ``hf:PATH`` by ``stategym eval``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from stategym.train.config import CREDITS, GRPOConfig
from stategym.train.grpo import train

WEIGHTS = "model.safetensors"


def small(sft_run: Path, out: Path, **changes: object) -> GRPOConfig:
    base = GRPOConfig(
        out=str(out), init=str(sft_run), iterations=2, tasks=2, group=3, minibatch=6,
        max_tokens=16, max_length=1400, eval_episodes=1, save_every=1, progress=False,
        guard_teacher="expert", guard_fraction=0.34, kl=0.05, entropy=0.01,
    )  # fmt: skip
    return replace(base, **changes)  # type: ignore[arg-type]


def lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_lock_step_rollouts_keep_the_sampled_tokens_and_every_credit_applies(sft_run: Path) -> None:
    from stategym.metrics.score import score
    from stategym.train import mc
    from stategym.train.checkpoint import iteration_generator
    from stategym.train.group import Sampling, play
    from stategym.train.grpo import group_advantages, members
    from stategym.train.policy import Policy

    policy = Policy.load(sft_run / "model")
    config = small(sft_run, Path("unused"), tasks=1)
    group = members(config, 1)
    assert [m.teacher for m in group] == ["", "", "expert"]
    rollouts, timing = play(policy, group, Sampling(1.0, 16, 1400), iteration_generator(0, 1))
    assert timing.tokens > 0 and timing.total >= timing.generation > 0
    for rollout in rollouts:
        assert len(rollout.spans) == len(rollout.trajectory.rounds) == len(rollout.keys)
        for record, (start, end) in zip(rollout.trajectory.rounds, rollout.spans, strict=True):
            assert set(rollout.mask[start:end]) <= {"p"}
            if not rollout.member.teacher:  # sampled ids sit in the stream as sampled
                assert record.model is not None and record.model.token_ids is not None
                assert rollout.ids[start:end] == tuple(record.model.token_ids)
    cards = [score(r.trajectory, r.task) for r in rollouts]
    values = mc.values(policy, rollouts, 3, 2, Sampling(1.0, 16, 1400), iteration_generator(0, 2))
    for credit in CREDITS:
        per_round = group_advantages(replace(config, credit=credit), rollouts, cards, values)
        assert [len(a) for a in per_round] == [len(r.spans) for r in rollouts]


def test_a_run_logs_every_metric_and_resumes_bit_for_bit(sft_run: Path, tmp_path: Path) -> None:
    whole = train(small(sft_run, tmp_path / "whole", credit="gigpo"))
    again = train(small(sft_run, tmp_path / "again", credit="gigpo"))
    train(small(sft_run, tmp_path / "cut", credit="gigpo", iterations=1))
    resumed = train(small(sft_run, tmp_path / "cut", credit="gigpo"))
    steps = [m for m in lines(whole) if "eval" not in m]
    assert [m["iteration"] for m in steps] == [1, 2]
    wanted = "goal_rate composite ask_rate parallel_rate harm_rate lost lucky_rate rounds"
    for key in (*wanted.split(), "critical_path", "entropy", "kl", "tokens_per_s", "batch_tokens"):
        assert key in steps[0], key
    assert abs(sum(steps[0]["share"].values()) - 1) < 0.05
    # sampler and learner see the same tokens at the same positions: only float rounding
    # apart (a position off by one would differ by whole nats)
    assert all(0 <= m["sampler_drift"] < 1e-3 for m in steps)
    losses = [[m["loss"] for m in lines(run) if "loss" in m] for run in (whole, again, resumed)]
    assert losses[0] == losses[1] == losses[2]
    weights = [(run / "model" / WEIGHTS).read_bytes() for run in (whole, again, resumed)]
    assert weights[0] == weights[1] == weights[2]
    assert (sft_run / "model" / WEIGHTS).read_bytes() != weights[0]  # it learned something


def test_a_checkpoint_plays_as_hf_path_in_eval(sft_run: Path, tmp_path: Path) -> None:
    from stategym.cli import main

    model = sft_run / "model"
    out = tmp_path / "eval"
    status = main(["eval", "--domains", "travel", "--agents", f"hf:{model}", "--episodes", "1",
                   "--max-tokens", "16", "--resamples", "10", "--out", str(out)])  # fmt: skip
    assert status == 0
    assert (out / "scorecard.json").is_file()


def test_sharing_the_prefix_changes_a_step_only_by_rounding(sft_run: Path, tmp_path: Path) -> None:
    """One iteration with and without ``share_prefix``: the same episodes (generation does
    not use it) and the same loss parts up to float rounding."""
    plain, shared = (
        lines(train(small(sft_run, tmp_path / name, iterations=1, share_prefix=share)))[0]
        for name, share in (("plain", False), ("shared", True))
    )
    assert shared["shared_tokens"] > 0 and "shared_tokens" not in plain  # it did share
    for key in ("rounds", "composite", "goal_rate", "batch_tokens"):
        assert shared[key] == plain[key], key
    for key in ("loss", "policy_loss", "kl", "entropy"):
        assert shared[key] == pytest.approx(plain[key], abs=1e-4), key


def test_the_sampler_drift_is_taken_over_the_policys_own_sampled_tokens() -> None:
    import torch

    from stategym.train.batching import Sample
    from stategym.train.grpo import sampler_drift

    def sample(logprobs: tuple[float, ...], mask: tuple[bool, ...]) -> Sample:
        return Sample((1,) * len(mask), mask, (1.0,) * len(mask), logprobs)

    policy = sample((0.0, -1.0, -2.0), (False, True, True))
    teacher = sample((0.0, 0.0, 0.0), (False, True, True))  # never sampled: left out
    learner = {0: torch.tensor([-9.0, -1.5, -2.0]), 1: torch.tensor([-9.0, -3.0, -3.0])}
    assert sampler_drift([policy, teacher], learner, [False, True]) == 0.25
    assert sampler_drift([policy], {0: learner[0]}) == 0.25
    assert sampler_drift([teacher], {0: learner[1]}, [True]) == 0.0
