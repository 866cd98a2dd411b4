"""``stategym topology``: one domain, one task, drawing, and the distance matrix."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from stategym.cli import main
from stategym.registry import get_domain
from stategym.topology import domain_topology, edit_distance, wl_hash


def test_show_draw_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg, out = tmp_path / "travel.svg", tmp_path / "travel.json"
    assert main(["topology", "travel", "--draw", str(svg), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "search_flights" in printed and "read*" in printed
    assert svg.read_text().startswith("<svg")
    data = orjson.loads(out.read_bytes())
    assert data["wl_hash"] == wl_hash(domain_topology(get_domain("travel")))


def test_task_topology(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology", "synth:chain2+askgate", "--task", "4"]) == 0
    assert "ask:limit" in capsys.readouterr().out


def test_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = ["travel", "synth:base", "synth:chain2+fanout3", "synth:chain2+fanout3@4"]
    out = tmp_path / "m.json"
    assert main(["topology", "--matrix", "--domains", ",".join(names), "--json", str(out)]) == 0
    assert "Normalised graph edit distance" in capsys.readouterr().out
    data = orjson.loads(out.read_bytes())
    ged = data["ged"]
    tops = [domain_topology(get_domain(n)) for n in names]
    for i in range(len(names)):
        assert ged[i][i] == 0.0
        for j in range(len(names)):
            assert ged[i][j] == ged[j][i] == edit_distance(tops[i], tops[j]).normalised
    assert ged[2][3] == 0.0  # a renamed surface
    assert ged[1][2] > 0.0


def test_needs_a_domain_or_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topology"]) == 2


def test_protocol_tables_fit_80_columns_and_are_written_as_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    console = Console(width=80, record=True)
    monkeypatch.setattr("rich.console.Console", lambda *a, **k: console)
    out = tmp_path / "proto"
    argv = ["protocol", "--agents", "expert,serial", "--episodes", "1", "--probes", "1"]
    assert main([*argv, "--compositions", "1", "--out", str(out)]) == 0
    text = console.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    markdown = (out / "protocol.md").read_text()
    for agent in ("expert", "serial"):
        report = orjson.loads((out / agent / "report.json").read_bytes())
        for cell in report["cells"]:
            # every cell's row, whole, in the file; its numbers on the console
            domain = cell["domain"].removeprefix("synth:")
            row = f"| {cell['split']} | {domain} | {cell['shots']} | {cell['band']} |"
            assert row in markdown
            assert f"{cell['proxy']:.2f}" in text and f"{cell['composite']:.2f}" in text
        assert f"### {agent}: collapse, score versus distance, probes" in markdown
    assert "### Agents side by side (zero-shot)" in markdown
    assert "Agents side by side (zero-shot)" in text
