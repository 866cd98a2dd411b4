"""The gold tables' reachability shortcut agrees with the definition it replaces."""

from __future__ import annotations

import pytest

from stategym.metrics.gold import _descendants, _independent, gold_of
from stategym.metrics.taskset import MIXED
from stategym.registry import all_domains, get_domain


def _naive(children: dict[str, set[str]], required: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """The definition: required nodes with no path to or from each required node."""
    reach = {n: _descendants(n, children) for n in children}
    return {
        n: frozenset(m for m in required if m != n and m not in reach[n] and n not in reach[m])
        for n in required
    }


@pytest.mark.parametrize("name", list(all_domains()))
def test_independent_matches_the_definition_on_generated_tasks(name: str) -> None:
    domain = get_domain(name)
    for seed in range(12):
        task = domain.generate(seed, MIXED[seed % len(MIXED)])
        gold = gold_of(task)
        children: dict[str, set[str]] = {c.id: set() for c in task.truth.calls}
        for edge in task.truth.edges:
            if edge.src in children and edge.dst in children:
                children[edge.src].add(edge.dst)
        expected = _naive(children, gold.required)
        assert dict(gold.independent) == expected
        assert gold.pairs == sum(len(v) for v in expected.values()) // 2


def test_independent_handles_cycles_chains_and_isolated_nodes() -> None:
    # a -> b -> c -> a is a cycle; d hangs off c; e and f touch nothing
    children = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": set(), "f": set()}
    required = ("a", "b", "d", "e", "f")
    found, pairs = _independent(tuple(children), children, required)
    assert found == _naive(children, required)
    assert found["a"] == {"e", "f"}
    assert found["e"] == {"a", "b", "d", "f"}
    assert pairs == 7
