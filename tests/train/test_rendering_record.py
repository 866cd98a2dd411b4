"""A model folder says which rendering it was trained on, and every player uses it.

The trainer records its ``--rendering`` (``compact`` by default) in every model folder it
saves (``RUN/model`` and each checkpoint, ``stategym_model.json``); ``hf:PATH`` plays a
folder in its recorded rendering, as the trainer's held-out evaluation plays the policy;
``serve``, which speaks OpenAI messages through the chat template, refuses a ``compact``
folder before loading it; ``train --init RUN`` goes on in RUN's recorded rendering unless
told otherwise, and says so in one line when told otherwise. (Audit 12a, F1: a checkpoint
trained on ``compact`` was played with ``messages`` by ``hf:``, ``serve``, ``eval`` and
``run`` without a word: every call line read as text to the user.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from refusals import refused
from stategym.cli import main
from stategym.train.config import SFTConfig, from_json

RECORD = "stategym_model.json"
GRPO = ["--iterations", "1", "--tasks", "1", "--group", "2", "--minibatch", "2",
        "--max-tokens", "8", "--max-length", "1400", "--eval-episodes", "1",
        "--save-every", "1", "--no-progress"]  # fmt: skip
SFT = ["--episodes", "2", "--iterations", "1", "--batch-size", "2", "--max-length", "1400",
       "--eval-episodes", "1", "--max-tokens", "8", "--no-progress"]  # fmt: skip


def recorded(folder: Path) -> Any:
    """The rendering a model folder's stategym record names."""
    return json.loads((folder / RECORD).read_text())["rendering"]


def rounds(trajectory: Any) -> list[tuple[Any, ...]]:
    """What each round of a trajectory (logged, or as the trainer played it) did: its kind,
    its say, its calls, and the token ids the model wrote for it."""
    from stategym.kernel.trajectory import Trajectory, dumps

    if isinstance(trajectory, Trajectory):
        trajectory = json.loads(dumps(trajectory))
    return [
        (r["kind"], r["say"], r["calls"], r["model"]["token_ids"]) for r in trajectory["rounds"]
    ]


@pytest.fixture(scope="module")
def messages_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished one-iteration SFT run on the messages rendering."""
    from stategym.train.sft import train

    out = tmp_path_factory.mktemp("sft_messages") / "run"
    return train(
        SFTConfig(
            out=str(out), rendering="messages", agents="expert", episodes=2, iterations=1,
            batch_size=2, eval_episodes=1, max_tokens=8, max_length=1400, tiny_width=64,
            tiny_vocab=400, progress=False,
        )
    )  # fmt: skip


def test_every_model_the_trainer_saves_records_its_rendering(sft_run: Path) -> None:
    folders = [sft_run / "model", *sorted((sft_run / "checkpoints").glob("iter-*"))]
    assert len(folders) == 3  # the final model and both checkpoints (save_every 1)
    for folder in folders:
        assert recorded(folder) == "compact", folder  # the run's (the default) rendering
        record = json.loads((folder / RECORD).read_text())
        assert record["trained"]["command"] == "train sft"
    assert json.loads((sft_run / "model" / RECORD).read_text())["trained"]["iteration"] == 2


def test_hf_plays_the_recorded_rendering_as_the_trainers_evaluation_does(
    sft_run: Path, tmp_path: Path
) -> None:
    """``eval --agents hf:RUN/model`` plays the policy the trainer evaluated: in its
    rendering, and (greedy, same seeds) the same rounds, token for token, as far as the
    trainer's ``--max-length`` cut lets it play, and to the end without that cut."""
    from stategym.train.checkpoint import iteration_generator
    from stategym.train.group import Member, Sampling, play
    from stategym.train.policy import Policy
    from stategym.train.tasks import setting

    config = from_json(sft_run / "config.json", SFTConfig)
    model, out = sft_run / "model", tmp_path / "eval"
    seeds = range(config.eval_seed, config.eval_seed + config.eval_episodes)
    argv = ["eval", "--domains", config.domain, "--agents", f"hf:{model}", "--episodes",
            str(len(seeds)), "--max-tokens", str(config.max_tokens), "--temperature", "0",
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    logged = (out / "trajectories.jsonl").read_text().splitlines()
    played = {t["seed"]: t for t in map(json.loads, logged)}
    assert sorted(played) == list(seeds)
    assert {t["meta"]["rendering"] for t in played.values()} == {"compact"}  # was messages

    members = []
    for seed in seeds:
        domain, knobs = setting(config.family, config.domain, config.knobs, seed)
        members.append(Member(domain, seed, knobs))
    policy, generator = Policy.load(model), iteration_generator(config.seed, 0, "eval")
    for max_length in (config.max_length, 1 << 20):  # evaluate()'s cut, then none
        sampling = Sampling(0.0, config.max_tokens, max_length, config.rendering)
        trainer, _ = play(policy, members, sampling, generator)  # what evaluate() plays
        for rollout in trainer:
            own, seed = rounds(rollout.trajectory), rollout.trajectory.seed
            assert own and rounds(played[seed])[: len(own)] == own, seed
    assert [len(r.trajectory.rounds) for r in trainer] == [len(played[s]["rounds"]) for s in seeds]


def test_a_folder_without_a_record_is_played_in_messages(sft_run: Path, tmp_path: Path) -> None:
    """A Hugging Face model from elsewhere has no stategym record: it reads messages."""
    from stategym.kernel.knobs import Knobs
    from stategym.llm import agent_factory
    from stategym.registry import cached_task, get_domain

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(sft_run / "model", elsewhere)
    (elsewhere / RECORD).unlink()
    factory = agent_factory("hf", str(elsewhere), get_domain("travel"), max_tokens=8)
    assert factory(cached_task("travel", 0, Knobs())).renderer.kind == "messages"
    factory = agent_factory("hf", str(sft_run / "model"), get_domain("travel"), max_tokens=8)
    assert factory(cached_task("travel", 0, Knobs())).renderer.kind == "compact"


def test_serve_refuses_a_compact_model_before_loading_it(
    sft_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import stategym.llm.local
    import stategym.llm.serve

    def loaded(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(stategym.llm.local, "LocalModel", loaded)
    monkeypatch.setattr(stategym.llm.serve, "run_server", loaded)
    model = sft_run / "model"
    said = refused(capsys, ["serve", "--model", str(model), "--port", "0"], "compact rendering")
    assert f"hf:{model}" in said and "--rendering messages" in said


def test_the_python_server_refuses_a_compact_model_too(sft_run: Path) -> None:
    """``create_app`` (``run_server``, ``BackgroundServer``) checks what the command does."""
    from stategym.kernel.errors import UsageError
    from stategym.llm.local import LocalModel
    from stategym.llm.serve import create_app

    with pytest.raises(UsageError, match="compact rendering"):
        create_app(LocalModel(sft_run / "model"))


def test_serve_takes_a_model_trained_on_messages(
    messages_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A guard: a messages model (and so any model without a record) is served."""
    import stategym.llm.local
    import stategym.llm.serve

    served: list[object] = []

    class Loaded:
        name = "model"

        def __init__(self, path: object, **kwargs: object) -> None:
            served.append(path)

    monkeypatch.setattr(stategym.llm.local, "LocalModel", Loaded)
    monkeypatch.setattr(stategym.llm.serve, "run_server", lambda *a, **k: served.append("run"))
    assert main(["serve", "--model", str(messages_run / "model"), "--port", "0"]) == 0
    assert served == [messages_run / "model", "run"]


@pytest.mark.parametrize("algorithm", ["grpo", "sft"])
def test_a_run_from_a_run_goes_on_in_its_recorded_rendering(
    algorithm: str, messages_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / algorithm
    flags = GRPO if algorithm == "grpo" else SFT
    assert main(["train", algorithm, "--init", str(messages_run), "--out", str(out), *flags]) == 0
    assert json.loads((out / "config.json").read_text())["rendering"] == "messages"  # was compact
    assert recorded(out / "model") == "messages"
    assert "note:" not in capsys.readouterr().err


def test_another_rendering_than_the_start_models_is_said_in_one_line(
    messages_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "grpo"
    argv = ["train", "grpo", "--init", str(messages_run), "--rendering", "compact",
            "--out", str(out), *GRPO]  # fmt: skip
    assert main(argv) == 0
    assert json.loads((out / "config.json").read_text())["rendering"] == "compact"
    assert recorded(out / "model") == "compact"
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "messages" in notes[0] and "compact" in notes[0], notes


def test_a_resume_whose_start_model_now_records_another_rendering_says_what_changed(
    messages_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit 12C F5: the same command line, whose left-out --rendering is read from a start
    model whose record changed, was refused as "other settings (rendering)", which the
    user had not changed; the line now says what the run was started with, what it would
    be now, and how to resume."""
    start = Path(shutil.copytree(messages_run / "model", tmp_path / "start"))
    out = tmp_path / "sft"
    argv = ["train", "sft", "--init", str(start), "--out", str(out), *SFT]
    assert main(argv) == 0
    (start / RECORD).write_text(json.dumps({"rendering": "compact"}))
    line = refused(capsys, argv, "was started with other settings")
    assert 'other settings (rendering): rendering "messages" there, "compact" now;' in line
    assert "give --rendering messages to resume" in line
    assert main([*argv, "--rendering", "messages"]) == 0  # as it said: it resumes
