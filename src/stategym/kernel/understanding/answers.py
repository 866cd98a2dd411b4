"""How a ``finish`` answer is read before it is matched exactly, as QA benchmarks read one.

SQuAD-style normalisation: lower-case; drop a leading "the answer is" / "answer:" / "final
answer:" (with markdown marks around it: "**Answer:**", a heading "## Answer" on a line of its
own); drop punctuation (a full stop between digits stays: ``3.5`` is not ``35``) and the
articles ``a``, ``an``, ``the``; squeeze whitespace. ``"The answer is T123."``, ``"t123"`` and
``" T123 "`` all read ``t123``; ``"T123 or T124"`` does not, nor does any sentence around the
answer: the match is still exact, only the formatting is forgiven. :func:`match_answer` also
forgives the spaces inside an answer (option ids hold none): ``"CA17 EXP"`` names the route
``CA17EXP``, which is how the compact rendering, whose ids are handles, can write one
(``"D EXP"``, handle ``D`` read back as ``CA17``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

_PREFIX = re.compile(
    r"^[\s#*_>]*(?:(?:my|the)\s+)?(?:final\s+)?answer[\s*_]*(?:is\b|:|=|-|\n)[\s*_]*"
    r"|^\s*(?:it\s+is|it's)\s+",
    re.IGNORECASE,
)
"""The label before an answer, markdown marks around it included ("**Answer:** T123", a
heading "## Answer" on its own line)."""
_PUNCTUATION = re.compile(r"(?!(?<=\d)\.(?=\d))[^\w\s]|_")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


MEMOISED_LENGTH = 64
"""Texts up to this many characters are memoised (option ids, short answers); a longer one
is read afresh each time: the memo kept every distinct answer, up to 65,536 of 16 KB each,
for the life of the process (audit 17B F2)."""


def _memoised_when_short(read: Callable[[str], str]) -> Callable[[str], str]:
    """``read``, memoised for texts of at most :data:`MEMOISED_LENGTH` characters."""
    memo = functools.lru_cache(maxsize=1 << 16)(read)

    @functools.wraps(read)
    def reading(text: str) -> str:
        return memo(text) if len(text) <= MEMOISED_LENGTH else read(text)

    return reading


@_memoised_when_short
def normalise_answer(text: str) -> str:
    """``text`` as an exact-match benchmark compares it (see the module docstring).

    Memoised up to :data:`MEMOISED_LENGTH` characters: scoring reads every option of a task
    (a meetings task has ~130) against the answer, and the regular expressions were a tenth
    of scoring a task judged on its answer.
    """
    text = _PREFIX.sub("", text.strip())
    text = _PUNCTUATION.sub("", text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def match_answer(answer: str | None, options: Iterable[str]) -> str | None:
    """The option ``answer`` names once both are normalised (``None``: it names none)."""
    if answer is None:
        return None
    wanted = _spaceless(answer)
    return next((o for o in options if _spaceless(o) == wanted), None)


@_memoised_when_short
def _spaceless(text: str) -> str:
    """:func:`normalise_answer` without its spaces; memoised like it (scoring reads every
    option of a task against the answer)."""
    return normalise_answer(text).replace(" ", "")
