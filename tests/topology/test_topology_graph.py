"""Topology extraction: labels only, the plan's structure, knobs, and drawing."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from stategym.kernel.domain import Domain
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import EdgeKind
from stategym.kernel.tools import Effect
from stategym.topology.draw import draw, to_svg
from stategym.topology.graph import ABSTAIN, Link, describe, domain_topology, task_topology

ROLES = {"read", "write", "commit", "ask", "confirm", ABSTAIN, "policy", "need", "preference"}
LINKS = {link.value for link in Link}


def _labels_ok(topology) -> None:
    for _, label in topology.graph.nodes(data="label"):
        assert label.rstrip("*") in ROLES
    for *_, label in topology.graph.edges(data="label"):
        assert set(label.split("+")) <= LINKS


def test_task_topology_mirrors_the_gold_plan(domain: Domain) -> None:
    for seed in range(10):
        task = domain.generate(seed, Knobs())
        topology = task_topology(task)
        _labels_ok(topology)
        names = set(topology.names.values())
        assert {c.id for c in task.truth.calls} <= names
        assert {f"constraint:{c.id}" for c in task.constraints} <= names
        pairs = {(topology.names[u], topology.names[v]) for u, v in topology.graph.edges}
        assert {(e.src, e.dst) for e in task.truth.edges if e.src != e.dst} <= pairs
        prio = sum(1 for *_, lab in topology.graph.edges(data="label") if lab == Link.PRIO)
        assert prio == len(task.priority)
        if any(not d.should_commit for d in task.truth.decisions):
            assert ABSTAIN in topology.labels()


def test_domain_topology_has_every_offered_tool(domain: Domain) -> None:
    for knobs in (Knobs(), Knobs(stateful=False), Knobs.all_off()):
        topology = domain_topology(domain, knobs, samples=8)
        _labels_ok(topology)
        names = set(topology.names.values())
        assert {t.name for t in domain.available_tools(knobs)} <= names
        if not knobs.stateful:
            roles = {label.rstrip("*") for label in topology.labels()}
            assert not roles & {Effect.WRITE.value, Effect.COMMIT.value}


def test_hidden_information_off_removes_ask_nodes() -> None:
    from stategym.registry import get_domain

    travel = get_domain("travel")
    assert "ask" in domain_topology(travel, Knobs(), samples=16).labels()
    assert "ask" not in domain_topology(travel, Knobs(hidden_info=False), samples=16).labels()


def test_travel_searches_fan_out_and_pipe_into_the_hold() -> None:
    from stategym.registry import get_domain

    topology = domain_topology(get_domain("travel"), Knobs(), samples=8)
    index = {name: node for node, name in topology.names.items()}
    assert topology.graph.nodes[index["search_flights"]]["label"] == "read*"
    link = topology.graph.edges[index["search_flights"], index["hold_fare"]]["label"]
    assert EdgeKind.PIPE in link.split("+")
    assert any("-pipe-> search_flights" in line for line in describe(topology))


def test_svg_drawing_is_well_formed(tmp_path: Path, domain: Domain) -> None:
    topology = domain_topology(domain, Knobs(), samples=4)
    root = ElementTree.fromstring(to_svg(topology))
    circles = [e for e in root.iter() if e.tag.endswith("circle")]
    assert len(circles) == topology.graph.number_of_nodes()
    path = draw(topology, tmp_path / "t.svg")
    assert path.read_text().startswith("<svg")


def test_raster_drawing_needs_matplotlib(tmp_path: Path) -> None:
    from stategym.registry import get_domain

    topology = domain_topology(get_domain("travel"), Knobs(), samples=4)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="matplotlib"):
            draw(topology, tmp_path / "t.png")
    else:
        assert draw(topology, tmp_path / "t.png").stat().st_size > 0
