"""The viewer's call graphs: columns that respect every edge, distinct positions, provenance
edges only, and the gold nodes an episode executed."""

from __future__ import annotations

import pytest

from stategym import Env
from stategym.agents import resolve
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory, task_of
from stategym.report.graphs import executed_view, gold_done, gold_view
from stategym.rollout import run_episode
from stategym.topology.executed import executed_topology


def _play(domain: str, agent: str, seed: int) -> Trajectory:
    env = Env(domain)
    return run_episode(env, resolve(env.domain, agent), seed)


@pytest.fixture(scope="module")
def meetings() -> Trajectory:
    """An expert episode of a meetings task: 30-plus gold nodes and executed calls."""
    return _play("meetings", "expert", 3)


def _check_layout(view: dict) -> None:
    nodes, edges = view["nodes"], view["edges"]
    assert len({(n[2], n[3]) for n in nodes}) == len(nodes)  # no two nodes on one spot
    assert {n[2] for n in nodes} == set(range(len(view["columns"])))  # no empty column
    for column in range(len(view["columns"])):
        rows = sorted(n[3] for n in nodes if n[2] == column)
        assert rows == list(range(len(rows)))  # stacked from the top, no gaps
    for src, dst, _ in edges:
        assert nodes[src][2] < nodes[dst][2]  # every edge runs left to right


def test_the_executed_graph_has_a_column_per_round_and_provenance_edges(
    meetings: Trajectory,
) -> None:
    view = executed_view(meetings, task_of(meetings))
    _check_layout(view)
    graph = executed_topology(meetings)
    assert len(view["nodes"]) == graph.graph.number_of_nodes() >= 30
    rounds = [int(title.removeprefix("round ")) for title in view["columns"]]
    assert rounds == sorted(set(rounds)) and set(rounds) <= {r.index for r in meetings.rounds}
    kinds = {k for *_, kind in view["edges"] for k in kind.split("+")}
    assert kinds and kinds <= {"pipe", "gate"}  # "next" (the schedule) is left out
    assert all(n[4] == "gold" for n in view["nodes"])  # the expert's calls are all in gold
    assert any(n[0].startswith("lookup_person P") for n in view["nodes"])  # gold's argument


def test_the_gold_graph_puts_each_node_after_its_longest_chain(meetings: Trajectory) -> None:
    task = task_of(meetings)
    view = gold_view(task)
    _check_layout(view)
    assert len(view["nodes"]) == len(task.truth.calls) >= 30
    column = {c.id: view["nodes"][i][2] for i, c in enumerate(task.truth.calls)}
    for edge in task.truth.edges:
        assert column[edge.dst] >= column[edge.src] + 1
    sources = {c.id for c in task.truth.calls} - {e.dst for e in task.truth.edges}
    assert {column[s] for s in sources} == {0}
    assert gold_done(task, meetings) == list(range(len(task.truth.calls)))  # expert: all


def test_a_serial_agent_misses_the_questions_and_calls_outside_gold() -> None:
    trajectory = _play("travel", "serial", 0)
    task = task_of(trajectory)
    done = set(gold_done(task, trajectory))
    asks = {i for i, c in enumerate(task.truth.calls) if c.tool == "ask"}
    assert asks and not asks & done  # it never asks
    assert done  # but it ran some of the gold reads
    view = executed_view(trajectory, task)
    assert {n[4] for n in view["nodes"]} == {"gold", "extra"}
    assert len(view["columns"]) == len({n[2] for n in view["nodes"]})


class SeatAsker:
    """Asks about the seat (an irrelevant slot), then asks the budget, then finishes."""

    name = "seat-asker"

    def __init__(self, task: Task) -> None:
        self.said = 0

    def act(self, observation: Observation) -> Action:
        self.said += 1
        if self.said == 1:
            return Say("Which seat would you like, window or aisle?")
        if self.said == 2:
            return Say("What is your budget?")
        return CallBatch((ToolCall("finish", {"answer": "nothing booked"}),))


def test_asking_what_gold_never_asks_is_extra() -> None:
    trajectory = run_episode(Env("travel"), SeatAsker, 0)
    task = task_of(trajectory)
    asks = [n for n in executed_view(trajectory, task)["nodes"] if n[1] == "ask"]
    assert [(text, state) for text, _, _, _, state, _ in asks] == [
        ("ask seat", "extra"),
        ("ask budget", "gold"),
    ]
    budget = next(i for i, c in enumerate(task.truth.calls) if c.id == "ask:budget")
    assert budget in gold_done(task, trajectory)
