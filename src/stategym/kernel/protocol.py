"""The agent-environment protocol as typed objects, and its OpenAI-style message form.

One *round* is one agent decision: either a batch of tool calls run together or one message
to the simulated user. The agent chooses every call of a batch before it sees any result, so
no call can use another's returned value; the environment then runs the calls in the order
given, each on the world the earlier ones left (two payments in one batch both happen, and a
payment naming a hold id guessed in the same batch can succeed: a guess the metrics count as
one, lucky or not). The built-in ``finish``
tool ends the episode. OpenAI-style assistant messages map onto the same objects:
several ``tool_calls`` in one message are one parallel round, plain ``content`` (with no tool
calls) goes to the user, and ``content`` beside tool calls is the agent's own narration and
is not delivered to anyone.

**The boundary rule** (:mod:`stategym.kernel.boundary`, whose names this module re-exports):
every value an agent sends, through any interface, is turned into JSON data by :func:`to_json`
before anything acts on it; what the rule cannot carry is a ``bad_value`` format error, what is
larger than the caps is ``too_large``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from stategym.kernel.boundary import (
    CUT,
    INT_RANGE,
    JSON,
    MAX_ARGUMENT_BYTES,
    MAX_CALLS,
    MAX_DEPTH,
    MAX_ID,
    MAX_MESSAGE,
    MAX_TEXT,
    RAW_LIMIT,
    clean_text,
    decode_json,
    describe,
    json_text,
    kept_text,
    read_json,
    to_json,
    too_many_calls,
    unreadable,
)
from stategym.kernel.errors import AgentFormatError

__all__ = [
    "CUT",
    "EMPTY_ACTION",
    "EMPTY_REASON",
    "EPISODE_OVER",
    "FINISH",
    "INT_RANGE",
    "JSON",
    "MAX_ARGUMENT_BYTES",
    "MAX_CALLS",
    "MAX_DEPTH",
    "MAX_ID",
    "MAX_MESSAGE",
    "MAX_TEXT",
    "OLD_EMPTY_ACTION",
    "RAW_LIMIT",
    "Action",
    "CallBatch",
    "Observation",
    "Say",
    "StepResult",
    "ToolCall",
    "ToolResult",
    "action_from_message",
    "action_to_message",
    "call",
    "calls",
    "clean_text",
    "decode_json",
    "describe",
    "json_text",
    "kept_text",
    "read_json",
    "to_json",
    "too_many_calls",
]

FINISH = "finish"
"""Name of the built-in tool that ends an episode."""
EMPTY_REASON = "send tool calls or a message to the user"
"""What an empty action (no calls, no text) is told to do instead."""
EMPTY_ACTION = f"empty_action: {EMPTY_REASON}"
"""What an empty action or message is told (``KIND: reason``, as every invalid round)."""
OLD_EMPTY_ACTION = "empty action: send tool calls or a message to the user"
"""What an empty typed action was told in logs written before stop 42 (``verify`` takes it)."""
EPISODE_OVER = "the episode is over"
"""What a step after the episode's end is told (no round is played)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call in a round.

    Attributes:
        name: the tool's name.
        arguments: decoded arguments, or the raw JSON text an LLM produced (decoded, and
            checked, by the environment so malformed JSON becomes a format error).
        id: the caller's id for the call; the environment assigns ``c<round>_<i>`` if empty.
    """

    name: str
    arguments: Mapping[str, JSON] | str = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, slots=True)
class CallBatch:
    """A round of tool calls chosen together; the environment runs them in order."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class Say:
    """A round spent sending one message to the simulated user."""

    text: str


Action = CallBatch | Say


def call(name: str, /, **arguments: JSON) -> ToolCall:
    """Shorthand for scripted agents: ``call("search_flights", origin="SFO", ...)``."""
    return ToolCall(name, arguments)


def calls(*items: ToolCall) -> CallBatch:
    """Shorthand for a parallel round."""
    return CallBatch(tuple(items))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one call returned.

    Attributes:
        call_id: the id of the call this answers.
        name: the tool that was called (as the agent spelled it).
        content: the tool's JSON result, or ``None`` on error.
        error: ``None`` on success; otherwise the message the agent sees.
        error_kind: ``"tool"`` for a :class:`~stategym.kernel.errors.ToolError`, or the
            :class:`~stategym.kernel.errors.AgentFormatError` kind for a format error.
    """

    call_id: str
    name: str
    content: JSON = None
    error: str | None = None
    error_kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_message(self) -> dict[str, str]:
        """The OpenAI ``role: tool`` message for this result."""
        body = self.content if self.error is None else {"error": self.error}
        return {
            "role": "tool",
            "tool_call_id": self.call_id,
            "content": orjson.dumps(body).decode(),
        }


@dataclass(frozen=True, slots=True)
class Observation:
    """What the agent sees after a round (or at reset).

    Attributes:
        round: index of the round just played (-1 at reset).
        clock: the environment's clock after the round.
        results: one result per call of a tool round, in call order.
        user: what the simulated user said (a reply, or an unprompted change of mind).
        error: a round-level format error (empty action, unreadable message), if any.
    """

    round: int
    clock: int
    results: tuple[ToolResult, ...] = ()
    user: str | None = None
    error: str | None = None

    def to_messages(self) -> list[dict[str, str]]:
        """The observation as OpenAI chat messages (tool results, then the user's words)."""
        messages: list[dict[str, str]] = [result.to_message() for result in self.results]
        if self.error is not None:
            messages.append({"role": "user", "content": f"[environment] {self.error}"})
        if self.user is not None:
            messages.append({"role": "user", "content": self.user})
        return messages


class StepResult(NamedTuple):
    """Gymnasium's five-tuple, named."""

    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


def action_from_message(message: Mapping[str, Any]) -> Action:
    """Turn an OpenAI-style assistant message into an action.

    Arguments of tool calls are kept as the raw JSON string (or the mapping) so the
    environment can report malformed JSON as a format error rather than this function
    raising; any other value becomes text that is not a JSON object (rejected likewise).

    Each value is read once, so a mapping cannot answer two reads differently; any exception
    the message's own code raises (a mapping's ``get``) is a ``bad_message`` error.

    Raises:
        AgentFormatError: the message has neither tool calls nor text, is not shaped like an
            assistant message, cannot be read, or has more than :data:`MAX_CALLS` tool calls.
    """
    try:
        return _action_from_message(message)
    except AgentFormatError:
        raise
    except Exception as error:  # the agent's own code raised: nothing else is caught here
        raise unreadable(error, "the message") from None


def _action_from_message(message: Mapping[str, Any]) -> Action:
    if not isinstance(message, Mapping):
        raise AgentFormatError("bad_message", "the action must be an assistant message object")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise AgentFormatError("bad_message", "tool_calls must be a list")
    if len(raw_calls) > MAX_CALLS:
        raise AgentFormatError("too_large", too_many_calls(len(raw_calls)))
    if raw_calls:
        parsed: list[ToolCall] = []
        for index, raw in enumerate(raw_calls):
            function = raw.get("function") if isinstance(raw, Mapping) else None
            name: Any = function.get("name") if isinstance(function, Mapping) else None
            if not issubclass(type(name), str):
                raise AgentFormatError(
                    "bad_message", f"tool_calls[{index}] needs a function with a name"
                )
            arguments = function.get("arguments", "{}")  # type: ignore[union-attr]
            if not isinstance(arguments, str | Mapping):
                arguments = json_text(arguments)
            call_id = raw.get("id")
            call_id = call_id if issubclass(type(call_id), str) else ""
            parsed.append(ToolCall(str.__str__(name), arguments, call_id))
        return CallBatch(tuple(parsed))
    text = _content_text(message.get("content"))
    if text.strip():
        return Say(text)
    raise AgentFormatError("empty_action", EMPTY_REASON)


def _content_text(content: Any) -> str:
    """A message's text: its ``content`` string, or the joined texts of OpenAI's content
    parts (``[{"type": "text", "text": "..."}]``); ``None`` is no text.

    Raises:
        AgentFormatError: ``bad_message``, content of another type, or a part that is not a
            text part.
    """
    if content is None:
        return ""
    if issubclass(type(content), str):
        return str.__str__(content)
    shape = 'a string or a list of text parts ({"type": "text", "text": ...})'
    if type(content) is not list:
        raise AgentFormatError(
            "bad_message", f"content must be {shape}; got {type(content).__name__}"
        )
    texts: list[str] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        text = part.get("text") if kind == "text" else None
        if not issubclass(type(text), str):
            raise AgentFormatError(
                "bad_message", f"content[{index}] is not a text part; content must be {shape}"
            )
        texts.append(str.__str__(text))
    return "".join(texts)


def action_to_message(action: Action) -> dict[str, Any]:
    """The OpenAI-style assistant message for an action (inverse of :func:`action_from_message`)."""
    if isinstance(action, Say):
        return {"role": "assistant", "content": action.text}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.arguments
                    if isinstance(c.arguments, str)
                    else json_text(c.arguments),
                },
            }
            for c in action.calls
        ],
    }
