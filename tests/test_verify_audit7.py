"""Audit 7, F4: verify() reported honest trajectories as not replaying.

A call rejected at the boundary was logged as a stand-in ("<...>" or text cut with "…") that
replay rejected differently (``malformed_json``), and a call whose tool name is not a string
was logged with its arguments undecoded while replay decoded them. The rule now: the log keeps
each call as the environment saw it, and a rejected argument is seen, and kept, as its
rejection text (``<rejected KIND: REASON>`` then what was sent, cut), which every interface
rejects as it states. So ``verify`` of any honest log, written and read back, is empty, and
an edited rejection is still caught.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stategym import CallBatch, Env, ToolCall, call, calls
from stategym.kernel import validation
from stategym.kernel.boundary import MAX_ARGUMENT_BYTES, RAW_LIMIT
from stategym.kernel.trajectory import Trajectory, dumps, loads, read_jsonl, replay, write_jsonl
from stategym.kernel.verify import verify
from stategym.registry import all_domains
from strategies import Pool, agent_steps, breakers, wild_steps

DOMAIN_NAMES = sorted(all_domains())
THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def _a_few_dozen(test: Any) -> Any:
    """30 examples per domain (a few seconds in all); under ``HYPOTHESIS_PROFILE=thorough``,
    the profile's own count."""
    return test if THOROUGH else settings(max_examples=30)(test)


def _written_and_read(trajectory: Trajectory) -> Trajectory:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        write_jsonl(path, [trajectory])
        (back,) = read_jsonl(path)
    assert back == trajectory
    return back


def _checked(env: Env) -> Trajectory:
    """The episode so far, written and read back: it replays to its digest and verifies."""
    back = _written_and_read(env.stopped_trajectory())
    assert replay(back).state_key() == back.digest
    assert verify(back) == []
    return back


def _message(name: Any, arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "tool_calls": [{"id": "a", "type": "function", "function": function}],
    }


# -- the audit's reproductions ---------------------------------------------------------------

LONG_TEXT = json.dumps({"airport": "A" * 20_000})
REJECTED: dict[str, tuple[Callable[[Env], Any], tuple[str, ...]]] = {
    "typed set": (
        lambda env: env.step(CallBatch((ToolCall("get_city_events", {"airport": {1, 2}}),))),
        ("bad_value",),
    ),
    "typed nan": (
        lambda env: env.step(calls(call("get_city_events", airport=float("nan")))),
        ("bad_value",),
    ),
    "typed inf": (
        lambda env: env.step(calls(call("get_city_events", airport=float("inf")))),
        ("bad_value",),
    ),
    "typed 2**64": (
        lambda env: env.step(calls(call("get_city_events", airport=2**64))),
        ("bad_value",),
    ),
    "typed bytes": (
        lambda env: env.step(calls(call("get_city_events", airport=b"LHR"))),  # type: ignore[arg-type]
        ("bad_value",),
    ),
    "typed int key": (
        lambda env: env.step(CallBatch((ToolCall("get_profile", {1: "x"}),))),  # type: ignore[dict-item]
        ("bad_value",),
    ),
    "typed good+bad": (
        lambda env: env.step(
            calls(call("get_profile"), call("get_city_events", airport=float("inf")))
        ),
        ("bad_value",),
    ),
    "typed over the byte cap": (
        lambda env: env.step(calls(call("get_city_events", airport="A" * MAX_ARGUMENT_BYTES))),
        ("too_large",),
    ),
    "message dict nan": (
        lambda env: env.step_message(_message("get_profile", {"x": float("nan")})),
        ("bad_value",),
    ),
    "message dict int key": (
        lambda env: env.step_message(_message("get_profile", {3: 1})),
        ("bad_value",),
    ),
    "JSON text, 20k-char argument": (
        lambda env: env.step_message(json.dumps(_message("get_city_events", LONG_TEXT))),
        ("too_large",),
    ),
    "JSON text, long and malformed late": (
        lambda env: env.step_message(
            json.dumps(_message("get_city_events", '{"airport": "' + "A" * 6000 + '" x}'))
        ),
        ("malformed_json",),
    ),
    "JSON text, long and not an object": (
        lambda env: env.step_message(json.dumps(_message("get_profile", json.dumps(["A"] * 2000)))),
        ("malformed_json",),
    ),
    "JSON text, long with a 65-bit integer": (
        lambda env: env.step_message(
            json.dumps(
                _message(
                    "get_city_events", '{"x": "' + "A" * 6000 + '", "y": 18446744073709551616}'
                )
            )
        ),
        ("bad_value",),
    ),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_a_rejected_argument_replays_as_the_same_rejection(case: str) -> None:
    act, kinds = REJECTED[case]
    env = Env("travel")
    env.reset(seed=0)
    act(env)
    assert env.rounds[-1].format_errors == kinds  # rejected as the boundary rule says...
    back = _checked(env)  # ...and replayed so
    for record in back.rounds[-1].calls:
        if isinstance(record.arguments, str):
            assert len(record.arguments) <= RAW_LIMIT + 1  # the log stays bounded
            assert record.error is not None and record.error_kind in kinds


@pytest.mark.parametrize(
    "batch",
    [
        (ToolCall(None, {}),),  # type: ignore[arg-type]
        (ToolCall(["x"], {}),),  # type: ignore[arg-type]  # issue 10's own example
        (ToolCall("get_profile", {}), ToolCall(5, {"a": 1})),  # type: ignore[arg-type]
        (ToolCall(5, {"a": {1}}),),  # type: ignore[arg-type]
        (ToolCall({"a": 1}, "not json"),),  # type: ignore[arg-type]
    ],
)
def test_a_call_whose_name_is_not_a_string_replays_the_same(batch: tuple[ToolCall, ...]) -> None:
    env = Env("travel")
    env.reset(seed=0)
    env.step(CallBatch(batch))
    assert env.rounds[-1].format_errors
    back = _checked(env)
    assert back.rounds[-1].calls[-1].name.startswith("<")  # described: it names no tool


def test_the_issue_10_batch_with_a_nameless_call_runs_nothing_and_verifies() -> None:
    env = Env("travel")
    env.reset(seed=0)
    env.step(calls(call("get_profile")))
    env.step(CallBatch((call("get_travel_policy"), ToolCall(["x"], {}))))  # type: ignore[arg-type]
    assert env.rounds[-1].format_errors == ("unknown_tool",)
    assert env.rounds[-1].calls[0].error_kind == "not_run"
    _checked(env)


# -- the rejection text ----------------------------------------------------------------------


def test_a_rejection_text_states_its_rejection_through_every_interface() -> None:
    reason = "arguments: a set is not a JSON value"
    text = validation.rejection_text("bad_value", reason, "<{1, 2}>")
    assert validation.read_rejection(text) == ("bad_value", reason)
    outcomes = []
    for step in (
        lambda env: env.step(calls(ToolCall("get_profile", text))),
        lambda env: env.step_message(_message("get_profile", text)),
        lambda env: env.step_message(json.dumps(_message("get_profile", text))),
    ):
        env = Env("travel")
        env.reset(seed=0)
        step(env)
        (record,) = env.rounds[-1].calls
        outcomes.append((record.arguments, record.error, record.error_kind))
        _checked(env)
    assert outcomes == [(text, f"get_profile: {reason}", "bad_value")] * 3


@pytest.mark.parametrize(
    "text",
    [
        "<rejected tool: a refusal>",  # not a kind of the boundary rule
        "<rejected bad_value a reason>",  # no ": "
        "<rejected bad_value: no end\n>",  # the first line does not end in ">"
        "<{1, 2}>",  # version 2's description of a rejected value
    ],
)
def test_other_text_is_not_a_rejection_text(text: str) -> None:
    assert validation.read_rejection(text) is None
    env = Env("travel")
    env.reset(seed=0)
    env.step(calls(ToolCall("get_profile", text)))
    assert env.rounds[-1].format_errors == ("malformed_json",)
    _checked(env)


def test_a_rejection_is_told_and_kept_bounded() -> None:
    """An agent's class name is as long as it likes: the reason is cut, once and for good."""
    huge = type("C" * 50_000 + "\n>", (), {})()
    env = Env("travel")
    env.reset(seed=0)
    env.step(calls(ToolCall("get_profile", {"x": huge})))
    (record,) = env.rounds[-1].calls
    assert record.error_kind == "bad_value" and record.error is not None
    assert len(record.error) <= len("get_profile: ") + validation.MAX_REASON + 1
    assert "\n" not in record.error
    assert isinstance(record.arguments, str) and len(record.arguments) <= RAW_LIMIT + 1
    _checked(env)


def test_an_edited_rejection_is_caught() -> None:
    """The error comes from the logged action: editing it (and not the action) is caught."""
    env = Env("travel")
    env.reset(seed=0)
    env.step(calls(call("get_profile"), call("get_city_events", airport=float("nan"))))
    honest = _checked(env)
    assert honest.rounds[0].calls[0].error_kind == "not_run"
    for field, value in (
        ("error", "get_city_events: arguments: anything else"),
        ("error_kind", "too_large"),
        ("error_kind", "tool"),
    ):
        forged = orjson.loads(dumps(honest))
        forged["rounds"][0]["calls"][1][field] = value
        assert verify(loads(orjson.dumps(forged))), field
    forged = orjson.loads(dumps(honest))
    forged["rounds"][0]["format_errors"] = ["too_large"]
    assert verify(loads(orjson.dumps(forged)))


def test_a_version_2_log_of_the_old_writer_loads_and_replays() -> None:
    """Before this rule, a rejected value was logged as "<...>": such a line still loads and
    replays to its digest; verify reports that it replays as malformed_json, as it always
    did (the old stand-in cannot say what the rejection was)."""
    env = Env("travel")
    env.reset(seed=0)
    env.step(calls(call("get_city_events", airport=float("nan"))))
    data = orjson.loads(dumps(env.trajectory))
    data["rounds"][0]["calls"][0]["arguments"] = "<{'airport': nan}>"
    old = loads(orjson.dumps(data))
    assert replay(old).state_key() == old.digest
    (found,) = verify(old)
    assert "malformed_json" in found or "not valid JSON" in found


# -- the property: any output, through the three interfaces, verifies -----------------------


def _long_text(tool: str, size: int, cut: bool) -> str:
    """A message as JSON text whose call's argument text is about ``size`` characters long,
    cut before its closing brace (malformed near its end) if ``cut``."""
    arguments = json.dumps({"x": "A" * size})
    return json.dumps(_message(tool, arguments[:-1] if cut else arguments))


@st.composite
def _steps(draw: st.DrawFn, name: str, pool: Pool) -> tuple[str, Any]:
    """What the audit drove: wild and ordinary output, odd values at the boundary, over-cap
    argument text, and calls named by anything."""
    tools = all_domains()[name].tools
    kind = draw(st.integers(0, 5))
    if kind <= 1:
        return draw(wild_steps(tools, pool))
    if kind == 2:
        return draw(agent_steps(tools, pool))
    tool = draw(st.sampled_from([t.name for t in tools]))
    if kind == 3:
        value = draw(breakers)
        arguments = {"x": value} if draw(st.booleans()) else value
        if draw(st.booleans()):
            return "typed", CallBatch((call(tool), ToolCall(tool, arguments)))
        return "message", _message(tool, arguments)
    if kind == 4:
        size = draw(st.sampled_from((RAW_LIMIT, MAX_ARGUMENT_BYTES - 12, MAX_ARGUMENT_BYTES)))
        return "text", _long_text(tool, size, draw(st.booleans()))
    name_value = draw(st.none() | st.integers() | st.lists(st.text(max_size=3), max_size=2))
    arguments = draw(st.just({}) | st.just("{}") | st.just("[1]") | breakers)
    return "typed", CallBatch((ToolCall(name_value, arguments),))


@pytest.mark.parametrize("name", DOMAIN_NAMES)
@_a_few_dozen
@given(data=st.data(), seed=st.integers(0, 2**32))
def test_any_output_through_any_interface_verifies(
    name: str, data: st.DataObject, seed: int
) -> None:
    env = Env(name)
    env.reset(seed=seed)
    pool = Pool()
    pool.see(list(env.task.request.given.values()))
    for _ in range(data.draw(st.integers(1, 4), label="rounds")):
        if env.done:
            break
        channel, action = data.draw(_steps(name, pool), label="step")
        if channel == "typed":
            env.step(action)
        else:
            env.step_message(action)
    back = _checked(env)
    assert verify(env.stopped_trajectory()) == []
    assert loads(dumps(back)) == back
