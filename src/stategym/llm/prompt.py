"""The system prompt, tool rendering and in-context demonstrations for LLM agents.

The prompt is versioned (:data:`PROMPT_VERSION`, stamped on every trajectory an LLM agent
writes) so scores from different prompt revisions are never silently mixed. Tools are sent to
OpenAI-compatible endpoints as function schemas (the environment's ``tool_schemas``); for a
local model they go through its chat template. :func:`render_tools` is the plain-text form for
templates without tool support.

A chat transcript of a finished episode is rebuilt from its trajectory alone
(:func:`transcript`): the same messages the agent saw and sent, so expert trajectories become
k-shot demonstrations (:func:`render_demonstrations`) or supervised training data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from stategym.domain import Domain
from stategym.knobs import Knobs
from stategym.protocol import ToolResult, action_to_message
from stategym.task import Task
from stategym.trajectory import RoundKind, RoundRecord, Trajectory

PROMPT_VERSION = 1
"""Bump on any change to the wording below, to :func:`transcript` or to tool rendering."""

Message = dict[str, Any]
"""One OpenAI-style chat message."""

_PROTOCOL = """\
How to work:
- Each reply is one round: either call tools, or write one message to the user.
- Tool calls in the same reply run together, in parallel: none of them sees another's result. \
Put calls in one reply only when none needs a value another one returns.
- A reply without tool calls is sent to the user. Ask the user only for what only they know; \
look up whatever a tool can tell you.
- The clock advances every round. Prices and availability may change and holds may expire."""

_STATEFUL = """\
- Some tools change the world, and some changes cannot be undone (a payment). Observe what a \
decision depends on first, get the user's agreement, then commit once.
- Call finish when the request is done, or when it cannot be done."""

_STATELESS = """\
- Only look-up tools are available: nothing can be booked or changed.
- End with finish(answer=...) naming the id of the option you recommend, or 'none' if no \
option fits."""

_EXAMPLES_HEADER = (
    "Here are complete example episodes on other tasks. They show the protocol; the facts in "
    "them do not apply to your task."
)
_ENVIRONMENT_ERROR = "empty action: send tool calls or a message to the user"


def system_prompt(domain: Domain, knobs: Knobs, demonstrations: str = "") -> str:
    """The system message for one episode.

    Args:
        domain: the domain (its ``instructions`` open the prompt).
        knobs: the task's knobs (statefulness changes how an episode ends).
        demonstrations: a block from :func:`render_demonstrations`, appended if not empty.
    """
    parts = [domain.instructions, _PROTOCOL + "\n" + (_STATEFUL if knobs.stateful else _STATELESS)]
    if demonstrations:
        parts.append(demonstrations)
    return "\n\n".join(parts)


def first_messages(domain: Domain, task: Task, demonstrations: str = "") -> list[Message]:
    """The conversation an agent starts from: the system prompt and the user's request."""
    return [
        {"role": "system", "content": system_prompt(domain, task.knobs, demonstrations)},
        {"role": "user", "content": task.request.text},
    ]


def render_tools(schemas: Sequence[dict[str, Any]]) -> str:
    """Tools as one line each, ``name(arg: type, ...): description``, for plain-text prompts."""
    lines = []
    for schema in schemas:
        function = schema["function"]
        properties = function["parameters"]["properties"]
        required = set(function["parameters"].get("required", ()))
        args = ", ".join(
            f"{name}: {body.get('type', 'any')}{'' if name in required else '?'}"
            for name, body in properties.items()
        )
        lines.append(f"{function['name']}({args}): {function['description']}")
    return "\n".join(lines)


def transcript(trajectory: Trajectory, task: Task) -> list[Message]:
    """The chat an episode was, rebuilt from its log: request, then each round's assistant
    message and the messages it got back (tool results, then the user's words).

    The system message is not included (see :func:`first_messages`).
    """
    messages: list[Message] = [{"role": "user", "content": task.request.text}]
    for record in trajectory.rounds:
        messages.append(_assistant(record))
        messages.extend(
            _replies(record, last=record.index == len(trajectory.rounds) - 1, trajectory=trajectory)
        )
    return messages


def _assistant(record: RoundRecord) -> Message:
    if record.kind is RoundKind.INVALID:
        return {"role": "assistant", "content": ""}
    return action_to_message(record.action())


def _replies(record: RoundRecord, *, last: bool, trajectory: Trajectory) -> list[Message]:
    results = tuple(
        ToolResult(c.id, c.name, c.content, c.error, c.error_kind) for c in record.calls
    )
    messages: list[Message] = [dict(result.to_message()) for result in results]
    if record.kind is RoundKind.INVALID:
        messages.append({"role": "user", "content": f"[environment] {_ENVIRONMENT_ERROR}"})
    words = [record.user.reply] if record.user is not None else []
    if record.notice is not None:
        words.append(record.notice)
    if last and record.kind is RoundKind.SAY and trajectory.terminated:
        words.append("I'll handle this myself. Goodbye.")
    if words:
        messages.append({"role": "user", "content": " ".join(words)})
    return messages


def render_demonstrations(trajectories: Sequence[Trajectory], tasks: Sequence[Task]) -> str:
    """k expert episodes as a text block for the system prompt.

    Each transcript is written one message per line, ``ROLE: text``, with tool calls in the
    same ``<tool_call>{json}</tool_call>`` form local models emit. Text, rather than extra
    chat turns, so any endpoint accepts it and the real conversation stays one episode.

    Args:
        trajectories: finished episodes (usually the expert's).
        tasks: the task of each trajectory, in the same order.
    """
    if len(trajectories) != len(tasks):
        raise ValueError("render_demonstrations needs one task per trajectory")
    blocks = [_EXAMPLES_HEADER] if trajectories else []
    for number, (trajectory, task) in enumerate(zip(trajectories, tasks, strict=True), start=1):
        lines = [f"### Example {number}"]
        lines.extend(_line(message) for message in transcript(trajectory, task))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _line(message: Message) -> str:
    role = message["role"].upper()
    if message.get("tool_calls"):
        calls = "".join(
            f'<tool_call>{{"name": {orjson.dumps(c["function"]["name"]).decode()}, '
            f'"arguments": {c["function"]["arguments"]}}}</tool_call>'
            for c in message["tool_calls"]
        )
        return f"{role}: {calls}"
    return f"{role}: {message.get('content') or ''}"
