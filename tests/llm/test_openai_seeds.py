"""Every ``openai:`` request carries its round's sampling seed, so sampled runs reproduce.

Audit 12a F4: from the command line (no run seed given) an ``openai:`` agent sent no ``seed``,
so ``stategym serve`` seeded each request from its arrival order and the same sampled command
gave other episodes each time. Now every request carries the seed derived from (run seed,
default 0, task, sample, round), the one an ``hf:`` agent samples that round with, and
``meta.sampling.seed`` logs the run seed.
"""

from __future__ import annotations

import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from llm_fixtures import completion, round_of

import loopback
from stategym.cli import main
from stategym.kernel.trajectory import Trajectory, read_jsonl

LOOKUPS = [("get_profile", "{}"), ("get_travel_policy", "{}")]
FINISH = [("finish", '{"answer": "done"}')]


def round_seed(task: int, sample: int, index: int, run_seed: int = 0) -> int:
    """The seed of a round, as the ``hf:`` agent derives it (``ChatAgent``)."""
    return zlib.crc32(f"{run_seed}:{task}:{sample}:{index}".encode()) & 0x7FFFFFFF


def sampled_eval(url: str, out: Path) -> list[str]:
    return [
        "eval",
        "--domains",
        "travel",
        "--agents",
        "openai:m",
        "--base-url",
        url,
        "--temperature",
        "1",
        "--episodes",
        "2",
        "--samples",
        "2",
        "--resamples",
        "20",
        "--out",
        str(out),
    ]


def test_each_request_carries_the_seed_of_its_task_sample_and_round(tmp_path: Path) -> None:
    requests: list[dict[str, Any]] = []
    lock = threading.Lock()

    def two_rounds(body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            requests.append(body)
        return completion(calls=LOOKUPS if round_of(body) == 0 else FINISH)

    with loopback.serving(two_rounds) as url:
        assert main(sampled_eval(url, tmp_path / "first")) == 0
        first = [(round_of(body), body.get("seed")) for body in requests]
        requests.clear()
        assert main(sampled_eval(url, tmp_path / "again")) == 0
        again = [(round_of(body), body.get("seed")) for body in requests]
    expected = {
        (index, round_seed(task, sample, index))
        for task in (0, 1)
        for sample in (0, 1)
        for index in (0, 1)
    }
    assert len(first) == 8 and set(first) == expected  # each sample its own seeds
    assert sorted(again) == sorted(first)
    trajectories: list[Trajectory] = list(read_jsonl(tmp_path / "first" / "trajectories.jsonl"))
    assert sorted((t.seed, t.run.sample) for t in trajectories) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
    ]
    assert all(t.meta["sampling"] == {"temperature": 1.0, "seed": 0} for t in trajectories)


def test_a_sampled_run_against_serve_reproduces(tiny_model: Path, tmp_path: Path) -> None:
    """The audit's repro: the same sampled ``run`` twice against one ``stategym serve``."""
    pytest.importorskip("torch")
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from stategym.llm.local import LocalModel
    from stategym.llm.serve import BackgroundServer

    def sampled_run(url: str, out: Path) -> list[Trajectory]:
        argv = ["run", "--agent", "openai:model", "--base-url", url, "--temperature", "1"]
        argv += ["--max-tokens", "16", "--episodes", "2", "--concurrency", "1"]
        argv += ["--out", str(out), "--index", str(tmp_path / "index.sqlite")]
        assert main(argv) == 0
        return sorted(read_jsonl(out / "trajectories.jsonl"), key=lambda t: t.seed)

    with BackgroundServer(LocalModel(tiny_model, threads=1)) as server:
        first = sampled_run(server.base_url, tmp_path / "first")
        again = sampled_run(server.base_url, tmp_path / "again")
    assert [(t.seed, t.rounds) for t in first] == [(t.seed, t.rounds) for t in again]
    sampling = {"temperature": 1.0, "max_tokens": 16, "seed": 0}
    assert all(t.meta["sampling"] == sampling for t in first)
