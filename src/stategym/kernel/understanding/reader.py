"""The seam between the simulated user and whatever reads the agent's messages for it.

By default the user reads through the rule-based intent model of this package
(:func:`~stategym.kernel.understanding.model.matcher_for`). A :class:`ReaderSource` passed to
:class:`~stategym.kernel.env.Env` replaces that reading and nothing else: the user still holds
the facts, judges proposals and words every reply itself, so a reader can only change *which*
slots or intents a message is taken to ask (``stategym.llm.reading`` is the one stategym
ships: a model behind an OpenAI-compatible endpoint, its answers cached).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from .model import Reading, matcher_for


class Reader(Protocol):
    """Reads one message: one :class:`Reading` per part it read (a clause, or the whole
    message), each naming a slot of the phrase table, a shared intent
    (:data:`~stategym.kernel.understanding.intents.PRIORITIES`, ``CHOICE``, ``OVERVIEW``) or
    ``None`` for nothing understood. The same text must always get the same readings.

    ``beside_request``: ``text`` is what is left of a message whose request was taken out
    (the sentences of a proposal, read by the user itself), so a statement in it asks
    nothing ("It fits your budget.", "To recap: your budget is $1050."), while a question
    still does ("What's your budget?"). A reader that reads statements as asking nothing
    anyway may ignore it."""

    def read(self, text: str, *, beside_request: bool = False) -> tuple[Reading, ...]: ...


class ReaderSource(Protocol):
    """Makes the reader of one domain's phrase table."""

    @property
    def name(self) -> str:
        """How trajectories name this reading (``Trajectory.meta["reader"]``)."""
        ...

    def reader(self, phrases: Mapping[str, tuple[str, ...]]) -> Reader: ...


@dataclass(frozen=True, slots=True)
class RulesBreakTies:
    """Another reading (an LLM's) with the rules as its tie-breaker: where ``source`` reads a
    clause as lying between two slots (:attr:`Reading.between`) and the rule-based matcher
    reads the message as asking exactly one of the two, the user answers that one; otherwise
    it asks which was meant, as before. The rules have trained on the held-out sets' labelled
    questions, so they know which of two facts a domain's users mean by a terse "Leaving
    when?" (the dates, not the time of day). ``Env("travel",
    reader=RulesBreakTies(LLMReading(...)))``; trajectories name it ``openai:MODEL+rules``.
    """

    source: ReaderSource

    @property
    def name(self) -> str:
        return f"{self.source.name}+rules"

    def reader(self, phrases: Mapping[str, tuple[str, ...]]) -> Reader:
        return _TieBreaking(self.source.reader(phrases), phrases)


class _TieBreaking:
    def __init__(self, reader: Reader, phrases: Mapping[str, tuple[str, ...]]) -> None:
        self._reader = reader
        self._phrases = phrases

    def read(self, text: str, *, beside_request: bool = False) -> tuple[Reading, ...]:
        readings = self._reader.read(text, beside_request=beside_request)
        if not any(r.intent is None and len(r.between) == 2 for r in readings):
            return readings
        rules = matcher_for(self._phrases).read(text, beside_request=beside_request)
        ruled = {r.intent for r in rules} - {None}
        return tuple(_broken(r, ruled) for r in readings)


def _broken(reading: Reading, ruled: set[str | None]) -> Reading:
    """``reading`` with its tie broken, where the rules read one of its two slots alone."""
    if reading.intent is not None or len(ruled) != 1 or not ruled <= set(reading.between):
        return reading
    (slot,) = ruled
    return replace(
        reading, intent=slot, score=1.0, evidence=(*reading.evidence, "rules"), between=()
    )
