"""The parts every domain's generator and expert share (``stategym.generation``,
``stategym.agents.playbook``, ``stategym.agents.hearing``), on small hand-made cases.

The domains exercise them end to end in ``test_every_domain.py``; these tests pin down what
each part promises, so that a change to one shows here before it shows in six domains.
"""

from __future__ import annotations

import doctest
import itertools
import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stategym.generation
from stategym.agents.hearing import hear, read_order
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    assume,
    blind_commit,
    choose,
    decide_and_commit,
    known_at_start,
    propose,
    questions,
    rounds,
    worth,
)
from stategym.agents.style import Style
from stategym.generation import (
    apply_sets,
    dominated_decoys,
    keeps_order,
    order_hidden,
    order_matters,
    priorities_kind,
    priorities_sentences,
    priorities_slot,
)
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall, ToolResult, call
from stategym.kernel.task import (
    Constraint,
    ConstraintKind,
    Event,
    EventKind,
    Slot,
    SlotKind,
    Value,
    final_values,
)
from stategym.registry import get_domain


def test_the_generation_docstring_examples_hold() -> None:
    assert doctest.testmod(stategym.generation).failed == 0


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        ([], False),  # no option at all
        ([{"a", "b"}, {"a"}], False),  # one option meets everything
        ([{"a"}, {"a", "x"}], False),  # preferences outside ``prefs`` do not count
        ([{"a"}, set()], False),  # one trade-off beats the other whatever the order
        ([{"a"}, {"b"}], True),
        ([{"a"}, {"b"}, set()], True),
    ],
)
def test_the_order_matters_only_between_incomparable_best_trade_offs(
    sets: list[set[str]], expected: bool
) -> None:
    assert order_matters([frozenset(s) for s in sets], ("a", "b")) is expected


def test_dominated_decoys_skip_the_best_and_keep_a_rival_for_each() -> None:
    prefs = {
        "A": frozenset({"p"}),
        "B": frozenset({"p"}),
        "C": frozenset({"p", "q"}),
        "D": frozenset({"q"}),
    }
    # A is best and never taken; B is met by A, D by C, and nothing meets C
    assert dominated_decoys(["A", "B", "C", "D"], prefs, ("A",), 1) == ["B"]
    assert dominated_decoys(["A", "B", "C", "D"], prefs, ("A",), 3) == ["B", "D"]
    # D is met by C; once D is taken, C has no rival left
    assert dominated_decoys(["D", "C"], prefs, (), 2) == ["D"]
    # a decoy whose only rival was taken first is no decoy
    twins = {"X": frozenset({"p"}), "Y": frozenset({"p"})}
    assert dominated_decoys(["X", "Y"], twins, (), 2) == ["X"]


@dataclass(frozen=True)
class _Row:
    price: int
    stock: int


def test_apply_sets_changes_only_its_table_in_event_order() -> None:
    rows = {"a": _Row(10, 1), "b": _Row(20, 2)}
    events = (
        Event(1, EventKind.SET, "offers", "a", "price", 15),
        Event(2, EventKind.SET, "other", "b", "price", 99),
        Event(2, EventKind.USER_UPDATE, slot="budget", value=5),
        Event(3, EventKind.SET, "offers", "a", "price", 17),
        Event(3, EventKind.SET, "offers", "b", "stock", 0),
    )
    assert apply_sets("offers", rows, events) == {"a": _Row(17, 1), "b": _Row(20, 0)}
    assert rows == {"a": _Row(10, 1), "b": _Row(20, 2)}  # the input is left alone


@pytest.mark.parametrize(
    ("knobs", "hidden", "conflict", "kind"),
    [
        (Knobs(priorities=False), True, True, SlotKind.IRRELEVANT),
        (Knobs(), False, True, SlotKind.GIVEN),
        (Knobs(hidden_info=False), True, True, SlotKind.GIVEN),
        (Knobs(), True, True, SlotKind.MISSING),
        (Knobs(), True, False, SlotKind.IRRELEVANT),
    ],
)
def test_the_priority_order_must_be_asked_only_when_hidden_and_deciding(
    knobs: Knobs, hidden: bool, conflict: bool, kind: SlotKind
) -> None:
    assert priorities_kind(knobs, hidden, conflict) is kind


def test_the_request_ranks_two_or_more_preferences_in_the_users_words() -> None:
    rules = [
        Constraint("cheap", ConstraintKind.PREFERENCE, "a low price", "budget"),
        Constraint("fast", ConstraintKind.PREFERENCE, "quick delivery", "deadline"),
    ]
    assert priorities_sentences({}, rules) == []
    assert priorities_sentences({"priorities": "fast"}, rules) == []
    assert priorities_sentences({"priorities": "fast>cheap"}, rules) == [
        "If I can't have everything, what matters most is quick delivery, then a low price."
    ]


_WISHES = (
    Constraint("budget", ConstraintKind.NEED, "to stay within my budget", "budget"),
    Constraint("cheap", ConstraintKind.PREFERENCE, "a low price", "price"),
    Constraint("fast", ConstraintKind.PREFERENCE, "delivery by day 6", "deadline"),
)


def _facts(deadline: SlotKind) -> tuple[Slot, ...]:
    return (
        Slot("budget", SlotKind.MISSING, 300, "My budget is ${value}."),
        Slot("price", SlotKind.DERIVABLE, 250, "{value}"),
        Slot("deadline", deadline, "by day 6", "As for delivery, {value}."),
    )


def _order_slot(kind: SlotKind, conflict: bool) -> Slot:
    """The priorities slot of the fast-or-cheap wishes, beside a deadline of ``kind``."""
    return priorities_slot(
        ("fast", "cheap"),
        Knobs(),
        drawn_hidden=False,
        conflict=conflict,
        facts=_facts(kind),
        constraints=_WISHES,
    )


@pytest.mark.parametrize("kind", [SlotKind.MISSING, SlotKind.IRRELEVANT])
def test_the_order_is_kept_back_when_it_ranks_a_wish_on_a_hidden_fact(kind: SlotKind) -> None:
    """Stating "what matters most is delivery by day 6, then a low price" would state the
    hidden deadline; leaving the wish out would state an incomplete order. So the user keeps
    the order to itself, as if the draw had hidden it: must-ask when it decides."""
    assert keeps_order(False, _facts(kind), _WISHES[1:])
    for conflict, expected in ((True, SlotKind.MISSING), (False, SlotKind.IRRELEVANT)):
        slot = _order_slot(kind, conflict)
        assert (slot.name, slot.value, slot.kind) == ("priorities", "fast>cheap", expected)
        assert slot.kind is priorities_kind(Knobs(), True, conflict)
        assert order_hidden(Knobs(), (*_facts(kind), slot))


def test_the_order_is_stated_when_every_wish_it_ranks_is_on_a_fact_the_agent_has() -> None:
    """A need on a hidden slot (the budget) is not ranked by the sentence, and a wish on a
    given or derivable fact tells nothing the agent could not have."""
    for kind in (SlotKind.GIVEN, SlotKind.DERIVABLE):
        assert not keeps_order(False, _facts(kind), _WISHES[1:])
        assert keeps_order(True, _facts(kind), _WISHES[1:])  # the draw's choice still holds
        slot = _order_slot(kind, conflict=True)
        assert slot.kind is SlotKind.GIVEN and not order_hidden(Knobs(), (slot,))
    assert not order_hidden(
        Knobs(priorities=False), (Slot("priorities", SlotKind.IRRELEVANT, "", ""),)
    )


@dataclass
class _Beliefs:
    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    changed: bool = False
    seen: list[Observation] = field(default_factory=list)

    def see(self, observation: Observation) -> object:
        self.seen.append(observation)
        return None


_ANSWERS = (("budget", re.compile(r"budget is \$(\d+)"), int),)


def _preference(phrase: str) -> str | None:
    return {"a low price": "cheap", "quick delivery": "fast"}.get(phrase)


def test_hearing_takes_values_and_the_order_and_notices_a_change_of_mind() -> None:
    beliefs = _Beliefs(values={"budget": 100})
    hear(beliefs, "My budget is $100.", _ANSWERS, _preference)
    assert beliefs.values == {"budget": 100} and not beliefs.changed
    text = "My budget is $80. If I can't have everything, what matters most is quick delivery, "
    hear(beliefs, text + "then staying in budget, then a low price.", _ANSWERS, _preference)
    assert beliefs.values == {"budget": 80} and beliefs.changed
    assert beliefs.order == ("fast", "cheap")  # a phrase naming no preference is skipped
    hear(beliefs, None, _ANSWERS, _preference)
    assert read_order("Sure.", _preference) is None


def test_what_the_agent_knows_at_the_start() -> None:
    task = get_domain("travel").generate(0, Knobs())
    values, order = known_at_start(task, Style())
    assert values == dict(task.request.given)
    given = task.request.given.get("priorities")
    assert order == (tuple(str(given).split(">")) if given else None)
    values, order = known_at_start(task, Style(privileged=True))
    assert values == {**task.request.given, **final_values(task)}
    prefs = {c.id for c in task.constraints if c.kind == "preference"}
    assert order == tuple(c for c in task.priority_order() if c in prefs)


def test_opening_questions_follow_the_style() -> None:
    asked = {"budget": "Budget?", "seat": "Seat?", "priorities": "Order?"}
    known = {"seat": "aisle"}
    assert questions(Style(), known, asked, ("budget", "seat")) == Say("Budget?")
    assert questions(Style(), {"budget": 1}, asked, ("budget",)) is None
    assert questions(Style(ask="everything"), known, asked, ()) == Say("Budget? Seat? Order?")
    assert questions(Style(ask="nothing"), known, asked, ("budget",)) is None
    assert questions(Style(privileged=True), known, asked, ("budget",)) is None
    values: dict[str, Value] = {"budget": 5}
    assume(Style(), values, {"budget": 0, "seat": "any"})
    assert values == {"budget": 5}
    assume(Style(ask="nothing"), values, {"budget": 0, "seat": "any"})
    assert values == {"budget": 5, "seat": "any"}


def test_rounds_are_parallel_serial_or_none() -> None:
    batch = [call("a"), call("b")]
    assert rounds(batch, Style()) == [CallBatch(tuple(batch))]
    assert rounds(batch, Style(batching="guess")) == [CallBatch(tuple(batch))]
    assert rounds(batch, Style(batching="serial")) == [CallBatch((c,)) for c in batch]
    assert rounds([], Style()) == [] == rounds([], Style(batching="serial"))


@given(
    order=st.permutations("abcd"),
    first=st.sets(st.sampled_from("abcd")),
    second=st.sets(st.sampled_from("abcd")),
)
def test_worth_ranks_trade_offs_lexicographically(
    order: list[str], first: set[str], second: set[str]
) -> None:
    def key(hits: set[str]) -> list[bool]:
        return [p in hits for p in order]

    assert (worth(first, order) > worth(second, order)) == (key(first) > key(second))


def test_choose_takes_the_first_fit_or_the_best_with_the_first_of_ties() -> None:
    options = [3, 1, 2, 1]
    assert choose([], Style(), lambda o: o) is None
    assert choose(options, Style(first_fit=True), lambda o: o) == 3
    assert choose(options, Style(), lambda o: o) == 1
    assert choose(["b1", "a1", "a2"], Style(), lambda o: o[1]) == "b1"


def _drive(script: Steps[object], replies: list[Observation]) -> tuple[list[Action], object]:
    """Run a script against canned observations; returns its actions and its return value."""
    actions = [next(script)]
    try:
        for reply in replies:
            actions.append(script.send(reply))
    except StopIteration as stop:
        return actions, stop.value
    raise AssertionError("the script wanted more observations")


def test_proposals_are_said_once_or_three_times_and_every_reply_is_taken_in() -> None:
    replies = [Observation(0, 0, user=f"Yes, X{i}.") for i in range(3)]
    for style, times in ((Style(), 1), (Style(confirm="spam"), 3)):
        beliefs = _Beliefs()
        actions, got = _drive(propose("Shall I?", style, beliefs.see), replies[:times])
        assert actions == [Say("Shall I?")] * times
        assert got == replies[:times] == beliefs.seen
    assert agreed(replies[1], "X1") and not agreed(replies[1], "X0")
    assert not agreed(Observation(0, 0), "X0")


def test_blind_commits_guess_hold_ids_in_the_same_round_or_use_the_returned_ones() -> None:
    holds = [call("hold", option="A"), call("hold", option="B")]

    def commit(hold_id: str) -> ToolCall:
        return call("commit", hold_id=hold_id)

    beliefs = _Beliefs()
    actions, _ = _drive(
        blind_commit(holds, commit, Style(verify="same_round"), beliefs.see),
        [Observation(0, 0)],
    )
    assert actions == [CallBatch((*holds, commit("H1"), commit("H2")))]
    held = Observation(
        0,
        0,
        results=(
            ToolResult("c0", "hold", {"hold_id": "H7"}),
            ToolResult("c1", "hold", None, "sold out", "tool"),
        ),
    )
    actions, _ = _drive(
        blind_commit(holds, commit, Style(verify="skip"), beliefs.see),
        [held, Observation(1, 0)],
    )
    assert actions == [CallBatch(tuple(holds)), CallBatch((commit("H7"),))]


@dataclass(frozen=True)
class _Option:
    id: str


def _loop(
    stateful: bool, picks: list[_Option | None], matters: bool, results: list[str | None]
) -> tuple[list[Action], list[str]]:
    """The loop over canned picks and attempt results; returns its actions and the ids it
    attempted."""
    beliefs = _Beliefs(changed=True)
    attempted: list[str] = []
    pick_iter = itertools.chain(picks, itertools.repeat(picks[-1]))
    result_iter = itertools.chain(results, itertools.repeat(None))

    def attempt(option: _Option, agreement: Agreement) -> Steps[str | None]:
        assert not beliefs.changed  # reset before every attempt
        attempted.append(option.id)
        yield CallBatch((call("try", option=option.id),))
        beliefs.changed = True
        return next(result_iter)

    decision = Decision(
        question="Which first?",
        order_matters=lambda: matters and beliefs.order is None,
        pick=lambda: next(pick_iter),
        attempt=attempt,
        nothing="Nothing fits.",
        give_up="I give up.",
    )
    script = decide_and_commit(beliefs, Style(), stateful, decision)
    actions = [next(script)]
    for _ in range(40):
        if actions[-1] == Say("Which first?"):
            beliefs.order = ("a", "b")
        try:
            actions.append(script.send(Observation(0, 0)))
        except StopIteration:
            return actions, attempted
    raise AssertionError("the loop did not end")


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))


def test_the_loop_asks_for_the_order_once_it_matters_then_commits() -> None:
    actions, attempted = _loop(True, [_Option("A")], True, [None, "Done A."])
    assert actions[0] == Say("Which first?")
    assert attempted == ["A", "A"] and actions[-1] == _finish("Done A.")


def test_the_loop_ends_with_nothing_done_an_answer_or_giving_up() -> None:
    assert _loop(True, [None], False, [])[0] == [_finish("Nothing fits.")]
    assert _loop(False, [None], False, [])[0] == [_finish("none")]
    assert _loop(False, [_Option("B")], False, [])[0] == [_finish("B")]
    actions, attempted = _loop(True, [_Option("C")], False, [])
    assert len(attempted) == 12 and actions[-1] == _finish("I give up.")
