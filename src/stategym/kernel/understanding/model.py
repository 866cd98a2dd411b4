"""The matcher: a naive Bayes intent model over stems and synonym sets, one per phrase table.

Training (:mod:`~stategym.kernel.understanding.training`): every phrase of the table is an
example of its slot or intent; naive Bayes weights, then mistake-driven corrections.

Reading. A message's typos are corrected (:mod:`~stategym.kernel.understanding.spelling`), and
it is cut into clauses (:func:`~stategym.kernel.understanding.words.clauses`). A sentence that
weighs one wish against another is the priority order (:meth:`Matcher._weighs`), unless
what it compares are two ends of one slot's scale (:meth:`Matcher._within_one_slot`). Otherwise a
clause goes to the intent with the highest total weight of its known features, if that total
reaches :data:`THRESHOLD` and, for a slot, leads every other slot by :data:`TIE` (otherwise
it is not understood: a near tie is ambiguous, not a reading), and a clause that only sets the
scene (:func:`~stategym.kernel.understanding.words.sets_context`) is dropped when another
clause of its sentence asks something; a statement beside a request, and a sentence's
preamble before its request, are dropped too (:func:`_requests_only`); a sentence that opens
by pointing back ("What are its dates?") is read with the sentence before it
(:meth:`Matcher._resolved`). Unknown words weigh
nothing, so a clause is read by the words the model knows. Each reading keeps the features
that weighed most for its intent: that is why the question reached it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .courtesy import acknowledges, asks_go_ahead
from .features import NAME_TOKEN, WORDS, features
from .intents import CHOICE, CHOICE_PATTERN, GENERAL, NOTHING, OVERVIEW, PRIORITIES
from .sentences import introduces, leads_list, needs_details, points_ahead, questions
from .spacing import compact
from .spelling import Speller
from .trades import sides
from .training import lexicon_words, proper_names, train, vocabulary, without_context
from .words import (
    asks,
    bare,
    clauses,
    embedded,
    expand,
    refers_back,
    restates,
    says_any,
    sets_aside,
    sets_context,
    tells_plans,
    tells_status,
    words,
)

THRESHOLD = 2.0
"""The least total weight (in nats) at which a clause counts as asking for an intent."""
TIE = 0.5
"""How far (in nats) the slot a clause reaches must lead the next slot: closer, the clause
is ambiguous between them and not understood, rather than answered with either. On the
leave-one-set-out folds of v3 to v11 (20 averaged passes), 0, 0.5 and 0.75 gave 83, 71 and
68 wrong answers to slot questions and 26, 28 and 29 slots under 90%."""
SLOT_OVER_PRIORITIES = THRESHOLD / 2
"""What a slot must reach to take a clause the priority order's weights read best. The
order is trained on every domain's priority questions, so it learns their domain words
("Would you buy from an unapproved vendor?" teaches it "buy") and, where nothing else
speaks, reads "Buying what?" as a question about it; a slot reached at half the threshold
claims the clause (then under the threshold, not understood: a miss, not a wrong answer).
Not for the two sides of a weighed trade, whose readings decide whether it weighs. Folds
of v3 to v12: 123 wrong answers (75 to slot questions) became 112 (65), at 1.5 and 0.5
115 (67) and 112 (64); priority questions understood 867 -> 863."""
COMPARING = frozenset({"@priority", "@sacrifice"})
"""Features of a sentence that weighs constraints against each other ("which matters more",
"would you give up", "what should I prioritise"). Such a sentence asks for the priority
order, and the slots it names are what it compares, not questions about them."""
UNTIE = 8.0
"""How close (in nats) the two slots a clause reaches best must be for :meth:`Matcher._untied`
to try it as two nouns joined by "or"/"and", each side read alone. Only at a tie (under
:data:`TIE`), a clause that reaches one slot surely and the other less ("Any preferred brand or
colour?" after v14 joined the training data: 10.7 and 10.0) was read as one slot. On the folds
of v3 to v14, 0.5 (ties only), 2, 4, 8, 16 and any distance left 61, 54, 51, 42, 39 and 39
two-slot questions missed, with 118, 118, 118, 118, 120 and 122 wrong answers (from 16, a
one-slot question whose second side names a value of another: "what time of day do you want
to leave, morning or later?")."""
_NOUN_PHRASE = 3
"""The most words after the "or"/"and" of a tied clause that :meth:`Matcher._untied` reads as
a second noun rather than a second clause."""


@dataclass(frozen=True, slots=True)
class Reading:
    """How the matcher read one clause.

    Attributes:
        clause: the clause, lower-cased.
        intent: the slot or intent it asks for; ``None``: nothing understood.
        score: the total weight of the chosen intent (or of the best one, if none was).
        evidence: the features that weighed most for it, heaviest first.
        between: at a tie (:data:`TIE`), the two slots it lies between, surer first.
    """

    clause: str
    intent: str | None
    score: float
    evidence: tuple[str, ...]
    between: tuple[str, ...] = ()


class Matcher:
    """The intent model of one phrase table (slots and the shared intents).

    Args:
        phrases: for each slot, the phrases that name it (the domain's ``slot_phrases``).
        general: the shared intents' training phrases (:data:`.intents.GENERAL`; fewer, to
            measure the model on questions it did not train on).
    """

    def __init__(
        self,
        phrases: Mapping[str, tuple[str, ...]],
        general: Mapping[str, tuple[str, ...]] = GENERAL,
    ) -> None:
        if set(general) != set(GENERAL):
            raise ValueError(f"general must train the shared intents {sorted(GENERAL)}")
        examples = {**{k: tuple(v) for k, v in phrases.items()}, **general}
        self.intents: tuple[str, ...] = tuple(examples)
        self.weights: dict[str, tuple[float, ...]] = train(
            examples, self.intents, set(GENERAL), THRESHOLD
        )
        self._slots = [i for i, k in enumerate(self.intents) if k not in GENERAL]
        self._cache: dict[tuple[str, bool], tuple[Reading, ...]] = {}
        self.speller = Speller(vocabulary(examples), trusted=lexicon_words())

    def read(self, text: str, *, beside_request: bool = False) -> tuple[Reading, ...]:
        """One reading per clause of ``text``; cached, since agents repeat themselves.
        ``beside_request``: ``text`` is what is left of a message whose request was taken out
        (a proposal's sentences), so its statements ask nothing (:func:`_requests_only`)."""
        key = (text, beside_request)
        cached = self._cache.get(key)
        if cached is None:
            if len(self._cache) >= 4096:
                self._cache.clear()
            found = questions(self._spelled(compact(text)))
            read: list[tuple[list[Reading], bool]] = []
            listed = False  # after a request that leads a list, each sentence is an item of it
            for i, (sentence, question) in enumerate(found):
                parts = self._introduced(sentence, question or listed, i < len(found) - 1)
                listed = listed or any(r.evidence == ("list",) for r in parts[0][0][:1])
                read.extend(parts)
            cached = _requests_only(self._resolved(read), beside_request)
            self._cache[key] = cached
        return cached

    def _introduced(
        self, sentence: str, question: bool, followed: bool
    ) -> list[tuple[list[Reading], bool]]:
        """The readings of one sentence (see :meth:`_read_sentence`), its preamble apart: a
        sentence that ends in a colon before others ("I need a few details:", "Questions:")
        introduces them, and so does what comes before the colon of a sentence whose rest
        asks (:func:`~stategym.kernel.understanding.sentences.introduces`: "To find the best
        option for you, I need a few details: what is your budget?", "Two questions: (1) ...")
        when that rest alone reaches something other than the agent's choice, and the part
        before the colon alone reaches no slot: what a colon follows is otherwise what the
        question is about ("Window, aisle or middle: what do you prefer?", "Fees versus
        arrival: which one wins?" read as a whole). A preamble asks nothing, though its words
        ("the best option", "a few details") would read as a question.

        A request that leads a list ("Could you tell me:", "Could you tell me the
        following?", :func:`~stategym.kernel.understanding.sentences.leads_list`) asks what the
        sentences after it name, each a question even as a noun phrase ("Your budget for the
        whole order"); so do the clauses after the colon of a request that reads as nothing
        itself ("Could you tell me: your budget and whether you need a refundable fare?").
        A sentence that only points ahead names nothing, even alone."""
        if (followed and leads_list(sentence)) or points_ahead(sentence):
            if asks(sentence):  # "Could you tell me:", "I need to know the following."
                return [([Reading(sentence.strip(), None, 0.0, ("list",))], True)]
            return [([_preamble(sentence)], False)]
        intro, rest = introduces(sentence)
        if intro and not asks(rest):  # what a request lists ("Could you tell me: your budget")
            said = {r.intent for r in self._read_sentence(intro, False)[0]}
            # not what a question compares ("Which do you care about more: X or Y?")
            intro = intro if said <= {None, CHOICE, OVERVIEW} and not embedded(intro) else ""
        if intro and not features(intro) & COMPARING:
            # after a request ("Could you tell me: your budget, ..."), each clause is asked
            readings, requests = self._read_sentence(rest, question, items=asks(intro))
            if any(r.intent not in (None, CHOICE) for r in readings) and all(
                r.intent is None or r.intent in GENERAL
                for r in self._read_sentence(intro, False)[0]
            ):
                return [([_preamble(intro)], False), (readings, requests)]
        return [self._read_sentence(sentence, question)]

    def _resolved(self, read: list[tuple[list[Reading], bool]]) -> list[tuple[list[Reading], bool]]:
        """``read`` (each sentence's readings, and whether it asks) with a sentence that opens
        by pointing back (:func:`~stategym.kernel.understanding.words.refers_back`) read
        together with the last clause of the sentence before, when that reaches a slot more
        surely than the clause alone: "Does the festival overlap with day 9? What are its
        dates?" asks the event's days (alone, "its dates" reads the travel window), "Your
        company's rules put a ceiling on a ticket. Could you tell me what that ceiling is?"
        the policy cap (alone, the budget), "Is there a cap from your company? How much?" the
        cap. Only across sentences: within one, a clause after "and" asks a question of its
        own ("How many do you need, and where should they go?"). Within one, a clause of
        nothing but question words shares the rest of the next ("How early and how late in
        the calendar could we hold this?" asks the window twice, not the time of day)."""
        out = []
        before: str | None = None
        stated = False  # the sentence before asks nothing
        for readings, requests in read:
            readings = list(readings)
            if readings and before is not None:
                readings[0] = self._pointed(readings[0], before, stated=stated)
            for i in range(len(readings) - 1):
                if bare(readings[i].clause):
                    readings[i] = self._pointed(readings[i], readings[i + 1].clause, ahead=True)
            out.append((readings, requests))
            if readings:
                last = readings[-1]
                scene = last.evidence[:1] == ("context",) or sets_context(last.clause)
                before, stated = (None if scene else last.clause), not requests
        return out

    def _pointed(
        self, reading: Reading, other: str, ahead: bool = False, stated: bool = False
    ) -> Reading:
        """``reading`` read with ``other``, the clause it points back at (``ahead``: the
        clause after it, whose rest it shares), if it points and together they reach a slot
        at least :data:`THRESHOLD` more surely (see :meth:`_resolved`). After a statement
        (``stated``), a clause that reaches a slot alone keeps it unless its own words weigh
        most for the joined reading too ("... a ceiling on a ticket. Could you tell me what
        that ceiling is?"): "Happy to help you book a flight to Toronto. What is your budget
        for this flight?" asks the budget, whatever "to Toronto" weighs."""
        if (
            reading.score == math.inf
            or reading.intent in GENERAL
            or not refers_back(reading.clause)
        ):
            return reading
        text = f"{reading.clause} {other}" if ahead else f"{other} {reading.clause}"
        joined = self.read_clause(text)
        if (
            joined.intent is not None
            and joined.intent not in GENERAL
            and (
                reading.intent is None
                or (
                    joined.score - reading.score >= THRESHOLD
                    and not (stated and features(reading.clause).isdisjoint(joined.evidence))
                )
            )
        ):
            return Reading(reading.clause, joined.intent, joined.score, joined.evidence)
        return reading

    def _spelled(self, text: str) -> str:
        """``text`` expanded, its typos corrected; a name (a capitalised word inside a
        sentence: "the desk from Officio") is never a typo, and reads as :data:`NAME_TOKEN`."""
        named = proper_names(text)

        def spell(match: re.Match[str]) -> str:
            word = match.group(0)
            return NAME_TOKEN if word in named else self.speller.correct(word) or word

        return WORDS.sub(spell, expand(text))

    def _read_sentence(
        self, sentence: str, question: bool, items: bool = False
    ) -> tuple[list[Reading], bool]:
        """The readings of one sentence (``question``: it ends in a question mark), and
        whether it asks (see :func:`_requests_only`); ``items``: the sentence is what a
        request before it lists, each clause asked ("your budget, whether you need a
        refundable fare and ...")."""
        if acknowledges(sentence) or asks_go_ahead(sentence):
            return [_says_nothing(sentence)], question
        parts = [
            side for clause in clauses(sentence, message=True) for side in self._untied(clause)
        ]
        asking = [
            items
            or (
                asks(clause)
                and (question or (i == 0 and not says_any(clause)) or not embedded(clause))
            )
            for i, clause in enumerate(parts)
        ]
        requests = question or any(asking)
        return self._read_parts(sentence, parts, asking), requests

    def _untied(self, clause: str) -> list[str]:
        """``clause`` cut in two where its two best slots lie within :data:`UNTIE` of each
        other, one named on each side of its "or" or "and", joining two nouns ("Any preferred
        brand or colour?" asks both), not two clauses ("Is delivery time important, or can it
        arrive whenever?"); whole otherwise."""
        totals = self._totals(clause)[1]
        best = sorted(self._slots, key=totals.__getitem__)[-2:] if totals else []
        if (
            len(best) < 2
            or totals[best[0]] < THRESHOLD
            or totals[best[1]] - totals[best[0]] >= UNTIE
        ):
            return [clause]
        tied = {self.intents[i] for i in best}
        for joint in (" or ", " and "):
            sides = clause.split(joint, 1)
            if (
                len(sides) == 2
                and len(words(sides[1])) <= _NOUN_PHRASE
                and {self.read_clause(side).intent for side in sides} == tied
            ):
                return sides
        return [clause]

    def _read_parts(self, sentence: str, parts: list[str], asking: list[bool]) -> list[Reading]:
        context = [sets_context(clause) for clause in parts]
        comparing = bool(features(without_context(parts, context, sentence)) & COMPARING)
        if comparing:  # its parts are what it compares: cut only between questions
            parts = clauses(sentence, strict=True)
            context = [sets_context(clause) for clause in parts]
            asking = [asks(clause) for clause in parts]
        if comparing or CHOICE_PATTERN.search(sentence):
            within = self._within_one_slot(sentence)
            if within is not None:
                return [within]
        aside = [sets_aside(clause) for clause in parts]
        if not comparing:  # a trade is weighed between what the sentence does not set aside
            weighing = self._weighs(
                " ".join(c for c, a in zip(parts, aside, strict=True) if not a)
                if any(aside)
                else sentence
            )
            if weighing is not None and (
                "if" in weighing.evidence or not self._owns(weighing.clause)
            ):
                return [weighing]
        out = []
        for clause in parts:
            cues = tuple(sorted(features(clause) & COMPARING))
            if cues and not self._owns(clause):
                out.append(Reading(clause.strip(), PRIORITIES, math.inf, cues))
            elif tells_status(clause):
                out.append(Reading(clause.strip(), None, 0.0, ("status",)))
            elif acknowledges(clause) or asks_go_ahead(clause):
                out.append(_says_nothing(clause))
            elif needs_details(clause):
                out.append(_preamble(clause))
            elif CHOICE_PATTERN.search(clause):
                out.append(Reading(clause.strip(), CHOICE, math.inf, ("which ... should i",)))
            else:
                out.append(self.read_clause(clause))
        if any(context):
            # What a context clause names is the scene of the question beside it, not asked;
            # alone, it is read, unless it tells the agent's own plans or sets a thing aside.
            asked = any(r.intent is not None for r, c in zip(out, context, strict=True) if not c)
            drop = [
                c if asked else a or tells_plans(clause)
                for c, a, clause in zip(context, aside, parts, strict=True)
            ]
            if comparing:  # the comparison is asked outside the context ("Before I go on,
                # what matters most?"): the cut that joined them must not drop it
                drop = [d and r.intent != PRIORITIES for r, d in zip(out, drop, strict=True)]
            out = [
                Reading(r.clause, None, r.score, ("context",)) if d else r
                for r, d in zip(out, drop, strict=True)
            ]
        # What comes before the first request of a sentence, without the form of one, is its
        # preamble ("I want to avoid flights you can't take, so which days could you leave?").
        first = next((i for i, r in enumerate(out) if asking[i] and r.intent is not None), 0)
        out = [_statement(r) if i < first and not asking[i] else r for i, r in enumerate(out)]
        return self._one_question(out, restates(sentence, parts))

    def _owns(self, clause: str) -> bool:
        """Whether ``clause``, though in words of comparing ("wins", "rather ... than"), asks
        a slot: the slot the model reads leads the priority order by :data:`THRESHOLD`.
        Lookup's pick is which end of a comparison wins, so "Which end of the scale wins?"
        asks it, where elsewhere "wins" weighs wishes; "Who is nice-to-have rather than
        required?" names two ends of the optional attendees, not two wishes. (Not for a trade
        offered on a condition, whose sides the model reads as the slots they name.)"""
        reading = self.read_clause(clause)
        if reading.intent is None or reading.intent in GENERAL:
            return False
        order = self._totals(clause)[1][self.intents.index(PRIORITIES)]
        return reading.score - order >= THRESHOLD

    def _one_question(self, out: list[Reading], again: list[bool]) -> list[Reading]:
        """``out`` with a question said twice read once: where a clause restates the one before
        it (:func:`~stategym.kernel.understanding.words.restates`) and the two reach different
        slots, the one the model reads less surely is dropped ("Where are you starting out
        from, what's your point of departure?" asks the origin, not the departure time too)."""
        out = list(out)
        for i in range(1, len(out)):
            pair = (out[i - 1], out[i])
            if again[i] and len({r.intent for r in pair} - {None, *GENERAL}) == 2:
                weaker = i - 1 if pair[0].score < pair[1].score else i
                out[weaker] = Reading(out[weaker].clause, None, out[weaker].score, ("again",))
        return out

    def _weighs(self, sentence: str) -> Reading | None:
        """The priority reading of a sentence that weighs one wish against another, if it does.

        "Would you rather X or Y?" ("worse", "better", "rather X than Y" alike) weighs two
        wishes when X and Y name different slots ("fly a day later or pay more") or one reads
        as weighing already; a choice within one slot ("an early flight or a late one") is a
        question about it. So does "X versus Y, which one?", and a trade offered on a
        condition: "Would you pay a higher fee to make sure it arrives on time?", "Is a late
        payment acceptable if it keeps fees down?" (one slot on each side of the condition,
        not a list of questions joined by "and"). Leave asked to act when a wish fails
        ("Should I break the budget if the only approved vendor is pricier?", "If no option
        meets the grade, should I still buy one?") weighs whatever its sides name.
        """
        found = sides(sentence)
        if found is None:
            return None
        pair, cues = found
        if "leave" in cues:  # acting although a wish fails weighs it, whatever the sides say
            return Reading(sentence.strip(), PRIORITIES, math.inf, cues)
        intents = {self.read_clause(side, side=True).intent for side in pair}
        if len(intents - set(GENERAL) - {None}) == 2 or PRIORITIES in intents:
            return Reading(sentence.strip(), PRIORITIES, math.inf, cues)
        return None

    def _within_one_slot(self, sentence: str) -> Reading | None:
        """The slot a comparison or a choice asks about when its two sides are ends of one
        slot's scale ("Which one wins, the highest or the lowest value?", "Should I pick the
        top one or the bottom one?"): read without its words of comparing, both sides reach
        that slot or nothing, and the whole sentence reaches it."""
        if " or " not in sentence or "@extreme" not in features(sentence):
            return None
        whole = self.read_clause(sentence, ignore=COMPARING)
        sides = {
            self.read_clause(side, ignore=COMPARING).intent for side in sentence.split(" or ", 1)
        }
        if whole.intent is None or whole.intent in GENERAL or sides - {None} != {whole.intent}:
            return None
        return whole

    def _totals(
        self, clause: str, ignore: frozenset[str] = frozenset()
    ) -> tuple[list[str], list[float]]:
        """The features of ``clause`` the model knows, and each intent's total weight."""
        known = sorted(f for f in features(clause) - ignore if f in self.weights)  # one sum order
        columns = zip(*(self.weights[f] for f in known), strict=True)
        return known, [sum(column) for column in columns] if known else []

    def read_clause(
        self, clause: str, ignore: frozenset[str] = frozenset(), side: bool = False
    ) -> Reading:
        """The reading of one clause (already expanded), its ``ignore`` features unread;
        ``side``: one side of a weighed trade (see :data:`SLOT_OVER_PRIORITIES`)."""
        known, totals = self._totals(clause, ignore)
        if not known:
            return Reading(clause.strip(), None, 0.0, ())
        best = max(range(len(totals)), key=totals.__getitem__)
        if self.intents[best] in (CHOICE, PRIORITIES):
            # A clause that names a slot well enough asks about it, even in words the choice
            # and the priority order also use ("What shade should I pick?" asks for the
            # colour). Asking for everything, or saying nothing, wins on its own words
            # ("Anything else I should know?", "I'm working on it.").
            top = max(self._slots, key=totals.__getitem__, default=best)
            over_order = self.intents[best] == PRIORITIES and not side
            if totals[top] >= (SLOT_OVER_PRIORITIES if over_order else THRESHOLD):
                best = top
        weighed = sorted((-self.weights[f][best], f) for f in known)
        evidence = tuple(f for w, f in weighed[:3] if w < 0)
        intent = self.intents[best]
        if totals[best] < THRESHOLD or intent == NOTHING:
            return Reading(clause.strip(), None, totals[best], evidence)
        if best in self._slots:
            others = (i for i in self._slots if i != best)
            runner_up = max(others, key=totals.__getitem__, default=best)
            if runner_up != best and totals[best] - totals[runner_up] < TIE:
                # "What are we comparing?": the subject or the other one
                between = (intent, self.intents[runner_up])
                return Reading(clause.strip(), None, totals[best], ("tie", *evidence), between)
        return Reading(clause.strip(), intent, totals[best], evidence)


def _statement(reading: Reading) -> Reading:
    return Reading(reading.clause, None, reading.score, ("statement",))


def _preamble(text: str) -> Reading:
    return Reading(text.strip(), None, 0.0, ("preamble",))


def _says_nothing(text: str) -> Reading:
    """An acknowledgement or a go-ahead question, which names nothing of the user's
    (:func:`~stategym.kernel.understanding.courtesy.acknowledges`,
    :func:`~stategym.kernel.understanding.courtesy.asks_go_ahead`)."""
    return Reading(text.strip(), None, 0.0, ("nothing",))


def _requests_only(
    read: list[tuple[list[Reading], bool]], beside_request: bool = False
) -> tuple[Reading, ...]:
    """The readings of a message's sentences (each with whether it asks), those of its
    statements dropped when it has a request, or is read beside one (``beside_request``: a
    proposal, taken out of the text, is a request too: "I found AQ449. It fits your budget.
    Shall I book it?" asks nothing of the budget).

    A sentence asks if it ends in a question mark or has a clause in the form of a request
    (:func:`~stategym.kernel.understanding.words.asks`). Beside a request, a statement is what
    the agent says of itself or of the task ("I'd be happy to book this for you. Which airport
    are you leaving from?", "Suppose the only refundable fares leave in the morning. What
    should I prioritise?", "Budget noted. What grade is needed?"): it asks nothing, even when
    the request beside it reaches nothing the user could answer (then the message is not
    understood, rather than answered with what the statement names). Alone ("Your departure
    airport is needed to search."), it is read.
    """
    requested = beside_request or any(requests for _, requests in read)
    return tuple(
        r if requests or not requested or r.intent is None else _statement(r)
        for rs, requests in read
        for r in rs
    )


_MATCHERS: dict[int, tuple[Mapping[str, tuple[str, ...]], Matcher]] = {}


def matcher_for(phrases: Mapping[str, tuple[str, ...]]) -> Matcher:
    """The matcher of a phrase table, trained once per table object (a domain's table is one
    object for all its episodes, so a reset costs a dictionary lookup)."""
    entry = _MATCHERS.get(id(phrases))
    if entry is None or entry[0] is not phrases:
        entry = (phrases, Matcher(phrases))
        _MATCHERS[id(phrases)] = entry
    return entry[1]
