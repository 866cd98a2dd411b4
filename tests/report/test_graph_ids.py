"""The viewer's executed graph pairs each node with its own call, whatever the ids: ids
restarting every round, or one id repeated inside a batch, draw the nodes, gold matches and
edges of the same play with unique ids; a repeated id is told apart in the tooltip by its
place in the batch (audit 11A F1)."""

from __future__ import annotations

import pytest

from renamed_ids import Rename, nodes_of, one_id, play, ran, renamed, restarting
from stategym.kernel.trajectory import Trajectory, task_of
from stategym.report.graphs import executed_view

EPISODES = [("travel", "expert", 0), ("bank", "expert", 2), ("shop", "expert", 5)]
"""Scripted episodes with parallel batches of different tools, each matching its own gold
node (a mispaired call shows another call's gold match)."""


@pytest.fixture(scope="module", params=EPISODES, ids=lambda e: "-".join(map(str, e)))
def episode(request: pytest.FixtureRequest) -> Trajectory:
    return play(*request.param)


def _same_gold(title: str, other: str) -> bool:
    """Whether two tooltips name the same tool and gold match after the call's id (either
    may be cut at the tooltip's length)."""
    mine, theirs = title.partition(": ")[2], other.partition(": ")[2]
    return mine.startswith(theirs) or theirs.startswith(mine)


@pytest.mark.parametrize("rename", [restarting, one_id], ids=["restarting", "one-id"])
def test_each_node_is_paired_with_its_own_call(episode: Trajectory, rename: Rename) -> None:
    reused = renamed(episode, rename)
    task = task_of(episode)
    unique, view = executed_view(episode, task), executed_view(reused, task)
    assert view["columns"] == unique["columns"] and view["edges"] == unique["edges"]
    assert [n[:5] for n in view["nodes"]] == [n[:5] for n in unique["nodes"]]
    for node, same in zip(view["nodes"], unique["nodes"], strict=True):
        assert _same_gold(node[5], same[5]), (node[5], same[5])
    assert len(view["nodes"]) == nodes_of(reused)  # no call lost


def test_a_repeated_id_is_told_apart_by_its_place_in_the_batch(episode: Trajectory) -> None:
    reused = renamed(episode, one_id)
    titles = [n[5] for n in executed_view(reused, task_of(reused))["nodes"]]
    for record in reused.rounds:
        for count, (place, call) in enumerate(ran(record)):
            which = f"call_0 (#{place + 1} of the batch)" if count else "call_0"
            prefix = f"round {record.index}, {which}: {call.name}"
            assert sum(t.startswith(prefix) for t in titles) == 1, prefix
