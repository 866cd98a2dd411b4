"""Audit 6a: three ways to game the composite, closed as rules (``docs/metrics.md``).

Each reproduction of the audit is pinned (the number before the fix in its docstring), and
each class has a property test over seeds of every stateful domain:

1. excuse harvesting: a change of the world excuses a re-read only while the agent's last
   look at what changed is out of date (made before the change could show); a copy of the
   first look after the change re-reads nothing;
2. padding: the first open question is free only while the choice is still to make; once a
   commit ran, or the user accepted a proposal with no change of mind since, it is needless;
3. fishing: a proposal rejected in the reply that announces a change of mind is waived only
   when the user would have accepted it on the wishes it held before the change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from expert_edits import Played, expert, inserted, replaced, replay
from metrics_toy import (
    LOOKUPS,
    PRICE,
    SEARCHES,
    call,
    calls,
    expert_rounds,
    finish,
    hold,
    pay,
    renumber,
    say,
    task,
    trajectory,
)

from stategym.kernel.protocol import FINISH, Action, CallBatch, Say, ToolCall
from stategym.kernel.task import Event, EventKind, Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import CallRecord, RoundRecord, Trajectory
from stategym.metrics import Kind, Scorecard, score
from stategym.metrics.clarification import DECIDED, OPEN
from stategym.registry import all_domains, get_domain

STATEFUL = sorted(d for d in all_domains() if not get_domain(d).read_only)


def _expert(domain: str, seed: int, mixed: bool = True) -> Played:
    return expert(domain, seed, mixed)


def _replay(
    domain: str, seed: int, edit: Callable[[list[Action]], list[Action]], mixed: bool = True
) -> tuple[Trajectory, Scorecard]:
    return replay(domain, seed, edit, mixed)


def _toy(the_task: Task, rounds: list[RoundRecord]) -> Scorecard:
    return score(trajectory(the_task, renumber(rounds)), the_task)


def _subjects(card: Scorecard, kind: Kind) -> list[tuple[int, str]]:
    return [(e.round, e.subject) for e in card.events if e.kind is kind]


# -- 1. a re-read needs an out-of-date look ---------------------------------------------------


def _day2(price: int = 500) -> CallRecord:
    """Day 2 searched: its result lists B (what PRICE changes) at ``price``."""
    flights = [{"id": "B", "price": price}]
    return call("search", {"origin": "HOME", "day": 2}, content={"flights": flights})


def test_a_copy_of_the_first_look_after_a_change_is_extra():
    """B's price moves before anything showed B; searching day 2 twice in one round re-reads
    nothing. Before: the second copy was excused."""
    the_task = task(events=(PRICE,))
    rounds = expert_rounds()
    rounds[1] = calls(1, *LOOKUPS, fired=(0,))
    rounds[2] = calls(2, SEARCHES[0], _day2(), _day2())
    card = _toy(the_task, rounds)
    assert _subjects(card, Kind.CALL_EXTRA) == [(2, "search")]
    assert card.parallelism.quality < 1.0


def test_a_repeat_of_a_look_made_after_the_change_is_extra():
    """Before: the repeat in the next round was excused, though nothing had changed since the
    agent looked."""
    the_task = task(events=(PRICE,))
    rounds = expert_rounds()
    rounds[1] = calls(1, *LOOKUPS, fired=(0,))
    rounds[2] = calls(2, SEARCHES[0], _day2())
    card = _toy(the_task, [*rounds[:3], calls(0, _day2()), *rounds[3:]])
    assert _subjects(card, Kind.CALL_EXTRA) == [(3, "search")]


def test_a_re_read_of_an_out_of_date_look_stays_excused():
    """The legitimate re-read: day 2 showed B, B's price moved, day 2 is searched again. Once:
    the look after the change is then fresh, so a second copy is extra."""
    the_task = task(events=(PRICE,))
    rounds = expert_rounds()
    rounds[2] = calls(2, SEARCHES[0], _day2(), fired=(0,))
    now = _day2(PRICE.value)  # the re-read shows B's new price
    once = _toy(the_task, [*rounds[:3], calls(0, now), *rounds[3:]])
    assert _subjects(once, Kind.CALL_EXTRA) == [] and once.parallelism.quality == 1.0
    twice = _toy(the_task, [*rounds[:3], calls(0, now, now), *rounds[3:]])
    assert _subjects(twice, Kind.CALL_EXTRA) == [(3, "search")]


def test_a_change_of_mind_dates_a_look_from_its_announcement():
    """A change of mind counts from the round that announced it: a look made after it fired
    but before the agent was told is out of date, so the re-read after the notice is the
    excused one and the look made unknowing is the extra."""
    day = Event(1, EventKind.USER_UPDATE, slot="day", value=2)  # the user now wants day 2
    again = call("search", {"origin": "HOME", "day": 2})
    rounds = [
        *expert_rounds()[:3],  # ask, look up, search days 1 and 2
        say(3, asked=("seat",), fired=(0,)),  # the change fires after this reply
        calls(4, again, notice=(("day", 2),)),  # told only at the end of this round
        calls(5, again),
        calls(6, hold("A")),
        say(7, proposed="A", accepted=True),
        calls(8, pay("A")),
        finish(9),
    ]
    assert _subjects(_toy(task(events=(day,)), rounds), Kind.CALL_EXTRA) == [(4, "search")]


def test_travel_seed_0_a_second_search_after_the_fare_move_is_extra():
    """Travel seed 0: AQ585's fare moves at the end of round 1, and the expert first searches
    day 10 (which lists it) in round 2. Before: that search twice in round 2, or again in
    round 3, scored R = 1.000, the expert's."""
    batch = _expert("travel", 0, False).actions[2]
    assert isinstance(batch, CallBatch)
    day10 = next(c for c in batch.calls if c.arguments.get("day") == 10)

    same = replaced(2, CallBatch((*batch.calls, day10)))
    for edit in (same, inserted(3, CallBatch((day10,)))):
        _, card = _replay("travel", 0, edit, mixed=False)
        assert card.parallelism.extra == 1
        assert card.composite < 1.0


@pytest.mark.parametrize("name", STATEFUL)
def test_no_copy_of_a_look_after_a_change_ties_the_expert(name):
    """Every call the expert makes after a change fired, duplicated in its round, or repeated
    in the next round when nothing fired at the end of its own, costs: the copy re-reads
    nothing that changed since the first look."""
    tried = 0
    for seed in range(8):
        expert = _expert(name, seed)
        rounds = expert.trajectory.rounds
        start = next((r.index + 1 for r in rounds if r.events), len(rounds))
        for i in range(start, len(rounds)):
            batch = expert.actions[i]
            if not isinstance(batch, CallBatch):
                continue
            for c in batch.calls:
                if c.name == FINISH:
                    continue
                edits = [inserted(i + 1, CallBatch((c,)))] if not rounds[i].events else []
                edits.append(replaced(i, CallBatch((*batch.calls, c))))
                for edit in edits:
                    _, card = _replay(name, seed, edit)
                    assert card.composite < expert.card.composite, (name, seed, i, c)
                    tried += 1
    assert tried > 0


def _names(value: Any, key: str) -> bool:
    """Whether ``key`` is one of the strings inside a JSON value."""
    if isinstance(value, dict):
        return any(_names(v, key) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_names(v, key) for v in value)
    return value == key


def _stale_reads(expert: Played) -> list[tuple[CallRecord, str]]:
    """The expert's reads whose entity a change of the world changed after them, each the
    last look at that entity: ``(call, key)``."""
    found = []
    for fired in expert.trajectory.rounds:
        for event in fired.events:
            change = expert.task.events[event]
            if change.kind is not EventKind.SET:
                continue
            looks = [
                (r.index, c)
                for r in expert.trajectory.rounds
                for c in r.calls
                if c.error is None
                and (_names(c.arguments, change.key) or _names(c.content, change.key))
            ]
            if looks and looks[-1][0] <= fired.index and looks[-1][1].effect is Effect.READ:
                found.append((looks[-1][1], change.key))
    return found


@pytest.mark.parametrize("name", STATEFUL)
def test_a_re_read_after_a_change_of_the_world_stays_excused(name):
    """The expert's last look at an entity a change then changed, read again just before
    ``finish``, is the re-read a change asks for: excused (no extra call, R unchanged) when
    its result shows the change (the entity's new value, or the entity gone from it); a copy
    with the look's very result shows nothing and is extra (audit 7b F1)."""
    found = 0
    for seed in range(12):
        expert = _expert(name, seed)
        end = len(expert.actions) - 1
        for look, _key in _stale_reads(expert):
            again = CallBatch((ToolCall(look.name, dict(look.arguments)),))
            replayed, card = _replay(name, seed, inserted(end, again))
            record = replayed.rounds[end].calls[0]
            if record.content == look.content:  # it cannot show the change (audit 7b F1)
                assert card.parallelism.extra == expert.card.parallelism.extra + 1
                assert card.composite < expert.card.composite, (name, seed, look)
                continue
            assert card.parallelism.extra == expert.card.parallelism.extra, (name, seed, look)
            assert card.composite == expert.card.composite, (name, seed, look)
            found += 1
    if name != "meetings":  # its changes add appointments no read could show before
        assert found > 0, name


# -- 2. an open question once the choice is made ----------------------------------------------


def _open_say(index: int) -> RoundRecord:
    record = say(index)
    assert record.user is not None
    turn = dataclasses.replace(record.user, understood=True, open=True)
    return dataclasses.replace(record, user=turn)


def _needless(card: Scorecard) -> list[str]:
    return [subject for _, subject in _subjects(card, Kind.ASK_NEEDLESS)]


def test_an_open_question_after_the_user_accepted_is_needless():
    """Before: free (the first open question was free anywhere)."""
    rounds = expert_rounds()  # ask, look up, search, hold, propose A (yes), pay, finish
    card = _toy(task(), [*rounds[:5], _open_say(0), *rounds[5:]])
    assert _needless(card) == [DECIDED]
    assert card.clarification.fp == 1.0
    assert _needless(_toy(task(), [*rounds[:4], _open_say(0), *rounds[4:]])) == []


def test_a_change_of_mind_reopens_an_accepted_choice_but_not_a_commit():
    rounds = expert_rounds()
    notice = calls(0, call("get_policy"), notice=(("budget", 400),))
    reopened = _toy(task(), [*rounds[:5], notice, _open_say(0), *rounds[5:]])
    assert DECIDED not in _needless(reopened)
    paid = _toy(task(), [*rounds[:6], notice, _open_say(0), rounds[6]])
    assert _needless(paid) == [DECIDED]


def test_travel_seed_0_an_open_question_after_the_booking():
    """Before: R = 1.000, the expert's (105/105 seeds of travel, meetings, shop, bank and
    cloud with mixed knobs)."""
    ask = Say("Which option should I book?")
    expert = _expert("travel", 0)
    _, card = _replay("travel", 0, inserted(len(expert.actions) - 1, ask))
    assert _needless(card) == [DECIDED]
    assert card.composite < expert.card.composite


def _decided_at(expert: Played) -> tuple[int | None, int]:
    """The round of the expert's first commit (``None``: none), and of its first proposal or
    commit (the number of rounds when neither)."""
    rounds = expert.trajectory.rounds
    commits = [
        r.index for r in rounds for c in r.calls if c.effect is Effect.COMMIT and c.error is None
    ]
    proposals = [r.index for r in rounds if r.user is not None and r.user.proposed is not None]
    return (commits[0] if commits else None), min([*commits, *proposals, len(rounds)])


@pytest.mark.parametrize("name", STATEFUL)
def test_an_open_question_is_free_only_before_the_choice(name):
    """At every place in the expert's play: after its commit, an open question is needless
    and costs R; before its first proposal or commit, it is free."""
    ask = Say("Which option should I book?")
    after = 0
    for seed in range(8):
        expert = _expert(name, seed)
        committed, first = _decided_at(expert)
        for i in range(len(expert.actions)):
            _, card = _replay(name, seed, inserted(i, ask))
            if committed is not None and i > committed:
                assert DECIDED in _needless(card), (name, seed, i)
                assert card.composite < expert.card.composite, (name, seed, i)
                after += 1
            elif i <= first:
                assert not {DECIDED, OPEN} & set(_needless(card)), (name, seed, i)
    assert after > 0


# -- 3. a rejection the change of mind did not cause ------------------------------------------


def _changing(best_before: tuple[str, ...]) -> Task:
    """The toy task with a change of mind: ``best_before`` are the options the user accepts
    while it holds its wishes of before the change."""
    the_task = task()
    before = {"A": frozenset({"policy", "booked"}), "B": frozenset({"policy", "budget"})}
    truth = dataclasses.replace(
        the_task.truth, before_change=before, best_before_change=best_before
    )
    return dataclasses.replace(the_task, truth=truth)


def _rejected_at_change(option: str) -> RoundRecord:
    """A proposal of ``option`` whose reply starts with a change of mind, then rejects it."""
    record = say(0, proposed=option, accepted=False)
    assert record.user is not None
    turn = dataclasses.replace(record.user, values=(("budget", 400),))
    return dataclasses.replace(record, user=turn)


def test_a_rejection_at_a_change_of_mind_is_waived_only_if_accepted_before_it():
    """Before: both were waived (the reply announced a change of mind)."""
    rounds = expert_rounds()
    for option, best_before, charged in (("B", ("B",), False), ("B", ("A",), True)):
        card = _toy(_changing(best_before), [*rounds[:4], _rejected_at_change(option), *rounds[4:]])
        assert (f"rejected:{option}" in _needless(card)) is charged, best_before


def test_bank_seed_0_a_wrong_proposal_as_the_change_of_mind_falls_due():
    """Bank seed 0: the reply is "Change of plan: I'll pay at most 55 in fees. No, CA33EXP does
    not work for me: ...", and CA33EXP was wrong before the change too. Before: R = 1.000."""
    expert = _expert("bank", 0, mixed=False)
    assert "CA33EXP" not in (expert.task.truth.best_before_change or ())
    _, card = _replay("bank", 0, inserted(1, Say("Shall I book CA33EXP?")), mixed=False)
    assert "rejected:CA33EXP" in _needless(card)
    assert card.composite < expert.card.composite


def _announced(record: RoundRecord) -> bool:
    turn = record.user
    return turn is not None and len(turn.values) > len(turn.asked)


@pytest.mark.parametrize("name", STATEFUL)
def test_only_the_change_of_mind_excuses_a_rejection(name):
    """At every place in the expert's play (default knobs, tasks with a change of mind), a
    proposal of an option wrong before and after the change is charged and costs R, whatever
    the reply announces; one right only before the change and rejected in the reply that
    announces the change is waived."""
    for seed in range(12):
        expert = _expert(name, seed, mixed=False)
        truth = expert.task.truth
        if truth.best_before_change is None:
            continue
        before = set(truth.best_before_change)
        wrong = [o for o in sorted(truth.satisfaction) if o not in truth.best and o not in before]
        overtaken = sorted(before - set(truth.best))
        for option in [*wrong[:1], *overtaken[:1]]:
            for i in range(len(expert.actions)):
                played, card = _replay(
                    name, seed, inserted(i, Say(f"Shall I book {option}?")), False
                )
                turn = played.rounds[i].user if i < len(played.rounds) else None
                if turn is None or turn.accepted is not False:
                    continue
                charged = f"rejected:{option}" in _needless(card)
                if option in before:
                    if _announced(played.rounds[i]):
                        assert not charged, (name, seed, i, option)
                else:
                    assert charged, (name, seed, i, option)
                    assert card.composite < expert.card.composite, (name, seed, i, option)
