"""An LLM agent whose backend sends one given reply, then ``finish``: for tests of how one
reply is logged, explained to the model and kept in the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stategym.kernel.env import Env
from stategym.kernel.trajectory import Trajectory
from stategym.llm.agent import ChatAgent, Reply, Turn
from stategym.rendering import Message, make_renderer, transcript


def tool_call_message(call_id: Any, name: Any, arguments: Any = "{}") -> dict[str, Any]:
    """An assistant message with one tool call."""
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


FINISH = tool_call_message("f", "finish")
COMPACT_FINISH = {"role": "assistant", "content": "finish"}


class Script:
    """A backend that sends one message, then ``finish``."""

    def __init__(self, first: dict[str, Any], finish: dict[str, Any] = FINISH) -> None:
        self.replies = [first, finish]
        self.seen: list[list[dict[str, Any]]] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "script", "model": "script"}

    def complete_sync(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        self.seen.append([dict(m) for m in messages])
        return Reply(self.replies[min(turn.index, 1)], {})

    async def complete(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        return self.complete_sync(messages, tools, turn)


def play_first_reply(
    message: dict[str, Any], rendering: str = "messages"
) -> tuple[Trajectory, Script, ChatAgent, Env]:
    """An LLM agent whose first reply is ``message`` plays travel's seed 0."""
    env = Env("travel")
    observation, _ = env.reset(seed=0)
    backend = Script(message, COMPACT_FINISH if rendering == "compact" else FINISH)
    agent = ChatAgent("script", backend, env.domain, env.task, rendering=rendering)
    while not env.done:
        observation = env.step(agent.act(observation)).observation
    return agent.annotate(env.trajectory), backend, agent, env


def rebuilt_conversation(
    trajectory: Trajectory, env: Env, rendering: str = "messages"
) -> list[Message]:
    """What the agent's conversation after its system prompt must be: the transcript a fresh
    renderer rebuilds from the log, less the final observation (the episode's end kept it
    from the agent)."""
    fresh = make_renderer(env.domain, env.task.knobs, rendering)
    return transcript(fresh, trajectory, env.task)[:-1]
