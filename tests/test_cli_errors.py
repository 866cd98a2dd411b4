"""Every command, given bad input, says what is wrong on one line of stderr and exits non-zero.

A user error is ``stategym: error: ...`` (or argparse's ``stategym CMD: error: ...``) and
status 2, Ctrl-C is ``stategym: interrupted`` and 130, and a bug keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import stategym.commands.list
from one_line_error import fails
from stategym.cli import COMMANDS, build_parser, main
from stategym.rundir import RunDir


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")  # never a real key, never a real endpoint


@pytest.fixture
def closed_port() -> str:
    """The base URL of a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from stategym import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"stategym {__version__}"


def test_no_command_and_unknown_options(capsys: pytest.CaptureFixture[str]) -> None:
    fails([], capsys, "COMMAND")
    fails(["nope"], capsys, "nope")
    fails(["list", "--bogus"], capsys, "--bogus")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["run", "--episodes", "abc"], ("--episodes", "expected a whole number >= 1", "'abc'")),
        (["run", "--episodes", "0"], ("--episodes", ">= 1", "'0'")),
        (["run", "--seed", "-3"], ("--seed", ">= 0")),
        (["run", "--temperature", "hot"], ("--temperature", "'hot'")),
        (["run", "--max-tokens", "1.5"], ("--max-tokens", "'1.5'")),
        (["run", "--knobs", "dynamics=maybe"], ("--knobs", "dynamics=maybe")),
        (["eval", "--samples", "0"], ("--samples", ">= 1")),
        (["eval", "--knobs", "mixedup"], ("--knobs", "mixedup")),
        (["eval", "--concurrency", "none"], ("--concurrency",)),
        (["score", "runs/x", "--resamples", "0"], ("--resamples", ">= 1", "'0'")),
        (["score", "runs/x", "--bootstrap-seed", "x"], ("--bootstrap-seed",)),
        (["score", "runs/x", "--bootstrap-seed", str(2**64)], ("--bootstrap-seed", "2**64")),
        (["report", "runs/x", "--bootstrap-seed", str(2**64)], ("--bootstrap-seed", "2**64")),
        (["eval", "--seed", str(2**64)], ("--seed", "below 2**64")),
        (["topology", "travel", "--budget", "-1"], ("--budget", ">= 1", "'-1'")),
        (["topology", "travel", "--task", "first"], ("--task", "'first'")),
        (["protocol", "--episodes", "0"], ("--episodes", ">= 1")),
        (["protocol", "--shots", "0,x"], ("--shots", "0,1,3,8")),
        (["protocol", "--probes", "-1"], ("--probes", ">= 0")),
        (["serve", "--model", "m", "--port", "70000"], ("--port", "65535")),
        (["serve", "--model", "m", "--threads", "0"], ("--threads", ">= 1")),
        (["model", "init", "--out", "m", "--steps", "abc"], ("--steps", "'abc'")),
    ],
)
def test_bad_numbers_name_the_option_and_the_form(
    argv: list[str], words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    line = fails(argv, capsys, *words)
    assert "_positive" not in line and "invalid" not in line.replace("invalid int", "")


def test_a_number_past_what_a_config_holds_leaves_the_run_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, ``score --bootstrap-seed 2**64`` rewrote ``scores.jsonl``, then failed writing
    the config (a traceback), leaving the earlier scorecard beside it (audit 11A F6)."""
    run = tmp_path / "run"
    assert main(["run", "--domain", "travel", "--episodes", "1", "--out", str(run)]) == 0
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    fails(["score", str(run), "--bootstrap-seed", str(2**64)], capsys, "--bootstrap-seed")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--out", "afile/run"],
        ["run", "--out", "afile"],
        ["eval", "--out", "afile/run"],
        ["protocol", "--out", "afile/deeper/run"],
        ["topology", "travel", "--json", "afile/t.json"],
        ["topology", "travel", "--draw", "afile/t.svg"],
    ],
)
def test_an_output_path_under_a_file_is_refused_before_playing(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path("afile").write_text("not a folder")
    fails(argv, capsys, "afile")
    assert Path("afile").read_text() == "not a folder"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--domain", "nowhere", "--episodes", "1"],
        ["eval", "--domains", "travel,nowhere", "--episodes", "1"],
        ["topology", "nowhere"],
        ["topology", "--matrix", "--domains", "travel,nowhere"],
        ["protocol", "--train-on", "nowhere", "--episodes", "1"],
    ],
)
def test_unknown_domain(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    fails(argv, capsys, "nowhere")
    assert not Path("runs/demo/trajectories.jsonl").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--agent", "nobody", "--episodes", "1"],
        ["eval", "--domains", "travel", "--agents", "expert,nobody", "--episodes", "1"],
        ["protocol", "--agents", "expert,nobody", "--episodes", "1"],
        ["protocol", "--agent", "nobody", "--episodes", "1"],  # the old spelling still works
    ],
)
def test_unknown_agent(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    fails(argv, capsys, "nobody")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--agent", "hf:does/not/exist", "--episodes", "1"],
        ["eval", "--domains", "travel", "--agents", "hf:does/not/exist", "--episodes", "1"],
        ["protocol", "--agents", "hf:does/not/exist", "--episodes", "1"],
        ["serve", "--model", "does/not/exist", "--port", "0"],
    ],
)
def test_missing_model_folder(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    fails(argv, capsys, "does/not/exist", "no model folder")
    assert not Path("runs/demo/trajectories.jsonl").exists()


def test_a_folder_without_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    Path("empty").mkdir()
    fails(["run", "--agent", "hf:empty", "--episodes", "1"], capsys, "empty", "config.json")
    Path("weights.bin").write_bytes(b"")
    fails(["serve", "--model", "weights.bin", "--port", "0"], capsys, "weights.bin")


@pytest.mark.parametrize("command", ["run", "eval", "protocol"])
def test_unreachable_endpoint_fails_at_once(
    command: str, closed_port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    agent = {"run": "--agent", "eval": "--agents", "protocol": "--agents"}[command]
    argv = [command, agent, "openai:some-model", "--base-url", closed_port, "--episodes", "1"]
    if command == "eval":
        argv += ["--domains", "travel"]
    fails(argv, capsys, "cannot reach", closed_port, "is the server running?")
    assert not Path("runs/demo/trajectories.jsonl").exists()


def test_serve_refuses_a_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        fails(["serve", "--model", "does/not/exist", "--port", port], capsys, port)


def test_score_and_protocol_report_missing_or_broken_files(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fails(["score", "nowhere"], capsys, "nowhere")
    fails(["protocol", "--report", "nowhere"], capsys, "nowhere", "cells.json")
    Path("broken").mkdir()
    Path("broken/cells.json").write_text("{not json")
    fails(["protocol", "--report", "broken"], capsys, "cells.json")
    Path("broken/trajectories.jsonl").write_text("{not json\n")
    fails(["score", "broken"], capsys, "broken")


def test_run_refuses_a_broken_trajectory_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--out", "runs/r", "--episodes", "2"]) == 0
    log = Path("runs/r/trajectories.jsonl")
    first, second = log.read_bytes().splitlines()
    log.write_bytes(first + b"\n{broken\n" + second + b"\n")
    capsys.readouterr()
    fails(["run", "--out", "runs/r", "--episodes", "2"], capsys, "trajectories.jsonl")


def test_topology_without_a_domain(capsys: pytest.CaptureFixture[str]) -> None:
    fails(["topology"], capsys, "DOMAIN", "--matrix")


def test_ctrl_c_anywhere_is_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "load", interrupted)  # Ctrl-C while a resume loads
    assert main(["run", "--out", "runs/r", "--episodes", "1"]) == 130
    assert capsys.readouterr().err.strip() == "stategym: interrupted"
    monkeypatch.setattr(stategym.commands.list, "main", interrupted)
    assert main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "stategym: interrupted"


def test_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("a bug in stategym")

    monkeypatch.setattr(stategym.commands.list, "main", broken)
    with pytest.raises(RuntimeError, match="a bug in stategym"):
        main(["list"])


def test_in_a_real_process_a_user_error_is_one_line_and_a_bug_a_traceback() -> None:
    user = subprocess.run(
        [sys.executable, "-m", "stategym.cli", "topology", "nowhere"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert user.returncode == 2
    (line,) = user.stderr.strip().splitlines()
    assert line.startswith("stategym: error: unknown domain 'nowhere'; registered: travel")
    bug = subprocess.run(
        [
            sys.executable,
            "-c",
            "import stategym.commands.list as c\n"
            "def broken(args): raise RuntimeError('a bug in stategym')\n"
            "c.main = broken\n"
            "from stategym.cli import main\n"
            "main(['list'])\n",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bug.returncode == 1
    assert "Traceback (most recent call last)" in bug.stderr
    assert bug.stderr.strip().endswith("RuntimeError: a bug in stategym")


def _actions() -> Iterator[tuple[str, argparse.Action]]:
    """Every option of every command (and sub-command), with the command's name."""
    parsers = [("stategym", build_parser())]
    while parsers:
        name, parser = parsers.pop()
        for action in parser._actions:  # argparse has no public view of its actions
            if isinstance(action, argparse._SubParsersAction):
                parsers += [(f"{name} {n}", p) for n, p in action.choices.items()]
            else:
                yield name, action


def test_every_option_states_its_default() -> None:
    missing = [
        f"{name} {action.option_strings[0]}"
        for name, action in _actions()
        if action.option_strings
        and action.help != argparse.SUPPRESS
        and action.nargs != 0  # flags: off unless given
        and action.default not in (None, argparse.SUPPRESS)
        and "default" not in (action.help or "")
    ]
    assert missing == []
    assert {name.split()[1] for name, _ in _actions() if " " in name} == set(COMMANDS)


def test_topology_budget_help_states_the_real_default() -> None:
    from stategym.commands.topology import BUDGET_HELP
    from stategym.topology.distance import EXPANSION_BUDGET

    assert f"(default: {EXPANSION_BUDGET:,})" in BUDGET_HELP


def test_one_flag_convention() -> None:
    """One value: a singular flag; a comma list: a plural one."""
    flags = {
        name: {s for a_name, a in _actions() if a_name == name for s in a.option_strings}
        for name in ("stategym run", "stategym eval", "stategym protocol")
    }
    assert {"--domain", "--agent"} <= flags["stategym run"]
    assert not {"--domains", "--agents"} & flags["stategym run"]
    assert {"--domains", "--agents"} <= flags["stategym eval"]
    assert "--agents" in flags["stategym protocol"]


def test_run_accepts_the_eval_knob_mix() -> None:
    assert main(["run", "--out", "runs/m", "--episodes", "3", "--knobs", "mixed"]) == 0
    from stategym.kernel.trajectory import read_jsonl
    from stategym.metrics.taskset import MIXED

    knobs = [t.knobs for t in read_jsonl(Path("runs/m/trajectories.jsonl"))]
    assert knobs == [MIXED[s % len(MIXED)] for s in range(3)]


@pytest.fixture
def stub_server() -> Iterator[str]:
    """``stategym serve`` over a stand-in model named ``tiny`` (the check comes first)."""
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from stategym.llm.local import LocalModel
    from stategym.llm.serve import BackgroundServer

    class Named:
        name = "tiny"

    with BackgroundServer(cast(LocalModel, Named())) as server:
        yield server.base_url


def test_serve_answers_404_for_a_model_it_does_not_serve(stub_server: str) -> None:
    import urllib.error
    import urllib.request

    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        f"{stub_server}/chat/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=10)
    assert answer.value.code == 404
    error = json.loads(answer.value.read())["error"]
    assert error["code"] == "model_not_found" and error["type"] == "invalid_request_error"
    assert "'gpt-4o'" in error["message"] and "'tiny'" in error["message"]


def test_the_endpoint_check_names_the_models_served(stub_server: str) -> None:
    pytest.importorskip("openai")
    from stategym.kernel.errors import UsageError
    from stategym.llm.openai_agent import check_endpoint

    check_endpoint("tiny", stub_server)  # served: passes
    with pytest.raises(UsageError, match="does not serve model 'gpt-4o'; it serves: tiny"):
        check_endpoint("gpt-4o", stub_server)


def test_serve_takes_a_body_limit_and_refuses_a_limit_of_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import stategym.llm.local
    import stategym.llm.serve

    fails(["serve", "--model", "m", "--port", "0", "--max-body-bytes", "0"], capsys, "body")
    served: dict[str, object] = {}
    model = type("Model", (), {"name": "m"})  # the model's loading is not what is tested
    monkeypatch.setattr(stategym.llm.local, "LocalModel", lambda *a, **k: model())
    monkeypatch.setattr(stategym.llm.serve, "run_server", lambda model, **kw: served.update(kw))
    assert main(["serve", "--model", "m", "--port", "0"]) == 0
    assert "max_body_bytes" not in served  # the server's own default
    assert main(["serve", "--model", "m", "--port", "0", "--max-body-bytes", "1024"]) == 0
    assert served["max_body_bytes"] == 1024
