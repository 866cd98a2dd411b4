"""Every trainer setting is checked before the run directory is written: a bad one is
refused in one line (status 2) and leaves no ``--out`` behind, so the corrected command then
runs there; a run directory is held while it trains; a run that cannot learn (nothing left
after ``--max-length``, a non-finite loss) stops before it saves anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from refusals import refused
from stategym.cli import main

LOGGED = ["--iterations", "1", "--batch-size", "2", "--eval-episodes", "1", "--max-tokens", "8",
          "--no-progress"]  # fmt: skip
"""SFT on a log (``--agents run:DIR``): its episodes are the log's, so no ``--episodes``."""
SFT = ["--episodes", "2", *LOGGED]
GRPO = ["--group", "2", "--tasks", "1", "--iterations", "1", "--minibatch", "2",
        "--eval-episodes", "1", "--max-tokens", "8", "--no-progress"]  # fmt: skip


SFT_BAD = [
    (["--lr", "inf"], "--lr"),
    (["--lr", "nan"], "--lr"),
    (["--lr", "-1"], "--lr"),
    (["--lr", "1e300"], "--lr"),  # beyond float32: an overflow inside AdamW's step (audit 11B F7)
    (["--batch-size", "0"], "--batch-size"),
    (["--batch-size", "-1"], "--batch-size"),
    (["--save-every", "0"], "--save-every"),
    (["--episodes", "0"], "--episodes"),
    (["--max-tokens", "0"], "--max-tokens"),
    (["--max-length", "0"], "--max-length"),
    (["--iterations", "-1"], "--iterations"),
    (["--first-seed", "-5"], "--first-seed"),
    (["--eval-episodes", "-1"], "--eval-episodes"),
    (["--tiny-width", "0"], "--tiny-width"),
    (["--tiny-vocab", "0"], "--tiny-vocab"),
    (["--agents", "expert:0"], "--agents"),
    (["--agents", "nosuch"], "nosuch"),
    (["--agents", "expert,expert"], "--agents"),
    (["--agents", ""], "--agents"),
    (["--family", "nosuch"], "--family"),
    (["--knobs", "bogus"], "--knobs"),
]


@pytest.mark.parametrize(("flags", "said"), SFT_BAD, ids=[" ".join(f) for f, _ in SFT_BAD])
def test_sft_refuses_a_bad_setting_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    out = tmp_path / "sft"
    refused(capsys, ["train", "sft", "--out", str(out), *SFT, *flags], said)
    assert not out.exists()


GRPO_BAD = [
    (["--tasks", "0"], "--tasks"),
    (["--updates", "0"], "--updates"),
    (["--minibatch", "0"], "--minibatch"),
    (["--max-tokens", "0"], "--max-tokens"),
    (["--save-every", "0"], "--save-every"),
    (["--iterations", "-1"], "--iterations"),
    (["--lr", "inf"], "--lr"),
    (["--kl", "-1"], "--kl"),
    (["--kl", "nan"], "--kl"),
    (["--entropy", "nan"], "--entropy"),
    (["--clip", "nan"], "--clip"),
    (["--clip", "-1"], "--clip"),
    (["--temperature", "nan"], "--temperature"),
    (["--temperature", "-1"], "--temperature"),
    (["--gigpo-weight", "inf"], "--gigpo-weight"),
    # beyond float32's largest: before, `--clip 1e300` passed and failed in the loss's clamp
    # ("value cannot be converted to type float without overflow"), config.json left behind
    (["--clip", "1e300"], "--clip"),
    (["--lr", "1e39"], "--lr"),
    (["--kl", "1e300"], "--kl"),
    (["--entropy", "1e300"], "--entropy"),
    (["--temperature", "1e39"], "--temperature"),
    (["--gigpo-weight", "1e300"], "--gigpo-weight"),
    (["--credit", "mc", "--mc-samples", "0"], "--mc-samples"),
    (["--family", "nosuch"], "--family"),
    (["--knobs", "bogus"], "--knobs"),
    (["--guard-teacher", "nosuch"], "nosuch"),
    (["--guard-teacher", "nosuch", "--guard-fraction", "0.5"], "nosuch"),
    (["--guard-teacher", "expert", "--guard-fraction", "2"], "--guard-fraction"),
    (["--guard-teacher", "expert", "--guard-fraction", "nan"], "--guard-fraction"),
    (["--guard-fraction", "0.5"], "--guard-teacher"),
    (["--guard-teacher", "expert", "--guard-fraction", "0.8"], "policy plays none"),
]


@pytest.mark.parametrize(("flags", "said"), GRPO_BAD, ids=[" ".join(f) for f, _ in GRPO_BAD])
def test_grpo_refuses_a_bad_setting_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sft_run: Path, flags: list[str], said: str
) -> None:
    out = tmp_path / "grpo"
    refused(capsys, ["train", "grpo", "--init", str(sft_run), "--out", str(out), *GRPO, *flags],
            said)  # fmt: skip
    assert not out.exists()


@pytest.mark.parametrize(
    ("algorithm", "length"),
    [("sft", "50"), ("grpo", "10")],
    ids=["sft: no reply left", "grpo: below the first prompt"],
)
def test_a_max_length_that_cuts_every_episode_is_refused_then_the_corrected_command_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sft_run: Path, algorithm: str, length: str
) -> None:
    out = tmp_path / algorithm
    flags = SFT if algorithm == "sft" else GRPO
    argv = ["train", algorithm, "--init", str(sft_run), "--out", str(out), *flags]
    refused(capsys, [*argv, "--max-length", length], f"--max-length {length} cuts every episode")
    assert not out.exists()
    assert main(argv) == 0
    assert (out / "model" / "config.json").is_file()


def _log(folder: Path, domain: str, episodes: int) -> None:
    from stategym.kernel.trajectory import write_jsonl
    from stategym.train.data import play_demonstrations

    folder.mkdir()
    played = play_demonstrations(domain, "expert", range(episodes))
    write_jsonl(folder / "trajectories.jsonl", [t for t, _ in played])


def test_a_log_of_another_domain_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _log(tmp_path / "bank", "bank", 2)
    out = tmp_path / "sft"
    argv = ["train", "sft", "--agents", f"run:{tmp_path / 'bank'}", "--out", str(out), *LOGGED]
    error = refused(capsys, argv, "bank")
    assert "travel" in error
    assert not out.exists()
    assert main([*argv, "--domain", "bank"]) == 0


def test_an_empty_log_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "trajectories.jsonl").write_text("")
    out = tmp_path / "sft"
    refused(capsys, ["train", "sft", "--agents", f"run:{tmp_path / 'empty'}", "--out", str(out),
                     *LOGGED], "no episode")  # fmt: skip
    assert not out.exists()


def test_episodes_beside_a_log_are_refused_as_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _log(tmp_path / "log", "travel", 2)
    out = tmp_path / "sft"
    argv = ["train", "sft", "--agents", f"run:{tmp_path / 'log'}", "--out", str(out), *LOGGED]
    refused(capsys, [*argv, "--episodes", "5"], "--episodes 5")
    assert not out.exists()
    assert main(argv) == 0


@pytest.mark.parametrize("flag", ["--tiny-width", "--tiny-vocab"])
def test_tiny_sizes_beside_a_start_model_are_refused_as_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    out = tmp_path / "sft"
    refused(capsys, ["train", "sft", "--init", str(tmp_path / "model"), "--out", str(out), *SFT,
                     flag, "256"], flag)  # fmt: skip
    assert not out.exists()


def test_a_folder_that_is_not_a_run_directory_is_named_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    out.mkdir()
    config = {"model_type": "qwen2", "hidden_size": 64, "vocab_size": 400}
    (out / "config.json").write_text(json.dumps(config))
    refused(capsys, ["train", "sft", "--out", str(out), *SFT], "not a training run directory")
    assert json.loads((out / "config.json").read_text()) == config


@pytest.mark.parametrize("algorithm", ["sft", "grpo"])
def test_a_run_directory_in_use_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sft_run: Path, algorithm: str
) -> None:
    from stategym.rundir import locked

    out = tmp_path / algorithm
    extra = SFT if algorithm == "sft" else ["--init", str(sft_run), *GRPO]
    with locked(out):
        refused(capsys, ["train", algorithm, "--out", str(out), *extra], "in use")
        assert sorted(p.name for p in out.iterdir()) == [".lock"]


def test_a_non_finite_loss_stops_sft_before_a_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from stategym.train import sft

    real = sft.step

    def poisoned(policy, optimiser, samples, config, iteration):  # type: ignore[no-untyped-def]
        line = real(policy, optimiser, samples, config, iteration)
        with torch.no_grad():
            for p in policy.model.parameters():
                p.fill_(float("nan"))
        return line

    monkeypatch.setattr(sft, "step", poisoned)
    out = tmp_path / "sft"
    refused(capsys, ["train", "sft", "--out", str(out), *SFT], "iteration 1")
    assert not (out / "checkpoints").exists() and not (out / "model").exists()


def test_knobs_given_as_an_object_are_kept_as_their_text() -> None:
    """The adapters hand ``Knobs`` (kernel.knobs.as_knobs); the trainer saves and compares
    its settings as text. ``EpisodeRollout(GRPOConfig(knobs=Knobs.all_off()))`` failed late
    with "'Knobs' object has no attribute 'strip'"."""
    from stategym.kernel.errors import UsageError
    from stategym.kernel.knobs import Knobs
    from stategym.train.config import GRPOConfig, check

    config = GRPOConfig(knobs=Knobs.all_off())  # type: ignore[arg-type]
    assert config.knobs == Knobs.all_off().describe()
    check(config)
    with pytest.raises(UsageError, match="--knobs must be Knobs, their text"):
        check(GRPOConfig(knobs=3))  # type: ignore[arg-type]
    mapped = GRPOConfig(knobs={"dynamics": False})  # type: ignore[arg-type]
    assert mapped.knobs == Knobs(dynamics=False).describe()
    check(mapped)
    with pytest.raises(UsageError, match="--knobs: no knob 'gravity'"):
        check(GRPOConfig(knobs={"gravity": False}))  # type: ignore[arg-type]
