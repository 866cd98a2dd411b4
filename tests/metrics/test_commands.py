"""``stategym eval`` and ``stategym score`` end to end in a temporary directory."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import orjson
import pytest
from rich.console import Console

import stategym.commands.eval as eval_command
import stategym.commands.score as score_command
from stategym.cli import build_parser, main
from stategym.kernel.env import Env
from stategym.kernel.errors import TrajectoryError, UsageError
from stategym.kernel.protocol import CallBatch, ToolCall
from stategym.kernel.trajectory import write_jsonl


def _lines(path):
    return [line for line in path.read_bytes().splitlines() if line.strip()]


def _eval(out, *extra):
    return main(
        [
            "eval",
            "--domains",
            "travel",
            "--agents",
            "expert,serial",
            "--episodes",
            "4",
            "--samples",
            "2",
            "--knobs",
            "mixed",
            "--out",
            str(out),
            "--resamples",
            "50",
            *extra,
        ]
    )


def test_eval_writes_trajectories_scores_and_the_scorecard(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0
    assert len(_lines(out / "trajectories.jsonl")) == 16
    scores = [orjson.loads(line) for line in _lines(out / "scores.jsonl")]
    assert len(scores) == 16
    assert {s["agent"] for s in scores} == {"expert", "serial"}
    card = orjson.loads((out / "scorecard.json").read_bytes())
    assert card["config"]["knobs"] == "mixed" and card["config"]["samples"] == 2
    rows = {r["agent"]: r for r in card["rows"]}
    assert rows["expert"]["columns"]["composite"]["mean"] == 1.0
    assert rows["serial"]["columns"]["composite"]["mean"] < 1.0
    assert set(rows["expert"]["pass_k"]) == {"1", "2"}
    assert "lucky_success_rate" in rows["serial"]["litmus"]
    assert "| travel | expert |" in (out / "scorecard.md").read_text()


def test_eval_resumes_and_drops_a_cut_last_line(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0
    path = out / "trajectories.jsonl"
    before = path.read_bytes()
    assert _eval(out) == 0
    assert path.read_bytes() == before  # nothing left to play
    path.write_bytes(
        before[: before.rindex(b"\n", 0, len(before) - 1) + 1] + b'{"version": 1, "dom'
    )
    assert _eval(out) == 0
    assert len(_lines(path)) == 16
    assert path.read_bytes() == before  # the cut episode was played again, identically


def test_score_rescores_a_run_from_its_trajectories_alone(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0
    evaluated = (out / "scores.jsonl").read_bytes()
    rows = orjson.loads((out / "scorecard.json").read_bytes())["rows"]
    (out / "scores.jsonl").unlink()
    assert main(["score", str(out), "--resamples", "50"]) == 0
    assert (out / "scores.jsonl").read_bytes() == evaluated
    assert orjson.loads((out / "scorecard.json").read_bytes())["rows"] == rows


def test_score_reads_a_stategym_run_directory(tmp_path):
    out = tmp_path / "demo"
    assert (
        main(
            [
                "run",
                "--domain",
                "travel",
                "--agent",
                "ask-nothing",
                "--episodes",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert main(["score", str(out), "--resamples", "20"]) == 0
    scores = [orjson.loads(line) for line in _lines(out / "scores.jsonl")]
    assert [s["agent"] for s in scores] == ["ask-nothing"] * 3


def test_bad_arguments_are_reported_not_raised(tmp_path):
    assert main(["eval", "--domains", "nowhere", "--out", str(tmp_path / "a")]) == 2
    assert (
        main(
            [
                "eval",
                "--domains",
                "travel",
                "--agents",
                "nobody",
                "--episodes",
                "1",
                "--out",
                str(tmp_path / "b"),
            ]
        )
        == 2
    )
    with pytest.raises(SystemExit) as bad_knobs:  # argparse refuses it: one line, status 2
        main(["eval", "--knobs", "warp=on", "--out", str(tmp_path / "c")])
    assert bad_knobs.value.code == 2
    assert main(["score", str(tmp_path / "missing")]) == 2


def _recording_console(monkeypatch, width=80):
    """The console the command builds: ``width`` columns, recorded."""
    console = Console(width=width, record=True)
    monkeypatch.setattr("rich.console.Console", lambda *a, **k: console)
    return console


def _numbers(text):
    return re.findall(r"[-+]?\d+\.\d+", text)


def test_eval_tables_fit_80_columns_without_an_ellipsis(tmp_path, monkeypatch):
    console = _recording_console(monkeypatch)
    assert _eval(tmp_path / "run") == 0
    text = console.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    card = orjson.loads((tmp_path / "run" / "scorecard.json").read_bytes())
    for row in card["rows"]:
        assert f"{row['pass_k']['2']['mean']:.2f}" in text
        assert f"{row['litmus']['hacking_gap']:+.2f}" in text
    assert "pass^2" in text and "lucky-success rate" in text


def test_scorecard_md_holds_the_scorecard_and_the_litmus_statistics(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0
    text = (out / "scorecard.md").read_text()
    card = orjson.loads((out / "scorecard.json").read_bytes())
    assert "### Litmus" in text and "| lucky-success rate | hacking gap |" in text
    for row in card["rows"]:
        litmus = row["litmus"]
        line = f"| travel | {row['agent']} | {litmus['lucky_success_rate']:.2f} | "
        assert line + f"{litmus['hacking_gap']:+.2f} |" in text
        assert f"| travel | {row['agent']} | {row['episodes']} |" in text


def test_eval_reports_exactly_the_requested_episodes_after_a_bigger_run(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0  # 4 seeds x 2 samples x 2 agents
    lines = _lines(out / "trajectories.jsonl")
    assert main(["eval", "--domains", "travel", "--agents", "expert", "--episodes", "2",
                 "--samples", "1", "--knobs", "mixed", "--out", str(out),
                 "--resamples", "20"]) == 0  # fmt: skip
    assert _lines(out / "trajectories.jsonl") == lines  # nothing played, nothing dropped
    (row,) = orjson.loads((out / "scorecard.json").read_bytes())["rows"]
    assert (row["agent"], row["episodes"], row["tasks"]) == ("expert", 2, 2)


def _score(path):
    return score_command.main(build_parser().parse_args(["score", str(path), "--resamples", "20"]))


def _run_dir(tmp_path, episodes=3):
    out = tmp_path / "demo"
    assert main(["run", "--agent", "serial", "--episodes", str(episodes), "--out", str(out),
                 "--index", str(tmp_path / "index.sqlite")]) == 0  # fmt: skip
    return out


def test_score_refuses_a_corrupt_line_in_the_middle_naming_file_and_line(tmp_path, capsys):
    out = _run_dir(tmp_path)
    path = out / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1][:40] + b"\n" + lines[2])
    with pytest.raises(UsageError, match=rf"{re.escape(str(path))}:2: "):
        _score(out)
    capsys.readouterr()
    assert main(["score", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:2:" in err


def test_score_drops_only_a_cut_last_line_and_names_it(tmp_path, monkeypatch):
    out = _run_dir(tmp_path)
    path = out / "trajectories.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 30])  # an interrupted append
    console = _recording_console(monkeypatch, width=400)  # the path on one line
    assert _score(out) == 0
    assert f"ignored {path}:3, a cut last line" in console.export_text()
    assert len(_lines(out / "scores.jsonl")) == 2
    assert path.read_bytes() == data[: len(data) - 30]  # score only reads


def test_score_warns_of_a_cut_last_line_before_it_refuses(tmp_path, monkeypatch):
    # audit 18B F2: reading the log one episode at a time lost the warning when a refusal
    # followed; reading it whole had printed the warning first
    out = _run_dir(tmp_path)
    path = out / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines) + lines[0] + lines[1][:30])
    console = _recording_console(monkeypatch, width=400)
    with pytest.raises(UsageError, match=r"1 duplicated episode\(s\)"):
        _score(out)
    assert f"ignored {path}:5, a cut last line" in console.export_text()


def test_a_corrupt_last_line_reads_as_the_json_error_it_is(tmp_path):
    out = _run_dir(tmp_path)
    path = out / "trajectories.jsonl"
    path.write_bytes(path.read_bytes() + b'{"ab\n')  # ended by a newline: corrupt, not cut
    with pytest.raises(UsageError, match=rf"{re.escape(str(path))}:4: not JSON: unexpected end"):
        _score(out)


def test_score_refuses_duplicated_episodes_by_seed(tmp_path):
    out = _run_dir(tmp_path)
    path = out / "trajectories.jsonl"
    path.write_bytes(path.read_bytes() * 2)
    with pytest.raises(UsageError, match=r"3 duplicated episode\(s\).*travel seed 0 agent serial"):
        _score(out)
    assert not (out / "scores.jsonl").exists()


def _padded_log(out, episodes):
    """``episodes`` travel episodes of 30 rounds of 32 calls with a 2,000-character argument
    each (about 2 MB a line), whose scorecards are small beside them."""
    trajectories = []
    for seed in range(episodes):
        env = Env("travel")
        env.reset(seed=seed)
        ended = False
        while not ended:
            calls = [ToolCall("search_flights", {"origin": "x" * 2000}, f"c{i}") for i in range(32)]
            _, _, terminated, truncated, _ = env.step(CallBatch(tuple(calls)))
            ended = terminated or truncated
        trajectories.append(env.trajectory)
    write_jsonl(out / "trajectories.jsonl", trajectories)
    return (out / "trajectories.jsonl").stat().st_size


def _peak_scoring(out):
    tracemalloc.start()
    try:
        assert _score(out) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_score_keeps_the_scorecards_not_the_episodes(tmp_path):
    # 17B F6: score read the whole log into memory, about 14 times the file; it now reads one
    # episode at a time, so four more episodes cost their scorecards, not their lines
    _peak_scoring(_run_dir(tmp_path, episodes=1))  # imports and caches warmed first
    (few := tmp_path / "few").mkdir()
    (more := tmp_path / "more").mkdir()
    few_bytes, more_bytes = _padded_log(few, 2), _padded_log(more, 6)
    grown = _peak_scoring(more) - _peak_scoring(few)
    assert grown < (more_bytes - few_bytes) / 2


def test_score_refuses_duplicates_before_an_episode_that_does_not_replay(tmp_path):
    out = _run_dir(tmp_path)
    path = out / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    edited = lines[0].replace(b'"goal_reached":false', b'"goal_reached":true')
    assert edited != lines[0]
    path.write_bytes(edited + lines[1] + lines[2] + lines[2])
    with pytest.raises(UsageError, match=r"1 duplicated episode\(s\)"):
        score_command.main(build_parser().parse_args(["score", str(out), "--verify"]))
    path.write_bytes(edited + lines[1] + lines[2])
    with pytest.raises(TrajectoryError, match=rf"{re.escape(str(path))}:1: .* does not replay"):
        score_command.main(build_parser().parse_args(["score", str(out), "--verify"]))
    assert not (out / "scores.jsonl").exists()


def test_score_keeps_the_samples_of_a_pass_k_run(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0
    samples = sorted(
        orjson.loads(line)["run"]["sample"] for line in _lines(out / "trajectories.jsonl")
    )
    assert samples == [0] * 8 + [1] * 8
    assert _score(out) == 0
    rows = orjson.loads((out / "scorecard.json").read_bytes())["rows"]
    assert [(r["episodes"], r["tasks"]) for r in rows] == [(8, 4), (8, 4)]


def test_eval_resume_refuses_a_corrupt_file(tmp_path):
    out = tmp_path / "run"
    assert _eval(out) == 0
    path = out / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], b"garbage\n", *lines[1:]]))
    with pytest.raises(UsageError, match=r":2: not JSON"):
        eval_command.main(build_parser().parse_args(["eval", "--domains", "travel",
                          "--agents", "expert", "--episodes", "1", "--out", str(out)]))  # fmt: skip
    assert Path(path).read_bytes().count(b"garbage") == 1


def test_eval_report_flag_writes_the_html_report_of_the_run(tmp_path, capsys):
    out = tmp_path / "e"
    argv = ["eval", "--domains", "travel", "--agents", "expert,serial", "--episodes", "3"]
    assert main([*argv, "--out", str(out), "--resamples", "20", "--report"]) == 0
    page = (out / "report.html").read_text()
    assert "serial" in page and "<svg" in page
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out.replace("\n", "")


def test_eval_report_flag_without_matplotlib_refuses_before_playing(tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    out = tmp_path / "e"
    argv = ["eval", "--domains", "travel", "--agents", "expert", "--out", str(out), "--report"]
    assert main(argv) == 2
    assert "pip install 'stategym[plot]'" in capsys.readouterr().err
    assert not out.exists()
