"""Tool calls from generated text: the Hermes/Qwen ``<tool_call>{json}</tool_call>`` form and
plain JSON.

Parsing never raises. What can be read is turned into calls; what cannot is passed through as
the raw argument text (or an empty tool name) so the *environment* reports it as a format
error (``malformed_json``, ``unknown_tool``) in the round where it happened. Values are kept exactly
(an integer wider than 64 bits stays that integer): the environment's boundary rule, not the
parser, decides what it accepts. Malformations that
are tolerated, because the intent is unambiguous (a missing closing tag, Python-style literals
or a trailing comma in the JSON), still count: they are listed in :attr:`Parsed.errors`, and
the runner adds them to the round's ``format_errors``.

Reasoning is never acted on. It is the reply's start (:func:`_without_reasoning`): a
``<think>...</think>`` that opens the reply is dropped, and so is the text through the first
``</think>`` when no ``<think>`` opens the reply and no call starts before it (templates such
as DeepSeek-R1's end the generation prompt with ``<think>``, so the reply starts inside it).
Anywhere else either marker is text: a call's arguments may hold one. A ``<think>`` that
opens the reply and is never closed takes the whole reply (a call drafted while thinking is
not a call): that is counted (:data:`UNCLOSED_THINK`; the round is also the environment's
``empty_action``). The parser's kinds (:data:`UNCLOSED`, :data:`REPAIRED`,
:data:`UNCLOSED_THINK`) are :data:`stategym.kernel.verify.PARSER_KINDS`, the only ones verify
leaves out when it compares a round with its replay.

Dropped without an error (the runner logs the raw text): text between calls or after the last
``</tool_call>`` (narration is the text before the first call).

Parsing reads at most ``MAX_CALLS + 1`` calls (the environment refuses a round of more, whole)
and repairs at most :data:`REPAIR_LIMIT` characters. It takes time linear in the text's
length, whatever the text: no regular expression here
has a lazy group next to a whitespace run (such a pattern backtracks cubically over the run:
an unclosed fence before 16,000 spaces took an hour); the fence and the arguments are cut by
hand (:func:`_unfence`, :func:`_raw_arguments`).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from stategym.kernel.boundary import MAX_CALLS, RepeatedNameError
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.protocol import read_json

# The parser's kinds are defined with the rule that reads them: verify leaves these, and no
# other kind, out of a round's comparison with its replay (one definition, in the kernel).
from stategym.kernel.verify import REPAIRED, UNCLOSED, UNCLOSED_THINK

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_FENCE = "```"
_FENCE_LABELS = ("json", "tool_call")
_NAME = re.compile(r"""["']name["']\s*:\s*["']([^"']*)["']""")
_ARGUMENTS_KEY = re.compile(r"""["'](?:arguments|parameters)["']\s*:\s*""")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
REPAIR_LIMIT = 1 << 16
"""Characters of JSON the parser repairs (a Python literal, a trailing comma): Python's own
parser holds about 500 bytes per character (a 1 MB reply took 1.5 s and 500 MB: audit 17B
F4). A call body this long holds arguments past the environment's cap anyway; a bare JSON
list of many calls this long that needs repair is not repaired, and reads as a message (which
the environment refuses as ``too_large``): a trade-off kept on purpose (audit 17C F4), since
a reply of 64 KiB is far past what a model writes in one turn."""
_LITERALS = {"true": "True", "false": "False", "null": "None"}
_BARE_LITERAL = re.compile(r"\b(true|false|null)\b")


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One call read from text.

    Attributes:
        name: the tool name, or ``""`` when none could be read.
        arguments: JSON text of the arguments; left raw (invalid) when it could not be read.
    """

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Parsed:
    """An assistant message read from generated text.

    Attributes:
        content: text outside tool calls (narration, or the message to the user).
        calls: the tool calls, in order.
        errors: tolerated malformations, as format-error kinds.
    """

    content: str | None
    calls: tuple[ParsedCall, ...] = ()
    errors: tuple[str, ...] = ()

    def to_message(self, id_prefix: str = "call") -> dict[str, Any]:
        """The OpenAI assistant message; call ids are ``<id_prefix>_<index>``."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": f"{id_prefix}_{index}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for index, c in enumerate(self.calls)
            ]
        return message


def parse(text: str) -> Parsed:
    """Read an assistant message from generated text.

    Examples:
        >>> parse('<tool_call>{"name": "get_profile", "arguments": {}}</tool_call>').calls
        (ParsedCall(name='get_profile', arguments='{}'),)
        >>> parse("What is your budget?").content
        'What is your budget?'
    """
    text, unclosed_think = _without_reasoning(text)
    parsed = _action(text)
    if unclosed_think:
        return Parsed(parsed.content, parsed.calls, (*parsed.errors, UNCLOSED_THINK))
    return parsed


def _action(text: str) -> Parsed:
    if OPEN in text:
        return _tagged(text)
    stripped = _unfence(text.strip())
    if stripped[:1] in ("{", "["):
        calls, errors = _plain_json(stripped)
        if calls:
            return Parsed(None, calls, errors)
    content = text.strip()
    return Parsed(content or None)


def _without_reasoning(text: str) -> tuple[str, bool]:
    """The text with its reasoning cut off, and whether a ``<think>`` was left open.

    Reasoning is the reply's start, never inside an action: a ``<think>`` that opens the reply
    (after whitespace), up to its ``</think>`` or the end; or, where none opens it, the text
    through the first ``</think>`` when no call starts before it (the prompt opened the
    reasoning). A ``<think>`` or ``</think>`` anywhere else is text (a call's arguments may
    hold one).

    Example:
        >>> _without_reasoning(" <think>plan</think>Which day?")
        ('Which day?', False)
        >>> _without_reasoning("plan</think>Which day?")
        ('Which day?', False)
        >>> _without_reasoning('<tool_call>{"name": "</think>"}')
        ('<tool_call>{"name": "</think>"}', False)
        >>> _without_reasoning("<think>draft <tool_call>")
        ('', True)
    """
    reply = text.lstrip()
    if reply.startswith(THINK_OPEN):
        close = reply.find(THINK_CLOSE, len(THINK_OPEN))
        if close == -1:
            return "", True
        return reply[close + len(THINK_CLOSE) :], False
    close = reply.find(THINK_CLOSE)
    call = reply.find(OPEN)
    starts_as_call = reply.startswith(("{", "[", _FENCE))
    if close != -1 and (call == -1 or close < call) and not starts_as_call:
        return reply[close + len(THINK_CLOSE) :], False
    return text, False


def _tagged(text: str) -> Parsed:
    head = text[: text.index(OPEN)].strip()
    calls: list[ParsedCall] = []
    errors: list[str] = []
    for match in _CALL.finditer(text):
        if len(calls) > MAX_CALLS:  # the environment refuses the round whole: read no more
            break
        if not text.startswith(CLOSE, match.end(1)):
            errors.append(UNCLOSED)
        call, repaired = _call(_unfence(match.group(1).strip()))
        calls.append(call)
        if repaired:
            errors.append(REPAIRED)
    return Parsed(head or None, tuple(calls), tuple(errors))


def _plain_json(text: str) -> tuple[tuple[ParsedCall, ...], tuple[str, ...]]:
    """Calls from a bare JSON object or list of objects; none if it does not look like calls."""
    value, repaired = _decode(text)
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(i, dict) and _name_of(i) is not None for i in items):
        return (), ()
    calls = tuple(_from_object(item, text) for item in items[: MAX_CALLS + 1])
    return calls, (REPAIRED,) if repaired else ()


def _call(body: str) -> tuple[ParsedCall, bool]:
    """The call a body names, and whether reading it took a repair. A body that is no JSON
    object is read by hand: its name is the first ``"name": "..."`` before the arguments (one
    inside them is an argument: audit 17A F4), its arguments their text as written; a call
    so read whose arguments are JSON counts as repaired: it runs, and the broken JSON around
    them was counted nowhere (arguments that are not JSON are the environment's
    ``malformed_json``)."""
    value, repaired = _decode(body)
    if isinstance(value, dict):
        return _from_object(value, _raw_arguments(body)), repaired
    key = _ARGUMENTS_KEY.search(body)
    names = _NAME.findall(body, 0, len(body) if key is None else key.start())
    arguments = _raw_arguments(body)
    if len(names) != 1:  # none, or two the model may have meant
        return ParsedCall("", arguments), False
    return ParsedCall(names[0], arguments), _is_object(arguments)


def _is_object(text: str) -> bool:
    """Whether ``text`` is a JSON object as the environment reads arguments."""
    try:
        return isinstance(read_json(text, "the arguments"), dict)
    except AgentFormatError:
        return False


def _raw_arguments(body: str) -> str:
    """The arguments' text as written in a call's body (the whole body if none is found):
    what follows the first ``"arguments":`` (or ``"parameters":``) key, less the call's
    closing brace and the whitespace around it. Cut by hand, as :func:`_unfence` is."""
    key = _ARGUMENTS_KEY.search(body)
    if key is None:
        return body
    return body[key.end() :].rstrip().removesuffix("}").strip()


def _from_object(item: dict[str, Any], written: str) -> ParsedCall:
    """The call a decoded object names; its arguments as JSON text, or as ``written`` (the
    text they were read from) when they cannot be written back: nested past Python's
    recursion limit, they would otherwise be no text, which reads as no arguments, and the
    call would run (the environment refuses the text as it is, ``too_large``)."""
    name = _name_of(item)
    function = item.get("function")
    source = function if isinstance(function, dict) else item
    arguments = source.get("arguments", source.get("parameters", {}))
    if not isinstance(arguments, str):
        arguments = _encode(arguments)
        if arguments is None:
            arguments = written
    return ParsedCall(name if isinstance(name, str) else "", arguments)


def _name_of(item: dict[str, Any]) -> str | None:
    function = item.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    name = item.get("name")
    return name if isinstance(name, str) else None


def _decode(text: str) -> tuple[Any, bool]:
    """Decode JSON exactly; else a repaired reading (Python literals, trailing commas), flagged."""
    try:
        return read_json(text, "the call"), False
    except RepeatedNameError:  # which of the two the model meant, no repair can tell
        return None, False
    except AgentFormatError:
        pass
    if len(text) > REPAIR_LIMIT:
        return None, False
    candidate = _TRAILING_COMMA.sub(r"\1", text)
    candidate = _BARE_LITERAL.sub(lambda m: _LITERALS[m.group(1)], candidate)
    try:
        tree = ast.parse(candidate, mode="eval")
        value = ast.literal_eval(tree)
        if _repeats_a_name(tree):  # Python keeps the last silently; which was meant, none says
            return None, False
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None, False
    if _encode(value, strict=True) is None:
        return None, False
    return value, True


def _repeats_a_name(tree: ast.AST) -> bool:
    """Whether a literal's dict names a key twice (``{'day': 8, 'day': 9}``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [ast.literal_eval(k) for k in node.keys if k is not None]  # -1 too
            if len(set(keys)) != len(keys):
                return True
    return False


def _encode(value: Any, *, strict: bool = False) -> str | None:
    """Compact JSON text of a decoded value, every integer exact; ``None`` if it has none.

    orjson writes what JSON decoding returns, bar integers wider than 64 bits; the standard
    library writes those. ``strict`` (a Python literal, which may hold an infinity or a set)
    skips orjson, which would write an infinity as ``null``.
    """
    if not strict:
        try:
            return orjson.dumps(value).decode()
        except orjson.JSONEncodeError:
            pass
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None


def _unfence(text: str) -> str:
    """The body of a code fence (```` ```json ... ``` ````, the label ``json``, ``tool_call`` or
    none), less the whitespace around it; ``text`` itself when it is not fenced. ``text`` is
    stripped (both callers strip it).

    Cut by hand: as a regular expression (a lazy body between two whitespace runs) an
    unclosed fence before a long run of whitespace backtracked over every way to share the
    run between them, cubic in its length (16,000 spaces: about an hour).
    """
    if not text.startswith(_FENCE):
        return text
    inside = text[len(_FENCE) :]
    for label in _FENCE_LABELS:
        if inside.startswith(label) and inside.endswith(_FENCE, len(label)):
            inside = inside[len(label) :]
            break
    if not inside.endswith(_FENCE):
        return text
    return inside.lstrip()[: -len(_FENCE)].rstrip()
