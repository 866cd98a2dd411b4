"""One pass over a trajectory's rounds, read against the gold call graph.

:func:`trace` works out, once, what every dimension asks of the log: which gold node each
call stands for, when each gold value was first observed, when each slot was revealed, which
proposals the user accepted, when the world and the user changed, which arguments of a commit
named a result the agent had not seen, and where the episode's final decision was taken. It
reads only the round records (with the provenance of each argument) and the task's gold tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stategym.kernel.errors import TrajectoryError
from stategym.kernel.protocol import FINISH
from stategym.kernel.provenance import Origin, Provenance, Source
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import CallRecord, RoundKind, RoundRecord

from .gold import ASK, CONFIRM, Gold

# Read once: on CPython 3.11 an Enum member read as a class attribute goes through the
# metaclass's attribute hook (EnumType defines __getattr__), several times the cost of a
# module global, and these are read for every call of every round.
_INVALID, _SAY = RoundKind.INVALID, RoundKind.SAY
_COMMIT = Effect.COMMIT


@dataclass(slots=True)  # not frozen: see the note after SayView
class CallView:
    """One tool call as the metrics see it.

    Attributes:
        round: the round it was issued in.
        position: its place in the round's calls as logged (``finish`` counted): the order
            the agent wrote them in, which per-call credit follows.
        name: the tool name as written.
        ok: it ran without a tool or format error.
        malformed: it never ran (a format error: bad JSON, unknown tool, wrong arguments).
        effect: the tool's declared effect (``None`` for unknown tools and ``finish``).
        candidates: the gold nodes it may stand for: those it matches exactly, else every
            node of the same tool (a call with a guessed argument still stands for them).
        first: the gold node it covers for the first time (a successful exact match).
        option: the option its result names (commit and write tools name one).
        arguments: its decoded arguments (``{}`` if they were not a JSON object).
        damage: what the call destroyed, as its result reported it under ``"damage"`` (the
            convention for any call with irreversible consequences, such as data lost).
        content: its result (``None`` on error): what a re-read observed.
        guessed: for a successful commit, the arguments whose value it *guessed*: ungrounded
            when it was sent (no observation had shown it) and shown by the result of another
            call of its own round (a hold id paid beside the hold that returned it; see
            :func:`guessed_arguments`). Empty for every other call.
    """

    round: int
    position: int
    name: str
    ok: bool
    malformed: bool
    effect: Effect | None
    candidates: tuple[str, ...]
    first: str | None
    option: str | None
    arguments: Mapping[str, Any]
    damage: str | None = None
    content: Any = None
    guessed: tuple[str, ...] = ()


@dataclass(slots=True)  # not frozen: see below
class SayView:
    """One message to the user, as the user read it."""

    round: int
    asked: tuple[str, ...]
    priority_asked: bool
    proposed: str | None
    accepted: bool | None
    understood: bool
    open: bool = False
    text: str = ""


# The two views above are built for every call and message the scorer reads (the dense
# reward's hot path) and never leave the metrics; a frozen dataclass's ``__init__`` sets
# each field through ``object.__setattr__``, about six times the cost of a plain one for
# CallView's twelve fields. Nothing assigns to a view after it is built.


@dataclass(slots=True)
class Trace:
    """What the rounds show so far, indexed for the metrics; :meth:`add` reads one more round.

    The trace grows one round at a time (the dense reward feeds it each round as it is played;
    :func:`trace` feeds it a whole log), and nothing already in it changes when a round is
    added: every query below is about rounds before a given one, so a dimension reading round
    ``t`` gets the same answer whether the rounds after ``t`` exist yet or not.

    Attributes:
        gold: the task's gold tables.
        calls: every tool call except the accepted ``finish``, in order (a rejected one is
            a failed call like any other: see :func:`ending`).
        says: every message to the user, in order.
        seen: for each gold tool node, ``(round, option)`` of every successful exact match.
        stood: for each gold tool node, ``(round, option)`` of every successful call that
            may stand for it (a hold of another option stands for the gold hold).
        revealed: for each slot, the first round whose observation showed its value.
        accepted: ``(round, option)`` of every proposal the user accepted.
        updates: rounds whose observation told the agent the user changed a slot (a
            change of mind counts once the agent could know it, never earlier).
        changes_before: ``changes_before[t]``: scheduled events fired before round ``t``.
        fired: ``(round, event index)`` of every scheduled event, in the order they fired
            (at the end of that round).
        wasted: rounds with no usable action (an invalid or empty round).
        last: the index of the last round read (-1 before any).
        end: the round of the final decision (``finish``, or the last round), once done.
        done: the episode is over.
        answer: the accepted ``finish``'s ``answer``, when it gave a text.
        first: for each gold node, the round at whose end its value was first observed: a
            tool node's first exact match, a must-ask node's slot revealed, a confirmation
            node's first accepted proposal.
    """

    gold: Gold
    calls: list[CallView] = field(default_factory=list)
    says: list[SayView] = field(default_factory=list)
    seen: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    stood: dict[str, list[tuple[int, str | None]]] = field(default_factory=dict)
    revealed: dict[str, int] = field(default_factory=dict)
    accepted: list[tuple[int, str]] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)
    changes_before: list[int] = field(default_factory=lambda: [0])
    fired: list[tuple[int, int]] = field(default_factory=list)
    wasted: list[int] = field(default_factory=list)
    last: int = -1
    end: int | None = None
    done: bool = False
    answer: str | None = None
    first: dict[str, int] = field(default_factory=dict)
    _finished: int | None = None
    _stood_first: dict[str, dict[str | None, int]] = field(default_factory=dict)
    """``stood`` indexed: for each node and option, the first round a call stood for it
    (what :meth:`observed_before` asks, without a pass over every call so far)."""

    @property
    def finished(self) -> bool:
        """The agent called ``finish`` (successfully)."""
        return self._finished is not None

    def observed(self, node: str) -> int | None:
        """The round at whose end a gold node's value was first observed (``None``: never)."""
        return self.first.get(node)

    def observed_before(self, node: str, at: int, option: str | None = None) -> bool:
        """A gold node's value was observed before round ``at``; with ``option``, also a
        value the agent observed for that very option (its own hold of the option it then
        proposes or pays) counts."""
        first = self.observed(node)
        if first is not None and first < at:
            return True
        if option is None:
            return False
        stood = self._stood_first.get(node)
        if stood is None:
            return False
        round_ = stood.get(option)
        return round_ is not None and round_ < at

    def add(self, record: RoundRecord, last: bool = False) -> tuple[list[CallView], SayView | None]:
        """Read one more round (``last``: the episode ends with it); returns its calls
        (the accepted ``finish`` left out) and its message to the user, as the dimensions see
        them."""
        index = record.index
        self.last = index
        kind = record.kind
        if kind is _INVALID:
            self.wasted.append(index)
        say = self._add_say(record) if kind is _SAY else None
        notice = record.notice_values
        if notice:
            for name, _ in notice:
                self._reveal(name, index)
            self.updates.append(index)
        views = []
        gold, seen, first, stood, stood_first = (
            self.gold,
            self.seen,
            self.first,
            self.stood,
            self._stood_first,
        )
        ended = ending(record.calls)
        for position, call in enumerate(record.calls):
            if position == ended:
                if self._finished is None:
                    self._finished = index
                    given = call.arguments
                    answer = given.get("answer") if isinstance(given, dict) else None
                    self.answer = answer if isinstance(answer, str) else None
                continue
            guessed: tuple[str, ...] = ()
            if call.effect is _COMMIT and call.error is None:
                guessed = guessed_arguments(call, record.calls)
            view = _view(index, position, call, gold, seen, first, guessed)
            views.append(view)
            if view.ok:
                option = view.option
                for node in view.candidates:
                    stood.setdefault(node, []).append((index, option))
                    stood_first.setdefault(node, {}).setdefault(option, index)
        self.calls += views
        fired = record.events
        self.changes_before.append(self.changes_before[-1] + len(fired))
        if fired:
            self._check_fired(index, fired)
            self.fired += [(index, event) for event in fired]
        if last:
            self.done = True
            self.end = index if self._finished is None else self._finished
        return views, say

    def _check_fired(self, index: int, fired: tuple[int, ...]) -> None:
        """Refuse a round whose fired events are not the task's next ones.

        *Why*: the environment fires the task's events in their order, each once, so the
        fired indices of a log run ``0, 1, 2, ...`` across its rounds. A log that says
        otherwise (edited, or scored against another task: another seed's task may have
        fewer events) would index past the schedule, or wrap round to another event with a
        negative index, and be scored on changes that never happened (audit 14b F3).
        """
        start, scheduled = len(self.fired), len(self.gold.events)
        if fired != tuple(range(start, start + len(fired))) or start + len(fired) > scheduled:
            raise TrajectoryError(
                f"round {index} fires events {list(fired)} after {start} fired, but the task "
                f"schedules {scheduled}, to fire in order: the log is not of this task"
            )

    def _add_say(self, record: RoundRecord) -> SayView | None:
        turn = record.user
        if turn is None:
            return None
        index = record.index
        say = SayView(
            index,
            turn.asked,
            turn.priority_asked,
            turn.proposed,
            turn.accepted,
            turn.understood,
            turn.open,
            record.say or "",
        )
        self.says.append(say)
        for name, _ in turn.values:
            self._reveal(name, index)
        if turn.accepted and turn.proposed is not None:
            if not self.accepted:
                for node in self.gold.by_tool.get(CONFIRM, ()):
                    self.first.setdefault(node, index)
            self.accepted.append((index, turn.proposed))
        if len(turn.values) > len(turn.asked):  # the reply announced a change of mind
            self.updates.append(index)
        return say

    def _reveal(self, slot: str, index: int) -> None:
        if slot not in self.revealed:
            self.revealed[slot] = index
            node = f"{ASK}:{slot}"
            if node in self.gold.nodes and self.gold.nodes[node].tool == ASK:
                self.first.setdefault(node, index)


def ending(calls: Sequence[CallRecord]) -> int | None:
    """The position of the ``finish`` that ended the episode, the one logged call that does
    not count as a call: the first ``finish`` of its round the environment accepted.

    Every other ``finish`` counts: a rejected one (a format error, or not run beside a
    malformed call) did not end the episode, and a second one in the ending round ended
    nothing. Each is a failed or needless call like any other, extra, so it costs economy.
    *Why*: when every ``finish`` was skipped, ten rounds of ``finish(bogus=1)`` before the
    real one were free (R = 1.000 on 30/30 seeds of every domain), and so were three
    well-formed ``finish`` calls in the last round.
    """
    for position, call in enumerate(calls):
        if call.name == FINISH and call.error is None:
            return position
    return None


def guessed_arguments(call: CallRecord, round_calls: Sequence[CallRecord]) -> tuple[str, ...]:
    """The arguments of ``call`` that name a result of its own round: their value was
    ungrounded when the call was sent (its provenance, ``call.sources``, is ``None``: nothing
    the agent had observed showed it) and the result of another call in ``round_calls`` (the
    calls of its round) shows it as a value that call minted (:func:`_minted`: not an echo
    of its own arguments, not empty).

    The agent chooses a round's calls before it sees any of their results
    (:mod:`stategym.kernel.protocol`), so such a value is a guess of what the other call
    would return, right or wrong: ``[hold_fare(X), book_and_pay("H2")]`` pays a hold whose
    price and expiry the agent never saw. An ungrounded value that no result of the round
    shows (bank's empty ``quote_id``, "no quote") is not one: this rule cannot tell a guess of
    something no result showed from a default or a value the agent composed.

    >>> from stategym.kernel.trajectory import CallRecord
    >>> hold = CallRecord("c5_0", "hold_fare", {"flight_id": "AQ449"}, None,
    ...                   {"hold_id": "H2", "option": "AQ449"}, None, None, {})
    >>> pay = CallRecord("c5_1", "book_and_pay", {"hold_id": "H2"}, None,
    ...                  {"booking_id": "B3"}, None, None, {"hold_id": None})
    >>> guessed_arguments(pay, [hold, pay])
    ('hold_id',)
    """
    arguments = call.arguments
    unseen = [name for name, origin in call.sources.items() if origin is None]
    if not unseen or not isinstance(arguments, dict):
        return ()
    minted: set[Any] = set()
    for other in round_calls:
        if other is not call and other.error is None:
            minted |= _minted(other)
    return tuple(name for name in unseen if _names_minted(minted, arguments.get(name)))


def _minted(call: CallRecord) -> set[Any]:
    """The values ``call``'s result shows that it was not given: what only running it could
    tell (a new hold's id), not an echo of its own arguments (``verify_payee``'s name) nor an
    empty value, which names nothing (bank's ``quote_id=""``, audit 14d F2)."""
    shown = Provenance()  # origins never read
    shown.observe(call.content, Origin(Source.TOOL, -1, call.id))
    given = call.arguments if isinstance(call.arguments, dict) else {}
    echoed = {item for value in given.values() for item in _items(value)}
    return {value for value in shown.first if value not in echoed and value != ""}


def _names_minted(minted: set[Any], value: Any) -> bool:
    """``value``, or one item of it (a list argument), is in ``minted``."""
    return any(item in minted for item in _items(value))


def _items(value: Any) -> list[Any]:
    """The scalar values an argument holds (itself, or a list's items); booleans are left
    out (``True == 1`` would match a count)."""
    items = value if isinstance(value, list) else [value]
    return [i for i in items if isinstance(i, str | int | float) and not isinstance(i, bool)]


def trace(rounds: Sequence[RoundRecord], gold: Gold, done: bool) -> Trace:
    """Read ``rounds`` (all of an episode, or the ones played so far) against ``gold``."""
    tr = Trace(gold)
    for i, record in enumerate(rounds):
        tr.add(record, last=done and i == len(rounds) - 1)
    return tr


def _view(
    index: int,
    position: int,
    call: CallRecord,
    gold: Gold,
    seen: dict[str, list[tuple[int, str | None]]],
    first_seen: dict[str, int],
    guessed: tuple[str, ...],
) -> CallView:
    name, arguments = call.name, call.arguments
    if isinstance(arguments, dict):
        exact = gold.exact(name, arguments)
    else:
        arguments, exact = {}, ()
    ok = call.error is None
    content = call.content
    option = damage = None
    if ok and isinstance(content, dict):
        option = content.get("option")
        option = option if isinstance(option, str) else None
        damage = content.get("damage")
    first: str | None = None
    if ok and exact:
        first = next((node for node in exact if node not in seen), None)
        for node in exact:
            # a call covers one new node; it re-observes the nodes it covered before
            if node == first or node in seen:
                if node not in seen:
                    first_seen.setdefault(node, index)
                seen.setdefault(node, []).append((index, option))
    malformed = call.error is not None and call.error_kind != "tool"
    return CallView(
        index,
        position,
        name,
        ok,
        malformed,
        call.effect,
        exact or gold.by_tool.get(name, ()),
        first,
        option,
        arguments,
        damage if isinstance(damage, str) else None,
        content if ok else None,
        guessed,
    )
