"""The verifiers adapter, through verifiers' own evaluation path (``env.evaluate``).

The model is a fake OpenAI-compatible server: a real ``openai.AsyncOpenAI`` client over an
``httpx.MockTransport`` that answers each conversation (told apart by the user's request)
with the next reply of a script. The expert's script is the assistant messages of its own
stategym episode on that task, so verifiers must play the same episode and score it as
stategym does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import loopback
from stategym.agents import resolve
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import RoundKind, Trajectory, loads
from stategym.metrics import DIMENSIONS, score
from stategym.registry import all_domains, cached_task, get_domain
from stategym.rendering import make_renderer, offered_tools, transcript
from stategym.rollout import run_episode

vf = pytest.importorskip("verifiers", reason="the verifiers extra is not installed")
httpx = pytest.importorskip("httpx", reason="httpx comes with openai")
openai = pytest.importorskip("openai", reason="openai comes with verifiers")

from stategym.adapters.verifiers import (  # noqa: E402  (needs verifiers)
    TRAJECTORY_KEY,
    DomainEnv,
    load_environment,
    task_rows,
)

ENVIRONMENTS = Path(__file__).resolve().parents[2] / "environments"
DOMAINS = [*all_domains(), "synth:chain2+fanout3+askgate+verifycommit"]
"""Every registered domain and a synthetic one."""


class ScriptedModel:
    """A chat-completions endpoint that answers each conversation from its script.

    Args:
        scripts: the request's text (the first user message) -> the assistant messages to
            send, one per request of that conversation.
    """

    def __init__(self, scripts: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []

    def last_request(self, request_text: str) -> list[dict[str, Any]]:
        """The messages of the last request of the conversation about ``request_text``."""
        asked = [
            r["messages"] for r in self.requests if r["messages"][1]["content"] == request_text
        ]
        return asked[-1]

    def client(self) -> Any:
        """A verifiers client whose ``AsyncOpenAI`` reaches this model in process."""

        def answer(request: Any) -> Any:
            return httpx.Response(200, json=self.reply(json.loads(request.content)))

        transport = httpx.MockTransport(answer)
        http = httpx.AsyncClient(transport=transport, base_url="http://scripted.test/v1")
        api = openai.AsyncOpenAI(
            api_key="none", base_url="http://scripted.test/v1", http_client=http
        )
        return vf.OpenAIChatCompletionsClient(api)

    def serving(self) -> contextlib.AbstractContextManager[str]:
        """This model on a loopback port, for another process; yields its base URL."""
        return loopback.serving(self.reply)

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The chat completion answering one request: its conversation's next reply."""
        self.requests.append(body)
        messages = body["messages"]
        request_text = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(m["role"] == "assistant" for m in messages)
        reply = dict(self.scripts[request_text][turn])
        return {
            "id": f"scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": reply,
                    "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def expert_episodes(domain: str, seeds: Sequence[int]) -> dict[int, Trajectory]:
    env = Env(domain)
    return {s: run_episode(env, resolve(env.domain, "expert"), seed=s) for s in seeds}


def request_text(domain: str, seed: int) -> str:
    """The user's request of a task: how the scripted model tells conversations apart."""
    return cached_task(domain, seed, Knobs()).request.text


def expert_script(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The expert's replies: the renderer's assistant message for each of its rounds."""
    renderer = make_renderer(get_domain(trajectory.domain), trajectory.knobs)
    return [renderer.action_message(r.action(), r.index) for r in trajectory.rounds]


def evaluate(env: Any, model: ScriptedModel, examples: int) -> list[dict[str, Any]]:
    run = env.evaluate(
        client=model.client(),
        model="scripted",
        num_examples=examples,
        state_columns=[TRAJECTORY_KEY],
    )
    return sorted(asyncio.run(run)["outputs"], key=lambda o: o["example_id"])


def seen(messages: Sequence[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
    """What a conversation says, in the fields both sides write."""
    return [
        (
            m["role"],
            m.get("content"),
            m.get("tool_call_id"),
            [
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in m.get("tool_calls") or ()
            ],
        )
        for m in messages
    ]


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_experts_episodes_play_and_score_as_in_stategym(domain: str) -> None:
    seeds = (0, 3)
    episodes = expert_episodes(domain, seeds)
    model = ScriptedModel({request_text(domain, s): expert_script(t) for s, t in episodes.items()})
    env = load_environment(domain, seeds=seeds)
    outputs = evaluate(env, model, len(seeds))
    assert len(outputs) == len(seeds)
    for output, (seed, expert) in zip(outputs, episodes.items(), strict=True):
        played = loads(output[TRAJECTORY_KEY])
        card = score(expert)
        # verifiers played the expert's episode, round for round, to its end
        assert (played.seed, played.rounds) == (seed, expert.rounds)
        assert played.terminated and not played.truncated
        assert output["stop_condition"] == "has_final_env_response" and output["error"] is None
        # the rubric's reward is stategym's R of that episode; the metrics are its Q_d
        assert output["reward"] == output["composite"] == card.composite == 1.0
        for dimension in DIMENSIONS:
            assert output[str(dimension)] == card.quality(dimension)
        assert score(played).composite == output["reward"]  # the returned log re-scores
    # the model was offered the domain's tools and saw stategym's own transcript
    tools = [t["function"] for t in model.requests[-1]["tools"]]
    assert tools == [s["function"] for s in offered_tools(get_domain(domain), Knobs())]
    asked = model.last_request(request_text(domain, 3))
    renderer = make_renderer(get_domain(domain), Knobs())
    rebuilt = transcript(renderer, episodes[3], cached_task(domain, 3, Knobs()))
    assert asked[0] == renderer.first_messages(cached_task(domain, 3, Knobs()))[0]
    assert seen(asked[1:]) == seen(rebuilt[: len(asked) - 1])


def test_a_message_with_several_calls_is_one_round() -> None:
    (expert,) = expert_episodes("travel", (3,)).values()
    model = ScriptedModel({request_text("travel", 3): expert_script(expert)})
    (output,) = evaluate(load_environment("travel", seeds=[3]), model, 1)
    played = loads(output[TRAJECTORY_KEY])
    sizes = [len(r.calls) for r in played.rounds if r.kind is RoundKind.CALLS]
    assert max(sizes) == 3  # the expert's parallel rounds stayed rounds
    completion = output["completion"]
    parallel = [i for i, m in enumerate(completion) if len(m.get("tool_calls") or ()) == 3]
    assert parallel
    # each call of that message got its own tool message, under its own id, before any turn
    first = parallel[0]
    # verifiers' outputs carry each tool call as JSON text ({"id", "name", "arguments"})
    ids = [json.loads(c)["id"] for c in completion[first]["tool_calls"]]
    answers = completion[first + 1 : first + 4]
    assert [(m["role"], m["tool_call_id"]) for m in answers] == [("tool", i) for i in ids]


def test_bad_calls_and_plain_text_reach_stategym_and_an_early_stop_is_truncated() -> None:
    request = request_text("travel", 3)
    say = "What is the most you want to pay for the flight?"
    script = [
        _calls(("get_profile", "{not json"), ("get_travel_policy", "{}")),
        _calls(("book_everything", "{}")),
        {"role": "assistant", "content": say},
        {"role": "assistant", "content": ""},  # verifiers refuses an empty reply itself
    ]
    model = ScriptedModel({request: script})
    (output,) = evaluate(load_environment("travel", seeds=[3]), model, 1)
    played = loads(output[TRAJECTORY_KEY])
    bad_json, unknown, asked = played.rounds
    # a batch with one malformed call runs none of them, and logs the format error
    assert bad_json.format_errors == ("malformed_json",)
    assert [c.error_kind for c in bad_json.calls] == ["malformed_json", "not_run"]
    assert unknown.format_errors == ("unknown_tool",)
    # plain text was a message to the simulated user, whose reply came back as a user turn
    assert asked.kind is RoundKind.SAY and asked.say == say
    assert asked.user is not None and asked.user.reply
    conversation = model.last_request(request)
    assert conversation[-1] == {"role": "user", "content": asked.user.reply}
    tool_errors = [m for m in conversation if m["role"] == "tool"]
    assert len(tool_errors) == 3 and all('{"error":' in m["content"] for m in tool_errors)
    # the empty reply stopped verifiers' rollout: the episode is scored as truncated
    assert output["stop_condition"] == "has_error"
    assert played.truncated and played.meta["stop_reason"] == "has_error"
    assert output["reward"] == score(played).composite < 1.0


@pytest.mark.parametrize("turns", [2, 4])
def test_verifiers_max_turns_ends_the_rollout_and_its_last_reply_is_still_played(
    turns: int,
) -> None:
    (expert,) = expert_episodes("travel", (3,)).values()
    assert len(expert.rounds) == 4  # the 4th reply is the expert's finish
    model = ScriptedModel({request_text("travel", 3): expert_script(expert)})
    env = load_environment("travel", seeds=[3], max_turns=turns)
    (output,) = evaluate(env, model, 1)
    played = loads(output[TRAJECTORY_KEY])
    assert output["stop_condition"] == "max_turns_reached"
    assert len(model.requests) == turns  # verifiers never answered the last reply itself
    assert played.rounds == expert.rounds[:turns]  # but stategym played it
    assert played.terminated == (turns == 4) and played.truncated == (turns < 4)
    assert played.meta.get("stop_reason") == (None if turns == 4 else "max_turns_reached")
    assert output["reward"] == score(played).composite
    assert (output["reward"] == 1.0) == (turns == 4)


def _calls(*calls: tuple[str, str]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"x{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ],
    }


def test_verifiers_loads_the_environment_by_its_id(monkeypatch: pytest.MonkeyPatch) -> None:
    # what `vf-install stategym-env` installs, found on the path instead of installed
    monkeypatch.syspath_prepend(str(ENVIRONMENTS / "stategym_env"))
    env = vf.load_environment("stategym-env", domain="bank", seeds=[1, 2], knobs="dynamics=off")
    assert isinstance(env, DomainEnv) and env.env_id == "stategym-env"
    assert env.knobs == Knobs(dynamics=False)
    assert [r["info"]["seed"] for r in env.get_dataset()] == [1, 2]


def test_a_row_keeps_its_seed_across_verifiers_env_server_boundary() -> None:
    # vf-eval plays rollouts in an env server: each row crosses a process boundary as
    # verifiers' RunGroupRequest, packed with msgpack, which keeps only RolloutInput's keys
    msgpack = pytest.importorskip("msgpack", reason="msgpack comes with verifiers")
    from verifiers.legacy.serve.types import RunGroupRequest
    from verifiers.legacy.utils.serve_utils import msgpack_encoder

    rows = load_environment("shop", seeds=[5, 7]).get_dataset().to_list()
    request = RunGroupRequest(
        group_inputs=rows,
        client_config=vf.ClientConfig(),
        model="scripted",
        sampling_args={},
        max_retries=0,
        state_columns=None,
    )
    packed = msgpack.packb(
        request.model_dump(mode="python", warnings=False), default=msgpack_encoder
    )
    crossed = RunGroupRequest.model_validate(msgpack.unpackb(packed, raw=False)).group_inputs
    assert [r["info"]["seed"] for r in crossed] == [5, 7]
    assert [r["prompt"] for r in crossed] == [r["prompt"] for r in rows]


@pytest.mark.slow  # ~30 CPU-s, 28-69 s wall: the env server spawns interpreters importing verifiers
def test_the_env_server_vf_eval_runs_plays_the_expert(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ENVIRONMENTS / "stategym_env"))  # the spawned server's too
    monkeypatch.setenv("STATEGYM_TEST_KEY", "none")
    seeds = (1, 2)
    episodes = expert_episodes("bank", seeds)
    model = ScriptedModel({request_text("bank", s): expert_script(t) for s, t in episodes.items()})
    env = vf.load_environment("stategym-env", domain="bank", seeds=list(seeds))

    async def evaluate_on_the_server(base_url: str) -> Any:
        await env.start_server()
        try:
            config = vf.ClientConfig(api_base_url=base_url, api_key_var="STATEGYM_TEST_KEY")
            return await env.evaluate(
                client=config, model="scripted", num_examples=2, state_columns=[TRAJECTORY_KEY]
            )
        finally:
            await env.stop_server()

    with model.serving() as base_url:
        outputs = asyncio.run(evaluate_on_the_server(base_url))["outputs"]
    assert len(outputs) == len(seeds)
    for output in outputs:
        played = loads(output[TRAJECTORY_KEY])
        assert played.rounds == episodes[played.seed].rounds
        assert output["reward"] == score(played).composite == 1.0


def test_a_message_the_core_cannot_read_is_logged_as_the_core_logs_it() -> None:
    """65 tool calls: verifiers logged an ``empty_action`` (its raw message lost) and sent that
    text back 65 times, where the core says ``too_large`` and keeps the message."""
    request = request_text("travel", 3)
    too_many = _calls(*[("get_profile", "{}")] * 65)
    finish = _calls(("finish", '{"answer": "done"}'))
    model = ScriptedModel({request: [too_many, finish]})
    (output,) = evaluate(load_environment("travel", seeds=[3]), model, 1)
    played = loads(output[TRAJECTORY_KEY]).rounds[0]
    core = Env("travel")
    core.reset(seed=3)
    core.step_message(too_many)
    logged = core.rounds[-1]
    assert (played.kind, played.format_errors) == (RoundKind.INVALID, ("too_large",))
    assert (played.error, played.raw) == (logged.error, logged.raw) and played.raw is not None
    answers = [m for m in model.last_request(request) if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == [f"x{i}" for i in range(65)]
    assert {m["content"] for m in answers} == {
        json.dumps({"error": logged.error}, separators=(",", ":"))
    }


@pytest.mark.parametrize("seed", [True, 3.9, -0.5, "3", " 7 "], ids=repr)
def test_a_row_seed_goes_to_the_cores_own_check(seed: Any) -> None:
    """``int(seed)`` made ``True`` task 1 and ``3.9`` task 3; the core refuses both."""
    with pytest.raises((TypeError, ValueError)) as refused:
        Env("travel").reset(seed=seed)
    env = _one_row_env({"seed": seed})
    with pytest.raises(type(refused.value), match=re.escape(str(refused.value))):
        evaluate(env, ScriptedModel({request_text("travel", 3): []}), 1)


@pytest.mark.parametrize("info", [{}, {"seed": None}], ids=["no-seed", "seed-null"])
def test_a_row_without_a_seed_is_a_clear_error(info: dict[str, Any]) -> None:
    """It was ``TypeError: int() argument must be ... not 'NoneType'``."""
    env = _one_row_env(info)
    with pytest.raises(ValueError, match=r"no task seed in info\.seed.*task_rows"):
        evaluate(env, ScriptedModel({request_text("travel", 3): []}), 1)


def _one_row_env(info: dict[str, Any]) -> DomainEnv:
    """The environment over one travel row (task 3's prompt) whose ``info`` is ``info``."""
    from datasets import Dataset

    (row,) = task_rows("travel", [3], Knobs())
    return DomainEnv("travel", Knobs(), dataset=lambda: Dataset.from_list([{**row, "info": info}]))


def test_a_call_after_the_episode_ended_is_told_so() -> None:
    """verifiers' own loop stops at the final response; a caller that goes on got
    ``{"error": null}`` for each call, as if it had run."""
    from stategym.adapters.verifiers import EPISODE_KEY
    from stategym.kernel.env import EPISODE_OVER

    env = load_environment("travel", seeds=[1])

    def call(name: str, arguments: str, id: str) -> Any:
        return vf.ToolCall(id=id, name=name, arguments=arguments)

    async def play() -> list[Any]:
        state = await env.setup_state({"info": {"seed": 1}, "model": "m", "trajectory": []})
        finish = vf.AssistantMessage(content=None, tool_calls=[call("finish", "{}", "f")])
        await env.env_response([finish], state)
        assert state[EPISODE_KEY].env.done and "final_env_response" in state
        rounds = len(state[EPISODE_KEY].env.rounds)
        late = [call("get_profile", "{}", "a"), call("get_profile", "{}", "b")]
        answer = await env.env_response([vf.AssistantMessage(content=None, tool_calls=late)], state)
        assert len(state[EPISODE_KEY].env.rounds) == rounds  # nothing was played
        return list(answer)

    answer = asyncio.run(play())
    told = json.dumps({"error": EPISODE_OVER}, separators=(",", ":"))
    assert [(m.tool_call_id, m.content) for m in answer if m.role == "tool"] == [
        ("a", told),
        ("b", told),
    ]
