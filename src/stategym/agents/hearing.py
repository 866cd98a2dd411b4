"""How scripted agents take in what the simulated user says.

Every domain's simulated user states a slot value in a fixed sentence of its own ("My budget
is $900.") and ranks preferences in one sentence every domain shares ("If I can't have
everything, what matters most is X, then Y."), naming a preference by words that state no
slot value ("the fare type", not "a refundable fare"). The domains differ only in the
sentences and the words of their preferences, which they pass in; the bookkeeping is here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value

Answers = tuple[tuple[str, re.Pattern[str], Callable[[str], Value]], ...]
"""For each slot: its name, the pattern of the user's answer (group 1 is the value), and the
value's type."""

PRIORITIES = re.compile(r"what matters most is (.*?)\.(?:\s|$)")
"""The user's ranking of the preferences, most important first, joined by ``", then "``."""


class Knowledge(Protocol):
    """The part of a domain's beliefs that hearing and the shared commit loop use."""

    values: dict[str, Value]
    """Slot values the agent knows (from the request, the user, or its own guesses)."""
    order: tuple[str, ...] | None
    """The user's ranking of the preferences; ``None`` while unknown."""
    changed: bool
    """The user changed a known value since the flag was last reset (a change of mind)."""

    def see(self, observation: Observation) -> object:
        """Take in tool results and the user's words."""
        ...


def read_order(text: str, preference: Callable[[str], str | None]) -> tuple[str, ...] | None:
    """Preference ids in the order the user ranked them (``None``: ``text`` ranks nothing).

    Args:
        text: the user's words.
        preference: the preference id a ranked phrase speaks of (``None``: no preference,
            such as a need the user also ranks).
    """
    match = PRIORITIES.search(text)
    if match is None:
        return None
    found = (preference(phrase) for phrase in match.group(1).split(", then "))
    return tuple(p for p in found if p is not None)


def hear(
    beliefs: Knowledge,
    text: str | None,
    answers: Answers,
    preference: Callable[[str], str | None],
) -> None:
    """Take in every slot value and the priority order that the user's ``text`` states.

    A value that differs from one already known sets ``beliefs.changed``.
    """
    if not text:
        return
    for name, pattern, kind in answers:
        for match in pattern.finditer(text):
            value = kind(match.group(1))
            if name in beliefs.values and beliefs.values[name] != value:
                beliefs.changed = True
            beliefs.values[name] = value
    order = read_order(text, preference)
    if order is not None:
        beliefs.order = order
