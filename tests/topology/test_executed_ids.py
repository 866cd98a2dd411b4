"""The executed graph identifies a call by its round and place in the batch, not by its id:
ids restarting every round, or one id repeated inside a batch, give the graph and WL hash
of the same play with unique ids, and unique ids keep the graphs stored runs had (audit 11A
F1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from renamed_ids import Rename, nodes_of, one_id, play, ran, renamed, restarting
from stategym.kernel.provenance import Source
from stategym.kernel.trajectory import Trajectory, read_jsonl
from stategym.topology.distance import wl_hash
from stategym.topology.executed import executed_topology
from stategym.topology.graph import Topology

EPISODES = [
    ("travel", "expert", 0),
    ("travel", "all-parallel", 1),
    ("bank", "expert", 2),
    ("meetings", "expert", 3),
    ("shop", "expert", 5),
]
"""Scripted episodes with parallel batches whose results later calls pipe from, some from a
call past the first of its batch (the case a repeated id makes ambiguous)."""


@pytest.fixture(scope="module", params=EPISODES, ids=lambda e: "-".join(map(str, e)))
def episode(request: pytest.FixtureRequest) -> Trajectory:
    return play(*request.param)


def _shape(topology: Topology) -> tuple[list[tuple[int, str]], list[tuple[int, int, str]]]:
    """Nodes and edges with their labels, by node number (insertion order), names left out:
    the ids are in the names, nothing else of them is."""
    graph = topology.graph
    return list(graph.nodes(data="label")), sorted(graph.edges(data="label"))


def _uses_a_batch(trajectory: Trajectory) -> bool:
    """Whether some call takes a value first shown by a batch of several calls that ran, at
    a place past the first (what ids restarting at ``call_0``, or repeated, make ambiguous)."""
    ran_in = {r.index: ran(r) for r in trajectory.rounds}
    ids_past_first = {(index, call.id) for index, calls in ran_in.items() for _, call in calls[1:]}
    return any(
        origin is not None
        and origin.source is Source.TOOL
        and (origin.round, origin.ref) in ids_past_first
        for record in trajectory.rounds
        for call in record.calls
        for origin in call.sources.values()
    )


@pytest.mark.parametrize("rename", [restarting, one_id], ids=["restarting", "one-id"])
def test_reused_ids_give_the_graph_of_unique_ids(episode: Trajectory, rename: Rename) -> None:
    assert _uses_a_batch(episode)  # the case is there: a batch that later calls use
    reused = renamed(episode, rename)
    unique, executed = executed_topology(episode), executed_topology(reused)
    assert _shape(executed) == _shape(unique)
    assert wl_hash(executed) == wl_hash(unique)
    assert len(set(executed.names.values())) == executed.graph.number_of_nodes()
    assert executed.graph.number_of_nodes() == nodes_of(reused)  # no call merged or lost


def test_a_repeated_id_is_named_by_its_place_in_the_batch(episode: Trajectory) -> None:
    reused = renamed(episode, one_id)
    names = set(executed_topology(reused).names.values())
    for record in reused.rounds:
        calls = ran(record)
        expected = [f"r{record.index}:call_0:{call.name}" for _, call in calls[:1]]
        expected += [f"r{record.index}.{place}:call_0:{call.name}" for place, call in calls[1:]]
        assert set(expected) <= names, record.index


V1_FIXTURE = Path(__file__).parents[1] / "fixtures" / "trajectories_v1.jsonl"
STORED_HASHES = [
    "288fd0fc26913f487317fb2bc038a0b0",
    "e4b8090c5c877685e1b1296d4005a933",
    "f2ef510b6914efcf51ddeec6f9fb4918",
    "7cc41325f709b7b8832993b20460e42b",
    "88773f305bd761863ea175065d61dd60",
]
"""WL hashes of the executed graphs of the stored trajectories, as the executed graph keyed
by call id alone computed them: stored protocol results depend on them."""


def test_unique_ids_keep_the_graphs_stored_runs_had() -> None:
    trajectories = list(read_jsonl(V1_FIXTURE))
    assert [wl_hash(executed_topology(t)) for t in trajectories] == STORED_HASHES
    for trajectory in trajectories:
        names = set(executed_topology(trajectory).names.values())
        for record in trajectory.rounds:
            assert {f"r{record.index}:{c.id}:{c.name}" for _, c in ran(record)} <= names
