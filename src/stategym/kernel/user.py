"""The deterministic simulated user.

It holds the task's hidden slots and true priorities and reads the agent's messages without
an LLM, through the intent model of :mod:`stategym.kernel.understanding`: each clause of a message
goes to the slot or intent it asks about, in words the domain's phrase table need not contain
("What's the most you're prepared to pay?" reaches ``budget``). The user answers every slot it
was asked about, ranks its preferences when asked which matters more, says what it can tell
when asked something no fact answers (which option to pick, all its constraints at once),
confirms or rejects a concrete proposal against its true constraints, announces scheduled
changes of mind, and says when it does not understand.

A proposal is judged on the wishes the user holds when it is made (:meth:`SimulatedUser._wishes`):
before its scheduled change of mind on the table of its values before the change
(:attr:`~stategym.kernel.task.GroundTruth.before_change`), then on the final one. Every option
id the world can show is an option (:attr:`~stategym.kernel.task.GroundTruth.options`): one an
event takes away is judged as it was while offered, and one no table of the wishes held lists
(a meeting of another length) is refused, so which ids are options tells no hidden value.

A reply reveals a hidden value only when the agent asked for that slot, and what it reveals
is logged (:attr:`UserTurn.values`). Neither the priority answer nor a rejection's reason
names a wish about a hidden slot the agent has not been told (:meth:`SimulatedUser._untold`),
and both name a wish by its topic where its words would state a value: the words of such a
wish can state the value ("a morning departure"), and whether it exists at all can be the
value (bank has a conversion wish only when the user wants to avoid conversion). When every
wish a rejected option misses is such a one, the user says only that it misses something
not told yet. The request follows the same rule (:func:`stategym.generation.keeps_order`).

A proposal is the one option a message names as its choice (:mod:`stategym.kernel.proposals`):
named as context ("I also looked at AQ348"), it proposes nothing, and several offered as the
choice are refused.

A message that reports the act done ("Done! Your booking AQ449 is confirmed.") and asks no
go-ahead proposes nothing (:func:`stategym.kernel.proposals.reports`): the user judges nothing,
tells nothing it was not asked, and says "Thank you.". Before, it read such a closing message
as a new proposal of what it had accepted and said yes again (audit 7c F7).

A message is understood when it asked a slot or the priority order, proposed one option,
asked an open question, or reported the act done. Any other (options named only as context,
several proposed at once, nothing to answer: a thanks, a status update) is not, and counts
towards the user giving up (:data:`stategym.kernel.env.GIVE_UP_AFTER`). The metric counts a
message usable on the same rule (``docs/metrics.md``, D1), but for a report, which asks,
proposes and opens nothing and is charged as a message with nothing to use.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from stategym.kernel.go_aheads import CONFIRMING, asks_go_ahead
from stategym.kernel.news import as_news
from stategym.kernel.proposals import (
    Proposal,
    asked_beside_reports,
    find_proposal,
    names_option,
    normalise,
    option_keys,
    reports,
    sentences,
    without_ids,
)
from stategym.kernel.task import Constraint, SlotKind, Task, Value, final_values
from stategym.kernel.understanding import (
    CHOICE,
    OVERVIEW,
    PRIORITIES,
    Reader,
    Reading,
    matcher_for,
)
from stategym.kernel.understanding.courtesy import offers_more_help
from stategym.kernel.understanding.intents import PRIORITY_PHRASES
from stategym.kernel.understanding.spacing import compact

HIDDEN = (SlotKind.MISSING, SlotKind.IRRELEVANT)
"""Slot kinds the agent can learn only by asking the user (the request states the priority
order only when no wish it ranks is on such a slot: :func:`stategym.generation.keeps_order`)."""


@functools.cache
def _phrases_by_first_word(phrases: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
    """A slot's phrases in :func:`normalise`'s form, to find them as whole words, by their
    first word: a sentence can hold only the phrases opening on one of its words (a scan of
    every phrase of every untold slot was most of the time of a message of go-aheads)."""
    index: dict[str, list[str]] = {}
    for phrase in map(normalise, phrases):
        if phrase.strip():
            index.setdefault(phrase.split()[0], []).append(phrase)
    return MappingProxyType({word: tuple(found) for word, found in index.items()})


def _holds_phrase(words: str, present: frozenset[str], phrases: Sequence[str]) -> bool:
    """Whether ``words`` (:func:`normalise`'s form, its set of words ``present``) holds one of
    ``phrases`` as whole words. A table built by hand may give a slot a list: the index is
    kept per tuple (audit 22A F7: a list raised ``TypeError`` from the cache)."""
    index = _phrases_by_first_word(tuple(phrases))
    return any(phrase in words for word in present for phrase in index.get(word, ()))


@dataclass(frozen=True, slots=True)
class UserTurn:
    """How the user read one agent message, and what it replied.

    Attributes:
        asked: slots the message asked about, in the task's slot order.
        priority_asked: the message asked which constraint matters more.
        proposed: the option the message proposed, if it named exactly one as its choice.
        accepted: the user's verdict on the proposal (``None``: no proposal).
        understood: the message was one the user could use (it asked a slot or the priority
            order, proposed one option, asked an open question, or reported the act done:
            :func:`~stategym.kernel.proposals.reports`): what resets the give-up counter,
            and what the metric counts usable but for a report (the one message understood
            that asks, proposes and opens nothing).
        reply: what the user said.
        values: slot values the reply revealed.
        open: the message asked something no single fact answers (which option to pick,
            every constraint at once); the reply said what the user can tell. Such a message
            is understood, so it is not an unusable one.
    """

    asked: tuple[str, ...]
    priority_asked: bool
    proposed: str | None
    accepted: bool | None
    understood: bool
    reply: str
    values: tuple[tuple[str, Value], ...] = ()
    open: bool = False


@dataclass(frozen=True, slots=True)
class UserState:
    values: tuple[tuple[str, Value], ...]
    confirmed: str | None
    pending: tuple[str, ...]
    told: tuple[str, ...] = ()


class SimulatedUser:
    """Answers the agent on behalf of the task's hidden facts.

    Args:
        task: the task whose slots and truth the user holds.
        slot_phrases: for each slot, the phrases a question may use to refer to it; the
            first names the slot as the user would ("my budget").
        judges: whether the user judges proposals; a user who asked a question it cannot
            answer itself (the lookup domain) does not, or it would give the answer away.
        reader: what reads the agent's messages; ``None``: the rule-based intent model of
            ``slot_phrases`` (:mod:`stategym.kernel.understanding`).
    """

    def __init__(
        self,
        task: Task,
        slot_phrases: Mapping[str, tuple[str, ...]],
        *,
        judges: bool = True,
        reader: Reader | None = None,
    ) -> None:
        self.task = task
        self.judges = judges
        self._reader = reader
        self._matcher: Reader = reader or matcher_for(slot_phrases)
        self._phrases = slot_phrases
        self._order = {slot.name: i for i, slot in enumerate(task.slots)}
        self._options = option_keys(task.truth.options) if judges else {}
        self.values: dict[str, Value] = {s.name: s.value for s in task.slots}
        self.confirmed: str | None = None
        self.pending: list[str] = []
        # slots whose value the agent has: given or looked up, asked, or announced
        self.told: set[str] = {s.name for s in task.slots if s.kind not in HIDDEN}

    def __getstate__(self) -> dict[str, Any]:
        # The matcher and the option table are shared, read-only caches (one per domain, one
        # per task): a copy rebuilds them rather than copying them or failing to pickle the
        # option table's mapping proxy. A reader given in place of the matcher travels as
        # ``_reader``.
        state = self.__dict__.copy()
        del state["_matcher"], state["_options"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._matcher = self._reader or matcher_for(self._phrases)
        self._options = option_keys(self.task.truth.options) if self.judges else {}

    def state(self) -> UserState:
        return UserState(
            tuple(self.values.items()),
            self.confirmed,
            tuple(self.pending),
            tuple(sorted(self.told)),
        )

    def restore(self, state: UserState) -> None:
        self.values = dict(state.values)
        self.confirmed = state.confirmed
        self.pending = list(state.pending)
        self.told = set(state.told)

    def change_mind(self, slot: str, value: Value) -> None:
        """Apply a scheduled change; the user mentions it at the next opportunity."""
        self.values[slot] = value
        self.confirmed = None
        self.pending.append(slot)

    def announce(self) -> tuple[str | None, tuple[tuple[str, Value], ...]]:
        """Unprompted words about changes of mind since the user last spoke."""
        if not self.pending:
            return None, ()
        names = list(dict.fromkeys(self.pending))
        self.pending.clear()
        self.told.update(names)
        said = " ".join(self.task.slot(n).say(self.values[n]) for n in names)
        return f"Change of plan: {said}", tuple((n, self.values[n]) for n in names)

    def read(
        self, text: str, proposal: Proposal | None = None, done: bool = False
    ) -> tuple[Reading, ...]:
        """How the user reads ``text``: one reading per clause, with the words that decided
        it. When the message proposes (one option, or several), the sentences naming an
        option are the proposal's and are not read here, and the rest is read as beside a
        request (the proposal), so a statement in it (a recap, a reason) asks nothing; when
        it names options only as context, it proposes nothing, so the whole message is read,
        less the options' ids. Runs of spaces or of one mark are made short first
        (:func:`~stategym.kernel.understanding.spacing.compact`). ``done``: the world holds
        something committed (an offer of more help beside a report then asks nothing)."""
        text = compact(text)
        proposal = proposal or find_proposal(text, self._options, done, self._asks_untold)
        proposes = proposal.option is not None or proposal.several
        if proposes:
            text = " ".join(
                s
                for s in sentences(text)
                if not names_option(s, self._options)
                and not self._asks_the_proposal_s_go_ahead(s, done)
            )
        elif proposal.reported:
            # the report, and the statements naming options beside it, tell what was done;
            # once something is done, an offer of more help asks nothing (audit 19C F6), nor
            # does one glued to the report or a cheer ("Done! AQ449 is booked, anything else
            # I can help with?", read whole, asked travel's seat: audit 22C's nit), nor an open
            # question so glued (:meth:`_closes`)
            text = " ".join(
                s
                for s in sentences(text)
                if not reports(s, done, self._asks_untold)
                and ("?" in s or not names_option(s, self._options))
                and not (done and self._closes(s))
            )
        if proposal.named and not proposes:
            text = without_ids(text, self._options)
        return self._matcher.read(text, beside_request=proposes or proposal.reported)

    def _closes(self, sentence: str) -> bool:
        """Whether ``sentence``, beside a report once something is done, only closes: what it
        asks past the report (:func:`~stategym.kernel.proposals.asked_beside_reports`) offers
        more help, or, joined to the report, is alone just the open question ``respond`` then
        takes as an offer, as with a full stop ("Done! D4T1200 is booked - anything else?":
        read whole, it asked meetings' priority order, R 1.0 -> 0.909; stop 51). A joined
        go-ahead, or a question that alone asks a slot, is read whole, as before ("...,
        shall I send the confirmation?" alone asks bank's account number: audit 27 F1)."""
        asked = asked_beside_reports(sentence)
        if offers_more_help(asked):
            return True
        if asked == sentence or CONFIRMING.match(asked) is not None:
            return False  # not joined, or a go-ahead: read whole, as it was
        intents = {r.intent for r in self._matcher.read(asked, beside_request=True)}
        return intents == {OVERVIEW}

    def _asks_the_proposal_s_go_ahead(self, sentence: str, done: bool) -> bool:
        """Whether ``sentence``, beside a proposal, asks its go-ahead and so is the proposal's:
        in :data:`~stategym.kernel.go_aheads.CONFIRMING`'s words whatever is ``done``, after
        an opening ("So, shall I go ahead?") only before a commit, as a go-ahead after one is
        read (audit 24 F2: after a commit, "I recommend AQ449. Now, sound good?" read
        otherwise than at ded455d)."""
        if done and CONFIRMING.match(sentence) is None:
            return False
        return asks_go_ahead(sentence, asks_slot=self._asks_untold)

    def respond(self, text: str, done: Collection[str] = ()) -> UserTurn:
        """The user's reply to ``text``, told ``done``: the options the world holds committed
        now (:meth:`~stategym.kernel.env.Env.commitments`)."""
        text = compact(text)  # no rule of the reader sees a long run (audit 7a F2, F3)
        proposal = find_proposal(text, self._options, bool(done), self._asks_untold)
        proposal = as_news(proposal, text, done, self._options, self._asks_untold)
        readings = self.read(text, proposal, bool(done))
        intents = {r.intent for r in readings}
        asked = tuple(sorted((i for i in intents if i in self._order), key=self._order.__getitem__))
        priority_asked = PRIORITIES in intents
        if priority_asked and PRIORITIES in self.values and PRIORITIES not in asked:
            asked += (PRIORITIES,)
        proposes = proposal.option is not None or proposal.several
        # beside a report of the act done, once something is done, "Anything else?" offers
        # more help: the work it would ask about is done (stop 45: answered as an open
        # question, it cost 0.149; before any commit it still asks, audit 19C F2)
        courtesy = proposal.reported and bool(done)
        open_asked = bool(intents & ({CHOICE} if courtesy else {CHOICE, OVERVIEW}))
        open_asked = open_asked and not proposes
        parts: list[str] = []
        changed, changed_values = self.announce()
        if changed:
            parts.append(changed)
        self.told.update(asked)  # before judging and ranking: a wish asked with them is named
        accepted = self._judge(proposal, parts)
        if proposal.reported:
            # a report of the act done asks for no verdict: the user takes note of it
            parts.append("Thank you.")
        if priority_asked:
            parts.append(self._priorities())
        parts.extend(self.task.slot(n).say(self.values[n]) for n in asked if n != PRIORITIES)
        if open_asked:
            parts.append(self._what_i_can_tell(CHOICE in intents))
        # what the metric counts as a message the user could use (docs/metrics.md, D1): an
        # option named only as context proposes nothing, and several proposed at once are
        # refused, so neither alone is understood (and the give-up counter counts it); a
        # report of the act done told the user the outcome, so it is understood
        noted = proposal.option is not None or (proposal.reported and not proposal.several)
        understood = bool(asked or priority_asked or open_asked or noted)
        if not understood and not proposal.several:
            parts.append(self._not_understood(readings))
        values = changed_values + tuple((n, self.values[n]) for n in asked)
        return UserTurn(
            asked,
            priority_asked,
            proposal.option,
            accepted,
            understood,
            " ".join(parts),
            values,
            open_asked,
        )

    def _asks_untold(self, sentence: str) -> bool:
        """Whether ``sentence`` asks about a slot the user holds back and the agent has not
        been told, naming it in one of the domain's own phrases for it, and the reader reads
        it as asking that slot: in a go-ahead's words ("May I use your savings account?",
        "Should I avoid converting currency?", which ``CONFIRMING`` matches), such a sentence
        beside a proposal or a report is still a question, and is answered. One about a slot
        told already asks to act on it ("Shall I book it on the refundable fare you asked
        for?"), and one about a slot the user does not care about names the act ("Shall I
        book the seat?"): both stay go-aheads. The reader alone is not enough: it was never
        taught go-aheads, and takes "Shall I delete this volume?" for cloud's priority
        question, "Shall I reserve the flight?" for travel's seat question and "Should I lock
        it in?" for cloud's maintenance window (audit 21A: 510 of about 10,000 generated
        go-aheads cost an honest proposal R when the reader alone decided).

        *Why*: held out, 30 of the 31 slot questions of the blind sets v18 to v25 that have
        a go-ahead's words were answered alone and went unanswered beside a proposal ("I
        recommend CA93STD. May I use your savings account?"), 28 of them bank's; a step
        report before the expert's first bank question ("I've locked the FX rate: your rate
        quote for CA93STD is confirmed.") made the whole message a proposal the user
        approved in round 0, R 0.11 (audit 20C)."""
        untold = {s.name for s in self.task.slots if s.kind is SlotKind.MISSING} - self.told
        words = normalise(sentence)
        present = frozenset(words.split())
        named = {s for s in untold if _holds_phrase(words, present, self._phrases.get(s, ()))}
        if not named:
            return False
        return any(r.intent in named for r in self._matcher.read(sentence, beside_request=True))

    def _judge(self, proposal: Proposal, parts: list[str]) -> bool | None:
        if proposal.several:
            parts.append("Please propose one option, not several.")
            return None
        option = proposal.option
        if option is None:
            return None
        table, best = self._wishes()
        accepted = option in best
        if accepted:
            self.confirmed = option
            parts.append(f"Yes, {option} works for me. Please go ahead.")
        else:
            why = self._objection(option, table)
            parts.append(f"No, {option} does not work for me: {why}")
        return accepted

    def _wishes(self) -> tuple[Mapping[str, frozenset[str]], tuple[str, ...]]:
        """The table a proposal is judged on now, and its best options: the one of the values
        before the scheduled change of mind while the user still holds one of them
        (:attr:`GroundTruth.before_change`), else the final one, with the options events
        take away (:attr:`GroundTruth.withdrawn`) as they were while offered. So a
        rejection follows only from what the user holds when the proposal is made, and an
        option is judged the same before and after an event takes it away."""
        truth = self.task.truth
        if truth.before_change is not None and truth.best_before_change is not None:
            final = final_values(self.task)
            if any(self.values[slot] != value for slot, value in final.items()):
                return truth.before_change, truth.best_before_change
        if not truth.withdrawn:
            return truth.satisfaction, truth.best
        return {**truth.withdrawn, **truth.satisfaction}, truth.best

    def _objection(self, option: str, table: Mapping[str, frozenset[str]]) -> str:
        """Why the user rejects ``option``: the most important constraint it misses, in the
        priority answer's words (:meth:`constraint_words`, which state no value). One on a
        hidden slot the agent has not been told is skipped, as the priority answer skips it
        (:meth:`_untold`: its words can state the value, "a morning departure", and whether
        it exists can be the value); when every constraint the option misses is such a one,
        the user says only that it misses something not told yet, naming no slot. The wish
        follows a copula ("... is leaving my savings untouched"), which reads whatever the
        form of its words, where "I need leaving my savings untouched" did not. ``table``: the
        wishes the proposal is judged on (:meth:`_wishes`)."""
        if option not in table:
            return "it is not one of the options I asked for; ask me what I need."
        by_id = {c.id: c for c in self.task.constraints}
        satisfied = table[option]
        missed = [by_id[c] for c in self.task.priority_order() if c not in satisfied]
        if not missed:
            return "I would prefer another option."
        untold = self._untold()
        wish = next((c for c in missed if c.topic not in untold), None)
        if wish is None:
            return "it misses something I have not told you yet; ask me what I need."
        words = self.constraint_words(wish)
        if words != wish.text:  # named by its slot ("the fare type")
            words = f"what I want for {words}"
        return f"the most important thing it misses is {words}."

    def _describe(self, slot: str) -> str:
        phrases = self._phrases.get(slot)
        return phrases[0] if phrases else slot.replace("_", " ")

    def constraint_words(self, constraint: Constraint) -> str:
        """A constraint in words that state no slot's value: its own words, unless they would
        ("a refundable fare" states the fare type), then the slot it is about."""
        slot = constraint.topic
        if slot in self.values and _states(constraint.text, (self.values[slot], self._given(slot))):
            return self._describe(slot)
        return constraint.text

    def _given(self, slot: str) -> Value:
        return self.task.slot(slot).value

    def _untold(self) -> set[str]:
        """The hidden slots the agent has not been told (asked for, or announced). Neither
        the priority answer nor an objection names a wish about one: its words can state the
        value, and whether it exists at all can depend on the value (bank has a conversion
        wish only when the user wants to avoid conversion)."""
        return {s.name for s in self.task.slots if s.name not in self.told} - {PRIORITIES}

    def _priorities(self) -> str:
        """The order of the constraints on what the agent knows: one about a hidden slot not
        told yet is left out (:meth:`_untold`)."""
        by_id = {c.id: c for c in self.task.constraints}
        untold = self._untold()
        order = [
            self.constraint_words(by_id[c])
            for c in self.task.priority_order()
            if by_id[c].kind != "policy" and by_id[c].topic not in untold
        ]
        if not order:
            return "I have no particular priorities."
        return "If I can't have everything, what matters most is " + ", then ".join(order) + "."

    def _not_understood(self, readings: tuple[Reading, ...]) -> str:
        """What the user says to a message it did not understand: where a clause lay between
        two of its facts, it asks which one ("Do you mean my departure time or my travel
        dates?"), so the agent can say it again more plainly."""
        sorry = "Sorry, I don't understand what you need from me"
        for reading in readings:
            if len(reading.between) == 2 and all(s in self.values for s in reading.between):
                first, second = (self._describe(s) for s in reading.between)
                return f"{sorry}: do you mean {first} or {second}?"
        return sorry + "."

    def _what_i_can_tell(self, choice: bool) -> str:
        facts = [self._describe(s.name) for s in self.task.slots if s.name != PRIORITIES]
        if PRIORITIES in self.values:
            facts.append("which of my wishes matters most")
        if not facts:
            return "I have nothing more to tell you."
        listed = ", ".join(facts[:-1]) + (" and " if len(facts) > 1 else "") + facts[-1]
        tell = f"I can tell you about {listed}; just ask."
        if not choice:
            return tell
        if not self.judges:
            return "Finding that out is what I'm asking you to do. " + tell
        return "That choice is yours: propose one option and I'll say if it works for me. " + tell


def _states(text: str, values: Sequence[Value]) -> bool:
    """Whether ``text`` states one of ``values`` (as a whole word, case aside)."""
    for value in values:
        word = str(value).strip()
        if word and re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE):
            return True
    return False


__all__ = [
    "HIDDEN",
    "PRIORITY_PHRASES",
    "Proposal",
    "SimulatedUser",
    "UserState",
    "UserTurn",
    "normalise",
]
