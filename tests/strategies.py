"""Hypothesis strategies for stategym, in one place.

The central one is :func:`agent_steps`: what an agent might send in one round, through the
typed API, the OpenAI-message API or as raw text. It mixes well-formed calls whose arguments
reuse values the agent has seen (so some calls really change the world) with every kind of
bad output: malformed JSON arguments, unknown tools, wrong types, missing and unexpected
arguments, empty batches, bad messages and garbage text, and (:func:`wild_steps`) what no
JSON can carry: integers of any size, NaN, sets, bytes, tuples, objects, non-string keys,
lone surrogates, nesting past the cap, oversized batches, call ids and tool names at the
cap, number literals such as ``1e20`` in JSON text, in typed objects of any shape, message
dicts of any JSON-like shape and text; and (:data:`HOSTILE`) objects whose own code raises
or lies when read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin, get_type_hints

import orjson
from hypothesis import strategies as st

from stategym.agents.style import Style
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import (
    MAX_CALLS,
    MAX_DEPTH,
    MAX_ID,
    MAX_TEXT,
    RAW_LIMIT,
    CallBatch,
    Say,
    ToolCall,
    action_to_message,
)
from stategym.kernel.tools import Param, Tool
from stategym.kernel.user import PRIORITY_PHRASES

Channel = Literal["typed", "message", "text"]
Step = tuple[Channel, Any]
"""One agent round: ``("typed", Action)``, ``("message", dict)`` or ``("text", str)``."""

knobs = st.builds(Knobs, st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())


def _habit(hint: Any) -> st.SearchStrategy[Any]:
    if get_origin(hint) is Literal:
        return st.sampled_from(get_args(hint))
    if hint is bool:
        return st.booleans()
    if get_origin(hint) is frozenset:  # facts left unasked
        return st.frozensets(st.sampled_from(("priorities", "budget", "deadline")), max_size=2)
    return st.integers(0, 3)


styles = st.builds(Style, **{name: _habit(hint) for name, hint in get_type_hints(Style).items()})
"""Any combination of scripted-agent habits (the expert and every pathological variant)."""

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@dataclass
class Pool:
    """Values the agent has seen so far (tool results, the request), reused as arguments."""

    strings: list[str] = field(default_factory=lambda: ["none"])
    numbers: list[int] = field(default_factory=lambda: [0, 1, 2, 10])
    phrases: list[str] = field(default_factory=list)

    def see(self, value: Any) -> None:
        """Remember every string and integer inside a JSON value (bounded)."""
        if isinstance(value, dict):
            for item in value.values():
                self.see(item)
        elif isinstance(value, list | tuple):
            for item in value:
                self.see(item)
        elif isinstance(value, str) and value not in self.strings and len(self.strings) < 300:
            self.strings.append(value)
        elif type(value) is int and value not in self.numbers and len(self.numbers) < 300:
            self.numbers.append(value)


def question_phrases(slot_phrases: dict[str, tuple[str, ...]]) -> list[str]:
    """Phrases a message to the user may contain: slot phrases and priority phrases."""
    return sorted({p for phrases in slot_phrases.values() for p in phrases} | set(PRIORITY_PHRASES))


def _seen(values: list[Any]) -> st.SearchStrategy[Any]:
    """A seen value, the recent ones (ids just returned) as likely as all the older ones."""
    return st.sampled_from(values[-8:]) | st.sampled_from(values)


def _value_for(annotation: Any, pool: Pool) -> st.SearchStrategy[Any]:
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return _seen(pool.numbers) | st.integers(-3, 40)
    if annotation is float:
        return _seen(pool.numbers).map(float) | st.floats(-10, 2000)
    if annotation is str:
        return _seen(pool.strings) | st.text(max_size=8)
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        return st.lists(_value_for(item, pool), max_size=3)
    return json_values


def _argument(param: Param, pool: Pool) -> st.SearchStrategy[Any]:
    if param.choices:
        return st.sampled_from(param.choices)
    return _value_for(param.annotation, pool)


@st.composite
def well_formed_arguments(draw: st.DrawFn, tool: Tool, pool: Pool) -> dict[str, Any]:
    """Arguments that pass :meth:`Tool.bind` (optional ones sometimes left out)."""
    arguments: dict[str, Any] = {}
    for param in tool.params:
        if param.required or draw(st.booleans()):
            arguments[param.name] = draw(_argument(param, pool))
    return arguments


@st.composite
def tool_calls(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> ToolCall:
    """One call: usually well formed, otherwise broken in one of the ways agents break them."""
    kind = draw(
        st.sampled_from(
            ("valid",) * 6
            + ("json_text",) * 2
            + (
                "finish",
                "malformed_json",
                "not_object",
                "unknown_tool",
                "wrong_type",
                "missing",
                "unexpected",
            )
        )
    )
    if kind == "finish" and draw(st.booleans()):  # keep episodes going long enough to commit
        kind = "valid"
    tool = draw(st.sampled_from(tools))
    arguments = draw(well_formed_arguments(tool, pool))
    call_id = draw(st.sampled_from(("", "", "call_1", "x")))
    if kind == "json_text":
        return ToolCall(tool.name, orjson.dumps(arguments).decode(), call_id)
    if kind == "finish":
        answer = draw(st.sampled_from(pool.strings) | json_values)
        return ToolCall("finish", draw(st.sampled_from(({"answer": answer}, {}))), call_id)
    if kind == "malformed_json":
        text = orjson.dumps(arguments).decode()
        return ToolCall(
            tool.name,
            text[: draw(st.integers(0, max(len(text) - 1, 0)))]
            + draw(st.sampled_from(("", "{", "}", "'", ",,"))),
            call_id,
        )
    if kind == "not_object":
        return ToolCall(
            tool.name,
            orjson.dumps(draw(json_values.filter(lambda v: not isinstance(v, dict)))).decode(),
            call_id,
        )
    if kind == "unknown_tool":
        return ToolCall(draw(st.text(max_size=12)), arguments, call_id)
    if kind == "wrong_type" and tool.params:
        param = draw(st.sampled_from(tool.params))
        arguments[param.name] = draw(json_values)
    elif kind == "missing" and arguments:
        del arguments[draw(st.sampled_from(sorted(arguments)))]
    elif kind == "unexpected":
        arguments[draw(st.text(min_size=1, max_size=6))] = draw(json_values)
    return ToolCall(tool.name, arguments, call_id)


def says(pool: Pool) -> st.SearchStrategy[str]:
    """A message to the user: questions, proposals naming seen values, or noise."""
    phrase = st.sampled_from(pool.phrases or ["budget"])
    named = st.sampled_from(pool.strings)
    return st.one_of(
        st.lists(phrase, min_size=1, max_size=3).map(" and ".join).map(lambda t: t + "?"),
        st.tuples(named, named).map(lambda ab: f"Shall I book {ab[0]}? Or {ab[1]}?"),
        named.map(lambda option: f"I found {option}. Shall I go ahead?"),
        st.text(max_size=40),
    )


@st.composite
def actions(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> CallBatch | Say:
    """A typed action: a batch of 0-4 calls (0 is an empty, invalid round) or a message."""
    roll = draw(st.integers(0, 9))
    if roll < 3:
        return Say(draw(says(pool)))
    if roll == 3:
        return CallBatch(())
    return CallBatch(tuple(draw(st.lists(tool_calls(tools, pool), min_size=1, max_size=4))))


bad_messages = st.one_of(
    json_values,
    st.just({"role": "assistant"}),
    st.builds(
        lambda calls: {"role": "assistant", "tool_calls": calls},
        st.lists(json_values, min_size=1, max_size=2) | json_values,
    ),
    st.builds(
        lambda name: {"role": "assistant", "tool_calls": [{"id": 1, "function": {"name": name}}]},
        json_values,
    ),
    st.builds(lambda content: {"role": "assistant", "content": content}, json_values),
)
"""Assistant messages that are not usable actions (and a few that are, by chance)."""


@st.composite
def agent_steps(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> Step:
    """One round of agent output through any of the three channels (a quarter of them wild)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(wild_steps(tools, pool))
    channel = draw(st.sampled_from(("typed", "typed", "message", "text")))
    if channel == "typed":
        return "typed", draw(actions(tools, pool))
    if draw(st.integers(0, 4)) == 0:
        bad = draw(bad_messages)
        return ("text", orjson.dumps(bad).decode()) if channel == "text" else ("message", bad)
    message = action_to_message(draw(actions(tools, pool)))
    if channel == "message":
        return "message", message
    text = orjson.dumps(message).decode()
    if draw(st.integers(0, 5)) == 0:  # cut or garbage text, as a model's output can be
        text = text[: draw(st.integers(0, len(text)))] + draw(st.text(max_size=4))
    return "text", text


# -- wild output: what the boundary rule must convert or reject ------------------------------


def nested(depth: int, leaf: Any = 0) -> Any:
    """``depth`` lists one inside the other around ``leaf``."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


wild_text = st.lists(
    st.characters(exclude_categories=())
    | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=()),
    max_size=8,
).map("".join)
"""Text with any code point, lone surrogates often: about half its characters. (As the
alphabet of ``st.text`` the two ranges merge into one, and a surrogate was 1 text in 1,000.)"""
big_integers = st.sampled_from((2**63, -(2**63) - 1, 2**64 - 1, 2**64, 10**30, -(10**400)))


class HashRaises(str):
    def __hash__(self) -> int:
        raise RuntimeError("boom")


class LenRaises(str):
    def __len__(self) -> int:
        raise RuntimeError("boom")


class ReprRaises(str):
    def __repr__(self) -> str:
        raise RuntimeError("boom")


class BoolRaises(str):
    def __bool__(self) -> bool:
        raise RuntimeError("boom")


class Alias(str):
    """Text that hashes and compares as ``search_flights`` whatever it says."""

    def __hash__(self) -> int:
        return hash("search_flights")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and str.__eq__(other, "search_flights")


class IterRaises(list[Any]):
    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        raise RuntimeError("boom")


class ItemsRaises(dict[Any, Any]):
    def items(self) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[Any]:
        raise RuntimeError("boom")


class GetRaises(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        return 1


class LiesAboutClass:
    @property
    def __class__(self) -> type:
        return str


class Unreadable:
    """Mixed into an action or call type: reading any of its fields raises."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("text", "calls", "name", "arguments", "id"):
            raise RuntimeError("boom")
        return object.__getattribute__(self, name)


class UnreadableSay(Unreadable, Say):
    pass


class UnreadableBatch(Unreadable, CallBatch):
    pass


class UnreadableCall(Unreadable, ToolCall):
    pass


HOSTILE = (
    HashRaises("get_profile"),
    LenRaises("get_profile"),
    ReprRaises("zzz"),
    BoolRaises("get_profile"),
    Alias("xyz"),
    IterRaises([1]),
    ItemsRaises(a=1),
    GetRaises(),
    LiesAboutClass(),
)
"""Objects whose own code raises or lies when read: the boundary reads them as plain values
(a ``str``, ``list`` or ``dict`` subclass) or refuses them (any other), never running it."""
HOSTILE_ACTIONS = (
    UnreadableSay("hi"),
    UnreadableBatch(()),
    CallBatch((UnreadableCall("get_profile"),)),
    *(CallBatch(IterRaises([ToolCall(value, {})])) for value in HOSTILE),
)
"""Typed actions that cannot be read, or whose calls are named by a hostile object."""


def _hostile(index: int) -> Any:
    return HOSTILE[index]


def _hostile_action(index: int) -> Any:
    return HOSTILE_ACTIONS[index]


# Drawn by index: Hypothesis describes a strategy by the values it samples from (their repr).
hostile_values = st.integers(0, len(HOSTILE) - 1).map(_hostile)
hostile_actions = st.integers(0, len(HOSTILE_ACTIONS) - 1).map(_hostile_action)

wild_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | big_integers
    | st.floats()
    | wild_text
    | st.binary(max_size=4)
    | st.builds(object)
    | st.sampled_from((Style, Knobs(), ..., 1j))
    | hostile_values
)
wild_values = st.recursive(
    wild_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.frozensets(st.integers(-3, 3), max_size=3)
        | st.dictionaries(wild_text | st.integers() | st.none() | st.booleans(), inner, max_size=3)
    ),
    max_leaves=10,
) | st.sampled_from((MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 300, 5000)).map(nested)
"""Any Python value an agent might pass, JSON or not."""
breakers = st.one_of(
    big_integers,
    st.sampled_from((float("nan"), float("inf"), -float("inf"))),
    st.frozensets(st.integers(-3, 3), min_size=1, max_size=3),
    st.binary(max_size=3),
    st.builds(object),
    st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2),
    st.sampled_from((MAX_DEPTH + 1, 5000)).map(nested),
    st.text(max_size=3).map(lambda t: t + "\ud800"),
    st.text(max_size=3).map(lambda t: "x" * 17_000 + t),
)
"""Values the boundary rule must convert (surrogates) or reject, one of each kind."""
number_literals = st.sampled_from(
    (
        "1e20",
        "-1e300",
        "1e400",
        "18446744073709551616",
        "-9223372036854775809",
        "9223372036854775807",
        "1" * 30,
        "1" * 400,
        "NaN",
        "-Infinity",
        "-0",
        "1E2",
        '"\\ud800"',
        '"\\udfff\\ud800"',
    )
)
"""JSON (and not quite JSON) literals that decoders disagree about."""


edge_ids = st.sampled_from(
    (
        "i" * MAX_ID,
        "i" * (MAX_ID + 1),
        "i" * (MAX_ID - 1) + "\ud83d\ude00",  # a pair: one character in the log, kept
        "é" * (MAX_ID + 1),
        "\ud800" * MAX_ID,
    )
)
"""Call ids at the cap, one side or the other (as the log counts characters)."""
call_ids = st.just("") | wild_values | edge_ids
"""A call's id as an agent might send it."""


edge_names = st.sampled_from(
    (
        "x" * RAW_LIMIT,
        "x" * (RAW_LIMIT + 1),
        "get_profile" + " " * RAW_LIMIT,  # a tool's name, then past the cap: cut, no tool
        "é" * (RAW_LIMIT + 1),
        "\ud800" * RAW_LIMIT,
    )
)
"""Tool names at the log's cap, one side or the other."""


def _names(tools: tuple[Tool, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from([t.name for t in tools] + ["finish"]) | wild_values | edge_names


@st.composite
def wild_calls(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> ToolCall:
    """A call with any name, arguments and id; often a real tool with one wild argument."""
    if draw(st.booleans()):
        tool = draw(st.sampled_from(tools))
        arguments: Any = draw(well_formed_arguments(tool, pool))
        if arguments:
            arguments[draw(st.sampled_from(sorted(arguments)))] = draw(breakers | wild_values)
        else:
            arguments = draw(breakers | wild_values)
        return ToolCall(tool.name, arguments, draw(call_ids))
    return ToolCall(draw(_names(tools)), draw(wild_values), draw(call_ids))


@st.composite
def wild_actions(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> Any:
    """A typed action of any shape: wild messages and batches, half-good batches, non-actions."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return Say(draw(wild_values | wild_text | st.just("x" * (MAX_TEXT + 1))))
    if kind == 1:
        return CallBatch(draw(wild_values))
    if kind == 2:
        good = draw(st.lists(tool_calls(tools, pool), min_size=1, max_size=3))
        bad = draw(wild_calls(tools, pool) | wild_values)
        good.insert(draw(st.integers(0, len(good))), bad)
        return CallBatch(tuple(good))
    if kind == 3:
        return CallBatch((draw(tool_calls(tools, pool)),) * (MAX_CALLS + draw(st.integers(0, 1))))
    if kind == 4:
        return draw(wild_values | hostile_actions)
    return CallBatch(tuple(draw(st.lists(wild_calls(tools, pool), min_size=1, max_size=3))))


def wild_messages(tools: tuple[Tool, ...]) -> st.SearchStrategy[Any]:
    """Assistant messages of any JSON-like shape, values JSON cannot carry included."""
    arguments = (
        st.dictionaries(st.sampled_from(("day", "flight_id", "x")), breakers, min_size=1)
        | wild_values
        | wild_text
        | number_literals.map(lambda n: '{"day": ' + n + "}")
    )
    function = st.fixed_dictionaries({"name": _names(tools)}, optional={"arguments": arguments})
    entry = st.fixed_dictionaries({"function": function}, optional={"id": call_ids}) | wild_values
    return (
        st.fixed_dictionaries(
            {"role": st.just("assistant") | wild_values},
            optional={
                "content": wild_values | wild_text,
                "tool_calls": st.lists(entry, max_size=3) | wild_values,
            },
        )
        | wild_values
    )


def _literal_arguments(draw: st.DrawFn, tool: Tool, pool: Pool) -> str:
    """JSON text of well-formed arguments with one value replaced by a disputed literal."""
    arguments = draw(well_formed_arguments(tool, pool))
    parts = [
        f"{orjson.dumps(k).decode()}: {orjson.dumps(v).decode()}" for k, v in arguments.items()
    ]
    if parts:
        key = orjson.dumps(draw(st.sampled_from(sorted(arguments)))).decode()
        parts[[p.split(":")[0] for p in parts].index(key)] = f"{key}: {draw(number_literals)}"
    return "{" + ", ".join(parts) + "}"


@st.composite
def wild_texts(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> str:
    """Text: real calls with disputed number literals, deep brackets, wild messages, noise."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        tool = draw(st.sampled_from(tools))
        function = {"name": tool.name, "arguments": _literal_arguments(draw, tool, pool)}
        return orjson.dumps({"role": "assistant", "tool_calls": [{"function": function}]}).decode()
    if kind == 1:
        depth = draw(st.sampled_from((MAX_DEPTH, 1000, 1025, 3000)))
        return "[" * depth + draw(number_literals) + "]" * depth
    if kind == 2:
        return json_text(draw(wild_messages(tools)))
    return draw(wild_text)


def json_text(message: Any) -> str:
    """``message`` as the standard library writes it (big integers, NaN and lone surrogates
    included), or deep brackets where it cannot: too deep, or a HOSTILE value raises when
    read (RuntimeError) or, drawn as the whole message, passes for a ``str`` (TypeError)."""
    try:
        return json.dumps(message, ensure_ascii=False, default=repr)
    except (RecursionError, ValueError, RuntimeError, TypeError):
        return "[" * 3000


@st.composite
def wild_steps(draw: st.DrawFn, tools: tuple[Tool, ...], pool: Pool) -> Step:
    """One round of wild output through one of the three channels."""
    channel = draw(st.sampled_from(("typed", "message", "text")))
    if channel == "typed":
        return "typed", draw(wild_actions(tools, pool))
    if channel == "message":
        return "message", draw(wild_messages(tools))
    return "text", draw(wild_texts(tools, pool))
