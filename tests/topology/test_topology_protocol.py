"""The generalisation protocol: splits, probes, the report, k-shot wiring, the command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from stategym.cli import main
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import SlotKind
from stategym.kernel.trajectory import read_jsonl, write_jsonl
from stategym.registry import all_domains, get_domain
from stategym.topology import generalisation as protocol_module
from stategym.topology.distance import wl_hash
from stategym.topology.generalisation import ProtocolConfig, ProtocolRun, run_protocol
from stategym.topology.graph import domain_topology
from stategym.topology.probes import flip_priorities, probes
from stategym.topology.report import Episode, build_report, collapse_index, render
from stategym.topology.split import DIFFERENT, FAR, Band, Split, make_splits

TRAIN = "synth:chain2+fanout3+askgate+verifycommit+conflict"


@pytest.fixture(scope="module")
def cells():
    return make_splits((TRAIN,), compositions_per_split=3)


def test_splits_cover_every_kind(cells) -> None:
    splits = {c.split for c in cells}
    assert splits == {Split.INSTANCES, Split.SURFACE, Split.COMPOSITION, Split.LARGER, Split.DOMAIN}
    train_hash = wl_hash(domain_topology(get_domain(TRAIN)))
    for cell in cells:
        p = cell.placement
        topology_hash = wl_hash(domain_topology(get_domain(cell.domain)))
        assert p.seen == (topology_hash == train_hash)
        if cell.split in (Split.INSTANCES, Split.SURFACE):
            assert p.band is Band.SAME and p.distance == 0.0
        if cell.split in (Split.COMPOSITION, Split.LARGER, Split.DOMAIN):
            assert not p.seen and p.distance > 0.0
        if not p.seen:
            expected = (
                Band.CLOSE
                if p.distance < DIFFERENT
                else (Band.NEAR if p.distance < FAR else Band.FAR)
            )
            assert p.band is expected
    domains = {c.domain for c in cells if c.split is Split.DOMAIN}
    assert domains == set(all_domains())
    composed = [c for c in cells if c.split is Split.COMPOSITION]
    assert len(composed) == 3 and len({c.placement.proxy for c in composed}) == 3


def test_priority_flip_changes_the_best_and_only_that() -> None:
    domain = get_domain("synth:askgate+conflict")
    pairs = probes(domain, Knobs(dynamics=False), iter(range(1000)), 8)
    assert len(pairs) == 8
    for original, flipped in pairs:
        assert set(original.truth.best).isdisjoint(flipped.truth.best)
        assert original.truth.satisfaction == flipped.truth.satisfaction
        assert original.base is flipped.base and original.request == flipped.request
        order = str(original.slot("priorities").value).split(">")
        assert str(flipped.slot("priorities").value).split(">") == order[::-1]
        back = flip_priorities(flipped)
        assert back is not None and set(back.truth.best) == set(original.truth.best)
    task = domain.generate(0, Knobs(hidden_info=False))
    assert task.slot("priorities").kind is not SlotKind.MISSING
    assert flip_priorities(task) is None


def test_priority_flip_keeps_a_poset_above_the_preferences() -> None:
    bank = get_domain("bank")  # two policies above everything: a poset, not a chain
    pairs = probes(bank, Knobs(dynamics=False), iter(range(1000)), 3)
    assert pairs
    for original, flipped in pairs:
        prefs = str(original.slot("priorities").value).split(">")
        untouched = {e for e in original.priority if not set(e) & set(prefs)}
        assert untouched and untouched <= set(flipped.priority)
        assert len(flipped.priority) == len(original.priority)
        weights = flipped.truth.weights
        assert [weights[p] for p in prefs] == sorted(weights[p] for p in prefs)


@pytest.fixture(scope="module")
def runs(cells) -> dict[str, ProtocolRun]:
    chosen = tuple(
        c for c in cells if c.split is not Split.DOMAIN or c.domain in ("travel", "lookup")
    )
    return {
        agent: run_protocol(ProtocolConfig(agent, (TRAIN,), episodes=6, probes=4, plans=3), chosen)
        for agent in ("expert", "serial")
    }


def test_expert_is_perfect_everywhere(runs) -> None:
    report = build_report(runs["expert"])
    for cell in report["cells"]:
        assert cell["composite"] == 1.0 and cell["success"] == 1.0, cell
        assert cell["serialisation"] == 0.0 and cell["unsafe_parallel"] == 0.0
        assert cell.get("attraction", 0.0) == 0.0
    for row in report["gaps"]["0"].values():
        assert all(value == 0.0 for value in row.values())
    assert report["probes"] and all(
        p["both"] == 1.0 and p["changed"] == 1.0 for p in report["probes"].values()
    )


def test_an_agent_with_one_score_everywhere_has_no_rank_correlation(runs) -> None:
    """Audit 12B F3: the expert's R is 1.0 in every cell; a rank correlation of a constant is
    undefined (null, printed "-"), not 0 (no relation) as the report said."""
    report = build_report(runs["expert"])
    assert report["score_vs_distance"]["0"]["spearman"] is None
    assert report["score_vs_distance"]["0"]["slope"] == 0.0  # defined: R does not move
    rows = dict(render(report)[2].rows)
    assert rows["R vs distance Spearman (k=0)"] == "-"
    serial = build_report(runs["serial"])["score_vs_distance"]["0"]["spearman"]
    assert isinstance(serial, float) and -1.0 <= serial <= 1.0


def test_serial_agent_differs_measurably(runs) -> None:
    expert, serial = build_report(runs["expert"]), build_report(runs["serial"])
    for split, means in serial["splits"]["0"].items():
        assert means["composite"] < expert["splits"]["0"][split]["composite"] - 0.3, split
        assert means["unsafe_parallel"] > 0.3, split
    assert all(p["both"] < 0.5 for p in serial["probes"].values())
    assert serial["collapse"]["agent"]["0"]["diversity"] < expert["collapse"]["expert"]["diversity"]


def test_report_is_computed_from_saved_logs(runs, tmp_path: Path) -> None:
    run = runs["serial"]
    path = tmp_path / "t.jsonl"
    write_jsonl(path, run.trajectories)
    again = ProtocolRun(run.config, run.cells, tuple(read_jsonl(path)), run.notes)
    assert orjson.dumps(build_report(again)) == orjson.dumps(build_report(run))


def _episode(executed_hash: str, gold_hash: str) -> Episode:
    import networkx as nx

    from stategym.topology.graph import Topology

    graph = nx.DiGraph()
    graph.add_node(0, label=executed_hash)
    return Episode("c", "s", 0, 0, {}, Topology(graph, {0: "x"}, "x"), gold_hash)


def test_collapse_index_extremes() -> None:
    template = [_episode("same", g) for g in ("g1", "g2", "g3")]
    assert collapse_index(template)["index"] == 1.0
    adapted = [_episode(g, g) for g in ("g1", "g2", "g3")]
    assert collapse_index(adapted) == {"index": 0.0, "diversity": 1.0, "episodes": 3.0}
    half = [_episode("a", "g1"), _episode("a", "g2"), _episode("b", "g3")]
    assert collapse_index(half)["index"] == pytest.approx(1 / 3)


def test_k_shot_passes_rendered_demonstrations(monkeypatch: pytest.MonkeyPatch, cells) -> None:
    seen: list[dict[str, Any]] = []
    real = protocol_module.resolve

    def spy(domain: Any, spec: str, **options: Any) -> Any:
        if ":" in spec:  # stand in for the LLM agent with the expert; keep its options
            seen.append({"domain": domain.name, **options})
            return real(domain, "expert")
        return real(domain, spec)

    monkeypatch.setattr(protocol_module, "resolve", spy)
    config = ProtocolConfig(
        "openai:any", (TRAIN,), episodes=1, shots=(0, 3), probes=0, plans=1, demos="target"
    )
    instances = tuple(c for c in cells if c.split is Split.INSTANCES or c.domain == "travel")
    run = run_protocol(config, instances)
    shots = [s for s in seen if "demonstrations" in s]
    assert len(shots) == len(instances)
    for options in shots:
        block = options["demonstrations"]
        assert block.count("### Example") == 3
        tool = get_domain(options["domain"]).tools[0].name
        assert tool in block  # demonstrations from the target domain itself
    assert {t.meta.get("shots") for t in run.trajectories if t.run.role == "agent"} == {0, 3}


def test_command_runs_and_rereports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = [
        "protocol",
        "--agent",
        "expert,serial",
        "--train-on",
        "synth:chain1+askgate+conflict",
        "--episodes",
        "2",
        "--probes",
        "1",
        "--compositions",
        "1",
        "--shots",
        "0,1",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "Agents side by side" in printed and "k-shot demonstrations need an LLM" in printed
    first = (out / "serial" / "report.json").read_bytes()
    assert main(["protocol", "--report", str(out)]) == 0
    assert (out / "serial" / "report.json").read_bytes() == first
    saved = orjson.loads((out / "cells.json").read_bytes())
    assert saved["agents"] == ["expert", "serial"] and saved["cells"]
