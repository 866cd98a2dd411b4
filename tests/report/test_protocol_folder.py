"""A protocol run's folder holds one run (audit 11A, F3): ``stategym report`` reads only the
agents ``cells.json`` lists and refuses a report or log of another configuration, two
folders holding the same protocol episodes are refused, and ``stategym protocol`` refuses a
folder holding a run of other settings, while the same command again still rewrites the
same bytes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from refusals import refused
from stategym.cli import main

SMALL = ["--probes", "0", "--compositions", "0", "--train-on", "synth:chain1+askgate"]
SMALL += ["--budget", "300", "--workers", "1"]


def _protocol(out: Path, agents: str, episodes: int) -> list[str]:
    return ["protocol", "--agents", agents, "--episodes", str(episodes), *SMALL, "--out", str(out)]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``two``: expert and serial, one episode a cell; ``one``: the expert, two."""
    root = tmp_path_factory.mktemp("protocols")
    assert main(_protocol(root / "two", "expert,serial", 1)) == 0
    assert main(_protocol(root / "one", "expert", 2)) == 0
    return {"two": root / "two", "one": root / "one"}


def _copy(run: Path, to: Path) -> Path:
    return Path(shutil.copytree(run, to))


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _agents_shown(page: Path) -> list[str]:
    text = page.read_text()
    start = text.index("Collapse and score against distance")
    rows = text[start : text.index("</table>", start)]
    return re.findall(r"<tr><td[^>]*>([^<]+)</td>", rows)


def test_report_shows_only_the_agents_cells_json_lists(
    played: dict[str, Path], tmp_path: Path
) -> None:
    """The folder an earlier protocol run of other agents leaves behind (its ``serial/``
    was not rewritten by the run ``cells.json`` describes) shows the expert only."""
    run = _copy(played["one"], tmp_path / "run")
    shutil.copytree(played["two"] / "serial", run / "serial")
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out), "--resamples", "20"]) == 0
    assert _agents_shown(out) == ["expert"]
    assert _viewer_agents(out) == {"expert"}  # the serial's episodes are not in the viewer


def _viewer_agents(page: Path) -> set[str]:
    pattern = r'<script type="application/json" id="episode-index">(.*?)</script>'
    found = re.search(pattern, page.read_text())
    assert found is not None
    return {entry["agent"] for entry in json.loads(found.group(1))}


@pytest.mark.parametrize(
    ("stale", "said"),
    [
        ("report.json", "report.json was written with other settings than cells.json (episodes)"),
        ("trajectories.jsonl", "trajectories.jsonl lacks"),
    ],
)
def test_report_refuses_an_agent_file_of_another_configuration(
    played: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    stale: str,
    said: str,
) -> None:
    run = _copy(played["one"], tmp_path / "run")
    shutil.copyfile(played["two"] / "expert" / stale, run / "expert" / stale)  # one episode a cell
    refused(capsys, ["report", str(run), "--out", str(tmp_path / "r.html")], said)


def test_report_refuses_two_folders_of_the_same_protocol_episodes(
    played: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = _copy(played["two"], tmp_path / "copy")
    argv = ["report", str(played["two"]), str(copy), "--out", str(tmp_path / "r.html")]
    refused(capsys, argv, "of the same episodes")


def test_protocol_refuses_a_folder_holding_a_run_of_other_settings(
    played: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(played["two"], tmp_path / "run")
    before = _files(run)
    refused(capsys, _protocol(run, "expert", 2), "other settings (agents, episodes)")
    assert _files(run) == before
    # a run stopped before cells.json: its agent folders still say which settings it had
    (run / "cells.json").unlink()
    shutil.rmtree(run / "serial")
    refused(capsys, _protocol(run, "expert", 2), "other settings (episodes)")


def test_the_same_protocol_command_again_rewrites_the_same_bytes(
    played: dict[str, Path], tmp_path: Path
) -> None:
    """A guard (it passes before the fix too): the refusal keeps a re-run of the same
    command, over a finished run or one stopped half-way, allowed, with the same files."""
    run = _copy(played["two"], tmp_path / "run")
    assert main(_protocol(run, "expert,serial", 1)) == 0
    assert _files(run) == _files(played["two"])
    (run / "cells.json").unlink()  # stopped after the expert's files
    shutil.rmtree(run / "serial")
    assert main(_protocol(run, "expert,serial", 1)) == 0
    assert _files(run) == _files(played["two"])
