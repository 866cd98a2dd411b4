"""The OpenAI-message rendering: JSON tool calls, tool-role results, the versioned prompt.

What OpenAI-compatible endpoints (and chat templates in the Hermes/Qwen style) take: tools as
function schemas, an assistant message with ``tool_calls`` for a tool round and ``content``
for a message to the user, one ``role: tool`` message per result. The tools and the prompt's
ending rule come from the domain and the task's knobs through
:meth:`~stategym.kernel.domain.Domain.judges_answer`, the rule the environment enforces: an episode
judged on its answer (stateless knobs, or a read-only domain such as ``lookup``) requires
``finish(answer)`` and gets the look-up wording.

The prompt is versioned (:data:`PROMPT_VERSION`, stamped on every trajectory an LLM agent
writes) so scores from different prompt revisions are never silently mixed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from stategym.kernel.domain import Domain
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import (
    Action,
    CallBatch,
    Observation,
    action_from_message,
    action_to_message,
)
from stategym.kernel.task import Task
from stategym.kernel.tools import finish_tool_schema
from stategym.kernel.trajectory import Trajectory
from stategym.rendering.base import Message, Renderer, transcript

PROMPT_VERSION = 2
"""Bump on any change to the wording below, to transcripts or to tool rendering.

2: the ending rule (and ``finish``'s schema) follows ``Domain.judges_answer``, so ``lookup``
with stateful knobs is told that ``finish(answer)`` is required."""

PROTOCOL = """\
How to work:
- Each reply is one round: either call tools, or write one message to the user.
- Tool calls in the same reply run together, in parallel: none of them sees another's result. \
Put calls in one reply only when none needs a value another one returns.
- A reply without tool calls is sent to the user. Ask the user only for what only they know; \
look up whatever a tool can tell you.
- The clock advances every round. Prices and availability may change and holds may expire."""

STATEFUL = """\
- Some tools change the world, and some changes cannot be undone (a payment). Observe what a \
decision depends on first, get the user's agreement, then commit once.
- Call finish when the request is done, or when it cannot be done."""

ANSWERED = """\
- Only look-up tools are available: nothing can be booked or changed.
- End with finish(answer=...) naming the id of the option you recommend, or 'none' if no \
option fits."""

EXAMPLES_HEADER = (
    "Here are complete example episodes on other tasks. They show the protocol; the facts in "
    "them do not apply to your task."
)


def offered_tools(domain: Domain, knobs: Knobs) -> list[dict[str, Any]]:
    """The tools an episode offers, ``finish`` last, as the environment offers them."""
    schemas = [t.schema for t in domain.available_tools(knobs)]
    return [*schemas, finish_tool_schema(not domain.judges_answer(knobs))]


class MessageRenderer:
    """OpenAI chat messages for one episode of ``domain`` with ``knobs``.

    Example:
        >>> from stategym.registry import get_domain
        >>> lookup = MessageRenderer(get_domain("lookup"), Knobs())
        >>> lookup.tools[-1]["function"]["parameters"]["required"]
        ['answer']
    """

    kind = "messages"

    def __init__(self, domain: Domain, knobs: Knobs) -> None:
        self.domain = domain
        self.knobs = knobs
        self._tools = offered_tools(domain, knobs)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def system_prompt(self, demonstrations: str = "") -> str:
        ending = ANSWERED if self.domain.judges_answer(self.knobs) else STATEFUL
        parts = [self.domain.instructions, PROTOCOL + "\n" + ending]
        if demonstrations:
            parts.append(demonstrations)
        return "\n\n".join(parts)

    def first_messages(self, task: Task, demonstrations: str = "") -> list[Message]:
        return [
            {"role": "system", "content": self.system_prompt(demonstrations)},
            {"role": "user", "content": task.request.text},
        ]

    def observation_messages(self, observation: Observation) -> list[Message]:
        # The kernel's message form of an observation is this rendering's (DESIGN §3).
        return [dict(m) for m in observation.to_messages()]

    def action_message(self, action: Action, index: int) -> Message:
        if isinstance(action, CallBatch) and not action.calls:
            return {"role": "assistant", "content": ""}
        message = action_to_message(action)
        for position, call in enumerate(message.get("tool_calls") or ()):
            # The environment's id for a call that came without one (``c<round>_<i>``).
            call["id"] = call["id"] or f"c{index}_{position}"
        return message

    def parse(self, reply: Message | str) -> Action:
        if isinstance(reply, str):
            reply = {"role": "assistant", "content": reply}
        try:
            return action_from_message(reply)
        except AgentFormatError:
            return CallBatch(())


def render_demonstrations(episodes: Sequence[tuple[Renderer, Trajectory, Task]]) -> str:
    """k finished episodes as a text block for the system prompt.

    Each transcript is written one message per line, ``ROLE: text``, with tool calls in the
    ``<tool_call>{json}</tool_call>`` form local models emit. Text, rather than extra chat
    turns, so any endpoint accepts it and the real conversation stays one episode.

    Args:
        episodes: ``(fresh renderer, trajectory, task)`` per episode (usually the expert's;
            each renderer made for its own episode's domain and knobs).
    """
    blocks = [EXAMPLES_HEADER] if episodes else []
    for number, (renderer, trajectory, task) in enumerate(episodes, start=1):
        lines = [f"### Example {number}"]
        lines.extend(message_line(m) for m in transcript(renderer, trajectory, task))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def message_line(message: Mapping[str, Any]) -> str:
    """One message as ``ROLE: text``, tool calls as Hermes ``<tool_call>`` JSON."""
    role = str(message["role"]).upper()
    if message.get("tool_calls"):
        calls = "".join(
            f'<tool_call>{{"name": {orjson.dumps(c["function"]["name"]).decode()}, '
            f'"arguments": {c["function"]["arguments"]}}}</tool_call>'
            for c in message["tool_calls"]
        )
        return f"{role}: {calls}"
    return f"{role}: {message.get('content') or ''}"
