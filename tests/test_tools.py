"""The ``@tool`` decorator: schemas from signatures and docstrings, and ``Tool.bind``."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym.kernel.domain import Domain
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.tools import Effect, Tool, finish_tool_schema, tool


@tool(effect=Effect.WRITE, latency=3)
def reserve(
    world: Any,
    room: str,
    nights: int,
    rate: float,
    kind: Literal["single", "double"],
    guests: list[str],
    breakfast: bool = False,
    note: str = "",
) -> dict[str, Any]:
    """Reserve a room.

    Rooms are held for a day.

    Args:
        room: the room id, from
            list_rooms.
        nights: how many nights.
        rate (float): nightly rate in dollars.
        kind: bed kind.
        guests: names of the guests.
        breakfast: include breakfast.
        note: anything for the front desk.

    Returns:
        The reservation.
    """
    return {"room": room, "world": world}


VALID = {"room": "R1", "nights": 2, "rate": 99.5, "kind": "double", "guests": ["Ana"]}


def test_decorator_keeps_effect_latency_and_function() -> None:
    assert isinstance(reserve, Tool)
    assert (reserve.name, reserve.effect, reserve.latency) == ("reserve", Effect.WRITE, 3)
    assert reserve("W", **reserve.bind(VALID)) == {"room": "R1", "world": "W"}


def test_schema_is_an_openai_function_from_signature_and_docstring() -> None:
    function = reserve.schema["function"]
    assert reserve.schema["type"] == "function" and function["name"] == "reserve"
    assert function["description"] == "Reserve a room. Rooms are held for a day."
    parameters = function["parameters"]
    assert parameters["required"] == ["room", "nights", "rate", "kind", "guests"]
    assert parameters["additionalProperties"] is False
    assert parameters["properties"] == {
        "room": {"type": "string", "description": "the room id, from list_rooms."},
        "nights": {"type": "integer", "description": "how many nights."},
        "rate": {"type": "number", "description": "nightly rate in dollars."},
        "kind": {"type": "string", "enum": ["single", "double"], "description": "bed kind."},
        "guests": {
            "type": "array",
            "items": {"type": "string"},
            "description": "names of the guests.",
        },
        "breakfast": {"type": "boolean", "description": "include breakfast."},
        "note": {"type": "string", "description": "anything for the front desk."},
    }


def test_bind_fills_defaults_and_widens_numbers() -> None:
    bound = reserve.bind(dict(VALID, rate=100, nights=3.0))
    assert bound == dict(VALID, rate=100.0, nights=3, breakfast=False, note="")
    assert type(bound["rate"]) is float and type(bound["nights"]) is int


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"nights": 2.5}, "wrong_type"),
        ({"nights": True}, "wrong_type"),
        ({"nights": "2"}, "wrong_type"),
        ({"rate": "cheap"}, "wrong_type"),
        ({"room": None}, "wrong_type"),
        ({"room": 7}, "wrong_type"),
        ({"kind": "triple"}, "wrong_type"),
        ({"kind": 1}, "wrong_type"),
        ({"guests": "Ana"}, "wrong_type"),
        ({"guests": ["Ana", 3]}, "wrong_type"),
        ({"breakfast": 1}, "wrong_type"),
        ({"pets": 1}, "unexpected_argument"),
    ],
)
def test_bind_rejects_bad_arguments(change: dict[str, Any], kind: str) -> None:
    with pytest.raises(AgentFormatError) as caught:
        reserve.bind(dict(VALID, **change))
    assert caught.value.kind == kind
    assert str(caught.value).startswith("reserve: ")


@pytest.mark.parametrize("missing", ["room", "nights", "rate", "kind", "guests"])
def test_bind_reports_missing_arguments(missing: str) -> None:
    arguments = {k: v for k, v in VALID.items() if k != missing}
    with pytest.raises(AgentFormatError, match=repr(missing)) as caught:
        reserve.bind(arguments)
    assert caught.value.kind == "missing_argument"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=5,
)


@given(st.dictionaries(st.sampled_from([*VALID, "breakfast", "note", "x"]), _json))
def test_bind_either_accepts_with_schema_types_or_raises_a_format_error(
    arguments: dict[str, Any],
) -> None:
    try:
        bound = reserve.bind(arguments)
    except AgentFormatError as error:
        assert error.kind in ("wrong_type", "missing_argument", "unexpected_argument")
        return
    kinds = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list}
    for name, spec in reserve.schema["function"]["parameters"]["properties"].items():
        assert type(bound[name]) is kinds[spec["type"]]


def test_finish_schema_depends_on_statefulness() -> None:
    stateful, stateless = finish_tool_schema(True), finish_tool_schema(False)
    assert stateful["function"]["parameters"]["required"] == []
    assert stateless["function"]["parameters"]["required"] == ["answer"]
    assert stateful["function"]["name"] == stateless["function"]["name"] == "finish"


def test_domain_tools_are_fully_described(domain: Domain) -> None:
    """The docstring is all the model sees: every tool and every argument is described."""
    names = [t.name for t in domain.tools]
    assert len(set(names)) == len(names) and "finish" not in names
    for item in domain.tools:
        function = item.schema["function"]
        assert function["description"], item.name
        for name, spec in function["parameters"]["properties"].items():
            assert spec.get("description"), f"{item.name}.{name} has no description"
        assert item.effect in tuple(Effect) and item.latency >= 1
