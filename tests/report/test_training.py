"""Training runs in the report: the real files of a tiny SFT and GRPO run (``fixtures/``)
read and drawn as decision curves, and ``stategym train sft|grpo --report``."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from stategym.cli import main
from stategym.report import build, write
from stategym.report.plots import HEADLINE_CURVES
from stategym.report.runs import TrainingRun, read_run

from .browser import needs_chromium, render, screenshot
from .conftest import FIXTURES


def test_the_real_grpo_metrics_are_read(runs: dict[str, Path]) -> None:
    run = read_run(runs["grpo"])
    assert isinstance(run, TrainingRun) and run.config["kind"] == "grpo"
    assert [line["iteration"] for line in run.train] == [1.0, 2.0, 3.0, 4.0]
    assert [line["iteration"] for line in run.eval] == [2.0, 4.0]
    for key, _ in HEADLINE_CURVES:  # the trainer logs every decision curve the page draws
        assert key in run.train[0], key
    assert "share.generation" in run.train[0] and "entropy" not in run.eval[0]


def test_a_grpo_run_gets_its_decision_curves_then_every_other_key(runs: dict[str, Path]) -> None:
    page = build([runs["grpo"]])
    decisions, others = re.findall(r"<svg.*?</svg>", page, re.DOTALL)
    assert "grpo: per iteration" in decisions and "grpo: every other key" in others
    for _, title in HEADLINE_CURVES:  # a panel each, in the first figure
        assert f">{title}<" in decisions and f">{title}<" not in others, title
    for label in ("training batch", "held-out eval"):  # the legend of both lines
        assert f">{label}<" in decisions
    for key in ("policy_loss", "tokens_per_s", "eval: format_errors", "share.generation"):
        assert f">{key}<" in others, key
    assert others.index(">tokens_per_s<") < others.index(">share.generation<")  # nested last


def test_an_sft_run_draws_its_loss_and_held_out_evaluation(runs: dict[str, Path]) -> None:
    page = build([runs["sft"]])
    assert "Training: " in page and page.count("<svg") == 2
    for title in ("loss", "goal rate", "ask rate", "R (composite)"):
        assert f">{title}<" in page
    assert ">grad_norm<" in page


def _fake_train(out: Path, name: str) -> Path:
    shutil.copytree(FIXTURES / name, out)
    return out


@pytest.mark.parametrize(("algorithm", "fixture"), [("sft", "train-sft"), ("grpo", "train-grpo")])
def test_train_report_prints_the_report_it_wrote(
    algorithm: str,
    fixture: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    from stategym.train import grpo, sft

    # the trainer is stood in for by the real files of a tiny run (its own tests train)
    trainer = sft if algorithm == "sft" else grpo
    monkeypatch.setattr(trainer, "train", lambda config: _fake_train(Path(config.out), fixture))
    out = tmp_path / "run"
    assert main(["train", algorithm, "--out", str(out), "--report"]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.html'}" in printed
    assert "Training: " in (out / "report.html").read_text()


def test_train_report_without_matplotlib_refuses_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    from stategym.train import sft

    def never(config: object) -> Path:
        raise AssertionError("trained although the report cannot be written")

    monkeypatch.setattr(sft, "train", never)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["train", "sft", "--out", str(tmp_path / "run"), "--report"]) == 2
    assert "pip install 'stategym[plot]'" in capsys.readouterr().err


TINY_SFT = [
    *("--agents", "expert:1,oracle:1", "--episodes", "6", "--iterations", "2"),
    *("--batch-size", "2", "--save-every", "1", "--eval-episodes", "2", "--max-tokens", "24"),
    *("--max-length", "1400", "--tiny-width", "64", "--tiny-vocab", "400", "--threads", "1"),
    "--no-progress",
]


@pytest.mark.slow
def test_a_real_tiny_sft_run_writes_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The committed fixture's format against the trainer's: the same command, trained."""
    pytest.importorskip("torch")
    out = tmp_path / "sft"
    assert main(["train", "sft", "--out", str(out), *TINY_SFT, "--report"]) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    for title in ("loss", "goal rate", "ask rate", "R (composite)", "grad_norm"):
        assert f">{title}<" in page
    fixture = read_run(FIXTURES / "train-sft")
    real = read_run(out)
    assert isinstance(fixture, TrainingRun) and isinstance(real, TrainingRun)
    assert [sorted(x) for x in real.train] == [sorted(x) for x in fixture.train]
    assert [sorted(x) for x in real.eval] == [sorted(x) for x in fixture.eval]


@needs_chromium
def test_chromium_renders_a_training_run(runs: dict[str, Path], tmp_path: Path) -> None:
    out = write([runs["grpo"], runs["sft"]], tmp_path / "report.html")
    rendered = render(out)
    assert rendered.console == ()
    assert rendered.dom.count("<svg") == 4  # decision curves and the other keys, per run
    assert 'data-viewer="ready"' in rendered.dom and "0 of 0 episodes" in rendered.dom
    assert screenshot(out, tmp_path / "training.png") > 20  # not a blank page
