"""Reading tool calls from generated text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym.kernel.boundary import MAX_CALLS
from stategym.kernel.env import Env
from stategym.kernel.protocol import CallBatch, Say, action_from_message
from stategym.kernel.trajectory import dumps, loads
from stategym.llm import parse as parse_module
from stategym.llm.parse import (
    REPAIR_LIMIT,
    REPAIRED,
    UNCLOSED,
    UNCLOSED_THINK,
    Parsed,
    ParsedCall,
    parse,
)


def parse_message(call: ParsedCall) -> dict[str, Any]:
    return Parsed(None, (call,)).to_message()


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


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "search_flights" "arguments": {"origin": "LHR", "day": 9}}',
        '{"name": "search_flights", "id": , "arguments": {"origin": "LHR", "day": 9}}',
        "{'name': 'search_flights' 'arguments': {\"origin\": \"LHR\", \"day\": 9}}",
    ],
)
def test_a_call_read_out_of_broken_json_is_counted(body: str) -> None:
    """Audit 17A F4: a missing comma around readable arguments ran with no format error."""
    parsed = parse(f"<tool_call>{body}</tool_call>")
    assert parsed.calls == (ParsedCall("search_flights", '{"origin": "LHR", "day": 9}'),)
    assert parsed.errors == (REPAIRED,)


def test_a_name_inside_the_arguments_is_no_call_name() -> None:
    parsed = parse(
        '<tool_call>{"name" "send_transfer", "arguments": '
        '{"name": "verify_payee", "iban": "GB00"}}</tool_call>'
    )
    (call,) = parsed.calls
    assert call.name == "" and parsed.errors == ()


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "search_flights", "arguments": {"day": 8, "day": 9}}',
        "{'name': 'search_flights', 'arguments': {'day': 8, 'day': 9}}",
        '{"name": "get_profile", "name": "search_flights", "arguments": {}}',
        "{'name': 'search_flights', 'arguments': {-1: 8, -1: 9},}",
    ],
)
def test_a_call_that_names_a_member_twice_runs_nothing(body: str) -> None:
    """Audit 17A F6: the last of two values (or of two tool names) ran, uncounted."""
    env = Env("travel")
    env.reset(seed=0)
    parsed = parse(f"<tool_call>{body}</tool_call>")
    result = env.step(action_from_message(parsed.to_message()))
    assert REPAIRED not in parsed.errors
    assert result.info["format_errors"] in (("malformed_json",), ("unknown_tool",))
    assert all(r.content is None for r in result.observation.results)


def test_a_reply_of_more_calls_than_a_round_takes_is_read_no_further() -> None:
    """Audit 17B F4: a 1 MB reply was read whole, ~95,000 calls, though the environment
    refuses a round of more than MAX_CALLS."""
    call = '<tool_call>{"name": "get_profile", "arguments": {}}</tool_call>'
    assert len(parse(call * 1000).calls) == MAX_CALLS + 1
    bare = "[" + ", ".join(['{"name": "get_profile", "arguments": {}}'] * 1000) + "]"
    assert len(parse(bare).calls) == MAX_CALLS + 1
    env = Env("travel")
    env.reset(seed=0)
    *_, info = env.step_message(parse(call * 1000).to_message())
    assert info["format_errors"] == ("too_large",)


def test_only_text_within_the_repair_limit_is_repaired() -> None:
    """Audit 17B F4: repairing 1 MB (a trailing comma) took 1.5 s and 500 MB."""
    items = ", ".join(["1"] * (REPAIR_LIMIT // 3))
    long = '<tool_call>{"name": "get_profile", "arguments": {"a": [' + items + ",]}}</tool_call>"
    parsed = parse(long)
    (call,) = parsed.calls
    assert call.name == "get_profile" and REPAIRED not in parsed.errors
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(action_from_message(parsed.to_message()))
    assert result.info["format_errors"] == ("too_large",)
    short = '<tool_call>{"name": "get_profile", "arguments": {"a": [1, 2,]}}</tool_call>'
    assert parse(short).errors == (REPAIRED,)


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
    """Any JSON text, integers of any size included, is read exactly (issue 8: orjson, used
    to write the body and to read it, cannot hold integers beyond 64 bits; the standard
    library can, so it writes the body and checks the result)."""
    body = json.dumps({"name": "hold_fare", "arguments": arguments})
    (call,) = parse(f"<tool_call>{body}</tool_call>").calls
    assert call.name == "hold_fare" and json.loads(call.arguments) == arguments


@pytest.mark.parametrize(
    ("number", "kind"),
    [
        ("-9223372036854775809", "bad_value"),
        ("18446744073709551616", "bad_value"),
        ("9223372036854775808", "bad_value"),
        ("1" * 25, "bad_value"),
        ("1" * 400, "malformed_json"),  # beyond a double: orjson refuses the text
        ("9223372036854775807", "tool"),
        ("1e20", "wrong_type"),
    ],
)
def test_integers_beyond_64_bits_reach_the_environment_exactly(number: str, kind: str) -> None:
    """orjson alone read 18446744073709551616 as a float (and the environment then took it
    for a whole number); the boundary rule rejects it as a value JSON logs cannot keep."""
    (call,) = parse(
        f'<tool_call>{{"name": "get_calendar", "arguments": '
        f'{{"person_id": "P1", "day": {number}}}}}</tool_call>'
    ).calls
    assert json.loads(call.arguments)["day"] == json.loads(number)
    env = Env("meetings")
    env.reset(seed=0)
    result = env.step(action_from_message(parse_message(call)))
    (record,) = env.rounds[-1].calls
    assert record.error_kind == kind, record.error
    assert result.observation.to_messages() and loads(dumps(env.trajectory)) == env.trajectory


@pytest.mark.parametrize("depth", [990, 1000, 1010, 1200])
@pytest.mark.parametrize("tagged", [True, False], ids=["tagged", "bare"])
def test_arguments_nested_past_the_recursion_limit_stop_the_round(depth: int, tagged: bool) -> None:
    """Arguments that decode but cannot be written back as JSON (nested about 1,000 deep)
    once became no text, which reads as no arguments: the call ran, and so did the calls
    beside it. They reach the environment as written, which refuses the round whole."""
    deep = '{"name": "get_profile", "arguments": {"a": ' + "[" * depth + "]" * depth + "}}"
    policy = '{"name": "get_travel_policy", "arguments": {}}'
    text = f"<tool_call>{deep}</tool_call><tool_call>{policy}</tool_call>" if tagged else deep
    env = Env("travel")
    env.reset(seed=1)
    env.step_message(parse(text).to_message())
    (record,) = env.rounds
    if tagged or depth < 1100:  # deeper, the bare JSON does not decode: a message to the user
        # too deep for the environment's limit, or (past ~1,024) for its JSON reader
        assert record.format_errors in {("too_large",), ("malformed_json",)}
        assert all(call.error is not None for call in record.calls)  # nothing ran


_RUN = 16_000
"""A whitespace run as long as a round's text may be (``MAX_TEXT``, 16,384 characters)."""

_BACKTRACKING_REPLIES = {
    "unclosed fence, spaces": "```json\n" + " " * _RUN + "x",
    "unclosed fence, newlines": "```\n" + "\n" * _RUN + "x",
    "unclosed fence, both in turn": "```" + " \n" * (_RUN // 2) + "x",
    "fence inside a call": "<tool_call>```" + " " * _RUN + "x</tool_call>",
    "arguments then spaces": '<tool_call>{"name": "get_profile", "arguments": x'
    + " " * _RUN
    + "x</tool_call>",
    "a valid call, spaces in a string": '<tool_call>{"name": "get_profile", "arguments": '
    + '{"a": "x'
    + " " * _RUN
    + 'x"}}</tool_call>',
}


def test_a_long_whitespace_run_is_parsed_at_once() -> None:
    """Audit 10A F1: the fence and the arguments were cut by regular expressions with a lazy
    group between whitespace runs, which backtrack cubically (an unclosed fence before 4,000
    spaces took 55 s; 16,000, about an hour; a valid call whose string argument holds a run
    was as slow). A degenerate reply stalled the event loop every episode shares.

    Not a timing assert: the replies are parsed in a child process that is given 60 s, a
    bound 60 times looser than the old code at its quickest here and thousands of times
    looser than the new (milliseconds); the child is killed past it. Python's ``re`` counts
    no steps, so this is the only way to catch the class without waiting for it."""
    script = (
        "import json, sys\n"
        "from stategym.llm.parse import parse\n"
        "for text in json.load(sys.stdin).values():\n"
        "    parse(text)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(_BACKTRACKING_REPLIES),
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_long_replies_read_as_before() -> None:
    """The same replies read as the regular expressions read them (shorter runs)."""
    assert parse("```json\n" + " " * 50 + "x").content == "```json\n" + " " * 50 + "x"
    assert parse('```json\n  {"name": "a", "arguments": {}}  \n```').calls == (
        ParsedCall("a", "{}"),
    )
    (call,) = parse('<tool_call>{"name": "a", "arguments": x' + " " * 50 + "x</tool_call>").calls
    assert call == ParsedCall("a", "x" + " " * 50 + "x")


_OLD_FENCE = re.compile(r"^```(?:json|tool_call)?\s*(.*?)\s*```$", re.DOTALL)
_OLD_ARGUMENTS = re.compile(
    r"""["'](?:arguments|parameters)["']\s*:\s*(.*?)\s*\}?\s*$""", re.DOTALL
)
_PIECES = ["```", "`", "json", "tool_call", " ", "\n", "\u3000", "x", "}", '"arguments"', ":", "'"]


@given(st.lists(st.sampled_from(_PIECES), max_size=10).map("".join))
def test_fences_and_arguments_are_cut_as_the_old_expressions_cut_them(text: str) -> None:
    """The hand-written cuts give what the backtracking expressions gave (short texts, where
    they are quick), on texts made of the pieces they turn on."""
    stripped = text.strip()
    fence = _OLD_FENCE.match(stripped)
    assert parse_module._unfence(stripped) == (fence.group(1) if fence else stripped)
    arguments = _OLD_ARGUMENTS.search(text)
    assert parse_module._raw_arguments(text) == (arguments.group(1).strip() if arguments else text)


PROFILE_CALL = '<tool_call>{"name": "get_profile", "arguments": {}}</tool_call>'


def test_an_unclosed_think_takes_the_calls_after_it_and_is_counted() -> None:
    assert parse(f" <think>maybe {PROFILE_CALL}") == Parsed(None, (), (UNCLOSED_THINK,))


def test_reasoning_opened_by_the_prompt_is_dropped() -> None:
    parsed = parse(f"the user wants a flight</think>{PROFILE_CALL}")
    assert parsed == Parsed(None, (ParsedCall("get_profile", "{}"),))
    assert parse("plan</think>Which day?").content == "Which day?"


@pytest.mark.parametrize("marker", ["<think>", "</think>"])
@pytest.mark.parametrize("form", ["<tool_call>{}</tool_call>", "{}", "```json\n{}\n```"])
def test_reasoning_markers_inside_a_call_are_its_arguments(marker: str, form: str) -> None:
    """Reasoning is the reply's start: a marker inside a call's arguments is text. Before, a
    ``<think>`` anywhere cut the reply from there on (Hypothesis drew ``{"<think>": 0}``)."""
    arguments = json.dumps({marker: 0, "text": f"a {marker} b"})
    body = json.dumps({"name": "hold_fare", "arguments": json.loads(arguments)})
    (call,) = parse(form.format(body)).calls
    assert call.name == "hold_fare" and json.loads(call.arguments) == json.loads(arguments)
