"""Reading a message's colons: ``sentences.introduces`` reads what follows and precedes each
colon through ``sentences.Pieces``, each comma-separated piece matched once (audit 17B N1: 16
KB of ``"x: "`` took 80 ms). It must read exactly what cutting and splitting the copies read."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stategym.kernel.understanding import sentences, words
from stategym.kernel.understanding.sentences import _INTRO, _MARKER, Pieces, introduces
from stategym.kernel.understanding.words import asks

TOKENS = st.sampled_from(
    (
        "what", "is", "your", "budget", "so", "ok", "which", "has", "i", "need", "to", "know",
        "before", "we", "get", "x", "two", "questions", ",", ":", " ", ": ", ", ", "- ", "(1) ",
        "2) ", "19:45", "\u2014", "please", "tell", "me", "could", "you", "  ",
    )
)  # fmt: skip
TEXTS = st.lists(TOKENS, max_size=40).map("".join)


def _introduces_by_copies(sentence: str) -> tuple[str, str]:
    """``introduces`` as written before Pieces: each span copied, split and matched."""
    for cut in reversed(list(_INTRO.finditer(sentence))):
        rest = sentence[cut.end() :]
        rest = _MARKER.sub("", rest, count=1) if _MARKER.match(rest) else rest
        if asks(rest) or asks(sentence[: cut.start()]):
            return sentence[: cut.start()], rest
    return "", sentence


@settings(max_examples=600)
@given(TEXTS, st.data())
def test_a_span_asks_as_its_copy_does(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert Pieces(text).asks(start, end) == asks(text[start:end])


@settings(max_examples=600)
@given(TEXTS)
def test_introduces_reads_what_the_copies_read(text: str) -> None:
    assert introduces(text) == _introduces_by_copies(text)


def test_the_docstring_examples() -> None:
    for module in (sentences, words):
        assert doctest.testmod(module).failed == 0


def test_many_colons_are_read_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    # counts matches, not time: two a colon (what follows, what precedes) and one a piece
    calls = 0
    counted = words.piece_asks

    def counting(text: str, start: int, end: int) -> bool:
        nonlocal calls
        calls += 1
        return counted(text, start, end)

    monkeypatch.setattr(sentences, "piece_asks", counting)
    text = "x, x: " * 2000
    assert introduces(text) == ("", text)
    assert calls <= 2 * 2000 * 2 + 2001
