"""Audit 7b: two holes in D3 parallelism, closed as rules (``docs/metrics.md`` D3).

Each reproduction of the audit is pinned (the number before the fix in its docstring), and
each rule has a property test over seeds of every stateful domain and a synthetic topology:

1. F1, excuse harvesting through a mention: a read re-reads a change of the world only if it
   shows it against the agent's last look at what changed (the same read again, holding
   something else of the changed entity; another read, holding the changed field's new
   value the look did not). A copy whose result merely names the changed entity, identical
   to the earlier one, is extra.
2. F4, an episode stopped without ``finish``: it has spent its whole round budget, so it
   counts every round of the task's budget it did not play as wasted (at least one), as an
   agent padding with empty rounds until truncation does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pytest
from expert_edits import Played, expert, inserted, knobs_of, replay
from metrics_toy import PRICE, SEARCHES, call, calls, expert_rounds, renumber, task
from metrics_toy import trajectory as toy_trajectory

from stategym.kernel.env import Env
from stategym.kernel.protocol import FINISH, Action, CallBatch, ToolCall
from stategym.kernel.task import Event, EventKind, Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import CallRecord, RoundRecord, Trajectory
from stategym.metrics import Kind, Scorecard, score
from stategym.metrics.credit import credit, running_composite
from stategym.metrics.declaration import EventCounts
from stategym.metrics.gold import gold_of
from stategym.registry import all_domains, get_domain

SYNTH = "synth:chain2+fanout3+askgate+verifycommit"
STATEFUL = [*sorted(d for d in all_domains() if not get_domain(d).read_only), SYNTH]
SEEDS = range(6)
WORLD_CHANGES = ("bank", "cloud", "shop", "travel")
"""The domains whose expert, on the first seeds, re-reads nothing a change of the world then
changed (meetings' changes are the user's; the synthetic one's hit reads made after them)."""
MENTIONS = ("bank", "cloud", "shop")
"""The domains with reads that name an entity without the field its changes set (an account
list naming a currency, a volume list naming a volume, a shipping quote naming an offer)."""


def _expert(domain: str, seed: int, mixed: bool = False) -> Played:
    return expert(domain, seed, mixed)


def _replay(
    domain: str, seed: int, edit: Callable[[list[Action]], list[Action]], mixed: bool = False
) -> tuple[Trajectory, Scorecard]:
    return replay(domain, seed, edit, mixed)


def _names(value: Any, key: str) -> bool:
    """Whether ``key`` is one of the strings inside a JSON value."""
    if isinstance(value, dict):
        return any(_names(v, key) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_names(v, key) for v in value)
    return value == key


def _shows_value(value: Any, key: str, field: str, wanted: Any) -> bool:
    """Whether a JSON value holds a record naming ``key`` with ``field == wanted``."""
    if isinstance(value, dict):
        here = key in value.values() and field in value and value[field] == wanted
        return here or any(_shows_value(v, key, field, wanted) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_shows_value(v, key, field, wanted) for v in value)
    return False


def _extra(card: Scorecard) -> list[tuple[int, str]]:
    return [(e.round, e.subject) for e in card.events if e.kind is Kind.CALL_EXTRA]


# -- 1. F1: a re-read must show the change -----------------------------------------------------


def _toy(the_task: Task, rounds: list[RoundRecord]) -> Scorecard:
    return score(toy_trajectory(the_task, renumber(rounds)), the_task)


def _day2(*flights: dict[str, Any]) -> CallRecord:
    """Day 2 searched: its result lists ``flights``."""
    return call("search", {"origin": "HOME", "day": 2}, content={"flights": list(flights)})


def _with_look(look: CallRecord, *after: RoundRecord) -> list[RoundRecord]:
    """The toy expert whose search of day 2 is ``look``, B's price moving at the end of that
    round (PRICE), with ``after`` played before the hold."""
    rounds = expert_rounds()
    rounds[2] = calls(2, SEARCHES[0], look, fired=(0,))
    return [*rounds[:3], *after, *rounds[3:]]


B_BEFORE, B_AFTER = {"id": "B", "price": 500}, {"id": "B", "price": 900}


def test_a_re_read_that_shows_the_new_value_is_excused_once():
    the_task = task(events=(PRICE,))
    once = _toy(the_task, _with_look(_day2(B_BEFORE), calls(0, _day2(B_AFTER))))
    assert _extra(once) == [] and once.parallelism.quality == 1.0
    twice = _with_look(_day2(B_BEFORE), calls(0, _day2(B_AFTER)), calls(0, _day2(B_AFTER)))
    assert _extra(_toy(the_task, twice)) == [(4, "search")]


def test_an_identical_copy_that_only_names_the_changed_entity_is_extra():
    """A search whose result names B but holds no price cannot show B's new price. Before:
    excused, as the result names B (F1's class: bank ``list_accounts``)."""
    card = _toy(task(events=(PRICE,)), _with_look(_day2({"id": "B"}), calls(0, _day2({"id": "B"}))))
    assert _extra(card) == [(3, "search")]
    assert card.parallelism.quality < 1.0


def test_a_change_to_the_value_already_seen_shows_nothing():
    """A change that sets the value the agent's look already showed (bank seed 15: a balance
    set to what it was) changes nothing a read can show. Before: the identical copy was
    excused."""
    card = _toy(task(events=(PRICE,)), _with_look(_day2(B_AFTER), calls(0, _day2(B_AFTER))))
    assert _extra(card) == [(3, "search")]


def test_the_same_read_showing_the_entity_gone_re_reads_the_change():
    """A fare that sold out leaves the day's search: the re-read differs from the look in
    what it holds of the entity (nothing now), so it shows the change."""
    sold = Event(1, EventKind.SET, "flights", "B", "seats", 0)
    card = _toy(task(events=(sold,)), _with_look(_day2(B_BEFORE), calls(0, _day2())))
    assert _extra(card) == []


def test_a_mention_that_shows_nothing_is_no_look_at_the_change():
    """After the change, a read that names B without its price does not refresh the agent's
    look at B's price: the search that then shows it is the re-read, excused."""
    mention = call("get_policy", content={"favourite": "B"})
    rounds = _with_look(_day2(B_BEFORE), calls(0, mention), calls(0, _day2(B_AFTER)))
    assert _extra(_toy(task(events=(PRICE,)), rounds)) == [(3, "get_policy")]


def _firing(played: Played, key: str) -> int:
    return next(
        r.index
        for r in played.trajectory.rounds
        for e in r.events
        if played.task.events[e].key == key
    )


@pytest.mark.parametrize(
    ("name", "seed", "tool", "key"),
    [
        ("bank", 0, "list_accounts", "GBP"),
        ("shop", 0, "get_shipping_quote", "NO558"),
        ("cloud", 1, "list_volumes", "vol8761"),
    ],
)
def test_audit_7b_an_identical_read_naming_the_change_is_extra(name, seed, tool, key):
    """Right after the change of ``key`` fired, the expert's earlier ``tool`` read again, its
    result byte-identical. Before: excused as a re-read of the change, R = 1.000, the
    expert's (F1: shop 8/20, bank 9/20, cloud 9/20 seeds)."""
    expert = _expert(name, seed)
    fired = _firing(expert, key)
    look = next(
        c
        for r in expert.trajectory.rounds[: fired + 1]
        for c in r.calls
        if c.name == tool
        and c.error is None
        and (_names(c.arguments, key) or _names(c.content, key))
    )
    again = CallBatch((ToolCall(tool, dict(look.arguments)),))
    replayed, card = _replay(name, seed, inserted(fired + 1, again))
    copy = replayed.rounds[fired + 1].calls[0]
    assert copy.content == look.content
    assert card.parallelism.extra == expert.card.parallelism.extra + 1
    assert card.composite < expert.card.composite


def _set_changes(played: Played) -> list[tuple[int, Event]]:
    return [
        (r.index, played.task.events[e])
        for r in played.trajectory.rounds
        for e in r.events
        if played.task.events[e].kind is EventKind.SET and played.task.events[e].key
    ]


@pytest.mark.parametrize("name", STATEFUL)
def test_no_identical_copy_of_a_read_naming_a_change_ties_the_expert(name):
    """After each change of the world, a copy of any earlier read naming the changed entity,
    whose result is what it was, re-reads nothing: it costs (the audit's sweep, as a rule)."""
    tried = 0
    for seed in SEEDS:
        expert = _expert(name, seed)
        for fired, change in _set_changes(expert):
            reads = {
                (c.name, repr(sorted(c.arguments.items()))): c
                for r in expert.trajectory.rounds[: fired + 1]
                for c in r.calls
                if c.error is None
                and c.effect is Effect.READ
                and (_names(c.arguments, change.key) or _names(c.content, change.key))
            }
            for look in reads.values():
                again = CallBatch((ToolCall(look.name, dict(look.arguments)),))
                replayed, card = _replay(name, seed, inserted(fired + 1, again))
                copy = replayed.rounds[fired + 1].calls[0]
                if copy.content != look.content:
                    continue  # it shows something: not this rule's case
                assert card.composite < expert.card.composite, (name, seed, change, look.name)
                tried += 1
    if name in MENTIONS:
        assert tried > 0, name


def _stale_looks(played: Played) -> list[tuple[CallRecord, Event]]:
    """The expert's last reads naming an entity a change of the world then changed, with no
    later call naming it: ``(read, change)``."""
    found = []
    for fired, change in _set_changes(played):
        looks = [
            (r.index, c)
            for r in played.trajectory.rounds
            for c in r.calls
            if c.error is None
            and (_names(c.arguments, change.key) or _names(c.content, change.key))
        ]
        if looks and looks[-1][0] <= fired and looks[-1][1].effect is Effect.READ:
            found.append((looks[-1][1], change))
    return found


@pytest.mark.parametrize("name", STATEFUL)
def test_a_re_read_is_excused_exactly_when_it_shows_the_change(name):
    """The expert's last look at an entity a change then changed, read again before
    ``finish``: excused (R unchanged) when its result shows the new value the look did not,
    or no longer holds the entity; extra when its result is the look's. Before: the copy
    with the look's result was excused too (shop: a ``check_stock`` after a price move)."""
    shown = 0
    for seed in range(12):
        expert = _expert(name, seed, True)
        end = len(expert.actions) - 1
        for look, change in _stale_looks(expert):
            again = CallBatch((ToolCall(look.name, dict(look.arguments)),))
            replayed, card = _replay(name, seed, inserted(end, again), True)
            content = replayed.rounds[end].calls[0].content
            if content == look.content:
                assert card.parallelism.extra == expert.card.parallelism.extra + 1, (seed, look)
                assert card.composite < expert.card.composite, (name, seed, look)
            elif _names(content, change.key) and not (
                _shows_value(content, change.key, change.field, change.value)
                and not _shows_value(look.content, change.key, change.field, change.value)
            ):
                continue  # something else changed: not this rule's case
            else:  # the new value, or the entity gone (a fare sold out, an offer out of stock)
                assert card.parallelism.extra == expert.card.parallelism.extra, (seed, look)
                assert card.composite == expert.card.composite, (name, seed, look)
                shown += 1
    if name in WORLD_CHANGES:
        assert shown > 0, name


# -- 2. F4: an episode never finished spent its round budget -----------------------------------


def _stopped(name: str, seed: int, keep: int | None = None, mixed: bool = True) -> Trajectory:
    """The expert's actions up to its ``finish`` (or its first ``keep``), then stopped from
    outside: :meth:`Env.stopped_trajectory`, as the rollout adapters log it."""
    env = Env(name, knobs=knobs_of(seed, mixed))
    env.reset(seed=seed)
    actions = _expert(name, seed, mixed).actions
    for action in actions[: len(actions) - 1 if keep is None else keep]:
        assert not (isinstance(action, CallBatch) and any(c.name == FINISH for c in action.calls))
        env.step(action)
    return env.stopped_trajectory()


def test_audit_7b_travel_seed_0_stopped_before_finish():
    """Before: R = 0.97, within 0.1 of the expert on 100/100 seeds (one wasted round)."""
    stopped = _stopped("travel", 0, mixed=False)
    expert = _expert("travel", 0)
    card = score(stopped, expert.task)
    assert stopped.truncated and card.parallelism.applicable
    assert card.outcome.goal_reached
    assert card.parallelism.wasted == expert.task.max_rounds - len(stopped.rounds)
    assert card.composite <= expert.card.composite - 0.1


@pytest.mark.parametrize("name", STATEFUL)
def test_an_episode_stopped_without_finish_scores_a_tenth_below(name):
    """The issue's bar ("an episode that never calls finish must not score like one that
    does"), on every stopped prefix of the expert's episode: the last one reaches the goal."""
    for seed in SEEDS:
        expert = _expert(name, seed, True)
        for keep in range(1, len(expert.actions)):
            stopped = _stopped(name, seed, keep)
            card = score(stopped, expert.task)
            assert card.composite <= expert.card.composite - 0.1, (name, seed, keep)
            left = max(1, expert.task.max_rounds - len(stopped.rounds))
            wasted = [e for e in card.events if e.subject == "no finish"]
            assert [(e.terminal, e.value) for e in wasted] == [(True, -float(left))]


@pytest.mark.parametrize("name", STATEFUL)
def test_the_terminal_charge_is_in_the_running_composite(name):
    """The dense reward's running composite, once every event is in, is R (the charge is
    one terminal event weighing the rounds left, which the running economy counts in full),
    and the credit pays it at the last round."""
    for seed in SEEDS[:3]:
        stopped = _stopped(name, seed)
        the_task = _expert(name, seed, True).task
        card = score(stopped, the_task)
        counts = EventCounts(calls=sum(len(r.calls) for r in stopped.rounds), done=True)
        for event in card.events:
            counts.add(event)
        assert running_composite(counts, gold_of(the_task)) == pytest.approx(card.composite)
        paid = credit(stopped, the_task).rewards
        assert math.isclose(sum(paid), card.composite, abs_tol=1e-9), (name, seed)


def test_the_budget_is_read_from_the_task():
    """The charge is a pure function of the log and the task: a longer budget, more rounds
    left unplayed."""
    stopped = _stopped("bank", 0)
    the_task = _expert("bank", 0, True).task
    longer = dataclasses.replace(the_task, max_rounds=the_task.max_rounds + 10)
    assert (
        score(stopped, longer).parallelism.wasted
        == score(stopped, the_task).parallelism.wasted + 10
    )


@pytest.mark.parametrize("name", STATEFUL)
def test_padding_to_truncation_is_charged_as_before(name):
    """An agent padding with empty rounds until truncation played its whole budget: each
    pad is a wasted round and the terminal charge stays one round, as before."""
    seed = 0
    expert = _expert(name, seed, True)
    pads = [CallBatch(())] * expert.task.max_rounds
    padded, card = _replay(name, seed, lambda a: [*a[:-1], *pads], True)
    assert padded.truncated and len(padded.rounds) == expert.task.max_rounds
    assert [e.value for e in card.events if e.subject == "no finish"] == [-1.0]
    assert card.parallelism.wasted == expert.task.max_rounds - (len(expert.actions) - 1) + 1
