"""Short handles for entity ids (``AQ449`` -> ``A``), for the compact rendering.

An *entity id* is a run of letters, digits, ``_`` and ``-`` that holds at least one letter and
one digit (``AQ449``, ``H1``, ``K1-5304``, ``INV4000``): what tiny from-scratch models fail to
copy. Airport codes, numbers and times have no letter-and-digit mix and stay as they are, and
so do time-zone offsets (``UTC-5``: the user says them). Each new id gets the next handle,
globally and in order of appearance: ``B``, ``C``, … ``Z``, then ``BB``, ``BC``, … A handle is
never a word a model writes in capitals: no handle holds ``A`` or ``I`` (a model's reply that
starts "A quick question" is a question, not a proposal of the first id), and the words and
abbreviations in :data:`WORDS` (``OK``, ``NO``, ``PM``, ``GB``…) are skipped.

The mapping is exact both ways. In rendered text a backslash escapes: ``\\\\`` is a literal
backslash, and ``\\B`` is the literal word ``B`` where ``B`` is a handle in use; so
``decode(encode(text)) == text`` for every text.
"""

from __future__ import annotations

import re
from itertools import count, product
from string import ascii_uppercase

_RUN = r"[A-Za-z0-9_-]+"
_ENCODE = re.compile(rf"\\|({_RUN})")
_DECODE = re.compile(rf"\\\\|\\({_RUN})|({_RUN})")
_LETTER = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"[0-9]")
_OFFSET = re.compile(r"(?:UTC|GMT)-[0-9]{1,2}")
_ALPHABET = [c for c in ascii_uppercase if c not in "AI"]  # the words "A" and "I"
_ENGLISH = "BE BY DO GO HE ME MY NO OF OK ON OR SO TO UP US WE THE YES YOU NOT FOR BUT OUT NOW"
_ABBREVIATIONS = "PM UK EU TV PC OS VM GB TB MB KB CC FX HQ PS VP DC NY SF CPU GPU SSD HDD"
_ZONES_AND_CURRENCIES = "UTC GMT CET EST PST USD EUR GBP JPY CHF CNY SEK NOK DKK"
WORDS = frozenset(f"{_ENGLISH} {_ABBREVIATIONS} {_ZONES_AND_CURRENCIES}".split())
"""Capitalised words and abbreviations a model may write (units, currencies, time zones):
never handles, so a reply that writes them means them."""


def is_entity(run: str) -> bool:
    """A run of id characters that mixes letters and digits, other than a time-zone offset
    (``UTC-5``; ``UTC+2`` is no run: ``+`` is not an id character)."""
    return bool(_LETTER.search(run) and _DIGIT.search(run)) and not _OFFSET.fullmatch(run)


def _names() -> list[str]:
    # Enough for any episode; generated once.
    names: list[str] = []
    for width in count(1):
        names.extend(
            name for name in map("".join, product(_ALPHABET, repeat=width)) if name not in WORDS
        )
        if len(names) > 20_000:
            return names
    raise AssertionError("unreachable")


_NAMES = _names()


class Handles:
    """One episode's id <-> handle table; it grows as new ids are rendered."""

    def __init__(self, plain: frozenset[str] = frozenset()) -> None:
        self._handle: dict[str, str] = {}
        self._entity: dict[str, str] = {}
        self._plain = plain
        """Ids written as they are, never given a handle: names the model writes itself
        (a synthetic domain's ``get_key_1``, ``key_2``), which an error quotes."""

    def __len__(self) -> int:
        return len(self._handle)

    def handle(self, entity: str) -> str:
        """The entity's handle, assigning the next one if it is new."""
        found = self._handle.get(entity)
        if found is None:
            found = _NAMES[len(self._handle)]
            self._handle[entity] = found
            self._entity[found] = entity
        return found

    def entity(self, handle: str) -> str | None:
        """The id behind a handle (``None``: not a handle in use)."""
        return self._entity.get(handle)

    def encode(self, text: str) -> str:
        """``text`` with ids replaced by handles and literal handles escaped."""
        for match in _ENCODE.finditer(text):  # assign first, so escapes see every handle
            if match.group(1) and self._is_id(match.group(1)):
                self.handle(match.group(1))
        return _ENCODE.sub(self._encode_one, text)

    def _is_id(self, run: str) -> bool:
        return is_entity(run) and run not in self._plain

    def _encode_one(self, match: re.Match[str]) -> str:
        run = match.group(1)
        if run is None:
            return "\\\\"
        if self._is_id(run):
            return self._handle[run]
        return "\\" + run if run in self._entity else run

    def decode(self, text: str) -> str:
        """The inverse of :meth:`encode`; unknown handles and stray backslashes stay as text."""
        return _DECODE.sub(self._decode_one, text)

    def _decode_one(self, match: re.Match[str]) -> str:
        escaped, run = match.group(1), match.group(2)
        if escaped is not None:
            return escaped if escaped in self._entity else "\\" + escaped
        if run is None:
            return "\\"
        return self._entity.get(run, run)
