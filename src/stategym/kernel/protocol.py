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

**The boundary rule.** Every value an agent sends, through any interface (typed objects,
message dicts, JSON text), is turned into JSON data by :func:`to_json` before anything acts
on it: what the rule cannot carry exactly (NaN, integers outside 64 bits, sets, non-string
keys...) is a ``bad_value`` format error, and what is larger than the caps
(:data:`MAX_CALLS`, :data:`MAX_ARGUMENT_BYTES`, :data:`MAX_DEPTH`, :data:`MAX_TEXT`,
:data:`MAX_MESSAGE`) is ``too_large``. So every logged value is JSON that reads back equal;
what was rejected is kept in the log as bounded text (:func:`kept_text`, :func:`describe`).
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from stategym.kernel.errors import AgentFormatError

FINISH = "finish"
"""Name of the built-in tool that ends an episode."""

JSON = Any
"""JSON data: dicts with str keys, lists, str, int, float, bool, None (see :func:`to_json`)."""

MAX_CALLS = 64
"""Calls in one round; a larger batch is a ``too_large`` invalid round."""
MAX_ARGUMENT_BYTES = 16_384
"""Bytes of one call's arguments as compact JSON (arguments sent as text: characters)."""
MAX_DEPTH = 32
"""Levels of nesting in any value an agent sends (each object or array is one level)."""
MAX_TEXT = 16_384
"""Characters of one message to the user."""
MAX_MESSAGE = 1 << 20
"""Characters of one assistant message sent as JSON text."""
MAX_ID = 256
"""Characters of a call id; a longer one is replaced like a missing one."""
INT_RANGE = (-(2**63), 2**63 - 1)
"""Integers an agent may send: the signed 64-bit range (wider ones are ``bad_value``)."""
RAW_LIMIT = 4096
"""Characters of an unusable value kept in the log (enough to see what went wrong)."""
CUT = "\u2026"
"""Appended to kept text that was cut; it also makes the text invalid JSON, so a cut
argument text can never replay as a readable one."""

_LONG_NUMBER = re.compile(r"\d{19}")
_SMALL = 1 << 62


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with integers too long for ``repr`` (over 4,300 digits) told by size."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 4096:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_REPR = _ShortRepr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 4, 200, 200, 200


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

    Raises:
        AgentFormatError: the message has neither tool calls nor text, is not shaped like an
            assistant message, or has more than :data:`MAX_CALLS` tool calls.
    """
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
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                raise AgentFormatError(
                    "bad_message", f"tool_calls[{index}] needs a function with a name"
                )
            arguments = function.get("arguments", "{}")
            if not isinstance(arguments, str | Mapping):
                arguments = json_text(arguments)
            call_id = raw.get("id") if isinstance(raw.get("id"), str) else ""
            parsed.append(ToolCall(function["name"], arguments, call_id))
        return CallBatch(tuple(parsed))
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        return Say(content)
    raise AgentFormatError("empty_action", "the message has neither tool calls nor text")


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


# -- the boundary rule ------------------------------------------------------------------------


def to_json(value: Any, limit: int = MAX_ARGUMENT_BYTES) -> JSON:
    """An agent's value as JSON data, by the boundary rule every interface applies.

    * ``str``, ``bool``, ``None``, finite floats and integers in :data:`INT_RANGE` are kept;
      a subclass of ``str``, ``int`` or ``float`` (an enum member) becomes the plain value.
    * A string's surrogate code points are decoded as UTF-16 would: a pair becomes the
      character it encodes, a lone one U+FFFD (UTF-8, hence JSON, cannot carry them).
    * Lists and tuples become lists; mappings become dicts, whose keys must be strings.
    * Anything else (sets, bytes, other objects), NaN, infinities, integers outside
      :data:`INT_RANGE` and non-string keys are ``bad_value`` format errors.
    * More than :data:`MAX_DEPTH` levels of nesting, or compact JSON longer than ``limit``
      bytes, is ``too_large``; a huge value is rejected without being walked whole.

    The result is a fresh copy, which orjson writes and reads back equal.

    Examples:
        >>> to_json({"ids": ("A1", "B2"), "day": 3})
        {'ids': ['A1', 'B2'], 'day': 3}
        >>> to_json({"day": 2**64})
        Traceback (most recent call last):
        ...
        stategym.kernel.errors.AgentFormatError: an integer of 65 bits is outside the signed 64-bit range

    Raises:
        AgentFormatError: ``bad_value`` or ``too_large``.
    """
    budget = [limit, limit]
    result = _container(value, 0, budget) if type(value) is dict else _normal(value, 0, budget)
    # ``budget`` now holds the limit minus a lower bound of the compact size; the size is at
    # most 25 times that bound (a number written as up to 25 bytes counts 1), so most values
    # need no encoding to be checked.
    if (limit - budget[0]) * 25 > limit and len(orjson.dumps(result)) > limit:
        raise AgentFormatError("too_large", f"more than {limit} bytes of JSON")
    return result


def read_json(text: str, what: str) -> Any:
    """Decode JSON text exactly; the values are not yet judged by :func:`to_json`.

    Text must be I-JSON (RFC 7493) as orjson reads it: a lone surrogate escape, a number
    beyond a double's range (an infinity, or an integer of some 310 digits) or nesting past
    1,024 levels is ``malformed_json``. orjson reads an integer wider than 64 bits as a
    float, so text with such a long number is read again by the standard library, which
    keeps every integer exact (for :func:`to_json` to reject).

    Raises:
        AgentFormatError: ``malformed_json`` or ``too_large``; ``what`` (such as
            ``"the message"``) starts the message.
    """
    value = _orjson(text, what)
    return _exact(text, what) if _LONG_NUMBER.search(text) else value


def decode_json(text: str, what: str, limit: int = MAX_ARGUMENT_BYTES) -> JSON:
    """:func:`read_json` on text of at most ``limit`` characters, then :func:`to_json`.

    Raises:
        AgentFormatError: as :func:`read_json`, or ``too_large``/``bad_value`` from the rule.
    """
    if len(text) > limit:
        raise AgentFormatError("too_large", f"{what} is longer than {limit} characters")
    value = _orjson(text, what)
    if _LONG_NUMBER.search(text):
        value = _exact(text, what)
    elif 5 * len(text) <= limit and text.count("[") + text.count("{") <= MAX_DEPTH:
        # What orjson read already obeys the rule: its strings are UTF-8, its keys strings,
        # its floats finite, its integers (none of 19 digits) within 64 bits, its nesting
        # within MAX_DEPTH (it has fewer brackets), and its compact JSON is within the limit
        # (at most 4.5 bytes per character of text: "1e15" is "1000000000000000.0").
        return value
    try:
        return to_json(value, limit)
    except AgentFormatError as error:
        raise AgentFormatError(error.kind, f"{what}: {error}") from None


def _orjson(text: str, what: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise AgentFormatError("malformed_json", f"{what} is not valid JSON ({error})") from None


def _exact(text: str, what: str) -> Any:
    """Text orjson has read, read again with every integer exact."""
    try:
        return json.loads(text)
    except RecursionError:  # orjson reads 1,024 levels, the standard library fewer
        raise AgentFormatError("too_large", f"{what} is nested too deeply") from None


def clean_text(text: str) -> str:
    """Text UTF-8 can encode: surrogates decoded as UTF-16 would (see :func:`to_json`)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def kept_text(text: str) -> str:
    """Agent text as the log keeps it: cleaned, cut to :data:`RAW_LIMIT` (marked by :data:`CUT`)."""
    if len(text) > RAW_LIMIT:
        text = text[:RAW_LIMIT] + CUT
    return clean_text(text)


def describe(value: Any) -> str:
    """A value that is not JSON data as short text for the log; never raises.

    It is wrapped in ``<...>``, so it is never valid JSON and never a tool name.
    """
    return kept_text(f"<{_REPR.repr(value)}>")


def json_text(value: Any, limit: int = MAX_MESSAGE) -> str:
    """Compact JSON text of a value if the rule accepts it (within ``limit`` bytes), else
    :func:`describe`'s text."""
    try:
        return orjson.dumps(to_json(value, limit)).decode()
    except AgentFormatError:
        return describe(value)


def too_many_calls(count: int) -> str:
    return f"the round has {count} tool calls; at most {MAX_CALLS} are allowed"


def _too_large(budget: list[int]) -> AgentFormatError:
    return AgentFormatError("too_large", f"more than {budget[1]} bytes of JSON")


def _normal(value: Any, depth: int, budget: list[int]) -> JSON:
    """:func:`to_json` on one value.

    ``budget`` is ``[left, limit]``: ``left`` counts down a lower bound of the compact size.
    """
    kind = type(value)
    if kind is str:
        budget[0] -= len(value) + 2
        if budget[0] < 0:
            raise _too_large(budget)
        return value if value.isascii() else clean_text(value)
    if kind is int:
        budget[0] -= 1
        if INT_RANGE[0] <= value <= INT_RANGE[1]:
            return value
        message = f"an integer of {value.bit_length()} bits is outside the signed 64-bit range"
        raise AgentFormatError("bad_value", message)
    if value is None or kind is bool:
        budget[0] -= 4
        return value
    if kind is float:
        budget[0] -= 3
        if value - value == 0.0:  # false for NaN and the infinities
            return value
        raise AgentFormatError("bad_value", f"{value} is not a JSON number")
    if kind is dict or kind is list or kind is tuple:
        return _container(value, depth, budget)
    if isinstance(value, str):
        return _normal(str.__str__(value), depth, budget)
    if isinstance(value, int):
        return _normal(int.__int__(value), depth, budget)
    if isinstance(value, float):
        return _normal(float.__float__(value), depth, budget)
    if isinstance(value, (Mapping, list, tuple)):
        return _container(value, depth, budget)
    raise AgentFormatError("bad_value", f"a {type(value).__name__} is not a JSON value")


def _container(value: Any, depth: int, budget: list[int]) -> JSON:
    """A list or a dict by the rule. Short ASCII strings and small integers, by far the
    commonest items, are checked inline: this runs on every call an agent makes."""
    if depth >= MAX_DEPTH:
        raise AgentFormatError("too_large", f"the value is nested more than {MAX_DEPTH} levels")
    depth += 1
    left = budget[0] - 2
    if type(value) is dict or not isinstance(value, (list, tuple)):  # a mapping
        result: dict[str, JSON] = {}
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise AgentFormatError(
                        "bad_value", f"object keys must be strings, not {type(key).__name__}"
                    )
                key = str.__str__(key)
            kind = type(item)
            if kind is str and item.isascii():
                left -= len(key) + len(item) + 5
            elif kind is int and -_SMALL < item < _SMALL:
                left -= len(key) + 4
            else:
                budget[0] = left - len(key) - 3
                item = _normal(item, depth, budget)
                left = budget[0]
            if left < 0:
                raise _too_large(budget)
            result[key if key.isascii() else clean_text(key)] = item
        budget[0] = left
        return result
    items: list[JSON] = []
    for item in value:
        kind = type(item)
        if kind is str and item.isascii():
            left -= len(item) + 2
        elif kind is int and -_SMALL < item < _SMALL:
            left -= 1
        else:
            budget[0] = left
            item = _normal(item, depth, budget)
            left = budget[0]
        if left < 0:
            raise _too_large(budget)
        items.append(item)
    budget[0] = left
    return items
