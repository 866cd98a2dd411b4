"""How the matcher (:mod:`~stategym.kernel.understanding.model`) is trained.

Every phrase of a domain's table (and of the shared intents in
:mod:`~stategym.kernel.understanding.intents`) is one example of its slot or intent. An example's
features (:mod:`~stategym.kernel.understanding.features`) are its stems, the synonym sets those
stems belong to, and ``from``/``to``/``by`` bound to the word before them (``fly+from`` is the
origin, ``fly+to`` the destination). The
weight of feature ``f`` for intent ``k`` is a smoothed log-likelihood ratio,

    w(f, k) = log P(f | k) - log P(f),   P(f | k) = (n(f, k) + a) / (n(k) + 2a),

with ``n(f, k)`` the examples of ``k`` showing ``f`` and ``n(k)`` the examples of ``k``
(a slot's floored at ``-MOST_AGAINST``, a synonym set's at ``-CONCEPT_AGAINST``), then
corrected by a few mistake-driven passes. An example's clauses of context do not teach it
(:func:`without_context`). Training is a pure function of the table, so every process builds
the same model.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping

from .features import NAME_TOKEN, WORDS, features, names
from .lexicon import KEPT, QUESTION_WORDS, STOP, SYNONYMS
from .sentences import sentences
from .words import IRREGULAR, clauses, expand, sets_context, tells_status, words

SMOOTHING = 0.03
"""The ``a`` of the weights: how much a feature never seen with an intent counts against it."""
MOST_AGAINST = 2.5
"""The most (in nats) one feature counts against a slot before correction: naive Bayes makes
a word never seen with a slot count heavily against it, so one word of another topic inside a
question ("Is this your team's budget?") could veto the slot it asks."""
CONCEPT_AGAINST = 1.0
"""The most one synonym set ("@money") counts against a slot: a set is broad, and the word
that brought it counts against the slot as well ("Is this your team's budget?" must not
lose the team twice over, for "budget" and for "@money")."""
CORRECTION_PASSES = 20
"""Passes of mistake-driven correction over the training examples, whose weights are averaged
(see :func:`_correct`). On the leave-one-set-out folds of v3 to v11, averaged 8, 12, 20, 30
and 50 passes gave 122, 119, 117, 120 and 126 wrong answers (28 to 30 slots under 90%); the
last pass's weights alone, 3, 8 and 12 passes 121, 125 and 121 (27 to 32)."""
CORRECTION_MARGIN = 2.0
"""How far (in nats) an example's own intent must lead every other for no correction."""
CORRECTION_STEP = 0.25
"""What one correction moves a feature's weight for the right and the winning wrong intent."""
_VALUE = re.compile(r"[a-z]|\$?[a-z]*[0-9][a-z0-9]*")
"""A feature that is a value, not a word: a single letter ("option b") or a token with a digit
("4", "$400", "k2", "50gb"); see :func:`_taught`."""


def without_context(parts: list[str], context: list[bool], whole: str) -> str:
    """``whole`` (cut into ``parts``, ``context`` saying which only set the scene) without its
    clauses of context; ``whole`` itself when none is, or all are. A comparison named in
    context is not asked ("So I know whose calendar conflicts matter, who is optional?"), nor
    taught."""
    if all(context) or not any(context):
        return whole
    return " . ".join(part for part, scene in zip(parts, context, strict=True) if not scene)


def _example_features(phrase: str) -> frozenset[str]:
    """The features a training phrase teaches: those of what it asks ("Aside from the policy
    limit, what is your own budget?" teaches the budget "own budget", not "policy limit"),
    as the matcher reads a message."""
    named = proper_names(phrase)
    text = WORDS.sub(lambda m: NAME_TOKEN if m.group(0) in named else m.group(0), expand(phrase))
    parts = [c for s in sentences(text) for c in clauses(s) if not tells_status(c)]
    if not parts:
        return frozenset()
    return features(without_context(parts, [sets_context(c) for c in parts], " . ".join(parts)))


@functools.cache
def lexicon_words() -> frozenset[str]:
    """Every word of the lexicon: function words, question words, synonym sets, irregulars."""
    known = set(STOP) | set(KEPT) | set(IRREGULAR)
    known.update(w for key in QUESTION_WORDS for w in key)
    known.update(w for members in SYNONYMS.values() for w in members.split())
    return frozenset(known)


def proper_names(text: str) -> set[str]:
    """The names in ``text`` (:func:`~.features.names`) but the lexicon's words: a title-cased
    "International Bank Account Number" is the account number, not a name."""
    return names(text) - lexicon_words()


def vocabulary(examples: Mapping[str, tuple[str, ...]]) -> set[str]:
    """Every word the model knows: its training phrases' and the lexicon's (what a typo may be
    corrected to; see :mod:`.spelling`)."""
    known = set(lexicon_words())
    known.update(w for phrases in examples.values() for p in phrases for w in words(expand(p)))
    return known


def train(
    examples: Mapping[str, tuple[str, ...]],
    intents: tuple[str, ...],
    general: set[str],
    threshold: float,
) -> dict[str, tuple[float, ...]]:
    """Feature -> its weight for each intent (in ``intents`` order); ``threshold``: the least
    total weight at which the matcher reads an intent (corrections lift an example to it).

    The ``general`` intents are trained on phrases no domain wrote, so a feature they never
    show (a domain's word: "flight", "volume") does not count against them: their weights
    are floored at zero. A slot's are floored at ``-MOST_AGAINST``, and at
    ``-CONCEPT_AGAINST`` for a synonym set.
    """
    floor = [0.0 if k in general else -MOST_AGAINST for k in intents]
    concept_floor = [0.0 if k in general else -CONCEPT_AGAINST for k in intents]
    a = SMOOTHING
    shown: dict[str, list[int]] = {}
    sizes = [len(examples[k]) for k in intents]
    for i, intent in enumerate(intents):
        for phrase in examples[intent]:
            for f in _taught(phrase, intent in general):
                shown.setdefault(f, [0] * len(intents))[i] += 1
    total = sum(sizes)
    weights: dict[str, list[float]] = {}
    for f, counts in sorted(shown.items()):
        seen = sum(counts)
        weights[f] = list(
            max(
                low,
                math.log((c + a) / (n + 2 * a)) - math.log((seen - c + a) / (total - n + 2 * a)),
            )
            for c, n, low in zip(
                counts, sizes, concept_floor if _is_concept(f) else floor, strict=True
            )
        )
    _correct(weights, examples, intents, general, threshold)
    return {f: tuple(w) for f, w in weights.items()}


def _taught(phrase: str, general: bool) -> frozenset[str]:
    """The features ``phrase`` teaches its intent: a shared intent learns no value (a number,
    a letter: "I found 4 options, A to D; which one?" asks the agent's choice whatever the
    count or the labels), so a message of values alone ("What is your b b b?") cannot reach
    it. A slot keeps them: "You work 9 to 5, right?" is the working hours by its numbers."""
    found = _example_features(phrase)
    return frozenset(f for f in found if not _VALUE.fullmatch(f)) if general else found


def _is_concept(feature: str) -> bool:
    """Whether ``feature`` is a synonym set ("@money"), not a word or a bound pair."""
    return feature.startswith("@") and "+" not in feature


def _correct(
    weights: dict[str, list[float]],
    examples: Mapping[str, tuple[str, ...]],
    intents: tuple[str, ...],
    general: set[str],
    threshold: float,
) -> None:
    """Mistake-driven corrections of the naive Bayes weights, in place (a margin perceptron).

    Naive Bayes counts each feature on its own, so a word shared by two slots ("airport" in
    the origin's and the destination's questions) can outweigh the pair that tells them apart.
    Each pass reads every training example as the model would; where the example's own intent
    does not lead the best other one by :data:`CORRECTION_MARGIN`, or stays below
    ``threshold``, each of its features moves :data:`CORRECTION_STEP` towards its intent and away
    from that rival. The weights kept are the average of those after each pass (an averaged
    perceptron): the last pass alone swings with the last examples it corrected. Examples and
    features are visited in a fixed order, so training stays a pure function of the table.
    """
    data = []
    for y, intent in enumerate(intents):
        for phrase in examples[intent]:
            known = sorted(f for f in _taught(phrase, intent in general) if f in weights)
            if known:
                data.append((known, y))
    width = range(len(intents))
    summed = {f: [0.0] * len(intents) for f in weights}
    passes = 0
    for _ in range(CORRECTION_PASSES):
        corrected = False
        for known, y in data:
            totals = [sum(column) for column in zip(*(weights[f] for f in known), strict=True)]
            rival = max((i for i in width if i != y), key=totals.__getitem__)
            if totals[y] - totals[rival] >= CORRECTION_MARGIN and totals[y] >= threshold:
                continue
            corrected = True
            for f in known:
                weights[f][y] += CORRECTION_STEP
                weights[f][rival] -= CORRECTION_STEP
        passes += 1
        for f, column in weights.items():
            summed[f] = [s + w for s, w in zip(summed[f], column, strict=True)]
        if not corrected:
            break
    for f, column in summed.items():
        weights[f] = [s / passes for s in column]
