"""D1 clarification: ask every must-ask slot before using it, and nothing else.

Formula (``docs/metrics.md``)::

    Q_clar = TP / (TP + FN + FP)            (1 when all three are 0)

TP: must-ask slots asked before their first use. A slot is *used* by the first call that may
stand for a gold node its answer gates (whatever the call's arguments), or, when no call
does, by the episode's final decision; a slot the user volunteered (a change of mind
announced) before its use, unasked, drops out of M*. FN = |M*| - TP. FP: the weight of
needless questions: 1 for a slot that is given, irrelevant or already known (asked or
volunteered before), 1 for a repeated proposal (the same option again with no change of mind
announced in between), 1 for a message the user could not use (nothing asked, nothing
proposed), and ``ALPHA`` = 0.5 for a slot a tool could have told. A must-ask slot asked after
its use is neither TP nor FP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stategym.task import SlotKind, Task
from stategym.trajectory import Trajectory

from .events import Dimension, Event, Kind
from .gold import PRIORITIES, Gold, gold_of
from .trace import SayView, Trace, trace

ALPHA = 0.5
"""Weight of a question about a slot a tool could have answered."""


@dataclass(frozen=True, slots=True)
class Clarification:
    """Clarification counts of one trajectory.

    Attributes:
        quality: Q_clar in [0, 1].
        tp: must-ask slots asked before their first use.
        fn: must-ask slots not asked before their first use.
        fp: weighted needless questions.
        applicable: the task has must-ask slots or the agent asked needlessly.
    """

    quality: float
    tp: int
    fn: int
    fp: float
    applicable: bool


def clarification_quality(tp: int, fn: int, fp: float) -> float:
    """``TP / (TP + FN + FP)``, 1 when nothing was to be asked and nothing was.

    Example: three must-ask slots; the agent asks two before booking, never asks the third,
    and also asks about the seat (irrelevant) and the home airport (derivable):

    >>> clarification_quality(tp=2, fn=1, fp=1 + ALPHA)
    0.4444444444444444
    >>> clarification_quality(0, 0, 0)
    1.0
    """
    total = tp + fn + fp
    return tp / total if total else 1.0


def clarification(trajectory: Trajectory, task: Task) -> float:
    """Q_clar of a finished trajectory, in [0, 1] (see the module docstring)."""
    gold = gold_of(task)
    scored, _ = clarification_events(trace(trajectory.rounds, gold, True), gold, 1.0)
    return scored.quality


def _use_rounds(tr: Trace, gold: Gold) -> dict[str, tuple[int, bool]]:
    """For each must-ask slot: the round it is first used, and whether that is the end."""
    uses: dict[str, tuple[int, bool]] = {}
    for slot in gold.must_ask:
        gated = gold.gates.get(slot, frozenset())
        first = next((c.round for c in tr.calls if gated.intersection(c.candidates)), None)
        if first is not None and (tr.end is None or first <= tr.end):
            uses[slot] = (first, False)
        elif tr.end is not None:
            uses[slot] = (tr.end, True)
    return uses


def clarification_events(tr: Trace, gold: Gold, scale: float) -> tuple[Clarification, list[Event]]:
    """Score clarification and emit its events (rewards multiplied by ``scale``)."""
    norm = scale / max(1, len(gold.must_ask))
    uses = _use_rounds(tr, gold)
    events: list[Event] = []
    asked_in_time: set[str] = set()
    fp = 0.0
    proposals: dict[str, int] = {}
    for say in tr.says:
        for kind, weight, subject in _read_say(say, tr, gold, uses, asked_in_time, proposals):
            if kind is Kind.ASK_NEEDLESS:
                fp -= weight
            events.append(
                Event(say.round, Dimension.CLARIFICATION, kind, weight, weight * norm, subject)
            )
    # a slot revealed before its use but not asked in time was volunteered by the user
    volunteered = {
        s
        for s in gold.must_ask
        if s not in asked_in_time and s in uses and tr.revealed.get(s, uses[s][0]) < uses[s][0]
    }
    for slot in gold.must_ask:
        if slot in asked_in_time or slot in volunteered or slot not in uses:
            continue
        at, terminal = uses[slot]
        events.append(
            Event(at, Dimension.CLARIFICATION, Kind.ASK_MISSED, -1.0, -norm, slot, terminal)
        )
    tp = len(asked_in_time)
    fn = len(gold.must_ask) - tp - len(volunteered)
    applicable = bool(gold.must_ask) or fp > 0
    return Clarification(clarification_quality(tp, fn, fp), tp, fn, fp, applicable), events


def _read_say(
    say: SayView,
    tr: Trace,
    gold: Gold,
    uses: dict[str, tuple[int, bool]],
    asked_in_time: set[str],
    proposals: dict[str, int],
) -> list[tuple[Kind, float, str]]:
    """The clarification events of one message: ``(kind, value, subject)``."""
    out: list[tuple[Kind, float, str]] = []
    for slot in say.asked:
        known = tr.revealed.get(slot, say.round) < say.round
        kind = gold.kinds.get(slot)
        if slot in gold.must_ask and not known:
            use = uses.get(slot)
            if use is None or say.round < use[0]:
                asked_in_time.add(slot)
                out.append((Kind.ASK_NEEDED, 1.0, slot))
            else:
                out.append((Kind.ASK_LATE, 0.0, slot))
        elif kind is SlotKind.DERIVABLE and not known:
            out.append((Kind.ASK_NEEDLESS, -ALPHA, slot))
        else:
            out.append((Kind.ASK_NEEDLESS, -1.0, slot))
    if say.priority_asked and PRIORITIES not in say.asked:
        out.append((Kind.ASK_NEEDLESS, -1.0, PRIORITIES))
    if say.proposed is not None:
        last = proposals.get(say.proposed)
        if last is not None and not any(last < u < say.round for u in tr.updates):
            out.append((Kind.ASK_NEEDLESS, -1.0, f"propose:{say.proposed}"))
        proposals[say.proposed] = say.round
    if not say.asked and not say.priority_asked and say.proposed is None:
        out.append((Kind.ASK_NEEDLESS, -1.0, "unusable message"))
    return out


__all__: Sequence[str] = (
    "ALPHA",
    "Clarification",
    "clarification",
    "clarification_events",
    "clarification_quality",
)
