"""The compact line rendering, for tiny models trained from scratch.

A tool round is one line per call, arguments in the tool's parameter order, then any others
as ``key=value`` (``search_flights LHR HND 8``); several lines are one parallel round; any
other reply is a message to the user. Entity ids are short handles (:mod:`.handles`), mapped
back to the real ids when a reply is parsed, so the model copies ``A``, not ``AQ449``. Results
are ``key=value`` lines (one per item of a list). JSON tool calls cost 2-3.5x the tokens.

Exact both ways: ``parse(action_message(a))`` is ``a`` with its call ids cleared, for every
action whose arguments are mappings and whose first call names an offered tool (a reply whose
first word is no tool is a message to the user). A string value is written bare when it cannot
be read as anything else, JSON-quoted otherwise; numbers, booleans and null as JSON; lists and
objects as one-token JSON. A message to the user that could be read as a call, or that starts with a
backslash or with blank space, is written after a backslash. A call line that cannot be read
(an unclosed quote, a value nested more than ``MAX_DEPTH`` levels) becomes a call with the rest
of the line as raw arguments, which the environment rejects as a format error.

Calls are separated by ``"\\n"`` only (a ``"\\r"`` before it is blank space): JSON leaves
U+0085, U+2028 and U+2029 raw inside a string, and ``str.splitlines`` breaks at them, so a
rendered string escapes them (``"\\u2028"``) and a reply is never split there (a model that
writes one raw inside a quoted value keeps it in the value). JSON in a reply is read as the
environment reads JSON (:func:`~stategym.kernel.boundary.read_json`): an integer stays an
integer however long, so one wider than 64 bits is the boundary's ``bad_value``, as on the
messages path, not a float of the wrong type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import orjson

from stategym.kernel.boundary import read_json
from stategym.kernel.domain import Domain
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import (
    JSON,
    MAX_DEPTH,
    Action,
    CallBatch,
    Observation,
    Say,
    ToolCall,
)
from stategym.kernel.task import Task
from stategym.rendering.base import Message
from stategym.rendering.handles import Handles
from stategym.rendering.messages import (
    RejectedReply,
    as_the_reader_takes,
    offered_tools,
    protocol_ending,
)

COMPACT_PROTOCOL = """\
How to work:
- Each reply is one round: tool calls, one per line, or one message to the user.
- A call is its tool's name, then the arguments in order, separated by spaces.
- Calls in one reply run together: none sees another's result.
- Capital letters (B, C, ...) name things; use them as they are."""

_KEYWORD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_BARE = re.compile(r"[^\s\"=\[\]{}]+")
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
"""The characters ``str.splitlines`` breaks at that JSON writes raw in a string (it escapes
the others, control characters all), with their JSON escapes."""


class CompactRenderer:
    """Compact lines with entity handles for one episode of ``domain`` with ``knobs``."""

    kind = "compact"

    def __init__(self, domain: Domain, knobs: Knobs) -> None:
        self.domain = domain
        self.knobs = knobs
        # The tools' own names and their arguments' stay as written wherever a text quotes
        # them (an error's "available: get_key_1, ..."): the model calls them by name.
        self.handles = Handles(
            frozenset(name for t in domain.tools for name in (t.name, *(p.name for p in t.params)))
        )
        self._tools = offered_tools(domain, knobs)
        self._params = {
            t["function"]["name"]: list(t["function"]["parameters"]["properties"])
            for t in self._tools
        }

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def system_prompt(self, demonstrations: str = "") -> str:
        ending = protocol_ending(self.domain, self.knobs)
        lines = [_signature(t["function"]) for t in self._tools]
        instructions = self.domain.instructions_for(self.knobs)
        parts = [instructions, COMPACT_PROTOCOL + "\n" + ending, "\n".join(lines)]
        if demonstrations:
            parts.append(demonstrations)
        return "\n\n".join(parts)

    def first_messages(self, task: Task, demonstrations: str = "") -> list[Message]:
        return [
            {"role": "system", "content": self.system_prompt(demonstrations)},
            {"role": "user", "content": self.handles.encode(task.request.text)},
        ]

    def observation_messages(self, observation: Observation) -> list[Message]:
        messages: list[Message] = []
        for result in observation.results:
            if result.error is not None:
                body = "error " + self.handles.encode(result.error)
            else:
                body = self._result(result.content)
            messages.append({"role": "tool", "content": body})
        if observation.error is not None:
            text = self.handles.encode(observation.error)
            messages.append({"role": "user", "content": f"[environment] {text}"})
        if observation.user is not None:
            messages.append({"role": "user", "content": self.handles.encode(observation.user)})
        return messages

    def action_message(self, action: Action, index: int) -> Message:
        # A rejected reply is logged as an invalid round, which a transcript rebuilds as an
        # empty reply (``logged_action``): the conversation holds the same.
        if isinstance(action, RejectedReply):
            return {"role": "assistant", "content": ""}
        return {"role": "assistant", "content": self.render(action)}

    def render(self, action: Action) -> str:
        """The reply text of an action."""
        if isinstance(action, Say):
            text = self.handles.encode(action.text)
            readable = text and text == text.strip() and not text.startswith("\\")
            return text if readable and not self._is_call(text) else "\\" + text
        return "\n".join(self._call_line(call) for call in action.calls)

    def parse(self, reply: Message | str) -> Action:
        """The action ``reply`` means, or what stands for it where the environment's reader
        rejects it whole (:func:`~stategym.rendering.messages.as_the_reader_takes`)."""
        return as_the_reader_takes(self._action(reply))

    def _action(self, reply: Message | str) -> Action:
        text = reply if isinstance(reply, str) else reply.get("content")
        if not isinstance(text, str):
            return CallBatch(())
        if text.startswith("\\"):
            return Say(self.handles.decode(text[1:]))
        stripped = text.strip()
        if not stripped:
            return CallBatch(())
        if not self._is_call(stripped):
            return Say(self.handles.decode(stripped))
        lines = [line.strip() for line in stripped.split("\n") if line.strip()]
        return CallBatch(tuple(self._read_call(line) for line in lines))

    def _is_call(self, text: str) -> bool:
        return text.split(maxsplit=1)[0] in self._params

    # -- calls ----------------------------------------------------------------------------

    def _call_line(self, call: ToolCall) -> str:
        name = self._written_name(call.name)
        if isinstance(call.arguments, str):
            return f"{name} {call.arguments}".rstrip()
        arguments = dict(call.arguments)
        words = [name]
        for name in self._params.get(call.name, ()):
            if name not in arguments or isinstance(arguments[name], dict):
                break
            words.append(self._value(arguments.pop(name)))
        words.extend(f"{key}={self._value(value)}" for key, value in arguments.items())
        if any(not _KEYWORD.fullmatch(f"{key}=") for key in arguments):
            words = [name, _dumps(self._encoded(dict(call.arguments)))]
        return " ".join(words)

    def _written_name(self, name: str) -> str:
        """A call's name as its line starts: a tool's as it is, and any other bare unless it
        would read back as something else, then as a JSON string: a name whose first word is
        a tool's (``"get_profile\\u00a0"``, ``"get_profile\\tx"``: audit 17D J3), that holds
        a space, a line break or a quote, starts or ends with blank space, or is empty."""
        if name in self._params:
            return name
        words = name.split(maxsplit=1)
        bare = (
            words
            and words[0] not in self._params
            and name == name.strip()
            and not any(c in name for c in ' \n\r"')
        )
        return name if bare else _dumps(name)

    def _read_call(self, line: str) -> ToolCall:
        quoted = _quoted_name(line)
        if quoted is not None:
            name, rest = quoted
        elif (head := line.split(maxsplit=1))[0] in self._params:
            # a tool's name ends at any space, as _is_call reads it
            name, rest = head[0], (head[1] if len(head) > 1 else "")
        else:  # no tool's: the name runs to the space its call line was written with
            name, _, rest = line.partition(" ")
        rest = rest.strip()
        try:
            tokens = _tokens(rest)
            if len(tokens) == 1 and tokens[0][0] is None and tokens[0][1].startswith("{"):
                decoded = self._decoded(_loads(tokens[0][1]))
                if isinstance(decoded, dict):
                    return ToolCall(name, decoded)
            return ToolCall(name, self._arguments(name, tokens))
        except ValueError:
            return ToolCall(name, rest)

    def _arguments(self, name: str, tokens: list[tuple[str | None, str]]) -> dict[str, JSON]:
        params = self._params.get(name, [])
        arguments: dict[str, JSON] = {}
        for position, (key, token) in enumerate(tokens):
            if key is None:
                if key_seen(arguments, params, position):
                    raise ValueError("a positional argument after a keyword one")
                key = params[position]
            if key in arguments:
                raise ValueError(f"argument {key} given twice")
            arguments[key] = self._read_value(token)
        return arguments

    # -- values ---------------------------------------------------------------------------

    def _value(self, value: JSON) -> str:
        if isinstance(value, str):
            text = self.handles.encode(value)
            if _BARE.fullmatch(text) and not _reads_as_json(text):
                return text
            return _dumps(text)
        return _dumps(self._encoded(value))

    def _read_value(self, token: str) -> JSON:
        if _BARE.fullmatch(token) and not _reads_as_json(token):
            return self.handles.decode(token)
        return self._decoded(_loads(token))

    def _encoded(self, value: JSON) -> JSON:
        if isinstance(value, str):
            return self.handles.encode(value)
        if isinstance(value, Mapping):
            return {k: self._encoded(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._encoded(v) for v in value]
        return value

    def _decoded(self, value: JSON) -> JSON:
        if isinstance(value, str):
            return self.handles.decode(value)
        if isinstance(value, dict):
            return {k: self._decoded(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._decoded(v) for v in value]
        return value

    def _result(self, content: JSON) -> str:
        if isinstance(content, list) and content and all(isinstance(i, dict) for i in content):
            return "\n".join(self._result(item) for item in content)
        if isinstance(content, dict):
            return " ".join(f"{k}={self._value(v)}" for k, v in content.items()) or "{}"
        return self._value(content)


def key_seen(arguments: dict[str, JSON], params: list[str], position: int) -> bool:
    """A positional token is readable only before any keyword one and within the schema."""
    return position >= len(params) or len(arguments) != position


def _reads_as_json(token: str) -> bool:
    try:
        _loads(token)
    except ValueError:
        return False
    return True


def _quoted_name(line: str) -> tuple[str, str] | None:
    """A call line's JSON-quoted name and the rest of the line, or ``None`` if the line does
    not start with one (:meth:`CompactRenderer._written_name`)."""
    if not line.startswith('"'):
        return None
    try:
        name, end = _DECODER.raw_decode(line)
    except ValueError:
        return None
    return (name, line[end:]) if isinstance(name, str) else None


_DECODER = json.JSONDecoder()


def _loads(token: str) -> Any:
    """A JSON token read as the environment reads JSON (integers exact); ``ValueError`` if
    it is not JSON."""
    try:
        return read_json(token, "the value")
    except AgentFormatError as error:
        raise ValueError(str(error)) from None


def _dumps(value: JSON) -> str:
    """One-line JSON: orjson's, or (an integer wider than 64 bits, which a parsed reply may
    hold) the standard library's, with the line breaks JSON leaves raw escaped."""
    try:
        text = orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_LINE_BREAKS)


def _tokens(text: str) -> list[tuple[str | None, str]]:
    """``(key or None, value token)`` pairs; raises ``ValueError`` on an unreadable line."""
    out: list[tuple[str | None, str]] = []
    position = 0
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        key = None
        keyword = _KEYWORD.match(text, position)
        if keyword is not None:
            key, position = keyword.group(1), keyword.end()
        end = _token_end(text, position)
        out.append((key, text[position:end]))
        position = end
    return out


def _token_end(text: str, start: int) -> int:
    """Where the value token starting at ``start`` ends (a JSON string, list or object, or
    a bare run up to the next blank); a list or object nested more than :data:`MAX_DEPTH`
    levels is unreadable, as the boundary rule would refuse it."""
    if start >= len(text):
        raise ValueError("a keyword without a value")
    if text[start] not in '"[{':
        match = _BARE.match(text, start)
        if match is None:
            raise ValueError(f"unreadable at {text[start:]!r}")
        return match.end()
    depth, in_string, position = 0, False, start
    while position < len(text):
        char = text[position]
        if in_string:
            if char == "\\":
                position += 1
            elif char == '"':
                in_string = False
                if depth == 0:
                    return position + 1
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:  # refused here, so decoding never recurses deeper
                raise ValueError(f"a value nested more than {MAX_DEPTH} levels")
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    raise ValueError("an unclosed quote or bracket")


def _signature(function: Mapping[str, Any]) -> str:
    parameters = function["parameters"]
    required = set(parameters.get("required", ()))
    names = [n if n in required else f"{n}?" for n in parameters["properties"]]
    return " ".join([function["name"], *names]) + f": {function['description']}"
