"""``--reader openai:MODEL`` on ``stategym eval`` and ``stategym run``: an LLM reads the agent's
messages for the user, over a real HTTP endpoint on a loopback port, on this process and on
worker processes; every answer lands in the run's cache, an offline re-run reproduces the
episodes byte for byte, and a run never resumes across readers."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from llm_fixtures import completion

import loopback
from stategym.cli import main

TRAVEL_WORDS = {"budget": "budget", "airport": "origin", "fly to": "destination"}
"""A model that reads a few travel words, and the labels they name."""


def reply(body: dict[str, Any]) -> dict[str, Any]:
    text = body["messages"][-1]["content"].lower()
    asks = [label for word, label in TRAVEL_WORDS.items() if word in text]
    return completion(json.dumps({"asks": asks}))


@pytest.fixture
def server() -> Iterator[str]:
    with loopback.serving(reply) as url:
        yield url


def evaluate(out: Path, *options: str) -> int:
    return main(
        [
            "eval",
            "--domains",
            "travel",
            "--agents",
            "expert,ask-everything",
            "--episodes",
            "3",
            "--out",
            str(out),
            "--resamples",
            "20",
            *options,
        ]
    )


def lines(out: Path) -> list[bytes]:
    return (out / "trajectories.jsonl").read_bytes().splitlines()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_eval_reads_with_the_model_and_replays_offline_byte_for_byte(
    server: str, tmp_path: Path, workers: str
) -> None:
    first = tmp_path / "first"
    assert (
        evaluate(first, "--reader", "openai:m", "--reader-base-url", server, "--workers", workers)
        == 0
    )
    cache = first / "readings.sqlite"
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT count(*) FROM readings").fetchone()[0] > 0
    asked = set()
    for line in lines(first):
        trajectory = orjson.loads(line)
        assert trajectory["meta"]["reader"] == "openai:m"
        asked |= {s for r in trajectory["rounds"] if r["user"] for s in r["user"]["asked"]}
    # ask-everything asks for every slot: the user answered only what this model reads
    assert "budget" in asked and asked <= set(TRAVEL_WORDS.values())
    # The same run, offline, from the first run's cache: the same episodes, byte for byte.
    again = tmp_path / "again"
    offline = ("--reader", "openai:m", "--reader-cache", str(cache), "--reader-offline")
    assert evaluate(again, *offline, "--workers", workers) == 0
    assert lines(again) == lines(first)


def test_a_run_never_resumes_across_readers(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert evaluate(out) == 0  # the rules
    assert evaluate(out, "--reader", "openai:m", "--reader-base-url", server) == 2
    assert "read messages with the rules" in capsys.readouterr().err
    run = ["run", "--domain", "travel", "--episodes", "2", "--index", str(tmp_path / "i.db")]
    assert (
        main(
            [
                *run,
                "--out",
                str(tmp_path / "r"),
                "--reader",
                "openai:m",
                "--reader-base-url",
                server,
            ]
        )
        == 0
    )
    summary = orjson.loads((tmp_path / "r" / "summary.json").read_bytes())
    assert summary["config"]["reader"] == "openai:m"
    assert main([*run, "--out", str(tmp_path / "r")]) == 2
    assert "reader=openai:m" in capsys.readouterr().err


def test_the_rules_break_the_readers_ties(tmp_path: Path) -> None:
    def tied(body: dict[str, Any]) -> dict[str, Any]:
        return completion('{"asks": [], "between": ["departure", "window"]}')

    out = tmp_path / "out"
    with loopback.serving(tied) as url:
        reader = ("--reader", "openai:m", "--reader-base-url", url, "--reader-rules-break-ties")
        assert evaluate(out, *reader) == 0
    for line in lines(out):
        assert orjson.loads(line)["meta"]["reader"] == "openai:m+rules"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--reader", "hf:model"), "--reader takes openai:MODEL"),
        (("--reader", "openai:m", "--reader-base-url", "http://127.0.0.1:9/v1"), "cannot reach"),
    ],
)
def test_a_bad_reader_fails_before_anything_is_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], message: str
) -> None:
    assert evaluate(tmp_path / "out", *options) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "trajectories.jsonl").exists()


def test_offline_without_the_answer_stops_with_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offline = ("--reader", "openai:m", "--reader-offline")
    assert evaluate(tmp_path / "out", *offline) == 2
    assert "has no answer of m" in capsys.readouterr().err
