"""Scheduled events reach a world's tables only by a declared name, checked when the task is made.

A ``set`` event names its table by string; a misspelt one used to surface only when the
event fired mid-episode (``getattr`` on the world). Now :meth:`World.check_events` refuses
it when the generator schedules it and :meth:`Env.reset` refuses a hand-made task with one.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import ClassVar

import pytest

from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Event, EventKind
from stategym.kernel.world import USER_ACCOUNT, Table, World
from stategym.registry import DOMAINS, get_domain


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    stock: int


class StockWorld(World):
    TABLES: ClassVar[tuple[str, ...]] = ("items",)

    def __init__(self) -> None:
        super().__init__({USER_ACCOUNT: 0})
        self.items: Table[str, Item] = Table(MappingProxyType({"a": Item("a", 3)}))
        self.note = "not a table"


def test_table_returns_a_declared_table_and_refuses_any_other_name() -> None:
    world = StockWorld()
    assert world.table("items") is world.items
    with pytest.raises(ValueError, match=r"StockWorld has no table 'note' \(its tables: items\)"):
        world.table("note")  # an attribute, but not a declared table
    with pytest.raises(ValueError, match="no table 'itemz'"):
        world.table("itemz")


def test_check_events_refuses_a_set_event_on_an_undeclared_table() -> None:
    good = Event(1, EventKind.SET, "items", "a", "stock", 0)
    update = Event(2, EventKind.USER_UPDATE, slot="budget", value=10)  # names no table
    assert StockWorld.check_events([good, update]) == (good, update)
    with pytest.raises(ValueError, match="no table 'itemz'"):
        StockWorld.check_events([good, replace(good, table="itemz")])


def test_apply_sets_the_field_of_an_existing_record_only() -> None:
    world = StockWorld()
    world.apply(Event(1, EventKind.SET, "items", "a", "stock", 0))
    world.apply(Event(1, EventKind.SET, "items", "gone", "stock", 0))  # no such record: no-op
    assert world.items["a"] == Item("a", 0)
    assert "gone" not in world.items
    with pytest.raises(ValueError, match="no table"):
        world.apply(Event(1, EventKind.SET, "itemz", "a", "stock", 0))


def test_reset_refuses_a_task_whose_event_names_no_table() -> None:
    env = Env("travel")
    task = get_domain("travel").generate(0, Knobs())
    assert any(e.kind is EventKind.SET for e in task.events)
    bad = tuple(replace(e, table="flight") if e.kind is EventKind.SET else e for e in task.events)
    with pytest.raises(ValueError, match="TravelWorld has no table 'flight'"):
        env.reset(options={"task": replace(task, events=bad)})
    env.reset(options={"task": task})  # the generated task itself plays


@pytest.mark.parametrize("name", DOMAINS)
def test_every_generated_set_event_names_a_declared_table_and_a_record_field(name: str) -> None:
    domain = get_domain(name)
    set_events = 0
    for seed in range(40):
        task = domain.generate(seed, Knobs())
        world = domain.new_world(task)
        for event in task.events:
            if event.kind is not EventKind.SET:
                continue
            set_events += 1
            record = world.table(event.table).get(event.key)
            assert record is not None, (seed, event)
            assert event.field in {f.name for f in fields(record)}, (seed, event)
    if name != "lookup":  # lookup's world never changes under the agent
        assert set_events > 0
