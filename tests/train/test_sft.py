"""``stategym train sft``: the run directory, the masks of a demonstration, resuming and
determinism (CPU, one thread: same config and seed, same losses and checkpoint bytes)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from conftest import SMALL
from stategym.train.config import SFTConfig
from stategym.train.sft import demonstrations, train

WEIGHTS = "model.safetensors"


def lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_family_schedules_the_demonstrations_knobs() -> None:
    config = SFTConfig(family="ask-or-act", agents="expert", episodes=4, first_seed=10)
    played = demonstrations(config)
    assert [t.seed for t, _ in played] == [10, 11, 12, 13]
    assert all(t.domain.startswith("synth:askgate") for t, _ in played)
    assert [t.knobs.hidden_info for t, _ in played] == [True, False, True, False]


def test_the_run_directory_holds_config_metrics_checkpoints_and_model(sft_run: Path) -> None:
    config = json.loads((sft_run / "config.json").read_text())
    assert config["kind"] == "sft" and config["agents"] == "expert:1,oracle:1"
    steps = [m for m in lines(sft_run) if "eval" not in m]
    assert [m["iteration"] for m in steps] == [1, 2]
    assert all(m["loss"] > 0 and m["loss_tokens"] > 0 for m in steps)
    held_out = [m["eval"] for m in lines(sft_run) if "eval" in m]
    assert len(held_out) == 1 and 0 <= held_out[0]["goal_rate"] <= 1
    assert (sft_run / "checkpoints" / "iter-000002" / WEIGHTS).is_file()
    assert (sft_run / "model" / "config.json").is_file()


def test_a_demonstration_carries_loss_on_the_assistant_turns_only(sft_run: Path) -> None:
    from stategym.rendering import make_renderer
    from stategym.rendering.base import logged_action, observation_of
    from stategym.train.policy import Policy
    from stategym.train.streams import demonstration, to_sample

    policy = Policy.load(sft_run / "model")
    config = SFTConfig(episodes=1)
    ((trajectory, task),) = demonstrations(config)
    stream = demonstration(trajectory, task, policy.chat, "compact")
    sample = to_sample(stream)
    renderer = make_renderer(policy_domain(trajectory.domain), trajectory.knobs, "compact")
    renderer.first_messages(task)
    for record, (start, end) in zip(trajectory.rounds, stream.spans, strict=True):
        assert all(sample.loss_mask[start:end]) and len(stream.spans) == len(trajectory.rounds)
        text = policy.tokenizer.decode(list(sample.ids[start:end]))
        message = renderer.action_message(logged_action(record), record.index)
        assert text == str(message.get("content") or "") + "<|im_end|>"
        renderer.observation_messages(observation_of(record, final_say=False))  # new handles
    masked = [i for i, keep in enumerate(sample.loss_mask) if keep]
    assert len(masked) == sum(end - start for start, end in stream.spans)


def policy_domain(name: str):
    from stategym.registry import get_domain

    return get_domain(name)


def test_resuming_gives_the_uninterrupted_run_bit_for_bit(tmp_path: Path) -> None:
    base = SFTConfig(agents="expert", **{**SMALL, "iterations": 3, "episodes": 4})
    whole = train(replace(base, out=str(tmp_path / "whole")))
    again = train(replace(base, out=str(tmp_path / "again")))
    cut = replace(base, out=str(tmp_path / "cut"), iterations=1)
    train(cut)
    resumed = train(replace(cut, iterations=3))
    losses = [[m["loss"] for m in lines(run) if "loss" in m] for run in (whole, again, resumed)]
    assert losses[0] == losses[1] == losses[2] and len(losses[0]) == 3
    weights = [(run / "model" / WEIGHTS).read_bytes() for run in (whole, again, resumed)]
    assert weights[0] == weights[1] == weights[2]


def test_a_run_directory_refuses_other_settings(sft_run: Path) -> None:
    from stategym.kernel.errors import UsageError

    config = json.loads((sft_run / "config.json").read_text())
    config.pop("kind")
    with pytest.raises(UsageError, match="other settings"):
        train(SFTConfig(**{**config, "lr": 0.5}))


def test_a_right_padded_batch_scores_each_sample_as_it_alone(sft_run: Path) -> None:
    """The training forward passes no attention mask for right padding (the causal mask
    keeps padding out); each row's real tokens must get the log-probabilities the sample
    gets alone, and a left-padded batch (mask and position ids) the same again."""
    import torch

    from stategym.train.batching import Sample, collate
    from stategym.train.policy import Policy

    policy = Policy.load(sft_run / "model")
    generator = torch.Generator().manual_seed(0)
    lengths = (37, 5, 90, 61)
    samples = [
        Sample(
            ids=tuple(torch.randint(3, 300, (n,), generator=generator).tolist()),
            loss_mask=(True,) * n,
            advantages=(0.0,) * n,
            logprobs=(0.0,) * n,
        )
        for n in lengths
    ]
    with torch.no_grad():
        right, _ = policy.forward(collate(samples, pad_id=policy.pad_id))
        left, _ = policy.forward(collate(samples, side="left", pad_id=policy.pad_id))
        for i, (sample, n) in enumerate(zip(samples, lengths, strict=True)):
            alone, _ = policy.forward(collate([sample], pad_id=policy.pad_id))
            torch.testing.assert_close(right[i, :n], alone[0], atol=1e-5, rtol=1e-5)
            # position 0 of a sample has no prediction (0); a left-padded row's first real
            # column holds the padding's prediction of it instead, so it is left out
            start = left.shape[1] - n + 1
            torch.testing.assert_close(left[i, start:], alone[0, 1:], atol=1e-5, rtol=1e-5)


def _with_head(head: int, tails: tuple[int, ...], seed: int = 0) -> list:
    """Samples that all begin with the same ``head`` random ids, then their own tails."""
    import torch

    from stategym.train.batching import Sample

    generator = torch.Generator().manual_seed(seed)
    common = torch.randint(3, 300, (head,), generator=generator).tolist()
    samples = []
    for n in tails:
        ids = tuple(common + torch.randint(3, 300, (n,), generator=generator).tolist())
        samples.append(Sample(ids, (True,) * len(ids), (0.0,) * len(ids), (0.0,) * len(ids)))
    return samples


def test_the_shared_prefix_is_what_every_row_begins_with_capped_per_row() -> None:
    from stategym.train.batching import collate
    from stategym.train.policy import MIN_SHARED, shared_prefix

    assert shared_prefix(collate(_with_head(40, (5, 9, 2)))) == 40
    # the shortest row (40 + 0 tokens) keeps one token after the prefix
    assert shared_prefix(collate(_with_head(40, (5, 0, 2)))) == 39
    assert shared_prefix(collate(_with_head(40, (5,)))) == 0  # one row: nothing to share
    assert shared_prefix(collate(_with_head(MIN_SHARED - 1, (5, 9)))) == 0
    # rows that differ at the first token share nothing
    assert shared_prefix(collate(_with_head(0, (30, 30)))) == 0


def test_a_shared_prefix_forward_equals_the_plain_one_with_its_gradients(sft_run: Path) -> None:
    """Logits and gradients of the prefix-once forward match the plain forward's (the
    prefix's gradient sums over every row), entropies too, on rows of unequal length."""
    import torch

    from stategym.train.batching import collate
    from stategym.train.policy import Policy, shared_prefix

    policy = Policy.load(sft_run / "model")
    batch = collate(_with_head(120, (40, 3, 77, 1, 60)), pad_id=policy.pad_id)
    assert shared_prefix(batch) == 120
    results = []
    for share in (False, True):
        policy.share_prefix = share
        policy.model.zero_grad(set_to_none=True)
        logp, entropy = policy.forward(batch, entropy=True)
        real = batch.attention
        (logp[real].sum() + 0.1 * entropy[real].sum()).backward()
        grads = [p.grad.detach().clone() for p in policy.model.parameters()]
        results.append((logp.detach()[real], entropy.detach()[real], grads))
    (plain_lp, plain_h, plain_g), (shared_lp, shared_h, shared_g) = results
    torch.testing.assert_close(shared_lp, plain_lp, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(shared_h, plain_h, atol=1e-4, rtol=1e-4)
    for shared, plain in zip(shared_g, plain_g, strict=True):
        torch.testing.assert_close(shared, plain, atol=1e-4, rtol=1e-3)  # sums reordered
