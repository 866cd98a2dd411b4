"""The TRL adapter: its environment class on its own, then a few real GRPO steps.

The unit tests call the tool methods the way TRL 1.16's ``_tool_call_loop`` does: the
calls of one assistant message gathered together on one event loop, one message after
another. The last test trains a tiny model (built here from a config and a tokenizer
trained on the prompts; nothing is downloaded) with ``GRPOTrainer`` for two steps.
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path
from typing import Any

import pytest

from stategym.adapters.trl import (
    END_MARK,
    SAY_TOOL,
    dataset_rows,
    environment_class,
    route_text_to_user,
)
from stategym.kernel.trajectory import RoundKind
from stategym.metrics import score


def message(*coroutines: Any) -> list[str]:
    """One assistant message's calls, gathered as TRL gathers async tools."""

    async def gather() -> list[str]:
        return list(await asyncio.gather(*coroutines))

    return asyncio.run(gather())


def travel(seed: int = 3) -> Any:
    env = environment_class("travel")()
    env.reset(seed=seed, prompt=[])
    return env


def test_the_calls_of_one_message_are_one_round() -> None:
    env = travel()
    profile, policy = message(env.get_profile(), env.get_travel_policy())
    assert '"home_airport"' in profile and '"max_fare"' in policy
    (events,) = message(env.get_city_events(airport="NRT"))
    rounds = env.env.trajectory.rounds
    assert [len(r.calls) for r in rounds] == [2, 1]
    assert [c.name for c in rounds[0].calls] == ["get_profile", "get_travel_policy"]
    assert events.startswith("[")


def test_a_message_to_the_user_is_a_say_round_and_gets_the_reply() -> None:
    env = travel()
    (reply,) = message(env.message_user(message="What is your budget for this flight?"))
    (record,) = env.env.trajectory.rounds
    assert record.kind is RoundKind.SAY and reply == record.user.reply and reply


def test_a_bad_call_is_stategyms_format_error() -> None:
    env = travel()
    (result,) = message(env.search_flights(origin="ICN", destination="NRT", day="x"))
    (record,) = env.env.trajectory.rounds
    assert record.format_errors == ("wrong_type",)
    assert '"error"' in result and "day" in result


def test_finish_ends_the_episode_and_later_calls_are_told_so() -> None:
    env = travel()
    message(env.message_user(message="What is your budget for this flight?"))
    (done,) = message(env.finish(answer="nothing booked"))
    assert env.env.done and done.endswith(END_MARK)
    assert message(env.get_profile()) == [END_MARK]
    assert len(env.env.trajectory.rounds) == 2
    assert env.get_reward() == score(env.env.trajectory, env.env.task).composite


def test_an_unfinished_rollout_is_scored_truncated() -> None:
    env = travel()
    message(env.get_profile())
    assert not env.env.done
    assert -1.0 <= env.get_reward() <= 1.0


def test_the_class_and_an_episode_in_play_pickle() -> None:
    cls = environment_class("travel")
    assert pickle.loads(pickle.dumps(cls)) is cls
    env = travel()
    message(env.get_profile())
    copy = pickle.loads(pickle.dumps(env))
    assert copy.env.state_key() == env.env.state_key()


class FakeTokenizer:
    """A tokenizer whose parser returns a fixed reading and whose decode joins ids."""

    def __init__(self, parsed: dict[str, Any]) -> None:
        self.parsed = parsed

    def parse_response(self, ids: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(self.parsed)

    def decode(self, ids: list[Any]) -> str:
        return "".join(map(str, ids))


def test_plain_text_is_routed_to_the_user_until_the_episode_is_over() -> None:
    tools = [environment_class("travel").message_user]
    plain = route_text_to_user(FakeTokenizer({"role": "assistant", "content": "Budget?"}))
    routed = plain.parse_response([1], prefix=["history"], tools=tools)
    (call,) = routed["tool_calls"]
    assert call["function"] == {"name": SAY_TOOL, "arguments": {"message": "Budget?"}}
    over = plain.parse_response([1], prefix=["result", END_MARK, "<|im_start|>"], tools=tools)
    assert "tool_calls" not in over
    assert "tool_calls" not in plain.parse_response([1], prefix=["h"], tools=[])
    calling = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "x"}}]}
    tool = route_text_to_user(FakeTokenizer(calling)).parse_response([1], tools=tools)
    assert tool["tool_calls"] == calling["tool_calls"]


TWO = ("get_profile", "get_travel_policy")


def tiny(rows: list[dict[str, Any]]) -> tuple[Any, Any]:
    """A 1-layer Qwen2 and a 300-id BPE with TRL's Qwen3 chat template (parsed by TRL)."""
    import torch
    import trl
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([m["content"] for r in rows for m in r["prompt"]], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.padding_side = "left"
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates/qwen3.jinja").read_text()
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(config), tokenizer


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_grpo_trains_on_a_domain_through_environment_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason="the trl extra is not installed")
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = dataset_rows("travel", range(4))
    model, tokenizer = tiny(rows)
    route_text_to_user(tokenizer)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=48,
        max_steps=2,
        max_tool_calling_iterations=3,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        seed=0,
    )
    made: list[Any] = []

    def factory() -> Any:
        made.append(environment_class("travel")())
        return made[-1]

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(rows),
        environment_factory=factory,
    )
    trainer.train()
    steps = [log for log in trainer.state.log_history if "reward" in log]
    assert len(steps) == 2
    # the random model's plain replies reached the simulated user instead of ending the rollout
    last = made[: args.per_device_train_batch_size]
    assert all(e.env.trajectory.rounds for e in last)
    assert any(r.kind is RoundKind.SAY for e in last for r in e.env.trajectory.rounds)
    # the reward TRL logged for the last step is stategym's R of those episodes
    mean = sum(e.get_reward() for e in last) / len(last)
    assert steps[-1]["rewards/TravelEnvironment/mean"] == pytest.approx(mean, abs=1e-6)
    # TRL's own tool loop runs a message's two calls as one round
    env = trainer.environments[0]
    env.reset(**rows[1])
    prompt = list(rows[1]["prompt"])
    ids = list(tokenizer.apply_chat_template(prompt, add_generation_prompt=True)["input_ids"])
    calls = [{"type": "function", "function": {"name": n, "arguments": {}}} for n in TWO]
    completion = {"role": "assistant", "content": "", "tool_calls": calls}
    reply = [[completion], [{"role": "assistant", "content": ""}]]
    trainer._tool_call_loop([prompt, list(prompt)], [ids, ids], [[1], [1]], reply, None, None, {})
    assert [c.name for c in env.env.trajectory.rounds[0].calls] == list(TWO)
