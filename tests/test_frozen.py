"""The quick constructor makes the same frozen records as the classes' own constructors."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from stategym.kernel.frozen import quick_constructor
from stategym.kernel.protocol import Observation, ToolResult
from stategym.kernel.provenance import Origin, Source
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import CallRecord, RoundKind, RoundRecord

ORIGIN = Origin(Source.TOOL, 3, "c3_0")
SAMPLES: list[tuple[type[Any], tuple[Any, ...]]] = [
    (Origin, (Source.USER, 1, "budget")),
    (ToolResult, ("c0_0", "search", {"rows": [1, 2]}, None, None)),
    (Observation, (2, 7, (ToolResult("a", "b"),), "Sure.", None)),
    (
        CallRecord,
        ("c1_0", "pay", {"id": "H1"}, Effect.COMMIT, {"ok": True}, None, None, {"id": ORIGIN}),
    ),
    (
        RoundRecord,
        (
            4,
            9,
            2,
            RoundKind.CALLS,
            (),
            None,
            None,
            "Change of plan.",
            (),
            (1,),
            (),
            (),
            None,
            None,
            None,
            {},
        ),
    ),
]


@pytest.mark.parametrize(("cls", "values"), SAMPLES, ids=[c.__name__ for c, _ in SAMPLES])
def test_a_quick_record_is_the_record_the_class_makes(
    cls: type[Any], values: tuple[Any, ...]
) -> None:
    made, quick = cls(*values), quick_constructor(cls)(*values)
    assert type(quick) is cls
    assert quick == made and repr(quick) == repr(made)
    if cls is Origin:  # the others hold dicts, so neither kind hashes
        assert hash(quick) == hash(made)
    assert orjson.dumps(quick) == orjson.dumps(made)
    assert pickle.loads(pickle.dumps(quick)) == made
    assert copy.deepcopy(quick) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(quick, dataclasses.fields(cls)[0].name, None)


def test_the_quick_constructor_takes_every_field_in_order() -> None:
    with pytest.raises(TypeError):
        quick_constructor(Origin)(Source.USER, 1)  # no defaults
    with pytest.raises(TypeError):
        quick_constructor(Origin)(source=Source.USER, round=1, ref="x", extra=2)


@dataclass(slots=True)
class _Mutable:
    x: int


@dataclass(frozen=True)
class _NoSlots:
    x: int


@dataclass(frozen=True, slots=True)
class _Checked:
    x: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("negative")


@dataclass(frozen=True, slots=True)
class _Base:
    x: int


@dataclass(frozen=True, slots=True)
class _Derived(_Base):
    y: int = 0


@dataclass(frozen=True, slots=True)
class _Derived2:
    x: int
    y: list[int] = field(default_factory=list, init=False)


@pytest.mark.parametrize("cls", [_Mutable, _NoSlots, _Checked, _Derived, _Derived2, int])
def test_a_class_the_twin_cannot_stand_in_for_is_refused(cls: type[Any]) -> None:
    with pytest.raises(TypeError):
        quick_constructor(cls)
