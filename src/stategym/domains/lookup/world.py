"""Lookup: the read-only corpus of entities and facts, and the episode world over it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stategym.kernel.knobs import Knobs
from stategym.kernel.world import USER_ACCOUNT, Table, World


@dataclass(frozen=True, slots=True)
class City:
    id: str
    name: str
    country: str
    population: int


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    name: str
    born_in: str
    born: int


@dataclass(frozen=True, slots=True)
class Company:
    id: str
    name: str
    founder: str
    hq: str
    founded: int
    products: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Product:
    id: str
    name: str
    maker: str
    price: int
    launched: int


Entity = City | Person | Company | Product

KINDS: dict[type, str] = {City: "city", Person: "person", Company: "company", Product: "product"}


def facts(entity: Entity) -> dict[str, object]:
    """An entity as the corpus shows it: id, name, type and every fact it holds."""
    body: dict[str, object] = {"id": entity.id, "name": entity.name, "type": KINDS[type(entity)]}
    if isinstance(entity, City):
        body.update(country=entity.country, population=entity.population)
    elif isinstance(entity, Person):
        body.update(born_in=entity.born_in, born=entity.born)
    elif isinstance(entity, Company):
        body.update(
            founder=entity.founder,
            hq=entity.hq,
            founded=entity.founded,
            products=list(entity.products),
        )
    else:
        body.update(maker=entity.maker, price=entity.price, launched=entity.launched)
    return body


@dataclass(frozen=True, slots=True)
class Corpus:
    """The generated corpus, shared read-only by every episode of a task.

    Attributes:
        entities: every entity by id, in index order (the order search lists hits in).
        words: for each entity id, the lower-case words of its name.
    """

    entities: Mapping[str, Entity]
    words: Mapping[str, frozenset[str]]


class LookupWorld(World):
    """Nothing in a lookup world ever changes; the table exists so the world digests like
    every other domain's."""

    TABLES = ("entities",)

    def __init__(self, base: Corpus, knobs: Knobs) -> None:
        super().__init__({USER_ACCOUNT: 0})
        self.base = base
        self.knobs = knobs
        self.entities: Table[str, Entity] = Table(base.entities)
