"""What a live LLM agent saw equals ``transcript()`` of its logged trajectory, bad rounds too.

An LLM agent (:class:`~stategym.llm.agent.ChatAgent`) plays every domain, synthetic included,
in both renderings; its backend replays the expert's decisions with deliberately bad replies
mixed in (malformed JSON, an unknown tool, an empty message, a missing argument, narration
beside a call, a call with no id). The conversation the agent kept is then compared with the
one rebuilt from the log alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pytest

from first_reply import play_first_reply, rebuilt_conversation, tool_call_message
from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.protocol import CUT, MAX_ID, RAW_LIMIT, Action
from stategym.kernel.trajectory import RoundKind
from stategym.llm.agent import ChatAgent, Reply, Turn
from stategym.registry import all_domains, get_domain
from stategym.rendering import CompactRenderer, make_renderer, transcript
from strategies import nested

DOMAINS = [*sorted(all_domains()), "synth:chain2+fanout3"]
BAD_MESSAGES = [
    {"role": "assistant", "content": ""},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "x1", "type": "function", "function": {"name": "no_such_tool"}}],
    },
    {
        "role": "assistant",
        "content": "let me look",  # narration beside a call: not delivered to anyone
        "tool_calls": [{"id": "", "type": "function", "function": {"name": "finish"}}],
    },
]
BAD_TEXTS = ["", "   \n", 'get_profile "unclosed', "finish a b c d"]


class Puppet:
    """A backend that sends what the test's ``next`` makes, once the agent has observed
    (a compact reply is written with the handles the observation introduced)."""

    def __init__(self) -> None:
        self.next: Callable[[], dict[str, Any]] = dict

    def describe(self) -> dict[str, Any]:
        return {"backend": "puppet", "model": "puppet"}

    def complete_sync(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        return Reply(
            self.next(), {"usage": {"prompt_tokens": len(messages), "completion_tokens": 1}}
        )

    async def complete(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        return self.complete_sync(messages, tools, turn)


def _bad(rendering: str, env: Env, number: int) -> dict[str, Any]:
    """The ``number``-th bad reply of a kind the rendering can carry."""
    first = env.tool_schemas[0]["function"]["name"]
    if rendering == "compact":
        texts = [*BAD_TEXTS, f"{first} x=1 x=2"]
        return {"role": "assistant", "content": texts[number % len(texts)]}
    malformed = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "", "type": "function", "function": {"name": first, "arguments": "{not"}}
        ],
    }
    messages = [*BAD_MESSAGES, malformed]
    return messages[number % len(messages)]


def _good(agent: ChatAgent, action: Action, index: int) -> dict[str, Any]:
    renderer = agent.renderer
    if isinstance(renderer, CompactRenderer):
        return {"role": "assistant", "content": renderer.render(action)}
    message = renderer.action_message(action, index)
    for call in message.get("tool_calls") or ():
        call["id"] = ""  # the environment names calls that come without an id
    return message


def _play(name: str, seed: int, rendering: str) -> tuple[ChatAgent, Env, list[dict[str, Any]]]:
    """Play one episode; returns the agent, the environment and the live conversation (the
    agent's, then the final observation, which the episode's end kept from it)."""
    env = Env(name)
    observation, _ = env.reset(seed=seed)
    backend = Puppet()
    agent = ChatAgent("puppet", backend, env.domain, env.task, rendering=rendering)
    expert = scripted(env.domain, "expert")(env.task)
    bad_rounds = {0, 2, 3, 6}
    expert_observation = observation
    number = seed
    while not env.done:
        index = len(env.rounds)
        if index in bad_rounds:
            backend.next = functools.partial(dict, _bad(rendering, env, number))
            number += 1
        else:
            action = expert.act(expert_observation)
            backend.next = functools.partial(_good, agent, action, index)
        observation = env.step(agent.act(observation)).observation
        if index not in bad_rounds:
            expert_observation = observation
    return agent, env, agent.messages + agent.renderer.observation_messages(observation)


@pytest.mark.parametrize("rendering", ["messages", "compact"])
@pytest.mark.parametrize("name", DOMAINS)
def test_live_messages_equal_the_transcript(name: str, rendering: str) -> None:
    invalid = errors = 0
    for seed in range(4):
        agent, env, live = _play(name, seed, rendering)
        trajectory = agent.annotate(env.trajectory)
        fresh = make_renderer(get_domain(name), env.task.knobs, rendering)
        assert live[0] == fresh.first_messages(env.task)[0]
        assert live[1:] == transcript(fresh, trajectory, env.task)
        invalid += sum(r.kind is RoundKind.INVALID for r in trajectory.rounds)
        errors += sum(len(r.format_errors) for r in trajectory.rounds)
        assert all(r.model is not None for r in trajectory.rounds)
    assert invalid > 0  # the error text of invalid rounds was rebuilt too
    assert errors > invalid  # and calls rejected as format errors


def test_a_user_who_gives_up_is_rebuilt_with_the_goodbye() -> None:
    env = Env("travel")
    observation, _ = env.reset(seed=1)
    backend = Puppet()
    agent = ChatAgent("puppet", backend, env.domain, env.task)
    backend.next = lambda: {"role": "assistant", "content": "zzz"}
    while not env.done:
        observation = env.step(agent.act(observation)).observation
    live = agent.messages + agent.renderer.observation_messages(observation)
    assert env.trajectory.terminated and live[-1]["content"].endswith("Goodbye.")
    fresh = make_renderer(env.domain, env.task.knobs)
    assert live[1:] == transcript(fresh, env.trajectory, env.task)


LONE = "\ud800"
"""A lone surrogate: text UTF-8 cannot carry, which the log keeps as U+FFFD."""
NOT_UTF8 = {
    "content": ({"role": "assistant", "content": f"What is your budget{LONE}?"}, "messages"),
    "content_parts": (
        {"role": "assistant", "content": [{"type": "text", "text": f"Budget{LONE}?"}]},
        "messages",
    ),
    "call_id": (tool_call_message(f"c{LONE}", "get_profile", "{}"), "messages"),
    "call_name": (tool_call_message("c1", f"get_profile{LONE}", "{}"), "messages"),
    "arguments_object": (tool_call_message("c1", "search_flights", {"day": LONE}), "messages"),
    "surrogate_pair": ({"role": "assistant", "content": "Budget \ud83d\ude00?"}, "messages"),
    "deep_extra_key": (
        {"role": "assistant", "content": f"Budget{LONE}?", "extra": nested(100_000, LONE)},
        "messages",
    ),
    "compact_message": ({"role": "assistant", "content": f"\\ Budget{LONE}?"}, "compact"),
    "compact_call": ({"role": "assistant", "content": f"get_profile{LONE}"}, "compact"),
    "compact_argument": ({"role": "assistant", "content": f"search_flights day={LONE}"}, "compact"),
}
"""Replies a Python backend may return (the ``openai:`` backend cleans its own text)."""


@pytest.mark.parametrize("case", sorted(NOT_UTF8))
def test_a_reply_s_text_is_in_the_conversation_as_the_log_keeps_it(case: str) -> None:
    """Regression (stop 58): a Python backend's reply holding text UTF-8 cannot carry (a lone
    surrogate, or a pair as two code points) stayed so in the live conversation, while the
    log keeps U+FFFD (or the character the pair encodes): the conversation was not its
    transcript, and no JSON writer took it."""
    message, rendering = NOT_UTF8[case]
    trajectory, _, agent, env = play_first_reply(message, rendering)
    assert agent.messages[1:] == rebuilt_conversation(trajectory, env, rendering)
    assert orjson.loads(orjson.dumps(agent.messages)) == agent.messages


GET = "get_profile"
CALLS = {
    "id_too_long": ("i" * (MAX_ID + 1), GET, "c0_0", GET),
    "id_too_long_not_ascii": ("é" * (MAX_ID + 1), GET, "c0_0", GET),
    "id_at_the_cap": ("i" * MAX_ID, GET, "i" * MAX_ID, GET),
    "id_at_the_cap_as_logged": (
        "i" * (MAX_ID - 1) + "\ud83d\ude00",
        GET,
        "i" * (MAX_ID - 1) + "😀",
        GET,
    ),
    "name_too_long": ("c1", "x" * (RAW_LIMIT + 1), "c1", "x" * RAW_LIMIT + CUT),
    "name_at_the_cap": ("c1", "x" * RAW_LIMIT, "c1", "x" * RAW_LIMIT),
}
"""A call's id and name as the model sent them, and as the log keeps them (a surrogate pair,
two code points, is one character there)."""


@pytest.mark.parametrize("case", sorted(CALLS))
def test_a_call_is_named_in_the_conversation_as_the_log_names_it(case: str) -> None:
    """Regression (stop 59): an id over MAX_ID characters stayed in the live conversation
    while the environment logs and answers the call as ``c0_0``: the tool result answered no
    call of the message before it (an OpenAI endpoint refuses such a conversation), and the
    conversation was not its transcript. A tool name over RAW_LIMIT characters stayed whole
    there, and is cut in the log."""
    sent_id, sent_name, logged_id, logged_name = CALLS[case]
    trajectory, _, agent, env = play_first_reply(tool_call_message(sent_id, sent_name))
    assert agent.messages[1:] == rebuilt_conversation(trajectory, env)
    reply, result = agent.messages[2], agent.messages[3]
    names = [(call["id"], call["function"]["name"]) for call in reply["tool_calls"]]
    assert names == [(logged_id, logged_name)]
    assert result["role"] == "tool" and result["tool_call_id"] == logged_id
    logged = trajectory.rounds[0].calls[0]
    assert (logged.id, logged.name) == (logged_id, logged_name)


def test_a_compact_call_is_named_in_the_conversation_as_the_log_names_it() -> None:
    """Regression (stop 59): a compact reply's later lines may name no tool; a name over
    RAW_LIMIT characters stayed whole in the conversation, and is cut in the log."""
    reply = {"role": "assistant", "content": "get_profile\n" + "x" * (RAW_LIMIT + 1)}
    trajectory, _, agent, env = play_first_reply(reply, "compact")
    assert agent.messages[1:] == rebuilt_conversation(trajectory, env, "compact")
    cut = "x" * RAW_LIMIT + CUT
    assert agent.messages[2]["content"] == f"get_profile\n{cut}"
    assert [call.name for call in trajectory.rounds[0].calls] == ["get_profile", cut]
