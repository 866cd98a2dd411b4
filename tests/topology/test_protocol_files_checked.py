"""Audit 13B, the protocol command's and run folder's findings F3, F4, F5, F6, F10, F11 and
F12, each reproduced through the path the auditor took: ``stategym protocol`` (with an LLM
agent stood in at the resolver seam where one is needed), ``stategym protocol --report`` and
``stategym report`` on a run folder edited by hand."""

from __future__ import annotations

import json
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from refusals import refused
from stategym.cli import main
from stategym.topology import generalisation as protocol_module

SMALL = ["--train-on", "synth:chain1+askgate+conflict", "--episodes", "1", "--probes", "1"]
SMALL += ["--compositions", "0", "--budget", "300", "--workers", "1"]


def _protocol(out: Path, agents: str, *flags: str) -> list[str]:
    return ["protocol", "--agents", agents, *SMALL, *flags, "--out", str(out)]


def _files(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}


def _copy(run: Path, to: Path) -> Path:
    return Path(shutil.copytree(run, to))


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The expert and the serial agent, one episode a cell and one probe pair a domain."""
    out = tmp_path_factory.mktemp("audit13") / "run"
    assert main(_protocol(out, "expert,serial")) == 0
    return out


@pytest.fixture
def llm_stand_in(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``openai:NAME`` agents played by the expert in this process (the protocol's resolver
    seam), with no endpoint to check; the options each was resolved with, in a list."""
    seen: list[dict[str, Any]] = []
    real = protocol_module.resolve

    def resolve(domain: Any, spec: str, **options: Any) -> Any:
        if ":" in spec:
            seen.append(options)
            return real(domain, "expert")
        return real(domain, spec)

    monkeypatch.setattr(protocol_module, "resolve", resolve)
    monkeypatch.setattr("stategym.llm.check_agent", lambda *a, **k: None)
    return seen


def _edit_json(path: Path, edit: Callable[[dict[str, Any]], object]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


# -- F3: two agents, one folder ---------------------------------------------------------


@pytest.mark.parametrize(
    "agents", ["hf:m/a,hf:m_a", "openai:m/a,openai:m_a", "openai:Qwen,openai:qwen"]
)
def test_two_agents_whose_folders_are_one_are_refused_before_anything_plays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], agents: str
) -> None:
    out = tmp_path / "run"
    refused(capsys, _protocol(out, agents), "would share the folder")
    assert not out.exists()


def test_a_run_whose_agents_share_a_folder_is_refused_by_its_readers(
    played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run written before the refusal: the second agent's files replaced the first's."""
    run = _copy(played, tmp_path / "run")
    _edit_json(run / "cells.json", lambda cells: cells.update(agents=["hf:m/a", "hf:m_a"]))
    refused(capsys, ["protocol", "--report", str(run)], "share the folder 'hf_m_a'")
    refused(capsys, ["report", str(run), "--out", str(tmp_path / "r.html")], "share the folder")


# -- F4: probe pairs are checked like every other episode -------------------------------


def _probe_lines(log: Path) -> tuple[list[dict[str, Any]], list[int]]:
    episodes = [json.loads(line) for line in log.read_text().splitlines()]
    return episodes, [i for i, e in enumerate(episodes) if e["run"]["role"] == "probe"]


def _damage_probes(log: Path, damage: Callable[[list[dict[str, Any]], list[int]], None]) -> None:
    episodes, probes = _probe_lines(log)
    assert len(probes) >= 2, "the fixture's run has a probe pair"
    damage(episodes, probes)
    log.write_text("".join(json.dumps(e) + "\n" for e in episodes if e))


def _one_task_dropped(episodes: list[dict[str, Any]], probes: list[int]) -> None:
    flipped = next(i for i in probes if episodes[i]["run"]["probe"] == "priorities_reversed")
    episodes[flipped] = {}


def _pair_dropped(episodes: list[dict[str, Any]], probes: list[int]) -> None:
    pair = (episodes[probes[0]]["meta"]["cell"], episodes[probes[0]]["meta"]["pair"])
    for i in probes:
        if (episodes[i]["meta"]["cell"], episodes[i]["meta"]["pair"]) == pair:
            episodes[i] = {}


def _set(where: str, name: str, value: object) -> Callable[[list[dict[str, Any]], list[int]], None]:
    def damage(episodes: list[dict[str, Any]], probes: list[int]) -> None:
        episode = episodes[probes[0]]
        target = episode if where == "top" else episode[where]
        if value is KeyError:
            del target[name]
        else:
            target[name] = value

    return damage


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (_one_task_dropped, "lacks 1 of"),
        (_pair_dropped, "lacks 2 of"),
        (_set("meta", "pair", "x"), "is not one of the run's probe pairs"),
        (_set("meta", "pair", KeyError), "is not one of the run's probe pairs"),
        (_set("run", "probe", None), "is not one of the run's probe pairs"),
        (_set("run", "probe", "bogus"), "is not one of the run's probe pairs"),
        (_set("top", "seed", 5), "is not one of the run's probe pairs"),
    ],
    ids=["one-task", "whole-pair", "pair-x", "no-pair", "probe-none", "probe-bogus", "seed"],
)
def test_a_probe_pair_the_run_did_not_write_is_refused_in_one_line(
    played: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[list[dict[str, Any]], list[int]], None],
    said: str,
) -> None:
    run = _copy(played, tmp_path / "run")
    _damage_probes(run / "serial" / "trajectories.jsonl", damage)
    refused(capsys, ["protocol", "--report", str(run)], said)
    refused(capsys, ["report", str(run), "--out", str(tmp_path / "r.html")], said)


# -- F5: each agent's notes ---------------------------------------------------------------


@pytest.mark.parametrize("agents", ["openai:stub,serial", "serial,openai:stub"])
def test_rereport_gives_each_agent_its_own_notes_and_the_same_bytes(
    llm_stand_in: list[dict[str, Any]], tmp_path: Path, agents: str
) -> None:
    out = tmp_path / "run"
    assert main(_protocol(out, agents, "--shots", "0,1")) == 0
    assert any("demonstrations" in options for options in llm_stand_in)  # k=1 was played
    llm = json.loads((out / "openai_stub" / "report.json").read_text())["notes"]
    scripted = json.loads((out / "serial" / "report.json").read_text())["notes"]
    assert not any("zero-shot" in note for note in llm)
    assert any("zero-shot" in note for note in scripted)
    again = _copy(out, tmp_path / "again")
    assert main(["protocol", "--report", str(again)]) == 0
    assert _files(again) == _files(out)


def test_an_older_cells_json_with_one_list_of_notes_is_still_read(
    played: Path, tmp_path: Path
) -> None:
    """A guard (it passes before the fix too): a run written when ``cells.json`` held one
    list of notes and no ``agent_notes`` is re-reported, each agent given that list."""

    def older(cells: dict[str, Any]) -> None:
        cells.pop("agent_notes", None)
        cells["notes"] = ["an older note"]

    run = _copy(played, tmp_path / "run")
    _edit_json(run / "cells.json", older)
    assert main(["protocol", "--report", str(run)]) == 0
    for agent in ("expert", "serial"):
        assert json.loads((run / agent / "report.json").read_text())["notes"] == ["an older note"]


# -- F6: evaluation seeds above the plans' and demonstrations' -----------------------------


@pytest.mark.parametrize(
    ("agents", "flags", "lowest"),
    [
        ("expert", ["--seed", "0"], 8),  # the expert's 8 plans play seeds 0-7
        ("expert", ["--seed", "7"], 8),
        ("openai:stub", ["--seed", "8", "--shots", "0,20", "--demos", "target"], 20),
        (
            "openai:stub",
            ["--seed", "9", "--shots", "20", "--train-on", "synth:base,synth:chain1"],
            10,  # 20 demonstrations round-robin from two training domains: seeds 0-9
        ),
    ],
)
def test_a_seed_below_the_plans_and_demonstrations_is_refused_naming_the_lowest(
    llm_stand_in: list[dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    agents: str,
    flags: list[str],
    lowest: int,
) -> None:
    out = tmp_path / "run"
    refused(capsys, [*_protocol(out, agents), *flags], f"give --seed {lowest} or above")
    assert not out.exists()


def test_the_lowest_seed_allowed_runs(tmp_path: Path) -> None:
    """A guard (it passes before the fix too): the bound refuses nothing above it."""
    argv = _protocol(tmp_path / "run", "serial", "--seed", "8", "--train-on", "synth:base")
    assert main([*argv, "--probes", "0"]) == 0


# -- F10: names printed as text, never as markup ------------------------------------------


def test_markup_in_an_agent_name_and_the_out_folder_is_printed_as_written(
    llm_stand_in: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run[/i]"
    argv = _protocol(out, "openai:m/a[/b]", "--train-on", "synth:base", "--probes", "0")
    assert main(argv) == 0
    printed = "".join(capsys.readouterr().out.split())  # a long path is wrapped
    assert f"wrote{out}" in printed
    assert (out / "openai_m_a__b_" / "report.json").is_file()


# -- F11: hand-broken cells.json and report.json -------------------------------------------


def _limited_memory() -> None:  # pragma: no cover - runs in the child process
    limit = 3 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_a_billion_episodes_in_cells_json_is_refused_before_anything_large_is_built(
    played: Path, tmp_path: Path
) -> None:
    """The reader works the expected episodes out instead of listing them: under a 3 GiB
    address-space limit it refuses the log in one line (it once filled the memory)."""
    run = _copy(played, tmp_path / "run")
    _edit_json(run / "cells.json", lambda cells: cells["config"].update(episodes=10**9))
    done = subprocess.run(
        [sys.executable, "-m", "stategym", "protocol", "--report", str(run)],
        capture_output=True,
        text=True,
        preexec_fn=_limited_memory,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("stategym: error:") and len(done.stderr.splitlines()) == 1
    assert "trajectories.jsonl lacks" in done.stderr


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda c: c["config"].update(shots="0"), "config 'shots'"),
        (lambda c: c["config"].update(probes=1.5), "config 'probes' is 1.5"),
        (lambda c: c["config"].update(demos="bogus"), "config 'demos' is 'bogus'"),
        (lambda c: c["config"].update(episodes=True), "config 'episodes' is True"),
        (lambda c: c["config"].update(seed=2**64 - 1, episodes=2), "past the largest seed"),
        (lambda c: c["config"].update(agent=5), "config 'agent' is 5"),
        (lambda c: c["cells"].append(c["cells"][0]), "twice"),
        (lambda c: c["cells"][0].update(exact="no"), "'exact' is 'no'"),
        (lambda c: c.update(agents=[]), "'agents'"),
        (lambda c: c.update(notes="x"), "'notes'"),
        (lambda c: c.update(agent_notes={"expert": []}), "'agent_notes'"),
    ],
)
def test_a_hand_broken_cells_json_is_refused_in_one_line_naming_the_field(
    played: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], object],
    said: str,
) -> None:
    run = _copy(played, tmp_path / "run")
    _edit_json(run / "cells.json", edit)
    refused(capsys, ["protocol", "--report", str(run)], said)


@pytest.mark.parametrize(
    ("section", "value"),
    [
        ("collapse", None),
        ("collapse", "x"),
        ("collapse", 5),
        ("collapse", []),
        ("cells", None),
        ("cells", "x"),
        ("cells", 5),
        ("cells", [5]),
        ("cells", [{"shots": "0"}]),
        ("splits", "x"),
    ],
)
def test_a_report_json_section_of_the_wrong_type_is_refused_in_one_line(
    played: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, value: object
) -> None:
    run = _copy(played, tmp_path / "run")
    _edit_json(run / "serial" / "report.json", lambda report: report.update({section: value}))
    argv = ["report", str(run), "--out", str(tmp_path / "r.html")]
    refused(capsys, argv, f"serial/report.json: '{section}'")


# -- F12: the help names only options the command takes ------------------------------------


def test_every_option_the_protocol_help_names_is_one_it_takes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The help of ``--workers`` says LLM agents play ``--concurrency`` at a time; the
    protocol once refused ``--concurrency``. (Other commands' help may name another
    command's option, as ``serve`` names ``model init --rendering``.)"""
    with pytest.raises(SystemExit):
        main(["protocol", "--help"])
    text = capsys.readouterr().out
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", text))
    taken = set(re.findall(r"^ {2}(?:-\w[^,\n]*, )?(--[a-z][a-z-]*[a-z])", text, re.MULTILINE))
    assert "--concurrency" in named and named <= taken, sorted(named - taken)


def test_protocol_takes_concurrency_and_it_changes_no_byte(played: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main([*_protocol(out, "expert,serial"), "--concurrency", "2"]) == 0
    assert _files(out) == _files(played)
