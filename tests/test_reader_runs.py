"""Long runs of spaces or marks cost the reader nothing more than one (audit 7a).

The reader's rules are regular expressions; several let whitespace match in two places next
to each other and backtracked over every way of sharing a long run between them (16,000
spaces: a minute; a run inside a sentence that weighs wishes: about half an hour). Where a
message comes in, :func:`~stategym.kernel.understanding.spacing.compact` makes every run
short, so these tests pin that no rule downstream sees a long run, and that a run means what
one space means. Time itself is measured by ``benchmarks/reader_worst_case.py``, never here.
A sentence whose clauses are all empty (",") once raised ``IndexError`` out of ``step``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stategym import Env, Knobs, Say
from stategym.kernel.understanding import matcher_for, sentences
from stategym.kernel.understanding.spacing import compact
from stategym.kernel.user import SimulatedUser
from stategym.registry import all_domains, get_domain

FIXTURES = Path(__file__).parent / "fixtures"
_LONG_RUN = re.compile(r"\s\s|([^\w\s]|_)\1{3}|[*_\"“”]\s[*_\"“”]|[*_\"“”]{4}|[.?!;,:]{4}")


def _questions(version: int) -> list[tuple[str, str]]:
    """``(domain, question)`` of a held-out set: every string under each domain."""
    data = json.loads((FIXTURES / f"heldout_questions_v{version}.json").read_text())
    out: list[tuple[str, str]] = []
    for domain, held in data["domains"].items():
        stack: list[object] = [held]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append((domain, item))
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return out


@given(st.text(alphabet=' \t\n\u3000*_"-.;:?!|#ab', max_size=200))
def test_compact_leaves_no_long_run_and_is_idempotent(text):
    once = compact(text)
    assert _LONG_RUN.search(once) is None
    assert compact(once) == once
    assert len(once) <= len(text)


def test_compact_is_the_identity_on_the_held_out_questions():
    """Ordinary questions have no run: the benchmarks' figures cannot move."""
    questions = _questions(25)
    assert len(questions) > 500
    assert [q for _, q in questions if compact(q) != q] == []


@pytest.mark.parametrize("name", ["travel", "meetings", "shop", "bank", "cloud"])
def test_a_run_reads_as_one_space(name):
    matcher = matcher_for(get_domain(name).slot_phrases)
    for domain, question in _questions(25)[::7]:
        if domain != name:
            continue
        padded = question.replace(" ", "    \t ").replace("?", "?\n\n\n")
        assert matcher.read(padded) == matcher.read(question), question


@pytest.mark.parametrize(
    "run",
    [
        *(" " * 5000, "\t" * 5001, "\u3000" * 5002, "** " * 2000, "\n* " * 2001, ";" * 5003),
        *('" ' * 2002, "*_" * 2003, "?!" * 2004),
    ],
    ids=[
        *("spaces", "tabs", "ideographic", "bold", "bullets", "semicolons", "quotes"),
        *("marks", "stops"),
    ],
)
def test_no_rule_of_the_reader_sees_a_long_run(monkeypatch, run):
    """Every sentence the matcher cuts, and every text the proposal reader reads, is free of
    long runs, whatever the agent sent (before: the runs reached every rule as sent)."""
    seen: list[str] = []
    cut = sentences.questions

    def spy(text: str, **kwargs: bool) -> list[tuple[str, bool]]:
        seen.append(text)
        return cut(text, **kwargs)

    monkeypatch.setattr("stategym.kernel.understanding.model.questions", spy)
    domain = get_domain("travel")
    user = SimulatedUser(domain.generate(0, Knobs()), domain.slot_phrases)
    tag = len(run)  # a text no other case sends: the matcher caches what it read
    for text in (
        f"What is your budget for trip {tag}{run}?",
        f"Which matters more to you on trip {tag}{run}x, the price or the time?",
        f"I propose AQ449 for trip {tag}.{run}ok",
    ):
        user.respond(text)
    assert seen and all(_LONG_RUN.search(text) is None for text in seen)


@pytest.mark.parametrize("name", sorted(all_domains()))
@pytest.mark.parametrize(
    "text", [",", " , ", ",,", "- ,", "1. ,", "**,**", ", also ,", ", plus ,", "( )", "—", ":"]
)
def test_a_message_of_empty_clauses_is_not_understood(name, text):
    env = Env(name)
    env.reset(seed=0)
    env.step(Say(text))
    turn = env.trajectory.rounds[-1].user
    assert turn is not None and not turn.understood


def _dashes_joined_by_hand(pieces: list[str]) -> list[str]:
    """The rule of ``sentences._dashes_joined``, written the plain (quadratic) way."""
    pieces = list(pieces)
    i = 1
    while i < len(pieces) - 1:
        if sentences._DASH.fullmatch(pieces[i]) and not sentences._leads_in(pieces[i - 1]):
            pieces[i - 1 : i + 2] = [pieces[i - 1] + pieces[i] + pieces[i + 1]]
        else:
            i += 2
    return pieces


_PIECES = st.sampled_from(
    ["quick question", "got it", "what is your budget", "x", "", "before i search"]
)
_ENDS = st.sampled_from([" \u2014 ", " \u2013 ", "? ", ". ", " - "])


@given(st.lists(st.tuples(_ENDS, _PIECES), max_size=8), _PIECES)
def test_dashes_are_joined_as_the_plain_rule_joins_them(pairs, first):
    """Kept in parts (linear: a run of dashes once took seconds), the join is the rule's."""
    pieces = [first, *(p for pair in pairs for p in pair)]
    assert sentences._dashes_joined(pieces) == _dashes_joined_by_hand(pieces)


def test_a_word_longer_than_any_in_the_vocabulary_is_no_typo(monkeypatch):
    """Its one-letter deletes (quadratic in its length: a 16,000-letter word took seconds)
    are never built: no word of the vocabulary is one edit from it."""
    from stategym.kernel.understanding import spelling

    built: list[int] = []
    deletes = spelling._deletes

    def counted(word: str) -> set[str]:
        built.append(len(word))
        return deletes(word)

    monkeypatch.setattr(spelling, "_deletes", counted)
    speller = spelling.Speller(["budget", "origin"])
    built.clear()
    assert speller.correct("b" * 5000) is None
    assert speller.correct("budjet") == "budget"
    assert built == [6]
