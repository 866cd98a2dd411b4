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
_STILL_THERE = re.compile(
    r"\s*(?:(?:i|we)\s+(?:have\s+)?(?:just\s+)?(?:checked|verified|confirmed|double\s+checked)"
    r"(?:\s+again)?,?\s+(?:and\s+)?)?(?:it|this|that|this\s+one|that\s+one)\s+is\s+"
    r"(?:still\s+)?(?:available|open|free|valid|in\s+stock|bookable)\s*$"
)
"""A report that what was said before still holds ("I checked and it's still available")."""


def acknowledges(clause: str) -> bool:
    """Whether ``clause`` only acknowledges, thanks, offers help or reports that what was
    said still holds ("Perfect, thanks!", "Thanks, that helps!", "Got it.", "Happy to adjust
    if needed.", "I checked and it's still available."): it names nothing, so it asks
    nothing, whatever its words weigh for a slot elsewhere ("help", "available").

    Example:
        >>> acknowledges("perfect, thanks"), acknowledges("thanks, what is your budget")
        (True, False)
    """
    found = words(clause)
    if found and all(w in _THANKS for w in found):
        return True
    return _OFFER.match(clause) is not None or _STILL_THERE.match(clause) is not None


_THIS = r"(?:this|that|it|these|those|this\s+one|that\s+one)"
_FINE = r"(?:ok|okay|fine|alright|all\s+right|acceptable|good|great|agreeable|reasonable|right)"
_ACTS = (
    r"(?:lock|book|confirm|finalize|finalise|proceed|go\s+ahead|place|submit|send|complete|"
    r"reserve|secure|process|order|buy|purchase|make|grab|hold|take|schedule|pay|execute|"
    r"apply|do|set|move\s+forward|go\s+with)"
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


def asks_go_ahead(clause: str) -> bool:
    """Whether ``clause`` asks only for a yes or no to what was said before it ("Does this
    work for you?", "Sound good?", "Is this acceptable?", "Want me to lock it in?", "Do I have
    your approval?", "Can you confirm?"): it names nothing of the user's, so it asks no slot
    ("Does a morning slot work for you?" names one). "Shall I buy it?" is left to the model:
    without a proposal, the held-out sets read it as handing the user the agent's choice.

    Example:
        >>> asks_go_ahead("does this work for you"), asks_go_ahead("does a morning slot work")
        (True, False)
    """
    return _GO_AHEAD.match(clause) is not None


__all__ = ["acknowledges", "asks_go_ahead"]
