"""Hypothesis strategies for stategym, in one place.

The central one is :func:`agent_steps`: what an agent might send in one round, through the
typed API, the OpenAI-message API or as raw text. It mixes well-formed calls whose arguments
reuse values the agent has seen (so some calls really change the world) with every kind of
bad output: malformed JSON arguments, unknown tools, wrong types, missing and unexpected
arguments, empty batches, bad messages and garbage text. Values are limited to what JSON can
carry (no NaN, integers within 64 bits), as an LLM's output always is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin, get_type_hints

import orjson
from hypothesis import strategies as st

from stategym.agents.style import Style
from stategym.knobs import Knobs
from stategym.protocol import CallBatch, Say, ToolCall, action_to_message
from stategym.tools import Param, Tool
from stategym.user import PRIORITY_PHRASES

Channel = Literal["typed", "message", "text"]
Step = tuple[Channel, Any]
"""One agent round: ``("typed", Action)``, ``("message", dict)`` or ``("text", str)``."""

knobs = st.builds(Knobs, st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans())

styles = st.builds(
    Style,
    **{
        name: st.sampled_from(get_args(hint))
        if get_origin(hint) is Literal
        else st.booleans()
        if hint is bool
        else st.integers(0, 3)
        for name, hint in get_type_hints(Style).items()
    },
)
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
    """One round of agent output through any of the three channels."""
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
