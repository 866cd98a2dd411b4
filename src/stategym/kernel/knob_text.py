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
* each sentence occurs in the text, and still occurs whatever the *other* knobs replaced,
  so a sentence depends on one knob only and every setting's text is the one declared
  (two knobs' sentences may not overlap);
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
    ``text`` (module docstring). ``owner`` names the text in the error ("tool book_and_pay").

    Raises:
        ValueError: an unknown knob, or a sentence ``text`` does not hold under some setting
            of the other knobs.
    """
    triples = flattened(when_off)
    for knob, _, _ in triples:
        if knob not in KNOB_NAMES:
            raise ValueError(f"{owner}: {knob!r} is not a knob (one of {sorted(KNOB_NAMES)})")
    knobs = sorted({knob for knob, _, _ in triples})
    for size in range(len(knobs)):
        for off in itertools.combinations(knobs, size):
            replaced = _replace(text, [t for t in triples if t[0] in off])
            for knob, said, _ in triples:
                if knob not in off and said not in replaced:
                    where = f" once {', '.join(off)} is off" if off else ""
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
