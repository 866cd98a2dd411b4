"""Audit 13C, F1, F2 and F5: the experiments' folders, seeds and columns.

- F1: ``stategym experiment e2 --quick --out D`` then ``--standard --out D`` trained the
  earlier arms further in place and mixed two configurations under one label. A training
  experiment now records its configuration (``experiment.json``) before anything trains,
  resumes at the same one and refuses any other in one line, before anything trains; a
  folder from before the record is judged by its ``results.json``.
- F2: a ``--seeds`` value whose derived task seeds pass ``2**64 - 1`` ended in a traceback
  after the earlier seeds had played; it is now refused first, naming the largest seed.
- F5: E1's ``held-out lucky`` was lucky successes / episodes where E0 and the curves use
  lucky successes / successes; E2's per-iteration table printed ``nan`` for ``-``.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from one_line_error import fails

pytest.importorskip("torch")

from stategym.agents import scripted
from stategym.cli import main
from stategym.experiments import arms, configs, e0, e1, e2, e3, e3_finetune, e4
from stategym.experiments.configs import E0Config
from stategym.kernel.env import Env
from stategym.kernel.errors import UsageError
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import SEED_LIMIT
from stategym.metrics.aggregate import Estimate
from stategym.metrics.litmus import litmus
from stategym.metrics.score import score
from stategym.rollout import run_episode

SMOKE = configs.E2["smoke"]
BIGGER = replace(SMOKE, recipe=replace(SMOKE.recipe, sft_steps=5, iterations=4))
"""The auditor's pair: E2's smoke and one differing in SFT steps and GRPO iterations only,
as E2's --quick (120, 10) and --standard (160, 24) do."""


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and a digest of its bytes."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _arms(folder: Path) -> dict[str, str]:
    """The trained arms' files (``runs/``): what a resumed or refused run must not touch."""
    return {k: v for k, v in _files(folder).items() if k.startswith("runs/")}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(folder, copy)``: ``stategym experiment e2 --smoke --seeds 0`` run into ``folder``,
    and a copy of it to put back before each test (at the same path, so the arms' recorded
    start, which names ``folder``, stays the same)."""
    root = tmp_path_factory.mktemp("e2-record")
    out = root / "e2"
    assert main(["experiment", "e2", "--smoke", "--seeds", "0", "--out", str(out)]) == 0
    shutil.copytree(out, root / "copy")
    return out, root / "copy"


@pytest.fixture
def e2_dir(pristine: tuple[Path, Path]) -> Iterator[Path]:
    out, copy = pristine
    shutil.rmtree(out)
    shutil.copytree(copy, out)
    yield out


@pytest.fixture
def bigger_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--quick`` made the auditor's bigger smoke-sized configuration, so that a run that
    is not refused (the code before the fix) costs seconds, not 15 CPU-minutes."""
    monkeypatch.setitem(configs.E2, "quick", replace(BIGGER, budget="quick"))


# -- F1: one configuration per folder ---------------------------------------------------------


@pytest.mark.usefixtures("bigger_quick")
def test_another_budget_in_the_same_out_is_refused_before_anything_trains(
    e2_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _files(e2_dir)
    argv = ["experiment", "e2", "--quick", "--seeds", "0", "--out", str(e2_dir)]
    fails(
        argv,
        capsys,
        "budget 'smoke' there, 'quick' now",
        "recipe.iterations 2 there, 4 now",
        "recipe.sft_steps 3 there, 5 now",
        "use another --out",
    )
    assert _files(e2_dir) == before


def test_the_python_api_refuses_another_configuration_too(e2_dir: Path) -> None:
    """The auditor's repro: ``e2.run`` of the bigger configuration into the smoke's folder."""
    before = _files(e2_dir)
    with pytest.raises(UsageError, match=r"recipe\.sft_steps 3 there, 5 now"):
        e2.run(BIGGER, (0,), e2_dir)
    assert _files(e2_dir) == before


def test_the_same_settings_resume_and_train_nothing_again(e2_dir: Path) -> None:
    """A guard: the docs' "re-running the command resumes finished arms" still holds."""
    arms_before, raw = _arms(e2_dir), (e2_dir / "raw.json").read_bytes()
    assert main(["experiment", "e2", "--smoke", "--seeds", "0", "--out", str(e2_dir)]) == 0
    assert _arms(e2_dir) == arms_before
    assert (e2_dir / "raw.json").read_bytes() == raw


@pytest.mark.usefixtures("bigger_quick")
def test_a_folder_from_before_the_record_goes_by_its_results(
    e2_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No ``experiment.json`` (written before it existed): another configuration than
    ``results.json``'s is refused; the same one resumes and writes the record."""
    (e2_dir / "experiment.json").unlink()
    before = _files(e2_dir)
    argv = ["experiment", "e2", "--quick", "--seeds", "0", "--out", str(e2_dir)]
    fails(argv, capsys, "recipe.sft_steps 3 there, 5 now", "use another --out")
    assert _files(e2_dir) == before
    assert main(["experiment", "e2", "--smoke", "--seeds", "0", "--out", str(e2_dir)]) == 0
    assert _arms(e2_dir) == {k: v for k, v in before.items() if k.startswith("runs/")}
    record = orjson.loads((e2_dir / "experiment.json").read_bytes())
    assert record["experiment"] == "e2" and record["config"]["budget"] == "smoke"


def test_arms_with_no_record_and_no_results_are_refused(
    e2_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run stopped before its first results, by a stategym that kept no record: nothing
    says which configuration trained the arms, so they are not resumed."""
    (e2_dir / "experiment.json").unlink()
    (e2_dir / "results.json").unlink()
    before = _files(e2_dir)
    argv = ["experiment", "e2", "--smoke", "--seeds", "0", "--out", str(e2_dir)]
    fails(argv, capsys, "records no configuration", "use another --out")
    assert _files(e2_dir) == before


class Stopped(Exception):
    """Raised by the stand-ins below: the run got as far as training or playing."""


RUNS: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "e1": (e1.run, configs.E1),
    "e2": (e2.run, configs.E2),
    "e3": (e3_finetune.run, configs.E3),
    "e4": (e4.run, configs.E4),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_each_training_experiment_records_its_configuration_before_anything_trains(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stopped at its first arm has already recorded its configuration, so a rerun
    with another budget is refused before anything trains or plays."""

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise Stopped

    for module, function in ((arms, "sft"), (arms, "grpo"), (e3, "run")):
        monkeypatch.setattr(module, function, stop)
    run, table = RUNS[name]
    with pytest.raises(Stopped):
        run(table["smoke"], (0,), tmp_path)
    record = orjson.loads((tmp_path / "experiment.json").read_bytes())
    assert record["experiment"] == name and record["config"]["budget"] == "smoke"
    with pytest.raises(UsageError, match="budget 'smoke' there, 'quick' now"):
        run(table["quick"], (0,), tmp_path)


# -- F2: seeds whose task seeds pass the last one ---------------------------------------------

MODULES: dict[str, Any] = {"e0": e0, "e1": e1, "e2": e2, "e3": e3_finetune, "e4": e4}
"""Each experiment's module with its ``largest_task_seed(config, seed)`` (E3's: the one
that runs both arms)."""
TABLES: dict[str, dict[str, Any]] = {
    "e0": configs.E0, "e1": configs.E1, "e2": configs.E2, "e3": configs.E3, "e4": configs.E4,
}  # fmt: skip


def _largest_allowed(name: str, budget: str) -> int:
    """The largest ``--seeds`` value whose task seeds stay below 2**64 (bisection)."""
    config, largest = TABLES[name][budget], MODULES[name].largest_task_seed
    low, high = 0, SEED_LIMIT
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if largest(config, middle) < SEED_LIMIT else (low, middle)
    return low


def nothing_plays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every arm, fine-tuning and play raises :class:`Stopped`: a refusal must come first."""

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise Stopped

    for module, function in ((arms, "sft"), (arms, "grpo"), (e3, "run"), (e0, "play")):
        monkeypatch.setattr(module, function, stop)


@pytest.mark.parametrize("name", list(MODULES))
def test_a_seed_whose_task_seeds_pass_the_last_is_refused_before_anything_plays(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    nothing_plays(monkeypatch)
    most = _largest_allowed(name, "smoke")
    config, largest = TABLES[name]["smoke"], MODULES[name].largest_task_seed
    assert largest(config, most) < SEED_LIMIT <= largest(config, most + 1)
    out = tmp_path / "out"
    argv = ["experiment", name, "--smoke", "--seeds", f"0,{most + 1}", "--out", str(out)]
    fails(argv, capsys, f"--seeds {most + 1}", f"the largest seed it takes is {most}")
    assert not out.exists()


LAST = SEED_LIMIT - 1
AUDITED: dict[str, tuple[int, int]] = {
    # E0 smoke: block s plays s*7 .. s*7 + 6
    "e0": (2635249153387078803, (LAST - 6) // 7),
    # E2 smoke: GRPO's 2 iterations x 1 task from 1,000,000 + 100,000 s + 50,000 (SFT's 4
    # demonstrations and the held-out 2 s .. 2 s + 1 stay below)
    "e2": (184467440737095, (LAST - 1_050_001) // 100_000),
    # E3 smoke: the n = 4 fine-tuning arm's demonstrations from 1,000,000 + 100,000 s (the
    # evaluation seeds 100,000 + 2 s .. stay below)
    "e3": (4611686018427387904, (LAST - 1_000_003) // 100_000),
}
"""The auditor's ``--seeds`` values and the largest seed each experiment takes, worked out
by hand from the seed derivations the audit lists."""


@pytest.mark.parametrize("name", list(AUDITED))
def test_the_auditors_seeds_are_refused_naming_the_largest_seed(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    nothing_plays(monkeypatch)
    seed, most = AUDITED[name]
    out = tmp_path / "out"
    argv = ["experiment", name, "--smoke", "--seeds", str(seed), "--out", str(out)]
    fails(argv, capsys, f"--seeds {seed}", f"the largest seed it takes is {most}")
    assert not out.exists()


def test_the_largest_seed_e0_takes_plays_and_the_next_cannot() -> None:
    """The check and the run agree at the boundary: E0's largest seed plays, one more would
    reach a task seed the kernel refuses."""
    config = E0Config("smoke", tasks=7, domains=("travel",), agents=("expert",), resamples=20)
    most = _largest_allowed("e0", "smoke")  # the smoke's 7 tasks, as this config's
    assert e0.run(config, (most,)).raw["travel"].shape == (1, 1, 7, len(e0.PER_TASK))
    with pytest.raises(ValueError, match="a seed must be in"):
        e0.run(config, (most + 1,))


def test_the_training_seeds_checked_are_those_the_trainer_plays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``arms.sft_seeds`` and ``arms.grpo_seeds`` (what the check uses) are the seeds the
    trainer's own code derives from the configurations the arms pass it."""
    from stategym.train import grpo, sft

    seen: dict[str, Any] = {}
    monkeypatch.setattr(sft, "train", lambda config: seen.setdefault("sft", config))
    monkeypatch.setattr(grpo, "train", lambda config: seen.setdefault("grpo", config))
    recipe, seed, where = SMOKE.recipe, 3, {"family": "ask-or-act"}
    arms.sft(recipe, tmp_path / "sft", seed, "expert", where)
    arms.grpo(recipe, tmp_path / "grpo", seed, tmp_path / "sft", "composite", where)
    played = sorted(t.seed for t, _ in sft.demonstrations(seen["sft"]))
    assert played == list(arms.sft_seeds(recipe, seed))
    config = seen["grpo"]
    sampled = {m.seed for i in range(1, config.iterations + 1) for m in grpo.members(config, i)}
    assert sorted(sampled) == list(arms.grpo_seeds(recipe, seed))


# -- F5: one lucky-success rate; '-' for undefined ------------------------------------------


def _played(domain: str, task_seed: int, knobs: Knobs) -> arms.Played:
    """A scripted stand-in for a trained policy's held-out episode: the expert, ``ask-nothing``
    (lucky when it guesses right) and ``random`` (mostly failing) in turn."""
    env = Env(domain, knobs=knobs)
    agent = ("expert", "ask-nothing", "random")[task_seed % 3]
    trajectory = run_episode(env, scripted(env.domain, agent), task_seed)
    return arms.Played(trajectory, env.task, score(trajectory, env.task))


def test_e1_held_out_lucky_rate_is_lucky_successes_over_successes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E1 run with its trained policies stood in for by scripted agents: its held-out
    lucky-success rate is litmus()'s over the same episodes, as E0's and the curves' are."""
    monkeypatch.setattr(arms, "sft", lambda *args, **kwargs: tmp_path / "sft")
    monkeypatch.setattr(arms, "grpo", lambda *args, **kwargs: tmp_path / "grpo")
    line = {"goal_rate": 0.5, "composite": 0.5}
    monkeypatch.setattr(arms, "curve", lambda run: [{"iteration": 1, **line}])
    monkeypatch.setattr(
        arms, "episodes", lambda run, tasks, recipe, seed: [_played(*t) for t in tasks]
    )
    config = replace(configs.E1["smoke"], episodes=8, credits=("outcome",))
    result = e1.run(config, (0, 1), tmp_path)
    for setting, knobs in e1.SETTINGS.items():
        cards = [_played(e1.DOMAIN, t, Knobs.parse(knobs)).card for t in range(16)]
        expected = litmus(cards)
        assert 0 < expected.lucky < expected.successes < len(cards)  # a real ratio to tell
        found = result.final[(setting, "outcome")]["lucky_rate"]
        assert found.mean == pytest.approx(expected.lucky_success_rate)
        assert 0.0 <= found.low <= found.mean <= found.high <= 1.0
    (table,) = e1.grids(result)
    assert table.headers[-1] == "held-out lucky_rate"


def test_e1_lucky_rate_without_successes_is_zero_as_litmus_says() -> None:
    values = np.zeros((2, 4, len(e1.PER_TASK)))
    from stategym.experiments.intervals import replicate_weights

    rate = e1.estimate(values, replicate_weights(2, 4, 50))["lucky_rate"]
    assert (rate.mean, rate.low, rate.high) == (0.0, 0.0, 0.0)


def test_e2_iteration_table_prints_a_dash_where_a_mean_is_undefined() -> None:
    """An iteration in which no seed's sampled episode had a must-ask slot has no ask rate:
    the table prints ``-`` as every other table does, not ``nan``."""
    from stategym.tables import markdown

    estimate = Estimate(0.5, 0.4, 0.6, 10)
    estimates = {(a, s): dict.fromkeys(e2.COLUMNS, estimate) for a in e2.ARMS for s in e2.SETS}
    line = {"composite": 0.1, "goal_rate": 0.2, "harm_rate": 0.0}
    curves = {
        0: [{"iteration": 1, "ask_rate": 0.5, **line}, {"iteration": 2, "ask_rate": None, **line}]
    }
    values = np.zeros((len(e2.ARMS), len(e2.SETS), 1, 2, len(e2.PER_TASK)))
    result = e2.E2Result(SMOKE, (0,), estimates, values, curves)
    iterations = e2.grids(result)[-1]
    assert [row[1] for row in iterations.rows] == ["0.50", "-"]
    assert "nan" not in markdown([iterations])


# -- audit 13D: the claim's edges ---------------------------------------------------------------


def test_a_refused_model_or_device_claims_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit 13D F2: the record was written before the trainer refused a ``--model`` that
    holds no model, and the corrected command was then refused as another configuration."""
    out, empty = tmp_path / "e1", tmp_path / "not-a-model"
    empty.mkdir()
    argv = ["experiment", "e1", "--smoke", "--model", str(empty), "--out", str(out)]
    fails(argv, capsys, f"{empty} holds no model")
    run = tmp_path / "unfinished-run"  # a training run's settings, no model/ yet
    run.mkdir()
    (run / "config.json").write_text('{"kind": "sft"}')
    argv = ["experiment", "e1", "--smoke", "--model", str(run), "--out", str(out)]
    fails(argv, capsys, f"--model {run}: holds no saved model")
    fails(["experiment", "e2", "--smoke", "--device", "cuda", "--out", str(out)], capsys)
    assert not (out / "experiment.json").exists()


def test_e0_refuses_another_experiments_folder(
    e2_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Audit 13D F3: E0 claimed nothing and silently replaced E2's results."""
    before = _files(e2_dir)
    argv = ["experiment", "e0", "--smoke", "--seeds", "0", "--out", str(e2_dir)]
    fails(argv, capsys, "holds experiment e2's run, not e0's")
    assert _files(e2_dir) == before


def test_e0_reruns_with_other_settings_and_then_holds_its_folder(tmp_path: Path) -> None:
    """E0 keeps nothing between runs: another configuration rewrites its record (no arm
    can mix), and the folder then refuses another experiment."""
    from stategym.experiments.output import RECORD, claim

    out = tmp_path / "e0"
    smoke = configs.E0["smoke"]
    claim(out, "e0", smoke, keeps_arms=False)
    other = replace(smoke, tasks=smoke.tasks + 7)
    claim(out, "e0", other, keeps_arms=False)
    assert orjson.loads((out / RECORD).read_bytes())["config"]["tasks"] == other.tasks
    with pytest.raises(UsageError, match="holds experiment e0's run, not e1's"):
        claim(out, "e1", configs.E1["smoke"])


def test_the_k_shot_arm_can_be_added_to_a_finished_e3_folder() -> None:
    """Audit 13D F4: E3's LLM agents train nothing; adding them was refused as if the arms
    would be trained further."""
    from stategym.experiments.output import plan

    base = configs.E3["smoke"]
    with_agents = replace(base, llm_agents=("hf:m",), shots=(0, 1), llm_options=(("x", 1),))
    assert plan("e3", base) == plan("e3", with_agents)
    assert plan("e3", base) != plan("e3", replace(base, finetune=(4,)))


def test_a_run_directory_and_its_model_are_one_start(tmp_path: Path) -> None:
    """Audit 13D F5: ``--model RUN`` and ``--model RUN/model`` were two configurations."""
    from stategym.experiments.output import plan

    run = tmp_path / "sft"
    (run / "model").mkdir(parents=True)
    (run / "model" / "config.json").write_text("{}")
    recipe = SMOKE.recipe
    assert plan("e2", replace(SMOKE, recipe=replace(recipe, init=str(run)))) == plan(
        "e2", replace(SMOKE, recipe=replace(recipe, init=str(run / "model")))
    )


def test_a_run_that_used_torch_names_its_version_and_cpu_kernels() -> None:
    import torch

    from stategym.experiments.output import environment

    ran = environment()
    assert ran["torch"] == str(torch.__version__)
    assert ran["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert ran["torch_threads"] == str(torch.get_num_threads())
