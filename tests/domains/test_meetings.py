"""The meetings domain: task features, the gold graph, tool semantics, time zones, and the
user's judgement of proposals (the checks every domain passes are in
``test_every_domain.py``)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym import Env, Knobs, call, calls
from stategym.domains.meetings.expert import proposal
from stategym.domains.meetings.timegrid import (
    CELL,
    DURATIONS,
    FULL,
    PREFERENCES,
    Availability,
    Option,
    Scene,
    cells,
    day_view,
    feasible,
    intervals,
    option_id,
    options,
    satisfied,
    starts,
    window,
)
from stategym.domains.meetings.tools import ROOM_RATE
from stategym.kernel.task import EventKind, SlotKind, Task
from stategym.kernel.user import SimulatedUser
from stategym.kernel.world import USER_ACCOUNT
from stategym.registry import cached_task, get_domain

DOMAIN = get_domain("meetings")


def _tasks(count: int, knobs: Knobs | None = None) -> list[Task]:
    return [cached_task("meetings", s, knobs or Knobs()) for s in range(count)]


def test_every_task_feature_occurs_at_a_reasonable_rate() -> None:
    seen: Counter[str] = Counter()
    tasks = _tasks(1000)
    for task in tasks:
        truth = task.truth
        seen["must_ask"] += bool(task.must_ask)
        seen["ask_priorities"] += "priorities" in task.must_ask
        seen["no_send"] += not truth.best and not truth.decisions[0].should_commit
        every = frozenset(c.id for c in task.constraints)
        seen["sacrifice"] += bool(truth.best) and truth.satisfaction[truth.best[0]] != every
        seen["sacrifice_optional"] += bool(truth.best) and (
            "optional_attend" in every
            and "optional_attend" not in truth.satisfaction[truth.best[0]]
        )
        for event in task.events:
            seen[f"event_{event.table or event.slot}"] += 1
        kinds = {s.kind for s in task.slots}
        seen["derivable_and_irrelevant"] += {SlotKind.DERIVABLE, SlotKind.IRRELEVANT} <= kinds
    print(dict(seen))
    rates = {k: v / len(tasks) for k, v in seen.items()}
    assert 0.5 < rates["must_ask"] < 1.0
    assert 0.1 < rates["ask_priorities"] < 0.4
    assert 0.05 < rates["no_send"] < 0.3
    assert 0.2 < rates["sacrifice"] < 0.6
    assert rates["sacrifice_optional"] > 0.05
    for event in ("event_appointments", "event_room_bookings", "event_duration"):
        assert rates[event] > 0.1, event
    assert rates["derivable_and_irrelevant"] == 1.0


def test_gold_graph_reads_every_calendar_and_holds_a_best_option() -> None:
    for task in _tasks(200):
        truth = task.truth
        ids = {c.id for c in truth.calls}
        base = task.base
        assert len([c for c in truth.calls if c.tool == "get_calendar"]) == (
            len(base.attendees) + 1
        ) * len(range(*_window(task)))
        if truth.best:
            assert {"hold", "confirm", "send"} <= ids
            hold = next(c for c in truth.calls if c.id == "hold")
            for option in truth.best:
                day, start, room = _parts(option)
                assert hold.matches(
                    "hold_room",
                    {
                        "room_id": room,
                        "day": day,
                        "start": start,
                        "duration": hold.args["duration"],
                    },
                )
            assert truth.decisions[0].option == truth.best[0]
        else:
            assert not ids & {"hold", "confirm", "send"}


def _window(task: Task) -> tuple[int, int]:
    first, last = (int(x) for x in str(task.request.given["window"]).split("-"))
    return first, last + 1


_OPTION = re.compile(r"^D(\d+)T(\d\d)(\d\d)M(\d+)([A-Z]+)$")


def _option(option: str) -> Option:
    """Parse ``D4T1030M60CEDAR`` (hits left empty)."""
    match = _OPTION.match(option)
    assert match is not None, option
    day, hour, minute, duration, room = match.groups()
    return Option(int(day), int(hour) * 60 + int(minute), int(duration), room, frozenset())


def _parts(option: str) -> tuple[int, str, str]:
    parsed = _option(option)
    return parsed.day, f"{parsed.start // 60:02d}:{parsed.start % 60:02d}", parsed.room


def test_the_request_says_what_the_knobs_change() -> None:
    for seed in range(100):
        stateless = DOMAIN.generate(seed, Knobs(stateful=False))
        assert "finish with the id" in stateless.request.text
        told = DOMAIN.generate(seed, Knobs(hidden_info=False))
        assert {"optional", "duration", "time_of_day", "room_feature"} <= set(told.request.given)


def _first_best(knobs: Knobs) -> tuple[Env, Option]:
    """An environment reset on the first task with a best option, and that option."""
    env = Env("meetings", knobs=knobs)
    for seed in range(50):
        env.reset(seed=seed)
        if env.task.truth.best:
            return env, _option(env.task.truth.best[0])
    raise AssertionError("no task with a best option in 50 seeds")


def _hold(env: Env, option: Option) -> dict[str, object]:
    start = f"{option.start // 60:02d}:{option.start % 60:02d}"
    result = env.step(
        calls(
            call(
                "hold_room",
                room_id=option.room,
                day=option.day,
                start=start,
                duration=option.duration,
            )
        )
    )
    held = result.observation.results[0]
    assert held.ok, held.error
    return held.content


def test_sending_twice_is_possible_and_misses_the_goal() -> None:
    env, option = _first_best(Knobs(dynamics=False))
    hold = _hold(env, option)
    assert hold["option"] == option.id
    first = env.step(calls(call("send_invitation", hold_id=hold["hold_id"]))).observation
    assert first.results[0].content["option"] == option.id
    again = env.step(calls(call("send_invitation", hold_id=hold["hold_id"]))).observation
    assert again.results[0].error_kind == "tool"  # a hold is used once
    retaken = env.step(
        calls(
            call(
                "hold_room",
                room_id=option.room,
                day=option.day,
                start=_parts(option.id)[1],
                duration=option.duration,
            )
        )
    )
    assert retaken.observation.results[0].error_kind == "tool"  # the room is ours now
    other = next(o for o in env.task.truth.satisfaction if _option(o).room != option.room)
    second = _hold(env, _option(other))
    env.step(calls(call("send_invitation", hold_id=second["hold_id"])))
    assert sorted(c.option for c in env.commitments()) == sorted((option.id, other))
    env.step(calls(call("finish")))
    assert not env.outcome().goal_reached


@pytest.mark.parametrize(("irreversible", "refund"), [(True, 0), (False, 1)])
def test_cancelling_notifies_everyone_and_is_free_only_when_reversible(
    irreversible: bool, refund: int
) -> None:
    env, option = _first_best(Knobs(irreversible=irreversible, dynamics=False))
    total = sum(env.world.accounts.values())
    hold = _hold(env, option)
    sent = env.step(calls(call("send_invitation", hold_id=hold["hold_id"]))).observation
    fee = ROOM_RATE * option.duration // 30
    assert sent.results[0].content["fee"] == fee
    invitation = sent.results[0].content["invitation_id"]
    cancelled = env.step(calls(call("cancel_invitation", invitation_id=invitation)))
    content = cancelled.observation.results[0].content
    assert content["refund"] == refund * fee and content["notices"] == len(env.task.base.attendees)
    assert env.commitments() == ()
    assert env.world.accounts[USER_ACCOUNT] == env.task.base.balance - fee + refund * fee
    assert sum(env.world.accounts.values()) == total
    again = env.step(calls(call("cancel_invitation", invitation_id=invitation)))
    assert again.observation.results[0].error_kind == "tool"


@pytest.mark.parametrize("dynamics", [True, False])
def test_holds_expire_only_with_dynamics(dynamics: bool) -> None:
    env, option = _first_best(Knobs(dynamics=dynamics))
    hold = _hold(env, option)
    assert (hold["expires_at"] is None) is not dynamics
    for _ in range(6):
        env.step(calls(call("list_invitations")))
    sent = env.step(calls(call("send_invitation", hold_id=hold["hold_id"]))).observation
    assert sent.results[0].ok is not dynamics


def test_a_room_too_small_or_a_bad_time_cannot_be_held() -> None:
    env = Env("meetings", knobs=Knobs(dynamics=False))
    env.reset(seed=3)
    base = env.task.base
    small = next(r for r in base.rooms.values() if r.capacity < base.headcount)
    big = next(r for r in base.rooms.values() if r.capacity >= base.headcount)
    for room, start, duration in (
        (small.id, "10:00", 60),
        (big.id, "10:15", 60),
        (big.id, "17:30", 60),
        (big.id, "7 pm", 60),
        ("NOSUCHROOM", "10:00", 60),
    ):
        result = env.step(
            calls(call("hold_room", room_id=room, day=3, start=start, duration=duration))
        )
        assert result.observation.results[0].error_kind == "tool", (room, start)
    assert env.world.holds.changed == {}


def test_holds_see_the_same_availability_as_the_ground_truth() -> None:
    """Time zones, working hours and calendars agree between the tools and the generator."""
    checked = 0
    for seed in range(30):
        env = Env("meetings", knobs=Knobs(dynamics=False))
        env.reset(seed=seed)
        task, base = env.task, env.task.base
        optional = {base.people[p].name for p in base.attendees} & set(
            str(task.slot("optional").value).replace(" and ", ", ").split(", ")
        )
        optional_ids = {p for p in base.attendees if base.people[p].name in optional}
        for option, hits in list(task.truth.satisfaction.items())[::7]:
            away = set(_hold(env, _option(option))["unavailable"])
            assert ("required_attend" in hits) == (not away - optional_ids), option
            assert ("optional_attend" in hits) == (not away & optional_ids), option
            checked += 1
    assert checked > 300


def test_option_ids_do_not_end_like_a_plural() -> None:
    """The user's words are normalised by dropping a plural ``s``: an id must not end in one."""
    for task in _tasks(100):
        for option in task.truth.satisfaction:
            assert not option.endswith("S")


def test_the_experts_proposals_name_one_option_and_no_slot() -> None:
    for task in _tasks(100):
        user = SimulatedUser(task, DOMAIN.slot_phrases)
        # the expert proposes once the user has changed its mind, and the user judges a
        # proposal on the wishes it holds then
        for event in task.events:
            if event.kind is EventKind.USER_UPDATE:
                user.change_mind(event.slot, event.value)
        for option in list(task.truth.satisfaction)[:5] + list(task.truth.best[:1]):
            turn = user.respond(proposal(_option(option)))
            assert turn.proposed == option and turn.asked == () and not turn.priority_asked
            assert turn.accepted == (option in task.truth.best)


def test_the_user_ranks_every_preference_it_holds() -> None:
    for task in _tasks(100):
        order = str(task.slot("priorities").value).split(">")
        assert set(order) <= set(PREFERENCES)
        assert order == [c for c in task.priority_order() if c in PREFERENCES]


def test_a_change_of_mind_changes_the_best_options() -> None:
    bites = 0
    for seed in range(200):
        task = cached_task("meetings", seed, Knobs())
        updates = [e for e in task.events if e.kind is EventKind.USER_UPDATE]
        if updates:
            assert updates[0].slot == "duration" and updates[0].value != task.slot("duration").value
            assert all(f"M{updates[0].value}" in o for o in task.truth.satisfaction)
            bites += 1
    assert bites > 20


@given(st.integers(min_value=0, max_value=FULL))
def test_intervals_are_the_maximal_runs_of_cells(mask: int) -> None:
    runs: list[tuple[int, int]] = []
    for start in cells(mask):
        if runs and runs[-1][1] == start:
            runs[-1] = (runs[-1][0], start + CELL)
        else:
            runs.append((start, start + CELL))
    assert intervals(mask) == runs


@pytest.mark.parametrize("start", [-30, 0, 570, 1410, 1440, 2000])
def test_option_ids_spell_the_start_as_hhmm(start: int) -> None:
    assert option_id(4, start, 60, "CEDAR") == f"D4T{start // 60:02d}{start % 60:02d}M60CEDAR"


_MASK = st.integers(min_value=0, max_value=FULL)
_SCENES = (
    st.sampled_from(DURATIONS),
    _MASK,
    st.lists(st.tuples(_MASK, _MASK), min_size=1, max_size=3),
    st.lists(st.tuples(_MASK, _MASK), max_size=2),
    st.lists(_MASK, min_size=1, max_size=3),
    st.sampled_from(("morning", "afternoon", "any")),
    st.sampled_from(("video", "whiteboard", "any")),
)


def _scene(
    duration: int,
    hours: int,
    required: list[tuple[int, int]],
    optional: list[tuple[int, int]],
    room_busy: list[int],
    time_of_day: str,
    room_feature: str,
) -> Scene:
    """A one-day scene (day 3); room ``R<i>`` has video when ``i`` is odd."""
    rooms = tuple((f"R{i}", frozenset({"video"} if i % 2 else ())) for i in range(len(room_busy)))
    return Scene(
        days=(3,),
        duration=duration,
        hours=hours,
        required={3: tuple(Availability(w, b) for w, b in required)},
        optional={3: tuple(Availability(w, b) for w, b in optional)},
        rooms=rooms,
        room_busy={(room, 3): busy for (room, _), busy in zip(rooms, room_busy, strict=True)},
        time_of_day=time_of_day,
        room_feature=room_feature,
    )


_SCENE = st.builds(_scene, *_SCENES)


@given(_SCENE)
def test_listing_only_feasible_options_skips_exactly_the_infeasible_ones(scene: Scene) -> None:
    every = list(options(scene))
    assert list(options(scene, only_feasible=True)) == [o for o in every if feasible(o)]


@given(_SCENE)
def test_the_options_are_every_free_room_at_every_start_meeting_what_satisfied_says(
    scene: Scene,
) -> None:
    # the listing judges starts with bit masks; ``satisfied`` is the constraints' definition
    view = day_view(scene, 3)
    expected = [
        Option(3, start, scene.duration, room, satisfied(scene, view, start, features))
        for start in starts(scene.duration)
        for room, features in scene.rooms
        if not window(start, scene.duration) & scene.room_busy[(room, 3)]
    ]
    assert list(options(scene)) == expected


def test_equal_satisfaction_sets_are_shared_within_a_task() -> None:
    # a task holds one satisfaction set per option; sharing equal ones keeps tasks small
    for task in _tasks(20):
        table = task.truth.satisfaction
        assert len({id(s) for s in table.values()}) == len(set(table.values()))


def _brute_bookings(world, room_id: str, day: int) -> list[str]:
    found = world.room_bookings.values()
    return sorted(b.id for b in found if b.active and (b.room_id, b.day) == (room_id, day))


@given(
    st.lists(
        st.tuples(
            st.sampled_from(("hold", "send", "cancel", "snapshot", "restore", "pickle")),
            st.integers(0, 3),
            st.integers(0, 2),
        ),
        max_size=30,
    )
)
def test_a_rooms_bookings_are_every_active_booking_of_it_through_restores_and_pickles(
    steps: list[tuple[str, int, int]],
) -> None:
    # audit 17B F5: the agent's bookings are indexed by room and day rather than walked on
    # each look at a room; the index must follow every write, restore and pickle
    import pickle

    env = Env("meetings", knobs=Knobs(dynamics=True))
    env.reset(seed=5)
    base = env.task.base
    rooms = sorted(r.id for r in base.rooms.values() if r.capacity >= base.headcount)[:2]
    holds: list[str] = []
    invitations: list[str] = []
    saved = env.world.snapshot()
    for action, which, day in steps:
        room = rooms[which % len(rooms)]
        if action == "hold":
            result = env.step(
                calls(call("hold_room", room_id=room, day=day, start="10:00", duration=30))
            )
            content = result.observation.results[0].content
            holds += [content["hold_id"]] if result.observation.results[0].ok else []
        elif action == "send" and holds:
            result = env.step(calls(call("send_invitation", hold_id=holds[which % len(holds)])))
            if result.observation.results[0].ok:
                invitations.append(result.observation.results[0].content["invitation_id"])
        elif action == "cancel" and invitations:
            invitation = invitations[which % len(invitations)]
            env.step(calls(call("cancel_invitation", invitation_id=invitation)))
        elif action == "snapshot":
            saved = env.world.snapshot()
        elif action == "restore":
            env.world.restore(saved)
        elif action == "pickle":
            env = pickle.loads(pickle.dumps(env))
        if env.done:
            break
        for room_id in rooms:
            for d in range(3):
                seen = sorted(b.id for b in env.world.bookings(room_id, d))
                assert seen == _brute_bookings(env.world, room_id, d)


def test_a_world_pickled_before_the_booking_index_finds_its_bookings() -> None:
    import pickle

    env = Env("meetings", knobs=Knobs(dynamics=False))
    env.reset(seed=5)
    base = env.task.base
    room = next(r.id for r in base.rooms.values() if r.capacity >= base.headcount)
    held = env.step(calls(call("hold_room", room_id=room, day=1, start="10:00", duration=30)))
    hold = held.observation.results[0].content["hold_id"]
    env.step(calls(call("send_invitation", hold_id=hold)))
    vars(env.world).pop("_booking_index", None)  # as an environment pickled at aa73536's parent
    again = pickle.loads(pickle.dumps(env))
    assert [b.id for b in again.world.bookings(room, 1)] == _brute_bookings(again.world, room, 1)
    assert len(again.world.bookings(room, 1)) == 1
