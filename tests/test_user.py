"""The deterministic simulated user, on the travel domain's phrase table; and, on every
domain, what its answers reveal, how it reads proposals naming a runner-up, and what it says
to questions no single fact answers."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from expert_proposals import expert_proposals
from stategym import Env, Knobs, run_episode
from stategym.agents import resolve
from stategym.agents.base import Agent
from stategym.kernel.errors import StateGymError
from stategym.kernel.proposals import normalise, option_key
from stategym.kernel.protocol import Action, Observation, Say
from stategym.kernel.task import SlotKind, Task
from stategym.kernel.user import SimulatedUser
from stategym.metrics.score import score
from stategym.registry import all_domains, get_domain

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "What is your budget?",
        "What's the most you can spend?",
        "Is there a price limit?",
        "How much are you willing to pay?",
        "What is the maximum price you'd accept?",
        "How much can you afford?",
        "What's your price cap for the ticket?",
    ),
    "fare_type": (
        "Do you need a refundable fare?",
        "Should the ticket be cancellable?",
        "What kind of fare do you want?",
        "Does it have to be refundable?",
        "Do you want a flexible fare?",
        "What type of ticket do you need?",
    ),
    "departure": (
        "What time of day would you like to depart?",
        "Morning or evening?",
        "What time do you want to leave?",
        "Do you prefer to depart early or late?",
        "Any preferred departure time?",
    ),
    "seat": ("Window or aisle?", "Do you have a seat preference?", "Would you like an aisle seat?"),
    "origin": (
        "Which airport do you fly from?",
        "Where are you flying from?",
        "What is your home airport?",
        "Where will you be leaving from?",
    ),
    "destination": (
        "Where are you going?",
        "What is your destination?",
        "Which city are you flying to?",
    ),
    "window": (
        "Which days can you travel?",
        "What day works for you?",
        "When can you travel?",
        "What are your travel dates?",
    ),
    "policy_cap": (
        "What does the company policy allow?",
        "Is there a fare cap in your travel policy?",
    ),
    "event_days": (
        "When is the festival?",
        "What are the event dates?",
        "How long does the season last?",
    ),
}
PRIORITY_QUESTIONS = (
    "What should I prioritize?",
    "What is most important to you?",
    "Would you rather have a morning flight or avoid the crowds?",
    "If you can't have everything, what comes first?",
    "Which of these matters more to you?",
    "Would you accept a compromise?",
)
NOT_UNDERSTOOD = ("Hello!", "Thanks, one moment.", "zxqv wrrt", "", "Please hold on.")


def _user(seed: int = 0, knobs: Knobs | None = None) -> tuple[SimulatedUser, Task]:
    env = Env("travel", knobs=knobs or Knobs())
    env.reset(seed=seed)
    return SimulatedUser(env.task, get_domain("travel").slot_phrases), env.task


@pytest.mark.parametrize(
    ("slot", "question"), [(s, q) for s, qs in PARAPHRASES.items() for q in qs]
)
def test_each_paraphrase_reaches_exactly_its_slot(slot: str, question: str) -> None:
    user, task = _user()
    turn = user.respond(question)
    assert turn.asked == (slot,)
    assert turn.understood and not turn.priority_asked and turn.proposed is None
    value = user.values[slot]
    assert turn.values == ((slot, value),)
    assert task.slot(slot).say(value) in turn.reply


def test_several_slots_in_one_message_are_answered_in_table_order() -> None:
    user, task = _user()
    turn = user.respond("Which airport do you fly from, and what is your budget?")
    order = [s.name for s in task.slots]
    assert turn.asked == tuple(sorted(("origin", "budget"), key=order.index))


@pytest.mark.parametrize("question", PRIORITY_QUESTIONS)
def test_priority_questions_reveal_the_order(question: str) -> None:
    for seed in range(30):
        user, task = _user(seed)
        turn = user.respond(question)
        assert turn.priority_asked and "priorities" in turn.asked
        hidden = {s.name for s in task.slots if s.kind in (SlotKind.MISSING, SlotKind.IRRELEVANT)}
        texts = {
            c.id: user.constraint_words(c)
            for c in task.constraints
            if c.kind != "policy" and c.topic not in hidden
        }
        ranked = [texts[c] for c in task.priority_order() if c in texts]
        assert "what matters most is" in turn.reply
        positions = [turn.reply.index(text) for text in ranked]
        assert positions == sorted(positions)


@pytest.mark.parametrize("message", NOT_UNDERSTOOD)
def test_messages_without_a_question_are_not_understood(message: str) -> None:
    user, _ = _user()
    turn = user.respond(message)
    assert not turn.understood and turn.asked == () and turn.values == ()
    assert "don't understand" in turn.reply


def test_a_question_between_two_facts_is_asked_back() -> None:
    """A clause tied between two slots is not understood (the user answers neither), but the
    user asks which one was meant, naming both facts as it names them itself."""
    user, _ = _user()
    (reading,) = user.read("When?")
    assert reading.intent is None and len(reading.between) == 2
    turn = user.respond("When?")
    assert not turn.understood and turn.asked == () and turn.values == ()
    first, second = (user._describe(slot) for slot in reading.between)
    assert turn.reply.endswith(f"do you mean {first} or {second}?")


def test_a_message_that_reaches_nothing_is_not_asked_back() -> None:
    user, _ = _user()
    turn = user.respond("The weather is lovely today.")
    assert turn.reply == "Sorry, I don't understand what you need from me."


def test_proposals_naming_one_option_are_judged_against_the_truth() -> None:
    checked = {True: 0, False: 0}
    for seed in range(40):
        user, task = _user(seed)
        # a user that has not changed its mind yet judges on the wishes it holds now
        best = _held(task)[1]
        for option in sorted(task.truth.satisfaction)[:4]:
            turn = user.respond(f"I found {option}. Shall I book it?")
            accepted = option in best
            assert (turn.proposed, turn.accepted) == (option, accepted)
            assert ("Yes," in turn.reply) == accepted and ("No," in turn.reply) != accepted
            checked[accepted] += 1
            if accepted:
                assert user.confirmed == option
    assert checked[True] and checked[False]


def test_proposing_several_options_is_refused() -> None:
    user, task = _user()
    first, second = sorted(task.truth.satisfaction)[:2]
    turn = user.respond(f"Shall I book {first} or {second}?")
    assert turn.proposed is None and turn.accepted is None
    assert "one option" in turn.reply and user.confirmed is None


def test_changes_of_mind_are_announced_once_and_withdraw_a_confirmation() -> None:
    user, task = _user()
    best = task.truth.best[0] if task.truth.best else sorted(task.truth.satisfaction)[0]
    user.respond(f"Shall I book {best}?")
    user.change_mind("budget", 123)
    assert user.confirmed is None
    notice, values = user.announce()
    assert notice is not None and "Change of plan" in notice and "$123" in notice
    assert values == (("budget", 123),)
    assert user.announce() == (None, ())


def test_state_and_restore() -> None:
    user, _ = _user()
    saved = user.state()
    user.change_mind("budget", 1)
    user.respond("What is your budget?")
    user.restore(saved)
    assert user.state() == saved


def test_hidden_slots_are_given_when_hidden_info_is_off() -> None:
    for seed in range(20):
        _, task = _user(seed, Knobs(hidden_info=False))
        assert all(s.kind is not SlotKind.MISSING for s in task.slots)
        assert not task.must_ask


def test_normalise_strips_plurals_and_punctuation() -> None:
    assert normalise("What are your DATES?!") == " what are your date "
    assert normalise("class glass bus") == " class glass bus "


SYNTHETIC = "synth:chain2+askgate3+conflict"
EVERY_DOMAIN = [*sorted(all_domains()), SYNTHETIC]


def _users(name: str, seeds: range) -> Iterator[SimulatedUser]:
    domain = get_domain(name)
    for seed in seeds:
        task = domain.generate(seed, Knobs())
        yield SimulatedUser(task, domain.slot_phrases, judges=not domain.read_only)


def _states(text: str, value: object) -> bool:
    word = str(value).strip()
    return bool(word) and re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.I) is not None


@pytest.mark.parametrize("name", EVERY_DOMAIN)
def test_the_priority_answer_states_no_slot_value_it_was_not_asked(name: str) -> None:
    """Only the order: "what matters most is the fare type, then ...", never "a refundable
    fare", so every slot the agent needs must still be asked for."""
    ranked = 0
    for user in _users(name, range(150)):
        turn = user.respond("If you can't have everything, what matters most to you?")
        assert turn.priority_asked
        assert {n for n, _ in turn.values} <= {"priorities"}
        for slot in user.task.slots:
            if slot.kind is not SlotKind.GIVEN and slot.name != "priorities":
                assert not _states(turn.reply, slot.value), (slot.name, turn.reply)
        ranked += "what matters most is" in turn.reply
    assert ranked > 0


def test_the_priority_answer_names_a_constraint_by_its_slot_only_when_its_words_state_it() -> None:
    user, task = _user(0)
    by_id = {c.id: c for c in task.constraints}
    assert user.constraint_words(by_id["refundable"]) == "the fare type"
    assert user.constraint_words(by_id["within_budget"]) == by_id["within_budget"].text


def _two_options(task: Task) -> tuple[str, str]:
    best = task.truth.best[0]
    other = next(o for o in sorted(task.truth.satisfaction) if o != best)
    return best, other


@pytest.mark.parametrize(
    "template",
    [
        "I propose {best}. I also looked at {other}.",
        "Shall I book {best}? I also considered {other}, but it is dearer.",
        "Shall I book {best} rather than {other}?",
        "Instead of {other}, shall I book {best}?",
        "I recommend {best}; {other} is the runner-up.",
        "Shall I book {best}? {other} would be my backup.",
    ],
)
def test_a_runner_up_named_beside_the_choice_is_context_not_a_second_proposal(
    template: str,
) -> None:
    user, task = _user(0)
    best, other = _two_options(task)
    turn = user.respond(template.format(best=best, other=other))
    assert (turn.proposed, turn.accepted) == (best, True)
    assert "one option" not in turn.reply and turn.asked == ()


def test_two_options_both_named_as_the_choice_are_still_refused() -> None:
    user, task = _user(0)
    best, other = _two_options(task)
    for text in (f"Shall I book {best} or {other}?", f"Should I take {best}, or {other}?"):
        turn = user.respond(text)
        assert turn.proposed is None and "one option" in turn.reply


class _RunnerUp:
    """The expert, naming a runner-up after every proposal it makes."""

    def __init__(self, expert: Agent, task: Task) -> None:
        self.name = "expert+runner-up"
        self._expert = expert
        self._task = task

    def act(self, observation: Observation) -> Action:
        action = self._expert.act(observation)
        best = self._task.truth.best
        if isinstance(action, Say) and best and best[0] in action.text:
            other = next(o for o in sorted(self._task.truth.satisfaction) if o != best[0])
            return Say(f"{action.text} I also looked at {other}.")
        return action


def test_naming_a_runner_up_costs_the_expert_nothing_on_travel_seed_0() -> None:
    """The issue's reproduction: R was 0.851, the runner-up read as a second proposal."""
    env = Env("travel")
    expert = resolve(env.domain, "expert")
    plain = run_episode(env, expert, 0)
    task = env.task
    named = run_episode(env, lambda t: _RunnerUp(expert(t), t), 0)
    assert any("also looked at" in (r.say or "") for r in named.rounds)
    assert score(named, task).composite == score(plain, task).composite == 1.0


OPEN_QUESTIONS = (
    "Which flight should I book?",
    "What are all your constraints?",
    "What do you recommend?",
    "Tell me everything I need to know.",
)


@pytest.mark.parametrize("question", OPEN_QUESTIONS)
def test_a_question_no_fact_answers_gets_what_the_user_can_tell(question: str) -> None:
    user, task = _user(0)
    turn = user.respond(question)
    assert turn.open and turn.understood and turn.asked == () and turn.values == ()
    assert "don't understand" not in turn.reply and "I can tell you about" in turn.reply
    assert "my budget" in turn.reply and "which of my wishes matters most" in turn.reply
    assert not any(_states(turn.reply, s.value) for s in task.slots if s.name != "priorities")


@given(st.text(alphabet="AaBbSsZz019-_ .é", max_size=12))
def test_an_option_key_is_its_normalised_form(option: str) -> None:
    """The fast path for ids of ASCII letters and digits gives what the regex path gives."""
    assert option_key(option) == normalise(option).strip()


# Slots whose value decides whether a preference on them exists at all (bank has a
# conversion wish only when the user wants to avoid conversion; the others only when the
# value is not "any"): before the fix, the priority answer named such a wish exactly when
# the hidden value made it exist, and the metric never counted the slot as revealed.
VALUE_DEPENDENT_WISHES = [
    ("bank", "conversion"),
    ("bank", "savings"),
    ("travel", "fare_type"),
    ("travel", "departure"),
    ("meetings", "room_feature"),
    ("meetings", "time_of_day"),
    ("shop", "brand"),
    ("shop", "deadline"),
]
PRIORITY_QUESTION = "If you can't have everything, what matters most to you?"


def _topic_named(user: SimulatedUser, slot: str, reply: str) -> bool:
    return any(user.constraint_words(c) in reply for c in user.task.constraints if c.topic == slot)


@pytest.mark.parametrize(("name", "slot"), VALUE_DEPENDENT_WISHES)
def test_the_priority_answer_does_not_reveal_whether_a_hidden_wish_exists(
    name: str, slot: str
) -> None:
    """Asked alone, the ranking leaves out every wish about a hidden slot not told yet, so
    it reads the same whatever the hidden value is."""
    hidden = 0
    for user in _users(name, range(150)):
        if user.task.slot(slot).kind is not SlotKind.MISSING:
            continue
        hidden += 1
        turn = user.respond(PRIORITY_QUESTION)
        assert turn.priority_asked and not _topic_named(user, slot, turn.reply)
    assert hidden > 0


@pytest.mark.parametrize(("name", "slot"), VALUE_DEPENDENT_WISHES)
def test_once_the_slot_is_told_the_priority_answer_ranks_its_wish(name: str, slot: str) -> None:
    """The answer stays useful: ask the fact first and the ranking places its wish."""
    phrase = get_domain(name).slot_phrases[slot][0]
    ranked = 0
    for user in _users(name, range(150)):
        if user.task.slot(slot).kind is not SlotKind.MISSING:
            continue
        assert user.respond(f"What about {phrase}?").asked == (slot,)
        turn = user.respond(PRIORITY_QUESTION)
        exists = any(c.topic == slot for c in user.task.constraints)
        assert _topic_named(user, slot, turn.reply) == exists
        ranked += exists
    assert ranked > 0


def test_what_was_told_survives_state_and_restore() -> None:
    user = next(
        u for u in _users("bank", range(150)) if u.task.slot("conversion").kind is SlotKind.MISSING
    )
    saved = user.state()
    user.respond("What about currency conversion?")
    assert "conversion" in user.told
    user.restore(saved)
    assert "conversion" not in user.told


# A rejection's reason follows the priority answer's rule: no wish on a hidden slot the
# agent was not told is named. Before, "No, SG882 does not work for me: I need a morning
# departure." stated the hidden departure time, and the turn recorded nothing as revealed.
PROPOSAL = "I propose {option}."


def _rejections(
    name: str, seeds: range, count: int | None = 3
) -> Iterator[tuple[SimulatedUser, str]]:
    """A fresh user of each task and up to ``count`` options it rejects (``None``: all)."""
    domain = get_domain(name)
    for seed in seeds:
        task = domain.generate(seed, Knobs())
        table, best = _held(task)
        rejected = [o for o in sorted(table) if o not in best]
        for option in rejected[:count]:
            yield SimulatedUser(task, domain.slot_phrases), option


def _held(task: Task) -> tuple[Mapping[str, frozenset[str]], tuple[str, ...]]:
    """The table a user that has not changed its mind yet judges on, and its best options."""
    truth = task.truth
    if truth.before_change is None or truth.best_before_change is None:
        return {**truth.withdrawn, **truth.satisfaction}, truth.best
    return truth.before_change, truth.best_before_change


def _untold(user: SimulatedUser) -> set[str]:
    return {s.name for s in user.task.slots if s.kind in _HIDDEN and s.name != "priorities"}


def _named(user: SimulatedUser, slot: str, reply: str) -> bool:
    return any(
        c.text in reply or user.constraint_words(c) in reply
        for c in user.task.constraints
        if c.topic == slot
    )


_HIDDEN = (SlotKind.MISSING, SlotKind.IRRELEVANT)
JUDGING = [name for name in EVERY_DOMAIN if name == SYNTHETIC or not get_domain(name).read_only]


@pytest.mark.parametrize("name", JUDGING)
def test_a_rejection_states_no_hidden_value_and_names_no_untold_wish(name: str) -> None:
    said = {"named": 0, "untold": 0}
    for user, option in _rejections(name, range(100)):
        untold = _untold(user)
        turn = user.respond(PROPOSAL.format(option=option))
        assert turn.accepted is False and turn.values == () and turn.asked == ()
        for slot in untold:
            assert not _states(turn.reply, user.values[slot]), (slot, turn.reply)
            assert not _named(user, slot, turn.reply), (slot, turn.reply)
        said["named"] += "the most important thing it misses is" in turn.reply
        said["untold"] += "something I have not told you yet" in turn.reply
    # meetings' options miss a need on a fact the agent has before any hidden wish
    assert said["named"] > 0 and (said["untold"] > 0 or name == "meetings")


def _first_wish(user: SimulatedUser, option: str, told: set[str]) -> str:
    """The words of the most important constraint ``option`` misses, skipping those on a
    hidden slot outside ``told``."""
    by_id = {c.id: c for c in user.task.constraints}
    satisfied = _held(user.task)[0][option]
    untold = _untold(user) - told
    wish = next(
        by_id[c]
        for c in user.task.priority_order()
        if c not in satisfied and by_id[c].topic not in untold
    )
    words = user.constraint_words(wish)
    return words if words == wish.text else f"what I want for {words}"


@pytest.mark.parametrize(("name", "slot"), VALUE_DEPENDENT_WISHES)
def test_a_rejection_names_a_wish_on_a_hidden_slot_once_that_slot_was_told(
    name: str, slot: str
) -> None:
    """Where the wish on the hidden slot is the first the option misses (of those the user
    could name), the reason names another wish, or none, until the slot is asked; asked in
    the same message, the reason names that wish."""
    phrase = get_domain(name).slot_phrases[slot][0]
    cases = 0
    for user, option in _rejections(name, range(150), None):
        if user.task.slot(slot).kind is not SlotKind.MISSING or cases >= 40:
            continue
        by_id = {c.id: c for c in user.task.constraints}
        others = _untold(user) - {slot}
        missed = [
            by_id[c]
            for c in user.task.priority_order()
            if c not in _held(user.task)[0][option] and by_id[c].topic not in others
        ]
        if not missed or missed[0].topic != slot:
            continue
        cases += 1
        before = user.respond(PROPOSAL.format(option=option)).reply
        assert not _named(user, slot, before)
        turn = user.respond(f"What about {phrase}? " + PROPOSAL.format(option=option))
        assert turn.asked == (slot,) and turn.proposed == option
        assert (
            f"the most important thing it misses is {_first_wish(user, option, {slot})}."
            in turn.reply
        )
    assert cases > 0


@pytest.mark.parametrize("name", JUDGING)
def test_a_rejection_names_the_first_missed_wish_in_words_that_read(name: str) -> None:
    """The wish follows a copula, which reads whatever the form of its words: "I need
    leaving my savings untouched" did not."""
    for user, option in _rejections(name, range(60)):
        turn = user.respond(PROPOSAL.format(option=option))
        assert not re.search(r"\bI need (?:leaving|avoiding|having|not)\b", turn.reply)
        if "the most important thing it misses is" in turn.reply:
            assert turn.reply.endswith(f"is {_first_wish(user, option, set())}.")


# Options named as context propose nothing. "besides" and "versus" were aside words only
# as typed: a clause's words are normalised ("beside", "versu"), so they never matched.
def test_aside_words_are_matched_in_their_normalised_form() -> None:
    from stategym.kernel.proposals import _ASIDE, _ASIDE_WORDS

    assert all(normalise(word).strip() in _ASIDE for word in _ASIDE_WORDS.split())
    user, task = _user(1)
    best, other = _two_options(task)
    for text in (
        f"Besides {other}, what is your budget?",
        f"{other} versus {best}: what is your budget?",
        f"{other} vs. {best}: what is your budget?",
    ):
        turn = user.respond(text)
        assert (turn.proposed, turn.accepted, turn.asked) == (None, None, ("budget",)), text
        assert "one option" not in turn.reply


def test_an_option_named_only_as_context_proposes_nothing_and_alone_is_not_understood() -> None:
    """Before, "I also looked at NX271." got an empty reply and counted as understood (the
    user never gave up), while the metric charged it as a message the user could not use."""
    user, task = _user(1)
    _, other = _two_options(task)
    turn = user.respond(f"I also looked at {other}.")
    assert (turn.proposed, turn.understood, turn.values) == (None, False, ())
    assert turn.reply == "Sorry, I don't understand what you need from me."
    turn = user.respond(f"I also looked at {other}, but what is your budget?")
    assert turn.understood and turn.asked == ("budget",) and turn.proposed is None


def _message_events(text: str) -> tuple[bool, bool]:
    """Whether the user understood ``text``, said first on travel seed 1, and whether the
    metric charged it as a message the user could not use."""
    env = Env("travel")
    env.reset(seed=1)
    env.step(Say(text.format(best=env.task.truth.best[0], other=_two_options(env.task)[1])))
    turn = env.trajectory.rounds[-1].user
    assert turn is not None
    unusable = any(e.subject == "unusable message" for e in score(env.trajectory, env.task).events)
    return turn.understood, unusable


@pytest.mark.parametrize(
    "text",
    [
        "I also looked at {other}.",
        "Shall I book {best} or {other}?",
        "Hello!",
        "I propose {best}.",
        "I propose {other}.",
        "What is your budget?",
        "Which flight should I book?",
        "What matters most to you?",
        "I also looked at {other}, but what is your budget?",
    ],
)
def test_the_user_understands_exactly_the_messages_the_metric_counts_usable(text: str) -> None:
    understood, unusable = _message_events(text)
    assert understood is not unusable


def test_three_messages_naming_options_only_as_context_make_the_user_give_up() -> None:
    env = Env("travel")
    env.reset(seed=1)
    other = _two_options(env.task)[1]
    results = [env.step(Say(f"I also looked at {other}.")) for _ in range(3)]
    assert [r.terminated for r in results] == [False, False, True]
    assert (results[-1].observation.user or "").endswith("Goodbye.")


# The user judges a proposal on the wishes it holds when it is made, and recognises every
# option the world can show (regressions of the fifth audit's findings 3 and 4).


def _first_proposal(env: Env, seed: int, *texts: str) -> list[str]:
    """The user's reply to each of ``texts``, said first on ``seed`` of ``env``'s domain."""
    replies = []
    for text in texts:
        env.reset(seed=seed)
        env.step(Say(text))
        turn = env.trajectory.rounds[-1].user
        assert turn is not None and turn.proposed is not None, text
        assert turn.accepted is not None
        replies.append(turn.reply.replace(turn.proposed, "X"))
    return replies


def test_a_proposal_before_a_change_of_mind_is_judged_on_the_wishes_the_user_holds() -> None:
    # travel seed 5: the budget is $850 until clock 3, then $750; LU573 costs $810
    env = Env("travel")
    env.reset(seed=5)
    task = env.task
    assert task.slot("budget").value == 850
    assert [(e.at, e.value) for e in task.events if e.slot == "budget"] == [(3, 750)]
    assert env.world.flights["LU573"].price == 810
    assert "within_budget" not in task.truth.satisfaction["LU573"]
    env.step(Say("What is your budget for this flight?"))
    result = env.step(Say("I propose LU573. Shall I book it?"))
    reply = result.observation.user or ""
    assert "No, LU573" in reply and "budget" not in reply  # it fits the $850 the user holds
    # once the user has changed its mind, the final budget is what it judges on
    env.reset(seed=5)
    for _ in range(3):
        env.step(Say("What is your budget for this flight?"))
    result = env.step(Say("I propose LU573. Shall I book it?"))
    assert "Change of plan" in (result.observation.user or "")
    assert "budget" in (result.observation.user or "").split("does not work for me")[-1]


@pytest.mark.parametrize("seed", [1, 4, 7])  # seed 1: 90 minutes, then 60 from clock 3
def test_every_meeting_length_is_an_option_so_proposals_tell_no_hidden_length(seed: int) -> None:
    env = Env("meetings")
    env.reset(seed=seed)
    task = env.task
    held = {task.slot("duration").value, *(e.value for e in task.events if e.slot == "duration")}
    some = next(iter(task.truth.satisfaction))
    texts = ["Would " + re.sub(r"M\d+", f"M{m}", some) + " work for you?" for m in (30, 60, 90)]
    replies = _first_proposal(env, seed, *texts)  # each is read as a proposal, judged
    # the lengths the user does not hold now get one reply, the coming one included
    now = task.slot("duration").value
    others = {r for m, r in zip((30, 60, 90), replies, strict=True) if m != now}
    assert len(others) == 1
    if seed == 1:
        assert held == {90, 60}


@pytest.mark.parametrize(("domain", "seed"), [("travel", 2), ("travel", 6), ("shop", 4)])
def test_an_option_that_sells_out_later_is_judged_while_it_is_on_offer(
    domain: str, seed: int
) -> None:
    env = Env(domain)
    env.reset(seed=seed)
    task = env.task
    sold = next(e for e in task.events if e.field in ("seats", "stock") and e.value == 0)
    assert sold.key not in task.truth.satisfaction and sold.at > 1
    (reply,) = _first_proposal(env, seed, f"I propose {sold.key}. Shall I book it?")
    assert reply.startswith("No, X does not work for me: the most important thing it misses")


def _left_by_scan(sentence: Any) -> list[str]:
    """``proposals._left`` as it was before audit 17B F3: every option scanned for every
    rejection (quadratic), kept as the reference the bisection must agree with."""
    from stategym.kernel.proposals import _REJECTING

    line = " ".join(sentence.words)
    rejected = set()
    for match in _REJECTING.finditer(line):
        first, last = line.count(" ", 0, match.start()), line.count(" ", 0, match.end())
        _, _, at = min(
            (first - at, 1, at) if at < first else (at - last, 0, at) for _, at, _ in sentence.named
        )
        rejected.add(at)
    return list(
        dict.fromkeys(o for o, at, context in sentence.named if not (context or at in rejected))
    )


_WORDS = ["i", "pick", "aq1", "aq2", "aq3", "misses", "not", "a", "good", "fit", "too", "late"]


@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=40), st.data())
def test_the_option_nearest_a_rejection_is_found_as_the_scan_found_it(
    words: list[str], data: st.DataObject
) -> None:
    from stategym.kernel.proposals import _left, _Sentence

    named = [(w, at, data.draw(st.booleans())) for at, w in enumerate(words) if w[:2] == "aq"]
    if not named:
        return
    sentence = _Sentence(" ".join(words), tuple(words), tuple(named))
    assert _left(sentence) == _left_by_scan(sentence)


def test_a_phrase_table_given_as_lists_reads_as_the_same_table_given_as_tuples() -> None:
    # Audit 22A F7: a hand-built table whose slots hold lists raised TypeError from the
    # user's phrase index on every go-ahead it read beside a step report.
    task, _, option = expert_proposals("bank", 1)[0]
    as_tuples = get_domain("bank").slot_phrases
    as_lists = {slot: list(phrases) for slot, phrases in as_tuples.items()}
    report = f"I've locked the FX rate: your rate quote for {option} is confirmed."
    for message in (
        f"{report} Shall I charge your account now?",
        f"{report} May I use your savings account?",
        f"I recommend {option}. Shall I pay it?",
        "Shall I charge the fees to your savings?",
    ):
        with_tuples = SimulatedUser(task, as_tuples).respond(message)
        with_lists = SimulatedUser(task, as_lists).respond(message)  # type: ignore[arg-type]
        assert with_lists == with_tuples


def test_a_domain_whose_slot_is_given_one_bare_phrase_is_refused_by_name() -> None:
    # A bare string would be read as one phrase per letter: "my budget" as "m", "y", ...
    travel = get_domain("travel")
    for phrases in ("my budget", None, (p for p in ("my budget",))):
        with pytest.raises(StateGymError, match=r"travel slot_phrases\['budget'\]"):
            dataclasses.replace(travel, slot_phrases={**travel.slot_phrases, "budget": phrases})
