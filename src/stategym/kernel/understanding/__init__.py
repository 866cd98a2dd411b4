"""How the simulated user understands the agent's questions, without an LLM.

A small, deterministic intent model (:mod:`~stategym.kernel.understanding.model`) is trained on a
domain's phrase table (each slot's phrases) and on phrases every domain shares
(:mod:`~stategym.kernel.understanding.intents`: the priority order, the agent's own choice,
"all your constraints", and messages with nothing to answer), and on labelled questions of earlier
held-out sets (:mod:`~stategym.kernel.understanding.labelled`); naive Bayes weights are then
corrected by a few mistake-driven passes (:mod:`~stategym.kernel.understanding.training`).
It reads words through stems and synonym sets (:mod:`~stategym.kernel.understanding.words`,
:mod:`~stategym.kernel.understanding.lexicon`, :mod:`~stategym.kernel.understanding.features`),
so a question reaches its slot in words the table never used; it reads each clause of a message
apart, so one message can ask several things; and it abstains below a threshold, or when two
slots nearly tie, rather than guess. Each reading keeps the features that decided it.

It reads a typo as the word meant when one word of its vocabulary is one edit away and the
typo is not itself English (:mod:`~stategym.kernel.understanding.spelling`), and it does not
read what a clause of context names ("Aside from the policy limit, what is your own
budget?" asks the budget only); a trade between two wishes ("Would you pay a higher fee to
make sure it arrives on time?", "Should I use savings if that's the only way to pay on
time?") asks the priority order (its sides found by
:mod:`~stategym.kernel.understanding.trades`). Beside a request, a statement asks nothing
("I'd be happy to book this. Which airport are you leaving from?" asks the origin only;
:func:`~stategym.kernel.understanding.model._requests_only`).

What reads the messages is a seam (:mod:`~stategym.kernel.understanding.reader`): an
environment given a :class:`ReaderSource` reads them with it instead (an LLM, in
``stategym.llm.reading``), and the user does everything else as before.

The package is kernel-level: it imports no domain, no registry and nothing heavier than the
standard library and ``pyspellchecker``'s English word list. It is measured on hand-written
questions it never sees (``benchmarks/user_understanding.py``, on the blind set
``heldout_questions_v25.json``; the first seventeen sets are training data now, and v18 to
v24 are held out as well).
"""

from __future__ import annotations

from .intents import CHOICE, NOTHING, OVERVIEW, PRIORITIES
from .model import Matcher, Reading, matcher_for
from .reader import Reader, ReaderSource, RulesBreakTies

__all__ = [
    "CHOICE",
    "NOTHING",
    "OVERVIEW",
    "PRIORITIES",
    "Matcher",
    "Reader",
    "ReaderSource",
    "Reading",
    "RulesBreakTies",
    "matcher_for",
]
