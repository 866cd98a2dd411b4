"""Model-facing text that follows the knobs: a sentence true only while a knob is on is
declared with the sentence that replaces it where the knob is off.

A tool's description and a domain's instructions are all the model knows of its world's
terms, and the knobs change those terms: with ``irreversible`` off a payment is refunded in
full, with ``dynamics`` off prices stay as shown and holds never expire, with ``stateful`` off
only the look-up tools are offered. A text true under one setting only would mislead the
model in exactly the setting that tests the property (audits 14d, 14e). So each such
sentence is declared once, beside the text, with its replacement::

    @tool(effect=Effect.COMMIT, when_off={"irreversible": {"Payment is final.": "..."}})

Rules, checked when the text is declared (at import for the shipped domains):

* a knob is named as :class:`~stategym.kernel.knobs.Knobs` names it;
* under every setting of the knobs named, each sentence whose knob is off is found when its
  turn comes (sentences are replaced in declaration order) and each other sentence is still
  there, so no two sentences overlap, whether of one knob or of two, and every setting's
  text is the one declared;
* a sentence is not empty and lies in one text (a tool's description and its arguments'
  texts are replaced apart); a replacement holds no declared sentence;
* a replacement may be empty (the sentence is dropped; spaces are tidied).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import fields

from stategym.kernel.knobs import Knobs

KnobSentences = tuple[tuple[str, str, str], ...]
"""``(knob, said, replacement)`` triples: ``said`` is replaced where ``knob`` is off."""

KNOB_NAMES = frozenset(f.name for f in fields(Knobs))

_SPACES = re.compile(r" {2,}")


def knob_sentences(
    owner: str, text: str, when_off: Mapping[str, Mapping[str, str]] | None
) -> KnobSentences:
    """``when_off`` (knob name -> {sentence: replacement}) as triples, once checked against
    ``text`` under every setting of the knobs it names (module docstring). ``owner`` names
    the text in the error ("tool book_and_pay").

    Raises:
        ValueError: an unknown knob; an empty sentence, or one spanning two of a tool's texts
            (its description and an argument's are replaced apart); a replacement holding a
            declared sentence (another setting would replace it); a sentence that some
            setting's earlier replacements have consumed (two sentences overlap) or that
            ``text`` does not hold.
    """
    triples = flattened(when_off)
    for knob, said, replacement in triples:
        if knob not in KNOB_NAMES:
            raise ValueError(f"{owner}: {knob!r} is not a knob (one of {sorted(KNOB_NAMES)})")
        if not said.strip() or "\n" in said:
            raise ValueError(f"{owner}: {said!r} is empty or spans two texts")
        held = [other for _, other, _ in triples if other in replacement]
        if held:
            raise ValueError(f"{owner}: the replacement {replacement!r} holds {held[0]!r}")
    knobs = sorted({knob for knob, _, _ in triples})
    for size in range(len(knobs) + 1):
        for off in itertools.combinations(knobs, size):
            where = f" once {', '.join(off)} is off" if off else ""
            left = text
            for knob, said, replacement in triples:  # in text_for's order
                if knob in off:
                    if said not in left:
                        raise ValueError(f"{owner}: {said!r} is not in its text{where}")
                    left = left.replace(said, replacement)
            for knob, said, _ in triples:
                if knob not in off and said not in left:
                    raise ValueError(f"{owner}: {said!r} is not in its text{where}")
    return triples


def flattened(when_off: Mapping[str, Mapping[str, str]] | None) -> KnobSentences:
    """``when_off`` as ``(knob, said, replacement)`` triples, unchecked (:func:`knob_sentences`
    checks them where the text is declared)."""
    return tuple(
        (knob, said, replacement)
        for knob, sentences in (when_off or {}).items()
        for said, replacement in sentences.items()
    )


def text_for(text: str, sentences: KnobSentences, knobs: Knobs) -> str:
    """``text`` as the model sees it under ``knobs``: every sentence whose knob is off replaced."""
    off = [t for t in sentences if not getattr(knobs, t[0])]
    return _replace(text, off) if off else text


def _replace(text: str, triples: list[tuple[str, str, str]] | KnobSentences) -> str:
    for _, said, replacement in triples:
        text = text.replace(said, replacement)
    return _SPACES.sub(" ", text).strip()
