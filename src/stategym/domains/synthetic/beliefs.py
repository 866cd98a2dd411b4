"""What a synthetic-domain agent has learnt so far, and how it reads words and results."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stategym.agents.hearing import Answers, hear
from stategym.generation import order_matters
from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value
from stategym.topology.motifs import Spec

from .generator import CATEGORIES, PREFS
from .surface import Surface
from .tools import option_field

_ANSWERS: Answers = (
    ("limit", re.compile(r"budget is \$(\d+)"), int),
    ("category", re.compile(rf"in the ({'|'.join(CATEGORIES)}) category"), str),
    ("level", re.compile(r"grade must be at least (\d+)"), int),
)


@dataclass(slots=True)
class View:
    """An option as the agent last saw it."""

    id: str
    source: int
    rank: int
    price: int
    category: str
    level: int
    flag_a: bool
    flag_b: bool


@dataclass(slots=True)
class Beliefs:
    """The agent's knowledge; missing keys mean not known yet.

    Attributes:
        values: slot values (request, answers, changes of mind).
        order: preference ids from most to least important, once known.
        keys: values returned by lookups, by canonical value key.
        route: index of the branch that applies, once checked.
        options: every option seen in a listing.
        excluded: options ruled out (rejected, sold out).
        prepared: options prepared for purchase.
        changed: a slot value changed since the flag was last cleared.
    """

    spec: Spec
    surface: Surface
    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    keys: dict[str, str] = field(default_factory=dict)
    route: int | None = None
    options: dict[str, View] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    prepared: set[str] = field(default_factory=set)
    changed: bool = False

    def preference(self, phrase: str) -> str | None:
        """The preference a phrase of the user's ranking speaks of (``None``: a need)."""
        texts = zip(PREFS, self.surface.flag_texts, strict=True)
        return next((p for p, text in texts if text in phrase), None)

    def see(self, observation: Observation) -> dict[str, Any]:
        """Take in tool results and user words; returns successful results by canonical key."""
        hear(self, observation.user, _ANSWERS, self.preference)
        by_name = {name: key for key, name in self.surface.tools.items()}
        found: dict[str, Any] = {}
        for result in observation.results:
            key = by_name.get(result.name)
            if not result.ok or key is None:
                continue
            found[key] = result.content
            self._take(key, result.content)
        return found

    def _take(self, key: str, content: Any) -> None:
        if key.startswith("source"):
            self._listing(int(key.removeprefix("source")), content)
        elif key == "route":
            self.route = self.surface.routes.index(content[self.surface.route_field])
        elif key == "hold":
            view = self.options.get(content["option"])
            if view is not None:
                view.price = content["price"]
        elif key == "prepare":
            self.prepared.add(content["option"])
        elif isinstance(content, Mapping):
            names = {name: k for k, name in self.surface.values.items()}
            for name, value in content.items():
                if name in names:
                    self.keys[names[name]] = value

    def _listing(self, source: int, rows: list[dict[str, Any]]) -> None:
        id_field = option_field(self.surface)
        flag_a, flag_b = self.surface.flags
        for rank, row in enumerate(rows):
            self.options[row[id_field]] = View(
                row[id_field],
                source,
                rank,
                row["price"],
                row["category"],
                row["grade"],
                row[flag_a],
                row[flag_b],
            )

    def prefs(self) -> tuple[str, ...]:
        return PREFS if self.spec.conflict else PREFS[:1]

    def feasible(self, view: View) -> bool:
        """Meets every need the agent knows of (an unknown need is not checked)."""
        limit = self.values.get("limit")
        category = self.values.get("category")
        level = self.values.get("level")
        return (
            (limit is None or view.price <= int(limit))
            and (category is None or view.category == category)
            and (level is None or view.level >= int(level))
        )

    def meets(self, view: View) -> frozenset[str]:
        """The active preferences an option meets."""
        hits = {p for p, flag in zip(PREFS, (view.flag_a, view.flag_b), strict=True) if flag}
        return frozenset(hits) & set(self.prefs())

    def candidates(self) -> list[View]:
        """Feasible options not ruled out, in listing order."""
        return sorted(
            (v for v in self.options.values() if v.id not in self.excluded and self.feasible(v)),
            key=lambda v: (v.source, v.rank),
        )

    def order_matters(self) -> bool:
        """No feasible option meets every preference and the best trade-offs differ."""
        return order_matters((self.meets(v) for v in self.candidates()), self.prefs())
