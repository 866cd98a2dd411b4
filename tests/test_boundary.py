"""The boundary rule and whole-round checking: issue 10 section 1, one test per reproduction.

Each test drives the public API only and checks the three promises: ``step`` does not raise,
the world is untouched by a rejected round, and the trajectory is written, read back equal
and replays to the same state key.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import gymnasium
import orjson
import pytest

import stategym  # noqa: F401  (registers the Gymnasium ids)
from stategym import CallBatch, Env, Knobs, Say, ToolCall, call, calls
from stategym.agents import scripted
from stategym.gym import StateGymEnv, encode_messages
from stategym.kernel.boundary import clean_strings
from stategym.kernel.domain import Domain
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.protocol import (
    CUT,
    INT_RANGE,
    MAX_ARGUMENT_BYTES,
    MAX_CALLS,
    MAX_DEPTH,
    MAX_ID,
    MAX_MESSAGE,
    MAX_TEXT,
    RAW_LIMIT,
    action_to_message,
    decode_json,
    to_json,
)
from stategym.kernel.trajectory import dumps, loads, read_jsonl, replay, write_jsonl
from stategym.kernel.validation import MAX_REASON, NOT_RUN
from stategym.kernel.verify import verify
from stategym.metrics import score
from stategym.rollout import run_episode


def _nested(depth: int, leaf: Any = 0) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _check_log(env: Env, tmp_path: Path | None = None) -> None:
    """Written, read back equal (as one line and through a file), replayed to the same key."""
    trajectory = env.trajectory
    line = dumps(trajectory)
    assert loads(line) == trajectory and dumps(loads(line)) == line
    if tmp_path is not None:
        path = tmp_path / "log.jsonl"
        write_jsonl(path, [trajectory])
        assert list(read_jsonl(path)) == [trajectory]
    assert replay(trajectory).state_key() == env.state_key()


def _travel_after_search() -> tuple[Env, str]:
    """Travel seed 0 after a profile and a search round; returns the env and a fare's id."""
    env = Env("travel")
    env.reset(seed=0)
    env.step(calls(call("get_profile")))
    result = env.step(calls(call("search_flights", origin="LHR", destination="YYZ", day=8)))
    flights = result.observation.results[0].content
    return env, flights[-1]["flight_id"]


# -- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": (1, 2)}, {"a": [1, 2]}),
        ({"a": "x\ud800y"}, {"a": "x\ufffdy"}),
        ({"a": "\ud83d\ude00"}, {"a": "\U0001f600"}),  # a pair is the character it encodes
        ({"k\udfff": 1}, {"k\ufffd": 1}),
        ({"a": INT_RANGE[1], "b": INT_RANGE[0], "c": -0.0}, None),
        (_nested(MAX_DEPTH), None),
    ],
)
def test_the_rule_converts(value: Any, expected: Any) -> None:
    result = to_json(value)
    assert result == (value if expected is None else expected)
    assert orjson.loads(orjson.dumps(result)) == result


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ({"a": INT_RANGE[1] + 1}, "bad_value"),
        ({"a": INT_RANGE[0] - 1}, "bad_value"),
        ({"a": 2**64}, "bad_value"),
        ({"a": 10**5000}, "bad_value"),
        ({"a": math.nan}, "bad_value"),
        ({"a": -math.inf}, "bad_value"),
        ({"a": {1, 2}}, "bad_value"),
        ({"a": b"bytes"}, "bad_value"),
        ({1: "a"}, "bad_value"),
        ({None: "a"}, "bad_value"),
        ({"a": object()}, "bad_value"),
        (_nested(MAX_DEPTH + 1), "too_large"),
        (_nested(100_000), "too_large"),
        ({"a": "x" * MAX_ARGUMENT_BYTES}, "too_large"),
        ({"a": [0] * MAX_ARGUMENT_BYTES}, "too_large"),
        ({"a": [-1.2345678901234567e-300] * (MAX_ARGUMENT_BYTES // 10)}, "too_large"),
    ],
)
def test_the_rule_rejects(value: Any, kind: str) -> None:
    with pytest.raises(AgentFormatError) as caught:
        to_json(value)
    assert caught.value.kind == kind


def test_the_size_cap_is_on_compact_json_bytes() -> None:
    fits = {"a": "x" * (MAX_ARGUMENT_BYTES - len('{"a":""}'))}
    assert len(orjson.dumps(to_json(fits))) == MAX_ARGUMENT_BYTES
    with pytest.raises(AgentFormatError):
        to_json({"a": "é" * (MAX_ARGUMENT_BYTES // 2)})  # fewer characters, more bytes


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"a": 18446744073709551616}', "bad_value"),  # orjson alone reads it as a float
        ('{"a": -9223372036854775809}', "bad_value"),
        ('{"a": 1e400}', "malformed_json"),
        ('{"a": NaN}', "malformed_json"),
        ("[" * 2000 + "]" * 2000, "malformed_json"),
        ("[" * 40 + "]" * 40, "too_large"),
        ("[" * 1000 + '"1234567890123456789"' + "]" * 1000, "too_large"),
        (" " * (MAX_ARGUMENT_BYTES + 1), "too_large"),
    ],
)
def test_json_text_is_read_exactly_then_judged_by_the_rule(text: str, kind: str) -> None:
    with pytest.raises(AgentFormatError) as caught:
        decode_json(text, "arguments")
    assert caught.value.kind == kind


@pytest.mark.parametrize(
    "text",
    [
        '{"day": 8, "day": 9}',
        '{"t": "09:00", "x": {"a": 1, "a": 1}}',  # colons in strings: the slow reading
        '[{"a": 1}, {"b": "c:d", "b": 2}]',
        '{"\\u0061": 1, "a": 2}',  # one name, written two ways
        '{"a\\\\": 1, "a\\\\" : 2}',  # a name ending with an escaped backslash
        '{"c": "{\\"d\\": 1}", "c": 2}',  # a quote escaped inside a string
        '{"t:": "a:b", "t\\u003a": 1}',  # a colon in a name, once written as an escape
    ],
)
def test_json_text_that_names_a_member_twice_is_malformed(text: str) -> None:
    """Audit 17A F6: orjson kept the last value, so a call naming day 8 and day 9 ran as day
    9 (I-JSON forbids repeated names; the compact rendering's keywords refuse them too)."""
    with pytest.raises(AgentFormatError, match="twice in one object") as caught:
        decode_json(text, "arguments")
    assert caught.value.kind == "malformed_json"
    env = gymnasium.make("stategym/Travel-v0")
    env.reset(seed=0)
    call = {"id": "a", "function": {"name": "search_flights", "arguments": text}}
    message = {"role": "assistant", "tool_calls": [call]}
    *_, info = env.step(orjson.dumps(message).decode())
    assert info["format_errors"] == ("malformed_json",)
    twice = '{"role": "assistant", "content": "a", "content": "b"}'
    assert env.step(twice)[4]["format_errors"] == ("malformed_json",)


@pytest.mark.parametrize("depth", [300, 1000])
def test_a_repeated_name_deep_inside_nesting_is_refused_too(depth: int) -> None:
    """Audit 17C F3: past the standard library's recursion limit the check gave up, and the
    second of two tool names ran."""
    pad = "[" * depth + "]" * depth
    function = '{"name": "no_such_tool", "name": "list_accounts", "arguments": "{}"}'
    call = '{"id": "c", "type": "function", "function": ' + function + "}"
    text = '{"pad": ' + pad + ', "role": "assistant", "tool_calls": [' + call + "]}"
    with pytest.raises(AgentFormatError) as caught:
        decode_json(text, "the message", limit=len(text))
    assert caught.value.kind in ("too_large", "malformed_json")
    env = gymnasium.make("stategym/Bank-v0")
    env.reset(seed=1)
    observation, _, _, _, info = env.step(text)
    assert info["format_errors"] == (caught.value.kind,)
    assert "CA" not in observation  # list_accounts did not run


@pytest.mark.parametrize(
    "text",
    [
        '{"t": "09:00", "u": "a:b:c"}',
        '[{"a": 1}, {"a": 2}]',
        '{"a": {"a": {"a": 1}}}',
        '{"c": "{\\"d\\": 1, \\"d\\": 2}", "e\\\\": "x\\\\"}',  # repeats in strings
        '{"t:": "a\\u003ab", "u": {"v:w": ":"}}',  # colons in names and strings, escaped too
    ],
)
def test_json_text_with_each_name_once_per_object_reads(text: str) -> None:
    assert decode_json(text, "arguments") == orjson.loads(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": "\\ud800"}', {"a": "\ufffd"}),  # what json.dumps writes for a lone surrogate
        ('{"a": "x\\udc00y"}', {"a": "x\ufffdy"}),
        ('{"a": "\\udfff\\ud800"}', {"a": "\ufffd\ufffd"}),  # a low then a high: no pair
        ('{"a": "\\ud83d\\ude00\\ud800"}', {"a": "\U0001f600\ufffd"}),  # the pair is kept
        ('{"a": "\\\\ud800"}', {"a": "\\ud800"}),  # an escaped backslash, then text
        ('{"a": "\\ud800", "b": 18446744073709551615}', None),  # then the 64-bit rule
    ],
)
def test_a_lone_surrogate_escape_reads_as_the_rule_reads_a_lone_surrogate(
    text: str, value: dict[str, str] | None
) -> None:
    """Audit 15c F8: the JSON text ``json.dumps`` writes for a lone surrogate was refused
    whole (``malformed_json``) while the value it was written from played."""
    if value is None:
        with pytest.raises(AgentFormatError) as caught:
            decode_json(text, "arguments")
        assert caught.value.kind == "bad_value"
        return
    assert decode_json(text, "arguments") == value
    assert decode_json(text, "arguments") == to_json(json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "\\ud800"',  # still not closed
        '{"a": "\\ud800", "b": NaN}',  # still NaN
        "\\ud800",  # a backslash outside a string
        '{"a": "\\ud80"}',  # not an escape
    ],
)
def test_text_with_a_lone_surrogate_escape_is_refused_for_its_other_faults(text: str) -> None:
    with pytest.raises(AgentFormatError) as caught:
        decode_json(text, "arguments")
    assert caught.value.kind == "malformed_json"


def test_a_message_and_its_json_dumps_text_play_alike_with_lone_surrogates() -> None:
    """Audit 15c F8, through the message interface (Gymnasium, verifiers, OpenEnv's text
    arguments): a message as a dict and as ``json.dumps`` text log the same round, and so do
    arguments as a mapping and as ``json.dumps`` text."""
    say = {"role": "assistant", "content": "What is your budget?\ud800"}
    function = {"name": "get_city_events", "arguments": {"airport": "BER\ud800"}}
    call = {"role": "assistant", "tool_calls": [{"id": "a", "function": function}]}
    text_function = {**function, "arguments": json.dumps(function["arguments"])}
    text_call = {"role": "assistant", "tool_calls": [{"id": "a", "function": text_function}]}
    for ways in ([say], [call, text_call]):
        played = []
        for message in ways:
            for sent in (message, json.dumps(message), json.dumps(message, ensure_ascii=False)):
                env = Env("travel")
                env.reset(seed=1)
                *_, info = env.step_message(sent)
                assert "format_errors" not in info, info
                played.append(dumps(env.trajectory))
        assert len(set(played)) == 1


def test_json_text_keeps_integers_exact() -> None:
    assert decode_json('{"a": 9223372036854775807, "b": "1234567890123456789012"}', "x") == {
        "a": 2**63 - 1,
        "b": "1234567890123456789012",
    }


# -- issue 10, section 1: each reproduction ---------------------------------------------------


@pytest.mark.parametrize("name", [["x"], {"a": 1}, None, 3, _nested(10_000), "x" * 100_000])
def test_a_tool_name_that_is_not_a_tool_is_unknown(name: Any) -> None:
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(CallBatch((ToolCall(name, {}),)))
    assert result.info["format_errors"] == ("unknown_tool",)
    (record,) = env.rounds[-1].calls
    assert isinstance(record.name, str) and len(record.name) <= RAW_LIMIT + 1
    assert result.observation.to_messages()
    _check_log(env)


@pytest.mark.parametrize(
    "batch", [(None,), "get_profile", ("get_profile",), (call("get_profile"), 3), {"a": 1}, None]
)
def test_a_batch_of_other_things_than_tool_calls_is_a_bad_message(batch: Any) -> None:
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(CallBatch(batch))
    assert result.info["format_errors"] == ("bad_message",)
    assert env.rounds[-1].kind == "invalid" and result.observation.error
    _check_log(env)


@pytest.mark.parametrize("arguments", [_nested(100_000), {"a": _nested(100_000)}])
def test_deeply_nested_arguments_are_too_large(arguments: Any) -> None:
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(calls(ToolCall("get_profile", arguments)))
    assert result.info["format_errors"] == ("too_large",)
    assert len(env.rounds[-1].calls[0].arguments) < 2 * RAW_LIMIT
    _check_log(env)


def test_a_deeply_nested_message_is_kept_bounded() -> None:
    env = Env("travel")
    env.reset(seed=0)
    messages, _, _, _, info = env.step_message({"role": "assistant", "content": _nested(100_000)})
    assert info["format_errors"] == ("bad_message",)  # content that is no text parts
    assert messages and len(env.rounds[-1].raw) <= RAW_LIMIT + 1
    _check_log(env)


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"traveler": {1, 2}}, "bad_value"),
        ({"x": 2**64}, "bad_value"),
        ({"x": math.nan}, "bad_value"),
        ({"x": _nested(300)}, "too_large"),
        ({"x\ud800": 1}, "unexpected_argument"),
        ([1, 2], "malformed_json"),
        ({1, 2}, "malformed_json"),
        (_nested(300), "malformed_json"),
    ],
)
def test_message_dicts_with_values_json_cannot_carry(arguments: Any, kind: str) -> None:
    """protocol.action_from_message used to raise in orjson.dumps on every one of these."""
    env = Env("travel")
    env.reset(seed=0)
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "a", "function": {"name": "get_profile", "arguments": arguments}}],
    }
    messages, _, _, _, info = env.step_message(message)
    assert info["format_errors"] == (kind,)
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["a"]
    _check_log(env)


@pytest.mark.parametrize(
    ("day", "kind"),
    [("1e20", "wrong_type"), ("18446744073709551616", "bad_value"), ("-1e300", "wrong_type")],
)
def test_a_huge_day_from_plain_json_text_is_a_format_error(day: str, kind: str) -> None:
    """Gymnasium, meetings seed 0: ``day=1e20`` was narrowed to a 67-bit integer that the
    tool echoed back, and ToolResult.to_message raised (after the round was logged)."""
    env = gymnasium.make("stategym/Meetings-v0")
    env.reset(seed=0)
    arguments = '{"person_id": "P7296", "day": ' + day + "}"
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "a", "function": {"name": "get_calendar", "arguments": arguments}}],
    }
    observation, _, _, _, info = env.step(orjson.dumps(message).decode())
    assert info["format_errors"] == (kind,)
    assert observation in env.observation_space
    core = env.unwrapped.core  # type: ignore[attr-defined]
    _check_log(core)


@pytest.mark.parametrize("day", ["1e20", "18446744073709551616"])
def test_a_huge_day_in_search_flights_leaves_the_log_writable(day: str, tmp_path: Path) -> None:
    env = Env("travel")
    env.reset(seed=0)
    arguments = '{"origin": "LHR", "destination": "YYZ", "day": ' + day + "}"
    env.step_message(
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "search_flights", "arguments": arguments}}],
        }
    )
    assert env.rounds[-1].format_errors
    _check_log(env, tmp_path)


def test_encode_messages_escapes_lone_surrogates() -> None:
    messages = [{"role": "tool", "tool_call_id": "\ud800", "content": "x\udfffy"}]
    text = encode_messages(messages)
    assert text.isascii() and json.loads(text) == messages


def test_lone_surrogates_in_ids_and_text_are_replaced() -> None:
    env = StateGymEnv("travel")
    env.reset(seed=0)
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "id\ud800", "function": {"name": "get_profile", "arguments": "{}"}}],
    }
    observation, *_ = env.step(message)
    assert observation in env.observation_space
    assert orjson.loads(observation)[0]["tool_call_id"] == "id\ufffd"
    observation, *_ = env.step({"role": "assistant", "content": "What is my budget\udc00?"})
    assert observation in env.observation_space
    assert env.core.rounds[-1].say == "What is my budget\ufffd?"
    observation, *_ = env.step('{"role": "assistant", "content": "hi \ud800"}')
    assert env.core.rounds[-1].say == "hi \ufffd"
    _check_log(env.core)


def test_a_round_with_one_malformed_call_runs_none_of_them() -> None:
    """Travel seed 0: hold a fare, pay for the hold, and a malformed third call. The round
    used to charge the fare and book it, then raise, and log nothing."""
    env, flight = _travel_after_search()
    snapshot = env.snapshot()
    held = env.step(calls(call("hold_fare", flight_id=flight))).observation.results[0].content
    env.restore(snapshot)
    key, accounts, clock = env.state_key(), dict(env.world.accounts), env.world.clock
    batch = calls(
        call("hold_fare", flight_id=flight),
        call("book_and_pay", hold_id=held["hold_id"]),
        ToolCall(["x"], {}),  # type: ignore[arg-type]
    )
    result = env.step(batch)
    assert result.info["format_errors"] == ("unknown_tool",)
    assert env.world.accounts == accounts and not env.world.charges and not env.commitments()
    assert env.world.clock == clock + 1
    records = env.rounds[-1].calls
    assert [r.error_kind for r in records] == [NOT_RUN, NOT_RUN, "unknown_tool"]
    assert all(r.content is None and r.effect is None for r in records)
    assert "call 2" in (records[0].error or "")
    assert [r.call_id for r in result.observation.results] == [r.id for r in records]
    assert len(env.rounds) == 3 and env.state_key() != key  # logged; only the clock moved
    _check_log(env)
    env.step(calls(call("finish")))
    outcome = env.outcome()
    assert outcome.spent == 0 and outcome.committed == ()
    card = score(env.trajectory, env.task)
    assert (card.outcome.spent, card.outcome.rounds) == (0, 4)


def test_a_round_of_well_formed_calls_still_runs_whole() -> None:
    env, flight = _travel_after_search()
    snapshot = env.snapshot()
    held = env.step(calls(call("hold_fare", flight_id=flight))).observation.results[0].content
    env.restore(snapshot)
    result = env.step(
        calls(call("hold_fare", flight_id=flight), call("book_and_pay", hold_id=held["hold_id"]))
    )
    assert "format_errors" not in result.info and env.world.charges and env.commitments()
    _check_log(env)


def test_finish_in_a_rejected_round_does_not_end_the_episode() -> None:
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(calls(call("finish"), call("get_profile", zzz=1)))
    assert result.info["format_errors"] == ("unexpected_argument",) and not env.done
    assert env.rounds[-1].calls[0].error_kind == NOT_RUN
    _check_log(env)


# -- caps -------------------------------------------------------------------------------------


def test_a_round_with_too_many_calls_is_rejected_before_any_is_read() -> None:
    env = Env("travel")
    env.reset(seed=0)
    huge = CallBatch(tuple(call("get_profile") for _ in range(100_000)))
    assert env.step(huge).info["format_errors"] == ("too_large",)
    assert env.rounds[-1].kind == "invalid" and env.rounds[-1].calls == ()
    message = action_to_message(huge)
    assert env.step_message(message)[4]["format_errors"] == ("too_large",)
    text = orjson.dumps(message).decode()
    assert len(text) > MAX_MESSAGE
    assert env.step_message(text)[4]["format_errors"] == ("too_large",)
    assert len(env.rounds[-1].raw) <= RAW_LIMIT + 1 and env.rounds[-1].raw.endswith(CUT)
    _check_log(env)


def test_the_call_cap_is_inclusive() -> None:
    env = Env("travel")
    env.reset(seed=0)
    assert "format_errors" not in env.step(CallBatch((call("get_profile"),) * MAX_CALLS)).info
    too_many = CallBatch((call("get_profile"),) * (MAX_CALLS + 1))
    assert env.step(too_many).info["format_errors"] == ("too_large",)


def test_long_messages_and_ids_are_capped() -> None:
    env = Env("travel")
    env.reset(seed=0)
    assert env.step(Say("x" * (MAX_TEXT + 1))).info["format_errors"] == ("too_large",)
    long_id = "i" * (MAX_ID + 1)
    result = env.step(
        CallBatch((ToolCall("get_profile", {}, long_id), ToolCall("get_profile", {}, 7)))
    )  # type: ignore[arg-type]
    assert [r.call_id for r in result.observation.results] == ["c1_0", "c1_1"]
    _check_log(env)


def test_cut_argument_text_never_replays_as_a_readable_call() -> None:
    """Text kept cut in the log ends in CUT, so replay rejects it again (here the text is
    valid JSON padded past the cap, which a plain cut would have made readable)."""
    env = Env("travel")
    env.reset(seed=0)
    padded = "{}" + " " * MAX_ARGUMENT_BYTES
    result = env.step(calls(ToolCall("get_profile", padded), call("get_travel_policy")))
    assert result.info["format_errors"] == ("too_large",)
    kept = env.rounds[-1].calls[0].arguments
    assert isinstance(kept, str) and kept.endswith(CUT) and len(kept) == RAW_LIMIT + 1
    _check_log(env)


def test_tool_results_of_extreme_integers_stay_json(domain: Domain) -> None:
    """Integers at the edges of the range reach every tool the expert calls with a number,
    with the expert's real ids beside them, and what the tools return is still JSON the log
    keeps (no tool computes a value out of the range from them)."""
    env = Env(domain, knobs=Knobs(dynamics=False))
    trajectory = run_episode(env, scripted(domain, "expert"), 0)
    env.reset(seed=0)
    tried = 0
    for record in trajectory.rounds:
        for extreme in (INT_RANGE[1], INT_RANGE[0], 1e300):
            edited = [
                ToolCall(c.name, {k: _extreme(v, extreme) for k, v in c.arguments.items()})
                for c in record.calls
                if isinstance(c.arguments, dict) and any(_number(v) for v in c.arguments.values())
            ]
            if not edited:
                break
            tried += 1
            snapshot = env.snapshot()
            result = env.step(CallBatch(tuple(edited)))
            assert all(isinstance(m["content"], str) for m in result.observation.to_messages())
            _check_log(env)
            env.restore(snapshot)
        env.step(record.action())
    if not tried:
        pytest.skip(f"{domain.name}'s expert passes no numbers")


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _extreme(value: Any, extreme: float) -> Any:
    return extreme if _number(value) else value


def test_a_tool_error_quoting_a_long_argument_is_told_cut() -> None:
    """Audit 17B F6: a tool error quoted its 16 KB argument whole, so 64 such calls sent
    1 MB back to the model each round and into the log."""
    env = Env("meetings")
    env.reset(seed=0)
    long_id, short_id = "x" * 16_000, "nobody"
    result = env.step(
        calls(call("lookup_person", person_id=long_id), call("lookup_person", person_id=short_id))
    )
    long, short = result.observation.results
    assert long.error_kind == short.error_kind == "tool"
    assert long.error is not None and len(long.error) == MAX_REASON + 1
    assert long.error.endswith(CUT) and long.error[:-1] in f"no person {long_id!r}"
    assert short.error is not None and short_id in short.error and not short.error.endswith(CUT)
    assert verify(env.trajectory) == []


def test_clean_strings_cleans_every_string_as_deep_as_asked() -> None:
    """A chat message's text made valid UTF-8 as the log keeps it (a Python backend's reply,
    read by ``ChatAgent``): every string and key, a lone surrogate as U+FFFD and a pair as
    the character it encodes; deeper than ``levels`` asks, a container is kept as it is."""
    inner = ["\ud800"]
    value = {"a\ud800": ["\ud83d\ude00", {"k": inner}, 3, None], "n": 2.5}
    assert clean_strings(value) == {"a\ufffd": ["\U0001f600", {"k": ["\ufffd"]}, 3, None], "n": 2.5}
    three_levels = clean_strings(value, 3)["a\ufffd"]  # the dict, the list, the inner dict
    assert three_levels[0] == "\U0001f600" and three_levels[1]["k"] is inner
    assert clean_strings(value, 4)["a\ufffd"][1]["k"] == ["\ufffd"]
    assert clean_strings({1: "\ud800", None: ("\ud800",)}) == {1: "\ufffd", None: ("\ud800",)}
    deep = _nested(100_000, "\ud800")
    walked, kept = clean_strings(deep, MAX_DEPTH), deep  # no RecursionError with a bound
    for _ in range(MAX_DEPTH):
        assert walked is not kept and len(walked) == 1
        walked, kept = walked[0], kept[0]
    assert walked is kept  # below the bound: the value as it was
    with pytest.raises(RecursionError):
        clean_strings(_nested(100_000, "\ud800"))
