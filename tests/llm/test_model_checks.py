"""Model folders and ``stategym model init`` under bad input.

A damaged model folder is refused in one line (exit 2) by every command that takes one,
before anything loads or plays: no tokenizer files (``transformers`` would quietly build a
tokenizer of two tokens), missing or cut weights, no chat template, a config whose sizes
are not the weights'; and, as soon as its tokenizer loads, a tokenizer whose turns cannot be
cut into token segments (no ``tokenizer_config.json``, no end-of-sequence token, a template
that closes no turn with it), which was a traceback at the first observation. Also:
``serve --port 0`` prints the port it bound, and ``--temperature inf`` is refused by the
option parser.

``stategym model init`` checks its settings and its ``--out`` before any work: a bad
value is one line naming the option (exit 2) and writes nothing; a non-empty ``--out`` (a
run directory, another model) is refused unless ``--overwrite``; a warm-up whose loss is
not finite saves nothing; ``model info`` on a damaged record is a one-line error.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from refusals import refused
from stategym.cli import main

TINY = ["--episodes", "4", "--steps", "1", "--batch-size", "1", "--hidden-size", "32",
        "--layers", "1", "--heads", "2", "--kv-heads", "1", "--intermediate-size", "64",
        "--vocab-size", "400", "--max-length", "1024"]  # fmt: skip
SFT = ["--episodes", "2", "--iterations", "1", "--batch-size", "2", "--eval-episodes", "1",
       "--max-tokens", "8", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model made by ``stategym model init`` (seconds)."""
    out = tmp_path_factory.mktemp("built") / "model"
    assert main(["model", "init", "--out", str(out), *TINY]) == 0
    return out


@pytest.fixture
def model(built: Path, tmp_path: Path) -> Path:
    """A copy of the built model, for one test to damage or change."""
    return Path(shutil.copytree(built, tmp_path / "model"))


def no_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").unlink()


def no_weights(folder: Path) -> None:
    (folder / "model.safetensors").unlink()


def cut_weights(folder: Path) -> None:
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


def no_template(folder: Path) -> None:
    (folder / "chat_template.jinja").unlink()


def no_tokenizer_config(folder: Path) -> None:
    (folder / "tokenizer_config.json").unlink()  # the tokenizer falls back to another eos


def no_eos(folder: Path) -> None:
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "eos_token": None}))


def turns_unclosed(folder: Path) -> None:
    template = folder / "chat_template.jinja"
    template.write_text(template.read_text().replace("<|im_end|>", ""))


def last_turn_differs(folder: Path) -> None:
    """As Qwen3's template does: the last assistant turn is written with a thinking block the
    same turn lacks once a message follows it."""
    template = folder / "chat_template.jinja"
    opening = "'<|im_start|>assistant\\n' }}"
    text = template.read_text()
    assert opening in text
    thinking = "{% if message == messages[-1] %}<think></think>{% endif %}"
    template.write_text(text.replace(opening, opening + thinking))


def _put_first(folder: Path, condition: str, body: str) -> None:
    """Put ``{% if condition %}body{% endif %}`` before the folder's chat template."""
    template = folder / "chat_template.jinja"
    template.write_text(f"{{%- if {condition} -%}}{body}{{%- endif -%}}" + template.read_text())


def no_system_role(folder: Path) -> None:
    """As Gemma's template does: a system message raises."""
    raises = "{{ raise_exception('System role not supported') }}"
    _put_first(folder, "messages and messages[0].role == 'system'", raises)


def no_user_role(folder: Path) -> None:
    """A template no conversation renders through: it raises on a user's message."""
    _put_first(folder, "messages[-1].role == 'user'", "{{ raise_exception('No users') }}")


def greeting_type_error(folder: Path) -> None:
    """A template whose own expression fails on a user's message (a Python TypeError)."""
    _put_first(folder, "messages[-1].role == 'user'", "{{ messages[-1].content + 1 }}")


def system_type_error(folder: Path) -> None:
    """As :func:`greeting_type_error`, on a system message only."""
    _put_first(folder, "messages[0].role == 'system'", "{{ messages[0].content + 1 }}")


def greeting_zero_division(folder: Path) -> None:
    """A template whose arithmetic fails on a user's message."""
    _put_first(folder, "messages[-1].role == 'user'", "{{ 1 / 0 }}")


def no_stop_token(folder: Path) -> None:
    """Nothing names a token that ends a reply."""
    no_eos(folder)
    for name in ("config.json", "generation_config.json"):
        config = json.loads((folder / name).read_text())
        config.pop("eos_token_id", None)
        (folder / name).write_text(json.dumps(config))


def other_sizes(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["hidden_size"] = 64  # the weights are 32 wide
    (folder / "config.json").write_text(json.dumps(config))


def layers_edited(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] += 1  # transformers: must match layer_types' length
    (folder / "config.json").write_text(json.dumps(config))


def no_heads(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["num_attention_heads"] = 0  # accepted by the config, divides by zero in the model
    (folder / "config.json").write_text(json.dumps(config))


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "no tokenizer.json": (no_tokenizer, "no tokenizer.json"),
    "no weights": (no_weights, "no weights"),
    "cut weights": (cut_weights, "model.safetensors cannot be read"),
    "no chat template": (no_template, "no chat template"),
    "a template that renders no greeting": (no_user_role, "No users"),
    "a template that fails on a greeting": (greeting_type_error, "TypeError: can only"),
    "a template that divides by zero": (greeting_zero_division, "ZeroDivisionError"),
    "config and weights of other sizes": (other_sizes, "cannot load the model at"),
    "a config transformers refuses": (layers_edited, "config.json is refused by transformers"),
    "a config whose model cannot be built": (no_heads, "config.json is refused by transformers"),
}
"""Damage every command that takes a model folder refuses."""

UNCUT: dict[str, tuple[Callable[[Path], None], str]] = {
    "no tokenizer_config.json": (no_tokenizer_config, "has no tokenizer_config.json"),
    "no end-of-sequence token": (no_eos, "names no end-of-sequence token"),
    "a template that closes no turn": (turns_unclosed, "writes no end-of-turn marker"),
    "a last turn written differently": (last_turn_differs, "renders a turn differently"),
    "a template that refuses a system message": (no_system_role, "System role not supported"),
    "a template that fails on a system message": (system_type_error, "TypeError: can only"),
}
"""Tokenizers whose turns cannot be cut into token segments: refused by what cuts them (an
``hf:`` agent, the trainer, an ``openai:`` agent's tokenizer), not by ``serve``, which
renders each request whole (audit 16D F1: Qwen3's template was refused)."""


@pytest.mark.parametrize("damage", [*DAMAGE, *UNCUT])
def test_run_refuses_a_damaged_hf_folder(
    damage: str, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    harm, said = {**DAMAGE, **UNCUT}[damage]
    harm(model)
    out = tmp_path / "run"
    argv = ["run", "--agent", f"hf:{model}", "--episodes", "1", "--out", str(out)]
    refused(capsys, [*argv, "--index", str(tmp_path / "index.sqlite")], said)
    assert not (out / "trajectories.jsonl").exists() or not (out / "trajectories.jsonl").read_text()


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_serve_refuses_a_damaged_folder_at_start(
    damage: str,
    model: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import stategym.llm.serve

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server started on a damaged folder")

    monkeypatch.setattr(stategym.llm.serve, "run_server", never)
    harm, said = DAMAGE[damage]
    harm(model)
    refused(capsys, ["serve", "--model", str(model), "--port", "0"], said)


@pytest.mark.parametrize("damage", [*DAMAGE, *UNCUT])
def test_sft_refuses_a_damaged_init_folder(
    damage: str, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    harm, said = {**DAMAGE, **UNCUT}[damage]
    harm(model)
    out = tmp_path / "sft"
    refused(capsys, ["train", "sft", "--init", str(model), "--out", str(out), *SFT], said)
    assert not (out / "model").exists()


def test_the_model_folders_the_project_writes_pass_the_check(built: Path, tmp_path: Path) -> None:
    """``model init``'s folder, a policy saved by ``Policy.save``, and a run directory (its
    final model) are all accepted as start models."""
    from stategym.llm.model_files import check_model_dir
    from stategym.train import start
    from stategym.train.policy import Policy

    check_model_dir(built)
    saved = tmp_path / "saved"
    Policy.load(built).save(saved)
    check_model_dir(saved)
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    shutil.copytree(saved, run / "model", dirs_exist_ok=True)
    (run / "config.json").write_text(json.dumps({"init": "tiny"}))
    start.check_start(str(run), trained=True)
    start.check_start(str(saved), trained=False)


def test_a_template_in_tokenizer_config_is_enough(model: Path) -> None:
    from stategym.llm.model_files import check_model_dir

    template = (model / "chat_template.jinja").read_text()
    no_template(model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    (model / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": template}))
    check_model_dir(model)


@pytest.mark.parametrize("damage", [*UNCUT, "no chat template"])
def test_a_tokenizer_read_alone_is_checked_too(damage: str, model: Path) -> None:
    """What an ``openai:`` agent's ``tokenizer`` setting loads (token-in-token-out)."""
    from stategym.kernel.errors import UsageError
    from stategym.llm.local import ChatTokenizer

    harm, said = {**UNCUT, "no chat template": (no_template, "has no chat template")}[damage]
    harm(model)
    with pytest.raises(UsageError, match=f"cannot use the model at {model}: ") as refusal:
        ChatTokenizer.load(model)
    assert said in str(refusal.value) and "\n" not in str(refusal.value)
    assert "huggingface.co" not in str(refusal.value)  # transformers' own long message


def test_serve_refuses_a_model_that_names_no_stop_token(
    model: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every reply would run to max_tokens (audit 16E F6)."""
    import stategym.llm.serve

    monkeypatch.setattr(stategym.llm.serve, "run_server", lambda m, **kw: None)
    no_stop_token(model)
    refused(capsys, ["serve", "--model", str(model), "--port", "0"], "names no token that ends")


@pytest.mark.parametrize(
    "damage", [no_tokenizer_config, last_turn_differs, no_system_role, system_type_error]
)
def test_serve_takes_a_model_whose_turns_cannot_be_cut(
    damage: Callable[[Path], None], model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` renders each request whole and stops at the ids generation_config names: it
    served these before the check, and must still (audit 16D F1)."""
    import stategym.llm.serve

    served: list[object] = []
    monkeypatch.setattr(stategym.llm.serve, "run_server", lambda m, **kw: served.append(m))
    damage(model)
    assert main(["serve", "--model", str(model), "--port", "0"]) == 0 and served


def test_policy_load_names_the_folder_it_cannot_load(model: Path) -> None:
    from stategym.kernel.errors import UsageError
    from stategym.train.policy import Policy

    other_sizes(model)
    with pytest.raises(UsageError, match=f"cannot load the model at {model}"):
        Policy.load(model)


def test_serve_prints_the_port_it_bound(
    built: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import stategym.llm.serve

    served: dict[str, object] = {}

    def record(model: object, **kwargs: object) -> None:
        sock = kwargs["sock"]
        assert isinstance(sock, socket.socket)
        served.update(kwargs, bound=sock.getsockname()[1])

    monkeypatch.setattr(stategym.llm.serve, "run_server", record)
    assert main(["serve", "--model", str(built), "--port", "0"]) == 0
    port = served["bound"]
    assert isinstance(port, int) and port > 0 and served["port"] == port
    assert f"at http://127.0.0.1:{port}/v1" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "eval"])
def test_an_infinite_temperature_is_refused(
    command: str, built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    agent = "--agent" if command == "run" else "--agents"
    argv = [command, agent, f"hf:{built}", "--episodes", "1", "--out", str(out)]
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--temperature", "inf"])
    assert stop.value.code == 2
    assert "expected a finite number >= 0, got 'inf'" in capsys.readouterr().err
    assert not out.exists()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


BAD = {
    "--hidden-size 0": (["--hidden-size", "0"], "--hidden-size must be at least 1"),
    "--hidden-size -4": (["--hidden-size", "-4"], "--hidden-size must be at least 1"),
    "--layers 0": (["--layers", "0"], "--layers must be at least 1"),
    "--heads 0": (["--heads", "0"], "--heads must be at least 1"),
    "--kv-heads 0": (["--kv-heads", "0"], "--kv-heads must be at least 1"),
    "--kv-heads 3": (["--kv-heads", "3"], "--heads 2 must be a multiple of --kv-heads 3"),
    "--heads 3": (["--heads", "3", "--kv-heads", "1"], "--hidden-size 32 must be a multiple"),
    "--intermediate-size 0": (["--intermediate-size", "0"], "--intermediate-size must be"),
    "--vocab-size 0": (["--vocab-size", "0"], "--vocab-size 0 is below the tokenizer's least"),
    "--vocab-size 10": (["--vocab-size", "10"], "least, 261"),
    "--vocab-size 260": (["--vocab-size", "260"], "least, 261"),
    "--steps 0": (["--steps", "0"], "--steps must be at least 1"),
    "--steps -1": (["--steps", "-1"], "--steps must be at least 1"),
    "--batch-size 0": (["--batch-size", "0"], "--batch-size must be at least 1"),
    "--lr inf": (["--lr", "inf"], "--lr must be a finite number above 0"),
    "--lr nan": (["--lr", "nan"], "--lr must be a finite number above 0"),
    "--lr -1": (["--lr", "-1"], "--lr must be a finite number above 0"),
    "--lr 0": (["--lr", "0"], "--lr must be a finite number above 0"),
    "--threads -1": (["--threads", "-1"], "--threads must be 0"),
    "--episodes 0": (["--episodes", "0"], "--episodes must be at least 1"),
    "--first-seed -1": (["--first-seed", "-1"], "--first-seed -1"),
    "--knobs bogus": (["--knobs", "bogus"], "--knobs 'bogus': bad knob 'bogus'"),
    "--max-positions 10": (["--max-positions", "10"], "--max-positions 10 is below --max-length"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_setting_is_one_line_and_writes_nothing(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags, said = BAD[case]
    out = tmp_path / "model"
    refused(capsys, ["model", "init", "--out", str(out), *TINY, *flags], said)
    assert not out.exists()


def test_episodes_zero_does_not_blame_max_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["model", "init", "--out", str(tmp_path / "m"), *TINY, "--episodes", "0"]) == 2
    assert "--max-length" not in capsys.readouterr().err


def test_a_warm_up_that_diverges_saves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    argv = ["model", "init", "--out", str(out), *TINY, "--steps", "3", "--lr", "1e6"]
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress display
    assert last.startswith("stategym: error: the warm-up loss is nan"), last
    assert "nothing was saved" in last
    assert not out.exists()


def test_an_existing_model_is_not_overwritten(
    model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {path.name: digest(path) for path in model.iterdir()}
    argv = ["model", "init", "--out", str(model), *TINY, "--seed", "1"]
    refused(capsys, argv, f"--out {model} is not empty")
    assert {path.name: digest(path) for path in model.iterdir()} == before
    assert main([*argv, "--overwrite"]) == 0
    assert digest(model / "model.safetensors") != before["model.safetensors"]


def test_a_run_directory_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    settings = json.dumps({"init": "tiny", "iterations": 30})
    (run / "config.json").write_text(settings)
    (run / "metrics.jsonl").write_text('{"iteration": 1}\n')
    refused(capsys, ["model", "init", "--out", str(run), *TINY], "is not empty")
    assert (run / "config.json").read_text() == settings
    assert sorted(p.name for p in run.iterdir()) == ["config.json", "metrics.jsonl"]


def test_an_empty_out_folder_is_taken(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["model", "init", "--out", str(out), *TINY]) == 0
    assert (out / "model.safetensors").is_file()


def test_an_empty_out_string_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["model", "init", "--out", "", *TINY])
    assert stop.value.code == 2
    assert "expected a folder to write the model to" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("record", ["garbage\n", "[1, 2]\n", ""])
def test_info_on_a_damaged_record_is_one_line(
    record: str, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (model / "stategym_model.json").write_text(record)
    refused(capsys, ["model", "info", str(model)], "the record is damaged")


def test_info_prints_a_good_record(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "info", str(built)]) == 0
    assert json.loads(capsys.readouterr().out)["recipe"]["hidden_size"] == 32
