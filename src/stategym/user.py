"""The deterministic simulated user.

It holds the task's hidden slots and true priorities and reads the agent's messages without
an LLM: a message is normalised to lower-case word tokens (with a crude plural strip) and
matched against each slot's phrase table, so "What's the most you can spend?", "Any price
limit?" and "What is your budget?" all reach the ``budget`` slot. It answers every slot it
recognises, reveals its priority order when asked which constraint matters more, confirms or
rejects a concrete proposal (a message naming exactly one option) against its true
constraints, announces scheduled changes of mind, and says when it does not understand.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from stategym.task import Task, Value

_WORD = re.compile(r"[a-z0-9]+")

PRIORITY_PHRASES: tuple[str, ...] = (
    "more important",
    "most important",
    "matter more",
    "matter most",
    "priority",
    "prioritize",
    "prioritise",
    "trade off",
    "tradeoff",
    "rather have",
    "would you rather",
    "come first",
    "compromise",
)


def normalise(text: str) -> str:
    """Lower-case word tokens joined by single spaces, padded with a space on each side."""
    words = [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in _WORD.findall(text.lower())
    ]
    return " " + " ".join(words) + " "


@functools.lru_cache(maxsize=1024)
def _compile(phrases: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: a domain's phrase tables are the same in every episode, and compiling them was
    # most of the cost of a reset.
    return tuple(normalise(p) for p in phrases)


@functools.lru_cache(maxsize=4096)
def _option_keys(options: tuple[str, ...]) -> Mapping[str, str]:
    """Each option by its normalised id; cached because a task can have hundreds of options
    and every episode of it needs the same (read-only) table."""
    return MappingProxyType({normalise(option): option for option in options})


def _mentioned(words: str, phrases: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Slots (in table order) a phrase of which occurs in ``words``, not counting occurrences
    inside a longer matched phrase: "event date" asks about the event, not about the date."""
    spans = {
        name: [(start, start + len(p)) for p in hits for start in _starts(words, p)]
        for name, slot_phrases in phrases.items()
        if (hits := [p for p in slot_phrases if p in words])
    }
    found = [span for slot_spans in spans.values() for span in slot_spans]
    return tuple(
        name
        for name, slot_spans in spans.items()
        if any(not _inside(span, found) for span in slot_spans)
    )


def _starts(words: str, phrase: str) -> list[int]:
    starts, start = [], words.find(phrase)
    while start != -1:
        starts.append(start)
        start = words.find(phrase, start + 1)
    return starts


def _inside(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
    return any(a <= span[0] and span[1] <= b and b - a > span[1] - span[0] for a, b in others)


@dataclass(frozen=True, slots=True)
class UserTurn:
    """How the user read one agent message, and what it replied.

    Attributes:
        asked: slots the message asked about, in table order.
        priority_asked: the message asked which constraint matters more.
        proposed: the option the message proposed, if it named exactly one.
        accepted: the user's verdict on the proposal (``None``: no proposal).
        understood: the user found something to answer.
        reply: what the user said.
        values: slot values the reply revealed.
    """

    asked: tuple[str, ...]
    priority_asked: bool
    proposed: str | None
    accepted: bool | None
    understood: bool
    reply: str
    values: tuple[tuple[str, Value], ...] = ()


@dataclass(frozen=True, slots=True)
class UserState:
    values: tuple[tuple[str, Value], ...]
    confirmed: str | None
    pending: tuple[str, ...]


class SimulatedUser:
    """Answers the agent on behalf of the task's hidden facts.

    Args:
        task: the task whose slots and truth the user holds.
        slot_phrases: for each slot, the phrases a question may use to refer to it.
        judges: whether the user judges proposals; a user who asked a question it cannot
            answer itself (the lookup domain) does not, or it would give the answer away.
    """

    def __init__(
        self, task: Task, slot_phrases: Mapping[str, tuple[str, ...]], *, judges: bool = True
    ) -> None:
        self.task = task
        self._slot_phrases = {
            slot.name: _compile(slot_phrases.get(slot.name, (slot.name.replace("_", " "),)))
            for slot in task.slots
        }
        self._priority = _compile(PRIORITY_PHRASES)
        self._options = _option_keys(tuple(task.truth.satisfaction)) if judges else {}
        self.values: dict[str, Value] = {s.name: s.value for s in task.slots}
        self.confirmed: str | None = None
        self.pending: list[str] = []

    def __getstate__(self) -> dict[str, Any]:
        # The option table is a shared read-only view, which cannot pickle: it is rebuilt
        # (from the same cache) when the user unpickles, so environments pickle.
        return {**self.__dict__, "_options": bool(self._options)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        judges = state["_options"]
        self._options = _option_keys(tuple(self.task.truth.satisfaction)) if judges else {}

    def state(self) -> UserState:
        return UserState(tuple(self.values.items()), self.confirmed, tuple(self.pending))

    def restore(self, state: UserState) -> None:
        self.values = dict(state.values)
        self.confirmed = state.confirmed
        self.pending = list(state.pending)

    def change_mind(self, slot: str, value: Value) -> None:
        """Apply a scheduled change; the user mentions it at the next opportunity."""
        self.values[slot] = value
        self.confirmed = None
        self.pending.append(slot)

    def announce(self) -> tuple[str | None, tuple[tuple[str, Value], ...]]:
        """Unprompted words about changes of mind since the user last spoke."""
        if not self.pending:
            return None, ()
        names = list(dict.fromkeys(self.pending))
        self.pending.clear()
        said = " ".join(self.task.slot(n).say(self.values[n]) for n in names)
        return f"Change of plan: {said}", tuple((n, self.values[n]) for n in names)

    def respond(self, text: str) -> UserTurn:
        words = normalise(text)
        proposed = [option for key, option in self._options.items() if key in words]
        priority_asked = any(p in words for p in self._priority)
        asked = _mentioned(words, self._slot_phrases)
        if priority_asked and "priorities" in self.values:
            asked += ("priorities",)
        parts: list[str] = []
        changed, changed_values = self.announce()
        if changed:
            parts.append(changed)
        accepted: bool | None = None
        option = proposed[0] if len(proposed) == 1 else None
        if len(proposed) > 1:
            parts.append("Please propose one option, not several.")
        elif option is not None:
            accepted = option in self.task.truth.best
            if accepted:
                self.confirmed = option
                parts.append(f"Yes, {option} works for me. Please go ahead.")
            else:
                parts.append(f"No, {option} does not work for me: {self._objection(option)}")
        if priority_asked:
            parts.append(self._priorities())
        parts.extend(self.task.slot(n).say(self.values[n]) for n in asked if n != "priorities")
        understood = bool(asked or priority_asked or proposed)
        if not understood:
            parts.append("Sorry, I don't understand what you need from me.")
        values = changed_values + tuple((n, self.values[n]) for n in asked)
        return UserTurn(
            asked, priority_asked, option, accepted, understood, " ".join(parts), values
        )

    def _objection(self, option: str) -> str:
        truth = self.task.truth
        satisfied = truth.satisfaction.get(option, frozenset())
        missing = [c for c in self.task.priority_order() if c not in satisfied]
        for constraint in self.task.constraints:
            if missing and constraint.id == missing[0]:
                return f"I need {constraint.text}."
        return "I would prefer another option."

    def _priorities(self) -> str:
        by_id = {c.id: c for c in self.task.constraints}
        order = [by_id[c].text for c in self.task.priority_order() if by_id[c].kind != "policy"]
        if not order:
            return "I have no particular priorities."
        return "If I can't have everything, what matters most is " + ", then ".join(order) + "."
