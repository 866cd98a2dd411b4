"""Travel's ground truth: the gold call graph and the booking decision for the realised world.

The graph reads the profile, the policy and the city's events, searches every day of the
window (each search fed the home airport from the profile), then, in a stateful world with a
best flight, holds it, has the traveller confirm and pays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import DecisionPoint, EdgeKind, GoldCall, GoldEdge, Precondition
from stategym.kernel.tools import Effect

from .world import Flight

if TYPE_CHECKING:
    from .generator import Draw

Gold = tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]
"""The gold calls, their edges and the decision points, as :class:`GroundTruth` takes them."""


def gold(
    draw: Draw,
    knobs: Knobs,
    final: dict[str, Flight],
    best: tuple[str, ...],
    must_ask: tuple[str, ...],
) -> Gold:
    """The gold call graph and the commit decision point for the realised world."""
    calls, edges = _reads_and_searches(draw, must_ask)
    decisions = (_booking_decision(best, must_ask),) if knobs.stateful else ()
    if knobs.stateful and best:
        more_calls, more_edges = _booking(draw, final, best, must_ask)
        calls += more_calls
        edges += more_edges
    return tuple(calls), tuple(edges), decisions


def _reads_and_searches(
    draw: Draw, must_ask: tuple[str, ...]
) -> tuple[list[GoldCall], list[GoldEdge]]:
    """Ask what only the traveller knows, read the fixed facts, search every day."""
    calls = [GoldCall(f"ask:{s}", "ask") for s in must_ask]
    calls += [
        GoldCall("get_profile", "get_profile", {}, Effect.READ),
        GoldCall("get_travel_policy", "get_travel_policy", {}, Effect.READ),
        GoldCall("get_city_events", "get_city_events", {"airport": draw.dest}, Effect.READ),
    ]
    edges: list[GoldEdge] = []
    for day in draw.days:
        node = f"search:{day}"
        calls.append(
            GoldCall(
                node,
                "search_flights",
                {"origin": draw.home, "destination": draw.dest, "day": day},
                Effect.READ,
            )
        )
        edges.append(GoldEdge("get_profile", node, EdgeKind.PIPE))
    return calls, edges


def _booking_decision(best: tuple[str, ...], must_ask: tuple[str, ...]) -> DecisionPoint:
    """Whether to book and pay, and what the agent must have seen first."""
    preconditions = [
        Precondition("fresh fare of the chosen flight", "hold"),
        Precondition("the traveler confirmed the flight", "confirm"),
        Precondition("the policy's fare cap", "get_travel_policy"),
    ]
    preconditions += [Precondition(f"{s} from the traveler", f"ask:{s}") for s in must_ask]
    return DecisionPoint(
        "book",
        "book_and_pay",
        bool(best),
        {},
        best[0] if best else None,
        tuple(preconditions),
        1.0,
    )


def _booking(
    draw: Draw, final: dict[str, Flight], best: tuple[str, ...], must_ask: tuple[str, ...]
) -> tuple[list[GoldCall], list[GoldEdge]]:
    """Hold the best flight (chosen over every search), confirm, pay."""
    calls = [
        GoldCall("hold", "hold_fare", {"flight_id": best}, Effect.WRITE),
        GoldCall("confirm", "confirm"),
        GoldCall("pay", "book_and_pay", {}, Effect.COMMIT),
    ]
    best_day = final[best[0]].day
    edges = [
        GoldEdge(f"search:{d}", "hold", EdgeKind.PIPE if d == best_day else EdgeKind.DECIDE)
        for d in draw.days
    ]
    edges += [
        GoldEdge("get_travel_policy", "hold", EdgeKind.DECIDE),
        GoldEdge("get_city_events", "hold", EdgeKind.DECIDE),
    ]
    edges += [GoldEdge(f"ask:{s}", "hold", EdgeKind.GATE) for s in must_ask]
    edges += [
        GoldEdge("hold", "confirm", EdgeKind.DECIDE),
        GoldEdge("hold", "pay", EdgeKind.PIPE),
        GoldEdge("confirm", "pay", EdgeKind.ORDER),
    ]
    return calls, edges
