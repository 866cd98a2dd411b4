"""What a message can ask besides a slot, in the phrases every domain shares.

Each table trains one intent of the matcher next to the domain's slots: asking for the
priority order, asking the user to make the agent's choice, asking for everything at once,
and saying nothing the user could answer (so that thanks and status updates have somewhere to
go other than a slot).
"""

from __future__ import annotations

import json
import re
from importlib import resources

PRIORITIES = "priorities"
"""The intent (and slot name) of asking which constraint wins when not all can be met."""
CHOICE = "?choice"
"""Asking the user to pick the option: the agent's decision, which the user leaves to it."""
OVERVIEW = "?overview"
"""Asking for every constraint or fact at once, rather than for one."""
NOTHING = "?nothing"
"""No question the user could answer: greetings, thanks, status updates."""

PRIORITY_PHRASES: tuple[str, ...] = (
    "what matters most",
    "what is most important",
    "which is more important",
    "which matters more",
    "what comes first",
    "what should i prioritize",
    "rank your preferences",
    "how would you rank them",
    "what is your priority",
    "if you cannot have everything",
    "if i cannot satisfy every wish",
    "if not everything is possible",
    "would you rather",
    "which would you trade away",
    "what is the trade off",
    "would you accept a compromise",
    "where can you compromise",
    "which wish can i drop",
    "what would you give up",
    "what can you live without if you must choose",
    "what should win in a conflict",
    "which preference wins",
    "what is non negotiable",
    "what is least important",
    "which preference should i favor",
    "what should i sacrifice",
    "which constraint is more important",
    "prioritize",
    "priority order",
)
CHOICE_PHRASES: tuple[str, ...] = (
    "which option should i choose",
    "which one should i pick",
    "which should i book",
    "which should i select",
    "what do you recommend",
    "which is best",
    "what is the best option",
    "can you choose for me",
    "can you pick one for me",
    "you decide",
    "which would you pick",
    "what should i pick",
    "pick the option for me",
    "should i book one",
    "which to go with",
    "just give me the answer",
)
OVERVIEW_PHRASES: tuple[str, ...] = (
    "what are your requirements",
    "list all your requirements",
    "tell me everything",
    "anything else",
    "what else",
    "what are all your preferences and constraints",
    "give me all the details",
    "what are your needs",
    "tell me what to do",
    "what should i do next",
    "anything else you can tell me",
    "what else should i know",
    "what is the next step",
    "what next",
    "how should i proceed",
    "how do you want me to handle this",
    "how should i approach this",
    "where do we go from here",
    "what would you do in my place",
)
NOTHING_PHRASES: tuple[str, ...] = (
    "hello",
    "hi there",
    "thanks",
    "thank you",
    "one moment",
    "please hold on",
    "please wait",
    "let me check",
    "i am working on it",
    "i will search now",
    "i am looking into it",
    "got it",
    "sure",
    "okay",
    "great",
    "understood",
    "here is what i found",
    "i will take care of it",
    "shall i go ahead",
    "shall i book it",
    "shall i place the order",
    "shall i send the invitation",
    "i mean",
    "by the way",
    "just to be clear",
    "quick question",
    "one more thing",
    "is that correct",
    "is that right",
    "correct",
    "right",
    "is not it",
    "is it not",
    "are not you",
    "do not you",
)
"""Messages with nothing to answer. The last few are how a proposal ends: once its option id
is taken out, what is left asks for a yes or no, not for a fact."""

_OPTIONS = (
    r"(?:one|option|flight|fare|offer|volume|slot|route|product|time|account|listing|package|plan|"
    r"lot|unit|quote|bundle|room|desk|airline|source)"
)
"""What the agent chooses among, by the words domains use for their options."""
_DECIDING = (
    r"(?:book|pick|choose|select|buy|delete|remove|take|go with|pay from|use|order|get|"
    r"reserve|add)\b"
)
CHOICE_PATTERN = re.compile(
    rf"\b(?:which|what)\s+(?:[a-z]+\s+)?{_OPTIONS}s?\s+(?:should|shall|do|would|must)\s+(?:i|we)\s+"
    rf"{_DECIDING}"
    rf"|\bwhich\s+(?:[a-z]+\s+)?(?:{_OPTIONS[3:-1]}|desk|airline|source|disk|deal|ticket)s?\s+"
    rf"(?:would you like|do you want)\s+(?:me|us)\s+to\s+{_DECIDING}"
    r"|\bwhich\s+of\s+(?:these|those|them|the\s+[a-z]+)\s+(?:[a-z]+\s+)?"
    r"(?:should\s+(?:i|we)|do\s+you|would\s+you)\b"
    r"|\bwhich\s+one\s+(?:do|would)\s+you\s+(?:want|prefer|like|choose|pick|take)\b"
    r"|^\s*which\s+(?:one\s+)?(?:do|would)\s+you\s+(?:want|prefer|like|choose|pick|take)\s*$"
    r"|^\s*which\s+(?:one\s+)?(?:should|shall)\s+(?:i|we)\s+(?:go\s+with|take|pick|choose|book)\s*$"
    r"|\bwhich\s+one\s*$"
    rf"|\b(?:should|shall)\s+(?:i|we)\s+{_DECIDING}\s+the\s+[^?]*\bor\s+the\s+(?:[a-z-]+\s+){{0,2}}one\b"
)
""""Which <option> should I <choose>?" ("Which time slot should I book?"), "Which of these do
you prefer?", "Which one do you want?", "Should I order the cheaper one or the eco-certified
one?": the agent's decision handed to the user. Read as a choice even when a slot's words are
in it ("Which slot should I book?" asks no duration)."""


def _labelled() -> dict[str, tuple[str, ...]]:
    """The labelled questions of ``questions.json``: whole questions of earlier held-out sets,
    by intent, so the model also learns how people and LLM agents really word them."""
    text = resources.files(__package__).joinpath("questions.json").read_text(encoding="utf-8")
    return {k: tuple(v) for k, v in json.loads(text)["intents"].items()}


_LABELLED = _labelled()
GENERAL: dict[str, tuple[str, ...]] = {
    PRIORITIES: PRIORITY_PHRASES + _LABELLED.get(PRIORITIES, ()),
    CHOICE: CHOICE_PHRASES + _LABELLED.get(CHOICE, ()),
    OVERVIEW: OVERVIEW_PHRASES + _LABELLED.get(OVERVIEW, ()),
    NOTHING: NOTHING_PHRASES + _LABELLED.get(NOTHING, ()),
}
"""Every intent that is not a slot, with its training phrases and labelled questions."""
