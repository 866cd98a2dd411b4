"""Typos read as the word meant, when the meaning is not in doubt.

A word the matcher has never seen weighs nothing, so "Whats your budjet?" reads as
"what is your" and is not understood. :class:`Speller` reads such a word as the one word of
the matcher's vocabulary it is one edit away from (a letter added, dropped, changed, or two
neighbours swapped: ``budjet`` -> ``budget``, ``orgin`` -> ``origin``, ``agneda`` ->
``agenda``), under three rules that keep a real word from being bent into a slot:

- only words of :data:`SHORTEST` letters or more, and none with a digit (ids, amounts);
- never a word of English: a word in the English word list of ``pyspellchecker`` (a maintained
  frequency dictionary of about 160,000 words) is what it says, even if the matcher does not
  know it ("untouched" stays "untouched", "organ" stays "organ");
- only when every candidate shares one stem ("dayz" is "day" or "days": one stem); two
  meanings in reach ("meny": "many" or "menu") read as neither.

The vocabulary is the matcher's own (the words of its training phrases and of the lexicon),
so a correction always lands on a word with weights; it lands only on an English word or one
of the lexicon's, never on a typo a labelled question happened to contain. Everything is
deterministic: the same word list (pinned in ``constraints.txt``) gives the same corrections.
"""

from __future__ import annotations

import functools
from collections.abc import Container, Iterable

from .words import stem

SHORTEST = 5
"""The fewest letters a word needs before it is read as a typo of another."""


@functools.cache
def _english() -> Container[str]:
    """The English word list (its own dictionary, not copied), loaded once, on the first
    typo candidate (about 0.4 s)."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1).word_frequency.dictionary


def _deletes(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


class Speller:
    """One-edit typo correction onto a fixed vocabulary (see the module docstring).

    Args:
        vocabulary: the words a correction may land on, if English (labelled questions hold
            typos too: "budjet" is known, but nothing is corrected to it).
        trusted: words a correction may land on though no English word list holds them
            (the lexicon's own).

    Example:
        >>> speller = Speller(["budget", "origin", "agenda"])
        >>> speller.correct("budjet"), speller.correct("orgin"), speller.correct("agneda")
        ('budget', 'origin', 'agenda')
        >>> speller.correct("organ") is None  # English: not a typo
        True
    """

    def __init__(self, vocabulary: Iterable[str], trusted: Iterable[str] = ()) -> None:
        self.vocabulary = frozenset(w for w in vocabulary if w.isalpha())
        self.trusted = frozenset(trusted)
        self._longest = max((len(w) for w in self.vocabulary), default=0) + 1
        """The longest word one edit (a letter added) from the vocabulary."""
        self._by_delete: dict[str, set[str]] = {}
        for word in sorted(self.vocabulary):
            if len(word) >= SHORTEST - 1:
                for gone in _deletes(word):
                    self._by_delete.setdefault(gone, set()).add(word)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - a speller lives as long as its matcher
    def correct(self, word: str) -> str | None:
        """The vocabulary word ``word`` is a typo of, or ``None`` (known, English, or in doubt)."""
        if len(word) < SHORTEST or len(word) > self._longest or not word.isalpha():
            return None  # one edit from no word of the vocabulary (a long run's deletes:
            # quadratic in its length, audit 7a)
        if word in self.vocabulary:
            return None
        deletes = _deletes(word)
        found = set(self._by_delete.get(word, ()))  # a letter dropped
        found.update(deletes & self.vocabulary)  # a letter added
        for gone in deletes:  # a letter changed, or two swapped
            found.update(self._by_delete.get(gone, ()))
        if not found:
            return None
        english = _english()
        found = {w for w in found if w in english or w in self.trusted}
        if len({stem(w) for w in found}) != 1 or word in english:
            return None
        return min(found)
