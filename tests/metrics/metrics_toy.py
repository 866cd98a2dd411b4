"""Hand-built tasks and rounds for metric unit tests: small enough to check by hand.

The toy task is a flight booking in miniature. Gold graph::

    profile --PIPE--> search:1, search:2 --DECIDE/PIPE--> hold --DECIDE--> confirm
    policy --DECIDE--> hold;  ask:budget --GATE--> hold;  hold --PIPE--> pay;
    confirm --ORDER--> pay

One decision point (``book`` with ``pay``) whose preconditions are the hold, the user's
confirmation and the budget. Options A (best) and B; constraints ``policy > budget > booked >
early`` (weights 8, 4, 2, 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    ConstraintKind,
    DecisionPoint,
    EdgeKind,
    Event,
    EventKind,
    GoldCall,
    GoldEdge,
    GroundTruth,
    Precondition,
    Request,
    Slot,
    SlotKind,
    Task,
    priority_weights,
)
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import (
    TRAJECTORY_VERSION,
    CallRecord,
    Outcome,
    RoundKind,
    RoundRecord,
    Trajectory,
)
from stategym.kernel.user import UserTurn

CONSTRAINTS = ("policy", "budget", "booked", "early")
PRIORITY = (("policy", "budget"), ("budget", "booked"), ("booked", "early"))


def task(
    *,
    best: tuple[str, ...] = ("A",),
    stateful: bool = True,
    must_ask: tuple[str, ...] = ("budget",),
    events: tuple[Event, ...] = (),
) -> Task:
    """The toy task (``best=()``: committing nothing is best)."""
    calls = [GoldCall(f"ask:{s}", "ask") for s in must_ask] + [
        GoldCall("profile", "get_profile", {}, Effect.READ),
        GoldCall("policy", "get_policy", {}, Effect.READ),
        GoldCall("search:1", "search", {"origin": "HOME", "day": 1}, Effect.READ),
        GoldCall("search:2", "search", {"origin": "HOME", "day": 2}, Effect.READ),
    ]
    edges = [
        GoldEdge("profile", "search:1", EdgeKind.PIPE),
        GoldEdge("profile", "search:2", EdgeKind.PIPE),
    ]
    preconditions = (
        Precondition("fresh fare", "hold"),
        Precondition("user said yes", "confirm"),
        *(Precondition(f"{s} from the user", f"ask:{s}") for s in must_ask),
    )
    decisions = (
        (
            DecisionPoint(
                "book", "pay", bool(best), {}, best[0] if best else None, preconditions, 1.0
            ),
        )
        if stateful
        else ()
    )
    if stateful and best:
        calls += [
            GoldCall("hold", "hold", {"option": best}, Effect.WRITE),
            GoldCall("confirm", "confirm"),
            GoldCall("pay", "pay", {}, Effect.COMMIT),
        ]
        edges += [
            GoldEdge("search:1", "hold", EdgeKind.PIPE),
            GoldEdge("search:2", "hold", EdgeKind.DECIDE),
            GoldEdge("policy", "hold", EdgeKind.DECIDE),
            GoldEdge("hold", "confirm", EdgeKind.DECIDE),
            GoldEdge("hold", "pay", EdgeKind.PIPE),
            GoldEdge("confirm", "pay", EdgeKind.ORDER),
        ]
        edges += [GoldEdge(f"ask:{s}", "hold", EdgeKind.GATE) for s in must_ask]
    weights = priority_weights(CONSTRAINTS, PRIORITY)
    satisfaction = {
        "A": frozenset({"policy", "budget", "booked"}),
        "B": frozenset({"policy", "booked", "early"}),
    }
    if not best:
        satisfaction = {"A": frozenset({"booked", "early"}), "B": frozenset({"booked"})}
    truth = GroundTruth(
        tuple(calls),
        tuple(edges),
        decisions,
        satisfaction,
        frozenset({"policy", "budget", "early"}),
        best,
        weights,
    )
    slots = (
        Slot(
            "budget",
            SlotKind.MISSING if "budget" in must_ask else SlotKind.GIVEN,
            500,
            "My budget is ${value}.",
        ),
        Slot("origin", SlotKind.DERIVABLE, "HOME", "I fly from {value}."),
        Slot("seat", SlotKind.IRRELEVANT, "aisle", "An {value} seat."),
        Slot("day", SlotKind.GIVEN, 1, "Day {value}."),
    )
    constraints = tuple(Constraint(c, ConstraintKind.NEED, c, c) for c in CONSTRAINTS)
    knobs = Knobs() if stateful else Knobs(stateful=False)
    return Task(
        "toy",
        0,
        knobs,
        Request("Book a flight.", {"day": 1}),
        slots,
        constraints,
        PRIORITY,
        False,
        events,
        None,
        truth,
    )


def say(
    index: int,
    *,
    asked: tuple[str, ...] = (),
    proposed: str | None = None,
    accepted: bool | None = None,
    priority: bool = False,
    clock: int | None = None,
    fired: tuple[int, ...] = (),
) -> RoundRecord:
    """A message round, as the user read it."""
    understood = bool(asked or priority or proposed)
    turn = UserTurn(
        asked, priority, proposed, accepted, understood, "...", tuple((s, 0) for s in asked)
    )
    return RoundRecord(
        index,
        index if clock is None else clock,
        1,
        RoundKind.SAY,
        say="...",
        user=turn,
        events=fired,
    )


def call(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    effect: Effect | None = Effect.READ,
    content: Any = None,
    error: str | None = None,
) -> CallRecord:
    """One executed call (``content`` defaults to ``{}``; an error leaves it ``None``)."""
    body = None if error is not None else ({} if content is None else content)
    return CallRecord(
        f"c_{name}",
        name,
        dict(arguments or {}),
        effect,
        body,
        error,
        "tool" if error is not None else None,
        {},
    )


def calls(
    index: int,
    *records: CallRecord,
    fired: tuple[int, ...] = (),
    notice: tuple[tuple[str, Any], ...] = (),
) -> RoundRecord:
    """A tool round."""
    return RoundRecord(
        index, index, 1, RoundKind.CALLS, calls=tuple(records), events=fired, notice_values=notice
    )


def finish(index: int, answer: str | None = None) -> RoundRecord:
    return calls(index, call("finish", {"answer": answer}, effect=None, content={"answer": answer}))


def hold(option: str) -> CallRecord:
    return call("hold", {"option": option}, effect=Effect.WRITE, content={"option": option})


def pay(option: str) -> CallRecord:
    return call("pay", {}, effect=Effect.COMMIT, content={"option": option})


LOOKUPS = (call("get_profile"), call("get_policy"))
SEARCHES = (
    call("search", {"origin": "HOME", "day": 1}),
    call("search", {"origin": "HOME", "day": 2}),
)


def expert_rounds() -> list[RoundRecord]:
    """What the expert does on the toy task: ask, look up, search, hold, confirm, pay."""
    return [
        say(0, asked=("budget",)),
        calls(1, *LOOKUPS),
        calls(2, *SEARCHES),
        calls(3, hold("A")),
        say(4, proposed="A", accepted=True),
        calls(5, pay("A")),
        finish(6),
    ]


def trajectory(
    the_task: Task,
    rounds: list[RoundRecord],
    *,
    committed: tuple[str, ...] | None = None,
    answer: str | None = None,
    goal: bool | None = None,
) -> Trajectory:
    """A finished trajectory; ``committed`` defaults to the options paid for."""
    if committed is None:
        committed = tuple(
            c.content["option"]
            for r in rounds
            for c in r.calls
            if c.name == "pay" and c.error is None
        )
    if goal is None:
        best = the_task.truth.best
        goal = (
            (answer in best)
            if not the_task.knobs.stateful
            else ((len(committed) == 1 and committed[0] in best) or (not best and not committed))
        )
    outcome = Outcome(goal, committed, answer, 0, 0, 0)
    return Trajectory(
        TRAJECTORY_VERSION,
        the_task.domain,
        the_task.seed,
        the_task.knobs,
        "toy",
        tuple(rounds),
        True,
        False,
        outcome,
        "",
    )


def renumber(rounds: list[RoundRecord]) -> list[RoundRecord]:
    """Rounds with indices and clocks 0, 1, 2... in list order."""
    return [replace(r, index=i, clock=i) for i, r in enumerate(rounds)]


UPDATE = Event(1, EventKind.USER_UPDATE, slot="budget", value=400)
PRICE = Event(1, EventKind.SET, "flights", "B", "price", 900)
