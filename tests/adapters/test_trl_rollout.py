"""TRL's ``rollout_func`` path: stategym plays the episodes, its credit weighs the tokens.

Two real GRPO steps per credit variant (composite, dense) on a tiny model built here from a
config (a 1-layer Qwen2 and a BPE trained on the prompts, ``stategym.train.policy.build_tiny``;
nothing is downloaded) on ``synth:askgate1``. The test seams are spies on stategym's own
classes and a subclass of the trainer that records what TRL's loss was given; TRL itself
runs unchanged.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="the trl extra is not installed")

import torch
import trl
from datasets import Dataset

from stategym.adapters.trl_rollout import (
    ADVANTAGES,
    EPISODE,
    SEED_KEY,
    CreditGRPOTrainer,
    EpisodeRollout,
)
from stategym.kernel.errors import UsageError
from stategym.metrics import score
from stategym.train.config import GRPOConfig, SFTConfig
from stategym.train.data import play_demonstrations, sequences, tokenizer_chats
from stategym.train.grpo import call_scales, group_advantages, sample_of
from stategym.train.policy import Policy, TinySize, build_tiny
from stategym.train.sft import step as sft_step

DOMAIN = "synth:askgate1"
GROUP = 2
SFT_STEPS = 20
BATCH = 8
"""Episodes a step trains on: BATCH // GROUP prompts, GROUP samples each. With 4, whether
some group's two samples
scored differently hung on the exact prompt text: prompt version 4's wording left every pair
alike, so no step had an advantage to learn from. With 8, every SFT length tried from 10 to
45 steps gives steps with one (measured when version 4 landed)."""


def rollout(credit: Any, domain: str = DOMAIN) -> EpisodeRollout:
    settings = GRPOConfig(domain=domain, credit=credit, max_tokens=16, max_length=720)
    return EpisodeRollout(settings)


def tiny(rows: list[dict[str, Any]]) -> Policy:
    """A 1-layer Qwen2 (width 32) and a 600-id BPE trained on the rows' prompts and the
    expert's episodes, then SFT_STEPS of imitation of the expert on the rows' seeds: a random
    model's text rarely asks the user anything, so two samples of one prompt would score
    alike and leave GRPO no advantage to learn from; an imitating one's differ in what they
    ask."""
    chats = [
        ([{k: v for k, v in m.items() if k != SEED_KEY} for m in r["prompt"]], []) for r in rows
    ]
    demos = play_demonstrations(DOMAIN, "expert", range(len(rows)))
    size = TinySize(vocab_size=600, hidden_size=32, layers=1, heads=2, intermediate_size=64)
    policy = build_tiny(chats + tokenizer_chats(demos), seed=0, size=size)
    settings = SFTConfig(batch_size=len(rows), lr=1e-2, seed=0)
    samples = sequences(demos, policy.chat, settings.rendering, max_length=720)
    optimiser = torch.optim.AdamW(policy.model.parameters(), lr=settings.lr)
    for iteration in range(1, SFT_STEPS + 1):
        sft_step(policy, optimiser, samples, settings, iteration)
    return policy


def arguments(tmp_path: Path) -> trl.GRPOConfig:
    return trl.GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=BATCH,
        num_generations=GROUP,
        max_steps=2,
        learning_rate=1e-2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )


class Recording(CreditGRPOTrainer):
    """The trainer, keeping the batches its loss was computed on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.losses: list[dict[str, Any]] = []

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self.losses.append({k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)})
        return super()._compute_loss(model, inputs)


# transformers 5.24 warns that TRL's GRPOConfig sets the deprecated gradient_checkpointing
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("credit", ["composite", "dense"])
def test_grpo_trains_on_stategym_episodes_with_per_token_credit(
    credit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.set_num_threads(1)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    episodes = rollout(credit)
    rows = episodes.rows(range(BATCH))
    policy = tiny(rows)
    # every call of the rollout, and within it every batched generation: (sessions, prompts, ids)
    calls: list[dict[str, Any]] = []
    generate, call = Policy.generate, EpisodeRollout.__call__

    def spied_generate(self: Policy, prompts: Any, **kwargs: Any) -> Any:
        replies = generate(self, prompts, **kwargs)
        calls[-1]["rounds"].append((kwargs["sessions"], prompts, [r.ids for r in replies]))
        return replies

    def spied_call(self: EpisodeRollout, prompts: Any, trainer: Any) -> Any:
        calls.append({"rounds": []})
        calls[-1]["out"] = call(self, prompts, trainer)
        return calls[-1]["out"]

    monkeypatch.setattr(Policy, "generate", spied_generate)
    monkeypatch.setattr(EpisodeRollout, "__call__", spied_call)
    before = [p.detach().clone() for p in policy.model.parameters()]
    trainer = Recording(
        policy.model,
        args=arguments(tmp_path),
        processing_class=policy.tokenizer,
        train_dataset=Dataset.from_list(rows),
        rollout_func=episodes,
    )
    trainer.train()

    after = list(policy.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    steps = [log for log in trainer.state.log_history if "reward" in log]
    assert len(steps) == len(calls) == len(trainer.losses) == 2
    learnt = varied = False  # a step had an advantage to learn from; one row had several
    for log, played, used in zip(steps, calls, trainer.losses, strict=True):
        out = played["out"]
        assert [e.member.sample for e in out[EPISODE]] == [0, 1] * (BATCH // GROUP)
        # the reward TRL logged is stategym's R of the episodes it trained on
        composite = [score(e.trajectory, e.task).composite for e in out[EPISODE]]
        assert log["reward"] == pytest.approx(sum(composite) / len(composite))
        expected = train_advantages(out, policy, replace(episodes.settings, group=GROUP))
        assert out[ADVANTAGES] == expected
        check_prefixes(played)
        check_loss_batch(out, used)
        learnt |= any(a != 0 for row in expected for a in row)
        for row, mask in zip(expected, out["env_mask"], strict=True):
            varied |= len({a for a, m in zip(row, mask, strict=True) if m}) > 1
    # dense credit differs between an episode's rounds, composite credit does not
    assert learnt and varied == (credit == "dense")


def train_advantages(out: dict[str, Any], policy: Policy, config: Any) -> list[list[float]]:
    """What ``stategym train grpo`` gives the completions' tokens for the same episodes."""
    played = out[EPISODE]
    cards = [score(e.trajectory, e.task) for e in played]
    expected: list[list[float]] = []
    for g in range(0, len(played), GROUP):
        per_round = group_advantages(config, played[g : g + GROUP], cards[g : g + GROUP])
        scales = call_scales(config, played[g : g + GROUP], cards[g : g + GROUP])
        for i, advantages in enumerate(per_round, start=g):
            scale = None if scales is None else scales[i - g]
            sample = sample_of(policy, played[i], cards[i], advantages, config, scale)
            expected.append(list(sample.advantages[len(out["prompt_ids"][i]) :]))
    return expected


def check_prefixes(played: dict[str, Any]) -> None:
    """Every round's prompt is the previous prompt, its sampled ids and its observation;
    TRL's row is the first prompt and then the rest; only sampled ids carry loss."""
    out = played["out"]
    for row, prompt in enumerate(out["prompt_ids"]):
        fed = []  # this episode's (prompt, sampled ids) per round, as the engine got them
        for sessions, prompts, replies in played["rounds"]:
            fed += [
                (p, ids) for s, p, ids in zip(sessions, prompts, replies, strict=True) if s == row
            ]
        assert list(fed[0][0]) == prompt
        for (earlier, sampled), (later, _) in itertools.pairwise(fed):
            assert list(later[: len(earlier) + len(sampled)]) == [*earlier, *sampled]
        whole = [*prompt, *out["completion_ids"][row]]
        sampled_at = [0] * len(whole)
        for p, ids in fed:
            kept = list(ids)[: len(whole) - len(p)]  # max_length may cut the last round
            assert whole[len(p) : len(p) + len(kept)] == kept
            sampled_at[len(p) : len(p) + len(kept)] = [1] * len(kept)
        # 0 exactly on the observation tokens
        assert out["env_mask"][row] == sampled_at[len(prompt) :]
        assert 0 in out["env_mask"][row] and 1 in out["env_mask"][row]


def check_loss_batch(out: dict[str, Any], used: dict[str, torch.Tensor]) -> None:
    """The batch TRL's loss saw carries the rollout's mask and per-token advantages."""
    assert used["advantages"].dim() == 2
    pad = used["prompt_mask"]
    by_ids = {}
    for row in range(used["completion_ids"].shape[0]):
        prompt = used["prompt_ids"][row][pad[row].bool()].tolist()
        length = int(used["completion_mask"][row].sum())
        by_ids[(tuple(prompt), tuple(used["completion_ids"][row, :length].tolist()))] = row
    for row, (prompt, completion) in enumerate(
        zip(out["prompt_ids"], out["completion_ids"], strict=True)
    ):
        index = by_ids[(tuple(prompt), tuple(completion))]
        length = len(completion)
        assert used["tool_mask"][index, :length].tolist() == out["env_mask"][row]
        assert used["advantages"][index, :length].tolist() == pytest.approx(out[ADVANTAGES][row])


def test_the_trainer_refuses_what_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError, match="EpisodeRollout"):
        CreditGRPOTrainer(None, rollout_func=lambda prompts, trainer: {})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="guard"):
        EpisodeRollout(GRPOConfig(guard_teacher="expert", guard_fraction=0.5))
    monkeypatch.setattr(trl, "__version__", "1.17.0")
    with pytest.raises(UsageError, match=r"trl 1\.17\.0 .*trl>=1\.16,<1\.17"):
        CreditGRPOTrainer(None, rollout_func=rollout("composite"))


def test_a_prompt_must_carry_its_seed_and_be_that_seeds_prompt() -> None:
    episodes = rollout("composite")
    rows = episodes.rows([3, 3, 5, 5])
    members = episodes.members([r["prompt"] for r in rows], GROUP)
    assert [(m.seed, m.sample) for m in members] == [(3, 0), (3, 1), (5, 0), (5, 1)]
    with pytest.raises(UsageError, match="whole groups"):
        episodes.members([r["prompt"] for r in rows[1:]], GROUP)
    with pytest.raises(UsageError, match=SEED_KEY):
        episodes.members([[{"role": "user", "content": "hi"}]] * 2, GROUP)
    # two seeds may render the same prompt (their hidden facts differ): the seed is the task
    assert rows[0]["prompt"][1:] == rows[2]["prompt"][1:]
    (travel,) = rollout("composite", "travel").rows([3])
    with pytest.raises(UsageError, match="not this rollout's"):
        episodes.members([travel["prompt"]] * 2, GROUP)


@pytest.mark.parametrize(
    "prompt", ["hi", ["hi"], [{"role": "user", "content": "hi"}, "hi"]], ids=repr
)
def test_a_prompt_that_is_not_chat_messages_is_refused_clearly(prompt: Any) -> None:
    """A plain-text prompt raised ``AttributeError: 'str' object has no attribute 'get'``."""
    with pytest.raises(UsageError, match="a prompt must be a list of chat messages"):
        rollout("composite").members([prompt] * GROUP, GROUP)
