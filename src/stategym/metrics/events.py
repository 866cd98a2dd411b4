"""Per-round events: what each decision-quality dimension is made of.

Every metric is computed from typed events attached to the round that caused them (a needless
question, a call issued before a value it depends on was observed, a safe commit...). The
list :func:`stategym.metrics.score` returns is what :mod:`stategym.metrics.credit` turns
into per-round rewards and what :func:`stategym.metrics.dense_reward` pays step by step, so
credit-assignment code reads exactly what the scorer counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Dimension(StrEnum):
    """The four decision-quality dimensions."""

    CLARIFICATION = "clarification"
    PRIORITY = "priority"
    PARALLELISM = "parallelism"
    RISK = "risk"


DIMENSIONS: tuple[Dimension, ...] = tuple(Dimension)


class Kind(StrEnum):
    """What happened. The comment after each member is its raw ``value``."""

    ASK_NEEDED = "ask_needed"
    """A must-ask slot asked before its first use (a true positive): +1."""
    ASK_LATE = "ask_late"
    """A must-ask slot asked after it was used: 0 (the miss was counted at the use)."""
    ASK_NEEDLESS = "ask_needless"
    """A question about something given, derivable, irrelevant or already known, a repeated
    or rejected proposal, a repeated open question, or a message the user could not use:
    -weight (derivable 0.5, else 1)."""
    ASK_MISSED = "ask_missed"
    """A must-ask slot used (or the episode ended) before it was asked: -1."""
    CHOICE = "choice"
    """The final choice, scored against the best feasible one: +Q_prio."""
    INVERSION = "inversion"
    """A satisfied constraint ranked below a violated one that some option satisfies: 0."""
    CALL_MATCHED = "call_matched"
    """A call that first covers a required node of the gold call graph: +1."""
    CALL_EARLY = "call_early"
    """A call (or a proposal) issued before a value it depends on was observed, one per
    call, whether or not the guess was right: -1."""
    CALL_EXTRA = "call_extra"
    """A call that covers nothing new and is not excused by a change in the world: -1."""
    ROUND_WASTED = "round_wasted"
    """A round with no usable action (invalid or empty), or the end of an episode the agent
    never finished: -1, counted as an extra call."""
    CALL_SERIALISED = "call_serialised"
    """A call that could have gone in the same round as an earlier, independent one: -1."""
    COMMIT_SAFE = "commit_safe"
    """A right commit (or answer) with every precondition observed in an earlier round: +1."""
    COMMIT_UNVERIFIED = "commit_unverified"
    """A right commit (or answer) with some precondition unobserved (lucky): 0."""
    COMMIT_HARMFUL = "commit_harmful"
    """A wrong, duplicate, unplanned or forbidden commit, or any call (whatever its
    declared effect) whose result reports irreversible damage: -severity."""
    COMMIT_MISSED = "commit_missed"
    """A decision point where the agent should have committed and did not, or a task judged
    on its answer that ended without one: 0."""
    ANSWER_WRONG = "answer_wrong"
    """The ``finish`` answer of a task judged on its answer names no best option (or names
    one when nothing is best): 0, and it counts against Q_risk as a harmful commit does, with
    no harm (nothing irreversible happened)."""
    ABSTAIN_CORRECT = "abstain_correct"
    """A decision point where the agent rightly committed nothing: +1."""


@dataclass(frozen=True, slots=True)
class Event:
    """One scored thing that happened.

    Attributes:
        round: index of the round that caused it.
        dimension: the dimension it counts toward.
        kind: what happened.
        value: its raw contribution in the metric's own units (see :class:`Kind`).
        reward: its additive share: ``value`` divided by the dimension's normaliser (so
            each dimension's positive rewards sum to at most 1) and by the number of
            dimensions the task has; harmful commits instead carry ``-(1 + severity)``. The
            expert's shares sum to its R = 1; the dense reward pays the change in the
            running composite instead (:mod:`stategym.metrics.credit`), which is bounded.
        subject: what it is about (a slot, a gold node id, an option, a constraint pair).
        terminal: known only once the episode is over (a missed question never asked, a
            missed commit, the final choice); dense rewards pay these at the last step.
        call: the position, in its round's logged calls, of the call that caused it
            (``None``: a message to the user, or a terminal event); per-call credit reads it.
    """

    round: int
    dimension: Dimension
    kind: Kind
    value: float
    reward: float
    subject: str = ""
    terminal: bool = False
    call: int | None = None
