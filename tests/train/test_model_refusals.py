"""Model folders that cannot be used, refused in one line wherever a model loads.

- A ``config.json`` that ``transformers`` refuses (its validation errors, of whatever class)
  or whose model it cannot build (0 heads, an unknown activation): ``train grpo --init``,
  ``eval --agents hf:`` and a resume each name the folder and the file.
- A policy that diverges (``--lr 1e10``: finite weights whose logits are not) stops in one
  line when it next samples, with no asyncio shutdown traceback; a checkpoint whose logits
  are not finite is refused when a resume loads it, naming it; an ``hf:`` model whose
  logits are not finite refuses to sample, greedy or not, instead of sampling garbage or
  failing inside ``torch.multinomial``.
- A PPO clip beyond float32 clips nothing (it used to overflow inside ``clamp``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from refusals import refused

SFT_AGAIN = ["train", "sft", "--agents", "expert:1,oracle:1", "--episodes", "6",
             "--iterations", "3", "--batch-size", "2", "--save-every", "1",
             "--eval-episodes", "2", "--max-tokens", "24", "--max-length", "1400",
             "--tiny-width", "64", "--tiny-vocab", "400", "--no-progress"]  # fmt: skip
"""``train sft`` with the settings of the ``sft_run`` fixture, one iteration further."""
GRPO = ["--group", "2", "--tasks", "2", "--iterations", "3", "--save-every", "1",
        "--max-tokens", "24", "--no-progress"]  # fmt: skip

REFUSED_CONFIGS = {
    "layers and layer_types disagree": {"num_hidden_layers": 1},  # a validation error
    "a count of the wrong type": {"num_hidden_layers": "two"},
    "no attention heads": {"num_attention_heads": 0},  # divides by zero as the model builds
    "an unknown activation": {"hidden_act": "no-such-activation"},  # a KeyError as it builds
}


def edit_config(folder: Path, changes: dict[str, object]) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


@pytest.fixture
def model(sft_run: Path, tmp_path: Path) -> Path:
    """A copy of the SFT run's model, for one test to edit."""
    return Path(shutil.copytree(sft_run / "model", tmp_path / "model"))


@pytest.fixture
def run(sft_run: Path, tmp_path: Path) -> Path:
    """A copy of the SFT run, for one test to damage and resume."""
    return Path(shutil.copytree(sft_run, tmp_path / "run"))


@pytest.mark.parametrize("changes", REFUSED_CONFIGS.values(), ids=list(REFUSED_CONFIGS))
def test_grpo_init_refuses_a_config_transformers_refuses(
    changes: dict[str, object], model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_config(model, changes)
    argv = ["train", "grpo", "--init", str(model), *GRPO, "--out", str(tmp_path / "g")]
    refused(capsys, argv, f"{model / 'config.json'} is refused by transformers")


@pytest.mark.parametrize("changes", REFUSED_CONFIGS.values(), ids=list(REFUSED_CONFIGS))
def test_an_hf_agent_refuses_a_config_transformers_refuses(
    changes: dict[str, object], model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_config(model, changes)
    argv = ["eval", "--agents", f"hf:{model}", "--domains", "travel", "--episodes", "1",
            "--out", str(tmp_path / "eval")]  # fmt: skip
    refused(capsys, argv, f"{model / 'config.json'} is refused by transformers")


@pytest.mark.parametrize(
    "changes",
    [{"num_hidden_layers": 1}, {"dtype": "no-such-dtype"}],  # dtype: not compared on resume
    ids=["layers", "dtype"],
)
def test_a_resume_refuses_a_checkpoint_whose_config_is_refused(
    changes: dict[str, object], run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = run / "checkpoints" / "iter-000002"
    edit_config(latest, changes)
    error = refused(capsys, [*SFT_AGAIN, "--out", str(run)], str(latest))
    assert "config.json" in error


def test_the_model_folders_the_project_writes_pass_the_config_check(sft_run: Path) -> None:
    from stategym.llm.model_files import check_model_dir

    check_model_dir(sft_run / "model")
    for checkpoint in sorted((sft_run / "checkpoints").iterdir()):
        check_model_dir(checkpoint)


def test_a_policy_that_diverges_stops_in_one_line(
    sft_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The auditor's ``--lr 1e10``: after iteration 1 the weights are finite but their logits
    are not; iteration 2's sampling is refused in one line, and asyncio reports no task
    that failed again as the loop closed (pytest takes its log records: ``caplog``).

    ``--entropy`` gives iteration 1 a gradient whatever its rewards: where every group's
    episodes score alike, the policy term is zero and nothing moves (prompt version 4's
    wording gave such an iteration 1, and the divergence came an iteration later)."""
    argv = ["train", "grpo", "--init", str(sft_run), *GRPO, "--lr", "1e10", "--credit", "gigpo",
            "--entropy", "0.01", "--out", str(tmp_path / "g")]  # fmt: skip
    error = refused(capsys, argv, "logits are not finite")
    assert "lower --lr" in error and "error: iteration 1: " in error
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert not (tmp_path / "g" / "checkpoints").exists()  # no checkpoint a resume refuses


def scale_weights(folder: Path, factor: float) -> None:
    """Multiply every saved weight by ``factor`` (finite weights whose logits overflow)."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    weights = load_file(path)
    save_file({name: t * factor for name, t in weights.items()}, path, metadata={"format": "pt"})


def test_a_resume_refuses_a_checkpoint_whose_logits_are_not_finite(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = run / "checkpoints" / "iter-000002"
    scale_weights(latest, 1e30)
    error = refused(capsys, [*SFT_AGAIN, "--out", str(run)], f"cannot use the model at {latest}")
    assert "logits are not finite" in error


def test_an_hf_agent_refuses_a_model_whose_logits_are_not_finite(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scale_weights(model, 1e30)
    argv = ["eval", "--agents", f"hf:{model}", "--domains", "travel", "--episodes", "1",
            "--out", str(tmp_path / "eval")]  # fmt: skip
    error = refused(capsys, argv, f"cannot use the model at {model}")
    assert "logits are not finite" in error


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_a_local_model_whose_weights_diverge_refuses_to_sample(
    model: Path, temperature: float
) -> None:
    """Weights that diverge after loading (as a trainer's do): every decoding step's logits
    are checked, greedy too (an argmax of NaN picks garbage without a word)."""
    import torch

    from stategym.llm.engine import NonFiniteLogits
    from stategym.llm.local import LocalModel, Sampling

    local = LocalModel(model)
    with torch.no_grad():
        for parameter in local.model.parameters():
            parameter.mul_(1e30)
    messages = [{"role": "user", "content": "Book me a flight"}]
    with pytest.raises(NonFiniteLogits, match="logits are not finite"):
        local.generate(messages, [], Sampling(temperature=temperature, max_tokens=4, seed=1))


def test_a_policy_whose_weights_diverge_refuses_to_sample(sft_run: Path) -> None:
    import torch

    from stategym.llm.engine import NonFiniteLogits
    from stategym.train.policy import Policy

    policy = Policy.load(sft_run / "model")
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.mul_(1e30)
    prompt = policy.chat.render([{"role": "user", "content": "Book me a flight"}], [])
    with pytest.raises(NonFiniteLogits, match="lower --lr"):
        policy.generate([prompt], max_tokens=4, temperature=1.0, generator=torch.Generator())


def test_a_clip_beyond_float32_clips_nothing() -> None:
    import torch

    from stategym.train.losses import LossConfig, policy_loss

    logprobs = torch.tensor([[-1.0, -0.5, -3.0]], requires_grad=True)
    old = torch.tensor([[-2.0, -0.5, -0.1]])
    advantages = torch.tensor([[1.0, -1.0, 2.0]])
    mask = torch.ones_like(old, dtype=torch.bool)
    parts = policy_loss(logprobs, old, advantages, mask, LossConfig(clip=1e300))
    unclipped = -(torch.exp(logprobs - old) * advantages).mean()
    assert torch.allclose(parts.loss, unclipped) and float(parts.clipped) == 0.0
