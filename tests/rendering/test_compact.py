"""The compact line rendering: exact both ways, and the expert plays through it unchanged."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action, CallBatch, Say, ToolCall, call, calls
from stategym.metrics import score
from stategym.registry import all_domains, get_domain
from stategym.rendering import CompactRenderer, MessageRenderer
from stategym.rendering.handles import WORDS, Handles, is_entity
from stategym.rollout import run_episode

DOMAINS = [*sorted(all_domains()), "synth:chain2+fanout3"]
TRAVEL = get_domain("travel")

ids = st.from_regex(r"[A-Z]{1,3}[0-9]{1,5}(-[0-9]{2})?", fullmatch=True)
words = st.sampled_from(["A", "B", "I", "the", "LHR", "\\", "\\B", "x=1", "8", "true", '"q"', ""])
texts = st.lists(st.one_of(ids, words, st.text(max_size=6)), max_size=8).map(" ".join)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
    ids,
)
values = st.one_of(
    scalars, st.lists(scalars, max_size=3), st.dictionaries(texts, scalars, max_size=2)
)
keys = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


def later_names(names: list[str]) -> st.SearchStrategy[str]:
    """A later call's name: a tool's, no tool's, or one that a bare line would read as
    another: a tool's name and more after a tab or a Unicode space (audit 17D J3), names with
    spaces, quotes and line breaks, blank or empty ones."""
    awkward = st.builds(
        lambda tool, space, more: tool + space + more,
        st.sampled_from(names),
        st.sampled_from(["\t", "\xa0", "\u3000", " ", "\n", "\r", "", '"']),
        st.text(max_size=4),
    )
    return st.one_of(st.sampled_from(names), awkward, st.text(max_size=8))


@st.composite
def actions(draw: st.DrawFn) -> Action:
    """Says and call batches over the travel tools (and, after the first call, an unknown
    one: a reply whose first word is no tool is a message), with arguments named by the
    schema or not, holding ids, handle-like words and awkward strings."""
    renderer = CompactRenderer(TRAVEL, Knobs())
    if draw(st.booleans()):
        return Say(draw(st.one_of(texts, st.text(max_size=20))))
    names = [t["function"]["name"] for t in renderer.tools] + ["no_such_tool"]
    batch = []
    for position in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(names[:-1]) if position == 0 else later_names(names))
        params = [k for k in renderer._params.get(name, [])]
        chosen = draw(st.lists(st.sampled_from(params), unique=True)) if params else []
        extra = draw(st.dictionaries(keys, values, max_size=2))
        arguments = {**{k: draw(values) for k in chosen}, **extra}
        batch.append(ToolCall(name, arguments))
    return CallBatch(tuple(batch))


@given(actions(), st.lists(ids, max_size=4))
def test_parse_of_render_is_the_action(action: Action, seen: list[str]) -> None:
    renderer = CompactRenderer(TRAVEL, Knobs())
    for entity in seen:  # ids the episode has shown already have handles
        renderer.handles.handle(entity)
    text = renderer.action_message(action, 0)["content"]
    assert renderer.parse(text) == action
    assert renderer.parse({"role": "assistant", "content": text}) == action


@given(actions())
def test_the_message_rendering_round_trips_too(action: Action) -> None:
    """As exact, for what messages can say: blank content is no message (an empty action)."""
    renderer = MessageRenderer(TRAVEL, Knobs())
    if isinstance(action, Say) and not action.text.strip():
        assert renderer.parse(renderer.action_message(action, 0)) == CallBatch(())
        return
    if isinstance(action, CallBatch):  # the message form keeps ids: give every call one
        action = CallBatch(tuple(replace(c, id=f"c0_{i}") for i, c in enumerate(action.calls)))
        action = replace(
            action, calls=tuple(replace(c, arguments=_json_text(c)) for c in action.calls)
        )
    assert renderer.parse(renderer.action_message(action, 0)) == action


def _json_text(c: ToolCall) -> str:
    import orjson

    return orjson.dumps(dict(c.arguments)).decode()  # the message form carries JSON text


LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character ``str.splitlines`` breaks at."""
breaking = st.lists(
    st.sampled_from([*LINE_BREAKS, "a", "B7", " ", '"', "\\", "=", "x=1", "AQ449"]), max_size=6
).map("".join)
breaking_values = st.one_of(
    breaking, st.lists(breaking, max_size=2), st.dictionaries(breaking, breaking, max_size=2)
)


@st.composite
def breaking_actions(draw: st.DrawFn) -> CallBatch:
    """Travel calls whose string values, list items and object keys hold line breaks."""
    names = ["search_flights", "hold_fare", "no_such_tool"]
    arguments = st.dictionaries(
        st.sampled_from(["origin", "destination", "day", "flight_id", "note"]),
        breaking_values,
        max_size=3,
    )
    batch = [
        ToolCall(draw(st.sampled_from(names[:-1] if i == 0 else names)), draw(arguments))
        for i in range(draw(st.integers(1, 3)))
    ]
    return CallBatch(tuple(batch))


@given(breaking_actions())
def test_line_breaks_inside_values_round_trip_and_stay_on_the_calls_line(
    action: CallBatch,
) -> None:
    renderer = CompactRenderer(TRAVEL, Knobs())
    text = renderer.render(action)
    assert renderer.parse(text) == action
    assert len(text.splitlines()) == len(action.calls)  # one line per call, for any reader


def test_only_a_newline_separates_calls_in_a_reply() -> None:
    """A raw line break a model writes inside a quoted value stays in the value where JSON
    allows it raw (U+0085, U+2028, U+2029), and leaves an unreadable call (a format error)
    where it does not (control characters): never a second call."""
    renderer = CompactRenderer(TRAVEL, Knobs())
    hold = ToolCall("hold_fare", {"flight_id": "A"})
    for char in LINE_BREAKS[2:]:
        reply = f'search_flights "LHR{char}x" YYZ 8\r\nhold_fare A'  # "\r\n" is a newline too
        action = renderer.parse(reply)
        assert isinstance(action, CallBatch)
        first, second = action.calls
        assert second == hold
        if char in "\x85\u2028\u2029":
            assert first.arguments == {"origin": f"LHR{char}x", "destination": "YYZ", "day": 8}
        else:
            assert first.arguments == f'"LHR{char}x" YYZ 8'


def test_an_integer_wider_than_64_bits_stays_an_integer_and_is_the_boundarys_bad_value() -> None:
    huge = 12345678901234567890123456789
    env = Env("travel")
    env.reset(seed=0)
    renderer = CompactRenderer(env.domain, env.task.knobs)
    for reply in (f"search_flights LHR YYZ {huge}", f'search_flights {{"day": {huge}}}'):
        action = renderer.parse(reply)
        assert isinstance(action, CallBatch) and action.calls[0].arguments["day"] == huge
        assert type(action.calls[0].arguments["day"]) is int
        assert renderer.parse(renderer.render(action)) == action  # the chat keeps it exactly
    (result,) = env.step(renderer.parse(f"search_flights LHR YYZ day=[{huge}]")).observation.results
    assert result.error_kind == "bad_value"


@given(texts)
def test_handles_decode_what_they_encode(text: str) -> None:
    handles = Handles()
    handles.handle("ZZ99")
    encoded = handles.encode(text)
    assert handles.decode(encoded) == text
    assert not any(is_entity(run) for run in re.findall(r"[A-Za-z0-9_-]+", encoded))


def test_lines_look_like_the_issue_says() -> None:
    renderer = CompactRenderer(TRAVEL, Knobs())
    assert renderer.render(
        calls(call("search_flights", origin="LHR", destination="HND", day=8))
    ) == ("search_flights LHR HND 8")
    hold = calls(call("hold_fare", flight_id="AQ449"), call("hold_fare", flight_id="TK204"))
    assert renderer.render(hold) == "hold_fare B\nhold_fare C"  # no handle A: it is a word
    assert renderer.parse("hold_fare C\n\nhold_fare B") == calls(
        call("hold_fare", flight_id="TK204"), call("hold_fare", flight_id="AQ449")
    )
    assert renderer.parse("Shall I book B?") == Say("Shall I book AQ449?")
    assert renderer.render(Say("finish me")) == "\\finish me"
    assert renderer.parse('hold_fare "B') == CallBatch((ToolCall("hold_fare", '"B'),))
    assert renderer.parse("   ") == CallBatch(())


def test_a_sentence_the_model_starts_with_a_is_a_sentence() -> None:
    """Audit 17A F1: "A" was the first id's handle, so "A quick question first: ..." was a
    proposal of that id, which the user rejected without answering the question."""
    env = Env("travel")
    observation, _ = env.reset(seed=0)
    renderer = CompactRenderer(env.domain, env.task.knobs)
    renderer.first_messages(env.task)
    expert = scripted(env.domain, "expert")(env.task)
    while not renderer.handles:  # the expert's reads, until an id has a handle
        observation = env.step(expert.act(observation)).observation
        renderer.observation_messages(observation)
    question = "A quick question first: what is your budget? OK, I can wait until 5 PM."
    assert renderer.parse(question) == Say(question)
    env.step(renderer.parse(question))
    heard = env.rounds[-1].user
    assert heard is not None and heard.proposed is None


def test_words_and_units_the_model_writes_in_capitals_are_never_handles() -> None:
    handles = Handles()
    names = [handles.handle(f"X{n}") for n in range(700)]
    assert {"A", "I", "OK", "NO", "PM", "GB", "USD", "UTC"}.isdisjoint(names)
    assert not any(set(name) & set("AI") for name in names)
    assert WORDS.isdisjoint(names) and len(set(names)) == 700


def test_a_time_zone_offset_the_user_says_stays_readable() -> None:
    """Audit 17A F2: "UTC-5" mixed letters and digits, so the model read "on A"."""
    handles = Handles()
    text = "Nia Aziz is on UTC-5; Raj Park is on UTC+2 and GMT-11; book K1-5304."
    assert handles.encode(text) == "Nia Aziz is on UTC-5; Raj Park is on UTC+2 and GMT-11; book B."


def test_tool_and_argument_names_stay_as_written_in_what_the_model_reads() -> None:
    """Audit 17A F3: a synthetic domain's ``get_key_1`` became a handle in an error's list of
    tools, a name the model cannot call."""
    name = "synth:chain2+fanout3"
    env = Env(name)
    env.reset(seed=0)
    renderer = CompactRenderer(env.domain, env.task.knobs)
    renderer.first_messages(env.task)
    tools = [t.name for t in env.domain.available_tools(env.task.knobs)]
    assert any(is_entity(tool) for tool in tools)
    step = env.step(calls(call("no_such_tool")))
    (text,) = [m["content"] for m in renderer.observation_messages(step.observation)]
    assert all(re.search(rf"\b{tool}\b", text) for tool in tools), text


def test_a_tab_after_the_tool_name_ends_the_name() -> None:
    renderer = CompactRenderer(TRAVEL, Knobs())
    assert renderer.parse("search_flights\tLHR HND 8") == calls(
        call("search_flights", origin="LHR", destination="HND", day=8)
    )
    # a name that is no tool's still reads back as written (audit 17C N1)
    search = call("search_flights", origin="LHR", destination="HND", day=8)
    for odd in ("get\tprofile", "get\xa0profile", "get\u3000profile"):
        batch = CallBatch((search, ToolCall(odd, {"x": 1})))
        assert renderer.parse(renderer.render(batch)) == batch


@pytest.mark.parametrize("name", DOMAINS)
def test_the_expert_through_the_compact_rendering_plays_the_same_episode(name: str) -> None:
    """Each expert action is rendered to text, parsed back and stepped; state and score are
    the typed expert's."""
    for knobs in (Knobs(), Knobs.all_off()):
        typed_env, env = Env(name, knobs=knobs), Env(name, knobs=knobs, agent="expert")
        for seed in range(12):
            typed = run_episode(typed_env, scripted(typed_env.domain, "expert"), seed)
            observation, _ = env.reset(seed=seed)
            renderer = CompactRenderer(env.domain, env.task.knobs)
            renderer.first_messages(env.task)
            expert = scripted(env.domain, "expert")(env.task)
            while not env.done:
                text = renderer.render(expert.act(observation))
                observation = env.step(renderer.parse(text)).observation
                renderer.observation_messages(observation)
            assert env.state_key() == typed.digest
            assert score(env.trajectory, env.task) == score(typed, typed_env.task)
