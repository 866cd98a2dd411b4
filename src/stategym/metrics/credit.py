"""Per-round credit: a scorecard's events turned into rewards aligned to the agent's turns.

The rule (``docs/metrics.md``, "Credit"). Let ``R_t`` be the *running composite* after round
``t``: R's formula (:func:`~stategym.metrics.composite.composite_reward`) applied to the
counts of the events paid in rounds ``0..t`` (each dimension's
:attr:`~stategym.metrics.declaration.DimensionSpec.running` quality: a must-ask slot not
asked yet counts as missed, a required call not made yet as uncovered, a decision point not
settled yet as not safe, the final choice as 0 until the end). The last round instead ends
at the episode's R itself, ``R_T = R``. Round ``t`` is paid::

    r_t = R_t - R_{t-1}        (R_{-1} = 0)

so that:

- **the rewards sum to R** (``sum(r_t) == R`` up to float rounding): the dense return and
  the composite are the same number, so outcome, composite and dense credit differ only in
  how they spread it over the turns;
- **harm dominates**: a harmful episode's return is ``-Harm < 0`` and a harmless one's is
  R > 0; every return is in [-1, 1] and every round's reward in [-2, 2], however many calls
  an agent pads a round with (a padded round pays the fall in R its waste causes, once);
- **nothing is paid with hindsight**: ``r_t`` reads only events of rounds up to ``t`` (the
  scorer emits no event about a round later), except the last round, which also settles
  the terminal events (a question never asked, a missed commit, the final choice).

Alignment. Round ``t`` is the agent's ``t``-th turn (one assistant message): the user's
reply and the tool results are that round's observation and earn nothing of their own. An
invalid round (a format error, an empty batch) is a wasted round (parallelism's economy),
paid the fall in the running composite it causes. Rounds past an episode's end (a shorter
member of a group) are absorbing zeros for the trainer. Inside a round,
:attr:`RoundCredit.calls` splits the round's reward over its calls: the calls in the order
they are logged, which is the order the agent wrote them (the order of their tokens); call
``j`` is paid the change in the running composite from adding its own events and counting it
as played; the accepted ``finish`` causes no event and counts as no call (a rejected one is
a failed call like any other). :attr:`RoundCredit.rest` is the
part no call caused: a message's events, and at the last round the settlement ``R - R_(after
its calls)``.

Example: the expert on a travel task is paid its R of 1.0 over its rounds:

>>> from stategym import Env, run_episode
>>> from stategym.agents import resolve
>>> env = Env("travel")
>>> trajectory = run_episode(env, resolve(env.domain, "expert"), seed=3)
>>> paid = credit(trajectory, env.task)
>>> round(sum(paid.rewards), 9), len(paid.rewards) == len(trajectory.rounds)
(1.0, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundRecord, Trajectory

from .composite import composite_reward
from .declaration import EventCounts
from .dimensions import DECLARED
from .events import Event, Kind
from .gold import Gold, gold_of
from .score import Scorecard, score
from .trace import ending

_HARMFUL = Kind.COMMIT_HARMFUL  # read once (see stategym.metrics.risk on Enum members)
_RUNNING = tuple((d, spec.running) for d, spec in DECLARED.items())
"""Each dimension's running quality, in declaration order (read once per call credited)."""


@dataclass(frozen=True, slots=True)
class RoundCredit:
    """The reward of one round (one agent turn) and how it splits over the round's calls.

    Attributes:
        round: the round's index.
        reward: ``R_t - R_{t-1}``; equals ``sum(calls) + rest`` up to float rounding.
        calls: one share per logged call of the round, in logged order (the accepted
            ``finish`` and calls that caused nothing get the change their being played
            made, often 0).
        rest: the share no call caused: a message's events, and the last round's
            settlement of the terminal events.
        running: ``R_t``, the running composite after the round (R at the last round).
    """

    round: int
    reward: float
    calls: tuple[float, ...]
    rest: float
    running: float


@dataclass(frozen=True, slots=True)
class Credit:
    """Per-round credit of one trajectory.

    Attributes:
        rounds: one entry per round, in order.
        composite: the episode's R, which the rewards sum to.
    """

    rounds: tuple[RoundCredit, ...]
    composite: float

    @property
    def rewards(self) -> tuple[float, ...]:
        """``r_t`` for every round ``t``: the turn rewards."""
        return tuple(r.reward for r in self.rounds)


def running_composite(counts: EventCounts, gold: Gold) -> float:
    """R's formula on the events counted so far (each dimension's running quality)."""
    qualities: dict = {}
    applicable = []
    for dimension, running in _RUNNING:
        qualities[dimension], used = running(counts, gold)
        if used:
            applicable.append(dimension)
    harm = -counts.total.get(_HARMFUL, 0.0)
    return composite_reward(qualities, applicable, harm)


def pay_round(
    counts: EventCounts,
    gold: Gold,
    record: RoundRecord,
    events: Sequence[Event],
    before: float,
    final: float | None = None,
) -> RoundCredit:
    """Credit one round from its own (non-terminal) events, updating ``counts``.

    Args:
        counts: the events of the rounds before, updated in place with this round's.
        gold: the task's gold tables.
        record: the round.
        events: the round's non-terminal events, in scorecard order.
        before: ``R_{t-1}``.
        final: the episode's R when this is its last round (settles the terminal events).
    """
    by_call: dict[int, list[Event]] = {}
    loose: list[Event] = []
    for event in events:
        (loose if event.call is None else by_call.setdefault(event.call, [])).append(event)
    shares: list[float] = []
    running = before
    calls = record.calls
    ended = ending(calls)
    for position in range(len(calls)):
        if by_call:
            for event in by_call.get(position, ()):
                counts.add(event)
        counts.calls += position != ended
        after = running_composite(counts, gold)
        shares.append(after - running)
        running = after
    for event in loose:
        counts.add(event)
    after = running_composite(counts, gold) if loose or not calls else running
    if final is not None:
        counts.done = True
        after = final
    return RoundCredit(record.index, after - before, tuple(shares), after - running, after)


def credit(trajectory: Trajectory, task: Task, card: Scorecard | None = None) -> Credit:
    """Per-round rewards of a trajectory (see the module docstring for the rule).

    Args:
        trajectory: the episode's log.
        task: its task.
        card: its scorecard, if already computed (``score(trajectory, task)``).
    """
    card = score(trajectory, task) if card is None else card
    return credit_rounds(trajectory.rounds, card, gold_of(task))


def credit_rounds(rounds: Sequence[RoundRecord], card: Scorecard, gold: Gold) -> Credit:
    """Per-round rewards from the rounds and their scorecard."""
    own: Mapping[int, list[Event]] = _own_events(card.events)
    counts = EventCounts()
    paid: list[RoundCredit] = []
    before = 0.0
    for i, record in enumerate(rounds):
        final = card.composite if i == len(rounds) - 1 else None
        paid.append(pay_round(counts, gold, record, own.get(record.index, []), before, final))
        before = paid[-1].running
    return Credit(tuple(paid), card.composite)


def _own_events(events: Sequence[Event]) -> dict[int, list[Event]]:
    """Each round's non-terminal events, in scorecard order."""
    own: dict[int, list[Event]] = {}
    for event in events:
        if not event.terminal:
            own.setdefault(event.round, []).append(event)
    return own


__all__: Sequence[str] = (
    "Credit",
    "RoundCredit",
    "credit",
    "credit_rounds",
    "pay_round",
    "running_composite",
)
