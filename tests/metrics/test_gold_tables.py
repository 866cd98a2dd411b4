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


def test_independent_matches_the_definition_on_random_graphs() -> None:
    # acyclic graphs take the one-pass closure, graphs with a back edge the search from
    # every node; both must give the definition's answer
    import random

    rng = random.Random(14)
    for trial in range(300):
        size = rng.randint(1, 14)
        ids = [f"n{i}" for i in range(size)]
        children: dict[str, set[str]] = {n: set() for n in ids}
        for i in range(size):
            for j in range(size):
                if (i < j or trial % 3 == 0) and rng.random() < 0.2:
                    children[ids[i]].add(ids[j])
        required = tuple(n for n in ids if rng.random() < 0.7)
        found, pairs = _independent(tuple(ids), children, required)
        expected = _naive(children, required)
        assert found == expected
        assert pairs == sum(len(v) for v in expected.values()) // 2
