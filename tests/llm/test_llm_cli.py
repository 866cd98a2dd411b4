"""The command line: `stategym model`, `stategym serve` and `stategym eval` with LLM agents."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("openai")

from stategym.cli import main
from stategym.llm.model_files import RECORD_FILE


def test_model_init_builds_a_llama_from_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "llama"
    flags = "--episodes 6 --steps 2 --batch-size 2 --hidden-size 32 --layers 1 --heads 2 "
    # 1,024 tokens hold the first reply at this vocabulary; 256 held none (NaN weights then,
    # refused now: test_tiny_model.py)
    flags += "--kv-heads 1 --intermediate-size 64 --max-length 1024 --vocab-size 400"
    assert main(["model", "init", "--out", str(out), "--arch", "llama", *flags.split()]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "llama" and config["hidden_size"] == 32
    record = json.loads((out / RECORD_FILE).read_text())
    assert record["recipe"]["steps"] == 2
    assert all(math.isfinite(loss) for loss in record["warm_up"]["curve"])
    assert main(["model", "info", str(out)]) == 0
    assert '"arch": "llama"' in capsys.readouterr().out
    assert main(["model", "info", str(tmp_path)]) == 1


def test_eval_plays_the_tiny_model_end_to_end(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    spec = f"hf:{tiny_model}"
    argv = [
        "eval",
        "--domains",
        "travel",
        "--agents",
        f"{spec},expert",
        "--episodes",
        "1",
        "--max-tokens",
        "48",
        "--concurrency",
        "2",
        "--resamples",
        "50",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    agents = sorted(json.loads(line)["agent"] for line in lines)
    assert agents == sorted([spec, "expert"])
    scores = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert {s["agent"] for s in scores} == {spec, "expert"}
    assert main(argv) == 0  # resumes: nothing left to play
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2


def test_serve_command_answers_the_openai_client(tiny_model: Path) -> None:
    import openai

    with socket.socket() as probe:  # a free port on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stategym.cli",
            "serve",
            "--model",
            str(tiny_model),
            "--port",
            str(port),
            "--name",
            "tiny",
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0)
        deadline = time.monotonic() + 60
        while True:
            try:
                models = client.models.list()
                break
            except openai.APIConnectionError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)  # the server is still loading the model
        assert [m.id for m in models.data] == ["tiny"]
        reply = client.chat.completions.create(
            model="tiny",
            max_tokens=40,
            temperature=0,
            n=2,
            messages=[{"role": "user", "content": "Book me a flight to Tokyo (HND)."}],
        )
        assert len(reply.choices) == 2 and reply.usage is not None
        assert reply.choices[0].message == reply.choices[1].message  # greedy: same twice
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="tiny", messages=[], stream=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
