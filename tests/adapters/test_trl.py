"""The TRL adapter: its environment class on its own, then a few real GRPO steps.

The unit tests call the tool methods the way TRL 1.16's ``_tool_call_loop`` does: the
calls of one assistant message gathered together on one event loop, one message after
another. One test trains a tiny model (built here from a config and a tokenizer
trained on the prompts; nothing is downloaded) with ``GRPOTrainer`` for two steps; the last
ones feed one message's text through TRL's own ``parse_response`` and ``_tool_call_loop``
and compare the round with what ``stategym run`` logs for the same text.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from stategym.adapters.trl import (
    END_MARK,
    SAY_RULE,
    SAY_TOOL,
    dataset_rows,
    environment_class,
    route_text_to_user,
)
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import RoundKind
from stategym.metrics import score
from stategym.registry import all_domains


def message(*coroutines: Any) -> list[str]:
    """One assistant message's calls, gathered as TRL gathers async tools."""

    async def gather() -> list[str]:
        return list(await asyncio.gather(*coroutines))

    return asyncio.run(gather())


def travel(seed: int = 3) -> Any:
    env = environment_class("travel")()
    env.reset(seed=seed)
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
    # a call TRL can dispatch as written (type function, an offered tool, keyword arguments)
    get_profile = {"type": "function", "function": {"name": "get_profile", "arguments": {}}}
    calling = {"role": "assistant", "content": "", "tool_calls": [get_profile]}
    tools.append(environment_class("travel").get_profile)
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


def grpo_args(out: Path, *, completion: int, steps: int, tool_rounds: int, **more: Any) -> Any:
    """TRL's GRPO settings for a two-sample group of the tiny model, on the CPU, unsaved."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=completion,
        max_steps=steps,
        max_tool_calling_iterations=tool_rounds,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
        **more,
    )


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_grpo_trains_on_a_domain_through_environment_factory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl", reason="the trl extra is not installed")
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    torch.set_num_threads(1)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    rows = dataset_rows("travel", range(4))
    model, tokenizer = tiny(rows)
    route_text_to_user(tokenizer)
    args = grpo_args(tmp_path, completion=48, steps=2, tool_rounds=3, logging_steps=1)
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


# -- the audit's findings, through TRL 1.16's own parser and tool loop --------------------

HOLD = ("search_flights", {"origin": "ICN", "destination": "BER", "day": 9})
TRL_WARNINGS = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
"""transformers' deprecations, raised inside TRL's loop (warnings are errors here)."""
PAY = '<tool_call>\n{"name": "book_and_pay", "arguments": {"hold_id": "H1"}}\n</tool_call>'


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A GRPOTrainer (never trained) whose parser and tool loop play one message's text."""
    pytest.importorskip("trl", reason="the trl extra is not installed")
    import warnings

    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    torch.set_num_threads(1)
    rows = dataset_rows("travel", [1])
    model, tokenizer = tiny(rows)
    route_text_to_user(tokenizer)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
        warnings.simplefilter("ignore")
        args = grpo_args(tmp_path_factory.mktemp("trl"), completion=600, steps=1, tool_rounds=1)
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            args=args,
            train_dataset=Dataset.from_list(rows),
            environment_factory=environment_class("travel"),
        )
    return trainer, tokenizer, rows[0]


def play_text(loop: Any, env: Any, text: str) -> list[dict[str, Any]]:
    """One assistant message's text, read by TRL's ``parse_response`` (the routed tokenizer's)
    and run by ``GRPOTrainer._tool_call_loop``, as ``_generate`` does: the completion's
    messages (the reply, its tool results, the next reply)."""
    from trl.chat_template_utils import parse_response

    trainer, tokenizer, row = loop
    tools = trainer._env_tools[None]
    prompt = list(row["prompt"])
    prompt_ids = list(
        tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tools=tools)["input_ids"]
    )
    ids = tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"]
    completion = parse_response(tokenizer, ids, prefix=prompt_ids, tools=tools)
    trainer._sync_tool_dicts = [{}]
    trainer._async_tool_dicts = [{t.__name__: getattr(env, t.__name__) for t in tools}]
    trainer._batch_environments, trainer.environments = [None], [env]
    completions = [[completion]]
    trainer._tool_call_loop([prompt], [prompt_ids], [list(ids)], completions, None, None, {})
    return completions[0]


def run_round(text: str, env: Any) -> tuple[Any, tuple[str, ...]]:
    """What ``stategym run``'s model agents make of the same text: the hf agent's reading
    (``parse``, the renderer's action) stepped by the core, and the parser's errors."""
    from stategym.llm.parse import parse
    from stategym.rendering import make_renderer

    parsed = parse(text)
    action = make_renderer(env.domain, env.knobs).parse(parsed.to_message())
    env.step(action)
    return env.rounds[-1], parsed.errors


def held(loop: Any) -> Any:
    """Travel task 1 with fare NX390 on hold (H1), reset from its dataset row."""
    env = environment_class("travel")()
    env.reset(**loop[2])
    message(getattr(env, HOLD[0])(**HOLD[1]))
    message(env.hold_fare(flight_id="NX390"))
    return env


def core_held() -> Any:
    from stategym.kernel.env import Env
    from stategym.kernel.protocol import CallBatch, ToolCall

    core = Env("travel")
    core.reset(seed=1)
    core.step(CallBatch((ToolCall(*HOLD),)))
    core.step(CallBatch((ToolCall("hold_fare", {"flight_id": "NX390"}),)))
    return core


def calls_of(record: Any) -> list[tuple[str, Any, str | None]]:
    return [(c.name, c.arguments, c.error_kind) for c in record.calls]


@TRL_WARNINGS
@pytest.mark.parametrize(
    "bad",
    [
        '{"name": "message_user", "arguments": {"text": "booking now"}}',  # wrong keyword
        '{"name": "notify_user", "arguments": {}}',  # no such tool
        '{"name": "get_profile", "arguments": "{oops"}',  # arguments not an object
        '{"name": "get_profile", "arguments": null}',  # not a mapping (TRL would make it {})
        '{"name": "get_profile", "parameters": {"x": 1}}',  # TRL would drop them, run reads them
    ],
)
def test_a_call_trl_would_refuse_stops_the_rest_of_its_message(loop: Any, bad: str) -> None:
    from stategym.kernel.verify import verify

    text = f"<tool_call>\n{bad}\n</tool_call>\n{PAY}"
    env = held(loop)
    messages = play_text(loop, env, text)
    record = env.env.trajectory.rounds[-1]
    expected, _ = run_round(text, core_held())
    assert calls_of(record) == calls_of(expected)  # the raw calls, judged as stategym run does
    assert record.calls[1].error_kind == "not_run" and record.format_errors
    assert not env.env.world.charges  # the payment did not run
    assert verify(env.env.stopped_trajectory()) == []
    tool_results = [m["content"] for m in messages if m["role"] == "tool"]
    assert len(tool_results) == 2 and '"error"' in tool_results[0]
    assert "not run" in tool_results[1]


@TRL_WARNINGS
@pytest.mark.parametrize("day", ["9", "1_0", "\\u0669", " 9.0 ", "-1", "1e1", "09"])
def test_typed_json_arguments_are_read_as_written_not_cast_to_the_schema(
    loop: Any, day: str
) -> None:
    """Qwen3's template writes arguments as JSON, so a string is the model's: transformers'
    schema cast (``int("1_0")``) would run the search and the payment beside it."""
    from stategym.kernel.verify import verify

    search = '{"name": "search_flights", "arguments": {"origin": "ICN", "destination": "BER", '
    text = f'<tool_call>\n{search}"day": "{day}"}}}}\n</tool_call>\n{PAY}'
    env = held(loop)
    play_text(loop, env, text)
    record = env.env.trajectory.rounds[-1]
    expected, _ = run_round(text, core_held())
    assert calls_of(record) == calls_of(expected)
    assert isinstance(record.calls[0].arguments["day"], str)  # logged as the model wrote it
    assert record.calls[1].error_kind == "not_run" and not env.env.world.charges
    assert verify(env.env.stopped_trajectory()) == []


@TRL_WARNINGS
def test_untyped_text_arguments_keep_the_schema_cast(
    loop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard: under Qwen3.5's template every argument is raw text (``9`` and ``"9"`` render
    the same), so the schema's integer is the only reading there is and the search runs."""
    from trl.chat_template_utils import qwen3_5_template

    from stategym.kernel.verify import verify

    monkeypatch.setattr(loop[1], "response_template", qwen3_5_template)
    arguments = {"origin": "ICN", "destination": "BER", "day": "9"}
    tags = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in arguments.items())
    env = held(loop)
    play_text(loop, env, f"<tool_call>\n<function=search_flights>\n{tags}</function>\n</tool_call>")
    (call,) = env.env.trajectory.rounds[-1].calls
    assert call.arguments == {**arguments, "day": 9} and call.error_kind is None
    assert verify(env.env.stopped_trajectory()) == []


def test_the_template_says_whether_arguments_are_typed_json_or_untyped_text() -> None:
    pytest.importorskip("trl", reason="the trl extra is not installed")
    from types import SimpleNamespace

    from transformers.utils.chat_parsing.response_templates import load_response_template
    from trl import chat_template_utils as templates

    from stategym.adapters.trl import reads_arguments_as_text

    def kind(template: Any) -> bool:
        return reads_arguments_as_text(SimpleNamespace(response_template=template))

    typed = ("qwen3", "llama3", "gptoss", "gemma4")
    untyped = ("qwen3_5", "glm4moe", "nemotron_3", "lfm2_2_5")
    assert not any(kind(getattr(templates, f"{n}_template")) for n in typed)
    assert all(kind(getattr(templates, f"{n}_template")) for n in untyped)
    assert kind(load_response_template(templates.qwen3_5_template))  # transformers' loaded form
    assert not kind(None) and not kind({"fields": {"tool_calls": {"content": "yaml"}}})


@TRL_WARNINGS
@pytest.mark.parametrize("depth", [1500, 5000])
def test_arguments_nested_past_the_stack_are_stategyms_format_error(loop: Any, depth: int) -> None:
    """transformers' JSON reading raises ``RecursionError`` on such a reply, which ended
    ``GRPOTrainer._generate`` (training died on model output); stategym's parser reads it."""
    from stategym.kernel.env import Env
    from stategym.kernel.verify import verify

    nested = "[" * depth + "]" * depth
    text = f'<tool_call>\n{{"name": "get_profile", "arguments": {{"a": {nested}}}}}\n</tool_call>'
    env = environment_class("travel")()
    env.reset(**loop[2])
    play_text(loop, env, text)
    (record,) = env.env.trajectory.rounds
    core = Env("travel")
    core.reset(seed=1)
    expected, errors = run_round(text, core)
    assert calls_of(record) == calls_of(expected)
    assert record.format_errors == expected.format_errors + errors == ("malformed_json",)
    assert verify(env.env.stopped_trajectory()) == []


@TRL_WARNINGS
def test_a_model_that_writes_the_carrier_argument_just_sends_that_call(loop: Any) -> None:
    """Guard: the marker argument's value is a type no parser returns, so a model writing
    it gets its own call judged (an unknown argument), never the call it names."""
    from stategym.adapters import trl

    spoof = {"name": "book_and_pay", "arguments": {"hold_id": "H1"}}
    body = {"name": "get_profile", "arguments": {trl._CARRIER: spoof}}
    env = held(loop)
    play_text(loop, env, f"<tool_call>\n{json.dumps(body)}\n</tool_call>")
    (call,) = env.env.trajectory.rounds[-1].calls
    assert (call.name, call.arguments) == ("get_profile", {trl._CARRIER: spoof})
    assert call.error_kind is not None and not env.env.world.charges


@TRL_WARNINGS
@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_profile", "arguments": {',  # truncated
        '<tool_call>\n{"name": "get_profile", "arguments": {,}}\n</tool_call>',  # bad JSON
        '<tool_call>\n{"arguments": {}}\n</tool_call>',  # no name
        'What is your budget? <tool_call>\n{"name": 5}\n</tool_call>',  # a name not text
    ],
)
def test_text_trls_parser_cannot_read_is_stategyms_format_error_and_the_loop_goes_on(
    loop: Any, text: str
) -> None:
    from stategym.kernel.env import Env
    from stategym.kernel.verify import verify

    env = environment_class("travel")()
    env.reset(**loop[2])
    messages = play_text(loop, env, text)
    (record,) = env.env.trajectory.rounds
    core = Env("travel")
    core.reset(seed=1)
    expected, errors = run_round(text, core)
    assert calls_of(record) == calls_of(expected)
    assert record.format_errors == expected.format_errors + errors != ()
    assert verify(env.env.stopped_trajectory()) == []  # the log replays, tolerated errors too
    # the model got the error as a tool result, and TRL generated the next reply
    assert [m["role"] for m in messages][:2] == ["assistant", "tool"]
    assert messages[-1]["role"] == "assistant"


def test_message_user_with_other_calls_is_told_it_must_be_alone() -> None:
    env = travel()
    said, profile = message(env.message_user(message="What is your budget?"), env.get_profile())
    (record,) = env.env.trajectory.rounds
    assert [c.name for c in record.calls] == [SAY_TOOL, "get_profile"]
    assert record.format_errors == ("unknown_tool",)  # the raw calls, logged as a format error
    assert SAY_RULE in said and "available" not in said and "not run" in profile
    first, second = message(env.message_user(message="a"), env.message_user(message="b"))
    assert SAY_RULE in first and SAY_RULE in second
    assert env.env.trajectory.rounds[-1].calls[1].arguments == {"message": "b"}


def test_a_pooled_instance_reset_to_a_seed_writes_a_fresh_ones_bytes() -> None:
    from stategym.kernel.trajectory import dumps

    def episode(env: Any) -> str:
        env.reset(seed=5)
        message(env.get_profile(), env.get_travel_policy())
        message(env.search_flights(origin="ICN", destination="NRT", day=3))
        return dumps(env.env.stopped_trajectory())

    pooled = environment_class("travel")()
    first = episode(pooled)
    assert episode(pooled) == first == episode(environment_class("travel")())


def test_a_row_must_name_its_task_and_a_method_needs_a_reset_first() -> None:
    from datasets import Dataset

    travel_class = environment_class("travel")
    env = travel_class()
    with pytest.raises(RuntimeError, match=r"reset\(\*\*row\) first"):
        env.get_reward()
    with pytest.raises(RuntimeError, match=r"reset\(\*\*row\) first"):
        message(env.get_profile())
    row = dataset_rows("travel", [7])[0]
    with pytest.raises(ValueError, match=r"no 'seed' column.*dataset_rows"):
        env.reset(prompt=row["prompt"])
    with pytest.raises(ValueError, match="not task 2's first messages"):
        env.reset(**dataset_rows("bank", [2])[0])  # another domain's row
    with pytest.raises(ValueError, match="not task 8's first messages"):
        env.reset(prompt=row["prompt"], seed=8)
    env.reset(**Dataset.from_list(dataset_rows("travel", [7, 8]))[1])  # as TRL hands it
    assert env.env.task.seed == 8


@pytest.mark.parametrize("knobs", [Knobs(), Knobs.all_off()], ids=["default", "all-off"])
@pytest.mark.parametrize("domain", [*all_domains(), "synth:chain2+fanout3+askgate+verifycommit"])
def test_the_schema_trl_derives_is_the_environments_but_for_extra_arguments(
    domain: str, knobs: Knobs
) -> None:
    """TRL renders each method through transformers' ``get_json_schema``: names, texts, types
    and required arguments are the environment's; it cannot say that other arguments are
    refused (``additionalProperties: false``), which docs/integrations.md states."""
    from transformers.utils import get_json_schema

    cls = environment_class(domain, knobs)
    for offered in Env(domain, knobs=knobs).tool_schemas:
        function = offered["function"]
        parameters = {
            k: v for k, v in function["parameters"].items() if k != "additionalProperties"
        }
        if parameters.get("required") == []:
            del parameters["required"]
        assert function["parameters"].get("additionalProperties") is False
        derived = get_json_schema(getattr(cls, function["name"]))["function"]
        assert {key: derived.get(key) for key in ("name", "description", "parameters")} == {
            "name": function["name"],
            "description": function["description"],
            "parameters": parameters,
        }
