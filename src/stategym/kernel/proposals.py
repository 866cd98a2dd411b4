"""What a message proposes: the one option it names as its choice, if any.

A proposal is the one option a message names outside alternative context: an option named in
a clause with words such as "also", "instead", "besides", "rather than", "runner-up" or
"backup", or on either side of "versus", is context ("I propose AQ123; I also looked at
AQ348" proposes AQ123). Where that leaves several, the message proposes the one it commits
to (:func:`_committed`): a sentence opening with an aside word ("Alternatively, there's
AQ348.") and the option nearest a rejection ("I ruled out AQ348", "AQ348 doesn't meet all
your needs") are context too, and of what is left the one a sentence, line or table row
names alone with a choosing word ("I recommend", "(recommended)", "my pick") is the choice,
else the only one. Options both named as the choice ("AQ123 or AQ348?", "Should I book
AQ123 or AQ348?", two neutral sentences each naming one) are refused: the choice is the
agent's, so no verdict goes to a message that commits to none. An id is recognised written
with a hyphen between its letter and digit parts ("AQ-449"), or a space there in its own
case ("AQ 449"). A message that names options only as context proposes nothing, and the
rest of it is read like any other message; beside a proposal, a sentence that only asks
for the go-ahead ("Shall I book it?", "Do I have your approval?", "Sound good?", "Just say
the word.", "Any concerns before I book it?") is the proposal's, not a question about a slot.
A message that reports the act done ("Done! Your booking AQ449 is confirmed.") and asks no
go-ahead proposes nothing: what it reports is context (:func:`reports`). What asks the
go-ahead is :mod:`stategym.kernel.go_aheads`'s; which options a report claims done is
:mod:`stategym.kernel.claims`'s.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from stategym.kernel.go_aheads import asks_go_ahead, asks_nothing
from stategym.kernel.understanding.words import asks

_WORD = re.compile(r"[a-z0-9]+")
_PIECE = re.compile(r"[.?!;,()\n]+|\s+but\s+|\s+-\s+")
_ASIDE_WORDS = (
    "also alternatively alternative alternatives instead other another runner backup fallback "
    "second than over versus vs compared unlike besides except not nor considered rejected looked"
)
_COMPARING_WORDS = "versus vs"
"""Words that set two options side by side: a clause holding one chooses neither."""
_OPENING_WORDS = (
    "also alternatively alternative another other otherwise besides backup fallback second "
    "secondly not nor unlike except"
)
"""Words that, opening a sentence, make every option it names context ("Alternatively,
there's AQ348."). Not "instead": it opens the choice that replaces a refused one."""
_REJECTING = re.compile(
    r"\b(?:not|never|cannot|no longer|\w+n t)(?: \w+){0,2}? (?:meet|fit|work|suit|satisf|match"
    r"|qualif|compl|cover|recommend|pick|choos|chose|select|go|book|within|eligible|available"
    r"|allow|permit|suitable|as good|a good|the best|ideal)\w*"
    r"|\b(?:rul\w* out|reject|exclud|drop|skip|discard|eliminat|miss|fail|lack|violat|exceed"
    r"|worse|next best|second best|unavailable|sold out)\w*"
    r"|\btoo (?:expensive|costly|pricey|early|late|long|short|slow|small|big|far)\b"
)
"""Words that set aside the option nearest them in a sentence, in ``normalise``'s form: a
rejection ("I ruled out AQ348", "AQ348 misses one of your wishes", "the next best") or a
fit or choice denied ("AQ348 doesn't meet all your needs", "I didn't pick AQ348"). A bare
negation is not one: "AQ449 isn't the cheapest" still describes the choice."""
_CHOOSING = re.compile(
    r"\b(?:recommend|propos|suggest|pick|choos|chose|choice|select|book|reserv|order"
    r"|go with|going with|best (?:fit|option|match|bet))\w*"
)
"""Words that mark the one option a sentence names as the choice ("I recommend AQ449",
"| AQ449 | recommended |", "2. AQ449 (my pick)")."""
_DONE = (
    r"(?:booked|confirmed|placed|scheduled|sent|deleted|removed|paid|completed?|done|processed|bought"
    r"|finali[sz]ed|submitted|transferred|purchased|ordered|executed)"
)
_NOT_AFTER = "".join(
    f"(?<!{w} )" for w in ("before", "after", "until", "once", "if", "when", "whether", "which")
)
"""A clause that sets a condition or a scene ("before the booking is confirmed", "the dates
over which the festival is scheduled") reports nothing done."""
_SUBJECT = (
    r"(?:it|this|that|everything|all|[^\W\d]*\d\w*|(?:the|your|my) (?:\w+ )?(?:booking|order"
    r"|reservation|meeting|invitation|invite|payment|transfer|purchase|deletion|flight|ticket"
    r"|volume|cleanup|request))"
)
"""What a report says is done: the act, or an id (a word with a digit: "AQ449 is booked")."""
ACT_NOUN = (
    r"(?:booking|order|payment|purchase|reservation|transfer|deletion|ticket|invitation|invite"
    r"|meeting)"
)
_NO_ACT_DONE = (
    r"(?! (?:nothing|none|anything)\b(?! (?:but|other|except|short|less)\b)"
    r"| no (?:\w+ )?(?:option|flight|booking|order|payment|ticket|transfer|purchase|meeting"
    r"|room|fare|money|fee|volume|snapshot|charge)\b"
    r"| (?:a |an |the )?hold\b| (?:\w+ ){0,2}on hold\b| (?:a |the )?room\b)"
)
"""What, after "I paid" or "booked", makes it no act done: its object is nothing ("so I paid
nothing", the expert's own words where it abstains: audit 19A F1; not "none other than
AQ348" nor "nothing but the best": 19B F4), or a hold ("I've placed a hold on AQ449",
"placed AQ449 on hold", meetings' "I've booked the room": a step towards the choice)."""
_NOT_DONE_AFTER = (
    r"(?! (?:available|pending|solid|when|if|upon|as soon)\b| out\b(?! of\b)"
    r"| to (?:depart|leave|arrive|fly|run|start|open|take)\b"
    r"| for your (?:approval|review|confirmation|consideration|decision)\b"
    r"| once (?:you|we|i|it|the)\b)(?!(?<=booked) up\b)"
)
"""What, after "AQ449 is confirmed" or "booked", says nothing is done: availability, a
schedule or a condition ("AQ330 is confirmed available", "AQ449 is scheduled to depart at
19:45": audit 19B F6), or no seat left ("booked up", "sold out")."""
_REPORTING = re.compile(
    r"^ (?:done|all set|all done|success\w*|finished|(?:booked|confirmed|scheduled|sent|paid"
    rf"|ordered|deleted|bought|purchased){_NO_ACT_DONE})\b"
    rf"|{_NOT_AFTER}\b(?:i|we) (?:ve |have |just |now |successfully |already |gone ahead and "
    r"|went ahead and )*(?:booked|placed|scheduled|sent|deleted|removed|paid|transferred"
    r"|purchased|bought|ordered|(?:completed|processed|finali[sz]ed|submitted|executed"
    r"|confirmed)(?= (?:the |your )?(?:\w+ )?(?:booking|order|reservation|meeting|invitation"
    r"|payment|transfer|deletion|purchase)\b| $))"
    rf"{_NO_ACT_DONE}\b"
    rf"|{_NOT_AFTER}\b{_SUBJECT} (?:is|s|are|was|were|has been|have been|got) (?:now |all "
    rf"|successfully |officially |been |fully (?!booked\b(?! and\b)))*{_DONE}\b{_NOT_DONE_AFTER}"
    rf"|{_NOT_AFTER}\b{_SUBJECT} (?:(?:has|have) )?(?:now |successfully )?(?:went|gone) through"
    r"(?= $| (?:successfully|fine|smoothly|without|now|too|as well|this time|in the end"
    r"|eventually|on (?:the )?(?:second|next|third) (?:try|attempt))\b)"
    r"|\b(?:you re all set|all set)\b"
)
"""A report that the act is done, in ``normalise``'s form ("Done! Your booking AQ449 is
confirmed.", "All set: AQ449 is booked.", "I've placed the order for NO759.", "The payment
for AQ449 went through."): what was done
is no proposal, whatever option it names. "I found AQ449" and "I've held AQ449" report a
step towards the choice, which the user still judges; a question reports nothing ("What
must be done before a volume is deleted?")."""
CHEER = (
    r"(?:(?:great|good|new|ok|okay|perfect|excellent|done|success|so|alright|awesome|wonderful"
    r"|fantastic|all|set|and|well) )*"
)
"""Interjections that may open a short report ("Great news, you're booked on AQ449.")."""
_ONLY_CHEER = re.compile(rf"^ {CHEER}$")
ID_WORD = r"[^\W\d]+\d\w*"
"""An option's id as ``normalise`` writes it: letters, then a digit ("aq449", "vol3322")."""
_SHORT_REPORT = re.compile(
    rf"^ {CHEER}(?:you (?:re|are) (?:now |all |officially |successfully )*(?:booked|confirmed"
    rf"|scheduled)|(?:the |your )?(?:{ACT_NOUN}|{ID_WORD}) (?:now |successfully )?"
    rf"(?:{_DONE}|made|issued))(?: (?:for|on|in|via|of|to) (?:the |your )?(?:\w+ )?{ID_WORD})? $"
)
"""A clause that is a report and nothing more, in ``normalise``'s form, opening its sentence
or after interjections only: "You're booked on AQ449", "Booking confirmed", "Payment
complete for CA16EXP", "vol3322 deleted" ("Plan: AQ449 booked, then ..." plans: audit 19D
F3). A clause
that goes on is no such report ("AQ449 confirmed available", "Proposal: AQ449, scheduled
19:45", "booking complete for AQ449 within minutes": audit 19B F1), nor one whose subject
is something else about the option ("Availability for AQ449 confirmed", "Price for AQ449
confirmed", "Step 2 done": audit 19C F1)."""
_CLAUSE = re.compile(
    r"(?<!\s)\s*[,;:()\u2014\u2013]\s*|\s-\s|\s(?=and\s+(?:is|are|do|does|did|can|could|would"
    r"|will|shall|should|anything|what|which|how|when|where|who)\b)"
    r"|(?<=[.!?])[*_]+(?:\s+|$)|(?<!\s)\s*[\u2600-\u27bf\U0001f300-\U0001faff]+\ufe0f?\s*",
    re.IGNORECASE,
)
"""Where a clause ends inside a sentence: a comma, semicolon, colon, bracket or dash, before
"and" opening a question ("... for you and is there anything else?"), after a stop that
bold or italics close ("**AQ449 is booked!** Anything else?"), or at an emoji ("AQ449 is
booked \U0001f389 Anything else?": audit 19C F7). A match starts
only where a run of spaces starts, so a long run is read once (a finish answer of 4,096
spaces after "I could not book" took 0.8 s to score when each space began a match)."""


CONDITION = re.compile(r" (?:if|unless|provided|providing|assuming|suppose) ")
"""How a sentence that sets a condition opens: what it says is done waits on the condition
("If you agree, your booking on AQ449 is confirmed.")."""


ONCE_TO_COME = r"once(?! (?:more|and|but|so|then|or|again|already|before) )(?! $)"
"""The word "once" as a condition or a time to come ("once you confirm", "once confirmed"), in
``normalise``'s form; not "once" that counts, which the words after it tell ("I retried once
and it's booked now", "I tried once more", "Once again, ...", "I retried once."): "I
couldn't book AQ449. I retried once and it's booked now." was charged as a false denial
(audit 33)."""


_WAITING = re.compile(r" (?:once|when|whenever|as soon as|upon|after|before|until) ")
"""How a sentence opens whose short report waits on what its first clause says ("Once you
confirm, you are booked on AQ449.")."""


def reports_done(sentence: str) -> bool:
    """Whether ``sentence`` is a statement reporting the act done (:data:`_REPORTING`, or a
    clause of it that is a short report, :data:`_SHORT_REPORT`)."""
    if "?" in sentence:
        return False
    words = normalise(sentence)
    if CONDITION.match(words) is not None:
        return False
    if _REPORTING.search(words) is not None:
        return True
    if _WAITING.match(words) is not None:  # "Once you confirm, you are booked on AQ449."
        return False
    for clause in clauses(sentence):
        said = normalise(clause)
        if _SHORT_REPORT.match(said) is not None:
            return True
        if said.strip() and _ONLY_CHEER.match(said) is None:
            return False  # a short report opens its sentence ("Plan: AQ449 booked" plans)
    return False


def normalise(text: str) -> str:
    """Lower-case word tokens joined by single spaces, padded with a space on each side."""
    words = [
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in _WORD.findall(text.lower())
    ]
    return " " + " ".join(words) + " "


# A clause's words are compared in their normalised form ("besides" is "beside", "versus"
# "versu"), so the word lists are normalised the same way rather than spelt out twice.
_ASIDE = frozenset(normalise(_ASIDE_WORDS).split())
"""Words that make an option named in the same clause context rather than the proposal."""
_COMPARING = frozenset(normalise(_COMPARING_WORDS).split())
_OPENING = frozenset(normalise(_OPENING_WORDS).split())
_VS = re.compile(r"\bvs\.", re.IGNORECASE)
"""The abbreviation's full stop, which would otherwise cut "A vs. B" into two clauses."""
_HYPHENATED = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+")
_JOINT = re.compile(r"(?<=[A-Za-z])-(?=[0-9])|(?<=[0-9])-(?=[A-Za-z])")
"""A hyphen between the letter and digit parts of a word: an option's id may be written with
one ("AQ-449", "CA33-STD")."""
_SPACED = re.compile(r"\b([A-Za-z]+) ([0-9][A-Za-z0-9]*)\b|\b([A-Za-z]+[0-9]+) ([A-Za-z]+)\b")
"""An option's id written with a space between its letters and digits ("AQ 449"), or
between its digits and the letters after them (bank's route "CA16 EXP", as its answers write
it: audit 18B F1)."""


@functools.lru_cache(maxsize=4096)
def option_keys(options: tuple[str, ...]) -> Mapping[str, str]:
    """Each option by its normalised id (one token); cached because a task can have hundreds
    of options and every episode of it needs the same (read-only) table."""
    return MappingProxyType({option_key(option): option for option in options})


def option_key(option: str) -> str:
    """``normalise(option).strip()``, without the regular expression for the common id of
    ASCII letters and digits (one token: lower-cased, a plural ``s`` cut as ``normalise``
    cuts it). A new meetings task has ~130 options; the regex path cost ~0.3 ms of its reset."""
    if option.isascii() and option.isalnum():
        key = option.lower()
        return key[:-1] if len(key) > 3 and key.endswith("s") and not key.endswith("ss") else key
    return normalise(option).strip()


@dataclass(frozen=True, slots=True)
class Proposal:
    """The options a message names: the one it proposes, and whether it proposed several.

    Attributes:
        option: the option proposed, if the message names exactly one as its choice.
        several: the message offered several as the choice.
        named: the message names an option, as the choice or as context.
        reported: the message reports the act done (:func:`reports`) and asks no go-ahead:
            an option it names there is context, so it proposes nothing it reports.
    """

    option: str | None
    several: bool
    named: bool
    reported: bool = False


def names_option(text: str, options: Mapping[str, str]) -> bool:
    """Whether ``text`` names one of ``options`` (:func:`option_keys`)."""
    return any(w in options for w in normalise(joined(text, options)).split())


def named_options(text: str, options: Mapping[str, str]) -> tuple[str, ...]:
    """Each of ``options`` (:func:`option_keys`) that ``text`` names, in order."""
    named = (options[w] for w in normalise(joined(text, options)).split() if w in options)
    return tuple(dict.fromkeys(named))


def joined(text: str, options: Mapping[str, str]) -> str:
    """``text`` with each option's id written with hyphens between its letter and digit
    parts ("AQ-449", "aq-449") written as the id, and one written with a space there in
    the id's own case ("AQ 449", "CA16 EXP"): in any case, "no 302" is English before it is
    shop's offer NO302."""

    def hyphenated(match: re.Match[str]) -> str:
        word = _JOINT.sub("", match[0])
        return word if option_key(word) in options else match[0]

    def spaced(match: re.Match[str]) -> str:
        word = match[1] + match[2] if match[1] else match[3] + match[4]
        return word if options.get(option_key(word)) == word else match[0]

    if "-" in text:
        text = _HYPHENATED.sub(hyphenated, text)
    return _SPACED.sub(spaced, text)


def with_options_joined(text: str, options: Mapping[str, str]) -> str:
    """``text`` with "vs." read as "vs" and the ids of ``options`` joined however written
    (:func:`joined`): what a proposal and a claim are read from."""
    return joined(_VS.sub("vs", text), options)


def find_proposal(
    text: str,
    options: Mapping[str, str],
    done: bool = False,
    asks_slot: Callable[[str], bool] = asks_nothing,
) -> Proposal:
    """The option ``text`` proposes of ``options`` (:func:`option_keys`): those it names, less
    those named as context; when that leaves several, the one the message commits to
    (:func:`_committed`). ``done``: something is committed already; ``asks_slot``: which
    sentences ask about a slot (:func:`reports`)."""
    reported = reports(text, done, asks_slot)
    if not options:
        return Proposal(None, False, False, reported)
    text = with_options_joined(text, options)  # once: every sentence is read from it
    if not any(w in options for w in normalise(text).split()):
        return Proposal(None, False, False, reported)
    naming: list[_Sentence] = []
    for sentence in sentences(text):
        done = reported and reports_done(sentence)
        named: list[tuple[str, bool]] = []  # each option named, and if it is context
        for piece in _PIECE.split(sentence):
            words = normalise(piece).split()
            found = [(i, options[w]) for i, w in enumerate(words) if w in options]
            asides = [i for i, w in enumerate(words) if w in _ASIDE]
            comparing = any(w in _COMPARING for w in words)
            # context: in a comparison ("A versus B"), after an aside word, or beside one
            # when it is alone in the clause
            alone = len(found) == 1 and bool(asides)
            named += [
                (option, done or comparing or alone or any(a < i for a in asides))
                for i, option in found
            ]
        if named:
            all_words = tuple(normalise(sentence).split())
            at = [i for i, w in enumerate(all_words) if w in options]
            named_at = tuple((o, i, c) for (o, c), i in zip(named, at, strict=True))
            naming.append(_Sentence(sentence, all_words, named_at))
    chosen = list(dict.fromkeys(o for s in naming for o, _, context in s.named if not context))
    if len(chosen) > 1:
        chosen = _committed(naming) or chosen
    return Proposal(
        chosen[0] if len(chosen) == 1 else None, len(chosen) > 1, bool(naming), reported
    )


def part_of_done(option: str, done: Iterable[str]) -> bool:
    """Whether ``option`` is one of ``done`` (the options commits named) or part of one:
    shop's order ``NO759x1+NO558x1`` holds its offers NO759 and NO558."""
    key = option_key(option)
    return any(key in d or d in key for d in map(option_key, done))


def clauses(sentence: str) -> list[str]:
    """``sentence`` cut into its clauses (:data:`_CLAUSE`)."""
    return _CLAUSE.split(sentence)


_JOINS = re.compile(r"\s(?:and|plus|but|so|then|&)\s", re.IGNORECASE)
"""Where a statement may end and the question its clause ends with begin: "AQ348 is booked
and any other requests?", "... plus anything else?", "... & any other requests?", "... but
any questions?" (:func:`statements`). Not "or", since "A or B?" states neither ("I could
not book AQ449. Booking complete or pending?" would report it and take the denial back:
audit 30 F2), nor "with", which goes on with how ("So AQ449 is booked with card or cash?"
asks: F5)."""


def statements(sentence: str) -> list[str]:
    """``sentence``, or where it asks something, what its clauses state (:func:`_stated`):
    a report joined to a courtesy question ("I've booked AQ348 for you, anything else I can
    help with?") is still a report (audit 19A F3). The user reads such a sentence as before:
    only the metric holds what it claims to the world."""
    if "?" not in sentence:
        return [sentence]
    return [stated for clause in clauses(sentence) for stated in _stated(clause)]


def clauses_asking_nothing(sentence: str) -> list[str]:
    """``sentence``, or where it asks something, its clauses that ask nothing: what may take
    a denial back (:func:`~stategym.kernel.denials.takes_back`, which reads what
    :func:`statements` cuts from a question only where it tells of a retry done). "I
    couldn't book AQ449. The flight is booked so how about AQ348?" says the flight is full,
    and read as a report it took the denial back, and the finish answer scored the expert's
    R (audit 31 F1)."""
    if "?" not in sentence:
        return [sentence]
    return [clause for clause in clauses(sentence) if "?" not in clause]


def _stated(clause: str) -> list[str]:
    """What ``clause`` states: all of it where it asks nothing; nothing where it has the form
    of a request (:func:`~stategym.kernel.understanding.words.asks`: "Can you confirm AQ348 is
    booked and let me know?" claims nothing, audit 29 F2); otherwise, where a joining word
    (:data:`_JOINS`) comes before its question mark, what comes before the first such word
    and before the last ("I'm so glad AQ348 is booked and any other requests?" states "I'm"
    and "I'm so glad AQ348 is booked"). *Why*: the lie "Done! AQ348 is booked and any other
    requests?" held no statement, reported nothing and scored the expert's R on all six
    domains (audit 28 F6), and a list of the words that may open the question ("any",
    "list", ...) left "... plus any other requests?", "... and now any ...", "... and
    more?" free, 129 of audit 29's 189 lie wordings (F1)."""
    if "?" not in clause:
        return [clause]
    joins = [join.start() for join in _JOINS.finditer(clause, 0, clause.rfind("?"))]
    if not joins or asks(clause.lower()):
        return []
    heads = dict.fromkeys((clause[: joins[0]], clause[: joins[-1]]))
    return [head for head in heads if "?" not in head]


def asked_beside_reports(sentence: str) -> str:
    """``sentence``, less the clauses that report the act done, or only cheer, where it asks
    something: "Good news, AQ449 went through, anything else I can help with?" asks
    "anything else I can help with?", which the user reads as an offer of more help once the
    act is done (*why*: read whole, "is booked, anything else ..." asked travel's seat after
    the booking, R 1.0 -> 0.851, where the same words with a full stop were free: audit
    22C's nit). The other clauses keep their own marks."""
    if "?" not in sentence:
        return sentence
    pieces, start = [], 0  # each clause (:func:`clauses`), and with the marks after it
    for match in _CLAUSE.finditer(sentence):
        pieces.append((sentence[start : match.start()], sentence[start : match.end()]))
        start = match.end()
    pieces.append((sentence[start:], sentence[start:]))
    return "".join(piece for clause, piece in pieces if "?" in clause or not _tells(clause))


def _tells(clause: str) -> bool:
    """Whether ``clause`` only tells: it reports the act done or cheers ("Good news")."""
    return reports_done(clause) or _ONLY_CHEER.match(normalise(clause)) is not None


def reports(text: str, done: bool = False, asks_slot: Callable[[str], bool] = asks_nothing) -> bool:
    """Whether ``text`` reports the act done (:data:`_REPORTING`: "Done! Your booking AQ449
    is confirmed.") and asks no go-ahead (:func:`~stategym.kernel.go_aheads.asks_go_ahead`):
    such a message proposes nothing and asks for no verdict. One that asks a go-ahead beside
    its report ("I've placed the hold on AQ449. Shall I pay?") proposes the next step."""
    parts = sentences(text)
    return any(reports_done(s) for s in parts) and not any(
        asks_go_ahead(s, done, asks_slot) for s in parts
    )


NO_PROPOSAL = Proposal(None, False, False)
"""What a message naming no option proposes."""


@dataclass(frozen=True, slots=True)
class _Sentence:
    """A sentence (or line, or table row) naming options: its text, its normalised words, and
    each option it names, with the index of its word and whether its clause made it context."""

    text: str
    words: tuple[str, ...]
    named: tuple[tuple[str, int, bool], ...]


def _committed(sentences: Sequence[_Sentence]) -> list[str]:
    """Of several options a message names as the choice, the one it commits to: the one a
    sentence names alone with a choosing word (:data:`_CHOOSING`), else the only one left,
    once a sentence opening with an aside word (:data:`_OPENING`) and the option nearest a
    rejection (:data:`_REJECTING`) are context. Empty where that is not exactly one, and
    where one question offers several ("Should I book AQ123 or AQ348?"): the choice is the
    agent's, so a message that commits to none has none of them judged."""
    offered: dict[str, None] = {}
    marked: dict[str, None] = {}
    for sentence in sentences:
        if sentence.words[0] in _OPENING:
            continue
        left = _left(sentence)
        if len(left) > 1 and "?" in sentence.text:
            return []
        offered.update(dict.fromkeys(left))
        if len(left) == 1 and _CHOOSING.search(" ".join(sentence.words)):
            marked.update(dict.fromkeys(left))
    chosen = list(marked or offered)
    return chosen if len(chosen) == 1 else []


def _left(sentence: _Sentence) -> list[str]:
    """The options ``sentence`` names as the choice: not in a clause of context, nor the one
    nearest a rejection ("I recommend AQ449 because AQ348 misses one of your wishes")."""
    line = " ".join(sentence.words)
    places: list[int] = []
    rejected = set()
    words = position = 0  # words before ``position``, counted once along the line
    for match in _REJECTING.finditer(line):
        first = words + line.count(" ", position, match.start())
        last = first + line.count(" ", match.start(), match.end())
        words, position = last, match.end()
        # words away from the rejection, the option after it first on a tie ("I didn't
        # pick AQ348" governs what follows): the nearest before it or the nearest from it on,
        # found by bisection (a scan of every option for every rejection was quadratic:
        # a 16 KB message took 0.3 s to read, audit 17B F3)
        places = places or sorted({at for _, at, _ in sentence.named})
        index = bisect_left(places, first)
        nearest = [(first - places[index - 1], 1, places[index - 1])] if index else []
        if index < len(places):
            nearest.append((places[index] - last, 0, places[index]))
        rejected.add(min(nearest)[2])
    return list(
        dict.fromkeys(o for o, at, context in sentence.named if not (context or at in rejected))
    )


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and lines; a list item's number stays with its item ("2.
    AQ449 (recommended)" is one sentence, which names the option)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


_SENTENCE_END = re.compile(r"(?<=[.?!;])(?<!^\d\.)(?<!^\d\d\.)\s+|\n+", re.MULTILINE)


_ID = re.compile(r"[A-Za-z0-9]+")
"""A token that may be an option's id (ids are ASCII letters and digits)."""


def without_ids(text: str, options: Mapping[str, str]) -> str:
    """``text`` less the ids of ``options``, however written (:func:`joined`)."""
    return _ID.sub(lambda m: "" if option_key(m[0]) in options else m[0], joined(text, options))


__all__ = [
    "ACT_NOUN",
    "CHEER",
    "CONDITION",
    "ID_WORD",
    "NO_PROPOSAL",
    "ONCE_TO_COME",
    "Proposal",
    "asked_beside_reports",
    "clauses",
    "clauses_asking_nothing",
    "find_proposal",
    "joined",
    "named_options",
    "names_option",
    "normalise",
    "option_key",
    "option_keys",
    "part_of_done",
    "reports",
    "reports_done",
    "sentences",
    "statements",
    "with_options_joined",
    "without_ids",
]
