"""Sentences that name nothing of the user's: thanks, offers, and requests for a yes or no.

Beside a proposal or alone, such a sentence asks no slot, whatever its words weigh for one
elsewhere ("help", "available", "work"): :func:`acknowledges` and :func:`asks_go_ahead` let
the matcher (:mod:`~stategym.kernel.understanding.model`) and the proposal reader
(:mod:`stategym.kernel.proposals`) set it aside.
"""

from __future__ import annotations

import re

from .words import words

_THANKS = frozenset(
    {"thanks", "thank", "you", "so", "very", "much", "a", "lot", "for", "the", "that", "this"}
    | {"it", "is", "all", "perfect", "great", "good", "excellent", "wonderful", "awesome", "ok"}
    | {"fantastic", "nice", "cool", "okay", "alright", "sure", "got", "understood", "noted"}
    | {"helps", "helped", "helpful", "appreciate", "appreciated", "sounds", "makes", "sense"}
    | {"clear", "oh", "ah", "yes", "yeah", "of", "course", "absolutely", "hello", "hi", "hey"}
    | {"there", "info", "information", "details", "answer", "answers", "reply", "quick"}
)
"""The words of an acknowledgement ("Perfect, thanks!", "Thanks, that helps!", "Got it.")."""
_OFFER = re.compile(
    r"\s*(?:(?:i|we)\s+(?:am|are|would\s+be|will\s+be)\s+)?(?:(?:very|more\s+than)\s+)?"
    r"(?:happy|glad|willing|ready)\s+to\s+(?:help|assist|adjust|change|tweak|revise|modify|"
    r"update|look\s+again|search\s+again|make\s+changes)"
    r"(?:\s+(?:it|this|that|things|anything|further|more))?"
    r"(?:\s+(?:if|as|when)\s+(?:needed|necessary|required|you\s+(?:like|wish|want|prefer)))?\s*$"
)
"""An offer to help or change the plan, with nothing in it to answer."""
_MORE_HELP = re.compile(
    r"\s*(?:(?:please|just|do|so|and|feel\s+free\s+to)[\s,]+)*(?:"
    r"(?:let\s+me\s+know|tell\s+me|reach\s+out|shout)\s+if\s+(?:there\s+is|you\s+(?:need|want"
    r"|would\s+like|have))\s+(?:anything|something)\s+(?:else|more)(?:\s+(?:from\s+me|i\s+can\s+do))?"
    r"|if\s+(?:you\s+(?:need|want|would\s+like)|there\s+is)\s+(?:anything|something)\s+(?:else|more)"
    r",?\s+(?:just\s+|please\s+)?(?:let\s+me\s+know|tell\s+me|reach\s+out|ask)"
    r"|(?:is\s+there\s+)?(?:anything|something)\s+else\s+(?:i|we)\s+can\s+(?:help|assist|do)"
    r"(?:\s+(?:you\s+)?with|\s+for\s+you)?"
    r")\s*$"
)
"""An offer of more help once the work is done ("Let me know if you need anything else!",
"Anything else I can help with?"): it asks for nothing the user holds. "Anything else I
should know?" asks for the user's wishes, and is no offer."""
_CLOSING_OFFER = re.compile(
    r"\s*(?:(?:please|just|do|so|and|feel\s+free\s+to)[\s,]+)*(?:"
    r"(?:can|may|could|shall)\s+(?:i|we)\s+(?:help|assist)\s+(?:you\s+)?(?:with\s+)?"
    r"(?:anything|something)\s+else"
    r"|(?:can|may|could)\s+(?:i|we)\s+do\s+(?:anything|something)\s+else(?:\s+for\s+you)?"
    r"|what\s+else\s+can\s+(?:i|we)\s+(?:help\s+(?:you\s+)?with|do\s+for\s+you"
    r"|assist\s+(?:you\s+)?with)"
    r"|would\s+you\s+like\s+(?:help|me\s+to\s+help(?:\s+you)?)\s+with\s+(?:anything|something)"
    r"\s+else"
    r"|is\s+there\s+(?:anything|something)\s+else\s+you(?:'d|\u2019d|\s+would)\s+like\s+"
    r"(?:me\s+to\s+help(?:\s+you)?\s+with|help\s+with)"
    r"|(?:let\s+me\s+know|tell\s+me)\s+if\s+you\s+have\s+any\s+(?:other\s+|more\s+|further\s+)?"
    r"questions?"
    r"|(?:do\s+you\s+have\s+)?any\s+(?:other\s+|more\s+|further\s+)?questions?"
    r"|(?:do\s+you\s+)?need\s+(?:any\s+)?help\s+with\s+(?:anything|something)\s+(?:else|more)"
    r"|(?:is\s+there\s+)?(?:anything|something)\s+(?:further|more)"
    r"(?:\s+(?:you\s+need|(?:i|we)\s+can\s+do(?:\s+for\s+you)?))?"
    r"|(?:is\s+that|will\s+that\s+be)\s+(?:all|everything)"
    r")(?:\s+(?:for\s+)?today)?\s*$"
)
"""Closing offers of more help that, before anything is done, still ask something ("Any
questions?" asks for objections to a proposal, "What else can I do for you?" what the user
wants): once the act is done they ask nothing ("I've booked AQ449. Let me know if you have
any questions.", "Can I help you with anything else today?": audit 19C F6, 19D F4). Stop
51: read as questions after the booking, "Do you need help with anything else?" and
"Anything further?" asked travel's seat, meetings' working hours or synth's extra even
with a full stop; "Is that all for today?", "Is there anything more you need?" did so
joined to the report by a comma or a dash (audit 28 F5)."""


_EDGES = re.compile(r"^\W+|\W+$")


def offers_more_help(sentence: str) -> bool:
    """Whether ``sentence`` (any case, with its marks) offers more help once the work is done:
    :data:`_MORE_HELP` or :data:`_CLOSING_OFFER`."""
    clause = _EDGES.sub("", sentence.lower())
    return _MORE_HELP.match(clause) is not None or _CLOSING_OFFER.match(clause) is not None


_STILL_THERE = re.compile(
    r"\s*(?:(?:i|we)\s+(?:have\s+)?(?:just\s+)?(?:checked|verified|confirmed|double\s+checked)"
    r"(?:\s+again)?,?\s+(?:and\s+)?)?(?:it|this|that|this\s+one|that\s+one)\s+is\s+"
    r"(?:still\s+)?(?:available|open|free|valid|in\s+stock|bookable)\s*$"
)
"""A report that what was said before still holds ("I checked and it's still available")."""


_A_GOOD_TIME = (
    r"(?:a\s+|an\s+)?(?:(?:great|good|nice|wonderful|lovely|safe|fantastic|pleasant|productive"
    r"|excellent)\s+)+(?:day|trip|flight|journey|week|weekend|evening|morning|afternoon|time"
    r"|meeting|stay|one)"
)
_FAREWELL = re.compile(
    r"\s*(?:(?:and|so|please|i\s+hope\s+you)\s+)*(?:"
    rf"have\s+{_A_GOOD_TIME}(?:,?\s+and\s+(?:have\s+)?{_A_GOOD_TIME})*"
    r"|enjoy\s+(?:your|the)\s+(?:trip|flight|journey|weekend|stay|meeting|new\s+\w+)"
    r"|safe\s+travels|bon\s+voyage|take\s+care)\s*$"
)
"""A farewell ("Have a great day!", "Have a wonderful trip and a great week!", "Enjoy your
trip!", "Safe travels!"): it asks nothing ("day" in it is no question about the dates: audit
19E O1; two wishes joined by "and": 20A F4)."""


def acknowledges(clause: str) -> bool:
    """Whether ``clause`` only acknowledges, thanks, offers help or reports that what was
    said still holds ("Perfect, thanks!", "Thanks, that helps!", "Got it.", "Happy to adjust
    if needed.", "Let me know if you need anything else!", "I checked and it's still
    available."): it names nothing, so it asks nothing, whatever its words weigh for a slot
    elsewhere ("help", "available").

    Example:
        >>> acknowledges("perfect, thanks"), acknowledges("thanks, what is your budget")
        (True, False)
    """
    found = words(clause)
    if found and all(w in _THANKS for w in found):
        return True
    return any(p.match(clause) is not None for p in (_OFFER, _MORE_HELP, _STILL_THERE, _FAREWELL))


_THIS = r"(?:this|that|it|these|those|this\s+one|that\s+one)"
_FINE = r"(?:ok|okay|fine|alright|all\s+right|acceptable|good|great|agreeable|reasonable|right)"
_ACTS = (
    r"(?:lock|book|confirm|finalize|finalise|proceed|go\s+ahead|place|submit|send|complete|"
    r"reserve|secure|process|order|buy|purchase|make|grab|hold|take|schedule|pay|execute|"
    r"apply|do|set|move\s+forward|go\s+with|delete|remove|transfer|invite|check\s+out)"
)
_GO_AHEAD = re.compile(
    r"\s*(?:so|and|ok|okay|then|well)?[\s,]*(?:"
    rf"(?:(?:does|do|would|will|could|can|did)\s+)?(?:{_THIS}\s+)?"
    r"(?:work|works|sound|sounds|look|looks|seem|seems|suit|suits)"
    rf"(?:\s+(?:like\s+a\s+plan|{_FINE}))?(?:\s+(?:to|for|with))?(?:\s+you)?"
    rf"|(?:is|are|would|will)\s+{_THIS}\s+(?:be\s+)?{_FINE}(?:\s+(?:to|for|with)\s+you)?"
    r"|(?:are|would)\s+you\s+(?:be\s+)?(?:ok|okay|fine|happy|good|alright|satisfied|"
    rf"comfortable)\s+with\s+{_THIS}"
    r"|(?:do|can|may)\s+(?:i|we)\s+(?:have|get)\s+your\s+(?:approval|go\s+ahead|ok|okay|"
    r"consent|sign\s+off|permission|blessing|confirmation|agreement)"
    r"|(?:(?:do\s+you\s+)?want|would\s+you\s+like)\s+(?:me|us)\s+to\s+"
    rf"(?:go\s+ahead\s+and\s+)?{_ACTS}(?:\s+{_THIS})?"
    r"(?:\s+(?:in|up|through|now|today|for\s+you|right\s+away))*"
    rf"|(?:(?:can|could|would|will)\s+you\s+)?(?:please\s+)?(?:confirm|approve|agree)"
    rf"(?:\s+{_THIS})?(?:,?\s+and\s+(?:i|we)\s+will\s+{_ACTS}(?:\s+{_THIS})?)?"
    r")\s*$"
)
_OBJECT = (
    rf"(?:{_THIS}|them|everything|(?:the|this|that|your)\s+(?:option|choice|plan|proposal|booking|"
    r"order|reservation|invitation|invite|meeting|transfer|payment|purchase|deletion|volume|"
    r"flight|ticket|fare|offer|route|cart|change|request))"
)
"""The proposed act's object, in words that name nothing of the user's ("it", "the order")."""
_ACT_ON = (
    rf"{_ACTS}(?:\s+{_OBJECT})?"
    r"(?:\s+(?:in|up|through|now|today|for\s+you|right\s+away|straight\s+away))*"
)
_THEN_I_ACT = rf",?\s+(?:and|then)\s+(?:i|we)(?:'ll|’ll|\s+will|\s+can|\s+shall)\s+{_ACT_ON}"
"""What the agent will do on the go-ahead ("and I'll book it", "then we will go ahead")."""
_BEFORE_I_ACT = rf"\s+before\s+(?:(?:i|we)\s+(?:can\s+)?{_ACT_ON}|\w+ing(?:\s+{_OBJECT})?)"
"""The act an objection is asked before ("before I place the order", "before booking")."""
GO_AHEAD_REQUEST = (
    r"(?:(?:so|and|ok|okay|then|well|please|if\s+you\s+are\s+happy)[\s,]+)*(?:"
    r"(?:(?:just|simply)\s+)?(?:(?:say|give\s+me)\s+the\s+word"
    r"|(?:give|send)\s+(?:me|us)\s+(?:the|a|your)\s+(?:green\s+light|go[\s-]*ahead"
    r"|thumbs[\s-]*up|nod|ok|okay|signal)"
    r"|(?:reply|respond|answer|say|type|write)\s+(?:with\s+)?(?:a\s+)?['\"“‘]?(?:yes|ok|okay|go)"
    r"['\"”’]?(?:\s+to\s+(?:confirm|proceed|go\s+ahead))?)"
    rf"(?:{_THEN_I_ACT})?"
    rf"|(?:just\s+)?let\s+me\s+know(?:{_THEN_I_ACT}|\s+if\s+(?:i|we)\s+(?:should|can|may)\s+{_ACT_ON})"
    r"|(?:(?:do|would)\s+you\s+have\s+|(?:just\s+)?let\s+me\s+know\s+if\s+you\s+have\s+"
    r"|(?:are|is)\s+there\s+)?any\s+(?:(?:last|final|other|further)\s+)?(?:concerns?|objections?"
    rf"|questions?|reservations?|doubts?|worries|hesitations?)(?:{_BEFORE_I_ACT})?"
    r"|(?:(?:a|the|your)\s+)?(?:green\s+light|thumbs[\s-]*up|go[\s-]*ahead)"
    r")"
)
"""A request for the go-ahead, or for an objection, to the act proposed ("Just say the word
and I'll book it.", "Give me the green light.", "Just reply yes.", "Let me know and I'll place
the order.", "Any concerns before I send the invitation?"): it names nothing of the user's, so
it asks no slot. The pattern, not a compiled one, so :data:`stategym.kernel.go_aheads.CONFIRMING`
reads a whole sentence beside a proposal with the same words ("Any concerns about the budget?"
and "Any preference for the fare type before I book?" name a slot and are none)."""
_REQUEST = re.compile(rf"\s*{GO_AHEAD_REQUEST}\s*$", re.IGNORECASE)


def asks_go_ahead(clause: str) -> bool:
    """Whether ``clause`` asks only for a yes or no to what was said before it ("Does this
    work for you?", "Sound good?", "Is this acceptable?", "Want me to lock it in?", "Do I have
    your approval?", "Can you confirm?", or a request for the go-ahead, :data:`GO_AHEAD_REQUEST`:
    "Just say the word."): it names nothing of the user's, so it asks no slot
    ("Does a morning slot work for you?" names one). "Shall I buy it?" is left to the model:
    without a proposal, the held-out sets read it as handing the user the agent's choice.

    Example:
        >>> asks_go_ahead("does this work for you"), asks_go_ahead("does a morning slot work")
        (True, False)
    """
    return _GO_AHEAD.match(clause) is not None or _REQUEST.match(clause) is not None


__all__ = ["GO_AHEAD_REQUEST", "acknowledges", "asks_go_ahead", "offers_more_help"]
