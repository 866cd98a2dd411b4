"""The mutable state of one episode: copy-on-write tables, a clock and a money ledger.

A domain's world subclasses :class:`World` and declares its tables in ``TABLES``; scheduled
events reach them through :meth:`World.table`, which accepts only a declared name, and
generators pass their events through :meth:`World.check_events`, so a misspelt table fails
when the task is generated, not when the event fires mid-episode. Each table
starts as a view of the task's read-only base records; an episode writes only the records it
touches (records are frozen dataclasses, replaced with :func:`dataclasses.replace`), so reset,
snapshot and the state digest cost time in proportion to what the episode changed, not to the
size of the world.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import orjson

from stategym.kernel.errors import ToolError
from stategym.kernel.task import Event, EventKind

K = TypeVar("K")
R = TypeVar("R")

USER_ACCOUNT = "user"


class Table(Generic[K, R]):
    """A mapping of records over a shared read-only base; writes land in ``changed``."""

    __slots__ = ("base", "changed")

    def __init__(self, base: Mapping[K, R]) -> None:
        self.base = base
        self.changed: dict[K, R] = {}

    def get(self, key: K) -> R | None:
        record = self.changed.get(key)
        return record if record is not None else self.base.get(key)

    def __getitem__(self, key: K) -> R:
        record = self.changed.get(key)
        if record is None:
            record = self.base.get(key)
            if record is None:
                raise KeyError(key)
        return record

    def __setitem__(self, key: K, record: R) -> None:
        self.changed[key] = record

    def __contains__(self, key: object) -> bool:
        return key in self.changed or key in self.base

    def __len__(self) -> int:
        return len(self.base) + sum(1 for k in self.changed if k not in self.base)

    def keys(self) -> Iterator[K]:
        yield from self.base
        yield from (k for k in self.changed if k not in self.base)

    def values(self) -> Iterator[R]:
        # Searches scan whole tables every round. A table nothing was written to (most of
        # them, most rounds) hands out its base's own iterator: no generator frame resumed
        # per record. Otherwise walk the base once, swapping in changed records.
        if not self.changed:
            return iter(self.base.values())
        return self._merged_values()

    def _merged_values(self) -> Iterator[R]:
        changed = self.changed
        for key, record in self.base.items():
            mine = changed.get(key)
            yield record if mine is None else mine
        for key, record in changed.items():
            if key not in self.base:
                yield record


@dataclass(frozen=True, slots=True)
class Charge:
    """One movement of money; every charge and refund is one of these.

    Attributes:
        round: the round whose call moved the money.
        source: account paid from.
        target: account paid to.
        amount: whole currency units, positive.
        memo: what it was for ("fare TK204", "cancellation fee B1").
        reference: the record the charge belongs to (booking id, invitation id).
    """

    round: int
    source: str
    target: str
    amount: int
    memo: str
    reference: str


@dataclass(frozen=True, slots=True)
class WorldSnapshot:
    clock: int
    round: int
    next_id: int
    accounts: tuple[tuple[str, int], ...]
    charges: tuple[Charge, ...]
    tables: tuple[dict[Any, Any], ...]


class World:
    """Base of every domain's world.

    Attributes:
        clock: environment time in ticks.
        round: the round being played (tools stamp records and charges with it).
        accounts: balances by account name; their sum never changes.
        charges: every money movement, in order.
    """

    TABLES: ClassVar[tuple[str, ...]] = ()

    def __init__(self, accounts: Mapping[str, int]) -> None:
        self.clock = 0
        self.round = 0
        self.next_id = 1
        self.accounts = dict(accounts)
        self.charges: list[Charge] = []

    def tables(self) -> Iterator[Table[Any, Any]]:
        for name in self.TABLES:
            yield getattr(self, name)

    def table(self, name: str) -> Table[Any, Any]:
        """The table called ``name``, which must be one of ``TABLES``.

        Raises:
            ValueError: the world declares no table of that name.
        """
        if name not in self.TABLES:
            raise ValueError(_no_table(type(self), name))
        table: Table[Any, Any] = getattr(self, name)
        return table

    @classmethod
    def check_events(cls, events: Iterable[Event]) -> tuple[Event, ...]:
        """``events`` as a tuple, once every ``set`` event is seen to name one of ``TABLES``.

        Raises:
            ValueError: a ``set`` event names a table this world does not declare.
        """
        events = tuple(events)
        for event in events:
            if event.kind is EventKind.SET and event.table not in cls.TABLES:
                raise ValueError(_no_table(cls, event.table))
        return events

    def apply(self, event: Event) -> None:
        """Fire a ``set`` event: ``table[key].field = value``, if the record exists."""
        table = self.table(event.table)
        current = table.get(event.key)
        if current is not None:
            table[event.key] = replace(current, **{event.field: event.value})

    def new_id(self, prefix: str) -> str:
        """A fresh id, deterministic within the episode (``H1``, ``B2``...)."""
        value = f"{prefix}{self.next_id}"
        self.next_id += 1
        return value

    def transfer(self, source: str, target: str, amount: int, memo: str, reference: str) -> Charge:
        """Move money between accounts and log it; the only way balances change."""
        if amount <= 0:
            raise ValueError(f"transfer amount must be positive, got {amount}")
        self.accounts[source] -= amount
        self.accounts[target] = self.accounts.get(target, 0) + amount
        charge = Charge(self.round, source, target, amount, memo, reference)
        self.charges.append(charge)
        return charge

    def snapshot(self) -> WorldSnapshot:
        return WorldSnapshot(
            self.clock,
            self.round,
            self.next_id,
            tuple(self.accounts.items()),
            tuple(self.charges),
            tuple(dict(t.changed) for t in self.tables()),
        )

    def restore(self, snapshot: WorldSnapshot) -> None:
        self.clock = snapshot.clock
        self.round = snapshot.round
        self.next_id = snapshot.next_id
        self.accounts = dict(snapshot.accounts)
        self.charges = list(snapshot.charges)
        for table, changed in zip(self.tables(), snapshot.tables, strict=True):
            table.changed = dict(changed)

    def digest(self) -> str:
        """A hash of everything that differs from the base (the base is fixed by the task)."""
        payload = [
            self.clock,
            self.next_id,
            sorted(self.accounts.items()),
            self.charges,
            [sorted(t.changed.items(), key=lambda kv: str(kv[0])) for t in self.tables()],
        ]
        return hashlib.blake2b(orjson.dumps(payload), digest_size=16).hexdigest()


def _no_table(world: type[World], name: str) -> str:
    return f"{world.__name__} has no table {name!r} (its tables: {', '.join(world.TABLES)})"


class HoldRecord(Protocol):
    """What :func:`usable_hold` reads of a domain's hold (travel's fare hold, meetings' room
    hold, a synthetic hold)."""

    @property
    def status(self) -> str: ...

    @property
    def expires_at(self) -> int | None: ...


H = TypeVar("H", bound=HoldRecord)


def usable_hold(holds: Table[str, H], hold_id: str, clock: int, again: str) -> H:
    """The hold ``hold_id`` a commit pays with, once it exists, is unused and has not expired
    at ``clock`` (``again``: what the expiry error tells the agent to do, "hold the fare
    again"). Checks only: the caller marks it used after every other check has passed.

    Raises:
        ToolError: no such hold, already used, or expired.
    """
    hold = holds.get(hold_id)
    if hold is None:
        raise ToolError(f"no hold {hold_id}")
    if hold.status != "active":
        raise ToolError(f"hold {hold_id} was already used")
    if hold.expires_at is not None and clock > hold.expires_at:
        raise ToolError(f"hold {hold_id} expired at t={hold.expires_at}; {again}")
    return hold
