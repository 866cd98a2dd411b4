"""Resuming ``run`` and ``eval`` reuses only episodes played as the command plays them now.

Audit 12a F3: a run resumed with another temperature or ``--max-tokens``, or on other weights
at the same ``hf:`` path, reused the episodes already there and labelled the whole run with
the new settings. Now every setting an LLM agent logs in ``meta`` (sampling, run seed, the
``hf:`` model's file digests, rendering...) must be logged equal in an episode for it to be
reused; otherwise the command is refused in one line and nothing is played or written. A log
older than a setting (no weights digest, no sampling seed) is refused the same way. Scripted
agents log no settings and resume as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import loopback
from refusals import refused
from stategym.cli import main
from stategym.kernel.errors import UsageError
from stategym.kernel.trajectory import read_jsonl

LOOKUPS = [("get_profile", "{}"), ("get_travel_policy", "{}")]
FINISH = [("finish", '{"answer": "done"}')]
TINY_FLAGS = {
    "episodes": 6,
    "steps": 2,
    "batch_size": 2,
    "hidden_size": 32,
    "layers": 1,
    "heads": 2,
    "kv_heads": 1,
    "intermediate_size": 64,
    "max_length": 1024,
    "vocab_size": 400,
    "threads": 1,
}
"""A model built in seconds (test_llm_cli's flags): what it says does not matter here."""


def two_rounds(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion: round 0 two look-ups, round 1 finish."""
    return loopback.completion(calls=LOOKUPS if loopback.round_of(body) == 0 else FINISH)


def _endpoint_flags(url: str, out: Path, episodes: int) -> list[str]:
    return ["--base-url", url, "--episodes", str(episodes), "--out", str(out)]


def openai_run(url: str, out: Path, episodes: int, *options: str) -> list[str]:
    index = ["--index", str(out.parent / "index.sqlite")]
    return ["run", "--agent", "openai:m", *_endpoint_flags(url, out, episodes), *index, *options]


def openai_eval(url: str, out: Path, episodes: int, *options: str) -> list[str]:
    agents = ["--domains", "travel", "--agents", "openai:m,expert", "--resamples", "20"]
    return ["eval", *agents, *_endpoint_flags(url, out, episodes), *options]


def test_run_refuses_to_resume_episodes_of_other_sampling_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    out = tmp_path / "run"
    with loopback.serving(two_rounds) as url:
        first = ("--temperature", "0", "--max-tokens", "24")
        assert main(openai_run(url, out, 2, *first)) == 0
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        line = refused(
            capsys,
            openai_run(url, out, 4, "--temperature", "1", "--max-tokens", "8"),
            "played otherwise than this command plays them",
        )
        assert "sampling.temperature 0.0 there, 1.0 now" in line
        assert "sampling.max_tokens 24 there, 8 now" in line
        assert "use --overwrite or another --out" in line
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing played
        capsys.readouterr()
        assert main(openai_run(url, out, 3, *first)) == 0  # the same settings resume
        assert "reusing 2 of the 2 episode(s) there, playing 1" in capsys.readouterr().out
        assert main(openai_run(url, out, 3, "--temperature", "1", "--overwrite")) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["options"] == {"base_url": url, "temperature": 1.0}
    played = read_jsonl(out / "trajectories.jsonl")
    assert {t.meta["sampling"]["temperature"] for t in played} == {1.0}


def test_eval_refuses_to_resume_episodes_of_other_sampling_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    out = tmp_path / "eval"
    with loopback.serving(two_rounds) as url:
        assert main(openai_eval(url, out, 1, "--max-tokens", "24")) == 0
        lines = (out / "trajectories.jsonl").read_bytes()
        line = refused(
            capsys,
            openai_eval(url, out, 2, "--max-tokens", "8"),
            "holds episodes of openai:m on travel played otherwise",
        )
        assert "sampling.max_tokens 24 there, 8 now" in line
        assert (out / "trajectories.jsonl").read_bytes() == lines
        assert main(openai_eval(url, out, 2, "--max-tokens", "24")) == 0  # same: resumes
    assert len(list(read_jsonl(out / "trajectories.jsonl"))) == 4


def test_an_openai_log_without_the_sampling_seed_is_not_reused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Episodes played before every request carried a seed (audit 12a F4) cannot be told from
    ones played with it: a log without ``meta.sampling.seed`` is refused, not reused."""
    pytest.importorskip("openai")
    out = tmp_path / "run"
    with loopback.serving(two_rounds) as url:
        assert main(openai_run(url, out, 1, "--temperature", "1")) == 0
        _rewrite_meta(out / "trajectories.jsonl", lambda meta: meta["sampling"].pop("seed"))
        line = refused(capsys, openai_run(url, out, 2, "--temperature", "1"), "played otherwise")
    assert "sampling.seed unset there, 0 now" in line


def test_the_endpoint_is_the_address_used_and_extra_body_is_a_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit 12C F3: ``--base-url URL/`` is the same endpoint as ``URL``; a run with no
    ``--base-url`` is played where ``OPENAI_BASE_URL`` points, so another there is another
    endpoint; and ``extra_body`` (sent with every request) is a sampling setting."""
    pytest.importorskip("openai")
    from stategym.llm import agent_factory
    from stategym.llm.batch import evaluate
    from stategym.registry import get_domain

    out = tmp_path / "run"
    with loopback.serving(two_rounds) as url:
        assert main(openai_run(url, out, 1)) == 0
        assert main(openai_run(url + "/", out, 2)) == 0  # the same endpoint: resumes
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        elsewhere = ["--agent", "openai:m", "--episodes", "3", "--out", str(out)]
        assert main(["run", *elsewhere, "--index", str(tmp_path / "index.sqlite")]) == 0
        assert [t.meta["base_url"] for t in read_jsonl(out / "trajectories.jsonl")] == [url] * 3
        monkeypatch.setenv("OPENAI_BASE_URL", url.replace("127.0.0.1", "localhost"))
        line = refused(capsys, ["run", *elsewhere, "--index", str(tmp_path / "i")], "otherwise")
        assert f'base_url "{url}" there' in line
        monkeypatch.delenv("OPENAI_BASE_URL")
        log = tmp_path / "api.jsonl"
        travel = get_domain("travel")
        evaluate(travel, agent_factory("openai", "m", travel, base_url=url), [0], out=log)
        greedy_k = agent_factory("openai", "m", travel, base_url=url, extra_body={"top_k": 1})
        with pytest.raises(UsageError, match=r"extra_body.top_k unset there, 1 now"):
            evaluate(travel, greedy_k, [0, 1], out=log)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from stategym.llm.tiny import TinyConfig, init_model

    return init_model(tmp_path_factory.mktemp("tiny") / "model", TinyConfig(**TINY_FLAGS))


def hf_run(model: Path, out: Path, episodes: int) -> list[str]:
    return [
        "run",
        "--agent",
        f"hf:{model}",
        "--max-tokens",
        "8",
        "--episodes",
        str(episodes),
        "--out",
        str(out),
        "--index",
        str(out.parent / "index.sqlite"),
    ]


def test_run_refuses_to_resume_episodes_of_other_weights_at_the_same_path(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    model, out = tmp_path / "model", tmp_path / "run"
    shutil.copytree(tiny, model)
    assert main(hf_run(model, out, 1)) == 0
    (logged,) = list(read_jsonl(out / "trajectories.jsonl"))
    assert set(logged.meta["model_digest"]) == {"weights", "tokenizer"}
    assert main(["score", str(out), "--verify"]) == 0  # the new meta verifies
    capsys.readouterr()
    weights = load_file(model / "model.safetensors")  # training wrote to the folder
    name = sorted(weights)[0]
    weights[name] = weights[name] + torch.ones_like(weights[name])
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    line = refused(capsys, hf_run(model, out, 2), "played otherwise than this command plays them")
    there = logged.meta["model_digest"]["weights"][:8]
    assert f"model_digest.weights {there} there, " in line
    assert "model_digest.tokenizer" not in line  # only the weights changed
    assert len(list(read_jsonl(out / "trajectories.jsonl"))) == 1
    shutil.copy(tiny / "model.safetensors", model / "model.safetensors")  # the old weights
    assert main(hf_run(model, out, 2)) == 0
    assert "reusing 1 of the 1 episode(s) there, playing 1" in capsys.readouterr().out


def test_an_hf_log_without_a_weights_digest_is_not_reused(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    argv = ["eval", "--domains", "travel", "--agents", f"hf:{tiny}", "--max-tokens", "8"]
    argv += ["--resamples", "20", "--out", str(out), "--episodes"]
    assert main([*argv, "1"]) == 0
    _rewrite_meta(out / "trajectories.jsonl", lambda meta: meta.pop("model_digest"))
    line = refused(capsys, [*argv, "2"], "played otherwise than this command plays them")
    assert "model_digest not logged there (an older log)" in line


def test_an_hf_log_names_its_device_and_threads_and_only_the_device_is_compared(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    out = tmp_path / "run"
    assert main(hf_run(tiny, out, 1)) == 0
    (logged,) = list(read_jsonl(out / "trajectories.jsonl"))
    assert logged.meta["device"] == "cpu"
    assert logged.meta["runtime"] == {"threads": torch.get_num_threads()}
    _rewrite_meta(out / "trajectories.jsonl", lambda meta: meta.update(runtime={"threads": 99}))
    assert main(hf_run(tiny, out, 2)) == 0  # other threads: reused
    assert "reusing 1 of the 1 episode(s) there, playing 1" in capsys.readouterr().out
    _rewrite_meta(out / "trajectories.jsonl", lambda meta: meta.update(device="cuda:0"))
    line = refused(capsys, hf_run(tiny, out, 3), "played otherwise than this command plays them")
    assert 'device "cuda:0" there, "cpu" now' in line


def test_scripted_runs_resume_as_before(tmp_path: Path) -> None:
    """Guard: scripted agents log no settings; a resumed run's file is byte for byte the
    fresh run's, and its trajectories carry no agent settings."""
    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    index = ["--index", str(tmp_path / "index.sqlite")]
    assert main(["run", "--episodes", "4", "--out", str(fresh), *index]) == 0
    assert main(["run", "--episodes", "2", "--out", str(resumed), *index]) == 0
    resume = ["run", "--episodes", "4", "--out", str(resumed), *index, "--temperature", "1"]
    assert main(resume) == 0  # LLM options are ignored by scripted agents, as before
    fresh_bytes = (fresh / "trajectories.jsonl").read_bytes()
    assert (resumed / "trajectories.jsonl").read_bytes() == fresh_bytes
    assert all(t.meta == {} for t in read_jsonl(fresh / "trajectories.jsonl"))


def _rewrite_meta(path: Path, edit: Any) -> None:
    """Edit every line's trajectory ``meta`` in place, as an older version would have
    written it."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        edit(line["meta"])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
