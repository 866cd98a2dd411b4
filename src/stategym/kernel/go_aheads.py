"""Whether a sentence asks the go-ahead for a proposal ("Shall I book it?", "Do I have your
approval?", "Sound good?"): beside a proposal such a sentence is the proposal's, not a
question about a slot, unless it names one the user holds back (:func:`asks_go_ahead`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stategym.kernel.understanding.courtesy import GO_AHEAD_REQUEST, offers_more_help
from stategym.kernel.understanding.words import OPENING_WORDS


def asks_nothing(sentence: str) -> bool:
    """No sentence asks about a slot: the default ``asks_slot`` of :func:`asks_go_ahead` and of
    :func:`~stategym.kernel.proposals.find_proposal` and
    :func:`~stategym.kernel.proposals.reports`, for a reader that knows no slots."""
    return False


def asks_go_ahead(
    sentence: str, done: bool = False, asks_slot: Callable[[str], bool] = asks_nothing
) -> bool:
    """Whether ``sentence`` asks the go-ahead (:data:`CONFIRMING`), once something is
    ``done`` is no offer of more help (``courtesy.offers_more_help``: after a commit, "Let me
    know if you have any questions." and "Can I help you with anything else today?" offer
    help, audit 19C F6; before it, "Any questions?" asks for objections, 19D F1), and asks
    about no slot by the reader's ``asks_slot`` ("May I use your savings account?" and
    "Should I avoid converting currency?" have a go-ahead's words and ask a slot)."""
    if CONFIRMING.match(sentence) is None:
        return not done and _led_in(sentence, asks_slot)
    if done and offers_more_help(sentence):
        return False
    if not asks_slot(sentence):  # the common case, and the cheap one: no slot named
        return True
    # a sentence that is only a go-ahead, or that ends on the proposal, or offers help, asks
    # of the proposal whatever a reader makes of its words ("Are you happy with this
    # option?", "Shall I delete it?", "Can I help with anything else before I book it?");
    # one opening "Should I ..." may ask anything else ("May I use your savings account?")
    of_the_proposal = _ONLY_GO_AHEAD.match(sentence) or _ENDS_ON_IT.search(sentence)
    return of_the_proposal is not None or offers_more_help(sentence)


def _led_in(sentence: str, asks_slot: Callable[[str], bool]) -> bool:
    """Whether ``sentence`` is a go-ahead after an opening (:data:`_LED_IN`: "So, shall I go
    ahead?", "1. Shall I book it?"); one naming its act's object (:data:`_OBJECT`: "So, shall
    I book the flight?") only where the reader finds no slot asked in it either. Without an
    opening nothing is read here: a sentence :data:`CONFIRMING` does not match stays what it
    was ("It is $560. Would that be OK?" asks the budget: audit 25 F1)."""
    found = _LED_IN.match(sentence)
    if found is None:
        return False
    opening, go_ahead = sentence[: found.start("go_ahead")], sentence[found.start("go_ahead") :]
    names_an_object = found["object"] is not None or found["object_of"] is not None
    return bool(opening.strip(" \t\n*_")) and (not names_an_object or not asks_slot(go_ahead))


_IT = (
    r"(?:(?:it|this|that)(?: (?:one|option|choice|plan|proposal|booking|order|reservation))?"
    r"|the (?:option|choice|plan|proposal|booking|order|reservation))"
)
"""The proposal, as a go-ahead names it: a pronoun or a word for a proposal, never a slot
("Can you confirm this?" asks the go-ahead, "Can you confirm your budget?" the budget)."""
_GO_AHEAD = "|".join(
    (
        r"(?:do|can|may) i (?:have|get) your (?:approval|go[- ]ahead|permission|consent|ok|okay"
        r"|blessing|confirmation|agreement)",
        rf"(?:(?:please|can you|could you|would you|will you) )*(?:confirm|approve|authori[sz]e)"
        rf"(?: {_IT})?(?:,? (?:and|so) (?:i|we)(?:'ll|’ll| will| can) \w+(?: {_IT})?)?",
        rf"(?:(?:please )?(?:let me know|tell me) if )?(?:(?:does|will|would|can) )?{_IT} works?"
        r"(?: for you| with you)?",
        rf"(?:(?:does|do|would) {_IT} )?(?:sounds?|looks?|seems?) (?:good|ok|okay|fine|right"
        r"|alright|all right|great)(?: to you)?",
        rf"how does {_IT} (?:sound|look)(?: to you)?",
        rf"(?:are|would) you (?:be )?(?:ok|okay|happy|fine|comfortable|good|alright) with {_IT}",
        rf"(?:is|would) {_IT} (?:be )?(?:acceptable|agreeable|all right|suitable)"
        r"(?: to you| for you| with you)?",
        r"(?:ok|okay|good|ready|happy) to (?:go ahead|proceed|go)",
        r"any objections?",
        r"ok|okay|approved?|agreed?|deal|confirm",
        GO_AHEAD_REQUEST,
    )
)
"""A go-ahead the whole sentence is ("Do I have your approval?", "Please confirm and I'll
complete it.", "Does this work for you?", "Sound good?", or a request for the go-ahead or an
objection, :data:`~stategym.kernel.understanding.courtesy.GO_AHEAD_REQUEST`: "Just say the
word.", "Any concerns before I book it?"): it names no slot, only the proposal (:data:`_IT`),
so "Can you confirm your budget?" is no go-ahead."""
_ENDS = r"[\s*_]*+[?.!]*[\s*_]*$"
"""The end of a sentence, its marks and markup (the first run possessive: two runs of the same
characters either side of optional marks made a long run before a last word quadratic,
audit 24 F3)."""
_ONLY_GO_AHEAD = re.compile(rf"[\s*_]*(?:{_GO_AHEAD}){_ENDS}", re.IGNORECASE)
"""A sentence that is a go-ahead and nothing more (:data:`_GO_AHEAD`)."""
_ENDS_ON_IT = re.compile(
    rf"\b{_IT}(?: for you| now| then| today| right away)?{_ENDS}", re.IGNORECASE
)
"""A sentence ending on the proposal ("Shall I delete it?", "... before I book it?")."""
_LEAD_IN = (
    rf"(?:{OPENING_WORDS}|sure|good|right|all right|with that|in that case|next step"
    r"|please confirm|if so|if you agree"
    r"|if you(?:'d|\u2019d| would) like|if everything looks (?:good|ok|okay|fine|right)"
    r"|if (?:that|this|it) (?:works|sounds good|looks good)(?: for you| to you)?"
    r"|if (?:that|this|it)(?:'s|\u2019s| is) (?:ok|okay|fine|alright|all right)"
    r"(?: with you| for you)?"
    r"|if you(?: are| re|'re|\u2019re)? (?:happy|ok|okay|fine)(?: with (?:it|this|that))?)"
)
"""Words that may open a go-ahead without changing what it asks: the openings the question
reader skips (:data:`~stategym.kernel.understanding.words.OPENING_WORDS`: "So, shall I go
ahead?", "Also, shall I book it?", "OK so shall I pay?") and a few of a go-ahead's own ("If
you agree, shall I pay?", "Sure - shall I book it?", "Please confirm: shall I go ahead?")."""
_MOST_LEAD_INS = 3
"""How many lead-ins may open one go-ahead ("OK then, so, shall I go ahead?": "ok then" is
two): a bound, as the go-ahead is tried again after each of them, and an unbounded run was
quadratic ("so, " 8,000 times took 38 s to match, 0.04 s with the bound)."""
_ACT = (
    r"(?:book|buy|pay|place|send|delete|order|purchase|reserve|submit|confirm|finali[sz]e"
    r"|complete|do|make|process|transfer|issue)"
)
"""The acts a go-ahead after an opening may name: the domains' commits, never a word that
carries a slot's meaning ("So, should I convert it?" asks about conversion, "So, can I rush
the order?" about the deadline, "So, should I extend it?" about the length: audit 23 F1;
"schedule" may ask a time, a window or a deadline: audit 24; "lock it in" and "set it up"
may ask about a step, the bank's rate lock or a meeting's set-up)."""
_OBJECT = (
    r"(?:flight|ticket|invoice|bill|payment|transfer|purchase|invitation|invite|meeting|volume"
    r"|order|booking|reservation)"
)
"""What the domains' acts are done on, as a go-ahead names it after "the" or "your" ("So,
shall I book the flight?", "So, shall I delete the volume?", "So, may I place your order?"):
never a word that may name a slot's value ("So, should I order the express?", "So, can I
book the refundable?", "So, should I delete the largest?" ask about the deadline, the fare
type, the size: audit 24 F1; "Can I confirm the fare?" and "Should I schedule the deletion?"
may ask the fare type and the window), and never an option's name ("So, shall I book the AQ
flight?": which option it names is the proposal reader's to say)."""
_WHEN = r"(?:,? (?:for you|now|then|today|right away)){0,2}"
"""When and for whom, after a go-ahead's act ("... book it now for you?", "... go ahead,
then?")."""
_DO = (
    rf"(?:(?:go ahead|proceed|continue)(?: with (?:{_IT}|(?:the|your) (?P<object_of>{_OBJECT})))?"
    rf"|go for it|(?:go ahead and )?{_ACT}(?: {_IT}| (?:the|your) (?P<object>{_OBJECT}))?"
    rf"(?: with {_IT})?){_WHEN}"
)
"""What a go-ahead after an opening asks to do: go ahead, or the act, on the proposal or on
its object (:func:`_led_in` asks the reader about the latter too)."""
_LED_IN = re.compile(
    r"[\s*_\-\u2013\u2014\u2022>]*+(?:(?:\d{1,2}[.)]|\(\d{1,2}\))[\s*_]+)?"
    rf"(?:(?:{_LEAD_IN})\b[\s,:*_\-\u2013\u2014]*+){{0,{_MOST_LEAD_INS}}}"
    r"(?P<go_ahead>(?:(?:shall|should|can|may|could) (?:i|we)"
    rf"|(?:(?:do|would) you (?:like|want) me to|want me to)) {_DO}"
    r"|(?:shall|should) we"
    r"|is (?:that|this|it) (?:ok|okay|fine|alright|all right|acceptable|good)"
    r"(?: with you| for you| to you)?"
    rf"|{_GO_AHEAD}){_ENDS}",
    re.IGNORECASE,
)
"""A go-ahead after a list item's bullet or number, a dash, a quote's ">" or lead-ins
(:data:`_LEAD_IN`), that names nothing but the proposal and its act: "Shall I go ahead?",
"Should we proceed with it?", "Shall I book it now for you?", "Would you like me to
proceed?", "Shall we?", "Is that OK?", or a sentence that is only a go-ahead
(:data:`_GO_AHEAD`). *Why*: after a step report, "So, shall I go ahead?", "1. Shall I go
ahead?", "- Shall I book it?" and "If you agree, shall I go ahead?" asked no go-ahead, so the
message stayed a report, the user gave no verdict and the commit that followed was
unapproved (audit 22A F4: 0 of 15 tasks). Only such a go-ahead, and only before a commit
(:func:`asks_go_ahead`): with any other question after the opening ("So, should I book a
refundable fare?", "Now, can I help with anything else?") the sentence is read as it was,
since a lead-in before every "Should I ...?" made slot questions the reader takes for
go-aheads approvals in round 0, and offers of help after a commit proposals (audit 22B H2,
M2); after a commit a closing ("So, does that look good?") is read as it was too (audit 23
F2). A statement of intent ("If you agree, I'll go ahead.") asks nothing here, nor does a
shape :data:`CONFIRMING` does not read bare ("So, are you ready for me to go ahead?": an
opening never makes a go-ahead of what is none without it, audit 26 L2). The separators
after a lead-in are possessive (none of what follows opens on one): a long run of them
after "So" was read again from each of its characters (audit 26 L4)."""
CONFIRMING = re.compile(
    r"[\s*_]*(?:(?:shall|should|can|may|could) (?:i|we)\b|(?:(?:do|would) you )?want me to\b"
    r"|(?:do|would) you like me to\b"
    r"|(?:is that|is it|is this) (?:ok|okay|fine|alright|all right|acceptable|good)\b"
    rf"|(?:{_GO_AHEAD}){_ENDS})",
    re.IGNORECASE,
)
"""How a proposal asks for the go-ahead ("Shall I place the order?", "Want me to lock it
in?", "Is this acceptable?", or a sentence that is only a go-ahead, :data:`_GO_AHEAD`):
beside a named option, such a sentence is the proposal's, not a question about a slot,
unless the reader finds it asks one (:func:`asks_go_ahead`: "May I use your savings
account?")."""


__all__ = ["CONFIRMING", "asks_go_ahead", "asks_nothing"]
