"""Where a local model runs: ``--device`` on every command that loads one, refused in one line
when this machine cannot use it, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stategym.cli import main
from stategym.kernel.errors import AgentOptionError, UsageError
from stategym.llm import agent_factory
from stategym.llm.local import check_device
from stategym.registry import get_domain

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

NO_GPU = not torch.cuda.is_available()


@pytest.mark.parametrize("device", ["gpu0", "cuda:x", "", "cpu:0:1"])
def test_a_name_torch_does_not_know_is_refused(device: str) -> None:
    with pytest.raises(UsageError, match="unknown torch device"):
        check_device(device)


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_on_a_machine_without_one_is_refused(device: str) -> None:
    with pytest.raises(UsageError, match="sees no CUDA device"):
        check_device(device)


@pytest.mark.skipif(NO_GPU, reason="no CUDA device")
def test_a_gpu_index_past_the_last_is_refused() -> None:
    check_device("cuda")
    with pytest.raises(UsageError, match=r"cuda:0 up"):
        check_device(f"cuda:{torch.cuda.device_count()}")


def test_the_cpu_is_always_usable() -> None:
    check_device("cpu")


def run_args(model: Path, out: Path, *more: str) -> list[str]:
    return ["run", "--agent", f"hf:{model}", "--episodes", "1", "--max-tokens", "16",
            "--out", str(out), "--index", str(out.parent / "index.sqlite"), *more]  # fmt: skip


def test_run_plays_a_local_model_on_the_device_it_names(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(run_args(tiny_model, out, "--device", "cpu")) == 0
    (line,) = (out / "trajectories.jsonl").read_text().splitlines()
    assert json.loads(line)["agent"] == f"hf:{tiny_model}"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--device", "gpu0"), "unknown torch device 'gpu0'"),
        (("--base-url", "http://127.0.0.1:9/v1"), "hf agents take no option base_url"),
    ],
)
def test_run_refuses_a_device_or_option_the_local_model_cannot_take(
    tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple, said: str
) -> None:
    out = tmp_path / "run"
    assert main(run_args(tiny_model, out, *flags)) == 2
    error = capsys.readouterr().err
    assert said in error and len(error.strip().splitlines()) == 1
    assert not (out / "trajectories.jsonl").exists()


def test_an_endpoint_agent_takes_no_device() -> None:
    with pytest.raises(AgentOptionError, match="openai agents take no option device") as caught:
        agent_factory("openai", "m", get_domain("travel"), device="cuda")
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, UsageError)


@pytest.mark.parametrize("kind", ["sft", "grpo"])
def test_training_refuses_an_unusable_device_before_it_writes_a_run(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / kind
    device = "gpu0" if not NO_GPU else "cuda"
    assert main(["train", kind, "--device", device, "--out", str(out)]) == 2
    assert "device" in capsys.readouterr().err
    assert not out.exists()
