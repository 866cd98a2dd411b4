"""A regression floor for the simulated user on the second, blind held-out set.

``tests/fixtures/heldout_questions_v2.json`` was written without reading the matcher, its
phrase tables or the first held-out set, so, unlike ``heldout_questions.json``, nothing was
tuned against it. The floors below sit ten points under what was measured when it was written
(``python benchmarks/user_understanding.py --fixture tests/fixtures/heldout_questions_v2.json``):
they catch a regression, they do not certify the goal (>= 90% on every slot, no wrong answer),
which this set shows is not met yet.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from stategym import Knobs
from stategym.registry import get_domain

ROOT = Path(__file__).parents[1]
BLIND = ROOT / "tests" / "fixtures" / "heldout_questions_v2.json"
SYNTHETIC = "synth:chain2+askgate3+conflict"  # the synthetic domain the benchmark measures

# Pooled slot-question rate per domain as measured, minus ten points.
DOMAIN_FLOORS = {
    "travel": 0.84,  # measured 110/117 = 94%
    "meetings": 0.74,  # measured 98/117 = 84%
    "shop": 0.78,  # measured 92/104 = 88%
    "bank": 0.83,  # measured 109/117 = 93%
    "cloud": 0.86,  # measured 75/78 = 96%
    "lookup": 0.70,  # measured 52/65 = 80%
    "synthetic": 0.84,  # measured 73/78 = 94%
}


def _benchmark() -> ModuleType:
    path = ROOT / "benchmarks" / "user_understanding.py"
    spec = importlib.util.spec_from_file_location("user_understanding", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return _benchmark().measure(json.loads(BLIND.read_text()))


def test_the_blind_set_covers_every_slot_of_every_domain() -> None:
    """At least twelve questions for every slot the benchmark's users hold, so a rate per slot
    means something; the slots are read from the domains, not from the fixture."""
    fixture = json.loads(BLIND.read_text())
    assert set(fixture["domains"]) == set(DOMAIN_FLOORS)
    for name, spec in fixture["domains"].items():
        domain = get_domain(SYNTHETIC if name == "synthetic" else name)
        held = {s.name for seed in range(200) for s in domain.generate(seed, Knobs()).slots}
        held -= {"priorities"}
        assert set(spec["slots"]) == held, name
        assert all(len(qs) >= 12 for qs in spec["slots"].values()), name


def test_slot_questions_stay_above_the_measured_floor(results: dict[str, Any]) -> None:
    """Measured: mean slot rate 90.1% over 52 slots, the lowest slot 8/13 = 61.5% (meetings
    window, lookup other); 20 slots under 90%."""
    slots = [t for rows in results.values() for row, t in rows.items() if not row.startswith("(")]
    assert len(slots) == 52
    assert all(t.rate >= 0.5 for t in slots)
    assert sum(t.rate for t in slots) / len(slots) >= 0.80
    for name, floor in DOMAIN_FLOORS.items():
        plain = [t for row, t in results[name].items() if not row.startswith("(")]
        assert sum(t.right for t in plain) / sum(t.total for t in plain) >= floor, name


def test_wrong_answers_stay_below_the_measured_ceiling(results: dict[str, Any]) -> None:
    """Measured: 64 wrong answers over every kind of question (47 of them to slot questions).
    A wrong answer reveals a slot the agent did not ask for, so it is worse than a miss."""
    wrong = sum(t.wrong for rows in results.values() for t in rows.values())
    assert wrong <= 80


@pytest.mark.parametrize(
    ("row", "floor"),
    [
        ("(compound)", 0.83),  # measured 29/31 = 94%
        ("(priorities)", 0.70),  # measured 72/90 = 80%
        ("(open)", 0.63),  # measured 36/49 = 73%
    ],
)
def test_other_kinds_of_question_stay_above_the_measured_floor(
    results: dict[str, Any], row: str, floor: float
) -> None:
    tallies = [rows[row] for rows in results.values() if row in rows and rows[row].total]
    assert sum(t.right for t in tallies) >= floor * sum(t.total for t in tallies)


def test_unclear_messages_stay_above_the_measured_floor(results: dict[str, Any]) -> None:
    """Measured: 8/12 = 67% of off-topic or gibberish messages reach nothing."""
    assert results["(all)"]["(unclear)"].rate >= 0.57
