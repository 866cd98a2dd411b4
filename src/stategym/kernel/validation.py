"""A round is checked whole before any of it runs: the batch's shape, then every call's format.

:func:`batch_problem` refuses a batch that is not a sequence of :class:`ToolCall`
(``bad_message``), is empty (``empty_action``) or has more than :data:`MAX_CALLS` calls
(``too_large``): that round is invalid. :func:`check_call` then turns each call into a
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

from stategym.kernel.errors import AgentFormatError, ToolError
from stategym.kernel.frozen import quick_constructor
from stategym.kernel.protocol import (
    FINISH,
    JSON,
    MAX_CALLS,
    MAX_ID,
    RAW_LIMIT,
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


def batch_problem(calls: Any) -> tuple[str, str] | None:
    """``(kind, message)`` if a typed batch cannot be a round, else ``None``."""
    if not isinstance(calls, tuple | list):
        kind = type(calls).__name__
        return (
            "bad_message",
            f"bad_message: CallBatch.calls must be a tuple of ToolCall, not {kind}",
        )
    if not calls:
        return None  # the caller's empty-action rule
    if len(calls) > MAX_CALLS:
        return "too_large", f"too_large: {too_many_calls(len(calls))}"
    for position, item in enumerate(calls):
        if not isinstance(item, ToolCall):
            kind = type(item).__name__
            return (
                "bad_message",
                f"bad_message: CallBatch.calls[{position}] is a {kind}, not a ToolCall",
            )
    return None


def call_id(raw: Any, index: int, position: int) -> str:
    """The agent's id for a call, or ``c<round>_<position>`` when it is missing, is not a
    string or is longer than :data:`MAX_ID` characters."""
    if type(raw) is str and raw.isascii() and 0 < len(raw) <= MAX_ID:
        return raw  # the common case, checked first
    if isinstance(raw, str) and raw and len(raw) <= MAX_ID:
        return clean_text(str.__str__(raw))
    return f"c{index}_{position}"


def check_call(
    call: ToolCall,
    identifier: str,
    tools: Mapping[str, Tool],
    judges_answer: bool,
    provenance: Provenance,
) -> Ready | CallRecord:
    """Check one call's format: its name, its arguments by the boundary rule, its signature.

    Returns:
        The call ready to run, or the record of its format error (the world is not touched).
    """
    name, raw = call.name, call.arguments
    if type(name) is not str or not name.isascii() or len(name) > RAW_LIMIT:
        name = _name(name)  # the common case, an ASCII name, is checked inline: it is hot
    arguments: dict[str, Any] | None = None
    try:
        if not isinstance(call.name, str):
            raise AgentFormatError("unknown_tool", f"a tool name is a string, not {name}")
        arguments = _arguments(name, raw)
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
        kept = arguments if arguments is not None else _kept(call.arguments)
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


def _name(name: Any) -> str:
    """A tool name for the log: a string cleaned and bounded, anything else described."""
    if isinstance(name, str):
        return kept_text(str.__str__(name)) if len(name) > RAW_LIMIT else clean_text(name)
    return describe(name)


def _arguments(name: str, raw: Any) -> dict[str, JSON]:
    """Decoded arguments by the boundary rule; they must be a JSON object."""
    if isinstance(raw, str):
        value = decode_json(clean_text(str.__str__(raw)) or "{}", f"{name}: arguments")
    else:
        try:
            value = to_json(raw)
        except AgentFormatError as error:
            raise AgentFormatError(error.kind, f"{name}: arguments: {error}") from None
    if type(value) is not dict:
        raise AgentFormatError("malformed_json", f"{name}: arguments must be a JSON object")
    return value


def _kept(raw: Any) -> str:
    """Arguments that could not be decoded into an object, as bounded text for the log.

    Replaying the log sends this text again, and it is rejected again: text is kept as the
    agent sent it (cut text ends in a character that makes it invalid JSON) and other values
    as their JSON text, or described in ``<...>``, which is never JSON.
    """
    if isinstance(raw, str):
        return kept_text(str.__str__(raw))
    return kept_text(json_text(raw))
