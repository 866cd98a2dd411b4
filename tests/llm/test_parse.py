"""Reading tool calls from generated text."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym.env import Env
from stategym.llm.parse import REPAIRED, UNCLOSED, ParsedCall, parse
from stategym.protocol import CallBatch, Say, action_from_message


def test_hermes_calls_and_narration() -> None:
    text = (
        'Let me look. <tool_call>{"name": "get_profile", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "search_flights", "arguments": {"day": 9}}</tool_call>'
    )
    parsed = parse(text)
    assert parsed.content == "Let me look."
    assert parsed.calls == (
        ParsedCall("get_profile", "{}"),
        ParsedCall("search_flights", '{"day":9}'),
    )
    assert parsed.errors == ()


def test_plain_text_is_a_message() -> None:
    assert parse("  What is your budget?  ").content == "What is your budget?"
    assert parse("What is your budget?").calls == ()


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_profile", "arguments": {}}',
        '```json\n{"name": "get_profile", "arguments": {}}\n```',
        '[{"name": "get_profile", "parameters": {}}]',
        '{"type": "function", "function": {"name": "get_profile", "arguments": "{}"}}',
    ],
)
def test_plain_json_calls(text: str) -> None:
    assert parse(text).calls == (ParsedCall("get_profile", "{}"),)


def test_json_that_is_not_a_call_is_a_message() -> None:
    assert parse('{"budget": 500}').calls == ()
    assert parse('{"budget": 500}').content == '{"budget": 500}'


def test_tolerated_malformations_are_counted() -> None:
    unclosed = parse('<tool_call>{"name": "get_profile", "arguments": {}}')
    assert unclosed.calls == (ParsedCall("get_profile", "{}"),) and unclosed.errors == (UNCLOSED,)
    python = parse(
        "<tool_call>{'name': 'hold_fare', 'arguments': {'flight_id': 'X1',}}</tool_call>"
    )
    assert python.calls == (ParsedCall("hold_fare", '{"flight_id":"X1"}'),)
    assert python.errors == (REPAIRED,)


def test_broken_arguments_reach_the_environment_raw() -> None:
    parsed = parse(
        '<tool_call>{"name": "get_city_events", "arguments": {"airport": "HN</tool_call>'
    )
    (call,) = parsed.calls
    assert call.name == "get_city_events" and call.arguments == '{"airport": "HN'
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(action_from_message(parsed.to_message()))
    assert tuple(result.info["format_errors"]) == ("malformed_json",)


def test_garbage_inside_tags_is_an_unknown_tool() -> None:
    (call,) = parse("<tool_call>nonsense</tool_call>").calls
    assert call.name == ""


def test_thinking_is_dropped() -> None:
    assert parse("<think>the user wants...</think>Which day?").content == "Which day?"


def test_to_message_maps_to_actions() -> None:
    calls = parse(
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
    ).to_message("call_3")
    action = action_from_message(calls)
    assert isinstance(action, CallBatch) and [c.id for c in action.calls] == [
        "call_3_0",
        "call_3_1",
    ]
    assert isinstance(action_from_message(parse("Hello").to_message()), Say)


@given(st.text(max_size=300))
def test_parse_never_raises_and_the_env_never_crashes(text: str) -> None:
    parsed = parse(text)
    for call in parsed.calls:
        assert isinstance(call.name, str) and isinstance(call.arguments, str)
    env = Env("travel")
    env.reset(seed=1)
    env.step_message(parsed.to_message())


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.integers(), st.text(max_size=8), st.booleans()),
        max_size=4,
    )
)
def test_well_formed_calls_round_trip(arguments: dict[str, object]) -> None:
    body = orjson.dumps({"name": "hold_fare", "arguments": arguments}).decode()
    (call,) = parse(f"<tool_call>{body}</tool_call>").calls
    assert call.name == "hold_fare" and orjson.loads(call.arguments) == arguments
