"""Copy-on-write tables, the money ledger, snapshots and the state digest."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym.kernel.world import USER_ACCOUNT, Charge, Table, World


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    stock: int


BASE = MappingProxyType({"a": Item("a", 1), "b": Item("b", 2)})


class ShopWorld(World):
    TABLES: ClassVar[tuple[str, ...]] = ("items", "orders")

    def __init__(self) -> None:
        super().__init__({USER_ACCOUNT: 100, "shop": 0})
        self.items: Table[str, Item] = Table(BASE)
        self.orders: Table[str, Item] = Table({})


def test_table_reads_through_to_the_base_and_writes_to_changed() -> None:
    table = Table(BASE)
    table["a"] = Item("a", 0)
    table["c"] = Item("c", 5)
    assert BASE["a"] == Item("a", 1)
    assert table["a"] == Item("a", 0) and table.get("b") == Item("b", 2)
    assert table.get("zzz") is None and "c" in table and "zzz" not in table
    assert len(table) == 3 and list(table.keys()) == ["a", "b", "c"]
    assert list(table.values()) == [Item("a", 0), Item("b", 2), Item("c", 5)]
    assert set(table.changed) == {"a", "c"}
    with pytest.raises(KeyError):
        table["zzz"]


def test_transfer_moves_money_and_logs_a_charge() -> None:
    world = ShopWorld()
    world.round = 3
    charge = world.transfer(USER_ACCOUNT, "shop", 30, "widget", "O1")
    assert charge == Charge(3, USER_ACCOUNT, "shop", 30, "widget", "O1")
    world.transfer("shop", "bank", 5, "fee", "O1")
    assert world.accounts == {USER_ACCOUNT: 70, "shop": 25, "bank": 5}
    assert world.charges == [charge, Charge(3, "shop", "bank", 5, "fee", "O1")]
    for amount in (0, -5):
        with pytest.raises(ValueError, match="positive"):
            world.transfer(USER_ACCOUNT, "shop", amount, "x", "y")
    assert sum(world.accounts.values()) == 100 and len(world.charges) == 2


def test_new_ids_are_deterministic_within_an_episode() -> None:
    first, second = ShopWorld(), ShopWorld()
    assert [first.new_id("O") for _ in range(3)] == ["O1", "O2", "O3"]
    assert [second.new_id(p) for p in "OHO"] == ["O1", "H2", "O3"]


def _mutate(world: ShopWorld, step: int) -> None:
    world.clock += 1
    world.items["a"] = replace(world.items["a"], stock=step)
    world.orders[world.new_id("O")] = Item("a", step)
    world.transfer(USER_ACCOUNT, "shop", 1 + step, "order", "O")


def test_snapshot_restore_and_digest() -> None:
    world = ShopWorld()
    start = world.digest()
    _mutate(world, 1)
    middle, snapshot = world.digest(), world.snapshot()
    assert middle != start
    _mutate(world, 2)
    assert world.digest() not in (start, middle)
    world.restore(snapshot)
    assert world.digest() == middle
    assert world.items["a"].stock == 1 and len(world.orders) == 1 and len(world.charges) == 1
    _mutate(world, 7)  # writes after a restore must not reach into the snapshot
    world.restore(snapshot)
    assert world.digest() == middle


def test_digest_covers_every_part_of_the_state() -> None:
    digests = set()
    for change in ("clock", "next_id", "accounts", "charges", "table"):
        world = ShopWorld()
        if change == "clock":
            world.clock = 1
        elif change == "next_id":
            world.new_id("X")
        elif change == "accounts":
            world.accounts["shop"] = 1
        elif change == "charges":
            world.charges.append(Charge(0, "a", "b", 1, "", ""))
        else:
            world.items["b"] = Item("b", 9)
        digests.add(world.digest())
    assert len(digests | {ShopWorld().digest()}) == 6


@given(st.permutations(["a", "b", "c", "d"]))
def test_digest_does_not_depend_on_write_order(order: list[str]) -> None:
    world, reference = ShopWorld(), ShopWorld()
    for key in order:
        world.items[key] = Item(key, 0)
    for key in sorted(order):
        reference.items[key] = Item(key, 0)
    assert world.digest() == reference.digest()


def test_a_new_world_shares_the_base_but_not_the_changes() -> None:
    first, second = ShopWorld(), ShopWorld()
    first.items["a"] = Item("a", 99)
    assert second.items["a"].stock == 1 and first.items.base is second.items.base
