"""A regression floor for the simulated user on the third, blind held-out set.

``tests/fixtures/heldout_questions_v3.json`` was written from the slots' meanings only, without
reading the matcher, its phrase tables or the earlier sets, which are its training data now
(``questions.json``). It was measured once, after the matcher's last change
(``python benchmarks/user_understanding.py --fixture tests/fixtures/heldout_questions_v3.json``);
the floors below sit ten points under that. They catch a regression; they do not certify the
goal (>= 90% on every slot, no wrong answer), which this set shows is not met.
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
BLIND = ROOT / "tests" / "fixtures" / "heldout_questions_v3.json"
SYNTHETIC = "synth:chain2+askgate3+conflict"  # the synthetic domain the benchmark measures

# Pooled slot-question rate per domain as measured, minus ten points.
DOMAIN_FLOORS = {
    "travel": 0.77,  # measured 102/117 = 87%
    "meetings": 0.77,  # measured 102/117 = 87%
    "shop": 0.73,  # measured 87/104 = 84%
    "bank": 0.81,  # measured 107/117 = 91%
    "cloud": 0.83,  # measured 73/78 = 94%
    "lookup": 0.67,  # measured 50/65 = 77%
    "synthetic": 0.81,  # measured 71/78 = 91%
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
    """Measured: mean slot rate 87.6% over 52 slots, the lowest slot 6/13 = 46% (shop item);
    24 slots under 90%."""
    slots = [t for rows in results.values() for row, t in rows.items() if not row.startswith("(")]
    assert len(slots) == 52
    assert all(t.rate >= 0.36 for t in slots)
    assert sum(t.rate for t in slots) / len(slots) >= 0.77
    for name, floor in DOMAIN_FLOORS.items():
        plain = [t for row, t in results[name].items() if not row.startswith("(")]
        assert sum(t.right for t in plain) / sum(t.total for t in plain) >= floor, name


def test_wrong_answers_stay_below_the_measured_ceiling(results: dict[str, Any]) -> None:
    """Measured: 68 wrong answers over every kind of question (54 of them to slot questions).
    A wrong answer reveals a slot the agent did not ask for, so it is worse than a miss."""
    wrong = sum(t.wrong for rows in results.values() for t in rows.values())
    assert wrong <= 85


@pytest.mark.parametrize(
    ("row", "floor"),
    [
        ("(compound)", 0.64),  # measured 23/31 = 74%
        ("(priorities)", 0.84),  # measured 85/90 = 94%
        ("(open)", 0.78),  # measured 43/49 = 88%
    ],
)
def test_other_kinds_of_question_stay_above_the_measured_floor(
    results: dict[str, Any], row: str, floor: float
) -> None:
    tallies = [rows[row] for rows in results.values() if row in rows and rows[row].total]
    assert sum(t.right for t in tallies) >= floor * sum(t.total for t in tallies)


def test_unclear_messages_stay_above_the_measured_floor(results: dict[str, Any]) -> None:
    """Measured: 9/12 = 75% of off-topic or gibberish messages reach nothing."""
    assert results["(all)"]["(unclear)"].rate >= 0.65
