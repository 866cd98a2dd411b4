"""Runs of spaces and of one punctuation mark, made short before a message is read.

Every rule of the reader is a regular expression over the message's text, and a rule that lets
whitespace match in two places next to each other (``\\s*,?\\s+also``, ``\\s*`` then
``[\\s,]*``) tries each way of sharing a run of spaces between them: a message of 16,000
spaces took a minute to read, and a run inside a sentence that weighs wishes half an hour
(audit 7a F2, F3). A run means nothing more than one space (or one line break) does, and
four of one mark nothing more than three, so :func:`compact` makes each short, once, where a
message comes in, and no rule downstream sees a long run.
"""

from __future__ import annotations

import re

_SPACES = re.compile(r"\s+")
_EMPHASIS = re.compile(r"[*_\"“”](?:\s?[*_\"“”])+")
_MARKS = re.compile(r"([^\w\s]|_)\1{3,}")
_STOPS = re.compile(r"[.?!;,:]{4,}")


def _space(match: re.Match[str]) -> str:
    return "\n" if "\n" in match.group() else " "


def _emphasis(match: re.Match[str]) -> str:
    marks = match.group()
    return marks if len(marks) <= 3 and not any(c.isspace() for c in marks) else _space(match)


def compact(text: str) -> str:
    """``text`` with each run of whitespace one space, or one line break where the run holds
    one; each run of emphasis marks and double quotes (markup the reader drops) longer than
    three, or split by spaces ("** **", "* * *", '" " "'), one space or line break; each
    run of more than three of one punctuation mark three ("!!!!!" is "!!!", a table's
    "|-------|" is "|---|"); and a run of stops and commas its first three ("?!?!?!" is
    "?!?"). Linear in the text; the identity on text with none of these.

    Example:
        >>> compact("What is   your budget?\\n\\n\\n- Window  or aisle?!!!!!")
        'What is your budget?\\n- Window or aisle?!!'
        >>> compact('**Budget:** $500 * * * " " "')
        '**Budget:** $500 '
    """
    spaced = _SPACES.sub(_space, _EMPHASIS.sub(_emphasis, _SPACES.sub(_space, text)))
    return _STOPS.sub(_first_three, _MARKS.sub(r"\1\1\1", spaced))


def _first_three(match: re.Match[str]) -> str:
    return match.group()[:3]


__all__ = ["compact"]
