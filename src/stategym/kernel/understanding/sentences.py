"""How an agent's message is cut into the sentences the matcher reads: its markup, list
markers, dashes and parentheses (:func:`questions`), and what leads in to the questions
rather than asking (a request that leads a list, :func:`leads_list`; a preamble before a
colon, :func:`introduces`; a statement that the agent needs details, :func:`needs_details`).
The words and clauses themselves are :mod:`~stategym.kernel.understanding.words`'.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from .spacing import compact
from .words import asks, piece_asks, sets_context, words

_SENTENCE = re.compile(r"([.?!;\n]+(?:\s+|$)|\s+-\s+)")
"""What ends a sentence (kept by the split: a question mark says it asks)."""
_READ_SENTENCE = re.compile(r"([.?!;\n]+(?:\s+|$)|\s+-\s+|\s+\u2013\s+|\s*\u2014+\s*|\s*\n\s*)")
"""What ends a sentence of a message (:func:`questions`): also a line break before a list
item's number ("\n2) "), an en dash between spaces and an em dash after a lead-in
(:func:`_leads_in`: "Quick question \u2014 what is your budget?"; not the en dash of a range,
"09:00\u201317:00")."""
_DASH = re.compile(r"\s*[\u2013\u2014]+\s*")

_CONFIRMING = re.compile(
    r"\s*(?:(?:is|was)\s+(?:that|this|it)\s+|(?:that|this)\s+is\s+|am\s+i\s+)?"
    r"(?:about\s+|roughly\s+|more\s+or\s+less\s+)?(?:right|correct|ok|okay|true|accurate|so)\s*$"
)
"""A tag that asks to confirm the sentence before it ("I'm assuming a budget of $1,000 - is
that about right?", "The project is prj2291. Correct?")."""


_MARKUP = re.compile(r"[*\"“”]+|(?m:^\s*#+)")
"""Markdown emphasis, headings and double quotes: how a question is dressed, not what it asks
("**What is your budget?** **Do you need a refundable fare?**" is two questions)."""
_MARKER = re.compile(r"\s*(?:[-•\u2013\u2014]|\(?\d{1,2}[.)]|\([a-h]\))\s+")
"""A list item's bullet or number ("- ", "(1) ", "2) ") at the start of a sentence."""


_ABBREVIATION = re.compile(r"\b(e\.g|i\.e|vs|etc|approx|incl|esp)\.(?!\w)")
"""An abbreviation's stop ("e.g.", "vs."), which ends no sentence in parentheses."""
_BRACKETS = re.compile(r"\([^()?]*\)")
_ASIDE_QUESTION = re.compile(r"\(([^()]*\?)\s*\)")
"""A question in parentheses ("(Also, what time would you like to depart?)")."""


_LINE_NUMBER = re.compile(r"(?m)^([ \t]*\d{1,2})\.(?=[ \t]+\S)")
"""The number of a numbered line ("1. Your budget"), whose stop ends no sentence."""
_LISTED_IN_BRACKETS = re.compile(r"\s*\(([^()?]*)\)\s*(?=\?)")
"""What a request lists in parentheses before its question mark ("Could you confirm a few
details (your budget, your dates)?"): introduced as after a colon."""


def _unwrapped(text: str) -> str:
    """``text`` with a question in parentheses a sentence of its own ("I'll start as soon as
    I know a bit more (what is your budget?)"), what a question lists in parentheses at its
    end introduced by a colon, line numbers without their stops, and abbreviations in
    parentheses too: an example, "(e.g. price vs. timing)", stays in its sentence (outside
    them, "i.e." still ends one: "When is it due, i.e. what is the last day?")."""
    text = _BRACKETS.sub(lambda m: _ABBREVIATION.sub(r"\1", m.group(0)).replace(".", ""), text)
    text = _LINE_NUMBER.sub(r"\1)", text)
    text = _LISTED_IN_BRACKETS.sub(lambda m: f": {m.group(1)}", text)
    return _ASIDE_QUESTION.sub(lambda m: f"\n {m.group(1)}\n ", text)


_LEAD_IN = frozenset(
    {"quick", "question", "one", "more", "thing", "got", "it", "noted", "thanks", "thank", "you"}
    | {"for", "the", "details", "info", "information", "understood", "ok", "okay", "great"}
    | {"perfect", "sure", "alright", "right", "so", "and", "first", "also", "hi", "hello"}
)
"""The words of a lead-in before a dash ("Quick question \u2014", "Got it \u2014", "Thanks for
the details \u2014"; the acknowledgements of :mod:`.courtesy`, which this module is below)."""


def _leads_in(piece: str) -> bool:
    """Whether ``piece``, before a dash, only leads in to what follows: an acknowledgement
    or an opener, or a scene ("Before I start searching \u2013 ...")."""
    found = words(piece)
    if not found:
        return False
    return all(w in _LEAD_IN for w in found) or (sets_context(piece) and not asks(piece))


def _dashes_joined(pieces: list[str]) -> list[str]:
    """``pieces`` (sentences and what ended each, in turn) with a dash after anything but a
    lead-in joined, as a comma does. Linear: what is joined is kept in parts, and a piece
    longer than :data:`_LONGEST_LEAD_IN` leads in to nothing (a run of dashes took seconds)."""
    joined: list[list[str]] = [[pieces[0]]]
    ends: list[str] = []
    length = len(pieces[0])  # of the last piece, joined
    for end, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        before = joined[-1]
        short = length <= _LONGEST_LEAD_IN
        if _DASH.fullmatch(end) and not (short and _leads_in("".join(before))):
            before += (end, piece)
            length += len(end) + len(piece)
        else:
            ends.append(end)
            joined.append([piece])
            length = len(piece)
    out = ["".join(parts) for parts in joined]
    return [p for pair in zip(out, [*ends, ""], strict=True) for p in pair][:-1]


_LONGEST_LEAD_IN = 300
"""The most characters a lead-in before a dash has ("Before I start searching for the
fares that fit your dates –")."""


def questions(text: str, *, message: bool = True) -> list[tuple[str, bool]]:
    """``text`` (already :func:`expand`-ed) cut into sentences, each with whether it ends in a
    question mark, without their markup (:data:`_MARKUP`) and list markers. A confirming tag
    ("- correct?", ". Is that right?") is not a sentence of its own: it makes the sentence
    before it the question.

    ``message``: the agent's text, not a training phrase: a question in parentheses is a
    sentence of its own (:func:`_unwrapped`), and so is what follows a dash after a lead-in
    (:func:`_leads_in`: "Quick question \u2014 what is your budget?", "Got it \u2014 ...");
    after anything else a dash stays in its sentence, as before ("When does it run \u2014 on
    which days?" says one question twice)."""
    text = compact(_MARKUP.sub(" ", text))  # the marks dropped leave no long run of spaces
    pieces = _READ_SENTENCE.split(_unwrapped(text)) if message else _SENTENCE.split(text)
    pieces = _dashes_joined(pieces)
    out: list[tuple[str, bool]] = []
    for sentence, end in zip(pieces[::2], [*pieces[1::2], ""], strict=True):
        sentence = _MARKER.sub(" ", sentence, count=1) if _MARKER.match(sentence) else sentence
        if not sentence.strip():
            continue
        if out and "?" in end and _CONFIRMING.match(sentence):
            out[-1] = (out[-1][0], True)
        else:
            out.append((sentence, "?" in end))
    return out


_AHEAD = re.compile(r".*\b(?:the\s+following|as\s+follows)\s*$")
"""A request that points at what follows it ("Could you tell me the following?")."""


def leads_list(sentence: str) -> bool:
    """Whether ``sentence`` introduces the sentences after it: it ends in a colon ("Could you
    tell me:") or points ahead ("Could you tell me the following?")."""
    return sentence.rstrip().endswith(":") or points_ahead(sentence)


def points_ahead(sentence: str) -> bool:
    """Whether ``sentence`` names what it asks only by pointing ahead ("Could you tell me the
    following?"): it names nothing of the user's, even with nothing after it."""
    return _AHEAD.match(sentence) is not None


_DETAILS = frozenset(
    {"i", "we", "will", "would", "still", "just", "also", "first", "need", "require", "like"}
    | {"to", "get", "have", "ask", "some", "a", "few", "couple", "of", "more", "bit", "little"}
    | {"several", "quick", "short", "information", "info", "details", "detail", "things"}
    | {"questions", "question", "answers", "input", "inputs", "from", "you", "your", "now"}
    | {"before", "start", "starting", "proceed", "go", "on", "can", "please", "so", "ok", "okay"}
    | {"one", "two", "piece", "pieces"}
)
"""The words of a statement that the agent needs information, naming none."""
_INFORMATION = frozenset(
    {"information", "info", "details", "detail", "things", "questions", "piece", "pieces"}
)


def needs_details(clause: str) -> bool:
    """Whether ``clause`` only says that the agent needs information ("I need some information
    first", "Before I look anything up, I need a few things from you"): it names nothing of
    the user's, however its words ("first", "things from") weigh elsewhere.

    Example:
        >>> needs_details("i need a few things from you"), needs_details("i need your budget")
        (True, False)
    """
    *scene, last = clause.split(",")
    found = words(last)
    return (
        all(sets_context(piece) for piece in scene)
        and bool(_INFORMATION.intersection(found))
        and all(w in _DETAILS for w in found)
    )


_INTRO = re.compile(r":\s+")
"""A colon that a text follows (not the one of a time, "19:45")."""


def introduces(sentence: str) -> tuple[str, str]:
    """``sentence`` cut at its last colon before a clause in the form of a request (after a
    list marker, if any), or after one ("Could you tell me: your budget ..."): the preamble
    that introduces the questions ("To find the best option for you, I need a few details:
    what is your budget?", "Two questions: (1) ...") and the rest; ``("", sentence)`` if
    there is none. Whether the preamble only introduces is the matcher's call (what the rest
    asks).

    Example:
        >>> introduces("two questions: (1) what is your budget")
        ('two questions', 'what is your budget')
        >>> introduces("departing 19:45, is that ok")
        ('', 'departing 19:45, is that ok')
    """
    cuts = list(_INTRO.finditer(sentence))
    if not cuts:
        return "", sentence
    pieces = Pieces(sentence)  # each cut asks of two spans: one pass over the commas for all
    for cut in reversed(cuts):
        marker = _MARKER.match(sentence, cut.end())
        start = cut.end() if marker is None else marker.end()
        if pieces.asks(start, len(sentence)) or pieces.asks(0, cut.start()):
            return sentence[: cut.start()], sentence[start:]
    return "", sentence


class Pieces:
    """:func:`~stategym.kernel.understanding.words.asks` of any span of one sentence, read
    from the sentence's comma-separated pieces, each matched once: a message of many colons
    used to split and match what followed each colon anew (16 KB of ``"x: "`` took 80 ms to
    read; audit 17B N1).

    Example:
        >>> Pieces("ok, so: what is your budget").asks(8, 27)
        True
    """

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        self.commas = [m.start() for m in _COMMA.finditer(sentence)]
        starts = [0, *(c + 1 for c in self.commas)]
        ends = [*self.commas, len(sentence)]
        self.asking_before = [0]  # how many of the first k pieces ask
        for start, end in zip(starts, ends, strict=True):
            self.asking_before.append(self.asking_before[-1] + piece_asks(sentence, start, end))

    def asks(self, start: int, end: int) -> bool:
        """``asks(sentence[start:end])``."""
        first = bisect_left(self.commas, start)  # the span's commas: commas[first:last]
        last = bisect_left(self.commas, end)
        if first == last:
            return piece_asks(self.sentence, start, end)
        # its first and last pieces are cut; the ones between are the sentence's own
        return (
            piece_asks(self.sentence, start, self.commas[first])
            or piece_asks(self.sentence, self.commas[last - 1] + 1, end)
            or self.asking_before[last] > self.asking_before[first + 1]
        )


_COMMA = re.compile(",")


def sentences(text: str) -> list[str]:
    """``text`` (already :func:`expand`-ed) cut into sentences at stops, line breaks and
    spaced hyphens, as a training phrase is (:func:`questions` reads a message's dashes and
    parentheses too)."""
    return [sentence for sentence, _ in questions(text, message=False)]


__all__ = [
    "introduces",
    "leads_list",
    "needs_details",
    "points_ahead",
    "questions",
    "sentences",
]
