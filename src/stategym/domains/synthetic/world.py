"""Synthetic domains: typed records and the episode world."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from stategym.kernel.knobs import Knobs
from stategym.kernel.world import USER_ACCOUNT, Table, World
from stategym.topology.motifs import Spec

VENDOR_ACCOUNT = "vendor"


@dataclass(frozen=True, slots=True)
class Option:
    """One option a source lists.

    Attributes:
        id: one alphanumeric token (the user recognises proposals by it).
        source: index of the source (1-based) that lists it.
        price: whole currency units.
        category: one of the domain's categories.
        level: a grade from 1 to 5.
        flag_a: has the first preference feature.
        flag_b: has the second preference feature.
        stock: units left; a sold-out option is no longer listed.
    """

    id: str
    source: int
    price: int
    category: str
    level: int
    flag_a: bool
    flag_b: bool
    stock: int


@dataclass(frozen=True, slots=True)
class Hold:
    id: str
    option: str
    price: int
    expires_at: int | None
    status: Literal["active", "used"]


@dataclass(frozen=True, slots=True)
class Purchase:
    id: str
    option: str
    price: int
    status: Literal["active", "cancelled"]


@dataclass(frozen=True, slots=True)
class Prepared:
    option: str


@dataclass(frozen=True, slots=True)
class SynthBase:
    """The generated, read-only part of a synthetic world.

    Attributes:
        options: every option by id.
        ref: the reference the request gives (the root of the lookups).
        links: ``links[i]`` is the value lookup ``i + 1`` of the chain returns.
        left: the diamond's left value.
        right: the diamond's right value.
        merged: the diamond's merged value.
        route: index (0 or 1) of the branch that applies.
        route_key: the value the applying branch returns.
        balance: the user's money.
    """

    options: Mapping[str, Option]
    ref: str
    links: tuple[str, ...]
    left: str
    right: str
    merged: str
    route: int
    route_key: str
    balance: int

    def key_before_diamond(self) -> str:
        """The value the diamond's two lookups take: the chain's last result or the ref."""
        return self.links[-1] if self.links else self.ref

    def key_before_branch(self, spec: Spec) -> str:
        return self.merged if spec.diamond else self.key_before_diamond()

    def key_before_sources(self, spec: Spec) -> str:
        """The value every source takes: the last lookup's result, or the reference."""
        return self.route_key if spec.branch else self.key_before_branch(spec)


class SynthWorld(World):
    TABLES = ("options", "holds", "purchases", "prepared")

    def __init__(self, base: SynthBase, knobs: Knobs) -> None:
        super().__init__({USER_ACCOUNT: base.balance, VENDOR_ACCOUNT: 0})
        self.base = base
        self.knobs = knobs
        self.options: Table[str, Option] = Table(base.options)
        self.holds: Table[str, Hold] = Table({})
        self.purchases: Table[str, Purchase] = Table({})
        self.prepared: Table[str, Prepared] = Table({})
