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
from typing import Protocol

from .model import Reading


class Reader(Protocol):
    """Reads one message: one :class:`Reading` per part it read (a clause, or the whole
    message), each naming a slot of the phrase table, a shared intent
    (:data:`~stategym.kernel.understanding.intents.PRIORITIES`, ``CHOICE``, ``OVERVIEW``) or
    ``None`` for nothing understood. The same text must always get the same readings."""

    def read(self, text: str) -> tuple[Reading, ...]: ...


class ReaderSource(Protocol):
    """Makes the reader of one domain's phrase table."""

    @property
    def name(self) -> str:
        """How trajectories name this reading (``Trajectory.meta["reader"]``)."""
        ...

    def reader(self, phrases: Mapping[str, tuple[str, ...]]) -> Reader: ...
