"""Where a sentence may weigh one of the user's wishes against another: the two sides of an
either-or that prefers ("rather X or Y"), of "X versus Y", of an offered trade ("Would you pay
more to arrive on time?") and of leave asked on a condition ("Should I break the budget if
the only approved vendor is pricier?"). The matcher (:meth:`.model.Matcher._weighs`) reads the
sides and decides whether they name two wishes."""

from __future__ import annotations

import re

from .features import features

_PREFERRING = frozenset({"@rather", "bad", "good"})
"""Features of an either-or that weighs its sides ("rather", "worse", "better"; not "prefer":
"Do you prefer to leave early or later on?" asks one slot)."""
_OFFER = re.compile(
    r"\bwould you (?:be willing to |accept |rather )?"
    r"(?!(?:like|prefer|mind|want|be|have|need|know|tell|say|consider|care|rather)\b)[a-z]+\b"
    r"|\b(?:acceptable|accept|willing)\b"
    r"|\b(?:is it|would you be|are you) (?:ok|okay|fine|alright)\b"
)
"""A trade offered ("would you pay ...", "is ... acceptable"), weighing if on a condition."""
_PERMISSION = re.compile(
    r"^\s*(?:if|unless)\b[^,]*,\s*(?:should|can|may|shall|could)\s+(?:i|we)\b"
    r"|^\s*(?:should|can|may|shall|could)\s+(?:i|we)\b(?=.*\s(?:if|unless)\s)"
)
"""Leave asked to act on a condition ("Should I break the budget if the only approved vendor
is pricier?", "If no option meets the grade, should I still buy one?"), weighing like an
offered trade."""
_DESPITE = re.compile(r"\b(?:still|anyway|regardless|at all)\b")
"""Acting although a wish fails ("should I still buy one?")."""
_CONFLICT = re.compile(r"\b(?:only|no|not|nothing|none|never|exceed|exceeds|miss|misses)\b")
"""A condition in which a wish fails ("if the only way ...", "if no option meets ..."): leave
asked on any other condition ("If checking is short, may I use savings?") asks a slot."""
_CONDITION = re.compile(
    r"\s+(?:if|unless|to make sure|in exchange for|as long as|even if|so that|"
    r"to (?:get|avoid|stay|keep|save|have|meet|reach|secure|make))\s+"
)
_FOR = re.compile(r"\s+for\s+(?=(?:a|an|the|your|some)\b)")
"""What an offered trade is for ("Would you go over budget for a higher grade?")."""
_VERSUS = re.compile(r"\s+(?:vs\.?|versus)\s+")


def sides(sentence: str) -> tuple[list[str], tuple[str, ...]] | None:
    """The two wishes ``sentence`` may weigh against each other, and the words that say so:
    the sides of "rather X or/than Y" ("worse", "better" alike), of "X versus Y", of an offered
    trade (its condition before it or after: "If X, would you Y?", "Would you Y if X?") or of
    leave asked on a condition (the condition second); ``None`` for none of these, or for a
    list of questions joined by "and"."""
    preferring = sorted(features(sentence) & _PREFERRING)
    for joint in (" or ", " than ") if preferring else ():
        if joint in sentence:
            return sentence.split(joint, 1), (*preferring, joint.strip())
    versus = _VERSUS.search(sentence)
    if versus is not None and "which" in sentence.split():  # "X vs Y, which one?"
        return [sentence[: versus.start()], sentence[versus.end() :]], ("versus",)
    if " and " in sentence:
        return None
    leave = _PERMISSION.search(sentence)
    if leave is not None and sentence.lstrip().startswith(("if", "unless")):
        condition, act = sentence.split(",", 1)
        weighs = _CONFLICT.search(condition) or _DESPITE.search(act)
        return ([act, condition], ("leave", "if")) if weighs else None
    offer = leave or _OFFER.search(sentence)
    if offer is None:
        return None
    comma = sentence.find(",")
    if sentence.lstrip().startswith(("if", "unless")) and 0 < comma < offer.start():
        pair = [sentence[comma + 1 :], sentence[:comma]]  # "If X, would you Y?"
    else:
        pair = _CONDITION.split(sentence, 1)
    if len(pair) != 2 and offer.group(0).startswith("would you"):  # "... for a higher grade?"
        pair = _FOR.split(sentence, 1)
    if len(pair) != 2:
        return None
    if _CONFLICT.search(pair[1]) or (leave and _DESPITE.search(pair[0])):
        return pair, ("leave", "if")  # acting although a wish fails
    return None if leave else (pair, (offer.group(0), "if"))
