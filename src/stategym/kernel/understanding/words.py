"""Words to features: tokens, stems, synonym sets and clauses, in plain English rules.

A message is lower-cased, its contractions expanded (``what's`` -> ``what is``), cut into
clauses (sentences, and coordinated questions joined by ``and``/``also``/``plus``), and each
clause into stems. A stem is the word with its inflection removed by a few suffix rules and a
table of irregular forms (``flew``, ``paid``, ``left`` -> ``fly``, ``pay``, ``leave``), so
"leaving", "leaves" and "left" are one feature. Each stem also stands for the synonym sets
it belongs to (``spend``, ``afford``, ``cost`` and ``price`` all carry ``@money``): the sets
are what let a question reach a slot in words its phrase table never used. Function words
(``what``, ``do``, ``you``...) carry nothing; a few question words carry their own concept
(``who`` -> ``@who``, ``how much`` -> ``@howmuch``).

Everything here is a pure function of the text; nothing depends on a domain.
"""

from __future__ import annotations

import functools
import re

_WORD = re.compile(r"[a-z0-9$]+")
_ASKING = (
    r"(?=(?:(?:by|in|on|at|for|from|to)\s+(?:what|which|when|whom)|what|which|when|where|who|"
    r"whom|how|do|does|did|is|are|should|can|could|would|will|may|any)\b)"
)
_STRICT = re.compile(rf",?\s+and\s+(?:also\s+)?{_ASKING}|\s*,?\s+also,?\s+")
"""Where one question ends and the next begins: ``and`` (or ``also``) before a question word."""
_AGENT_PLANS = r"(?:before|after|once|so that|so|until|while|since)\s+(?:i|we)\b"
"""A clause about what the agent will do next ("before I search", "so I can book")."""
_NEEDS = (
    r"(?:before|until|unless|till)\s+(?:i|we)\s+(?:first\s+)?(?:know|get(?!\s+(?:to|into)\b)|"
    r"hear|learn|receive|find\s+out|confirm|understand)\b"
)
"""A clause of what the agent must first learn ("until I know your dates"): it asks."""
_PLANS = re.compile(rf"\s*(?!{_NEEDS}){_AGENT_PLANS}")
_LOOSE = re.compile(
    rf",?\s+(?:and also|and then|as well as|plus|also)\s+|,?\s+and\s+(?={_ASKING[3:-1]}|your\b)"
    rf"|,\s+(?:(?:so|then|but)\s+)?(?:{_ASKING}|(?=whether\b))|,?\s+(?={_AGENT_PLANS})"
)
"""Also ``and your ...`` (a second thing of the user's), a comma before a question word or
"whether" ("Could you tell me your budget, whether you need a refundable fare, and ...?"), and
before a clause of the agent's plans (which :func:`sets_context` then recognises)."""
_MUST_KNOW = re.compile(
    r"(?<=\s)(?:i|we)\s+(?:will\s+|would\s+|still\s+|also\s+|first\s+|just\s+)*"
    r"(?:need|must|have|would\s+like|want)\s+to\s+know\b"
)
_PURPOSE = re.compile(r"\s*(?:in\s+order\s+)?to\s+[^,]*$")
"""A scene of purpose with no comma ("To find the right option"): after "so", "once" or a
comma, what the agent needs to know is its own plan ("..., so I'd like to know how flexible
you are. Which days work?"), and the question after it asks."""
_RELATIVE = frozenset({"what", "which", "that", "who", "all", "everything", "anything"})
_READ_LOOSE = re.compile(rf"{_LOOSE.pattern}|,?\s+and\s+(?=whether\b)")
"""How a message's sentence is cut (:func:`clauses` with ``message``): also at "and
whether"."""
_JOINERS = frozenset(
    {"and", "also", "plus", "as", "before", "after", "once", "so", "until", "while", "since"}
)
"""Words without which (and without a comma) a sentence is one clause: the fast path."""
_MAIN_AFTER_COMMA = re.compile(r",\s*(?:i|we|you|please|tell|let|could|can|would)\b")
_CONTEXT = re.compile(
    rf"\s*(?!{_NEEDS})"
    r"(?:(?:before|after|once|knowing|given|aside|apart|besides|beyond|separately|separate|"
    r"including|suppose|supposing|imagine|in\s+order\s+to|not|setting|"
    r"putting|leaving|regardless|irrespective|keeping|bearing|now|so|whichever|whatever|wherever|"
    r"whoever|while|whilst|assuming|considering|because|except|excluding|ignoring|unless|until|"
    r"if|other than|in addition to|in case|on top of)\b"
    r"|(?:to|for|with|within|among|amongst|since|as)\b"
    r"(?!\s+(?:what|which|when|where|who|whom|whose|how|for|to|regards)\b))"
)

_CONTRACTIONS = re.compile(r"n['’]t\b|['’](?:re|ll|ve|d|m|s)\b|(?<=\w)-(?=\w)")
_EXPANDED = {"n": " not", "r": " are", "l": " will", "v": " have", "d": " would", "m": " am"}
"""A contraction by the letter after its apostrophe (``'s`` reads ``is``); a hyphen between
letters is a space."""


def _expanded(match: re.Match[str]) -> str:
    found = match.group(0)
    if found == "-":
        return " "
    return _EXPANDED.get(found[0] if found[0] == "n" else found[1], " is")


IRREGULAR: dict[str, str] = {
    "flew": "fly",
    "flown": "fly",
    "flies": "fly",
    "flying": "fly",
    "left": "leave",
    "paid": "pay",
    "spent": "spend",
    "sent": "send",
    "bought": "buy",
    "chose": "choose",
    "chosen": "choose",
    "went": "go",
    "gone": "go",
    "got": "get",
    "gotten": "get",
    "gave": "give",
    "given": "give",
    "kept": "keep",
    "held": "hold",
    "met": "meet",
    "sat": "sit",
    "told": "tell",
    "took": "take",
    "taken": "take",
    "made": "make",
    "began": "begin",
    "begun": "begin",
    "known": "know",
    "lost": "lose",
    "ran": "run",
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "data": "data",
    "news": "news",
    "us": "us",
    "was": "be",
    "were": "be",
    "is": "be",
    "are": "be",
    "am": "be",
    "been": "be",
    "has": "have",
    "had": "have",
    "does": "do",
    "did": "do",
    "done": "do",
    "this": "this",
    "its": "it",
    "gb": "gb",
    "utc": "utc",
    "less": "less",
    "lesser": "less",
    "least": "least",
    "best": "best",
    "worse": "bad",
    "worst": "bad",
    "better": "good",
    "earliest": "early",
    "earlier": "early",
    "latest": "late",
    "later": "late",
    "cheaper": "cheap",
    "cheapest": "cheap",
    "lowest": "low",
    "lower": "low",
    "highest": "high",
    "higher": "high",
    "biggest": "big",
    "bigger": "big",
    "smallest": "small",
    "smaller": "small",
    "largest": "large",
    "larger": "large",
    "greatest": "great",
    "greater": "great",
    "oldest": "old",
    "older": "old",
    "newest": "new",
    "newer": "new",
    "colour": "color",
    "colours": "color",
    "colourway": "colorway",
    "colourways": "colorway",
    "favourite": "favorite",
    "prioritise": "prioritize",
    "favour": "favor",
    "categorise": "categorize",
}
"""Irregular forms and British spellings, by the stem they share with their regular kin."""


_BRITISH = re.compile(r"is(?=e$|ed$|es$|ing$|ation$|ations$)")
"""British ``-ise`` spellings read as ``-ize`` ("categorised" is "categorized")."""


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The word without its inflection: ``leaving``/``leaves`` -> ``leav``, ``prices`` ->
    ``pric``; the same rule on both sides is all that matters, so stems need not be words."""
    if word in IRREGULAR:
        word = IRREGULAR[word]
        if word in IRREGULAR.values() and len(word) <= 4:
            return word
    if len(word) <= 3 or word.isdigit():
        return word
    word = _BRITISH.sub("iz", word)
    suffixes = (("ings", ""), ("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""))
    for suffix, keep in suffixes:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + keep
            break
    else:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeious":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


_NEGATED = ("do", "does", "did", "is", "are", "was", "were", "has", "have", "should", "could")
_INFORMAL = {
    **{f"{w}nt": f"{w} not" for w in (*_NEGATED, "would")},
    "cant": "can not",
    "wont": "will not",
    "whats": "what is",
    "wheres": "where is",
    "whens": "when is",
    "hows": "how is",
    "whos": "who is",
    "thats": "that is",
    "im": "i am",
    "ive": "i have",
    "youre": "you are",
    "u": "you",
    "ur": "your",
    "pls": "please",
    "plz": "please",
    "thx": "thanks",
    "qty": "quantity",
    "wanna": "want to",
    "gonna": "going to",
    "gotta": "got to",
    "outta": "out of",
    "acct": "account",
}
"""Contractions typed without their apostrophe and chat spellings, as the words they stand
for ("whats ur budget" reads "what is your budget")."""
_INFORMAL_WORD = re.compile(r"\b(?:" + "|".join(sorted(_INFORMAL, key=len, reverse=True)) + r")\b")


_GREETING = re.compile(
    r"(?:^|(?<=[.!?;]\s))\s*good\s+(?:morning|afternoon|evening|day|night)\b(?=\s*(?:[!,.;]|$))"
)
"""A greeting ("Good morning!"), not a time of day: read as "hello"."""


def expand(text: str) -> str:
    """Lower-case ``text`` with its contractions, informal spellings, greetings and hyphens
    expanded."""
    text = _GREETING.sub("hello", _CONTRACTIONS.sub(_expanded, text.lower()))
    return _INFORMAL_WORD.sub(lambda m: _INFORMAL[m.group(0)], text)


def clauses(sentence: str, *, strict: bool = False, message: bool = False) -> list[str]:
    """One sentence cut into the questions it joins.

    ``or`` joins alternatives of one question ("morning or evening?"), so it never cuts.
    ``strict`` cuts only at ``and``/``also`` before a question word, for a sentence that
    compares things ("If we can't get X and your Y, which matters more?"), whose parts are
    what is compared, not questions. ``message``: a sentence of the agent's, not a training
    phrase, is cut also at "and whether" (:data:`_READ_LOOSE`) and before what the agent
    needs to know after a scene (:func:`_needs_after_scene`); a piece that is only a joining
    word ("also,") is none.
    """
    if not message or strict:
        if (
            "," not in sentence
            and ":" not in sentence
            and not _JOINERS.intersection(sentence.split())
        ):
            return [sentence] if sentence.strip() else []
        pattern = _STRICT if strict else _LOOSE
        return [part for piece in _scene(sentence) for part in pattern.split(piece) if part.strip()]
    return [
        clause
        for piece in _scene(sentence)
        for part in _READ_LOOSE.split(piece)
        if part.strip() and not _JOINER_ONLY.fullmatch(part)
        for clause in _needs_after_scene(part)
    ]


def _needs_after_scene(clause: str) -> list[str]:
    """``clause`` cut before what the agent needs to know after a scene of purpose with no
    comma (:data:`_PURPOSE`: "To find the right option I need to know your budget"): its
    object is what it asks, the scene is not; whole otherwise ("Suppose what I want to know
    is settled")."""
    cut = _MUST_KNOW.search(clause)
    scene = clause[: cut.start()] if cut is not None else ""
    if cut is None or not _PURPOSE.match(scene) or words(scene)[-1] in _RELATIVE:
        return [clause]  # "Suppose what I want to know is settled" names no scene
    return [clause[: cut.start()], clause[cut.start() :]]


_JOINER_ONLY = re.compile(r"\s*(?:also|and|plus|so|then|but)?[\s,]*")
"""A piece that is only the word joining its sentence to the one before ("Also, what time
would you like to leave?"): not a clause, and no question pointing back."""


_COORDINATED = re.compile(r"\b(?:and|also|plus|as well as|then|or)\b")


def restates(sentence: str, parts: list[str]) -> list[bool]:
    """For each of ``sentence``'s clauses (``parts``, in order), whether it follows the one
    before after a bare comma or colon, with no "and", "also", "plus", "then" or "or": a question
    said again in other words ("Where are you starting out from, what's your point of
    departure?"), not a second question ("Where to, and when?"). Clauses before one joined
    by "and"/"plus"/"as well as" are the items of a list ("Which attendees are optional, how
    long should it last, and do you prefer mornings?"), each a question of its own.

    Example:
        >>> restates("where from, what airport", ["where from", "what airport"])
        [False, True]
        >>> restates("where from, what airport, and when", ["where from", "what airport", "when"])
        [False, False, False]
    """
    out, joints, end = [], [], 0
    for i, part in enumerate(parts):
        start = sentence.find(part, end)
        if start < 0:
            return [False] * len(parts)
        joints.append(sentence[end:start])
        out.append(i > 0 and _COORDINATED.search(joints[-1]) is None)
        end = start + len(part)
    listed = [_LISTED.search(joint) is not None for joint in joints]
    return [again and not any(listed[i + 1 :]) for i, again in enumerate(out)]


_LISTED = re.compile(r"\b(?:and|plus|as well as)\b")
"""What joins the last item of a list to the others."""


def _scene(sentence: str) -> list[str]:
    """``sentence`` cut after a scene set before a colon ("Before we get to the due date: who
    is the recipient?"); a colon after anything else ("Window, aisle or middle: which?")
    joins what it names to the question."""
    scene, colon, question = sentence.partition(":")
    if colon and sets_context(scene) and asks(question):
        return [scene, question]
    return [sentence]


def sets_context(clause: str) -> bool:
    """Whether ``clause`` only sets the scene for a question beside it.

    A clause that opens with a subordinating word or a preposition of circumstance ("Before I
    look at fares within your budget, ...", "Aside from the policy limit, ...", "Knowing you
    prefer an evening flight, ...", "..., so I can book a room") names things as context, not
    as what it asks. The matcher reads such a clause only when nothing else in its sentence
    asks anything ("If you have a budget, what is it?"). A preposition before a question word
    still asks ("To which city?", "With what budget?"), and so does "as for" / "as to" (but
    "Besides who should attend, ..." names the attendees as context); so does a clause that
    goes on past a comma with a main clause ("To proceed, I need the meeting length"; not
    "Among Milo, Lea and Bo").

    Example:
        >>> sets_context("aside from the company policy limit"), sets_context("to which city")
        (True, False)
    """
    if sets_aside(clause):
        return True
    return _CONTEXT.match(clause) is not None and _MAIN_AFTER_COMMA.search(clause) is None


_ASIDE = re.compile(  # a clause that opens by setting its thing aside
    r"\s*(?:aside|apart|besides|setting|putting|regardless|irrespective|ignoring|except|"
    r"excluding|other\s+than|never\s+mind|not\s+counting|in\s+addition\s+to|on\s+top\s+of|"
    r"(?:leaving|leave|laying|set|put)\s+aside)\b"
)
_ASIDE_AFTER = re.compile(
    r".*\b(?:aside|apart)(?:\s+for\s+(?:now|the\s+moment|a\s+(?:moment|second|minute|bit)))?\s*$"
)
"""A thing named, then set aside ("Quantity aside, ..."), in a clause that does not ask ("What
should I set aside?")."""


def sets_aside(clause: str) -> bool:
    """Whether ``clause`` names what a question beside it is *not* about ("Setting aside the
    quantity, ...", "Quantity aside, ...", "Never mind how many for now", "Besides your
    budget, ..."). Such a clause is never read, not even when the question beside it is not
    understood: what it names is the one thing the message says it does not ask.

    Example:
        >>> sets_aside("quantity aside"), sets_aside("if you have a budget")
        (True, False)
    """
    if _MAIN_AFTER_COMMA.search(clause) is not None:
        return False
    return _ASIDE.match(clause) is not None or (
        _ASIDE_AFTER.match(clause) is not None and not asks(clause)
    )


OPENING_WORDS = (
    r"so|and|also|then|now|ok|okay|well|but|first|finally|lastly|next|just|sorry|hi|hello|"
    r"hey|thanks|great|perfect|alright|one more thing|quick question|please|kindly"
)
"""The words that may open a request without changing what it asks ("So, which days ...",
"OK so shall I ...", "Quick question: ..."), as a regular expression's alternatives."""
_OPENERS = rf"(?:(?:{OPENING_WORDS})\b[\s,:]*)*"
_WH_WORDS = r"what|when|where|who|whom|whose|why|how"
"""The question words but "which" (which has readings of its own below)."""
_ASKS = re.compile(
    rf"\s*{_OPENERS}(?:(?:by|in|on|at|for|from|to|with|under|over|via|versus)\s+)?(?:"
    r"(?:which(?!\s+(?:has|had|means|meant|costs|makes|gives|leaves|includes|requires|would\s+mean)\b)|"
    rf"{_WH_WORDS}|do|does|did|"
    r"is|are|was|were|am|can|could|would|will|shall|should|may|might|have|has|any|anything|"
    r"anyone|tell|let|give|share|provide|confirm|specify|name|list|say|mention|indicate|clarify|"
    r"advise|state|describe|remind|rank|walk|enter|note|explain|identify|send|need)\b"
    r"|(?:i|we)\s+(?:will\s+|would\s+|still\s+|also\s+|first\s+|just\s+|really\s+)*"
    r"(?:(?:need|require)(?!\s+to\s+(?!(?:know|ask|confirm|check|find\s+out|hear|learn|"
    r"understand|clarify|verify|get|have|see)\b))|must\s+know|have\s+to\s+(?:know|ask|confirm|check)"
    r"|am\s+going\s+to\s+need|(?:would\s+like|want|wanted|like)\s+to\s+(?:know|ask|confirm|"
    r"check|find\s+out|hear|learn|understand|clarify|verify|"
    r"get(?!(?:\s+[a-z]+){1,3}\s+right\b(?!\s+(?:away|now)\b))))\b"
    rf"|{_NEEDS})"
)


def asks(clause: str) -> bool:
    """Whether ``clause`` (:func:`expand`-ed text, so "whats" already reads "what is") has the
    form of a request: a question word or an inverted auxiliary ("what is", "could you"), a
    verb of asking ("tell me", "confirm"), a statement of need ("I'll need your ...", "until I
    know your dates"), after openers such as "so", "and", "please". A statement ("I'd be happy
    to help", "I want to avoid late flights", "I want to get them right") has none.

    Example:
        >>> asks("so, which days could you leave"), asks("i want to avoid late flights")
        (True, False)
    """
    return any(_ASKS.match(piece) for piece in clause.split(","))


def piece_asks(text: str, start: int, end: int) -> bool:
    """:func:`asks` of ``text[start:end]`` when that span holds no comma, without copying it
    (:class:`~stategym.kernel.understanding.sentences.Pieces` asks of every span of one
    sentence so). The request pattern looks neither behind its start nor past ``end``, so
    matching in place reads what matching the copy would (a test compares the two)."""
    return _ASKS.match(text, start, end) is not None


_EMBEDDED = re.compile(rf"\s*{_OPENERS}(?:which|{_WH_WORDS}|any|anything|anyone)\b")


_ANY = re.compile(rf"\s*{_OPENERS}any(?:thing|one|body)?\b")


def says_any(clause: str) -> bool:
    """Whether ``clause`` opens with "any" ("Any departure time works for you"): in a
    sentence that ends in no question mark, a statement of what is fine, not a request."""
    return _ANY.match(clause) is not None


def embedded(clause: str) -> bool:
    """Whether ``clause`` opens with a question word or "any" only: after the first clause
    of a sentence that is no question, such a clause is part of a statement ("Quantity
    affects the price and which vendors can supply the order.", "... your own limit as well
    as any company rules."), not a request of its own."""
    return _EMBEDDED.match(clause) is not None


_STATUS = re.compile(
    r"\s*(?:(?:i|we)\s+(?:am|are|will|have)\s+|still\s+)(?:still\s+|now\s+|just\s+|be\s+)*"
    r"(?:working|searching|checking|processing|looking\s+into|pulling\s+up|loading|gathering|"
    r"getting\s+back|get\s+back|back|on\s+it)\b"
)


def tells_status(clause: str) -> bool:
    """Whether ``clause`` reports what the agent is doing ("I'm working on it", "still
    searching", "I will get back to you"): a status update, which asks nothing and teaches
    nothing (its words, "work", "search", belong to the slots' questions too).

    Example:
        >>> tells_status("i am working on it now"), tells_status("when do you work")
        (True, False)
    """
    return _STATUS.match(clause) is not None


def tells_plans(clause: str) -> bool:
    """Whether ``clause`` says what the agent will do ("while I search", "before I book", "so
    I can add it"): context that never asks, even alone beside a message with nothing to
    answer ("Please hold on while I search.").

    Example:
        >>> tells_plans("while i search"), tells_plans("what is your budget")
        (True, False)
    """
    return _PLANS.match(clause) is not None


_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|theirs|one|ones)\b")
_DEMONSTRATIVE = re.compile(
    r"\b(?:that|this|these|those)\s+(?!(?:i|we|you|he|she|it|they|is|are|was|were|will|would|"
    r"can|could|should|may|might|must|do|does|did|has|have|had|the|a|an|one|ones|my|your|our|his|"
    r"her|their|its|right|correct|ok|okay|true|so|all)\b)[a-z]+"
)
""""that ceiling", "this code": a demonstrative before a noun (not "so that I", "is that
right", "is that your budget")."""
_BARE = frozenset(
    {"how", "much", "many", "long", "when", "where", "who", "what", "which", "and", "or", "so"}
    | {"then", "also", "exactly", "about", "one", "is", "are", "that", "early", "late", "soon"}
)
"""The words of a question that names nothing: "How much?", "And when?", "What is that?"."""


def bare(clause: str) -> bool:
    """Whether ``clause`` is nothing but question words ("How much?", "how early")."""
    found = words(clause)
    return bool(found) and all(w in _BARE for w in found)


def refers_back(clause: str) -> bool:
    """Whether ``clause`` names its topic by pointing back at what came before: a pronoun
    ("What are its dates?", "Could you share it?"), a demonstrative before a noun ("what that
    ceiling is") or nothing but question words ("How much?").

    Example:
        >>> refers_back("what are its dates"), refers_back("how much")
        (True, True)
        >>> refers_back("so that i can book, what is your budget")
        False
    """
    return bool(_PRONOUN.search(clause) or _DEMONSTRATIVE.search(clause)) or bare(clause)


def words(text: str) -> list[str]:
    """The word tokens of already expanded text (``$`` is a word: it means money)."""
    return _WORD.findall(text)
