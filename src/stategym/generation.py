"""Building blocks every domain's task generator shares.

A generator shapes a drawn world, schedules events that must not change the right decision,
and decides which facts the agent has to ask for. The domain-specific parts (what an option
is, which constraints it satisfies) stay in each domain; what is the same everywhere is here:

* :func:`order_matters`: whether the priority order decides between the feasible options
  (then the order is a must-ask fact when the user keeps it to themselves);
* :func:`keeps_order`: whether the user keeps that order to itself (drawn so, or because it
  ranks a wish on a fact only the user can tell);
* :func:`priorities_kind`: how the agent can learn that order, and :func:`priorities_slot`,
  the slot that holds it; :func:`order_hidden`: whether a task's order is the user's alone;
* :func:`priorities_sentences`: the request's sentence that states it;
* :func:`dominated_decoys`: which options an event may hit without changing the best choice;
* :func:`apply_sets`: a table as it will be once every scheduled ``set`` event has fired;
* :func:`with_user_tables`: the tables the simulated user judges a proposal on, beside the
  final one the scorer reads.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    Constraint,
    Event,
    EventKind,
    GroundTruth,
    Slot,
    SlotKind,
    Value,
    best_options,
)
from stategym.kernel.user import HIDDEN

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Row = TypeVar("Row", bound="DataclassInstance")


def order_matters(sets: Iterable[frozenset[str]], prefs: Collection[str]) -> bool:
    """Whether the priority order decides between options with these satisfaction sets.

    True when no option meets every preference in ``prefs`` and the maximal trade-offs
    differ, so that which one is best depends on how the user ranks the preferences.

    Example:
        >>> order_matters([frozenset({"a"}), frozenset({"b"})], ("a", "b"))
        True
        >>> order_matters([frozenset({"a"}), frozenset({"a", "b"})], ("a", "b"))
        False
    """
    wanted = set(prefs)
    trimmed = {s & wanted for s in sets}
    if not trimmed or any(s >= wanted for s in trimmed):
        return False
    return len([s for s in trimmed if not any(s < o for o in trimmed)]) > 1


def priorities_kind(knobs: Knobs, hidden: bool, conflict: bool) -> SlotKind:
    """How the agent can learn the user's priority order.

    Args:
        knobs: the task's knobs; with ``priorities`` off the order never matters.
        hidden: the user keeps the order to themselves (hidden facts need ``hidden_info``).
        conflict: the order decides between the feasible options (:func:`order_matters`).
    """
    if not knobs.priorities:
        return SlotKind.IRRELEVANT
    if not (hidden and knobs.hidden_info):
        return SlotKind.GIVEN
    return SlotKind.MISSING if conflict else SlotKind.IRRELEVANT


def keeps_order(drawn: bool, facts: Iterable[Slot], wishes: Iterable[Constraint]) -> bool:
    """Whether the user keeps its priority order to itself rather than stating it.

    The request states the order only when every wish it ranks is on a fact the agent can
    have without asking: a wish on a slot of kind missing or irrelevant can state that
    slot's value in its own words ("an evening departure") or, named by topic, give the
    value away by existing at all (bank has a conversion wish only when the user wants to
    avoid conversion), and leaving it out of the sentence would state an incomplete order.
    The simulated user answers a priority question by the same rule
    (:meth:`stategym.kernel.user.SimulatedUser._priorities`).

    Args:
        drawn: the draw has the user keep the order to itself anyway.
        facts: the task's slots (a ``priorities`` slot among them is ignored).
        wishes: the preferences the order ranks.

    Example:
        >>> from stategym.kernel.task import Constraint, ConstraintKind, Slot, SlotKind
        >>> fare = Constraint("refundable", ConstraintKind.PREFERENCE, "a refund", "fare_type")
        >>> keeps_order(False, [Slot("fare_type", SlotKind.MISSING, "any", "")], [fare])
        True
        >>> keeps_order(False, [Slot("fare_type", SlotKind.GIVEN, "any", "")], [fare])
        False
    """
    hidden = {s.name for s in facts if s.kind in HIDDEN and s.name != "priorities"}
    return drawn or any(w.topic in hidden for w in wishes)


def priorities_slot(
    order: Sequence[str],
    knobs: Knobs,
    *,
    drawn_hidden: bool,
    conflict: bool,
    facts: Iterable[Slot],
    constraints: Iterable[Constraint],
) -> Slot:
    """The slot holding the user's priority order, its kind settled by :func:`keeps_order`.

    Args:
        order: the preferences' constraint ids, most important first.
        knobs: the task's knobs.
        drawn_hidden: the draw has the user keep the order to itself.
        conflict: the order decides between the feasible options (:func:`order_matters`).
        facts: the task's other slots.
        constraints: the task's constraints; those in ``order`` are the wishes it ranks.
    """
    wishes = [c for c in constraints if c.id in order]
    hidden = keeps_order(drawn_hidden, facts, wishes)
    return Slot("priorities", priorities_kind(knobs, hidden, conflict), ">".join(order), "{value}")


def order_hidden(knobs: Knobs, slots: Iterable[Slot]) -> bool:
    """Whether the task's priority order is learnable only by asking the user
    (``Task.priorities_hidden``): the priorities knob is on and the request does not state it."""
    return knobs.priorities and any(
        s.name == "priorities" and s.kind is not SlotKind.GIVEN for s in slots
    )


def priorities_sentences(
    given: Mapping[str, Value], constraints: Iterable[Constraint]
) -> list[str]:
    """The request's sentence ranking the user's preferences, in the simulated user's words.

    The request states the order only when the ``priorities`` slot is given, which
    :func:`priorities_slot` allows only when no wish it ranks is on a hidden fact: the
    sentence then names every wish in its own words, none of which states a hidden value.

    Args:
        given: the slot values the request states; ``"priorities"`` (constraint ids joined
            by ``>``, most important first) among them when the request states the order.
        constraints: the task's constraints, whose texts the sentence uses.

    Returns:
        The sentence, or no sentence when the request ranks fewer than two preferences.
    """
    if "priorities" not in given:
        return []
    text = {c.id: c.text for c in constraints}
    ranked = [text[c] for c in str(given["priorities"]).split(">") if c]
    if len(ranked) < 2:
        return []
    return ["If I can't have everything, what matters most is " + ", then ".join(ranked) + "."]


def dominated_decoys(
    options: Sequence[str],
    prefs: Mapping[str, frozenset[str]],
    best: Collection[str],
    count: int,
) -> list[str]:
    """Up to ``count`` options an event can take away without changing the best choice.

    Each is the first option, in the order given, that is not best and whose preferences
    another option not yet taken also meets (or beats): an agent that saw it before or after
    the event still faces the same trade-offs.

    Args:
        options: the feasible options, in the order to try them.
        prefs: the preferences each option meets.
        best: the best options, never taken.
        count: how many decoys are wanted.
    """
    taken: list[str] = []
    for _ in range(count):
        target = next(
            (
                t
                for t in options
                if t not in best
                and t not in taken
                and any(o != t and o not in taken and prefs[o] >= prefs[t] for o in options)
            ),
            None,
        )
        if target is None:
            break
        taken.append(target)
    return taken


def apply_sets(table: str, rows: Mapping[str, Row], events: Iterable[Event]) -> dict[str, Row]:
    """The rows of ``table`` once every ``set`` event on it has fired, in order."""
    final = dict(rows)
    for e in events:
        if e.kind is EventKind.SET and e.table == table:
            change: dict[str, Any] = {e.field: e.value}
            final[e.key] = replace(final[e.key], **change)
    return final


Table = Mapping[str, frozenset[str]]
"""The constraint ids each option satisfies."""


def with_user_tables(
    truth: GroundTruth, offered: Table, before: tuple[Table, Table] | None
) -> GroundTruth:
    """``truth`` with what the simulated user judges a proposal on beside its final table.

    The user judges on the wishes it holds when the proposal is made, and recognises every
    option the world shows: the options an event takes away (:attr:`GroundTruth.withdrawn`)
    are judged as they were while offered, and while the user holds the values its change of
    mind replaces it judges on the table of those values (:attr:`GroundTruth.before_change`).

    Args:
        truth: the ground truth over the final world and the final values.
        offered: the table of the world before any event, under the final values.
        before: the tables of the world before any event and of the final world, under the
            values before the change of mind (``None``: the task has none).

    Example:
        >>> truth = GroundTruth((), (), (), {"A": frozenset({"x"})}, frozenset(), ("A",), {"x": 1})
        >>> t = with_user_tables(truth, {"A": frozenset({"x"}), "B": frozenset()}, None)
        >>> dict(t.withdrawn), t.before_change
        ({'B': frozenset()}, None)
    """
    final = truth.satisfaction
    withdrawn = {o: s for o, s in offered.items() if o not in final}
    if before is None:
        return replace(truth, withdrawn=withdrawn)
    before_offered, before_final = before
    table = {**{o: s for o, s in before_offered.items() if o not in final}, **before_final}
    best = best_options(table, truth.nothing_satisfies, truth.weights)
    return replace(truth, withdrawn=withdrawn, before_change=table, best_before_change=best)
