"""Hardening §1: agent objects are read once, as plain values, the same in every interface.

Regressions from an outside audit: a ``str`` subclass name that ran one tool and was logged as
another, hostile objects that made ``step`` raise, a message whose size or blankness depended
on the interface, and a compact reply nested deeply enough to exhaust the stack.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest

from stategym import CallBatch, Env, Say, ToolCall, calls
from stategym.kernel.boundary import MAX_MESSAGE
from stategym.kernel.protocol import MAX_DEPTH, MAX_TEXT
from stategym.kernel.trajectory import RoundKind, dumps, loads, replay
from stategym.rendering.compact import CompactRenderer
from strategies import (
    HOSTILE,
    Alias,
    GetRaises,
    HashRaises,
    IterRaises,
    LenRaises,
    UnreadableBatch,
    UnreadableCall,
    UnreadableSay,
)

FLIGHT = {"origin": "LHR", "destination": "YYZ", "day": 8}


def fresh() -> Env:
    env = Env("travel")
    env.reset(seed=0)
    return env


def check_logged(env: Env) -> None:
    """One round logged; the log reads back equal and replays to the same state (a rejected
    value is kept as text, which replays as another format error of the same round)."""
    assert len(env.rounds) == 1
    back = loads(dumps(env.trajectory))
    assert back == env.trajectory
    again = replay(back)
    assert bool(again.rounds[0].format_errors) == bool(env.rounds[0].format_errors)
    assert again.rounds[0].kind is env.rounds[0].kind
    assert again.state_key() == env.state_key()


class Sneaky(str):
    """Says ``search_flights`` but hashes and compares as nothing the tools are named."""

    def __hash__(self) -> int:
        return hash("xyz")

    def __eq__(self, other: object) -> bool:
        return False


def test_a_str_subclass_name_runs_and_logs_the_tool_its_text_names() -> None:
    env = fresh()
    result = env.step(calls(ToolCall(Alias("xyz"), FLIGHT)))  # hashes as search_flights
    assert result.info["format_errors"] == ("unknown_tool",)
    assert type(env.rounds[0].calls[0].name) is str and env.rounds[0].calls[0].name == "xyz"
    check_logged(env)
    env = fresh()
    assert env.step(calls(ToolCall(Sneaky("search_flights"), FLIGHT))).observation.results[0].ok
    check_logged(env)


def test_a_str_subclass_name_in_a_message_dict_is_its_text() -> None:
    env = fresh()
    function = {"name": Alias("xyz"), "arguments": json.dumps(FLIGHT)}
    _, _, _, _, info = env.step_message(
        {"role": "assistant", "tool_calls": [{"function": function}]}
    )
    assert info["format_errors"] == ("unknown_tool",)
    check_logged(env)


def test_str_subclass_ids_and_text_become_plain_str() -> None:
    env = fresh()
    env.step(calls(ToolCall("get_profile", {}, LenRaises("my-id"))))
    assert env.rounds[0].calls[0].id == "my-id" and type(env.rounds[0].calls[0].id) is str
    check_logged(env)
    env = fresh()
    env.step(Say(LenRaises("What is your budget?")))
    assert env.rounds[0].kind is RoundKind.SAY and type(env.rounds[0].say) is str
    check_logged(env)


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("where", ["name", "id", "arguments", "argument", "say"])
def test_hostile_objects_never_make_step_raise(value: Any, where: str) -> None:
    """Each becomes a plain value or a format error; the round is logged whole."""
    if where == "say":
        action: Any = Say(value)
    else:
        parts: dict[str, Any] = {"name": "get_profile", "arguments": {}, "id": ""}
        parts[where if where != "argument" else "arguments"] = (
            value if where != "argument" else {"a": value}
        )
        action = calls(ToolCall(parts["name"], parts["arguments"], parts["id"]))
    env = fresh()
    env.step(action)
    assert not env.world.charges
    check_logged(env)


@pytest.mark.parametrize(
    "action",
    [
        UnreadableSay("hi"),
        UnreadableBatch(()),
        CallBatch((UnreadableCall("get_profile"),)),
        CallBatch(GetRaises()),  # type: ignore[arg-type]
    ],
    ids=["say", "batch", "call", "mapping-calls"],
)
def test_an_action_whose_own_code_raises_is_a_bad_message_round(action: Any) -> None:
    env = fresh()
    result = env.step(action)
    assert result.info["format_errors"] == ("bad_message",)
    assert env.rounds[0].kind is RoundKind.INVALID
    check_logged(env)


def test_a_list_subclass_of_calls_is_read_as_the_plain_list() -> None:
    env = fresh()
    result = env.step(CallBatch(IterRaises([ToolCall("get_profile", {})])))  # type: ignore[arg-type]
    assert "format_errors" not in result.info and result.observation.results[0].ok
    check_logged(env)


def test_a_message_whose_own_code_raises_is_a_bad_message_round() -> None:
    class Message(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            raise RuntimeError("boom")

    env = fresh()
    _, _, _, _, info = env.step_message(Message(role="assistant", content="hi"))
    assert info["format_errors"] == ("bad_message",)
    check_logged(env)
    env = fresh()
    _, _, _, _, info = env.step_message(LenRaises('{"role": "assistant", "content": "hi"}'))
    assert "format_errors" not in info and env.rounds[0].say == "hi"
    check_logged(env)


def test_a_hash_that_raises_is_never_called() -> None:
    env = fresh()
    assert env.step(calls(ToolCall(HashRaises("get_profile"), {}))).observation.results[0].ok


def _three_ways(text: str) -> list[tuple[str, ...]]:
    """``format_errors`` of one message to the user sent typed, as a dict and as JSON text
    (surrogates as they are, and escaped: a lone one's escape reads as the lone one does)."""
    message = {"role": "assistant", "content": text}
    texts = [json.dumps(message, ensure_ascii=False), json.dumps(message)]
    return [
        fresh().step(Say(text)).info.get("format_errors", ()),
        fresh().step_message(message)[4].get("format_errors", ()),
        *(fresh().step_message(t)[4].get("format_errors", ()) for t in texts),
    ]


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        ("a" * (MAX_TEXT - 1) + "\ud83d\ude00", ()),  # MAX_TEXT characters once decoded
        ("a" * MAX_TEXT + "\ud83d\ude00", ("too_large",)),
        ("a" * (MAX_TEXT - 1) + "\ud800", ()),  # a lone surrogate is one character
        ("  ", ("empty_action",)),
        ("\n\t ", ("empty_action",)),
        ("", ("empty_action",)),
    ],
    ids=["pair-at-cap", "pair-over-cap", "lone-at-cap", "spaces", "white-space", "empty"],
)
def test_a_message_to_the_user_is_judged_alike_in_all_three_interfaces(
    text: str, errors: tuple[str, ...]
) -> None:
    ways = _three_ways(text)
    assert ways == [errors] * len(ways)


def test_a_blank_say_is_an_invalid_round_that_replays() -> None:
    env = fresh()
    env.step(Say("  "))
    assert env.rounds[0].kind is RoundKind.INVALID
    check_logged(env)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 1000, 1025, 5000])
def test_compact_parse_refuses_deep_nesting_without_recursing(depth: int) -> None:
    env = fresh()
    renderer = CompactRenderer(env.domain, env.knobs)
    line = "search_flights " + "[" * depth + "]" * depth
    action = renderer.parse(line)
    assert isinstance(action, CallBatch)
    assert action.calls[0].name == "search_flights" and isinstance(action.calls[0].arguments, str)
    errors = env.step(action).info["format_errors"]
    assert errors in (("too_large",), ("malformed_json",))
    check_logged(env)


def test_compact_parse_reads_nesting_within_the_cap() -> None:
    env = fresh()
    renderer = CompactRenderer(env.domain, env.knobs)
    value: Any = 0
    for _ in range(MAX_DEPTH - 1):
        value = [value]
    line = "search_flights " + orjson.dumps({"origin": value}).decode()
    action = renderer.parse(line)
    assert isinstance(action, CallBatch) and action.calls[0].arguments == {"origin": value}


# -- a third audit: what the log keeps of a rejected call is rejected again -------------------

_SEARCH = {"origin": "LHR", "destination": "YYZ", "day": 8}


class _ReadsBadThenGood(Mapping[str, Any]):
    """Arguments whose first reading holds a set (``bad_value``), every later one good data."""

    def __init__(self) -> None:
        self.reads = 0

    def __getitem__(self, key: str) -> Any:
        return _SEARCH[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_SEARCH)

    def __len__(self) -> int:
        return len(_SEARCH)

    def items(self) -> Any:
        self.reads += 1
        return {"origin": {1}}.items() if self.reads == 1 else _SEARCH.items()


@pytest.mark.parametrize("interface", ["typed", "message"])
def test_arguments_that_read_differently_later_are_logged_as_rejected(interface: str) -> None:
    """Before: the log kept the second reading's valid JSON for a call rejected on the
    first, so replay ran a search the episode never ran (its clock and state_key differed)."""
    env = Env("travel")
    env.reset(seed=0)
    arguments = _ReadsBadThenGood()
    if interface == "typed":
        env.step(calls(ToolCall("search_flights", arguments)))
    else:
        function = {"name": "search_flights", "arguments": arguments}
        env.step_message({"role": "assistant", "tool_calls": [{"id": "a", "function": function}]})
    (call,) = env.trajectory.rounds[0].calls
    assert call.error_kind == "bad_value"
    assert str(call.arguments).startswith("<")  # a description, never JSON
    again = replay(loads(dumps(env.trajectory)))
    assert again.trajectory.rounds[0].format_errors
    assert again.state_key() == env.state_key()


def test_the_message_cap_counts_a_surrogate_pair_as_one_character() -> None:
    """Before: MAX_MESSAGE counted the raw text, so the same message was accepted with real
    astral characters and too_large with their surrogate pairs (the other caps count cleaned
    text)."""
    pad = MAX_MESSAGE // 2 + 10
    kinds = []
    for character in ("\U0001f600", "\ud83d\ude00"):
        env = Env("travel")
        env.reset(seed=0)
        env.step_message('{"content":"hi","x":"' + character * pad + '"}')
        kinds.append(env.trajectory.rounds[0].kind)
    assert kinds[0] == kinds[1] == RoundKind.SAY
