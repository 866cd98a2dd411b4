"""``stategym eval`` and ``stategym score`` end to end in a temporary directory."""

from __future__ import annotations

import orjson

from stategym.cli import main


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
    assert main(["eval", "--knobs", "warp=on", "--out", str(tmp_path / "c")]) == 2
    assert main(["score", str(tmp_path / "missing")]) == 2
