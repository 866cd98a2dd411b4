"""A round is read into plain values, then checked whole before any of it runs.

:func:`read_action` is the one place that touches the agent's typed objects: it reads a
:class:`Say`'s text, or a batch's calls into plain :class:`Call` values (every string an exact
``str``, arguments JSON data by the boundary rule), and nothing after it runs the agent's code.
It refuses a batch that is not a sequence of :class:`ToolCall` or whose objects raise while
read (``bad_message``), or that has more than :data:`MAX_CALLS` calls (``too_large``), and a
message to the user that is not text (``bad_message``) or is longer than :data:`MAX_TEXT`
once cleaned (``too_large``): that round is invalid. :func:`check_call` then turns each call into a
:class:`Ready` call (a known tool, its arguments decoded by the boundary rule and bound to
the signature) or into the :class:`CallRecord` of its format error. If any call of a batch
is malformed, none of them runs: :func:`rejected` logs the well-formed ones as
:data:`NOT_RUN`; otherwise :func:`run_ready` runs each in turn. A
:class:`~stategym.kernel.errors.ToolError` is not a format error: it is raised while a
well-formed call runs, and fails that call only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from stategym.kernel.boundary import capped_text, class_name, unreadable
from stategym.kernel.errors import AgentFormatError, ToolError
from stategym.kernel.frozen import quick_constructor
from stategym.kernel.protocol import (
    CUT,
    FINISH,
    JSON,
    MAX_CALLS,
    MAX_ID,
    MAX_TEXT,
    RAW_LIMIT,
    CallBatch,
    Say,
    ToolCall,
    clean_text,
    decode_json,
    describe,
    json_text,
    kept_text,
    to_json,
    too_many_calls,
)
from stategym.kernel.provenance import Origin, Provenance
from stategym.kernel.tools import Tool
from stategym.kernel.trajectory import CallRecord
from stategym.kernel.world import World

NOT_RUN = "not_run"
"""``error_kind`` of a well-formed call that did not run because another call of its round
was malformed (it is not a format error of its own)."""


class Call(NamedTuple):
    """One call read into plain values by :func:`read_action`: all that is checked and logged.

    Attributes:
        id: the agent's call id, or ``""`` where the environment assigns ``c<round>_<i>``.
        name: the tool name as the log keeps it (cleaned, bounded), or, when the agent's name
            was not a string, its description in ``<...>``.
        named: whether the agent's name was a string.
        arguments: the arguments as exact text, or as JSON data by the boundary rule; when
            ``error`` is set, the rejected arguments as the log keeps them.
        error: the boundary rule's error for the arguments, if any.
    """

    id: str
    name: str
    named: bool
    arguments: JSON
    error: AgentFormatError | None


class Ready(NamedTuple):
    """A call that passed every check and will run (a named tuple: one is made per call, and
    a tuple is several times cheaper to make than a frozen dataclass).

    Attributes:
        id: the call id.
        name: the tool's name.
        tool: the tool, or ``None`` for ``finish``.
        arguments: the bound arguments (for ``finish``: the decoded ones).
        sources: where each argument's value first appeared.
    """

    id: str
    name: str
    tool: Tool | None
    arguments: dict[str, Any]
    sources: dict[str, Origin | None]


_new_call_record = quick_constructor(CallRecord)
"""Made for every call that runs: built the quick way (:mod:`stategym.kernel.frozen`)."""


def read_action(action: Any) -> str | tuple[Call, ...] | None:
    """The agent's action as plain values: a :class:`Say`'s text, or a batch's calls;
    ``None`` for an empty action (an empty batch, blank text, anything else).

    Every string becomes an exact ``str`` (a subclass's own ``__hash__``, ``__eq__`` or
    ``__len__`` never runs) and every type is read with ``type()``. Any exception the agent's
    own objects raise while read (a property, a list's ``__iter__``) makes the round invalid.

    Raises:
        AgentFormatError: ``bad_message`` or ``too_large``: the round is invalid.
    """
    try:
        kind = type(action)
        if issubclass(kind, Say):
            return _text(action.text)
        if issubclass(kind, CallBatch):
            return _calls(action.calls)
    except AgentFormatError:
        raise
    except Exception as error:  # the agent's own code raised: reading touches nothing else
        raise unreadable(error, "the action") from None
    return None


def _text(text: Any) -> str | None:
    """A message to the user, cleaned; the cap counts the characters the log keeps."""
    if not issubclass(type(text), str):
        raise AgentFormatError("bad_message", "a message to the user must be text")
    capped = capped_text(str.__str__(text), MAX_TEXT)
    if capped is None:
        reason = f"a message to the user is at most {MAX_TEXT} characters"
        raise AgentFormatError("too_large", reason)
    return capped if capped.strip() else None


def _calls(batch: Any) -> tuple[Call, ...] | None:
    kind = type(batch)
    if kind is not tuple and kind is not list:
        if not issubclass(kind, tuple | list):
            message = f"CallBatch.calls must be a tuple of ToolCall, not {class_name(kind)}"
            raise AgentFormatError("bad_message", message)
        # a subclass is read as the plain sequence: none of its own methods runs
        batch = list.copy(batch) if issubclass(kind, list) else tuple(tuple.__iter__(batch))
    if not batch:
        return None
    if len(batch) > MAX_CALLS:
        raise AgentFormatError("too_large", too_many_calls(len(batch)))
    for position, item in enumerate(batch):
        if not issubclass(type(item), ToolCall):
            message = f"CallBatch.calls[{position}] is a {class_name(type(item))}, not a ToolCall"
            raise AgentFormatError("bad_message", message)
    return tuple([_call(item) for item in batch])


def _call(call: ToolCall) -> Call:
    name, raw, identifier = call.name, call.arguments, call.id
    if type(name) is str and name.isascii() and len(name) <= RAW_LIMIT:
        named = True  # the common case, an ASCII name, is checked inline: it is hot
    elif issubclass(type(name), str):
        name, named = kept_text(str.__str__(name)), True
    else:
        name, named = describe(name), False
    if type(identifier) is not str or not identifier.isascii() or len(identifier) > MAX_ID:
        identifier = _id(identifier)
    if issubclass(type(raw), str):
        return Call(identifier, name, named, str.__str__(raw), None)
    try:
        return Call(identifier, name, named, to_json(raw), None)
    except AgentFormatError as error:
        failed = AgentFormatError(error.kind, f"{name}: arguments: {error}")
        return Call(identifier, name, named, _rejected_text(raw), failed)


def _rejected_text(raw: Any) -> str:
    """Arguments the boundary rule rejected, as the log keeps them: text that is rejected
    again when the log is replayed. Their JSON text when it is cut (the cut mark makes it no
    JSON), else their description in ``<...>`` (never JSON). Writing the log reads the
    agent's object a second time, and an object that reads differently the second time (a
    mapping whose ``items()`` gives bad values once, good ones after) must not leave a log
    of a valid call that did not run: replayed, it would run."""
    text = kept_text(json_text(raw))
    return text if text.endswith(CUT) else describe(raw)


def _id(raw: Any) -> str:
    """The agent's call id, cleaned; ``""`` (the environment assigns one) when it is not a
    string or is longer than :data:`MAX_ID` characters."""
    if not issubclass(type(raw), str):
        return ""
    return capped_text(str.__str__(raw), MAX_ID) or ""


def check_call(
    call: Call,
    identifier: str,
    tools: Mapping[str, Tool],
    judges_answer: bool,
    provenance: Provenance,
) -> Ready | CallRecord:
    """Check one call's format: its name, its arguments by the boundary rule, its signature.

    Returns:
        The call ready to run, or the record of its format error (the world is not touched).
    """
    name = call.name
    arguments: dict[str, Any] | None = None
    try:
        if not call.named:
            raise AgentFormatError("unknown_tool", f"a tool name is a string, not {name}")
        arguments = _arguments(call)
        if name == FINISH:
            answer = arguments.get("answer")
            if set(arguments) - {"answer"} or not isinstance(answer, str | None):
                raise AgentFormatError("wrong_type", "finish takes one string: answer")
            if answer is None and judges_answer:
                raise AgentFormatError("missing_argument", "finish: missing argument 'answer'")
            return Ready(identifier, FINISH, None, arguments, {})
        tool = tools.get(name)
        if tool is None:
            available = ", ".join(tools)
            raise AgentFormatError(
                "unknown_tool", f"unknown tool {name!r}; available: {available}, finish"
            )
        bound = tool.bind(arguments)
        return Ready(identifier, name, tool, bound, provenance.resolve(bound))
    except AgentFormatError as error:
        kept = arguments if arguments is not None else _kept(call)
        return CallRecord(identifier, name, kept, None, None, str(error), error.kind, {})


def rejected(checked: Sequence[Ready | CallRecord]) -> tuple[CallRecord, ...]:
    """The records of a round in which some call is malformed: nothing ran.

    Malformed calls keep their own errors; every well-formed one is logged as
    :data:`NOT_RUN`, with an error that names the first malformed call.
    """
    position, first = next((i, c) for i, c in enumerate(checked) if isinstance(c, CallRecord))
    note = (
        f"not run: call {position} of this round ({first.name}) is malformed "
        f"({first.error_kind}), so no call of the round ran"
    )
    return tuple(
        c
        if isinstance(c, CallRecord)
        else CallRecord(c.id, c.name, c.arguments, None, None, note, NOT_RUN, {})
        for c in checked
    )


def run_ready(call: Ready, world: World) -> CallRecord:
    """Run one checked call on ``world``; a :class:`ToolError` fails this call only."""
    if call.tool is None:
        answer = {"answer": call.arguments.get("answer")}
        return CallRecord(call.id, FINISH, call.arguments, None, answer, None, None, {})
    tool = call.tool
    try:
        content = tool.fn(world, **call.arguments)
    except ToolError as error:
        return CallRecord(
            call.id, call.name, call.arguments, tool.effect, None, str(error), "tool", call.sources
        )
    return _new_call_record(
        call.id, call.name, call.arguments, tool.effect, content, None, None, call.sources
    )


def _arguments(call: Call) -> dict[str, JSON]:
    """Decoded arguments by the boundary rule; they must be a JSON object."""
    if call.error is not None:
        raise call.error
    value = call.arguments
    if type(value) is str:
        value = decode_json(clean_text(value) or "{}", f"{call.name}: arguments")
    if type(value) is not dict:
        raise AgentFormatError("malformed_json", f"{call.name}: arguments must be a JSON object")
    return value


def _kept(call: Call) -> str:
    """Arguments that could not be decoded into an object, as bounded text for the log.

    Replaying the log sends this text again, and it is rejected again: text is kept as the
    agent sent it (cut text ends in a character that makes it invalid JSON) and other values
    as their JSON text, or described in ``<...>``, which is never JSON.
    """
    if call.error is not None:
        return str(call.arguments)  # kept so when the arguments were read
    if type(call.arguments) is str:
        return kept_text(call.arguments)
    return kept_text(json_text(call.arguments))
