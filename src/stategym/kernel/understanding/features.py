"""The features of one clause: what the matcher (:mod:`.model`) weighs, in training and in
reading alike.

A clause's words become stems, function words drop out (leaving a gap, so only neighbours
bind), and each stem brings the synonym sets it belongs to (:data:`CONCEPTS`). A particle
binds to the word before it (``fly+to``), "which" to the noun after it (``which+company``),
a preposition to the "which" or "what" after it (``from+which``), and a "what" that is a
verb's object to the clause's words (``what+buy``, :func:`_what_object`). A name is a value,
read as :data:`NAME_TOKEN` (:func:`names` finds them before the text is lower-cased).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from .lexicon import KEPT, QUESTION_WORDS, STOP, SYNONYMS
from .words import stem, words

_PARTICLES = frozenset({"from", "to", "by", "with", "into"})
_BOUND_ONLY = frozenset({"from", "to", "with", "into"})
"""Particles that mean nothing alone ("want to do"), only bound to a word ("fly to")."""
_PRONOUNS = frozenset({"it", "them", "him", "her", "me", "you", "us"})
"""Words skipped without breaking a binding ("send it to", "compare them by")."""
_ASKED_NOUN = "^which"
"""Left by "which" in a clause's tokens: the next word is the noun asked about ("which
company", "which property"), a feature of its own beside the word. ("what" is not: bound
across "what is your ...", it made open questions read as slots on the held-out sets.)"""
_WHAT = "^what"
"""Left by "what": a function word, except after a preposition, which it binds like
"which" ("from which airport", "by what date": the pair ``from+which`` tells the origin
from the destination where the noun does not). Folds of v3 to v12: 124 wrong answers (76
to slot questions) and 29 slots under 90% became 123 (75) and 28."""
_AUXILIARIES = frozenset(
    {"do", "does", "did", "should", "shall", "can", "could", "would", "will", "am", "is", "are"}
)
_SUBJECTS = frozenset({"i", "you", "we", "they", "it"})
_HEDGES = frozenset({"exactly", "precisely", "else", "again"})
"""Words skipped in finding what a "what" is the object of ("what exactly am I buying")."""
_PREPOSITIONS = frozenset({"on", "at", "in", "for", "from", "with", "of", "by", "about"})
"""Where the phrase of a verb whose object is "what" ends ("what are you willing to pay on
top": ``what+pay``, not ``what+top``, which "what does it say at the top" teaches the
invoice)."""
_ASKERS = frozenset({"@where"})
"""Question words a trailing particle binds to: "where ... from" asks for an origin."""
WORDS = re.compile(r"[a-z0-9]+")
"""A word of a message, lower-cased (what the speller and the names replace)."""
_NAME = re.compile(r"(?<=[a-z0-9,;:)] )[A-Z][a-z]+\b")
"""A capitalised word after a lower-case one: a name, not a typo."""
_NAME_PAIR = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")
"""Two capitalised words in a row, even opening a sentence ("Sam Ortiz is optional?"): a name."""
NAME_TOKEN = "propername"
"""What a name reads as, in training and in a message alike. A name is a value, made up
afresh in every question ("Ana Ruiz can be optional, right?"); read as itself it taught the
slot of whichever question had used it last ("Sam" -> the time zone). Folds of v3 to v12:
129 wrong answers (83 to slot questions) and 33 slots under 90% became 124 (76) and 29."""
_LONGEST = max(len(k) for k in QUESTION_WORDS)
_FIRSTS = frozenset(k[0] for k in QUESTION_WORDS)


def _concepts() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for concept, members in SYNONYMS.items():
        for word in members.split():
            key = word if word.startswith("@") else stem(word)
            if concept not in out.setdefault(key, []):
                out[key].append(concept)
    return {k: tuple(v) for k, v in out.items()}


CONCEPTS: Mapping[str, tuple[str, ...]] = _concepts()
"""Stem -> the synonym sets it belongs to."""


_STOP_STEMS = frozenset(stem(w) for w in STOP)


def _tokens(text: str) -> list[str]:
    """Stems and kept function words of one clause, multiword question words merged; a
    function word leaves ``""`` in its place, so only neighbours bind (``fly to``)."""
    raw = words(text)
    out: list[str] = []
    i = 0
    while i < len(raw):
        for n in range(_LONGEST, 1, -1) if raw[i] in _FIRSTS else ():
            merged = QUESTION_WORDS.get(tuple(raw[i : i + n]))
            if merged is not None:
                out.append(merged if merged.startswith("@") else stem(merged))
                i += n
                break
        else:
            word = raw[i]
            i += 1
            if word in KEPT:
                out.append(KEPT[word])
            elif word in _PRONOUNS:
                continue
            elif word == "which":
                out.append(_ASKED_NOUN)
            elif word == "what":
                out.append(_WHAT)
            elif word in STOP or stem(word) in _STOP_STEMS:
                out.append("")
            else:
                out.append(stem(word))
    return out


def _what_object(raw: list[str]) -> list[str]:
    """The stems of a clause whose object "what" is: "what do you want me to buy", "what
    exactly am I buying", "tell me what you'd like me to buy", "buying what" (each gives
    ``what+buy``). A "what" before a noun ("what budget") or before a copula and its
    complement ("what is the item") is no object."""
    raw = [w for w in raw if w not in _HEDGES]
    if len(raw) > 1 and raw[-1] == "what":  # "buying what"
        rest = raw[:-1]
    elif "what" in raw:
        at = raw.index("what") + 1
        if at < len(raw) and raw[at] in _AUXILIARIES:  # "what should I", "what are we"
            at += 1
        if at == len(raw) or raw[at] not in _SUBJECTS:
            return []
        rest = raw[at + 1 :]
    else:
        return []
    end = next((i for i, w in enumerate(rest) if w in _PREPOSITIONS), len(rest))
    return [
        stem(w)
        for w in rest[:end]  # the verb's phrase: "pay", not "pay on top"
        if w not in STOP and w not in _PRONOUNS and w not in KEPT and stem(w) not in _STOP_STEMS
    ]


@functools.lru_cache(maxsize=8192)
def features(text: str) -> frozenset[str]:
    """The features of one clause of expanded text (see the module docstring)."""
    found = {f"what+{s}" for s in _what_object(words(text))}
    previous: tuple[str, ...] = ()
    tokens = _tokens(text)
    asker = next((t for t in tokens if t in _ASKERS), None)
    determined = False
    particle = ""
    for token in tokens:
        if token in (_ASKED_NOUN, _WHAT) and particle:
            found.add(f"{particle}+which")  # "from which airport", "by what date"
        particle = token if token in _PARTICLES else ""
        if token == _WHAT:
            token = ""
        if token == _ASKED_NOUN:
            determined, previous = True, ()
            continue
        if determined and token and token not in _PARTICLES:
            found.add(f"which+{token}")  # "which company": the thing asked for
        determined = determined and not token
        if not token:
            previous = ()
            continue
        if token in _PARTICLES:
            if token not in _BOUND_ONLY:
                found.add(token)
            found.update(f"{p}+{token}" for p in previous)
            if asker is not None:  # "where ... from", "from where": the origin
                found.add(f"{asker}+{token}")
            continue
        found.add(token)
        found.update(CONCEPTS.get(token, ()))
        previous = (token, *CONCEPTS.get(token, ()))
    return frozenset(found)


def names(text: str) -> set[str]:
    """The names in ``text``, lower-cased (see :data:`NAME_TOKEN`)."""
    found = {n.lower() for n in _NAME.findall(text)}
    for pair in _NAME_PAIR.findall(text):
        found.update(pair.lower().split())
    return found
