"""A round is read into plain values, then checked whole before any of it runs.

:func:`read_action` is the one place that touches the agent's typed objects: it reads a
:class:`Say`'s text, or a batch's calls into plain :class:`Call` values (every string an exact
``str``, arguments JSON data by the boundary rule), and nothing after it runs the agent's code.
It refuses a batch that is not a sequence of :class:`ToolCall` or whose objects raise while
read (``bad_message``), or that has more than :data:`MAX_CALLS` calls (``too_large``), a
message to the user that is not text (``bad_message``) or is longer than :data:`MAX_TEXT`
once cleaned (``too_large``), and any other object sent as the action, naming its class and
what to send instead (a bare :class:`ToolCall` is ``bad_message``, told to wrap it with
``calls(...)``; anything else but ``None`` is ``empty_action``): that round is invalid.
:func:`check_call` then turns each call into a :class:`Ready` call (a known tool, its
arguments decoded by the boundary rule and bound to the signature) or into the
:class:`CallRecord` of its format error. If any call of a batch is malformed, none of them
runs: :func:`rejected` logs the well-formed ones as :data:`NOT_RUN`; otherwise
:func:`run_ready` runs each in turn. A :class:`~stategym.kernel.errors.ToolError` is not a
format error: it is raised while a well-formed call runs, and fails that call only, leaving
the world as the call found it. Each shipped tool checks before its first write
(``tests/test_world_truths.py`` probes every domain's tools), and :func:`run_ready` makes it
the kernel's rule too: a write or commit call is run over a snapshot of the world
(:meth:`~stategym.kernel.world.World.snapshot`), restored if the tool raises
:class:`ToolError`, so a domain whose tool writes and then refuses cannot leave half a
change (ids minted by the refused call are given again). Read calls take no snapshot; a
write or commit call pays for one (``benchmarks/env_speed.py``).

**A log replays its rejections.** The log keeps each call as the environment saw it, so that
replaying the log rejects every call it rejected in the same way (same kind, same error
text). A tool name that is not a string is seen as its description in ``<...>``: a string
that names no tool, checked like any other. Arguments the boundary rule rejects, and rejected
argument text longer than the log keeps, are seen as their *rejection text*
(:func:`rejection_text`): its first line ``<rejected KIND: REASON>`` states the rejection,
the rest shows what was sent, cut. Argument text of that form is rejected as
``KIND`` with the error ``NAME: REASON`` whatever interface it came through; it is not JSON,
so no call that could run reads so.
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
from stategym.kernel.tools import Effect, Tool
from stategym.kernel.trajectory import CallRecord
from stategym.kernel.world import World

NOT_RUN = "not_run"
"""``error_kind`` of a well-formed call that did not run because another call of its round
was malformed (it is not a format error of its own)."""
REJECTED = "<rejected "
"""How a rejection text (:func:`rejection_text`) starts."""
REJECTED_KINDS = frozenset({"malformed_json", "bad_value", "too_large"})
"""The kinds a rejection text can state: the boundary rule's, for arguments."""
MAX_REASON = 1024
"""Characters of a rejection's reason (past them it is cut, marked by :data:`CUT`): the
agent's class names can make it as long as they are."""


class Call(NamedTuple):
    """One call read into plain values by :func:`read_action`: all that is checked and logged.

    Attributes:
        id: the agent's call id, or ``""`` where the environment assigns ``c<round>_<i>``.
        name: the tool name as the log keeps it (cleaned, bounded), or, when the agent's name
            was not a string, its description in ``<...>`` (which names no tool).
        arguments: the arguments as exact text, or as JSON data by the boundary rule, or,
            when the rule rejected them, their rejection text (:func:`rejection_text`).
    """

    id: str
    name: str
    arguments: JSON


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
    ``None`` for an empty action (``None``, an empty batch, blank text).

    Every string becomes an exact ``str`` (a subclass's own ``__hash__``, ``__eq__`` or
    ``__len__`` never runs) and every type is read with ``type()``. Any exception the agent's
    own objects raise while read (a property, a list's ``__iter__``) makes the round invalid.

    Raises:
        AgentFormatError: ``bad_message`` or ``too_large``: the round is invalid; also any
            object that is not an action (:func:`_not_an_action`).
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
    if action is None:
        return None
    raise _not_an_action(kind)


def _not_an_action(kind: type) -> AgentFormatError:
    """The error for an object of class ``kind`` sent as an action: neither a :class:`Say`
    nor a :class:`CallBatch`. It names what was sent and what to send instead, so an agent
    that sent a tool call is not told it sent nothing. A bare :class:`ToolCall` is a call in
    the wrong wrapping (``bad_message``, as a batch whose calls are not a sequence is); any
    other object carries no action the environment can read (``empty_action``)."""
    if issubclass(kind, ToolCall):
        return AgentFormatError(
            "bad_message", "a ToolCall is not an action: wrap it in a batch with calls(...)"
        )
    return AgentFormatError(
        "empty_action",
        f"{_a(class_name(kind))} is not an action: send tool calls as a CallBatch "
        "(calls(...)) or a message to the user as a Say",
    )


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
    # The common case, an ASCII name and id within their caps, is checked inline: it is hot.
    if type(name) is not str or not name.isascii() or len(name) > RAW_LIMIT:
        name = kept_name(name)
    if type(identifier) is not str or not identifier.isascii() or len(identifier) > MAX_ID:
        identifier = kept_id(identifier)
    if issubclass(type(raw), str):
        return Call(identifier, name, str.__str__(raw))
    try:
        return Call(identifier, name, to_json(raw))
    except AgentFormatError as error:
        # Seen as its rejection text from here on, as the log keeps it and replay sends it.
        # The preview reads the agent's object a second time: an object that reads
        # differently then (a mapping whose items() gives bad values once, good ones after)
        # changes only the preview, never the rejection.
        reason = _reason(f"arguments: {error}")
        return Call(identifier, name, rejection_text(error.kind, reason, describe(raw)))


def rejection_text(kind: str, reason: str, sent: str) -> str:
    """Rejected arguments as the environment sees and the log keeps them (at most
    :data:`~stategym.kernel.boundary.RAW_LIMIT` characters and a cut mark).

    The first line states the rejection; the rest is ``sent`` (what the agent sent, as far
    as the log keeps it), for a reader. Argument text of this form is rejected as ``kind``
    with the error ``NAME: REASON`` (:func:`read_rejection`), so replaying the log rejects
    the call again in the same words.

    Example:
        >>> rejection_text("bad_value", "arguments: a set is not a JSON value", "<{1, 2}>")
        '<rejected bad_value: arguments: a set is not a JSON value>\\n<{1, 2}>'
    """
    return kept_text(f"{REJECTED}{kind}: {reason}>\n{sent}")


def read_rejection(text: str) -> tuple[str, str] | None:
    """The kind and reason a rejection text (:func:`rejection_text`) states, or ``None``
    for any other text."""
    if not text.startswith(REJECTED):
        return None
    head = text.partition("\n")[0]
    kind, colon, reason = head[len(REJECTED) : -1].partition(": ")
    if not colon or not head.endswith(">") or kind not in REJECTED_KINDS:
        return None
    return kind, _reason(reason)


def _reason(text: str) -> str:
    """A rejection's reason as the agent is told it and its rejection text states it: on
    one line, cut to :data:`MAX_REASON` characters. Applied twice, it changes nothing."""
    return kept_text(_cut(text.replace("\n", " ")))


def _cut(text: str) -> str:
    """``text`` cut to :data:`MAX_REASON` characters, the cut marked by :data:`CUT`."""
    return text if len(text) <= MAX_REASON else text[:MAX_REASON] + CUT


def kept_name(name: Any) -> str:
    """A call's tool name as the log keeps it: text cleaned and cut (:func:`kept_text`); a
    name that is not text, its description in ``<...>``, which names no tool and replays as
    this very text. An LLM agent's conversation shows the name so (``ChatAgent``)."""
    if issubclass(type(name), str):
        return kept_text(str.__str__(name))
    return describe(name)


def kept_id(raw: Any) -> str:
    """The agent's call id as the log keeps it, cleaned; ``""`` (the environment assigns
    ``c<round>_<i>``) when it is not a string or is longer than :data:`MAX_ID` characters.
    An LLM agent's conversation names the call by the same rule (``ChatAgent``)."""
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
        arguments = _arguments(call)
        if name == FINISH:
            _check_finish(arguments, judges_answer)
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
        kept = arguments if arguments is not None else _kept(call, error)
        return CallRecord(identifier, name, kept, None, None, str(error), error.kind, {})


def _check_finish(arguments: dict[str, JSON], judges_answer: bool) -> None:
    """Refuse a ``finish`` whose arguments are not one string ``answer``, required when the
    episode is judged on it (where it is optional, ``null`` is read as no answer).

    Raises:
        AgentFormatError: ``wrong_type`` (another argument; an answer that is not a string,
            ``null`` included where one is required) or ``missing_argument`` (no answer
            where one is required): each says which, so an answer sent as ``null`` is not
            told it is missing.
    """
    answer = arguments.get("answer")
    if set(arguments) - {"answer"} or not isinstance(answer, str | None):
        raise AgentFormatError("wrong_type", "finish takes one string: answer")
    if answer is None and judges_answer:
        if "answer" in arguments:
            raise AgentFormatError("wrong_type", "finish: answer must be a string, not null")
        raise AgentFormatError("missing_argument", "finish: missing argument 'answer'")


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
    """Run one checked call on ``world``; a :class:`ToolError` fails this call only, and a
    write or commit call that raises it leaves the world as it found it (module docstring)."""
    if call.tool is None:
        answer = {"answer": call.arguments.get("answer")}
        return CallRecord(call.id, FINISH, call.arguments, None, answer, None, None, {})
    tool = call.tool
    before = None if tool.effect is Effect.READ else world.snapshot()
    try:
        content = tool.fn(world, **call.arguments)
    except ToolError as error:
        if before is not None:
            world.restore(before)
        # it may quote an argument of 16 KB: told cut, as a rejection is (64 such calls sent
        # 1 MB back a round: audit 17B F6)
        told = _cut(str(error))
        return CallRecord(
            call.id, call.name, call.arguments, tool.effect, None, told, "tool", call.sources
        )
    return _new_call_record(
        call.id, call.name, call.arguments, tool.effect, content, None, None, call.sources
    )


def _arguments(call: Call) -> dict[str, JSON]:
    """Decoded arguments by the boundary rule; they must be a JSON object. A rejection text
    is rejected as it states.

    Raises:
        AgentFormatError: the rule's error, with a reason of at most :data:`MAX_REASON`
            characters after ``NAME: `` (the reason a rejection text keeps).
    """
    value = call.arguments
    if type(value) is str:
        text = clean_text(value) or "{}"
        stated = read_rejection(text)
        if stated is not None:
            raise AgentFormatError(stated[0], f"{call.name}: {stated[1]}")
        try:
            value = decode_json(text, f"{call.name}: arguments")
        except AgentFormatError as error:
            reason = _reason(str(error)[len(call.name) + 2 :])  # after "NAME: "
            raise AgentFormatError(error.kind, f"{call.name}: {reason}") from None
    if type(value) is not dict:
        raise AgentFormatError("malformed_json", f"{call.name}: arguments must be a JSON object")
    return value


def _kept(call: Call, error: AgentFormatError) -> str:
    """Arguments that could not be decoded into an object, as the log keeps them: text that
    replay sends again and that is rejected again in the same words.

    The text the decoder read (the text sent, cleaned, or a JSON value's JSON text) is kept
    whole when the log can keep it (at most :data:`~stategym.kernel.boundary.RAW_LIMIT`
    characters and one more, as long as any kept text); longer, it is kept as its rejection
    text, which states ``error`` (a rejection text itself is short enough to keep whole).
    """
    value = call.arguments
    text = (clean_text(value) or "{}") if type(value) is str else json_text(value)
    if len(text) <= RAW_LIMIT + 1:
        return text
    reason = str(error)[len(call.name) + 2 :]  # the reason, after "NAME: "
    return rejection_text(error.kind, reason, text)


def _a(word: str) -> str:
    """``word`` with its indefinite article (``an int``, ``a str``)."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"
