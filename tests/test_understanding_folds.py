"""The leave-one-set-out folds (``benchmarks/understanding_folds.py``) and the matcher's seam
they train through (``Matcher(phrases, general=...)``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from stategym.kernel.understanding import OVERVIEW, Matcher
from stategym.kernel.understanding.intents import GENERAL
from stategym.registry import get_domain

# benchmarks/ is a folder of scripts, not a package
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import understanding_folds as folds


def test_without_drops_the_held_out_questions_but_never_a_slots_first_phrase() -> None:
    table = {"budget": ("budget", "How much can you spend?"), "seat": ("seat", "budget")}
    held_out = frozenset({"How much can you spend?", "budget", "seat"})
    assert folds.without(table, held_out, keep_first=True) == {
        "budget": ("budget",),
        "seat": ("seat",),
    }
    assert folds.without(table, held_out, keep_first=False) == {"budget": (), "seat": ()}


def test_a_matcher_trained_without_the_overview_phrases_cannot_read_one() -> None:
    table = get_domain("travel").slot_phrases
    question = "What are all your constraints?"
    assert {r.intent for r in Matcher(table).read(question)} == {OVERVIEW}
    general = {**GENERAL, OVERVIEW: ()}
    assert OVERVIEW not in {r.intent for r in Matcher(table, general=general).read(question)}


def test_the_shared_intents_cannot_be_renamed() -> None:
    with pytest.raises(ValueError, match="shared intents"):
        Matcher({"budget": ("budget",)}, general={"something": ("else",)})


def test_a_fold_holds_out_only_its_own_questions_and_measures_every_one() -> None:
    fixtures = {k: json.loads(folds.bench.set_path(k).read_text()) for k in (1, 2, 3)}
    training = {k: folds.bench.questions(fixture) for k, fixture in fixtures.items()}
    fixture = fixtures[3]
    reading = folds.FoldReading(frozenset(training[3] - training[1] - training[2]))
    assert reading.held_out and not reading.held_out & (training[1] | training[2])
    travel = reading.reader(get_domain("travel").slot_phrases)
    assert travel is reading.reader(get_domain("travel").slot_phrases)  # trained once
    results = folds.fold(3, training)
    asked = sum(len(q) for spec in fixture["domains"].values() for q in spec["slots"].values())
    slot_rows = [
        tally
        for domain, tallies in results.items()
        for row, tally in tallies.items()
        if not row.startswith("(")
    ]
    assert sum(tally.total for tally in slot_rows) == asked


def test_a_novel_fold_measures_only_what_no_other_training_set_holds() -> None:
    """``--novel``: the fold asks the questions of its set whose plain form no other set holds
    (v3 repeats some of v1's and v2's), and every one of them."""
    bench = folds.bench
    fixtures = {k: json.loads(bench.set_path(k).read_text()) for k in (1, 2, 3)}
    training = {k: bench.questions(fixture) for k, fixture in fixtures.items()}
    seen = {bench.plain(q) for q in training[1] | training[2]}
    fixture = fixtures[3]
    asked = [q for spec in fixture["domains"].values() for _, q, _, _ in bench.cases(spec)]
    asked += fixture["unclear"]
    new = [q for q in asked if bench.plain(q) not in seen]
    assert 0 < len(new) < len(asked)
    results = folds.fold(3, training, novel=True)
    assert sum(t.total for tallies in results.values() for t in tallies.values()) == len(new)
