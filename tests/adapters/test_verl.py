"""The verl adapter: verl's agent loop, made the way verl's worker makes it, plays episodes.

The loop is instantiated from verl's own registry entry with hydra and verl's own rollout
config (``verl/trainer/config/rollout/rollout.yaml``). The test seam is the server manager:
:class:`ScriptedServer` returns verl's ``TokenOutput`` with the ids a script gives, here the
ids of the scripted expert's turns as the chat template writes them (the tokenizer is
trained here on expert chats with ``tokenizers``; nothing is downloaded). One test runs
verl's whole rollout path for a batch: rows written to parquet, verl's dataset and collate,
its ``AgentLoopWorker.generate_sequences``, and the trainer's ``extract_reward``.
"""

from __future__ import annotations

import asyncio
import copy
import math
import random
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():  # ray warns about its own deprecated modules on import
    warnings.simplefilter("ignore", DeprecationWarning)
    verl = pytest.importorskip("verl", reason="the verl extra is not installed")
    from verl.experimental.agent_loop.agent_loop import (
        AgentLoopOutput,
        DictConfigWrap,
        ToolListWrap,
        _agent_loop_registry,
    )
    from verl.workers.rollout.replica import TokenOutput

    from stategym.adapters import verl as adapter

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.trajectory import RoundKind, Trajectory, dumps, loads
from stategym.llm.local import ChatTokenizer
from stategym.metrics import score
from stategym.rendering import make_renderer
from stategym.rollout import run_episode
from stategym.rollout.play import adrive
from stategym.train.streams import demonstration

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A 400-id byte-level BPE with stategym's ChatML template, trained on expert chats."""
    from stategym.llm.tiny import TinyConfig, expert_chats, train_tokenizer

    return train_tokenizer(expert_chats(TinyConfig(episodes=4)), vocab_size=400)


@pytest.fixture
def envs(monkeypatch: pytest.MonkeyPatch) -> list[Env]:
    """Every environment the loop makes (to read the episodes it played)."""
    made: list[Env] = []

    class Recorded(Env):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(adapter, "Env", Recorded)
    return made


class ScriptedServer:
    """verl's server manager, answering each ``generate`` with the next scripted ids.

    A plain class: hydra's ``instantiate`` would turn a dataclass argument into a config.
    """

    def __init__(self, replies: Sequence[Sequence[int]], log_probs: bool = False) -> None:
        self.replies = replies
        self.log_probs = log_probs
        self.prompts: list[list[int]] = []
        self.params: list[dict[str, Any]] = []

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> TokenOutput:
        self.prompts.append(list(prompt_ids))
        self.params.append(dict(sampling_params))
        ids = list(self.replies[len(self.prompts) - 1])[: sampling_params["max_tokens"]]
        logprobs = [-0.5 - i / 100 for i in range(len(ids))] if self.log_probs else None
        return TokenOutput(token_ids=ids, log_probs=logprobs, stop_reason="completed")


def rollout_config(**overrides: Any) -> Any:
    from omegaconf import OmegaConf

    rollout = OmegaConf.load(Path(verl.__file__).parent / "trainer/config/rollout/rollout.yaml")
    settings = {"prompt_length": 4096, "response_length": 16384, **overrides}
    turns = {k: settings.pop(k) for k in ("max_assistant_turns", "max_user_turns") if k in settings}
    return OmegaConf.merge(rollout, settings, {"multi_turn": turns})


def play(
    server: ScriptedServer,
    tokenizer: Any,
    domain: str = "travel",
    seed: int = 3,
    row: dict[str, Any] | None = None,
    **limits: Any,
) -> AgentLoopOutput:
    """One sample through the loop, made and run as verl's ``AgentLoopWorker`` does (``row``
    replaces fields of the row ``dataset_rows`` writes)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout_config(**limits)}})
    row = {**adapter.dataset_rows(domain, [seed])[0], **(row or {})}
    kwargs = {k: v for k, v in row.items() if k != "agent_name"}

    async def run() -> AgentLoopOutput:
        loop = instantiate(
            config=_agent_loop_registry[row["agent_name"]],
            trainer_config=DictConfigWrap(config=config),
            server_manager=server,
            tokenizer=tokenizer,
            processor=None,
            hf_model_type=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(OmegaConf.create({})),
            tools=ToolListWrap([]),
        )
        sampling = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": server.log_probs}
        return await loop.run(sampling, raw_prompt=row["prompt"], **kwargs)

    return asyncio.run(run())


def expert(tokenizer: Any, domain: str = "travel", seed: int = 3) -> tuple[Trajectory, Any]:
    """The expert's episode and the token stream a policy playing it would have made."""
    env = Env(domain)
    trajectory = run_episode(env, scripted(env.domain, "expert"), seed)
    return trajectory, demonstration(trajectory, env.task, ChatTokenizer(tokenizer), "messages")


def moves(trajectory: Trajectory) -> list[tuple[Any, ...]]:
    """What each round did (call ids differ between agents), and what the world did."""
    return [
        (r.kind, tuple((c.name, c.arguments, c.content) for c in r.calls), r.say, r.charges)
        for r in trajectory.rounds
    ]


def served(stream: Any) -> list[list[int]]:
    return [list(stream.ids[a:b]) for a, b in stream.spans]


class TaskServer:
    """verl's server manager for many episodes at once: each request id plays the script of
    the task whose first prompt its prompt starts with."""

    def __init__(self, streams: Sequence[Any]) -> None:
        self.scripts = {tuple(s.ids[: s.spans[0][0]]): served(s) for s in streams}
        self.turns: dict[str, int] = {}

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> TokenOutput:
        (script,) = [v for k, v in self.scripts.items() if tuple(prompt_ids[: len(k)]) == k]
        turn = self.turns[request_id] = self.turns.get(request_id, -1) + 1
        return TokenOutput(token_ids=script[turn], log_probs=[-0.25] * len(script[turn]))


def worker_batch(tokenizer: Any, tmp_path: Path, seeds: Sequence[int], server: Any) -> Any:
    """verl's rollout of a batch of travel rows: rows to parquet, verl's dataset and collate,
    then its ``AgentLoopWorker.generate_sequences`` with ``server`` as the server manager."""
    import pandas as pd
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.rollout_trace import RolloutTraceConfig

    pd.DataFrame(adapter.dataset_rows("travel", seeds)).to_parquet(tmp_path / "train.parquet")
    data = OmegaConf.create(
        {"max_prompt_length": 4096, "filter_overlong_prompts": False, "cache_dir": str(tmp_path)}
    )
    dataset = RLHFDataset(str(tmp_path / "train.parquet"), tokenizer, data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(seeds))]))
    rollout = rollout_config(response_length=4096)
    # The worker's __init__ loads the model's config from a checkpoint folder and starts
    # verl's tracing; these are the attributes it sets that generate_sequences reads.
    worker = AgentLoopWorker.__new__(AgentLoopWorker)
    worker.config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": data})
    worker.rollout_config = worker.config.actor_rollout_ref.rollout
    worker.llm_client = server
    worker.tokenizer, worker.processor, worker.hf_model_type = tokenizer, None, None
    worker.dataset_cls, worker.tools, worker.mm_processor_kwargs = RLHFDataset, [], {}
    worker.reward_loop_worker_handles, worker.distillation_enabled = None, False
    RolloutTraceConfig.init(None, None, None, False, None)
    return asyncio.run(worker.generate_sequences(batch))


def test_verls_worker_plays_a_parquet_of_rows_into_a_batch_with_r_on_the_last_token(
    tokenizer: Any, tmp_path: Path
) -> None:
    from verl.trainer.ppo.reward import extract_reward

    seeds = [3, 4]
    streams = [expert(tokenizer, "travel", seed)[1] for seed in seeds]
    out = worker_batch(tokenizer, tmp_path, seeds, TaskServer(streams))
    rewards, extra = extract_reward(out)  # what verl's trainer reads
    assert rewards.sum(-1).tolist() == [1.0, 1.0]
    assert list(extra["composite"]) == [1.0, 1.0] and list(extra["success"]) == [1.0, 1.0]
    sampled = [sum(b - a for a, b in s.spans) for s in streams]
    assert out.batch["response_mask"].sum(-1).tolist() == sampled
    assert out.batch["rollout_log_probs"].sum(-1).tolist() == [-0.25 * n for n in sampled]
    assert [sum(t) for t in out.non_tensor_batch["turn_scores"]] == pytest.approx([1.0, 1.0])


def test_the_loop_is_in_verls_registry() -> None:
    entry = _agent_loop_registry[adapter.AGENT_NAME]
    assert entry == {"_target_": "stategym.adapters.verl.StategymAgentLoop"}


@pytest.mark.parametrize("domain", ["travel", "bank"])
def test_the_experts_episode_through_the_loop_is_stategyms_episode(
    tokenizer: Any, envs: list[Env], domain: str
) -> None:
    trajectory, stream = expert(tokenizer, domain)
    server = ScriptedServer(served(stream), log_probs=True)
    output = play(server, tokenizer, domain)
    (env,) = envs
    # the same rounds, and R is stategym's own score of that episode
    assert moves(env.trajectory) == moves(trajectory)
    assert any(len(r.calls) > 1 for r in trajectory.rounds)  # a parallel round among them
    assert output.reward_score == score(trajectory, env.task).composite == 1.0
    assert output.extra_fields["reward_extra_info"]["composite"] == 1.0
    assert output.extra_fields["reward_extra_info"]["success"] == 1.0
    assert sum(output.extra_fields["turn_scores"]) == pytest.approx(1.0)
    # the ids are the stream a policy playing the episode makes, up to its last sampled id
    assert output.prompt_ids + output.response_ids == stream.ids
    # the mask is 1 on exactly the sampled ids, in order
    sampled = [i for i, m in zip(output.response_ids, output.response_mask, strict=True) if m]
    assert sampled == [i for reply in server.replies for i in reply]
    assert sum(output.response_mask) == sum(len(r) for r in server.replies)
    # the log-probs are the server's on sampled ids and 0 on observation ids
    assert output.response_logprobs is not None
    kept = [lp for lp, m in zip(output.response_logprobs, output.response_mask, strict=True) if m]
    assert kept == [-0.5 - i / 100 for reply in server.replies for i in range(len(reply))]
    pairs = zip(output.response_logprobs, output.response_mask, strict=True)
    assert all(lp == 0.0 for lp, m in pairs if not m)
    # verl's own conversion puts R on the response's last token
    converted = output.as_dict()
    assert converted["rm_scores"][-1] == 1.0 and converted["rm_scores"][:-1].abs().sum() == 0


def test_every_turns_prompt_is_the_last_prompt_its_completion_and_the_observation(
    tokenizer: Any,
) -> None:
    _, stream = expert(tokenizer)
    server = ScriptedServer(served(stream))
    output = play(server, tokenizer)
    turns = zip(server.prompts, server.replies, server.prompts[1:], strict=False)
    for before, reply, after in turns:  # the last reply has no prompt after it
        assert after[: len(before) + len(reply)] == before + list(reply)
        assert len(after) > len(before) + len(reply)  # the observation's tokens
    first = len(output.prompt_ids)
    assert server.prompts[0] == output.prompt_ids
    for prompt in server.prompts[1:]:  # every later prompt is the sample's ids so far
        assert prompt == output.prompt_ids + output.response_ids[: len(prompt) - first]
    # each turn may sample what is left of the response budget
    assert [p["max_tokens"] for p in server.params] == [
        16384 - (len(p) - first) for p in server.prompts
    ]


def test_the_calls_of_one_turn_are_one_round_and_text_goes_to_the_user(
    tokenizer: Any, envs: list[Env]
) -> None:
    eos = tokenizer.eos_token_id
    calls = '<tool_call>{"name": "get_profile", "arguments": {}}</tool_call>'
    calls += '<tool_call>{"name": "get_travel_policy", "arguments": {}}</tool_call>'
    replies = [[*ids(tokenizer, calls), eos], [*ids(tokenizer, "What is your budget?"), eos]]
    output = play(ScriptedServer(replies), tokenizer, max_assistant_turns=2)
    (env,) = envs
    first, second = env.trajectory.rounds
    assert first.kind is RoundKind.CALLS
    assert [c.name for c in first.calls] == ["get_profile", "get_travel_policy"]
    assert second.kind is RoundKind.SAY and second.user is not None and second.user.reply
    info = output.extra_fields["reward_extra_info"]
    assert (info["rounds"], info["calls"], info["asks"]) == (2, 2, 1)
    # stopped by the turn limit: scored as stategym scores a truncated episode
    truncated = score(adapter_trajectory(env), env.task).composite
    assert output.reward_score == truncated and -1.0 <= truncated <= 1.0


def adapter_trajectory(env: Env) -> Trajectory:
    from dataclasses import replace

    return replace(env.trajectory, truncated=True, outcome=env.outcome())


def ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_garbage_and_malformed_calls_are_format_errors_not_exceptions(
    tokenizer: Any, envs: list[Env]
) -> None:
    eos = tokenizer.eos_token_id
    noise = random.Random(0)
    replies = [
        [*ids(tokenizer, '<tool_call>{"name": "search_flights", "arguments": {"day": '), eos],
        ids(tokenizer, '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>'),
        [noise.randrange(len(tokenizer)) for _ in range(40)],
        [],
        [eos],
    ]
    server = ScriptedServer(replies, log_probs=True)
    output = play(server, tokenizer, max_assistant_turns=len(replies))
    (env,) = envs
    assert len(env.trajectory.rounds) == len(replies)
    assert output.extra_fields["reward_extra_info"]["format_errors"] >= 3
    assert -1.0 <= output.reward_score <= 1.0
    # a turn cut without its end-of-turn gets one from the template, outside the mask
    assert sum(output.response_mask) == sum(len(r) for r in replies)
    assert len(output.response_ids) == len(output.response_mask)
    # an empty turn has no log-probs, and the sample still has one per response id
    assert output.response_logprobs is not None
    assert len(output.response_logprobs) == len(output.response_ids)


def test_the_response_length_ends_the_episode(tokenizer: Any, envs: list[Env]) -> None:
    _, stream = expert(tokenizer)
    replies = served(stream)
    budget = len(replies[0]) + 40  # the first turn, then less than an observation and a turn
    server = ScriptedServer(replies)
    output = play(server, tokenizer, response_length=budget)
    (env,) = envs
    assert len(output.response_ids) <= budget
    assert len(env.trajectory.rounds) == len(server.prompts) < len(replies)
    assert output.reward_score == score(adapter_trajectory(env), env.task).composite


def test_the_user_turn_limit_counts_observations(tokenizer: Any, envs: list[Env]) -> None:
    _, stream = expert(tokenizer)
    server = ScriptedServer(served(stream))
    play(server, tokenizer, max_user_turns=1)
    (env,) = envs
    assert len(server.prompts) == len(env.trajectory.rounds) == 2


def test_a_row_without_a_task_and_a_prompt_too_long_are_refused(tokenizer: Any) -> None:
    with pytest.raises(ValueError, match="extra_info"):
        adapter.episode_of({"index": 0})
    with pytest.raises(ValueError, match="prompt_length"):
        play(ScriptedServer([]), tokenizer, prompt_length=8)


@pytest.mark.parametrize("damage", ["no end-of-turn marker", "no end-of-sequence token"])
def test_a_tokenizer_whose_turns_cannot_be_cut_is_refused_before_sampling(
    tokenizer: Any, damage: str
) -> None:
    from stategym.kernel.errors import UsageError

    damaged = copy.deepcopy(tokenizer)
    if damage == "no end-of-turn marker":
        damaged.chat_template = tokenizer.chat_template.replace("<|im_end|>", "")
    else:
        damaged.eos_token = None
    damaged.name_or_path = "models/damaged"
    server = ScriptedServer([])
    with pytest.raises(UsageError, match=r"^cannot use the model at models/damaged: ") as refused:
        play(server, damaged)
    assert "end-of" in str(refused.value) and "\n" not in str(refused.value)
    assert server.prompts == []


def test_dataset_rows_name_the_task_and_hold_the_renderers_prompt() -> None:
    from stategym.kernel.knobs import Knobs
    from stategym.registry import cached_task, get_domain

    knobs = Knobs.parse("dynamics=off")
    rows = adapter.dataset_rows("shop", [5, 9], knobs)
    assert [r["extra_info"]["seed"] for r in rows] == [5, 9]
    assert adapter.episode_of(rows[1]["extra_info"]) == ("shop", 9, knobs)
    renderer = make_renderer(get_domain("shop"), knobs)
    assert rows[0]["prompt"] == renderer.first_messages(cached_task("shop", 5, knobs))
    assert {r["agent_name"] for r in rows} == {adapter.AGENT_NAME}


@pytest.fixture
def played(monkeypatch: pytest.MonkeyPatch) -> list[Trajectory]:
    """Every trajectory the loop played, as stategym logs it (model turns attached)."""
    done: list[Trajectory] = []

    async def recorded(episode: Any) -> Trajectory:
        done.append(await adrive(episode))
        return done[-1]

    monkeypatch.setattr(adapter, "adrive", recorded)
    return done


class SpoiledLogProbs(ScriptedServer):
    """A scripted server whose log-probs of turn ``turn`` are ``log_probs`` instead."""

    def __init__(self, replies: Sequence[Sequence[int]], turn: int, log_probs: Any) -> None:
        super().__init__(replies, log_probs=True)
        self.turn, self.spoiled = turn, log_probs

    async def generate(self, request_id: str, **kwargs: Any) -> TokenOutput:
        output = await super().generate(request_id, **kwargs)
        if len(self.prompts) - 1 != self.turn:
            return output
        spoiled = self.spoiled(len(output.token_ids))
        return TokenOutput(token_ids=output.token_ids, log_probs=spoiled)


@pytest.mark.parametrize(
    "spoiled",
    [
        lambda n: [float("nan")] * n,
        lambda n: [-0.1] * (n - 1) + [float("-inf")],
        lambda n: [-1e308 * 10] * n,  # -inf, as a float overflow makes it
        lambda n: [-0.1] * (n + 1),  # not one per id
        lambda n: None,
    ],
    ids=["nan", "minus-inf", "overflow", "length", "none"],
)
def test_unreadable_log_probs_from_the_server_are_dropped_and_the_sample_keeps_its_shape(
    tokenizer: Any, played: list[Trajectory], spoiled: Any
) -> None:
    _, stream = expert(tokenizer)
    server = SpoiledLogProbs(served(stream)[:3], 1, spoiled)
    output = play(server, tokenizer, max_assistant_turns=3)  # no exception
    (trajectory,) = played
    # the second turn's log-probs are left out of its round, and the round names them
    rounds = trajectory.rounds
    assert rounds[1].model is not None and rounds[1].model.logprobs is None
    assert rounds[1].meta["dropped"] == ["log_probs"]
    assert all(r.model is not None and r.model.logprobs for r in (rounds[0], rounds[2]))
    assert "dropped" not in rounds[0].meta and "dropped" not in rounds[2].meta
    assert loads(dumps(trajectory)) == trajectory  # the log reads back
    # verl gets one finite log-prob per response id: 0.0 on the dropped turn's ids
    values = output.response_logprobs
    assert values is not None and len(values) == len(output.response_ids)
    assert all(math.isfinite(v) for v in values)
    span = rounds[1].model.span
    assert span is not None
    first = len(output.prompt_ids)
    assert values[span.start - first : span.end - first] == [0.0] * len(server.replies[1])
    assert output.extra_fields["reward_extra_info"]["dropped_logprobs"] == 1


class NaNTaskServer(TaskServer):
    """A :class:`TaskServer` whose log-probs are NaN for the task whose first prompt is
    ``spoiled``."""

    def __init__(self, streams: Sequence[Any], spoiled: Any) -> None:
        super().__init__(streams)
        self.spoiled = list(spoiled.ids[: spoiled.spans[0][0]])

    async def generate(self, request_id: str, **kwargs: Any) -> TokenOutput:
        output = await super().generate(request_id, **kwargs)
        if kwargs["prompt_ids"][: len(self.spoiled)] != self.spoiled:
            return output
        nan = [math.nan] * len(output.token_ids)
        return TokenOutput(token_ids=output.token_ids, log_probs=nan)


def test_a_batch_with_a_sample_whose_log_probs_were_dropped_is_still_a_batch(
    tokenizer: Any, tmp_path: Path
) -> None:
    streams = [expert(tokenizer, "travel", seed)[1] for seed in (3, 4)]
    out = worker_batch(tokenizer, tmp_path, [3, 4], NaNTaskServer(streams, streams[1]))
    sampled = sum(b - a for a, b in streams[0].spans)
    assert out.batch["rollout_log_probs"].sum(-1).tolist() == [-0.25 * sampled, 0.0]
    assert out.batch["response_mask"].sum(-1).tolist()[1] > 0  # the sample is kept whole
    infos = out.non_tensor_batch["reward_extra_info"]
    assert [info["dropped_logprobs"] for info in infos] == [0, len(streams[1].spans)]


@pytest.mark.parametrize("bad", [-1, 2**32, 2**63, 2**70])
def test_a_token_id_the_server_cannot_have_sampled_stops_the_sample_with_one_line(
    tokenizer: Any, bad: int
) -> None:
    eos = tokenizer.eos_token_id
    server = ScriptedServer([[*ids(tokenizer, "Hello"), bad, eos]])
    with pytest.raises(adapter.ServerOutputError) as error:
        play(server, tokenizer, max_assistant_turns=1)
    message = str(error.value)
    assert "\n" not in message and "inference server" in message
    assert f"returned {bad} as token {len(ids(tokenizer, 'Hello'))} of turn 0" in message


@pytest.mark.parametrize("beyond", [400 + 5, 5000, 2**32 - 1])
def test_an_id_past_the_tokenizers_vocabulary_is_the_models_choice_and_decodes_to_nothing(
    tokenizer: Any, envs: list[Env], beyond: int
) -> None:
    """A guard: models pad their embedding past the tokenizer's vocabulary, so such an id
    can be sampled; it is kept as sampled and the turn reads as empty (a format error)."""
    assert beyond >= len(tokenizer)
    server = ScriptedServer([[beyond, tokenizer.eos_token_id]])
    output = play(server, tokenizer, max_assistant_turns=1)
    (env,) = envs
    assert output.response_ids[:2] == [beyond, tokenizer.eos_token_id]
    assert env.trajectory.rounds[0].kind is RoundKind.INVALID


@pytest.mark.parametrize(
    "seed", [3.7, "3", " 3\n", "\u0663", b"3", True, None, [3], float("nan"), -5, 2**64]
)
def test_a_row_seed_that_is_no_seed_is_refused_naming_the_row_field(
    tokenizer: Any, seed: Any
) -> None:
    row = {"extra_info": {"domain": "travel", "seed": seed, "knobs": "default"}}
    with pytest.raises((TypeError, ValueError), match=r"row's extra_info\.seed: a seed must"):
        play(ScriptedServer([]), tokenizer, row=row)


@pytest.mark.parametrize("knobs", [False, 0, {"dynamics": "off"}, ["dynamics=off"], "dyn=off"])
def test_row_knobs_must_be_text_the_core_parses(tokenizer: Any, knobs: Any) -> None:
    row = {"extra_info": {"domain": "travel", "seed": 3, "knobs": knobs}}
    with pytest.raises((TypeError, ValueError), match=r"row's extra_info\.knobs"):
        play(ScriptedServer([]), tokenizer, row=row)


def test_a_numpy_seed_and_a_null_knobs_column_play_the_task(
    tokenizer: Any, envs: list[Env]
) -> None:
    """A guard: pandas gives ``numpy.int64`` seeds, and a parquet column of rows with and
    without knobs reads the missing ones as null (the default knobs)."""
    import numpy as np

    row = {"extra_info": {"domain": "travel", "seed": np.int64(3), "knobs": None}}
    play(ScriptedServer([[tokenizer.eos_token_id]]), tokenizer, row=row, max_assistant_turns=1)
    (env,) = envs
    assert type(env.task.seed) is int and env.task.seed == 3


def test_a_row_whose_prompt_or_data_source_is_another_tasks_is_refused(tokenizer: Any) -> None:
    bank = adapter.dataset_rows("bank", [9])[0]
    travel_4 = adapter.dataset_rows("travel", [4])[0]
    for row, field in [
        ({"prompt": bank["prompt"], "data_source": bank["data_source"]}, "data_source"),
        ({"data_source": bank["data_source"]}, "data_source"),
        ({"data_source": 7}, "data_source"),
        ({"prompt": bank["prompt"]}, "prompt"),
        ({"prompt": travel_4["prompt"]}, "prompt"),  # the same domain, another seed
        ({"prompt": "Plan my trip"}, "prompt"),  # no chat messages
    ]:
        server = ScriptedServer([])
        with pytest.raises(ValueError, match=f"the row's {field}"):
            play(server, tokenizer, row=row)
        assert server.prompts == []  # refused before anything is sampled


def test_a_rows_prompt_is_compared_by_role_and_text(tokenizer: Any, envs: list[Env]) -> None:
    """A guard: a dataset may add keys to the messages (a parquet struct column gives every
    message every key), and a row without ``data_source`` is not checked for it."""
    import numpy as np

    prompt = [{**m, "tool_calls": None} for m in adapter.dataset_rows("travel", [3])[0]["prompt"]]
    row = {"prompt": np.array(prompt, dtype=object), "data_source": None}
    play(ScriptedServer([[tokenizer.eos_token_id]]), tokenizer, row=row, max_assistant_turns=1)
    (env,) = envs
    assert env.task.seed == 3
