"""Helpers the simulated user's understanding tests share: how a domain's matcher reads a
message, and the held-out benchmark as a module."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from stategym.kernel.understanding import matcher_for
from stategym.registry import get_domain


def reached(name: str, text: str) -> set[str]:
    """The slots and intents the domain's matcher reads ``text`` as asking."""
    table = get_domain(name).slot_phrases
    return {r.intent for r in matcher_for(table).read(text) if r.intent is not None}


@functools.cache
def benchmark() -> ModuleType:
    """``benchmarks/user_understanding.py``, imported by path (it is a script, not a module),
    once: every test reads the same module, and its cached training questions."""
    path = Path(__file__).parents[1] / "benchmarks" / "user_understanding.py"
    spec = importlib.util.spec_from_file_location("user_understanding", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_BENCHMARK = benchmark()
SYNTHETIC: str = _BENCHMARK.SYNTHETIC
"""The synthetic domain the benchmark measures."""
BLIND: int = _BENCHMARK.BLIND
"""The number of the held-out set that is blind now: the benchmark's default set."""
HELD_OUT: tuple[int, ...] = _BENCHMARK.HELD_OUT
"""The sets measured and not trained on (v18 to the blind set)."""
TRAINED: tuple[int, ...] = _BENCHMARK.TRAINED
"""The sets the matcher trains on (v1 to v17)."""
plain = _BENCHMARK.plain
"""A question as the sets are compared: contractions expanded, words stemmed, no "?"."""
trained_questions = _BENCHMARK.trained_questions
"""The plain form of every question and message of the sets the matcher trains on."""
