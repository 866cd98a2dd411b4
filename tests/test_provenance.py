"""Provenance: the first origin of every observed scalar, and how arguments resolve to it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stategym import Env, Knobs
from stategym.agents import scripted
from stategym.kernel.provenance import Origin, Provenance, Source
from stategym.rollout import run_episode

FIRST = Origin(Source.TOOL, 0, "c0_0")
LATER = Origin(Source.USER, 3, "budget")


def test_the_first_origin_of_a_value_is_kept() -> None:
    provenance = Provenance()
    provenance.observe({"id": "F1", "rows": [{"price": 300, "ok": True}, (7, None)]}, FIRST)
    provenance.observe(["F1", 300, "F2", 1.5], LATER)
    assert provenance.first == {"F1": FIRST, 300: FIRST, 7: FIRST, "F2": LATER, 1.5: LATER}


def test_booleans_and_none_carry_no_provenance() -> None:
    provenance = Provenance()
    provenance.observe([True, False, None, {"x": None}], FIRST)
    assert provenance.first == {}
    assert provenance.resolve({"flag": True, "name": "nobody"}) == {"name": None}


def test_lists_are_as_grounded_as_their_least_grounded_item() -> None:
    provenance = Provenance()
    provenance.observe("a", FIRST)
    provenance.observe("b", LATER)
    assert provenance.resolve({"ids": ["a", "b"]}) == {"ids": LATER}
    assert provenance.resolve({"ids": ["a", "guess"]}) == {"ids": None}
    assert provenance.resolve({"ids": []}) == {"ids": None}


@given(
    st.recursive(
        st.integers() | st.text(max_size=5) | st.booleans() | st.none(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_every_scalar_inside_a_value_is_observed(value: object) -> None:
    provenance = Provenance()
    provenance.observe(value, FIRST)

    def scalars(item: object) -> list[object]:
        if isinstance(item, dict):
            return [s for v in item.values() for s in scalars(v)]
        if isinstance(item, list):
            return [s for v in item for s in scalars(v)]
        return [] if item is None or isinstance(item, bool) else [item]

    assert set(provenance.first) == set(scalars(value))
    copy = provenance.copy()
    copy.observe("fresh value", LATER)
    assert "fresh value" not in provenance.first


def test_the_expert_passes_only_grounded_ids_to_commits() -> None:
    """Travel's expert never guesses: each id it holds or pays was returned by a tool."""
    env = Env("travel", knobs=Knobs(dynamics=False))
    for seed in range(30):
        trajectory = run_episode(env, scripted(env.domain, "expert"), seed)
        for record in trajectory.rounds:
            for item in record.calls:
                if item.name in ("hold_fare", "book_and_pay"):
                    (origin,) = item.sources.values()
                    assert origin is not None and origin.source is Source.TOOL
                    assert origin.round < record.index
